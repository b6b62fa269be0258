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
from simcluster.heldout import moerouter  # noqa: E402
from simcluster.heldout.registration import read_run_set, registering_commit, set_main  # noqa: E402
from simcluster.llm import moe_router_term  # noqa: E402
from validation.moegemm import RULE, families_with, registered_before, show_families, verdict, write_families  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent


def predict(table=None) -> tuple[dict, dict]:
    """The families and held-out MoE rows with the term off (table None) or on with `table`."""
    rate = moerouter.h200_rate()
    return families_with(lambda: moe_router_term.enable(table, rate) if table else moe_router_term.disable(), moe_router_term.disable)


def register(path: Path) -> None:
    fams, moe = predict()
    head = {"set": "moerouter", "issue": 44, "commit": registering_commit(ROOT), "permute_impl": list(moerouter.PERMUTE_IMPL),
            "card": str(moerouter.H200_CARD.relative_to(ROOT)), "trace": f"runs/{moerouter.TRACE}", "rule": RULE}
    write_families(path, "moerouter.py", head, fams, moe, moerouter.GRID)


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
    print(f"# transformer_engine on the device: {res['te']}")
    for (name, *_), r in zip(moerouter.GRID, res["table"], strict=True):
        s = res["sync"].get(name, (float("nan"),) * 3)
        print(f"# layer {name}: router extra fwd {1e6 * r[3]:.1f} us bwd {1e6 * r[4]:.1f} us; permute ({res['impls'][name]}) "
              f"x{r[5]:.2f} fwd x{r[6]:.2f} bwd; count sync {1e6 * s[2]:+.1f} us a layer (loop {1e6 * s[0]:.1f} / {1e6 * s[1]:.1f}, judges nothing)")
    show_families(res)
    print(f"RULE: {res['verdict']}")


def main(argv: list[str] | None = None) -> int:
    return set_main(sys.argv[1:] if argv is None else argv, __doc__.splitlines()[0], moerouter.BUNDLE, register, read_out, show)


if __name__ == "__main__":
    sys.exit(main())
