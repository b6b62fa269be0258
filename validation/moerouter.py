"""Session 49 (issue 44, moerouter): the measured router / permutation term (llm/moe_router_term.py) judged on the
published LLM families, once, by the rule registered before the measurement ran (calibration/h200x1-moerouter-2026-12-01).

    PYTHONPATH=. python validation/moerouter.py --register calibration/h200x1-moerouter-2026-12-01/registered.yaml
    PYTHONPATH=. python validation/moerouter.py [BUNDLE]     # the read-out, once runs/ is unpacked in the bundle

The rule (RULE, moegemm's): the term ships ON if it brings the held-out MoE rows' mean |error| down by >= 5 points
without moving the held-out Megatron/NeMo or fp8 family's mean |error| by > 0.5 point; else OFF. Every MoE row, held
out or not, is development for this term (their errors chose to look): the rule's MoE figures judge the term and are no
held-out test of it. Printed, judging nothing: each layer's measured pieces beside the product's price, the sync's wall
per layer, the development rows."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from simcluster.errors import SimclusterError  # noqa: E402
from simcluster.hardware.gpu import load_gpu  # noqa: E402
from simcluster.heldout import moerouter  # noqa: E402
from simcluster.heldout.registration import read_run_set, registering_commit, set_main, write_registration  # noqa: E402
from simcluster.llm import moe_router_term, op_price  # noqa: E402
from simcluster.reference.llm import validate_published_llm  # noqa: E402
from validation.moegemm import FAMILIES, RULE, family_stats, moe_rows, registered_before, verdict  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent


def predict(table=None) -> tuple[dict, dict]:
    """The families and held-out MoE rows with the term off (table None) or on with `table`."""
    if table:
        moe_router_term.enable(table, load_gpu(moerouter.H200_CARD)[0].hbm_bandwidth_Bps)
    else:
        moe_router_term.disable()
    op_price.forget()
    try:
        rows = validate_published_llm().rows
    finally:
        moe_router_term.disable()
        op_price.forget()
    return family_stats(rows), moe_rows(rows)


def register(path: Path) -> None:
    import yaml

    fams, moe = predict()
    doc = {"set": "moerouter", "issue": 44, "commit": registering_commit(ROOT), "permute_impl": list(moerouter.PERMUTE_IMPL),
           "card": str(moerouter.H200_CARD.relative_to(ROOT)), "trace": f"runs/{moerouter.TRACE}", "rule": RULE,
           "rows": [{"family": f, "split": s, "rows": v[0], "mean_abs_error_pct": v[1], "within_10pct": v[2]}
                    for f, by in fams.items() for s, v in by.items()],
           "moe_held_out_before_pct": moe, "grid": [list(g) for g in moerouter.GRID]}
    write_registration(path, "# registered before the run (validation/moerouter.py --register): the term-off families and the rule\n"
                       + yaml.safe_dump(doc, sort_keys=False, width=140))


def read_out(bundle: Path) -> dict:
    reg = read_run_set(bundle, {"set": "moerouter"})
    try:
        trace, card = Path(bundle) / str(reg["trace"]), ROOT / str(reg["card"])
    except KeyError as exc:
        raise SimclusterError(f"{Path(bundle) / 'registered.yaml'}: no {exc} key (expected trace, card)") from None
    before, moe_before = registered_before(reg, Path(bundle) / "registered.yaml")
    table, impls = moerouter.table_of(trace, card)
    after, moe_after = predict(table)
    return {"before": before, "after": after, "moe_before": moe_before, "moe_after": moe_after, "table": table,
            "impls": impls, "sync": moerouter.sync_of(trace), "te": moerouter.read_trace(trace)["device"].get("te"),
            "verdict": verdict(before, after)}


def show(res: dict) -> None:
    def line(v) -> str:
        return f"{v[0]} rows, mean |error| {v[1]:.2f}%, {v[2]} within 10%"
    print(f"# transformer_engine on the device: {res['te']}")
    for (name, *_), r in zip(moerouter.GRID, res["table"], strict=True):
        s = res["sync"].get(name, (float("nan"),) * 3)
        print(f"# layer {name}: router extra fwd {1e6 * r[3]:.1f} us bwd {1e6 * r[4]:.1f} us; permute ({res['impls'][name]}) "
              f"x{r[5]:.2f} fwd x{r[6]:.2f} bwd; count sync {1e6 * s[2]:+.1f} us a layer (loop {1e6 * s[0]:.1f} / {1e6 * s[1]:.1f}, judges nothing)")
    for fam in FAMILIES:
        for split in ("held_out", "development"):
            print(f"{fam:14s} {split:12s} before {line(res['before'][fam][split])} | after {line(res['after'][fam][split])}")
    for key, err in res["moe_before"].items():
        now = res["moe_after"].get(key)
        print(f"  MoE held out {key}: {err:+.2f}% -> " + ("no such row now" if now is None else f"{now:+.2f}%"))
    print(f"RULE: {res['verdict']}")


def main(argv: list[str] | None = None) -> int:
    return set_main(sys.argv[1:] if argv is None else argv, __doc__.splitlines()[0], moerouter.BUNDLE, register, read_out, show)


if __name__ == "__main__":
    sys.exit(main())
