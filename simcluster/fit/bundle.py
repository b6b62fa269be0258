"""`simcluster calibrate BUNDLE -o DIR`: every trace in a bundle goes to its fit, one card per component.

  nccl-tests, nccl-tests-socket  -> collective-<tool>.yaml  (all_reduce fitted, median of its rounds; with
                                    an all_reduce tuning log the NCCL-primitives model; other ops are left
                                    for validation), and with other ops and the tuning log op-profile-<tool>.yaml
                                    (each op measured / that card's model: for other machines of the kind)
  qperf (+ perf-stat)            -> nic-<transport>.yaml     (latency, wire rate, CPU per byte)
  fio                            -> nvme-<name>.yaml          (service time, parallelism, bandwidth ceiling)
  ddp-step (+ profiles)          -> training-<model>.yaml per model, and ddp.yaml (DDP overheads fitted on
                                    the 2-GPU runs; 4-GPU and socket runs are left for validation)
Each card names the traces it came from (path and sha256). A run that failed is skipped and reported.
`simcluster calibrate B1 B2 ... -o DIR [--collective-card CARD]` does this per bundle (DIR/<bundle>/) and
fits one DDP card (DIR/ddp.yaml) on the 2-GPU steps of all of them (repeats of one machine type).
"""

from __future__ import annotations

import json
import statistics
from pathlib import Path

from simcluster import __version__
from simcluster.errors import CalibrationError, SimclusterError, TraceFormatError
from simcluster.traces.common import sha256_of


def _manifest(bundle: Path) -> dict:
    path = bundle / "manifest.json"
    try:
        doc = json.loads(path.read_text())
    except OSError as exc:
        raise TraceFormatError(f"not a trace bundle: {exc.strerror or exc}", where=str(path),
                               hint="make one with 'simcluster collect --out DIR'") from None
    except json.JSONDecodeError as exc:
        raise TraceFormatError(f"line {exc.lineno}: manifest is not valid JSON ({exc.msg})", where=str(path)) from None
    if not isinstance(doc, dict) or not isinstance(doc.get("runs"), list):
        raise TraceFormatError("manifest has no 'runs' list", where=str(path))
    return doc


def _provenance(paths: list[Path], bundle: Path | list[Path], manifest: dict | None) -> dict:
    """Where a card came from: the bundle (or bundles, for a fit across repeats), its host, each trace."""
    import datetime as _dt

    out = {"simcluster_version": __version__, "fitted_at": _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
           "bundle": [str(b) for b in bundle] if isinstance(bundle, list) else str(bundle)}
    if manifest is not None:
        out["host"] = {k: manifest.get("host", {}).get(k) for k in ("hostname", "cpu_model", "cores")}
    return {**out, "traces": [{"path": str(p), "sha256": sha256_of(p)} for p in paths]}


def _runs(manifest: dict, tool: str) -> list[dict]:
    return [r for r in manifest["runs"] if r["tool"] == tool and r["status"] == "ok"]


def _logs_by_op(bundle: Path, manifest: dict, tool: str, role: str = "timing") -> dict[str, list[Path]]:
    """op -> the stdout of each of its runs of one role ("timing" rounds or NCCL "tuning" logs), in manifest
    order; older manifests without meta hold timing runs named by their op."""
    logs: dict[str, list[Path]] = {}
    for run in _runs(manifest, tool):
        meta = run.get("meta", {})
        if meta.get("role", "timing") == role:
            logs.setdefault(meta.get("op", run["run_id"]), []).append(bundle / run["path"] / "stdout.txt")
    return logs


def timing_logs(bundle: str | Path, tool: str = "nccl-tests") -> dict[str, list[Path]]:
    """op -> the stdout of each of its timing rounds in a trace bundle (tuning logs left out), in manifest order."""
    bundle = Path(bundle)
    logs = _logs_by_op(bundle, _manifest(bundle), tool)
    if not logs:
        raise TraceFormatError(f"the bundle has no {tool} timing runs that finished", where=str(bundle / "manifest.json"))
    return logs


