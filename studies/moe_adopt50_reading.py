"""How far to trust session 50's adopt50 (the MoE router priced at its GPU kernel time), from the model's own
predictions (cold review A50, findings 2-4 and 7; mendA50). Prints, judging nothing:

1. the 70 development MoE rows (the 13 files the router term's rule priced, heldout/registration.moe_rows_then) per
   source, with session 49's table (heldout/registration.before_adopt50) and today's: the row-weighted mean |error| beside
   the each-source-once mean (the house rule of trust/thin: a file one source), the sources that got worse, and the
   2026 Megatron-Bridge files' signed range;
2. the Megatron MoE Model Zoo's held-out rows (publ50): which are table figures and which are rounded launch-script
   comments, which MoE layer moerouter timed (heldout/moerouter.layer_keys; GRID) and which the term prices by its
   nearest-layer scaling (router: (M E) / (M0 E0) of the nearest measured layer; permutation: the nearest layer's ratio
   by bytes), and the mean |error| of each group;
3. the figures llm/caveats.MOE_MEGATRON states (tests/test_llm_caveats_moe.py compares them with the string).
With --noise, instead: moeker50's per-record repeat spread by piece and clock (heldout/moeker50.spread, (max - min) /
median of a record's samples; rule P's noise is the largest over events and kernels, heldout/moeker50.noise).
    python studies/moe_adopt50_reading.py
    python studies/moe_adopt50_reading.py --noise
+ = predicted fast (reference/llm's convention).
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

ZOO = "llm-megatron-moe-modelzoo-"
# figures from a comment above a launch command, rounded to 5-10 TFLOP/s, not a logged table (each file's `where`:
# best_practice/Mixtral/run_mixtral_8x22B.sh at b09773a 'should be around 465 TFLOPS for H100', revised 455 -> 465 the same
# day; best_practice/qwen3/run_h100_235b.sh at 1ed4179 '# H100 config, 320 TFLOPS')
SCRIPT_COMMENT = {(f"{ZOO}mixtral-8x22b-h100", 1), (f"{ZOO}qwen3-235b-h100-2026", 0)}
RECENT = "llm-megatron-bridge-26"   # the 2026 Megatron-Bridge releases' files (26.02, 26.02.01, 26.04)


def mean_abs(errors) -> float:
    errors = list(errors)
    return sum(map(abs, errors)) / len(errors)


def predictions() -> tuple[list, list]:
    """validate --published llm's rows with session 49's table (heldout/registration.before_adopt50) and today's."""
    from simcluster.heldout.registration import before_adopt50
    from simcluster.reference.llm import validate_published_llm

    with before_adopt50():
        then = validate_published_llm().rows
    return then, validate_published_llm().rows


def development(rows: list) -> dict:
    """{(source, run): error %} of the 70 development rows (heldout/registration.moe_rows_then)."""
    from simcluster.heldout.registration import moe_rows_then

    return {(r.source, r.run): 100 * r.error for r in moe_rows_then(rows)}


def by_source(errors: dict) -> dict:
    out: dict = {}
    for (source, _), e in sorted(errors.items()):
        out.setdefault(source, []).append(e)
    return out


def zoo_rows(rows: list) -> list:
    """The held-out Model Zoo rows (validate --published llm's, with an error)."""
    return [r for r in rows if r.source.startswith(ZOO) and r.error is not None and r.held_out and not r.development_for]


def each_source_once(by: dict) -> float:
    """The mean over sources of each source's mean |error| (trust/thin.source_figures, the families' rule)."""
    from simcluster.trust.thin import source_figures

    return source_figures({s: [abs(x) for x in v] for s, v in by.items()}, 10.0)["each_source_once_mean"]


def source_means(errors: dict) -> dict:
    return {source: mean_abs(v) for source, v in by_source(errors).items()}


def moe_held_out(rows: list) -> list:
    """Every held-out MoE row with an error (validate --published llm --families' MoE held-out rows: the Model Zoo's and,
    since publ51, Google's)."""
    return [r for r in rows if r.family == "MoE" and r.held_out and r.error is not None]


