"""trust/noise.py: each lab eager regime's verdict against its noise floor (FLOOR_VERDICTS, the one record of each study's
floor), the rule, and how an answer carries it (trust/band.py)."""

from __future__ import annotations

from dataclasses import replace

import pytest
from conftest import ROOT, load_script

from simcluster.trust import noise
from simcluster.trust.band import trust_of
from simcluster.trust.noise import FLOOR_VERDICTS, FloorCheck, FloorVerdict, floor_verdict, verdict
from simcluster.trust.regime import Regime
from simcluster.trust.table import load_table

TP = "llm | PyTorch eager | TP+host-bound | bf16"
FSDP = "llm | PyTorch eager | FSDP+host-bound | bf16"
SINGLE = "llm | PyTorch eager | single+host-bound | bf16"
SACOP = "llm | PyTorch eager | single+sac-op | bf16"


def study_check(key: str, gpus: int, study: str) -> FloorCheck:
    """The FloorCheck of a regime's study population in FLOOR_VERDICTS (the one record of that study's floor)."""
    return next(c for c in floor_verdict(key, gpus, "H200").checks if c.population == study)


@pytest.fixture(scope="module")
def study():
    s = load_script("studies/tp_lease_noise.py")
    return s.numbers(s.processes())


def test_the_tp_studys_bias_makes_its_check_model_limited(study):
    """The TP study's mean lease bias (every preset process, each call once) is beyond 2 se: the rule reads its
    population model-limited on the bias alone (the study's FloorCheck in FLOOR_VERDICTS records the same processes'
    bias), so no 'noise-limited apart from a bias' text exists to state it."""
    p, c = study["preset"], study_check(TP, 2, "studies/tp_lease_noise.py")
    assert abs(p["bias_mean"]) > 2 * p["bias_se"]
    assert c.bias_pct == pytest.approx(100 * p["bias_mean"], abs=0.2) and abs(c.bias_pct) > 2 * c.bias_se_pct
    assert noise.check_verdict(c) == "model-limited"
    assert noise.check_verdict(replace(c, bias_pct=0.0)) != "model-limited"   # the bias decides it


def test_the_drift_across_a_call_is_fitted_within_it():
    s = load_script("studies/tp_lease_noise.py")
    d = s.drift(s.processes())
    for call in ("h200x2-eager-tpnoise-2026-11-30", "h200x2-eager-tpnoise-lease2-2026-11-30"):   # both slower late
        assert d[call]["slope"] > 2 * d[call]["se"], (call, d[call])


def test_no_regime_is_noise_limited_today():
    """mendB47 (cold review B47 items 2-3): TP's bias (2.1 se) and single+host-bound's (row floor 7.7%, bias 2.8 se)
    make both model-limited; FSDP+host-bound meets the target: no regime is noise-limited today (all three were marked
    before: this fails on the old rule). A noise-limited verdict needs a population whose per-process floor reaches
    the target."""
    assert [v.regime for v in FLOOR_VERDICTS if v.verdict == "noise-limited"] == []


def test_the_tables_rows_are_the_ones_the_verdicts_describe():
    """Every verdict's rows / sets are the table's rows of the regime at that count (the live record; the removed
    NoiseFloor records' all_rows text reached no answer)."""
    table = load_table()
    for v in FLOOR_VERDICTS:
        rows = [r for r in table.regimes[v.regime].rows if r.scale == v.gpus]
        assert (len(rows), len({r.source for r in rows})) == (v.rows, v.sets), v.regime


def test_tp_at_two_gpus_is_model_limited_by_its_bias():
    """mendB47: TP+host-bound at 2 GPUs' study population carries a lease bias beyond 2 se: model-limited, so its answer
    is answered on its own band with that verdict as its caveat (unvalidated before: this fails on the old rule);
    extrapolated, not validated, since session 54 (rule54, trust/targets: its rows' mean |error| over the 8% target)."""
    table = load_table()
    t = trust_of(Regime("llm eager", TP, 2.0, gpu="H200"), table)
    assert t.status == "extrapolated" and not t.noise_limited and t.caveat.startswith("model-limited at 2 GPUs (H200)")
    assert t.outside == "held-out mean |error| 13.1% over the llm eager family's 8% target"