def _collective(bundle: Path, manifest: dict, tool: str, out: Path, op_profile: str | None = None) -> list[str]:
    from simcluster.cards import collective_params_yaml, dump_card
    from simcluster.fit import collective as fit_collective
    from simcluster.fit.profile import with_profile
    from simcluster.traces import nccl_tests

    logs = _logs_by_op(bundle, manifest, tool)
    paths = logs.pop("all_reduce", [])
    if not paths:
        return []
    traces = [nccl_tests.parse(p, op="all_reduce") for p in paths]
    tuning_logs = _logs_by_op(bundle, manifest, tool, "tuning").get("all_reduce", [])
    tunings = []
    if tuning_logs:
        from simcluster.traces import nccl_tuning

        paths.append(tuning_logs[0])
        tunings.append(nccl_tuning.parse(paths[-1]))
    params = fit_collective.fit_card(traces, tunings)[0]
    carried = with_profile(params, op_profile) if op_profile else params
    trace = traces[0]
    card = {"kind": "collective", "name": f"{tool}-{trace.nranks}ranks",
            "description": f"Collective model fitted from {tool} all_reduce ({len(traces)} round(s)) in bundle "
                           f"{bundle.name}" + (", protocols chosen by NCCL's tuning table." if tuning_logs else "."),
            "machine": {"devices": sorted(set(trace.devices)), "ranks_per_node": trace.ranks_per_node},
            "params": collective_params_yaml(carried),
            "valid_range": {"ranks": [trace.nranks], "nodes": 1, "ops": ["all_reduce"]},
            "provenance": _provenance(paths, bundle, manifest) | (
                {"op_profile": {"path": op_profile, "sha256": sha256_of(op_profile)}} if op_profile else {})}
    target = out / f"collective-{tool}.yaml"
    target.write_text(dump_card(card))
    others = [(path, op) for op, op_paths in logs.items() for path in op_paths]
    if not (others and tunings):
        return [str(target)]
    profile = _op_profile(bundle, manifest, tool, out, params, traces, paths, others, card["machine"])
    return [str(target), profile]


def _op_profile(bundle: Path, manifest: dict, tool: str, out: Path, params, traces: list, paths: list[Path],
                others: list[tuple[Path, str]], machine: dict) -> str:
    """op-profile-<tool>.yaml: every other op of the bundle measured against the card fitted on its all_reduce
    (`params`, from `traces` read at `paths`); `others` = (stdout path, op) per timing run."""
    from simcluster.cards import dump_card, op_profiles_yaml
    from simcluster.fit.profile import learn
    from simcluster.traces import nccl_tests

    profiles = learn(params, traces + [nccl_tests.parse(p, op=op) for p, op in others], source=str(bundle))
    card = {"kind": "op-profile", "name": f"op-profile-{tool}-{traces[0].nranks}ranks",
            "description": f"How each collective measured in bundle {bundle.name} departs from the NCCL-primitives "
                           f"model fitted on its all_reduce (collective-{tool}.yaml): measured / model per size. "
                           "Give it to another machine of the same kind: simcluster calibrate ... --op-profile FILE.",
            "machine": machine,
            "params": {"op_profiles": op_profiles_yaml(profiles)},
            "valid_range": {"ranks": sorted({p.ranks for p in profiles}), "nodes": 1,
                            "ops": sorted({op for p in profiles for op in p.ops})},
            "provenance": _provenance(paths + [p for p, _ in others], bundle, manifest)}
    target = out / f"op-profile-{tool}.yaml"
    target.write_text(dump_card(card))
    return str(target)


