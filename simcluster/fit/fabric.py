"""Inter-node terms from a multi-node nccl-tests log: the NIC's payload efficiency and one-way latency, with the
node's NVLink card, the NIC's line rate and the fabric held as the scenario machine states them (issue 41 item 3).

Model: every size of the log predicted as `predict collective --scenario` predicts it (NCCL's algorithm and protocol
for the topology, the fabric model across nodes, collectives/fabric.py), with the NIC card's efficiency eta and latency
l replaced. Least squares on log(predicted / measured) over the sizes >= 1 KiB:
  eta   fitted when the log reaches 16 MiB (the bandwidth regime), bounded 0.05-1;
  l     fitted when the log has sizes <= 64 KiB (the latency regime), bounded 0.5 us-1 ms; else held at the card's.
Held out: with >= 8 sizes, the same fit on the smaller half predicts the larger half (the sizes a user extrapolates to).
"""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path

import numpy as np

from simcluster.errors import CalibrationError

REPEAT_SPREAD = 0.005   # the median out-of-place vs in-place busbw spread of published multi-node rows (fabric-findings, session 28)

MIN_SIZE = 1024
BANDWIDTH_FROM = 16 * 2**20
LATENCY_UP_TO = 64 * 1024


@dataclasses.dataclass(frozen=True)
class InternodeFit:
    nic: object                  # hardware/nic.NicParams, fitted
    fitted: tuple[str, ...]      # which of efficiency, latency were fitted
    in_sample_pct: float         # mean |error| of the time over the log's sizes >= 1 KiB
    held_out_pct: float | None   # fit on the smaller half, mean |error| on the larger half
    sizes: int
    before_pct: float            # the card's own mean |error| on the log


def _machine(scenario_path: str, variant: str | None, trace):
    from simcluster.scenario import load_variants

    variants = load_variants(scenario_path)
    pick = [(label, sc) for label, sc in variants if variant in (None, label)]
    if not pick:
        raise CalibrationError(f"--variant {variant!r}: the scenario has no such variant", where=scenario_path)
    sc = pick[0][1]
    m = sc.machine
    if m.domains < 2 or m.nic is None:
        raise CalibrationError("inter-node terms need a machine of several nodes with a NIC card", where=scenario_path)
    if m.nodes * m.gpus_per_node != trace.nranks:
        raise CalibrationError(f"the log ran {trace.nranks} ranks; the scenario's machine has {m.nodes} x {m.gpus_per_node} GPUs",
                               where=scenario_path, hint="set machine.nodes and gpus_per_node to the log's")
    return sc


def _predictor(sc, op: str, sizes: list[int]):
    from simcluster.collectives.fabric import predict_fabric
    from simcluster.collectives.ring_flows import ring_flows
    from simcluster.machine_models import build_cluster

    base = build_cluster(sc.machine)

    def times(efficiency: float, latency_s: float) -> np.ndarray:
        cluster = dataclasses.replace(base, nic=dataclasses.replace(base.nic, efficiency=efficiency, latency_s=latency_s))
        flows = ring_flows(cluster)
        return np.array([predict_fabric(cluster, op, s, None, flows).time_s for s in sizes])

    return base.nic, times


def _moves(times, nic, term: str) -> bool:
    """Whether the log's times move with `term`, judged at the card's own value BEFORE any fit: the term 10% up and
    10% down (efficiency capped at 1) changes some size's time by more than the logs' repeat spread (REPEAT_SPREAD;
    a NIC-bound time moves ~10%, an NVLS-bound one only through the tree's pipeline fill, ~0.2%). Judged after the
    fit instead, an optimizer that has run the term far out (a log a few % slower than an NVLS-bound machine, eta
    0.6) would make the term look free."""
    base = np.log(times(nic.efficiency, nic.latency_s))
    for k in (0.9, 1.1):
        eff, lat = (min(1.0, nic.efficiency * k), nic.latency_s) if term == "efficiency" else (nic.efficiency, nic.latency_s * k)
        if np.max(np.abs(np.log(times(eff, lat)) - base)) > REPEAT_SPREAD:
            return True
    return False


def _fit(times, nic, sizes: np.ndarray, measured: np.ndarray) -> tuple[float, float, tuple[str, ...]]:
    """(efficiency, latency, the terms fitted): only the terms the log reaches and its times move with (decided at the
    card's values, before the fit) are fitted; the others keep the card's."""
    from scipy.optimize import least_squares

    reached = []
    if sizes.max() >= BANDWIDTH_FROM:
        reached.append("efficiency")
    if sizes.min() <= LATENCY_UP_TO:
        reached.append("latency")
    if not reached:
        raise CalibrationError("the log's sizes are all between 64 KiB and 16 MiB: neither the latency nor the bandwidth "
                               "regime is reached", hint="run nccl-tests from 8 B (-b 8) to at least 1 GiB (-e 1G)")
    free = [f for f in reached if _moves(times, nic, f)]
    if not free:
        return float(nic.efficiency), float(nic.latency_s), ()
    x0 = [nic.efficiency if f == "efficiency" else math.log(nic.latency_s) for f in free]
    lo = [0.05 if f == "efficiency" else math.log(0.5e-6) for f in free]
    hi = [1.0 if f == "efficiency" else math.log(1e-3) for f in free]

    def unpack(x):
        values = dict(zip(free, x, strict=True))
        return values.get("efficiency", nic.efficiency), math.exp(values["latency"]) if "latency" in values else nic.latency_s

    def residual(x):
        return np.log(times(*unpack(x)) / measured)

    x0 = [min(max(v, a + 1e-9), b - 1e-9) for v, a, b in zip(x0, lo, hi, strict=True)]
    eff, lat = unpack(least_squares(residual, x0, bounds=(lo, hi), diff_step=1e-3).x)
    return float(eff), float(lat), tuple(free)


