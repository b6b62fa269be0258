"""Session 45's registered check of the op host term's candidate, FrameworkSpec.free_phase_host
(calibration/h200x2-opsplit-2026-11-30, validation/opsplit.py): the registration against a fresh --register at this
commit, the device script against the read-out's processes and probes, the shapes new to calibration/, the candidate
off in the product, and synthetic runs through the rules N, M, B, C, O, F, P and D."""

from __future__ import annotations

import json
import re
import shutil
from dataclasses import replace

import pytest
import yaml
from conftest import ROOT, load_script, measured_llm_tokens, seqs_named_elsewhere
from test_hostsingle_set import doc, host_runs
from test_hostsingle_set import synthetic as hostsingle_synthetic
from test_opcheck_set import bad_inputs_read_one_line, fresh_registration

BUNDLE = ROOT / "calibration" / "h200x2-opsplit-2026-11-30"
HB49_RERUN = ROOT / "calibration/h200x1-hb49-2026-12-01"   # ran after this set; re-runs its op host-bound shape
OPHOST = ROOT / "calibration" / "h200x1-llm-ophost-2026-11-29"


def script():
    return load_script("validation/opsplit.py")


def synthetic(tmp_path, offset: float, jitter: list[float], mem: float = 1.0, host: float | None = 1.0, base=None,
              which: str = "product"):
    """hostsingle's synthetic bundle of this set's registration: steps predicted[which], peaks the product's, and
    runs/host/ this set's probe (single, op) from the diagnostic lease at `host` times its steps."""
    return hostsingle_synthetic(tmp_path, offset, jitter, mem, host, base, src=BUNDLE, judged="product", which=which,
                                probe=script().HOST_PROBE)


def test_the_registration_is_a_fresh_register_at_this_commit(tmp_path):
    reg = fresh_registration(script(), BUNDLE, tmp_path, ("script", "calibration", "product_host", "op_phase_factors",
                             "judge", "rules", "rows"), ["op+host-bound", "op", "op"])
    for row in reg["rows"]:   # the candidate is faster everywhere it differs: the phases' waits it takes out
        assert row["predicted"]["candidate"]["step_ms"] < row["predicted"]["product"]["step_ms"], row["name"]


def test_the_candidate_is_off_in_the_product_and_only_moves_one_gpu():
    from simcluster.heldout.eager import MODE_HOST
    from simcluster.llm import eager
    from simcluster.llm.framework import TORCH_AMP
    from simcluster.llm.simulate import StageWork
    from simcluster.llm.spec import ParallelSpec
    from simcluster.llm.work import _beside_backlog, free_hosts

    assert TORCH_AMP.free_phase_host is False
    fits = eager.fit_modes(MODE_HOST)
    assert eager.torch_framework(ParallelSpec(recompute="op"), fits).free_phase_host is False
    s = script()
    p, c = s.both("1b", 1728, 2, "none", MODE_HOST)   # the switch is general: a host-bound single step moves too
    assert c["step_ms"] < p["step_ms"]
    on = replace(eager.torch_framework(ParallelSpec(recompute="op"), fits), free_phase_host=True)
    one, reduced = StageWork((), ()), StageWork((), (), grad_buckets_s=((0.01,),))
    assert free_hosts(on, [one], 1) and not free_hosts(replace(on, free_phase_host=False), [one], 1)
    assert not free_hosts(on, [reduced], 1) and not free_hosts(on, [one, one], 2)   # DDP's buckets, two stages: in series
    assert not free_hosts(on, [one], 2)   # one stage on two GPUs (TP, FSDP): in series
    backward, single = _task(0.050, 0.030), ParallelSpec()
    assert _beside_backlog(on, single, [backward], 0.004) == pytest.approx(0.0)   # 20 ms of backlog hides the 4 ms
    assert _beside_backlog(on, single, [_task(0.050, 0.048)], 0.004) == pytest.approx(0.002)   # 2 ms of it: 2 ms left
    assert (_beside_backlog(replace(on, free_phase_host=False), single, [backward], 0.004) == 0.004
            == _beside_backlog(on, ParallelSpec(pp=2), [backward], 0.004) == _beside_backlog(on, ParallelSpec(tp=2), [backward], 0.004)
            == _beside_backlog(on, ParallelSpec(dp=2, zero=3), [backward], 0.004))


def test_the_candidate_leaves_two_gpu_steps_of_one_stage_as_they_are():
    """review B45 finding 3: TP 2, FSDP2 2 and DDP 2 (pp 1, two GPUs) step as the product with the candidate on
    everywhere torch_framework is read; the single step it was registered for moves."""
    from simcluster.heldout.eager_regimes import regime_predict

    def steps() -> dict:
        return {m: regime_predict("0.5b", 1, m, "h200", seq=1024)["step_ms"] for m in ("tp", "fsdp", "ddp", "single")}

    product = steps()
    with script().candidate():   # eager.torch_framework_as(free_phase_host=True)
        on = steps()
    assert {m: on[m] for m in ("tp", "fsdp", "ddp")} == {m: product[m] for m in ("tp", "fsdp", "ddp")}, (product, on)
    assert on["single"] < product["single"], (product, on)