def _framing(ground_truth: dict) -> tuple[float, str]:
    if ground_truth.get("kind") == "veth+tc":
        return 1448 / 1514, "tc counts 1514-byte frames (Ethernet header, no preamble/FCS): TCP payload 1448/1514"
    return 1448 / 1538, "Ethernet wire: TCP payload 1448 of 1538 bytes per frame (preamble, FCS, gap)"


def _nic(bundle: Path, manifest: dict, out: Path) -> list[str]:
    """One NIC card per transport; with several qperf runs, each parameter is the median over runs."""
    import dataclasses

    from simcluster.cards import dump_card, nic_params_yaml
    from simcluster.fit.nic import detect_transport, fit_nic
    from simcluster.traces import qperf

    runs = _runs(manifest, "qperf")
    if not runs:
        return []
    paths = [bundle / r["path"] / "stdout.txt" for r in runs]
    traces = [qperf.parse(p) for p in paths]
    truth = runs[-1].get("meta", {}).get("ground_truth") or {}
    share, framing_note = _framing(truth)
    bw_name = {"tcp": "tcp_bw", "rdma": "rc_bw"}
    # qperf's cpus_used is host-wide: in a one-host lab it counts the client and the server together
    core_limit = 2.0 if truth.get("kind") == "veth+tc" else 1.0
    written = []
    for transport in detect_transport(traces[-1]):
        fits, measured = [], []
        for trace in traces:
            bw_test = trace.test(bw_name[transport])
            bw = bw_test.get("bw")
            cpus = max(bw_test.metrics.get("send_cpus_used", 0.0), bw_test.metrics.get("recv_cpus_used", 0.0))
            if transport == "tcp" and cpus > 0.9 * core_limit:
                raise CalibrationError(f"tcp_bw used {cpus:.0%} of a core: CPU-bound, the wire rate cannot be estimated",
                                       where=trace.path, hint="calibrate with --line-rate from the NIC's speed")
            params, info = fit_nic(trace, transport, bw / share if transport == "tcp" else bw)
            fits.append(params)
            measured.append((bw, info["latency_s"]))

        params = dataclasses.replace(fits[-1], **{k: float(statistics.median(getattr(f, k) for f in fits))
                                                  for k in ("line_rate_Bps", "latency_s", "cpu_s_per_byte")})
        notes = [f"line rate estimated from {bw_name[transport]} (the stream was wire-bound); {framing_note}",
                 f"median over {len(fits)} qperf runs: bw {[round(b * 8 / 1e9, 4) for b, _ in measured]} Gb/s, "
                 f"latency {[round(t * 1e6, 1) for _, t in measured]} us"]
        notes += _perf_note(bundle, manifest, params) if transport == "tcp" else []
        card = {"kind": "nic", "name": f"{bundle.name}-{transport}",
                "description": f"{transport.upper()} NIC fitted from qperf in bundle {bundle.name}.",
                "params": nic_params_yaml(params),
                "fit": {"line_rate_estimated": True, "notes": notes},
                "provenance": _provenance(paths, bundle, manifest)}
        target = out / f"nic-{transport}.yaml"
        target.write_text(dump_card(card))
        written.append(str(target))
    return written


def _perf_note(bundle: Path, manifest: dict, params) -> list[str]:
    """What perf stat (or /proc/stat) says the sender's CPU cost per byte is, next to qperf -v's."""
    from simcluster.traces import perf_stat, qperf

    perf_runs = _runs(manifest, "perf-stat")
    if not perf_runs:
        return []
    pdir = bundle / perf_runs[-1]["path"]
    pq = qperf.parse(pdir / "stdout.txt").test("tcp_bw")
    moved = pq.get("bw") * pq.metrics.get("time", 0.0)
    stat = perf_stat.parse(pdir / "perf.csv") if (pdir / "perf.csv").is_file() else None
    cpu_s, source = (stat.cpu_seconds(), "perf stat task-clock") if stat else (None, "")
    if cpu_s is None:
        ps = perf_runs[-1].get("proc_stat") or {}
        b, a = ps.get("before"), ps.get("after")
        cpu_s, source = ((a["busy"] - b["busy"]) / a["hz"], "/proc/stat (perf stat unavailable)") if a and b else (None, "")
    if not cpu_s or moved <= 0:
        return []
    return [f"{source}: the qperf client used {cpu_s:.3g} CPU s to send {moved / 1e9:.3g} GB ({cpu_s / moved * 1e9:.3g} s/GB, "
            f"its own process); qperf -v's cost {params.cpu_s_per_byte * 1e9:.3g} s/GB (host-wide) is kept"]


