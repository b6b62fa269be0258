"""`simcluster validate --held-out-machines BUNDLE...`: a kind card plus a machine's probe, each machine held out.

For every bundle with an nccl-tests size sweep, in turn: the kind card is fitted on the bundles of the OTHER
machines (fit/machine.kind_model), the held-out bundle's sizes below 1 MiB of all_reduce and all_gather are its
probe (fit/machine.fit_terms), and every op it measured is predicted at every size from the two. Bundles are told
apart as machines by their GPUs' UUIDs when the manifest records them (collect does since 2026-11-23), else by
lease: a lent machine is held for at most 30 minutes, so bundles whose collection times lie within 30 minutes of
each other are one lease (and never fit the kind for each other). Two leases may be the same physical host.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from simcluster.collectives.machine import MachineTerms
from simcluster.errors import SimclusterError
from simcluster.fit.validate import OpValidation

SESSION_GAP_S = 30 * 60
BANDS = (("1KiB_to_1MiB", 1024, 2**20), ("from_1MiB", 2**20, float("inf")))    # [low, high): 1 MiB is never probed


@dataclass(frozen=True)
class HeldOutMachine:
    bundle: str
    machine: str                       # the machine's label (M1, M2, ... in order of collection)
    kind_from: list[str]               # the bundles the kind card was fitted on (CUDA-graph ones)
    terms: MachineTerms
    ops: list[OpValidation]
    notes: list[str] = field(default_factory=list)

    def band(self, r: OpValidation, low: float, high: float) -> float | None:
        errors = [abs(row.error) * 100 for row in r.rows if low <= row.size_bytes < high]
        return round(sum(errors) / len(errors), 2) if errors else None


@dataclass(frozen=True)
class HeldOutMachines:
    machines: list[HeldOutMachine]
    skipped: list[str] = field(default_factory=list)

    def to_json(self) -> dict:
        return {"skipped": self.skipped, "machines": [
            {"bundle": m.bundle, "machine": m.machine, "kind_from": m.kind_from, "launch": m.terms.launch,
             "latency_offset_s": m.terms.latency_offset_s, "host_floor_s": m.terms.host_floor_s, "notes": m.notes,
             "ops": [{"op": r.op, "ranks": r.ranks, "rounds": r.rounds, "probe_op": r.op in _probe_ops(),
                      **{f"mean_abs_error_pct_{name}": m.band(r, lo, hi) for name, lo, hi in BANDS}} for r in m.ops]}
            for m in self.machines]}


def _probe_ops():
    from simcluster.fit.machine import PROBE_OPS

    return PROBE_OPS


def _manifest(bundle: Path) -> dict:
    from simcluster.fit.bundle_files import read_manifest

    return read_manifest(bundle)


def collected(bundle: Path) -> tuple[datetime, datetime]:
    """When the bundle's collection started and finished (UTC; a time without a zone read as UTC)."""
    from datetime import UTC

    manifest = _manifest(bundle)
    times = []
    for key in ("created", "finished"):
        value = manifest.get(key) or manifest.get("created")
        try:
            t = datetime.fromisoformat(str(value).replace("Z", "+00:00"))
        except ValueError:
            raise SimclusterError(f"{key}: expected an ISO 8601 time, got {str(value)[:40]!r}",
                                  where=str(bundle / "manifest.json")) from None
        times.append(t if t.tzinfo else t.replace(tzinfo=UTC))
    return times[0], times[1]


def _gpu_ids(bundle: Path) -> tuple[str, ...]:
    gpus = _manifest(bundle).get("host", {}).get("gpus") or []
    return tuple(sorted(str(g["uuid"]) for g in gpus if isinstance(g, dict) and g.get("uuid")))