def _mean_abs_pct(predicted: np.ndarray, measured: np.ndarray) -> float:
    return float(np.mean(np.abs(predicted / measured - 1)) * 100)


def fit_internode(log_path: str, scenario_path: str, variant: str | None = None, op: str | None = None) -> InternodeFit:
    from simcluster.traces import nccl_tests

    trace = nccl_tests.parse(log_path, op=op)
    if trace.nodes < 2:
        raise CalibrationError("the log ran on one node: its inter-node terms cannot be fitted", where=log_path,
                               hint="a one-node log calibrates a collective card: simcluster calibrate LOG -o card.yaml")
    sc = _machine(scenario_path, variant, trace)
    rows = sorted((r.size_bytes, r.time_s) for r in trace.rows if r.size_bytes >= MIN_SIZE and r.time_s > 0)
    if len(rows) < 3:
        raise CalibrationError(f"only {len(rows)} sizes >= 1 KiB with a time; the fit needs 3", where=log_path)
    sizes = np.array([s for s, _ in rows], float)
    measured = np.array([t for _, t in rows])
    nic, times = _predictor(sc, trace.op, [int(s) for s in sizes])
    before = _mean_abs_pct(times(nic.efficiency, nic.latency_s), measured)
    eff, lat, free = _fit(times, nic, sizes, measured)
    in_sample = _mean_abs_pct(times(eff, lat), measured)
    held = None
    if len(rows) >= 8:
        half = len(rows) // 2
        small_nic, small_times = _predictor(sc, trace.op, [int(s) for s in sizes[:half]])
        try:
            e2, l2, _ = _fit(small_times, small_nic, sizes[:half], measured[:half])
            held = _mean_abs_pct(times(e2, l2)[half:], measured[half:])
        except CalibrationError:
            held = None
    if not free:
        raise CalibrationError("the log's times do not depend on the NIC's efficiency or latency on this machine: another "
                               "limit binds (predict collective --scenario names it), so the log cannot calibrate the NIC",
                               where=log_path, hint="a log whose sizes reach the NIC-bound range, or a machine whose NICs bind")
    fitted = dataclasses.replace(nic, efficiency=eff, latency_s=lat)
    return InternodeFit(fitted, free, in_sample, held, len(rows), before)


def nic_document(fit: InternodeFit, log_path: str, scenario_path: str, name: str) -> dict:
    """The fitted NIC card, its provenance naming the log and the machine it was fitted on."""
    from simcluster.card_document import provenance
    from simcluster.cards import nic_params_yaml
    from simcluster.traces import nccl_tests

    trace = nccl_tests.parse(log_path)
    held = f"; fitted on the smaller half of the sizes, the larger half {fit.held_out_pct:.2f}% mean |error|" if fit.held_out_pct is not None else ""
    return {"kind": "nic", "name": name,
            "description": (f"{fit.nic.transport.upper()} NIC: {', '.join(fit.fitted)} fitted on a {trace.nodes}-node nccl-tests "
                            f"{trace.op} log ({Path(log_path).name}) with the machine of {Path(scenario_path).name} held fixed "
                            "(NVLink card, line rate, fabric)."),
            "params": nic_params_yaml(fit.nic),
            "fit": {"sizes": fit.sizes, "fitted": list(fit.fitted), "mean_abs_error_pct_before": round(fit.before_pct, 2),
                    "mean_abs_error_pct_in_sample": round(fit.in_sample_pct, 2),
                    "mean_abs_error_pct_held_out": None if fit.held_out_pct is None else round(fit.held_out_pct, 2),
                    "notes": [f"the scenario's card before the fit: {fit.before_pct:.2f}%; after: {fit.in_sample_pct:.2f}% in sample{held}"]},
            "provenance": provenance([{"path": trace.path, "sha256": trace.sha256, "tool": "nccl-tests",
                                       "commands": getattr(trace, "commands", [])},
                                      {"path": str(scenario_path), "role": "machine held fixed"}])}


def multi_node_log(path: str) -> bool:
    """Whether `path` is an nccl-tests log of several nodes (a qperf output or an unreadable file: no; the collective-card
    path reports what is wrong with it)."""
    from simcluster.errors import TraceFormatError
    from simcluster.traces import nccl_tests
    from simcluster.traces.qperf import looks_like_qperf

    if looks_like_qperf(path):
        return False
    try:
        return nccl_tests.parse(path).nodes > 1
    except TraceFormatError:
        return False


def internode_card(logs: list[str], scenario: str | None, variant: str | None, op: str | None, name: str) -> tuple[dict, str]:
    """`simcluster calibrate LOG --scenario MACHINE`: the NIC card and a one-line summary."""
    if not scenario:
        raise CalibrationError("a multi-node nccl-tests log calibrates the inter-node terms of a machine: give --scenario "
                               "(the machine it ran on)", where=logs[0],
                               hint="e.g. simcluster calibrate LOG --scenario scenarios/oci-bm-gpu-h100-8x2.yaml -o nic.yaml")
    if len(logs) != 1:
        raise CalibrationError("one multi-node log at a time", hint="give one nccl-tests log with --scenario")
    fit = fit_internode(logs[0], scenario, variant, op)
    held = f", held out (larger half of the sizes) {fit.held_out_pct:.2f}%" if fit.held_out_pct is not None else ""
    return nic_document(fit, logs[0], scenario, name), (
        f"{', '.join(fit.fitted)} fitted on {fit.sizes} sizes: efficiency {fit.nic.efficiency:.4f}, latency "
        f"{fit.nic.latency_s * 1e6:.3g} us; mean |error| {fit.before_pct:.2f}% with the card -> {fit.in_sample_pct:.2f}% in sample{held}")
