"""Text for `simcluster validate` results (simcluster/validation.py, simcluster/reference/)."""

from __future__ import annotations

from functools import singledispatch
from pathlib import Path

from simcluster.fit.machine import PROBE_MAX_BYTES, PROBE_OPS
from simcluster.machine_validation import HeldOutMachines
from simcluster.reference.families import FamilyValidation
from simcluster.report.tables import validation_table
from simcluster.results import DecisionValidation, ReferenceValidation
from simcluster.validation import BundleValidation, LogValidation, QperfValidation


@singledispatch
def render(result) -> str:
    raise TypeError(f"no text rendering for {type(result).__name__}")


@render.register
def _(v: LogValidation) -> str:
    from simcluster.fit.validate import summary

    t = v.trace
    against = v.card_name if v.card_name.startswith("scenario ") else f"card {v.card_name}"
    lines = [f"# {t.op}, {t.nranks} ranks: {t.path} vs {against} ({v.card_path})"]
    lines += [f"# note: {n}" for n in v.notes]
    text = "\n".join(lines) + "\n" + validation_table(v.rows)
    for label, s in summary(v.rows).items():
        text += (f"# {label}: {s['sizes']} sizes, mean |error| {s['mean_abs_error_pct']}%, max {s['max_abs_error_pct']}%\n"
                 if s["sizes"] else f"# {label}: no sizes to compare\n")
    return text


@render.register
def _(v: BundleValidation) -> str:
    from simcluster.fit.validate import summary

    lines = [f"# bundle {v.bundle} vs card {v.card_name} ({v.card_path}); each op the median of its rounds",
             f"# {'op':>14}  {'ranks':>5}  {'timing':>6}  {'rounds':>6}  {'sizes':>5}  {'mean |error|':>12}  "
             f"{'max |error|':>11}  (sizes >= 1 KiB)"]
    for r in v.ops:
        s = summary(r.rows)["sizes_ge_1024B"]
        mean, worst = (f"{s[k]:.2f}%" if s[k] is not None else "-" for k in ("mean_abs_error_pct", "max_abs_error_pct"))
        lines.append(f"  {r.op:>14}  {r.ranks:>5}  {'graph' if r.cuda_graph else 'host':>6}  {r.rounds:>6}  "
                     f"{s['sizes']:>5}  {mean:>12}  {worst:>11}  {r.basis}")
    lines += [f"# note: {n}" for n in v.notes]
    return "\n".join(lines) + "\n"


@render.register
def _(v: HeldOutMachines) -> str:
    from simcluster.machine_validation import BANDS

    lines = ["# each machine held out in turn: a kind card fitted on the other machines' bundles + the held-out "
             "bundle's probe (all_reduce, all_gather, sizes below 1 MiB); machine: one set of GPUs (UUIDs) or one lease",
             f"# {'bundle':>44}  {'machine':>7}  {'timing':>6}  {'op':>14}  "
             + "  ".join(f"{name:>12}" for name, *_ in BANDS) + "  (mean |error|; * probe sizes, in sample)"]
    for m in v.machines:
        lines.append(f"# {m.bundle}: {m.terms.launch}, latency offset {m.terms.latency_offset_s * 1e6:+.2f} us, host "
                     f"floor {m.terms.host_floor_s * 1e6:.2f} us; kind from {', '.join(m.kind_from)}")
        lines += [f"# note: {n}" for n in m.notes]
        for r in m.ops:
            cells = []
            for _, low, high in BANDS:
                e = m.band(r, low, high)
                star = "*" if r.op in PROBE_OPS and low < PROBE_MAX_BYTES else " "
                cells.append(f"{e:>11.2f}%{star}" if e is not None else f"{'-':>12} ")
            lines.append(f"  {Path(m.bundle).name:>44}  {m.machine:>7}  {'graph' if r.cuda_graph else 'host':>6}  "
                         f"{r.op:>14}  " + " ".join(cells))
    return "\n".join(lines) + "\n"


