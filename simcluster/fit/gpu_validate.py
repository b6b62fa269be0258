"""Held-out validation of a GPU card on a gpu-micro trace, and the `python -m simcluster.fit.gpu` command line.

`validate` gives predicted vs measured per sample, `in_fit` marking the fit set of fit/gpu.py (with a card, the
rows it was fitted on are decided by the card's provenance, `card_saw_trace`: the sha256 of every trace it was
fitted on, never by a flag); `summary` the mean and max error per op class, fit set and held out apart. `main`
is the command line: `validate TRACE [--card CARD] [--rows]` prints that table, `carry CARD DATASHEET` a
datasheet GPU's card with a measured card's curves.
"""

from __future__ import annotations

import statistics
import sys
from dataclasses import dataclass

from simcluster.errors import SimclusterError
from simcluster.fit.gpu import DATASHEETS, attention_in_fit, attention_passes, carried_card, fit_gpu, gemm_in_fit, has_fp8_layers, memory_in_fit
from simcluster.hardware.gpu import GpuParams
from simcluster.script_args import ArgumentParser
from simcluster.traces.gpu_micro import GpuMicroTrace


@dataclass(frozen=True)
class Row:
    op: str             # gemm-bf16, gemm-fp8, gemm-fp32, attention-fwd, attention-bwd, memory-<op>
    shape: str
    measured_s: float
    predicted_s: float
    in_fit: bool

    @property
    def error(self) -> float:
        return self.predicted_s / self.measured_s - 1.0


def validate(p: GpuParams, trace: GpuMicroTrace, split: bool = True, sections: tuple[str, ...] = ("gemm", "attention", "memory"),
             condition: str | None = None, fp8_layers: bool | None = None) -> list[Row]:
    """Predicted vs measured for every sample of `sections`; `in_fit` marks the fit set (False everywhere with
    split=False: a trace the card never saw); GEMMs of `condition` (default: the trace's, gemm_condition) are the
    card's own, the other condition's rows are named apart. `fp8_layers`: whether the card's fp8 curve was fitted on
    layer GEMMs (then a trace's fp8 squares are held out); default: whether this trace has them."""
    rows: list[Row] = []
    layers = has_fp8_layers(trace.gemm) if fp8_layers is None else fp8_layers
    for s in trace.gemm if "gemm" in sections else []:
        if s.dtype in p.peak_flops:   # the other condition's rows: never fitted, named apart
            fitted = s.condition == (condition or trace.gemm_condition)
            rows.append(Row(f"gemm-{s.dtype}" + ("" if fitted else f" {s.condition}"), f"{s.role} {s.m}x{s.n}x{s.k}", s.time_s,
                            p.gemm_time_s(s.m, s.n, s.k, s.dtype, s.batch), split and fitted and gemm_in_fit(s, layers)))
    for a in attention_passes(trace.attention) if "attention" in sections else []:
        s = a.sample
        rows.append(Row("attention-bwd" if a.backward else "attention-fwd", f"h{s.heads}/kv{s.kv_heads} d{s.head_dim} s{s.seq_kv} b{s.batch}",
                        a.time_s, p.attention_time_s(s.batch, s.heads, s.kv_heads, s.seq_q, s.seq_kv, s.head_dim, s.causal, a.backward, s.dtype),
                        split and attention_in_fit(s)))
    for s in trace.memory if "memory" in sections else []:
        rows.append(Row(f"memory-{s.op}", f"{s.bytes_moved / 2**20:.4g}MiB", s.time_s, p.memory_time_s(s.bytes_moved),
                        split and memory_in_fit(s) and not s.reference_only))
    return rows


LONG_S = 50e-6   # ops measured at >= 50 us are past the host's issue floor: the device model alone


def summary(rows: list[Row]) -> list[dict]:
    """Mean and max |error| per op class, fit set and held out apart, and the held-out ops of >= 50 us alone."""
    out = []
    for op in sorted({r.op for r in rows}):
        for label, keep in (("fit", lambda r: r.in_fit), ("held out", lambda r: not r.in_fit),
                            ("held out >= 50us", lambda r: not r.in_fit and r.measured_s >= LONG_S)):
            errs = [abs(r.error) for r in rows if r.op == op and keep(r)]
            if errs:
                out.append({"op": op, "set": label, "n": len(errs),
                            "mean_abs_error": round(statistics.fmean(errs), 4), "max_abs_error": round(max(errs), 4)})
    return out


def summary_table(rows: list[Row]) -> str:
    lines = ["| op | set | n | mean abs error | max abs error |", "| --- | --- | --- | --- | --- |"]
    lines += [f"| {s['op']} | {s['set']} | {s['n']} | {100 * s['mean_abs_error']:.1f}% | {100 * s['max_abs_error']:.1f}% |"
              for s in summary(rows)]
    return "\n".join(lines) + "\n"