def _ddp_runs(bundle: Path, manifest: dict, out: Path, comm_card: Path | None = None):
    """Per 1-GPU ddp-step run: a training card (written), and the 2-GPU observations and profiles the DDP
    fit takes. The 2-GPU all_reduce comes from `comm_card`, else the bundle's own nccl-tests card. A 2-GPU
    record collected with --ddp-paired is predicted from its own processes' plain steps."""
    from simcluster.cards import dump_card, load_collective, training_card
    from simcluster.collectives.model import predict
    from simcluster.fit.training import Observation
    from simcluster.training import workload as W

    written, obs, profiles, sources = [], [], [], []
    coll = comm_card or out / "collective-nccl-tests.yaml"
    params = load_collective(coll)[0] if Path(coll).is_file() else None
    for run in _runs(manifest, "ddp-step"):
        rdir = bundle / run["path"]
        records = W.read_runs(rdir / "stdout.txt")
        single = [r for r in records if r["world_size"] == 1]
        if not single:
            continue
        one = single[0]
        gpu = W.profile_gpu_s(rdir, one["model"], one["image"], one["batch_per_gpu"])
        w = W.from_record(one, gpu, str(rdir / "stdout.txt"))
        sources.append(rdir / "stdout.txt")
        card = training_card(w, f"{w.model} at {w.image}px, batch {w.batch_per_gpu} per GPU, measured on 1 GPU "
                                f"({(manifest.get('host', {}).get('gpus') or [{}])[0].get('name', 'GPU')}).",
                             _provenance([rdir / "stdout.txt"], bundle, manifest))
        target = out / f"training-{card['name']}.yaml"
        target.write_text(dump_card(card))
        written.append(str(target))
        profiles += W.overlap_samples(rdir, gpu)
        for r in records:
            if r["world_size"] == 2 and params is not None:
                where = str(rdir / "stdout.txt")
                paired = W.from_paired(r, where) if r.get("plain") else w
                obs.append(Observation(f"{bundle.name} {w.model} x2", paired, 2,
                                       lambda s, p=params: predict(p, "all_reduce", s, 2).time_s, r["median_step_s"],
                                       W.paired_ranks(r, where)))
    return written, obs, profiles, sources


def _ddp_card(obs: list, profiles: list, provenance: dict, name: str, out: Path) -> list[str]:
    from simcluster.cards import ddp_card, dump_card
    from simcluster.fit.training import fit_ddp, overlap_slowdown

    if len(obs) < 2:
        return []
    slowdown = overlap_slowdown(profiles)
    ddp, fit = fit_ddp(obs, slowdown)
    fit["slowdown_from"] = f"{len(profiles)} multi-GPU profiles: median extra compute time / compute-comm overlap"
    fit["fitted_on"] = "2-GPU NVLink step times; 4-GPU and socket runs are held out"
    target = out / "ddp.yaml"
    target.write_text(dump_card(ddp_card(ddp, fit, provenance, name)))
    return [str(target)]


def _training(bundle: Path, manifest: dict, out: Path, comm_card: Path | None = None, pool: list | None = None) -> list[str]:
    """Training cards and this bundle's DDP card; with `pool`, also hand its DDP observations to the caller."""
    written, obs, profiles, sources = _ddp_runs(bundle, manifest, out, comm_card)
    if pool is not None:
        pool.append((obs, profiles, sources))
    return written + _ddp_card(obs, profiles, _provenance(sources, bundle, manifest), f"{bundle.name}-ddp", out)