@render.register
def _(v: QperfValidation) -> str:
    lines = []
    for r in v.rows:
        unit, scale = ("MB/s", 1e-6) if r["test"].endswith("_bw") else ("us", 1e6)
        lines.append(f"{r['test']:>8}  measured {r['measured'] * scale:9.2f} {unit}  predicted "
                     f"{r['predicted'] * scale:9.2f} {unit}  error {r['error_pct']:+6.1f}%")
    return "\n".join(lines) + "\n"


def plot(v, path: str) -> None:
    """The validation's figure: measured and predicted busbw against size (a panel per op for a bundle)."""
    from simcluster.report.plots import bundle_validation_plot, validation_plot

    if isinstance(v, LogValidation):
        validation_plot(v.rows, f"{v.trace.op}, {v.trace.nranks} ranks: measured vs {v.card_name}", path)
    elif isinstance(v, BundleValidation):
        bundle_validation_plot([(f"{r.op}, {r.ranks} ranks, {'graph' if r.cuda_graph else 'host'}", r.rows)
                                for r in v.ops], f"{Path(v.bundle).name} vs {v.card_name}", path)


_METRICS = {"busbw_Bps": ("busbw GB/s", 1e-9), "tokens_per_s": ("tokens/s", 1.0), "step_time_s": ("step s", 1.0),
            "flops_per_gpu_per_s": ("TFLOP/s/GPU", 1e-12), "mtbf_s": ("MTBF hours", 1 / 3600),
            "checkpoint_bytes": ("checkpoint TB", 1e-12), "flops_per_gpu_per_s (eq. 3)": ("TFLOP/s/GPU eq.3", 1e-12)}

_REFERENCE_HEADER = (f"{'source':<40} {'run':>3}  {'configuration':<64} {'metric':<16} {'measured':>10} {'predicted':>10} "
                     f"{'error':>7}  {'held out':<8}  detail")


def _short(source: str) -> str:
    return source.removeprefix("nccl-").removeprefix("llm-").removeprefix("reliability-")


def _clip(text: str, width: int = 140) -> str:
    """A provenance or detail note cut to one readable line; --json carries the whole text."""
    text = " ".join(str(text).split())
    return text if len(text) <= width else text[: width - 12].rstrip() + " ... (--json)"


@render.register
def _(v: FamilyValidation) -> str:
    """A line per issue-44 family and kind of row (held out, development): rows, sources, mean |error|, within target."""
    from simcluster.trust.regime import LONG_SEQUENCE
    from simcluster.trust.thin import MIN_OTHER_ROWS, MIN_OTHER_SOURCES

    target = v.published.target * 100
    lines = [f"# published LLM rows per family (issue 44's target: held-out rows mean |error| <= {target:.0f}% and >= "
             f"{v.FAMILY_SHARE:.0%} within {target:.0f}%); a row's family, the first its configuration takes: MoE (experts), "
             f"long-sequence (seq >= {LONG_SEQUENCE:,}), FSDP/ZeRO (a PyTorch FSDP trainer or ZeRO 2-3), fp8, Megatron/NeMo "
             "(trust/regime.published_family)",
             f"# met also needs >= {v.MIN_SOURCES} sources (a source_group once; else 'not judged'), and the numbers with each source "
             f"weighing once and >= {MIN_OTHER_ROWS} held-out rows from >= {MIN_OTHER_SOURCES} sources outside the largest source "
             "(else 'thin: one source carries it', "
             "not met: trust/thin); [rests on grouping: ...]: the verdict with one source_group's files counted apart (all "
             "at once, and each file alone with the rest grouped), where it differs",
             "# n: rows compared; n/c: the family's rows not compared (no prediction: what the source leaves out or the "
             "model cannot express; --json: why, per row)",
             f"# {'family':<14} {'rows':<12} {'n':>4} {'n/c':>4} {'src':>4} {'mean |error|':>12} {'within':>13}  target  sources"]
    for f in v.families():
        for kind in ("held_out", "development"):
            s = f[kind]
            if not s["rows"]:
                if kind == "held_out" and v.no_held_out_since(f):   # not met, not validated: no held-out row to judge
                    lines.append(f"  {f['family']:<14} {'held out':<12} {0:>4} {0:>4} {0:>4} {'-':>12} {'-':>13}  not judged: no "
                                 f"held-out rows since the router term (the rows its files hold out are {_clip(v.no_held_out_since(f), 200)})")
                elif kind == "held_out" or s["not_compared"]:
                    lines.append(f"  {f['family']:<14} {kind.replace('_', ' '):<12} {0:>4} {s['not_compared']:>4} {0:>4} {'-':>12} "
                                 f"{'-':>13}  {'no' if kind == 'held_out' else '':<6}  (no {kind.replace('_', '-')} row compared)")
                continue
            met = _family_target(s) if kind == "held_out" else ""
            if kind == "held_out" and s["verdict_on_grouping"]:   # the verdict rests on a source grouping
                met += " [rests on grouping: " + "; ".join(_on_grouping(g, d) for g, d in s["verdict_on_grouping"].items()) + "]"
            lines.append(f"  {f['family']:<14} {kind.replace('_', ' '):<12} {s['rows']:>4} {s['not_compared']:>4} {len(s['sources']):>4} "
                         f"{s['mean_abs_error_pct']:>11.1f}% {s['within_target']:>5} ({s['within_share']:>4.0%})  {met:<6}  "
                         + _clip(", ".join(_short(x) for x in s["sources"]), 90))
    if v.no_family():
        lines.append(f"# not compared and of no family (the file prints too little to name one): {v.no_family()} rows")
    return "\n".join(lines) + "\n"


