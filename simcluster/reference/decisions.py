"""NCCL's logged decisions against the decision model (collectives/nccl_tuner.py): `simcluster validate --decisions
FOLDER`. Logs other people posted (calibration/published/nccl-decisions-*/) are compared by published_decisions.py,
found under the same FOLDER.

Every trace bundle under FOLDER (a folder with a manifest.json from `simcluster collect`) gives its NCCL tuning logs
(`collect --nccl-tuning`); each distinct (op, size) call NCCL logged is decided again from the topology the log and
the bundle state (GPU architecture from the manifest's GPU name, ranks, nodes and NVLS channels from the log) and the
algorithm, protocol and channel count are compared. A log the model was written against is not held out; any other
is. "The same log" is decided by content, not bytes: calibration/nccl-decision-model.yaml keeps each log's sha256
and the fingerprint of what was parsed from it (communicator, NCCL version and every logged decision), so a copy
with an extra newline is still in sample.
"""

from __future__ import annotations

import os
from pathlib import Path

from simcluster.errors import SimclusterError, TraceFormatError
from simcluster.published import CALIBRATION
from simcluster.reference.published_decisions import compare_source, is_source
from simcluster.results import DecisionSource, DecisionValidation
from simcluster.strict import field, load_yaml

PROVENANCE = CALIBRATION / "nccl-decision-model.yaml"
TOOLS = ("nccl-tests", "nccl-tests-socket")
MISSES_SHOWN = 5


def developed_on(path: Path = PROVENANCE) -> set[str]:
    """sha256 and content fingerprint of every tuning log the decision model was written and checked against."""
    doc = load_yaml(path, SimclusterError, "decision model provenance")
    traces = field(field(doc, "provenance", str(path)), "traces", str(path))
    if not isinstance(traces, list) or not all(isinstance(t, dict) and isinstance(t.get("sha256"), str)
                                               and isinstance(t.get("decisions_sha256"), str) for t in traces):
        raise SimclusterError("provenance.traces must be a list of {path, sha256, decisions_sha256}", where=str(path))
    return {t["sha256"] for t in traces} | {t["decisions_sha256"] for t in traces}


def fingerprint(t) -> str:
    """sha256 of what a tuning log says (communicator, NCCL version, every logged decision), whatever its bytes."""
    import hashlib
    import json

    content = [t.ranks, t.nodes, t.nvls_channels, t.nccl_version, t.channels, sorted(map(list, set(map(tuple, t.calls))))]
    return hashlib.sha256(json.dumps(content, sort_keys=True, default=str).encode()).hexdigest()


def _arch(manifest: dict) -> tuple[str, str]:
    """(GPU name, NCCL architecture) from a manifest's host GPUs."""
    from simcluster.collectives.nccl_constants import arch_of

    host = manifest.get("host") if isinstance(manifest.get("host"), dict) else {}
    gpus = host.get("gpus") if isinstance(host.get("gpus"), list) else []
    name = str(gpus[0].get("name", "")) if gpus and isinstance(gpus[0], dict) else ""
    if not name:
        raise SimclusterError("the manifest names no GPU (host.gpus)")
    name = name.removeprefix("NVIDIA ").strip()
    return name, arch_of(name)


def compare_log(path: Path, gpu: str, arch: str, seen: set[str], label: str) -> DecisionSource:
    """Every distinct (op, size) decision of one tuning log against the model's."""
    from simcluster.collectives.nccl_search import NcclTopology
    from simcluster.collectives.nccl_tuner import decide
    from simcluster.traces import nccl_tuning
    from simcluster.traces.common import sha256_of

    t = nccl_tuning.parse(path)
    nodes = t.nodes or 1
    config = (f"{t.ranks} x {gpu} ({arch}), {nodes} node{'s' if nodes > 1 else ''}, NCCL {t.nccl_version or '?'}, "
              f"NVLS {'on' if t.nvls_channels else 'off'}")
    held_out = sha256_of(path) not in seen and fingerprint(t) not in seen
    why = ("multi-node log: NIC count and rate are not in it" if nodes > 1 else "no communicator size (nRanks) in the log"
           if not t.ranks else "" if t.calls else "no tuned call logged (NCCL does not tune p2p ops)")
    if why:
        return DecisionSource(label, config, 0, 0, 0, held_out, unavailable=why)
    topo = NcclTopology(arch, t.ranks, 1, nvls=t.nvls_channels > 0)
    distinct = {}
    for op, logged_bytes, algo, proto, channels in t.calls:
        size = logged_bytes * t.ranks if op in ("all_gather", "reduce_scatter") else logged_bytes  # NCCL logs per-rank bytes
        distinct[(op, size)] = (algo.upper(), proto.upper(), channels)
    agree = channels_agree = 0
    misses = []
    for (op, size), (algo, proto, channels) in distinct.items():
        d = decide(topo, op, size)
        same = (d.algorithm.upper(), d.protocol.upper()) == (algo, proto)
        agree += same
        channels_agree += d.channels == channels
        if not same or d.channels != channels:
            misses.append(f"{op} {size} B: logged {algo}/{proto}/{channels}, model {d.algorithm}/{d.protocol}/{d.channels}")
    return DecisionSource(label, config, len(distinct), agree, channels_agree, held_out, misses)


def validate_decisions(folder: str | Path) -> DecisionValidation:
    """Every tuning log of every bundle under `folder` (itself a bundle, or a folder of them)."""
    from simcluster.fit.bundle_files import tuning_logs

    root = Path(folder)
    if not root.is_dir():
        raise SimclusterError("not a folder: give a trace bundle or a folder of them", where=str(root))
    seen = developed_on()
    sources, skipped, unreadable = [], [], []
    for manifest in sorted(root.rglob("manifest.json")):
        bundle = manifest.parent
        try:
            logs = {tool: tuning_logs(bundle, tool) for tool in TOOLS}
        except TraceFormatError as exc:
            if bundle == root:
                raise
            unreadable.append(exc.one_line())
            continue          # not a manifest written by simcluster collect (older studies): no tuning logs to read
        if not any(by_op for by_op, _ in logs.values()):
            continue
        try:
            gpu, arch = _arch(logs[TOOLS[0]][1])
        except SimclusterError as exc:
            skipped.append(f"{manifest}: {exc.one_line()}")
            continue
        for by_op, _ in logs.values():
            for path in (p for paths in by_op.values() for p in paths):
                label = str(path.parent.relative_to(root)) if path.is_relative_to(root) else str(path.parent)
                try:
                    sources.append(compare_log(path, gpu, arch, seen, label))
                except SimclusterError as exc:
                    skipped.append(exc.one_line())
    published = [log for path in sorted(root.rglob("source.yaml")) if is_source(path) for log in compare_source(path)]
    if not sources and not skipped and not published:
        raise SimclusterError("no NCCL tuning log in any trace bundle here, and no posted log (nccl-decisions-*/source.yaml)",
                              where=str(root), hint=f"not read: {unreadable[0]}"[:300] if unreadable else
                              "collect them with 'simcluster collect --nccl-tuning'")
    return DecisionValidation(str(root), sources, os.path.relpath(PROVENANCE), skipped, published)