def calibrate_bundles(bundles: list[str | Path], out: str | Path, comm_card: str | Path | None = None,
                      op_profile: str | None = None) -> tuple[list[str], list[str]]:
    """One bundle: calibrate_bundle. Several (repeats of one machine type): each bundle's cards in
    out/<bundle>/, and one DDP card (out/ddp.yaml) fitted on the 2-GPU steps of all of them. `comm_card`:
    the collective card for the 2-GPU all_reduce (default: each bundle's own nccl-tests card). `op_profile`: an
    op-profile file (another machine of the kind) that the nccl-tests cards carry."""
    out = Path(out)
    comm = Path(comm_card) if comm_card else None
    if comm is not None and not comm.is_file():
        raise SimclusterError(f"--collective-card {comm}: no such card file")
    if len(bundles) == 1:
        return calibrate_bundle(bundles[0], out, comm, op_profile=op_profile)
    written, problems, pool = [], [], []
    for b in map(Path, bundles):
        w, p = calibrate_bundle(b, out / b.name, comm, pool, op_profile)
        written, problems = written + w, problems + [f"{b.name}: {line}" for line in p]
    obs, profiles, sources = ([x for part in pool for x in part[i]] for i in range(3))
    provenance = {**_provenance(sources, [Path(b) for b in bundles], None), "collective_card": str(comm) if comm else None}
    parents = {Path(b).resolve().parent for b in bundles}
    name = (parents.pop().name if len(parents) == 1 else Path(bundles[0]).name) + "-pooled-ddp"
    written += _ddp_card(obs, profiles, provenance, name, out)
    return written, problems


def calibrate_bundle(bundle: str | Path, out: str | Path, comm_card: Path | None = None,
                     ddp_pool: list | None = None, op_profile: str | None = None) -> tuple[list[str], list[str]]:
    """Cards written, and one line per trace that could not be used. `ddp_pool` collects the bundle's
    DDP observations for a fit across bundles (calibrate_bundles)."""
    bundle, out = Path(bundle), Path(out)
    manifest = _manifest(bundle)
    out.mkdir(parents=True, exist_ok=True)
    written, problems = [], []
    steps = [("nccl-tests", lambda: _collective(bundle, manifest, "nccl-tests", out, op_profile)),
             ("nccl-tests-socket", lambda: _collective(bundle, manifest, "nccl-tests-socket", out)),
             ("qperf", lambda: _nic(bundle, manifest, out)),
             ("fio", lambda: _nvme(bundle, manifest, out)),
             ("ddp-step", lambda: _training(bundle, manifest, out, comm_card, ddp_pool))]
    for name, step in steps:
        try:
            written += step()
        except SimclusterError as exc:
            problems.append(f"{name}: {exc.one_line()}")
    for r in manifest["runs"]:
        if r["status"] != "ok":
            problems.append(f"{r['tool']}/{r['run_id']}: skipped ({r['status']})")
    return written, problems


def _nvme(bundle: Path, manifest: dict, out: Path) -> list[str]:
    runs = _runs(manifest, "fio")
    if not runs:
        return []
    from simcluster.cards import dump_card
    from simcluster.fit.nvme import fit_nvme, nvme_card
    from simcluster.traces import fio

    traces = [fio.parse(bundle / r["path"] / "stdout.txt") for r in runs]
    params, info = fit_nvme([res for t in traces for res in t.results])
    card = nvme_card(params, f"{bundle.name}-disk", f"Local disk fitted from fio in bundle {bundle.name}.", info,
                     _provenance([Path(t.path) for t in traces], bundle, manifest))
    target = out / "nvme-local.yaml"
    target.write_text(dump_card(card))
    return [str(target)]