def test_a_noise_limited_verdict_answers_unvalidated_with_its_own_band(monkeypatch):
    """The mechanism a noise-limited verdict drives (none today): TP at 2 GPUs given a noise-limited verdict."""
    ok = FloorCheck("p", 40, 12, (10.9, 11.2), 11.0, 10.9, 0.1, 0.4, 10.0, 1.0, 1.0, True)
    marked = FloorVerdict(TP, 2, 22, 6, 13.1, (ok,))
    assert marked.verdict == "noise-limited"
    monkeypatch.setattr(noise, "FLOOR_VERDICTS", (marked,))
    table = load_table()
    two = trust_of(Regime("llm eager", TP, 2.0, gpu="H200"), table)
    four = trust_of(Regime("llm eager", TP, 4.0, gpu="H200"), table)
    assert four.status == "extrapolated" and not four.noise_limited   # its rows miss the 8% target (session 54)
    assert two.status == "unvalidated" and two.noise_limited and two.verdict is marked and not two.pooled
    rows = table.regimes[TP].rows
    assert four.rho == table.regimes[TP].bounds()
    # its measured band widened to all its rows (an unvalidated band contains its own rows), not the family's pooled one
    assert two.rho == (min(four.rho[0], *(r.rho for r in rows)), max(four.rho[1], *(r.rho for r in rows)))
    assert two.widened and two.rho != four.rho
    assert "unvalidated, noise-limited at 2 GPUs (H200)" in two.text() and "validated on" not in two.text()
    assert two.caveat.startswith("noise-limited at 2 GPUs (H200)")
    assert two.to_json()["noise_limited"]["populations"][0]["floor_mean_abs_error_pct"] == [10.9, 11.2]
    assert "noise_limited" not in four.to_json()
    h100 = trust_of(Regime("llm eager", TP, 2.0, gpu="H100"), table)   # the H200 leases' noise is not another GPU's
    assert not h100.noise_limited and "noise-limited" not in h100.text() and "noise_limited" not in h100.to_json()


def test_a_verdict_is_of_one_regime_gpu_count_and_gpu():
    assert floor_verdict(TP, 2.0, "H200") is not None
    assert floor_verdict(TP, None, "H200") is None and floor_verdict(TP, 2.5, "H200") is None
    assert floor_verdict("llm | PyTorch eager | DDP | bf16", 2.0, "H200") is None
    for gpu in ("H100", "B200", ""):   # the H200 leases' noise is not another GPU's (or an unknown one's)
        assert floor_verdict(TP, 2.0, gpu) is None


def test_sac_by_op_floor_is_below_the_target_and_its_rows_meet_it_thinly():
    """Session 43: single+sac-op's floor computed as TP's (studies/sacop_lease_noise.py over every op launch of the
    regime's own shapes) is under the target (5.5-7.1%), and its rows meet it pooled (no verdict until session 50).
    Session 50 (issue 44's house rule, trust/thin): mean |error| + 1 se is over the target, so its verdict is thin, not
    met; its answers stay validated (thin moves no band), their caveat says it. Session 51 (lab1x51's three new op rows,
    registered before their run): 17 rows from 9 sets, 6.3%, mean + 1 se 7.7%: met, so no record (met: no mark)."""
    s = load_script("studies/sacop_lease_noise.py")
    n = s.regime_numbers()
    assert max(n["floor_empirical"], n["floor_normal"]) * 100 < 8.0
    rows, _, mean = s.table_rows()
    assert rows >= 17 and mean < 8.0 and floor_verdict(SACOP, 1, "H200") is None
    printed = [line.split() for line in (ROOT / "studies" / "eager_lab_modes.txt").read_text().splitlines() if "| single+sac-op |" in line]
    assert len(printed) == 1 and printed[0][-3:-1] == ["met", "no"] and float(printed[0][-6].rstrip("%")) < 8.0, printed   # mean + 1 se


