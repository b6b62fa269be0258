"""trust/targets.py (session 54, rule54, rule B; registered in docs/models/trust-findings.md before its print): a regime
with its own band reads validated only where its held-out rows' mean |error| (|1/rho - 1|, each row once) is within its
family's target; otherwise extrapolated, its band kept and the reason said. These fail on the rule before (validated by
row and source counts alone)."""

import pytest

from simcluster.trust import report
from simcluster.trust.band import trust_of
from simcluster.trust.regime import Regime
from simcluster.trust.table import Residual, Table
from simcluster.trust.targets import TARGETS, target_miss, target_of

MOE = "llm | Megatron/NeMo | MoE | bf16"


def _table(key: str, family: str, rhos: list[float], scale: float = 64.0) -> Table:
    sources = ["a", "b", "c", "a", "b", "c"][: len(rhos)]
    return Table([Residual(family, key, s, str(i), scale, r) for i, (s, r) in enumerate(zip(sources, rhos, strict=True))])


def test_a_regime_whose_rows_miss_the_family_target_reads_extrapolated_with_its_own_band():
    table = _table(MOE, "llm", [1.0, 1.25, 1.25, 1.25, 1.25])        # |1/rho - 1|: 0, 0.2 x 4 -> mean 16%
    t = trust_of(Regime("llm", MOE, 64.0), table)
    assert table.regimes[MOE].mean_abs_error == pytest.approx(0.16)
    assert t.status == "extrapolated" and t.rho == table.regimes[MOE].bounds() and not t.pooled
    assert t.outside == "held-out mean |error| 16.0% over the llm family's 10% target"
    assert "extrapolated (held-out mean |error| 16.0% over the llm family's 10% target) on 5 held-out rows" in t.text()
    assert t.to_json()["outside"] == t.outside
    far = trust_of(Regime("llm", MOE, 4096.0), table)               # the GPU count outside too: both reasons
    assert far.status == "extrapolated" and far.outside == f"{t.outside}; gpus 4096 outside the validated 64-64"


def test_rows_within_the_target_stay_validated_and_the_target_itself_is_within():
    near = _table(MOE, "llm", [1.0, 1.0, 1.0, 1.0, 1 / 0.5])         # |1/rho - 1|: 0 x 4, 0.5 -> mean exactly 10%
    assert near.regimes[MOE].mean_abs_error == pytest.approx(0.10)
    assert trust_of(Regime("llm", MOE, 64.0), near).status == "validated"
    assert trust_of(Regime("llm", MOE, 64.0), _table(MOE, "llm", [1.0, 1.05, 0.95, 1.1, 0.9])).status == "validated"


def test_each_family_has_its_target_and_one_node_collectives_below_1_mib_have_theirs():
    assert set(TARGETS) == {"llm", "llm eager", "llm local spec", "collective across nodes", "collective one node", "ddp",
                            "storage", "transport"}
    small = "collective | reduce | nvlink-card | <1MiB | nvlink-h200"
    mid = "collective | reduce | nvlink-card | 1-64MiB | nvlink-h200"
    assert target_of("collective one node", small).fraction == 0.10 and target_of("collective one node", mid).fraction == 0.05
    assert target_miss("collective one node", small, 0.07) == "" and target_miss("collective one node", mid, 0.07)
    assert target_of("a family of no target", "x | y") is None and target_miss("a family of no target", "x | y", 9.0) == ""
    rhos = [1.0, 1.0, 1.0, 1.08, 1 / 0.75]                          # mean |1/rho - 1| 6.5%: over 5%, under 10%
    assert trust_of(Regime("collective one node", mid), _table(mid, "collective one node", rhos)).status == "extrapolated"
    assert trust_of(Regime("collective one node", small), _table(small, "collective one node", rhos)).status == "validated"


def test_the_accuracy_page_names_the_missed_target_in_the_status_column():
    page = report.accuracy_page(_table(MOE, "llm", [1.0, 1.25, 1.25, 1.25, 1.25]))
    line = next(x for x in page.splitlines() if x.startswith(f"| {MOE} |"))
    assert line.endswith("| extrapolated: held-out mean |error| 16.0% over the llm family's 10% target (trust/targets) |")
