"""Fit a kind card on bundles of several machines, and one machine's terms on its short probe.

Kind (`kind_model`), from trace bundles of machines of one GPU / NVLink kind:
  the NCCL-primitives terms   fit/primitives.py on the CUDA-graph all_reduce rounds of every bundle (GPU time;
                              NCCL's tuning table from the first bundle that logged one)
  CUDA-graph per-op profile   fit/profile.py: every op's CUDA-graph rounds against those terms
  host-launched profile       per host-launched bundle: that machine's own terms fitted on its probe sizes, then
                              every op's rounds against the composed model, kept from PROBE_MAX_BYTES up (below,
                              a host-launched call is its process's launch interval, bimodal between processes:
                              docs/models/collectives.md, "Why a floor"; the factor is 1 there); the mean log
                              factor over host-launched bundles
Machine (`fit_terms`), from the sizes < PROBE_MAX_BYTES of the probe's ops (all_reduce, all_gather), the median
  of its rounds: latency offset a (and host floor f when the probe was host-launched) by soft-L1 least squares on
  log(predicted / measured), with the kind's model, its profiles included, predicting (collectives/machine.py).
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
from scipy.optimize import least_squares

from simcluster.collectives.machine import MachineTerms, compose
from simcluster.collectives.profile import OpProfile, Profiled
from simcluster.errors import CalibrationError
from simcluster.runner.plans import PROBE_OPS
from simcluster.traces.nccl_tests import CollectiveTrace, median_of_rounds

PROBE_MAX_BYTES = 2**20                 # the probe: sizes below this (collect --tools nccl-probe runs 8 B .. 1 MiB)
OFFSET_BOUNDS_S = (-3e-6, 50e-6)        # a is a few us at most on machines of one kind; bounded to keep T > 0
FLOOR_BOUNDS_S = (1e-7, 1e-3)
OFFSET_STARTS_US = (-1.5, 0.0, 3.0)
OFFSET_PRIOR_PER_US = 0.01
HOST_FLOOR_MAX_BYTES = 64 * 1024     # host-launched calls up to here are the launch interval (fit/primitives.FLOOR_MAX_BYTES)


def _launch(traces: list[CollectiveTrace], where: str) -> str:
    modes = {bool(t.cuda_graph_launches) for t in traces}
    if len(modes) != 1:
        raise CalibrationError("the probe mixes CUDA-graph and host-launched runs; a machine card has one launch mode",
                               where=where, hint="probe in the launch mode the machine will be predicted in")
    return "cuda_graph" if modes.pop() else "host"


def probe_points(traces: list[CollectiveTrace], max_bytes: float = PROBE_MAX_BYTES) -> list[tuple[str, int, int, float]]:
    """(op, size, ranks, seconds) of every size below max_bytes, each the median of its rounds (1 MiB and up is
    what the probe predicts, never what it fits)."""
    return [(t.op, r.size_bytes, t.nranks, r.time_s) for t in median_of_rounds(traces).values() for r in t.rows
            if 0 < r.size_bytes < max_bytes and r.time_s > 0]


def fit_terms(kind, traces: list[CollectiveTrace], where: str = "probe") -> tuple[MachineTerms, dict]:
    """One machine's terms from its probe (nccl-tests logs of small sizes, one launch mode) and a kind's model."""
    launch = _launch(traces, where)
    host = launch == "host"
    kind_ranks, probe_ranks = sorted({p.ranks for p in kind.profiles}), sorted({t.nranks for t in traces})
    if kind_ranks and any(n not in kind_ranks for n in probe_ranks):
        raise CalibrationError(f"the probe ran at {probe_ranks} ranks; the kind card knows {kind_ranks}", where=where,
                               hint="probe at a rank count the kind card was fitted at")
    points = probe_points(traces)
    if len(points) < 4:
        raise CalibrationError(f"the probe has {len(points)} sizes below 1 MiB; a machine fit needs at least 4",
                               where=where, hint="collect --tools nccl-probe (8 B .. 1 MiB)")

    def terms(x, digits: int | None = None) -> MachineTerms:
        """The terms at x (offset in us, log floor); rounded only for the card, never inside the fit (a rounded
        objective is flat to the optimiser's finite-difference steps)."""
        offset_s, floor_s = x[0] * 1e-6, math.exp(x[1]) if host else 0.0
        if digits:
            offset_s, floor_s = float(f"{offset_s:.{digits}g}"), float(f"{floor_s:.{digits}g}")
        return MachineTerms(launch, offset_s, floor_s)

    def residuals(x):
        model = compose(kind, terms(x))
        return [math.log(model.call_time(op, s, n, host)[0] / t) for op, s, n, t in points]

    def objective(x):
        # a weak pull of the offset to 0 (1 us costs as much as a 1% error at one size): where the host floor
        # covers every probe size the data say nothing about the offset, and the kind's own latency is the answer
        return residuals(x) + [OFFSET_PRIOR_PER_US * x[0]]

    floor0 = math.log(float(np.median([t for *_, t in points])))
    lower = [OFFSET_BOUNDS_S[0] * 1e6, math.log(FLOOR_BOUNDS_S[0])]
    upper = [OFFSET_BOUNDS_S[1] * 1e6, math.log(FLOOR_BOUNDS_S[1])]
    # below the floor the offset has no gradient: several deterministic starts, the lowest cost kept
    best = min((least_squares(objective, np.clip([a0, floor0], np.add(lower, 1e-9), np.subtract(upper, 1e-9)),
                              bounds=(lower, upper), loss="soft_l1", f_scale=0.05) for a0 in OFFSET_STARTS_US),
               key=lambda r: r.cost)
    at_bound = [name for name, v, lo, hi in (("latency offset", best.x[0], lower[0], upper[0]),) + (
        (("host floor", best.x[1], lower[1], upper[1]),) if host else ()) if min(v - lo, hi - v) < 1e-3 * (hi - lo)]
    if at_bound:
        raise CalibrationError(f"the machine fit ends at the bound of its {' and '.join(at_bound)} "
                               f"({best.x[0]:+.2f} us): the probe does not look like a machine of this kind",
                               where=where, hint="give the kind card of this GPU / NVLink kind at the probe's rank count")
    fitted = terms(best.x, digits=4)
    res = np.array(residuals(best.x))
    return fitted, {"method": "scipy least_squares (soft_l1) on log(time) of the probe sizes <= 1 MiB, "
                              "the kind's model predicting", "points": len(points),
                    "ops": sorted({op for op, *_ in points}), "rms_log_error": float(np.sqrt(np.mean(res**2)))}


def kind_model(bundles: list[Path]):
    """(the kind's model, the bundles it was fitted on, the trace files read) from bundles of machines of one kind."""
    from simcluster.fit import primitives as fit_primitives
    from simcluster.fit.profile import learn

    runs = {b: bundle_traces(b) for b in bundles}
    graph = {b: ts for b, ts in runs.items() if ts and ts[0].cuda_graph_launches}
    all_reduce = [t for ts in graph.values() for t in ts if t.op == "all_reduce"]
    if not all_reduce:
        raise CalibrationError("a kind card needs CUDA-graph all_reduce rounds (GPU time) in at least one bundle",
                               where=", ".join(map(str, bundles)), hint="collect with --nccl-graph 5")
    tuning = next((t for b in bundles for t in bundle_tunings(b)), None)
    if tuning:
        base = fit_primitives.fit(all_reduce, {tuning.ranks: tuning.ring_table()}, tuning.channels,
                                  tuning.p2p_channels)[0]
    else:
        base = fit_primitives.fit(all_reduce, None)[0]
    profiles = list(learn(base, [t for ts in graph.values() for t in ts], "kind: CUDA graphs"))
    hosted = [ts for ts in runs.values() if ts and not ts[0].cuda_graph_launches and
              any(t.op != "all_reduce" for t in ts)]
    if hosted:
        profiles += host_profiles(base, hosted)
    return Profiled(base, tuple(profiles)), sorted(map(str, graph)), [t for ts in runs.values() for t in ts]


def host_profiles(base, bundles: list[list[CollectiveTrace]]) -> list[OpProfile]:
    """The host-launched per-op profiles: each bundle against its own machine terms, factor 1 below the probe's
    largest size, mean log factor over bundles (at the first bundle's sizes)."""
    from simcluster.fit.profile import learn

    found: dict[tuple[int, str], list[tuple]] = {}
    for traces in bundles:
        probe = [t for t in traces if t.op in PROBE_OPS]
        terms = fit_terms(base, probe, traces[0].path)[0]
        for p in learn(compose(base, terms), traces, "kind: host-launched"):
            for op, (sizes, logs) in p.ops.items():
                kept = tuple(v if s > HOST_FLOOR_MAX_BYTES else 0.0 for s, v in zip(sizes, logs, strict=True))
                found.setdefault((p.ranks, op), []).append((sizes, kept))
    per_ranks: dict[int, dict] = {}
    for (ranks, op), tables in found.items():
        sizes = tables[0][0]
        logs = np.mean([np.interp(np.log2(sizes), np.log2(s), v) for s, v in tables], axis=0)
        per_ranks.setdefault(ranks, {})[op] = (sizes, tuple(float(x) for x in logs))
    return [OpProfile(ranks, False, ops, "kind: host-launched") for ranks, ops in sorted(per_ranks.items())]


def bundle_traces(bundle: Path, tool: str = "nccl-tests") -> list[CollectiveTrace]:
    """Every timing round of every op in a bundle (nccl-tests, or a probe's nccl-probe runs), parsed."""
    from simcluster.fit.bundle_files import timing_logs
    from simcluster.traces import nccl_tests

    return [nccl_tests.parse(p, op=op) for op, paths in timing_logs(bundle, tool).items() for p in paths]


def bundle_tunings(bundle: Path) -> list:
    from simcluster.fit.bundle_files import tuning_logs
    from simcluster.traces import nccl_tuning

    return [nccl_tuning.parse(p) for p in tuning_logs(bundle)[0].get("all_reduce", [])[:1]]


def kind_card(bundles: list[str], name: str) -> tuple[dict, str]:
    """A kind card document from bundles of machines of one kind (the library returns it; the CLI writes it)."""
    from simcluster.fit.bundle_files import bundle_source
    from simcluster.fit.cards import card_document

    model, graph_bundles, traces = kind_model([Path(b) for b in bundles])
    description = ("Kind card: the NCCL-primitives terms shared by every machine of one GPU / NVLink kind "
                   f"(all_reduce of {', '.join(graph_bundles)} as CUDA graphs) and the per-op profiles of "
                   "NCCL's kernels; a machine card names it and adds one machine's terms (collectives/machine.py).")
    card = card_document(name, description, model.to_params_yaml(), traces, None,
                         bundle_source([Path(b) for b in bundles], None))
    return card, f"kind card from {len(bundles)} bundle(s), {len(model.profiles)} per-op profile(s)"


def machine_card(bundle: str, kind_path: str, output: str, name: str) -> tuple[dict, str]:
    """A machine card document: the machine terms fitted on a probe bundle (nccl-probe runs, else the small sizes
    of its nccl-tests runs) with the kind card's model; it names the kind card relative to the output's folder."""
    import os

    from simcluster.cards import load_collective
    from simcluster.collectives.machine import is_machine_card
    from simcluster.errors import SimclusterError
    from simcluster.fit.bundle_files import bundle_source, timing_logs
    from simcluster.fit.cards import card_document
    from simcluster.traces.common import sha256_of

    kind, card = load_collective(kind_path)
    if is_machine_card(card.get("params")):
        raise CalibrationError("--kind-card: this is a machine card; give its kind card", where=kind_path)
    try:
        timing_logs(bundle, "nccl-probe")
        tool = "nccl-probe"
    except SimclusterError:
        tool = "nccl-tests"
    traces = [t for t in bundle_traces(Path(bundle), tool) if t.op in PROBE_OPS]
    if not traces:
        raise CalibrationError("the bundle has no all_reduce or all_gather runs to probe the machine with", where=bundle,
                               hint="simcluster collect --tools nccl-probe")
    if kind.base.model_name != "nccl-primitives" or not kind.profiles:
        raise CalibrationError("--kind-card: a kind card is an nccl-primitives card with per-op profiles "
                               f"(this one: {kind.base.model_name}, {len(kind.profiles)} profiles)", where=kind_path,
                               hint="simcluster calibrate BUNDLES --kind -o KIND.yaml")
    terms, summary = fit_terms(kind, traces, bundle)
    description = (f"Machine card: kind card {Path(kind_path).name} with this machine's terms, fitted on the "
                   f"{tool} probe of {bundle} ({terms.launch}).")
    fit = {"method": summary["method"], "points": summary["points"], "ops": summary["ops"],
           "rms_log_error": round(summary["rms_log_error"], 4)}
    doc = card_document(name, description, terms.to_params_yaml(os.path.relpath(kind_path, Path(output).parent or ".")),
                        traces, fit, bundle_source(Path(bundle), None))
    # the kind card's traces count as fitted too: a log the kind was fitted on is in sample for this card
    doc["provenance"]["traces"] += card.get("provenance", {}).get("traces", [])
    doc["provenance"]["kind_card"] = {"path": str(kind_path), "sha256": sha256_of(kind_path)}
    return doc, (f"{terms.launch}: latency offset {terms.latency_offset_s * 1e6:+.2f} us, host floor "
                 f"{terms.host_floor_s * 1e6:.2f} us")