def _on_grouping(group: str, d: dict) -> str:
    """One group's '[rests on grouping: ...]' part: the verdict with all its files apart and with each one apart
    (reference/families: where it differs from the family's verdict)."""
    parts = [f"{_short(group)}'s {d['files']} files apart: {d['verdict']}"] if d["verdict"] else []
    parts += [f"{_short(name)} apart from {_short(group)}: {v}" for name, v in d.get("one_file_apart", {}).items()]
    return "; ".join(parts)


def _family_target(s: dict) -> str:
    """A held-out family's target column (FamilyValidation._stats's verdict): yes (with the rows of its largest source and
    the figure with each source weighing once) / no, "not judged" where its rows meet the numbers on too few sources, or
    "thin: one source carries it" where they meet them on enough sources but not without the largest (issue 44, s50)."""
    if s["verdict"] == "not judged":
        n = len(s["sources"])
        return f"not judged: {n} source{'s' if n != 1 else ''} ({s['rows']} rows meet the numbers)"
    if s["verdict"] == "thin":
        return f"thin: one source carries it ({s['thin_why']}; largest source {s['largest_source_rows']} of {s['rows']} rows)"
    if s["verdict"] == "met":   # the verdict as judged; how much of it one source carries beside it (review A49, finding 5)
        return (f"yes (largest source {s['largest_source_rows']} of {s['rows']} rows, {s['rows_outside_largest_source']} rows "
                f"from {s['sources_outside_largest_source']} sources outside it; each source once "
                f"{s['each_source_once_mean_abs_error_pct']:.1f}%, {s['each_source_once_within_share']:.0%} within)")
    return "no"


@render.register
def _(v: ReferenceValidation) -> str:
    """A row per published run (predicted beside measured, the error, held out or not), then a line per source."""
    lines = [f"# {v.what}: predicted vs measured; + = predicted faster; held out = nothing fitted or chosen on the row",
             _REFERENCE_HEADER]
    for r in v.rows:
        head = f"{_short(r.source)[:40]:<40} {r.run:>3}  {r.configuration[:64]:<64}"
        if r.unavailable:
            lines.append(f"{head} not compared: {_clip(r.unavailable)}")
            continue
        label, scale = _METRICS.get(r.metric, (r.metric, 1.0))
        lines.append(f"{head} {label:<16} {r.measured * scale:>10.4g} {r.predicted * scale:>10.4g} {r.error * 100:>+6.1f}%  "
                     f"{'yes' if r.held_out else 'no':<8}  {_clip(r.detail)}")
    lines += ["", f"per source (target |error| <= {v.target * 100:.0f}%):"]
    for source, s in v.summary().items():
        name = _short(source)
        if not s["rows"]:
            lines.append(f"  {name:<44} no row compared; {_clip(v.why(source))}")
            continue
        lines.append(f"  {name:<44} {s['rows']:>3} rows  mean |error| {s['mean_abs_error_pct']:5.1f}%  max "
                     f"{s['max_abs_error_pct']:5.1f}%  within target {s['within_target']:>2}  held out: {s['held_out']:<6} {_clip(v.why(source))}")
    held = [abs(r.error) for r in v.rows if r.error is not None and r.held_out]
    out_rows, out_files = v.excluded()
    scope = f" (+{out_rows} rows of {out_files} file{'s' * (out_files != 1)} out of scope, not compared)" if out_rows else ""
    if held:
        lines.append(f"held-out rows: {len(held)}, mean |error| {sum(held) / len(held) * 100:.1f}%, "
                     f"{sum(e <= v.target for e in held)} within target{scope}")
    elif scope:
        lines.append(f"held-out rows: 0{scope}")
    return "\n".join(lines) + "\n"