def _task(duration_s: float, issue_s: float):
    from simcluster.llm.simulate import Task

    return Task(duration_s, {"compute": duration_s, "host": 0.0}, issue_s, duration_s, 100)


def test_the_device_script_runs_the_probes_first_and_the_registered_processes():
    text = (BUNDLE / "device_run.sh").read_text()
    runs = re.findall(r"^  guarded (\S+)-r\$r 60 \$one \$step --preset (\S+) --shapes (\d+):(\d+) --ac-mode (\w+)$", text, re.M)
    assert [(n, p, int(q), int(m), a) for n, p, q, m, a in runs] == list(script().SHAPES)
    assert "for r in 1 2 3; do" in text and script().PROCESSES == 3
    probes = re.findall(r"^for layers in 2 32; do guarded host/(\w+)-L\$layers 60 \$one \$probe --layers \$layers(.*); done$", text, re.M)
    assert [f"{m}-L{n}" for m, _ in probes for n in (2, 32)] == list(script().HOST_PROBE)
    assert [flag for _, flag in probes] == ["", " --ac-mode op"]
    phases = re.findall(r"^guarded phase/(\S+) 60 \$phase --preset (\S+)(?: --layers (\d+))? --shape (\d+):(\d+)", text, re.M)
    assert [name for name, *_ in phases] == list(script().PHASE_PROBE)
    assert phases[1][1:] == ("1b", "", "1728", "2") and ("ophb-1b", "1b", 1728, 2, "op") == script().SHAPES[0]
    assert (OPHOST / "hostprobe.py").is_file() and "calibration/h200x1-llm-ophost-2026-11-29/hostprobe.py --modes op" in text
    assert text.index("phase/ophb-1b") < text.index("for r in 1 2 3")   # every probe before the step processes
    assert 'one="env CUDA_VISIBLE_DEVICES=0 python3 -m simcluster.runner.llm_step --mode single"' in text
    budget = int(re.search(r"BUDGET_S=\$\{BUDGET_S:-(\d+)\}", text).group(1))
    assert budget + 60 <= 320   # the worst case: a run may start at BUDGET_S - 1 s and take its 60 s limit


def test_the_shapes_are_new_to_calibration_by_tokens_and_their_seqs_by_any_bundle():
    from simcluster.runner.llm_decoder import PRESETS

    earlier = measured_llm_tokens(BUNDLE, HB49_RERUN)   # hb49 (session 49) re-ran one of these shapes later, exactly
    seqs = {seq for _, _, seq, _, _ in script().SHAPES}
    assert seqs <= {704, 1728, 2368, 3008} and len(seqs) == len(script().SHAPES)   # session 45's seqs for this set
    for _, preset, seq, mb, _ in script().SHAPES:
        assert (preset, PRESETS[preset]["layers"], seq * mb) not in earlier, (preset, seq, mb)
    # session 49's hb49 set re-runs ophb-1b (1b 1728:2 op) exactly on another lease: a shape on two leases by design
    assert seqs_named_elsewhere(BUNDLE, seqs, {ROOT / "calibration" / "h200x1-hb49-2026-12-01": {1728}}) == []


def test_an_exact_candidate_reads_adopt_and_an_exact_product_keep(tmp_path):
    s = script()
    adopt = s.read_out(synthetic(tmp_path / "cand", 0.0, [0.01, -0.01, 0.0], which="candidate"))["verdicts"]
    assert adopt["C all"].startswith("BETTER") and adopt["D"].startswith("ADOPT (C BETTER); the op miss at the candidate: MET"), adopt
    assert "below the 8% target" in adopt["N"] and adopt["P"].startswith("memory met"), adopt
    keep = s.read_out(synthetic(tmp_path / "prod", 0.0, [0.01, -0.01, 0.0]))["verdicts"]
    assert keep["C all"].startswith("WORSE") and keep["D"].startswith("KEEP (C WORSE); the op miss at the product: MET"), keep
    assert keep["B all product"].startswith("NONE") and keep["M op product"].startswith("within"), keep