def test_fsdp_host_bound_study_and_its_rows_meeting_the_target():
    """Session 43 (fsdpfloor): FSDP+host-bound's floor computed as TP's (studies/fsdp_lease_noise.py over every 2-rank
    FSDP2 NVLink process of a shape today's model prices host-bound); its FloorCheck in FLOOR_VERDICTS is that study's
    population (recomputed in test_the_recorded_verdicts_are_the_studys). Its floor (8.5-8.6%) reaches the target, but
    since session 47 its rows do too (7.8%): the verdict was 'met: no mark'; session 50 (trust/thin): mean |error| + 1
    se is 9.2%, so it is thin, not met."""
    s = load_script("studies/fsdp_lease_noise.py")
    n = s.regime_numbers()
    # every table set's processes are in the study, but the nosync set's (session 45) and the zero2 sets' (session 46):
    # their steps accumulate 4 micro-batches, which the study leaves out (a single micro-batch step's noise is what the
    # floor is built from)
    assert set(s.table_sets()) - {"h200x2-nosync-2026-11-30", "h200x2-zero2-2026-11-30",
                                  "h200x2-zero2b-2026-11-30"} <= {r["call"] for r in s.processes()}
    assert min(n["floor_empirical"], n["floor_normal"]) * 100 >= 8.0
    v = floor_verdict(FSDP, 2, "H200")
    assert v.verdict == "thin" and v.mean_abs_pct <= v.target_pct < v.mean_abs_pct + v.mean_se_pct
    # the verdict's rows are every table row at 2 GPUs (accumulated steps included), recomputed by the study
    rows, sets, mean = s.table_rows(population=False)
    assert (v.rows, v.sets) == (rows, sets) and v.mean_abs_pct == pytest.approx(mean, abs=0.05)
    left: dict[str, int] = {}
    s.documents(left_out=left)
    assert left.get("accumulated", 0) > 0 and left.get("compiled", 0) > 0 and set(left) <= set(s.LEFT_OUT)


def test_fsdp_host_bound_at_two_gpus_answers_validated_with_its_verdict():
    """Session 47 (noise44): FSDP+host-bound's rows reach the target, so the session-43 mark is dropped: its answer at 2
    GPUs on H200 is validated on its own band and its caveat says 'met: no mark' with both populations' numbers
    (unvalidated before: this fails on the old status); since session 50 'thin' (trust/thin: no 1-se margin), which
    moves no band; since session 54 extrapolated, not validated (rule54, trust/targets: the regime's rows, 8.6% mean
    |error| over all its GPU counts, miss the 8% target), its own band kept."""
    table = load_table()
    two = trust_of(Regime("llm eager", FSDP, 2.0, gpu="H200"), table)
    assert two.status == "extrapolated" and not two.noise_limited and two.rho == table.regimes[FSDP].bounds()
    assert two.outside == "held-out mean |error| 8.6% over the llm eager family's 8% target"
    assert "caveat: thin at 2 GPUs (H200)" in two.text() and "unvalidated" not in two.text()
    assert "reaches the target pooled only (mean + 1 se 9.2%): not met" in two.text()
    assert "weak points" not in two.text() and "noise_limited" not in two.to_json()
    h100 = trust_of(Regime("llm eager", FSDP, 2.0, gpu="H100"), table)
    assert not h100.noise_limited and "noise-limited" not in h100.text() and "no mark" not in h100.text()
    assert floor_verdict(FSDP, 4.0, "H200") is None


def test_the_lab_modes_list_is_its_print_today_and_marks_only_the_noise_floors():
    """studies/eager_lab_modes.txt (quoted in llm.md) is what the study prints --live (the rows as the table builder reads
    them now), every GPU count included (cold review B47: the 4-GPU rows were left out); a regime reads noise-limited
    there exactly where its verdict is, and every regime that misses the target has a verdict."""
    import contextlib
    import io

    s = load_script("studies/eager_lab_modes.py")
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        s.main(["--live"])
    shipped = (ROOT / "studies" / "eager_lab_modes.txt").read_text().splitlines()[1:]
    assert out.getvalue().splitlines() == shipped
    modes = s.modes(live=True)
    assert any(m["gpus"] == 4 for m in modes)
    for m in modes:
        assert m["noise_limited"] == (m["verdict"] == "noise-limited"), (m["regime"], m["gpus"])
        assert m["meets"] or m["verdict"] != "-", (m["regime"], m["gpus"])