@render.register
def _(v: DecisionValidation) -> str:
    """A line per tuning log: NCCL's logged decisions vs the decision model's, then the totals."""
    lines = [f"# NCCL's logged decisions vs the decision model (collectives/nccl_tuner.py); held out = the log's sha256 "
             f"is not in {v.provenance}",
             f"{'tuning log':<58} {'configuration':<50} {'decisions':>9} {'algo+proto':>10} {'channels':>8}  held out"]
    for s in v.sources:
        head = f"{s.source[-58:]:<58} {s.configuration[:50]:<50}"
        if s.unavailable:
            lines.append(f"{head} {'-':>9}  {s.unavailable}")
            continue
        lines.append(f"{head} {s.decisions:>9} {s.agree:>10} {s.channels_agree:>8}  {'yes' if s.held_out else 'no'}")
        lines += [f"    disagrees: {m}" for m in s.misses[:5]] + ([f"    ... {len(s.misses) - 5} more"] if len(s.misses) > 5 else [])
    t = v.totals()
    if v.sources or v.skipped:
        lines.append(f"\n{t['logs']} logs ({t['logs_with_decisions']} with tuned calls): {t['agree']} of {t['decisions']} decisions "
                     f"agree on algorithm and protocol, {t['channels_agree']} on channels; " + (
                         f"held out: {t['held_out_agree']} of {t['held_out_decisions']} agree" if t["held_out_decisions"] else
                         "none held out (the model was written against every log here)"))
    else:
        lines = []
    if v.published:
        lines += ["" if lines else "", *_published(v)]
    return "\n".join(lines).lstrip("\n") + "\n"


def _published(v: DecisionValidation) -> list[str]:
    """A row per fact of each posted log (calibration/published/nccl-decisions-*/), then counts per log and in total."""
    lines = ["# NCCL_DEBUG=INFO logs other people posted vs the decision model (NCCL 2.28.3's rules); a row per fact the "
             "log states, for the communicator the post describes",
             f"  {'line':>4}  {'fact':<54} {'logged':>12} {'model':>12}  {'verdict':<13} note"]
    for s in v.published:
        compared, agree = s.counts()
        lines.append(f"{s.source}: {s.topology}; held out {'yes' if s.held_out else 'no'}; {agree} of {compared} agree")
        lines.append(f"  source: {s.citation}")
        if s.version_note:
            lines.append(f"  version: {s.version_note}")
        lines += [f"  {f.line:>4}  {f.fact[:54]:<54} {f.logged[:12]:>12} {f.model[:12]:>12}  {f.verdict:<13} {f.note}"
                  for f in s.facts]
    t = v.published_totals()
    lines += ["", f"{len(v.published)} posted logs: {t['all']['agree']} of {t['all']['compared']} compared facts agree; "
              f"held out: {t['held_out']['agree']} of {t['held_out']['compared']}; logs of NCCL 2.28: "
              f"{t['same_version']['agree']} of {t['same_version']['compared']}; of another or an unstated NCCL version: "
              f"{t['other_version']['agree']} of {t['other_version']['compared']}"]
    return lines
