"""Every lab eager mode at every GPU count against issue 44's 8% (session 43, engineer eagerlab; a diagnostic, no model
input; every GPU count since mendB47, cold review B47: the 4-GPU rows were left out before).

Reads the error-band table (simcluster/trust/error_bands.json, family `llm eager`: the registered and sealed read-outs'
held-out rows) and prints, per regime and GPU count: rows, sets, today's mean |error| (a registered row at today's
prediction: today_over_registered / rho - 1; a sealed row: 1 / rho - 1), today's mean error (bias), whether the mean
|error| meets 8% -- a verdict: 'met', 'NOT met', or 'thin' (session 50, issue 44's house rule, trust/thin: it meets 8%
pooled only -- fewer than 3 rows outside its largest set, over 8% with each set weighing once, or mean |error| + 1 se,
the rows' sd of |error| / sqrt(rows), over 8: cold review B49's variant; one set or no margin carries it: not met; the
last column says why) --, whether trust/noise.py marks the regime noise-limited there, and its verdict (trust/noise.FLOOR_VERDICTS,
'-' where it has none: a regime that meets the target and was never marked). With --live (session 44) the same
figures from the held-out rows as the table builder reads them now (trust/build.eager_residuals of eager_held_out_rows,
today's moves recomputed), before error_bands.json is regenerated.
    python studies/eager_lab_modes.py [--live]
"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from simcluster.trust.noise import floor_verdict  # noqa: E402
from simcluster.trust.table import load_table  # noqa: E402
from simcluster.trust.thin import lab_figures  # noqa: E402

TARGET_PCT = 8.0


def modes(max_gpus: int | None = None, live: bool = False) -> list[dict]:
    if live:
        from simcluster.trust.build import eager_held_out_rows, eager_residuals

        res = eager_residuals(eager_held_out_rows())
        regimes = {key: [r for r in res if r.regime == key] for key in {r.regime for r in res}}
    else:
        regimes = {key: regime.rows for key, regime in load_table().regimes.items()}
    out = []
    for key, all_rows in sorted(regimes.items()):
        rows = [r for r in all_rows if r.family == "llm eager" and (max_gpus is None or r.scale <= max_gpus)]
        for scale in sorted({r.scale for r in rows}):
            pick = [r for r in rows if r.scale == scale]
            errs = [r.today_error for r in pick]
            per_set: dict[str, list[float]] = {}
            for r in pick:
                per_set.setdefault(r.source, []).append(100 * abs(r.today_error))
            lab = lab_figures(per_set, TARGET_PCT)
            mean = lab["mean"]
            out.append({"regime": key, "gpus": int(scale), "rows": len(pick), "sets": len(per_set),
                        "mean_abs_pct": mean, "bias_pct": 100 * statistics.mean(errs), "meets": mean <= TARGET_PCT,
                        "plus_se_pct": mean + lab["se"], "each_set_pct": lab["each_source_once_mean"],
                        "thin_why": lab["why"], "met": "NOT met" if mean > TARGET_PCT else "thin" if lab["why"] else "met",
                        "verdict": getattr(floor_verdict(key, scale, "H200"), "verdict", "-")})
            out[-1]["noise_limited"] = out[-1]["verdict"] == "noise-limited"
    return out


def main(argv: list[str] | None = None) -> int:
    print(f"{'regime':56} {'GPUs':>4} {'rows':>4} {'sets':>4} {'mean |err|':>10} {'+1 se':>7} {'set once':>8} {'bias':>7}  "
          "8%      noise-limited  verdict                    why thin (trust/thin)")
    for m in modes(live="--live" in (sys.argv[1:] if argv is None else argv)):
        print(f"{m['regime']:56} {m['gpus']:4d} {m['rows']:4d} {m['sets']:4d} {m['mean_abs_pct']:9.1f}% {m['plus_se_pct']:6.1f}% "
              f"{m['each_set_pct']:7.1f}% {m['bias_pct']:+6.1f}%  {m['met']:7} {'yes' if m['noise_limited'] else 'no':13}  "
              f"{m['verdict']:26} {m['thin_why']}".rstrip())
    return 0


if __name__ == "__main__":
    import study_args  # an unknown argument refused before the study runs
    study_args.check(options=("--live",))
    sys.exit(main())