def test_single_host_bound_study_and_the_rule_finds_a_model_miss():
    """Session 44 (hostsingle): single+host-bound's floor computed as TP's (studies/single_host_noise.py over every
    one-GPU eager single process of a shape today's model prices host-bound); the table's rows (as the builder reads
    them now) come from the study's table sets. Its per-process floor reaches the target (10.9-11.2%), but the
    row-level floor of its own rows does not (7.7%) and its study's bias is beyond 2 se: model-limited (mendB47;
    noise44 had marked it)."""
    s = load_script("studies/single_host_noise.py")
    n = s.regime_numbers()
    rows, sources, mean, bundles = s.table_rows()
    assert bundles <= set(s.TABLE_SETS) | set(s.CKPT_TABLE_SETS) and set(s.TABLE_SETS) <= {r["call"] for r in s.processes()}
    # session 52: with lab1x52's nine processes the pooled process sd falls (0.133 -> 0.119; the across-lease figure stays
    # 0.137), so the lease term rises (0.042 -> 0.071) past half the process sd: session 43's lease premise now holds for
    # the study's population (its check's lease_premise); a data pin, not a rule change
    assert min(n["floor_empirical"], n["floor_normal"]) * 100 >= 8.0 and n["lease_sd"] >= n["process_sd"] / 2
    v = floor_verdict(SINGLE, 1, "H200")
    assert (v.rows, v.sets, v.verdict) == (rows, sources, "model-limited") and v.mean_abs_pct == pytest.approx(mean, abs=0.05)
    own, wider = v.checks
    assert own.row_floor_pct < v.target_pct and abs(wider.bias_pct) > 2 * wider.bias_se_pct   # the two model-limited reads
    answer = trust_of(Regime("llm eager", SINGLE, 1.0, gpu="H200"), load_table())
    assert not answer.noise_limited and answer.caveat.startswith("model-limited at 1 GPU (H200)")


@pytest.fixture(scope="module")
def floors():
    return {(f["regime"], f["gpus"]): f for f in load_script("studies/eager_noise_floors.py").floors()}


def test_every_table_row_finds_its_processes_by_its_shape(floors):
    """studies/eager_noise_floors.row_processes finds each eager table row's processes by the shape its heldout reader
    set (heldout/eager.step_shape), not by parsing its label: every row carries one and every row resolves, so a label
    change (or a reader dropping the shape) cannot empty a floor silently; no floor printed has an unresolved row."""
    s = load_script("studies/eager_noise_floors.py")
    rows = [r for regime in s.regime_rows().values() for r in regime]
    assert len(rows) > 300 and all(set(r["shape"]) == {"preset", "seq", "micro_batch", "microbatches", "layers"} for r in rows)
    assert [(r["bundle"], r["label"]) for r in rows if not s.row_processes(r)] == []
    assert all(not f["unresolved"] for f in floors.values())
    relabelled = next(r for r in rows if r["gpus"] == 2) | {"label": "renamed"}
    assert s.row_processes(relabelled)   # the label plays no part
    assert s.row_processes({k: v for k, v in relabelled.items() if k != "shape"}) == []   # no shape: unresolved