def same_gpu(card_name: str, device_name: str) -> bool:
    """Whether a card's name ('h100-sxm', 'h200-sxm-interleaved') names the trace's GPU ('NVIDIA H100 80GB HBM3')."""
    import re

    model = re.match(r"[a-z]+\d+", card_name.lower())
    return bool(model) and model.group(0) in device_name.lower().replace(" ", "")


def card_saw_trace(card: dict, card_path, trace_sha256: str, _depth: int = 0) -> bool:
    """Whether a GPU card was fitted on the trace with this sha256, from the card's provenance alone: its
    `traces` (path + sha256 of every gpu-micro log it was fitted on) or, for a carried card, those of the card
    its curves came from (`curves_from`, a path relative to the repository or to the card). A card without
    provenance is an error: held out cannot be decided."""
    from pathlib import Path

    from simcluster.hardware.gpu import load_gpu

    prov = card.get("provenance") or {}
    if "traces" in prov:
        return any(t.get("sha256") == trace_sha256 for t in prov["traces"] or [])
    source = prov.get("curves_from")
    if source and _depth < 4:
        here = Path(card_path).resolve().parent
        candidates = [Path(source), *(parent / source for parent in here.parents), here / Path(source).name]
        found = next((c for c in candidates if c.is_file()), None)
        if found is None:
            raise SimclusterError(f"provenance.curves_from: {source} not found", where=str(card_path))
        return card_saw_trace(load_gpu(found)[1], found, trace_sha256, _depth + 1)
    raise SimclusterError("provenance: neither traces nor curves_from; cannot tell which traces the card was fitted on",
                          where=str(card_path))


def main(argv: list[str] | None = None) -> int:
    from simcluster.card_document import dump_card
    from simcluster.hardware.gpu import load_gpu
    from simcluster.traces import gpu_micro

    ap = ArgumentParser(prog="python -m simcluster.fit.gpu_validate", description="GPU cards: held-out error, datasheet cards")
    sub = ap.add_subparsers(dest="command", required=True)
    v = sub.add_parser("validate", help="error of a card (or of a fit on the trace's fit set) on a gpu-micro trace")
    v.add_argument("trace", help="a gpu-micro stdout.txt")
    v.add_argument("--card", help="a gpu card; without it the card is fitted on the trace's fit set")
    v.add_argument("--rows", action="store_true", help="print every shape, not only the summary")
    c = sub.add_parser("carry", help="a datasheet GPU's card with a measured card's curves")
    c.add_argument("card", help="the measured gpu card")
    c.add_argument("datasheet", choices=sorted(DATASHEETS), help="the target GPU")
    c.add_argument("--note", default="", help="a sentence on how well carrying did (appended to the description)")
    c.add_argument("--published", help="scale the curves by published target / reference efficiency (fit/gpu_published.py)")
    c.add_argument("--fp8-reference", help="the published GPU whose fp8 figure the target's is compared with")
    c.add_argument("--attention-reference", help="the published GPU whose attention figures the target's are compared with")
    args = ap.parse_args(argv)
    try:
        if args.command == "carry":
            measured = load_gpu(args.card)[0]
            if args.published:
                from simcluster.fit.gpu_published import published_card
                card = published_card(measured, args.card, args.published, args.datasheet, measured.name, args.fp8_reference,
                                      args.attention_reference)
            else:
                card = carried_card(measured, args.card, DATASHEETS[args.datasheet], args.note)
            sys.stdout.write(dump_card(card))
            return 0
        trace = gpu_micro.parse(args.trace)
        if args.card:
            params, card = load_gpu(args.card)
            saw = card_saw_trace(card, args.card, trace.sha256)
        else:
            params, saw = fit_gpu(trace), True
    except SimclusterError as exc:
        print(f"error: {exc.one_line()}", file=sys.stderr)
        return 2
    said = "the card was fitted on this trace: its fit-set rows are marked fit" if saw else \
        "the card never saw this trace (its provenance): every row is held out"
    print(f"# {said}")
    if args.card and not same_gpu(str(card.get("name", "")), trace.device_name):
        print(f"# warning: the card is for {card.get('name')}, the trace ran on {trace.device_name}: "
              "this is a cross-GPU prediction, not the card's error", file=sys.stderr)
    prov = (card.get("provenance") or {}) if args.card else {}
    rows = validate(params, trace, split=saw, condition=prov.get("gemm_condition"), fp8_layers=True if prov.get("fp8_trace") else None)
    if args.rows:
        for r in rows:
            print(f"{r.op:>14} {r.shape:<34} measured {r.measured_s * 1e6:10.1f}us predicted {r.predicted_s * 1e6:10.1f}us "
                  f"{100 * r.error:+6.1f}% {'fit' if r.in_fit else 'held out'}")
    sys.stdout.write(summary_table(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