def test_a_miss_this_leases_own_fit_explains_reads_lease_and_one_it_does_not_reads_next_term(tmp_path):
    s = script()
    folder = tmp_path / "fast-host"
    host_runs(folder, 0.7, s.HOST_PROBE)
    own = {(p, q, m, a): s.predict(p, q, m, a, folder)["step_ms"] / 1e3 for _, p, q, m, a in s.SHAPES}
    lease = s.read_out(synthetic(tmp_path / "lease", 0.0, [0.02, -0.02, 0.0], host=0.7, base=own))["verdicts"]
    assert lease["M op+host-bound product"].startswith("not within"), lease
    # the product 1.3x this lease's host: the candidate, a few % faster, reads BETTER; its miss is the lease's host speed
    assert lease["D"].startswith("ADOPT (C BETTER); the op miss at the candidate: LEASE (op+host-bound"), lease
    assert "(x0.84)" in lease["O host"], lease["O host"]   # 0.7 x the diagnostic lease's op cost against the product's
    nxt = s.read_out(synthetic(tmp_path / "next", -0.17, [0.02, -0.02, 0.01], host=None))["verdicts"]
    assert nxt["B all product"].startswith("FAST") and "NEXT TERM (op+host-bound, op missed)" in nxt["D"], nxt


def test_loud_processes_read_noise_memory_outside_the_range_is_not_met_and_the_phase_probe_is_read(tmp_path):
    s = script()
    loud = s.read_out(synthetic(tmp_path / "loud", 0.0, [0.3, -0.3, 0.0, 0.25]))["verdicts"]
    assert "ABOVE the 8% target" in loud["N"] and loud["D"].startswith("NOISE"), loud
    assert loud["F factors"].startswith("NO DATA") and loud["F steps"].startswith("NO DATA"), loud
    bundle = synthetic(tmp_path / "mem", 0.0, [0.0], mem=1.2)
    (bundle / "runs" / "phase").mkdir()   # the product's own probe document: its factors exactly
    shutil.copy(OPHOST / "runs" / "tiny-L24-128x1.json", bundle / "runs" / "phase" / "tiny-L24-128x1.json")
    probe = json.loads((OPHOST / "runs" / "0.5b-2048x2.json").read_text())
    (bundle / "runs" / "phase" / "ophb-1b.json").write_text(json.dumps(probe))
    v = s.read_out(bundle)["verdicts"]
    assert v["P"].startswith("memory not met: max |error| 16.7%"), v["P"]
    f = yaml.safe_load((BUNDLE / "registered.yaml").read_text())["op_phase_factors"]
    assert f"forward x{f['forward']:.3f}, backward x{f['backward']:.3f} of the op fit against the product's x{f['forward']:.3f}" in v["F factors"]
    assert v["F steps"].startswith("ophb-1b forward issue 59 50 49 118 115 112 ms, backward 91 93 93 72 68 70 ms"), v["F steps"]


def test_missing_runs_bad_documents_and_a_bad_registration_are_one_line(tmp_path):
    bad_inputs_read_one_line(script(), synthetic(tmp_path, 0.0, [0.0, 0.01], host=None), ("op-1.1b", "op-0.5b", "ophb-1b"),
                             doc("1b", 1728, 2, "none", 0.14, 22.0), "candidate")


def test_the_set_enters_the_error_bands_as_sac_op_rows_against_its_registered_product_step(tmp_path):
    """heldout/eager_hostsingle reads this set as it reads hostsingle's (REGISTERED_STEP_SETS): nothing before a run;
    one row per registered row, its processes' mean against predicted.product (not the candidate), each row's regime
    the one registered beside it, the set one source."""
    import math
    from collections import Counter

    from simcluster.heldout import eager_hostsingle, step_sets
    from simcluster.trust.build import eager_residuals

    assert eager_hostsingle.OPSPLIT_BUNDLE in step_sets.STEP_SET_BUNDLES and BUNDLE.name in eager_hostsingle.OPSPLIT_BUNDLE
    assert eager_hostsingle.held_out_rows(tmp_path) == []   # registered, not run: no row
    reg = yaml.safe_load((BUNDLE / "registered.yaml").read_text())["rows"]
    got = eager_hostsingle.held_out_rows(synthetic(tmp_path, 0.1, [0.0], host=None))
    assert len(got) == 3 and all(r["host_flag"] == "registered" and r["recompute"] == "op" for r in got)
    for r, x in zip(got, reg, strict=True):
        assert r["predicted_s"] == x["predicted"]["product"]["step_ms"] / 1e3
        assert r["measured_s"] == pytest.approx(r["predicted_s"] * math.exp(-0.1))
    res = eager_residuals(got)
    assert [x.regime for x in res] == [x["regime"] for x in reg]
    assert Counter(x.regime.split(" | ")[2] for x in res) == {"single+sac-op": 2, "single+sac-op+host-bound": 1}
    assert {x.source for x in res} == {"set"}
    if (BUNDLE / "runs").is_dir():   # read once: the shipped set's rows, each its processes' mean (readout.txt)
        ran = {r["label"]: r["measured_s"] for r in eager_hostsingle.held_out_rows(BUNDLE)}
        assert ran["1b single+sac-op+host-bound seq 1728 mb 2"] == pytest.approx((163.3 + 148.2 + 144.8) / 3e3, abs=1e-4)