def test_the_recorded_verdicts_are_the_studys(floors):
    """trust/noise.FLOOR_VERDICTS are studies/eager_noise_floors.py's regimes, numbers and verdicts (the rule applied by
    the study, on the table's rows as the builder reads them now)."""
    assert set(floors) == {(v.regime, v.gpus) for v in FLOOR_VERDICTS}
    for v in FLOOR_VERDICTS:
        f = floors[(v.regime, v.gpus)]
        assert (v.verdict, v.rows, v.sets) == (f["verdict"], f["rows"], f["sets"]), v.regime
        assert v.verdict == verdict(f["checks"], f["mean_abs_pct"], thin=f["thin_why"])   # the study calls the one rule
        assert v.mean_abs_pct == pytest.approx(f["mean_abs_pct"], abs=0.05)
        assert v.thin_why == f["thin_why"], v.regime   # session 50: trust/thin on the recorded figures, as on the rows
        if v.mean_se_pct is not None:
            assert (v.mean_se_pct, v.each_set_pct, v.rows_outside_largest) == (
                pytest.approx(f["mean_se_pct"], abs=0.005), pytest.approx(f["each_set_pct"], abs=0.005),
                f["rows_outside_largest"]), v.regime
        else:
            assert f["mean_abs_pct"] > v.target_pct, v.regime   # a miss: thin does not apply
        pops = [p for p in (f["own"], f["study"]) if p is not None]
        assert len(v.checks) == len(pops)
        for c, p in zip(v.checks, pops, strict=True):
            assert (c.processes, c.repeated) == (p["processes"], p["repeated_shapes"]), (v.regime, c.population)
            if c.floor_pct is None:
                assert "floor_pct" not in p
                continue
            assert c.floor_pct == pytest.approx(p["floor_pct"], abs=0.05)
            assert (c.model_pct, c.floor_same_pct) == (pytest.approx(p["model_same_pct"], abs=0.05),
                                                       pytest.approx(p["floor_same_pct"], abs=0.05))
            assert (c.excess_pct, c.excess_se_pct) == (pytest.approx(p["excess_pct"], abs=0.005),
                                                       pytest.approx(p["excess_se_pct"], abs=0.005))
            assert (c.row_floor_pct, c.bias_pct, c.bias_se_pct) == (
                pytest.approx(p["row_floor_pct"], abs=0.005), pytest.approx(p["bias_pct"], abs=0.005),
                pytest.approx(p["bias_se_pct"], abs=0.005))
            assert (c.lease_premise, c.lease_known) == (p["check"].lease_premise, p["check"].lease_known)


def test_every_gpu_count_that_misses_the_target_has_a_verdict():
    """Cold review B47 item 1: no GPU-count filter: TP x DP+host-bound at 4 GPUs (19.9%) and the other 4-GPU misses get
    a verdict, and answers there carry it (validated with an empty caveat before)."""
    got = {(v.regime, v.gpus): v.verdict for v in FLOOR_VERDICTS}
    assert got[("llm | PyTorch eager | TP x DP+host-bound | bf16", 4)] == "model-limited"
    assert got[("llm | PyTorch eager | TP+host-bound | bf16", 4)] == "no floor: too few repeats"
    assert got[("llm | PyTorch eager | TP | bf16", 4)] == "no floor: too few repeats"
    t = trust_of(Regime("llm eager", "llm | PyTorch eager | TP x DP+host-bound | bf16", 4.0, gpu="H200"), load_table())
    assert t.caveat.startswith("model-limited at 4 GPUs (H200)")


def test_the_rule_asks_power_a_row_floor_and_no_bias():
    """trust/noise.verdict on made-up checks: a floor and an excess that pass the old rule (floor >= target, excess within
    2 se) are undecided when 2 se exceeds the gap to resolve, model-limited when the row-level floor is under the target
    or the bias is beyond 2 se; noise-limited only when none of these holds. Every branch fails on noise44's rule."""
    ok = FloorCheck("p", 40, 12, (10.9, 11.2), 11.0, 10.9, 0.1, 0.4, 10.0, 1.0, 1.0, True)
    assert verdict((ok,), 9.0) == "noise-limited"
    assert verdict((replace(ok, excess_se_pct=4.2),), 9.0) == "undecided: test too weak"   # 2 se 8.4 > gap 2.9
    assert verdict((replace(ok, row_floor_pct=7.7),), 9.0) == "model-limited"   # repeats of a row reach the target
    assert verdict((replace(ok, bias_pct=9.2, bias_se_pct=3.3),), 9.0) == "model-limited"   # a bias at 2.8 se
    assert verdict((replace(ok, excess_pct=0.9),), 9.0) == "model-limited"
    assert verdict((ok,), 8.0) == "met: no mark"
    assert verdict((FloorCheck("p", 3, 0, None), ok), 9.0) == "noise-limited"
    assert verdict((FloorCheck("p", 3, 0, None),), 9.0) == "no floor: too few repeats"
    assert verdict((replace(ok, excess_se_pct=4.2), replace(ok, bias_pct=9.2, bias_se_pct=3.3)), 9.0) == "model-limited"
    assert verdict((replace(ok, lease_premise=False),), 9.0, premise=True) == "undecided: test too weak"
    assert verdict((replace(ok, excess_pct=0.9),), 9.0, se=2.5) == "noise-limited"