def find_bundles(paths: list[str]) -> tuple[list[Path], list[str]]:
    """The bundles among `paths` (a path itself, or its sub-folders with a manifest) with an nccl-tests sweep
    reaching below 1 MiB (a probe can be cut from it); one line per path left out and why."""
    from simcluster.fit.bundle_files import timing_logs
    from simcluster.fit.machine import PROBE_MAX_BYTES, bundle_traces, probe_points

    found, skipped = [], []
    seen: set[Path] = set()                 # one bundle named twice (or through its folder) counts once
    for path in map(Path, paths):
        candidates = [path] if (path / "manifest.json").is_file() else sorted(p.parent for p in path.glob("*/manifest.json"))
        if not candidates:
            skipped.append(f"{path}: no manifest.json (not a bundle written by simcluster collect)")
        for bundle in candidates:
            if bundle.resolve() in seen:
                continue
            seen.add(bundle.resolve())
            try:
                logs = timing_logs(bundle)
                traces = bundle_traces(bundle)
                collected(bundle)
            except SimclusterError as exc:
                skipped.append(f"{bundle}: {exc.one_line()}")
                continue
            if "all_reduce" not in logs or len(probe_points(traces)) < 4:
                skipped.append(f"{bundle}: no all_reduce sweep below {PROBE_MAX_BYTES // 2**20} MiB to cut a probe from")
                continue
            found.append(bundle)
    return found, skipped


def machines_of(bundles: list[Path]) -> dict[Path, str]:
    """bundle -> machine label: bundles whose GPUs have the same UUIDs are one machine; without UUIDs, bundles
    collected within SESSION_GAP_S of each other are one lease, counted as one machine."""
    out, label, last_end, by_ids = {}, 0, None, {}
    for b in sorted(bundles, key=lambda b: collected(b)[0]):
        start, end = collected(b)
        ids = _gpu_ids(b)
        if ids and ids in by_ids:
            out[b] = by_ids[ids]
            continue
        if ids or last_end is None or (start - last_end).total_seconds() > SESSION_GAP_S:
            label += 1
            last_end = None
        out[b] = f"M{label}"
        if ids:
            by_ids[ids] = out[b]
        else:
            last_end = max(last_end, end) if last_end else end
    return out


def _nccl_env(bundle: Path) -> dict:
    env = _manifest(bundle).get("host", {}).get("environment", {})
    return {k: v for k, v in env.items() if k.startswith("NCCL_") and k != "NCCL_VERSION"}


def validate_held_out_machines(paths: list[str]) -> HeldOutMachines:
    from simcluster.collectives.machine import compose
    from simcluster.fit.bundle_files import timing_logs
    from simcluster.fit.machine import PROBE_OPS, bundle_traces, fit_terms, kind_model
    from simcluster.fit.validate import validate_logs

    bundles, skipped = find_bundles(paths)
    machine = machines_of(bundles)
    if len(set(machine.values())) < 2:
        raise SimclusterError("held-out machines need bundles of at least two machines", where=", ".join(paths)[:200],
                              hint="; ".join(skipped)[:300] or None)
    results = []
    for held in bundles:
        others = [b for b in bundles if machine[b] != machine[held]]
        try:
            kind, kind_from, _ = kind_model(others)
            terms = fit_terms(kind, [t for t in bundle_traces(held) if t.op in PROBE_OPS], str(held))[0]
        except SimclusterError as exc:
            skipped.append(f"{held}: {exc.one_line()}")
            continue
        ops, problems = validate_logs(compose(kind, terms), timing_logs(held), set())
        skipped += [f"{held}: {p}" for p in problems]
        notes = [f"NCCL settings differ from the kind's bundles: {_nccl_env(held)} vs "
                 f"{_nccl_env(Path(kind_from[0]))}"] if kind_from and _nccl_env(held) != _nccl_env(Path(kind_from[0])) else []
        results.append(HeldOutMachine(str(held), machine[held], kind_from, terms, ops, notes))
    if not results:
        raise SimclusterError("no bundle could be held out", where=", ".join(paths)[:200], hint="; ".join(skipped)[:300])
    return HeldOutMachines(results, skipped)