def caveat_figures(then: dict, now: dict, zoo: list, held: list) -> dict:
    """The numbers llm/caveats.MOE_MEGATRON states, from the predictions (review A50, finding 7; the held-out rows of
    every source since mendC51, cold review C51 item 2)."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import moe_te_host

    e = list(now.values())
    slow = [k for k, v in now.items() if v < -10]
    a, b = source_means(then), source_means(now)
    recent = [v for (source, _), v in now.items() if source.startswith(RECENT)]
    return {"rows": len(e), "mean_pct": f"{mean_abs(e):.1f}", "within": sum(abs(x) <= 10 for x in e),
            "slow": len(slow), "slow_grok": sum("grok1" in s for s, _ in slow), "fast": sum(x > 10 for x in e),
            "sources": len(b), "each_source_pct": f"{each_source_once(by_source(now)):.1f}",
            "sources_worse": sum(b[k] > a[k] for k in b), "recent_rows": len(recent),
            "recent_fast": sum(x > 10 for x in recent), "held_rows": len(held),
            "held_sources": len({r.source_group or r.source for r in held}),
            "held_mean_pct": f"{mean_abs(100 * r.error for r in held):.1f}", "zoo_rows": len(zoo),
            "zoo_mean_pct": f"{mean_abs(100 * r.error for r in zoo):.1f}",
            "gpu_work_s": f"{moe_te_host.row_result(0, 0.0).step_time_s:.2f}", "gpu_active_s": f"{moe_te_host.GPU_ACTIVE_S:.2f}"}


def caveat_claims(f: dict) -> list[str]:
    """The phrases of llm/caveats.MOE_MEGATRON that carry the figures `f` (caveat_figures)."""
    return [f"the {f['rows']} published Megatron MoE rows", f"miss by {f['mean_pct']}% mean |error| ({f['within']} within "
            f"10%; {f['slow']} slow beyond 10%, Grok-1's {f['slow_grok']} among them", f"and {f['fast']} fast;",
            f"each of their {f['sources']} sources once {f['each_source_pct']}%, {f['sources_worse']} sources worse since "
            f"session 50", f"files {f['recent_fast']} of {f['recent_rows']} rows fast beyond 10%",
            f"{f['held_rows']} later rows from {f['held_sources']} sources are held out, {f['held_mean_pct']}%",
            f"the Model Zoo's {f['zoo_rows']} {f['zoo_mean_pct']}%",
            f"GPU work is {f['gpu_work_s']} s against {f['gpu_active_s']} s measured"]


def print_development(then: dict, now: dict) -> None:
    a, b = by_source(then), by_source(now)
    print(f"{'development source':58s} {'rows':>4s} {'s49 table':>9s} {'adopt50':>8s}  signed range (adopt50)")
    worse = []
    for source in a:
        x, y = mean_abs(a[source]), mean_abs(b[source])
        worse += [source] if y > x else []
        print(f"{source[4:62]:58s} {len(a[source]):4d} {x:8.1f}% {y:7.1f}%  {min(b[source]):+.1f}..{max(b[source]):+.1f}%")
    print(f"row-weighted ({len(then)} rows): {mean_abs(then.values()):.2f} -> {mean_abs(now.values()):.2f}%")
    each_then, each_now = each_source_once(a), each_source_once(b)
    print(f"each source once ({len(a)} sources): {each_then:.1f} -> {each_now:.1f}%; worse on {len(worse)} of {len(a)} "
          f"sources, better on {len(a) - len(worse)}")
    recent = [e for s, v in b.items() if s.startswith(RECENT) for e in v]
    print(f"the 2026 Megatron-Bridge files ({sum(s.startswith(RECENT) for s in b)} files, {len(recent)} rows): "
          f"{min(recent):+.1f}..{max(recent):+.1f}% (+ = predicted fast), {sum(e > 10 for e in recent)} rows beyond +10%")


def nearest_layers(key_m: tuple, table: tuple) -> str:
    """The measured layers moe_router_term takes for a row: the router's nearest (and its (M E) / (M0 E0) scale) and the
    permutation's nearest by bytes (and the bytes' ratio)."""
    from simcluster.runner.moerouter_grid import GRID

    (m, e, h), b = key_m
    names = [g[0] for g in GRID]   # the table's rows are GRID's, in order (heldout/moerouter.rows_of)
    r = min(range(len(table)), key=lambda j: sum(abs(math.log(x / table[j][k])) for k, x in enumerate((m, e, h))))
    p = min(range(len(table)), key=lambda j: abs(math.log(b / table[j][7])))
    return (f"router {names[r]} x{m * e / (table[r][0] * table[r][1]):.2f}"
            f"{'' if table[r][2] == h else f' (h {h} vs {int(table[r][2])})'}; "
            f"permute {names[p]} (bytes x{b / table[p][7]:.2f})")


def print_zoo(zoo: list) -> None:
    from simcluster.heldout.moerouter import layer_keys
    from simcluster.llm import moe_router_term
    from simcluster.runner.moerouter_grid import GRID

    grid = {tuple(g[1:]): g[0] for g in GRID}
    keys = {(path.stem, i): (k, km) for path in sorted((ROOT / "calibration/published").glob(f"{ZOO}*.yaml"))
            for i, k, km in layer_keys(path)}
    groups: dict = {}
    print(f"{'held-out Model Zoo row':44s} {'figure':15s} {'error':>7s}  layer (GRID) / what the term takes")
    for r in zoo:
        key, km = keys[(r.source, r.run)]
        kind = "script comment" if (r.source, r.run) in SCRIPT_COMMENT else "table"
        on = grid.get(key)
        groups.setdefault("on the grid" if on else "off the grid", []).append(100 * r.error)
        groups.setdefault(f"{kind} figures", []).append(100 * r.error)
        print(f"{r.source[len(ZOO):] + ' ' + str(r.run):44s} {kind:15s} {100 * r.error:+6.1f}%  "
              f"{on or 'off the grid'}: {nearest_layers(km, moe_router_term.table())}")
    for name, e in groups.items():
        print(f"  {name}: {len(e)} rows, {mean_abs(e):.1f}% mean |error|, {sum(abs(x) <= 10 for x in e)} within 10%")


def print_noise() -> None:
    from statistics import median

    from simcluster.heldout import moeker50

    tr = moeker50.read_trace(moeker50.BUNDLE / "runs" / "moe-kernels.json")
    by: dict = {}
    for (layer, piece, pass_, clock), rec in tr["records"].items():
        by.setdefault((piece, clock), []).append((moeker50.spread(rec.get("samples") or []), f"{layer} {pass_}"))
    for (piece, clock), v in sorted(by.items()):
        worst = max(v)
        print(f"{piece:8s} {clock:8s} {len(v):3d} records: spread max {100 * worst[0]:5.1f}% ({worst[1]}), median "
              f"{100 * median(x for x, _ in v):5.1f}%")
    for piece in ("router", "permute"):
        print(f"rule P / R noise ({piece}): {100 * moeker50.noise(tr, piece):.1f}%")


def main() -> None:
    rows_then, rows = predictions()
    then, now = development(rows_then), development(rows)
    print_development(then, now)
    zoo = zoo_rows(rows)
    print(f"held out, the Model Zoo (one source; seen before moedev51's expectation: not blind): {len(zoo)} rows, "
          f"{mean_abs(100 * r.error for r in zoo):.1f}% mean |error|")
    print_zoo(zoo)
    held = moe_held_out(rows)
    print(f"held out, every MoE source ({len({r.source_group or r.source for r in held})} sources): {len(held)} rows, "
          f"{mean_abs(100 * r.error for r in held):.1f}% mean |error|")
    print("caveat figures: " + ", ".join(f"{k} {v}" for k, v in caveat_figures(then, now, zoo, held).items()))


if __name__ == "__main__":
    import study_args  # an unknown argument refused before the study runs
    study_args.check(options=("--noise",))
    print_noise() if "--noise" in sys.argv else main()