def test_an_undecided_regime_is_unvalidated_and_not_called_noise_limited(monkeypatch):
    """The lead's decision: 'undecided: test too weak' keeps the regime unvalidated, with no noise floor and no
    'noise-limited' in its answer."""
    key = "llm | PyTorch eager | FSDP | bf16"
    weak = FloorCheck("p", 40, 12, (10.9, 11.2), 11.0, 10.9, 0.1, 4.2, 10.0, 1.0, 1.0, True)
    monkeypatch.setattr(noise, "FLOOR_VERDICTS", (FloorVerdict(key, 2, 10, 3, 9.0, (weak,)),))
    t = trust_of(Regime("llm eager", key, 2.0, gpu="H200"), load_table())
    assert t.status == "unvalidated" and not t.noise_limited and "noise-limited" not in t.text()
    assert t.caveat.startswith("undecided: test too weak at 2 GPUs") and "unvalidated (its noise test too weak)" in t.text()


def test_the_status_follows_the_verdict():
    """An answer of each regime at its GPU count on H200: unvalidated exactly where its verdict is noise-limited or its
    rows are too few for a band; a noise-limited regime with a band of its own carries its recorded floor; every one
    carries its verdict as its caveat (PP+host-bound's names 'model-limited' with the model's and the floor's numbers)."""
    table = load_table()
    for v in FLOOR_VERDICTS:
        t = trust_of(Regime("llm eager", v.regime, float(v.gpus), gpu="H200"), table)
        enough = table.regimes[v.regime].enough
        assert (t.status == "unvalidated") == (v.verdict in ("noise-limited", "undecided: test too weak") or not enough), v.regime
        assert t.noise_limited == (v.verdict == "noise-limited" and enough), v.regime
        assert t.caveat.startswith(f"{v.verdict} at {v.gpus} GPU") and v.text() in t.text(), v.regime
        assert t.verdict is v and t.too_weak == (v.verdict == "undecided: test too weak"), v.regime   # the one field
        assert t.to_json()["caveat"] == t.caveat
    pp = floor_verdict("llm | PyTorch eager | PP+host-bound | bf16", 2.0, "H200")
    t = trust_of(Regime("llm eager", pp.regime, 2.0, gpu="H200"), table)
    assert t.status == "extrapolated" and "a model miss, not the machines' noise" in t.text()   # over 8% (session 54)
    for c in pp.checks:
        assert f"today's model {c.model_pct:.1f}% vs {c.floor_same_pct:.1f}% on the same processes" in t.text()
    # at 4 GPUs its 2 rows meet the target but one row lies outside the larger set: thin since session 50 (trust/thin)
    assert floor_verdict(pp.regime, 4.0, "H200").verdict == "thin" and floor_verdict(pp.regime, 2.0, "H100") is None


def test_the_accuracy_page_names_each_verdict():
    """docs/accuracy.md's status column (report.accuracy_page, regenerated by the lead) names each regime's verdict: a
    noise-limited one unvalidated where it has a band of its own, any other (or one without a band) by its word."""
    from simcluster.trust.report import accuracy_page

    table = load_table()
    page = accuracy_page(table).splitlines()
    for v in FLOOR_VERDICTS:
        line = next(ln for ln in page if ln.startswith(f"| {v.regime} |"))
        gpus = f"at {v.gpus} GPU{'s' * (v.gpus != 1)} on {v.gpu}"
        if v.verdict == "noise-limited" and table.regimes[v.regime].enough:
            assert f"{gpus} **unvalidated, " in line, v.regime
        else:   # another verdict, or noise-limited without a band of its own (unvalidated already: too few rows)
            assert f"{gpus}: {v.verdict} (trust/noise.FLOOR_VERDICTS)" in line, v.regime
