"""Session 48 adopt48 (issue 44): what compck2's registered consequence moves -- rule RF read ADOPT, so
framework.whole_model_graph and fsdp_free_phases are on for torch-compile+fsdp2 (llm/eager_compiled.ADOPTED_FSDP2).
Every held-out eager llm-step row the error-band table takes (trust/build.eager_held_out_rows), priced by the model
before the adoption (heldout/eager_compilefsdp.before_adopt48) and by the product now; error = predicted / measured - 1
(today's model: a row's `today_s`, else predicted_s). Prints each row that moves and each regime's mean |error| before
-> after, then the regimes that do not move (plain FSDP among them: the scope check).
Status: compck2's six processes (two rows) are the adopting evidence (held out for the rule that adopted them, seen now);
every other compiled FSDP2 row (compilefsdp, compileac, repeats47, compck) was development for the terms.

    PYTHONPATH=. python studies/adopt48_moves.py > studies/adopt48_moves-session48.txt
"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def _today(r: dict) -> float:
    return r.get("today_s", r["predicted_s"])


def main() -> int:
    from simcluster.heldout.eager_compilefsdp import before_adopt48
    from simcluster.llm import eager
    from simcluster.trust.build import eager_held_out_rows, eager_residuals

    with eager.torch_framework_as(before_adopt48):
        before = eager_held_out_rows()
    after = eager_held_out_rows()
    assert [r["label"] for r in before] == [r["label"] for r in after]
    by_regime: dict[tuple[str, int], list[tuple[float, float]]] = {}
    print("rows that move (error before -> after; status):")
    for a, b, res in zip(before, after, eager_residuals(after), strict=True):
        ea, eb = _today(a) / a["measured_s"] - 1, _today(b) / b["measured_s"] - 1
        by_regime.setdefault((res.regime, res.scale), []).append((ea, eb))
        if ea != eb:
            status = "adopting evidence" if "compck2" in a["bundle"] else "development"
            print(f"  {a['bundle'].split('/')[-1]:32} {a['label']:44} {a['measured_s'] * 1e3:7.1f} ms  "
                  f"{ea:+6.1%} -> {eb:+6.1%}  {status}")
    print(f"\n{len(after)} rows; by regime (GPUs): rows, mean |error| before -> after, mean error before -> after")
    for (regime, gpus), pairs in sorted(by_regime.items()):
        moved = any(x != y for x, y in pairs)
        print(f"  {'MOVES ' if moved else 'same  '}{regime:52} {gpus:g} {len(pairs):4}  "
              f"{statistics.mean(abs(x) for x, _ in pairs):5.1%} -> {statistics.mean(abs(y) for _, y in pairs):5.1%}  "
              f"({statistics.mean(x for x, _ in pairs):+.1%} -> {statistics.mean(y for _, y in pairs):+.1%})")
    return 0


if __name__ == "__main__":
    import study_args  # an unknown argument refused before the study runs
    study_args.check()
    sys.exit(main())
