"""Text tables: the nccl-tests layout for predictions, and predicted-vs-measured tables."""

from __future__ import annotations

from simcluster.collectives.model import Prediction
from simcluster.fit.validate import ValidationRow
from simcluster.units import format_bandwidth, format_size, format_time

_REDOP = {"all_reduce": "sum", "reduce_scatter": "sum", "reduce": "sum"}
_ROOT = {"broadcast": 0, "reduce": 0}


def _fmt(value: float, width: int) -> str:
    """nccl-tests' number format: 2 decimals, fewer if the column is too narrow."""
    for spec in (".2f", ".1f", ".0f"):
        text = format(value, f"{width}{spec}")
        if len(text) <= width:
            return text
    return format(value, f"{width}.1e")


def element_count(op: str, size_bytes: int, nranks: int, elt: int = 4) -> int:
    if op in ("all_gather", "reduce_scatter", "alltoall"):
        return size_bytes // elt // nranks
    return size_bytes // elt


def nccl_tests_table(predictions: list[Prediction], header: list[str]) -> str:
    """Predictions in nccl-tests' column layout (in-place repeats out-of-place; #wrong N/A)."""
    lines = [f"# {h}" for h in header]
    lines.append("#")
    lines.append(f"# {'':>10s}  {'':>12s}  {'':>8s}  {'':>6s}  {'':>6s}           out-of-place"
                 "                       in-place          ")
    lines.append("# {:>10s}  {:>12s}  {:>8s}  {:>6s}  {:>6s}  {:>7s}  {:>6s}  {:>6s}  {:>6s}  {:>7s}  {:>6s}  {:>6s}  {:>6s}"
                 .format("size", "count", "type", "redop", "root", "time", "algbw", "busbw", "#wrong",
                         "time", "algbw", "busbw", "#wrong"))
    lines.append("# {:>10s}  {:>12s}  {:>8s}  {:>6s}  {:>6s}  {:>7s}  {:>6s}  {:>6s}  {:>6s}  {:>7s}  {:>6s}  {:>6s}  {:>6s}"
                 .format("(B)", "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)", "(GB/s)", ""))
    for p in predictions:
        block = f"  {_fmt(p.time_s * 1e6, 7)}  {_fmt(p.algbw_Bps / 1e9, 6)}  {_fmt(p.busbw_Bps / 1e9, 6)}    N/A"
        lines.append(f"{p.size_bytes:12d}  {element_count(p.op, p.size_bytes, p.nranks):12d}  {'float':>8s}  "
                     f"{_REDOP.get(p.op, 'none'):>6s}  {_ROOT.get(p.op, -1):6d}{block}{block}")
    avg = sum(p.busbw_Bps for p in predictions) / max(1, len(predictions)) / 1e9
    lines.append("# Out of bounds values : 0 OK")
    lines.append(f"# Avg bus bandwidth    : {avg:g} ")
    lines.append("#")
    lines += binding_lines(predictions)
    return "\n".join(lines) + "\n"


def binding_lines(predictions: list[Prediction]) -> list[str]:
    """Comment lines naming, per size, the limit that bounds a multi-node prediction's time (its breakdown's
    `binding_limit`) and the algorithm that ran; none for predictions without one (one node's card)."""
    rows = [(p, getattr(p, "breakdown", {}).get("binding_limit")) for p in predictions]
    if not any(limit for _, limit in rows):
        return []
    out = ["# binding limit per size (what bounds the time; 'latency': the fixed step, hop and tree-level terms):"]
    out += [f"# {p.size_bytes:12d}  {getattr(p, 'algorithm', ''):>12s}  {limit or '-'}" for p, limit in rows]
    out.append("#")
    return out


def validation_table(rows: list[ValidationRow]) -> str:
    out = [f"{'size(B)':>12s}  {'measured(us)':>12s}  {'predicted(us)':>13s}  {'error':>7s}  "
           f"{'busbw meas':>10s}  {'busbw pred':>10s}  protocol"]
    for r in rows:
        out.append(f"{r.size_bytes:12d}  {r.measured_s * 1e6:12.2f}  {r.predicted_s * 1e6:13.2f}  {r.error * 100:+6.1f}%  "
                   f"{r.measured_busbw_Bps / 1e9:10.2f}  {r.predicted_busbw_Bps / 1e9:10.2f}  {r.protocol}")
    return "\n".join(out) + "\n"


def sweep_table(predictions: list[Prediction], measured_s: dict[int, float] | None = None) -> str:
    """Predicted sizes; with `measured_s` (size -> measured time), a measured and an error column."""
    extra = f"  {'measured':>10s}  {'error':>7s}" if measured_s is not None else ""
    time = "predicted" if measured_s is not None else "time"
    out = [f"{'size':>10s}  {time:>10s}  {'algbw':>10s}  {'busbw':>10s}{extra}  protocol / algorithm"]
    for p in predictions:
        cells = ""
        if measured_s is not None:
            m = measured_s.get(p.size_bytes)
            cells = (f"  {format_time(m):>10s}  {(p.time_s / m - 1) * 100:+6.1f}%" if m else f"  {'-':>10s}  {'-':>7s}")
        limit = getattr(p, "breakdown", {}).get("binding_limit")
        out.append(f"{format_size(p.size_bytes):>10s}  {format_time(p.time_s):>10s}  "
                   f"{format_bandwidth(p.algbw_Bps):>10s}  {format_bandwidth(p.busbw_Bps):>10s}{cells}  {p.protocol}"
                   + (f" / {p.algorithm}" if hasattr(p, "algorithm") else "") + (f"; binds: {limit}" if limit else ""))
    return "\n".join(out) + "\n"


def training_table(pred) -> str:
    """A readable summary of one TrainingPrediction."""
    b = pred.as_json()["breakdown"]
    cores = (f" ({pred.transport_cores_per_node:.1f} host cores per node busy with it at the all_reduce's full rate)"
             if pred.transport_cores_per_node else "")
    lines = [f"\n{pred.workload} on {pred.ranks} GPU(s), {pred.nodes} node(s), transport {pred.transport}{cores}",
             f"  step time        {pred.step.step_s * 1e3:10.2f} ms",
             f"  throughput       {pred.samples_per_s:10.1f} samples/s",
             f"  speedup          {pred.speedup_vs_1gpu:10.2f} x vs 1 GPU, {pred.speedup_vs_1node:.2f} x vs 1 node "
             f"(scaling efficiency {pred.scaling_efficiency:.0%}; the baselines run on the same host)"]
    if pred.time_to_train_s is not None:
        t = pred.time_to_train_s
        lines.append(f"  time to train    {t / 3600:10.2f} h" if t >= 3600 else f"  time to train    {t / 60:10.2f} min")
    parts = {k: v for k, v in b.items() if k != "communication_total_s"}     # these add up to the step
    lines.append("  breakdown (ms)   " + ", ".join(f"{k.removesuffix('_s')} {v * 1e3:.2f}" for k, v in parts.items())
                 + (f"; communication in all {b['communication_total_s'] * 1e3:.2f} (hidden or not, not a part of the sum)"
                    if "communication_total_s" in b else ""))
    return "\n".join(lines) + "\n"
