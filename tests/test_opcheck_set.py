"""Session 44's held-out check of the product's ckpt / op host terms (calibration/h200x2-opcheck-2026-11-30): the
registration against a fresh --register at this commit, the device script against the read-out's processes and probe,
the shapes new to calibration/, and synthetic runs through the rules N, M, B, C, O, P and D."""

from __future__ import annotations

import json
import re

import pytest
import yaml
from conftest import ROOT, load_script, measured_llm_tokens
from test_hostsingle_set import doc, host_runs
from test_hostsingle_set import synthetic as hostsingle_synthetic

from simcluster.errors import SimclusterError

BUNDLE = ROOT / "calibration" / "h200x2-opcheck-2026-11-30"
HB49_RERUN = ROOT / "calibration/h200x1-hb49-2026-12-01"   # ran after this set; re-runs its op host-bound shape
AVOID = {1344, 2624, 1856, 1216, 1792, 896, 1536}   # the seqs of the sets registered beside this one (the brief's list)


def script():
    return load_script("validation/opcheck.py")


def synthetic(tmp_path, offset: float, jitter: list[float], mem: float = 1.0, host: float | None = 1.0, base=None,
              which: str = "product"):
    """hostsingle's synthetic bundle of this set's registration: steps predicted[which], peaks the product's, and
    runs/host/ this set's probe (single, op, ckpt) from the diagnostic lease at `host` times its steps."""
    return hostsingle_synthetic(tmp_path, offset, jitter, mem, host, base, src=BUNDLE, judged="product", which=which,
                                probe=script().HOST_PROBE)


def fresh_registration(s, bundle, tmp_path, keys: tuple, groups: list[str]) -> dict:
    """A hostsingle-style set's `--register` now gives its registration's `keys` (this set's, opsplit's), its rows the
    script's SHAPES in `groups`, and never writes over an existing registration; returns the registration."""
    reg = yaml.safe_load((bundle / "registered.yaml").read_text())
    fresh_path = tmp_path / "registered.yaml"
    assert s.main(["--register", str(fresh_path)]) == 0
    fresh = yaml.safe_load(fresh_path.read_text())
    for key in keys:
        assert reg[key] == fresh[key], key
    assert [(r["name"], r["preset"], r["seq"], r["micro_batch"], r["ac_mode"]) for r in reg["rows"]] == list(s.SHAPES)
    assert [r["group"] for r in reg["rows"]] == groups
    assert s.main(["--register", str(fresh_path)]) == 2   # never over an existing registration
    return reg


def test_the_registration_is_a_fresh_register_at_this_commit(tmp_path):
    fresh_registration(script(), BUNDLE, tmp_path, ("script", "calibration", "product_host", "before_host", "judge",
                       "rules", "rows"), ["op+host-bound", "op", "ckpt+host-bound", "ckpt"])


def test_the_registered_terms_are_hostproducts_and_the_reference_is_the_product_before_it():
    reg = yaml.safe_load((BUNDLE / "registered.yaml").read_text())
    now, before = reg["product_host"], reg["before_host"]
    assert now["ckpt"]["per_kernel_s"] == pytest.approx(31.55e-6, rel=2e-3) and now["op"]["per_kernel_s"] == pytest.approx(55.91e-6, rel=2e-3)
    assert "ckpt" not in before and "op" not in before   # before hostproduct: no ckpt / op fit, FALLBACK to single's
    assert before["single"] == now["single"]
    for row in reg["rows"]:   # the term moves every registered step, most where the host bounds it
        assert row["predicted"]["product"]["step_ms"] > row["predicted"]["before"]["step_ms"], row["name"]


def test_the_device_script_runs_the_probe_first_and_the_registered_processes():
    text = (BUNDLE / "device_run.sh").read_text()
    runs = re.findall(r"^  guarded (\S+)-r\$r 60 \$one \$step --preset (\S+) --shapes (\d+):(\d+) --(?:ac-mode (\w+)|(activation-checkpointing))$",
                      text, re.M)
    assert [(n, p, int(q), int(m), a or "full") for n, p, q, m, a, _ in runs] == list(script().SHAPES)
    assert "for r in 1 2 3; do" in text and script().PROCESSES == 3
    probes = re.findall(r"^for layers in 2 32; do guarded host/(\w+)-L\$layers 60 \$one \$probe --layers \$layers(.*); done$", text, re.M)
    assert [f"{m}-L{n}" for m, _ in probes for n in (2, 32)] == list(script().HOST_PROBE)
    assert [flag for _, flag in probes] == ["", " --ac-mode op", " --activation-checkpointing"]
    assert text.index("host/ckpt-L") < text.index("for r in 1 2 3")   # the probe before every step process
    assert 'one="env CUDA_VISIBLE_DEVICES=0 python3 -m simcluster.runner.llm_step --mode single"' in text
    budget = int(re.search(r"BUDGET_S=\$\{BUDGET_S:-(\d+)\}", text).group(1))
    assert budget + 60 <= 320   # the worst case: a run may start at BUDGET_S - 1 s and take its 60 s limit


def test_the_shapes_are_new_to_calibration_by_tokens_and_their_seqs_by_any_bundle():
    from simcluster.runner.llm_decoder import PRESETS

    earlier = measured_llm_tokens(BUNDLE, HB49_RERUN)   # hb49 (session 49) re-ran one of these shapes later, exactly
    seqs = {seq for _, _, seq, _, _ in script().SHAPES}
    assert not seqs & AVOID and len(seqs) == len(script().SHAPES)
    for _, preset, seq, mb, _ in script().SHAPES:
        assert (preset, PRESETS[preset]["layers"], seq * mb) not in earlier, (preset, seq, mb)
    for path in (ROOT / "calibration").rglob("*"):   # no other bundle names these seqs
        if path.is_file() and BUNDLE not in path.parents and path.suffix in (".json", ".yaml", ".sh", ".txt", ".md"):
            text = path.read_text(errors="replace")
            # session 49's hb49 set re-runs ophb-0.5b (0.5b 1472:2 op) exactly on another lease: a shape on two leases
            for s in seqs - ({1472} if ROOT / "calibration" / "h200x1-hb49-2026-12-01" in path.parents else set()):
                assert not re.search(rf'("seq": {s}\b|\bseq: {s}\b|\b{s}:\d)', text), (path, s)


def test_an_exact_product_reads_adopted_stays_and_better(tmp_path):
    out = script().read_out(synthetic(tmp_path, 0.0, [0.01, -0.01, 0.0, 0.005]))
    v = out["verdicts"]
    assert v["D op"].startswith("ADOPTED STAYS: the product within the target in op+host-bound and op (C BETTER)"), v
    assert v["D ckpt"].startswith("ADOPTED STAYS"), v
    assert v["B op+host-bound"].startswith("NONE") and v["C ckpt+host-bound"].startswith("BETTER"), v
    assert "below the 8% target" in v["N"] and v["P"].startswith("memory met"), v
    assert len(out["rows"]) == 12 and not out["left"]


def test_a_lease_that_runs_as_the_product_before_reads_reverted(tmp_path):
    v = script().read_out(synthetic(tmp_path, 0.0, [0.01, -0.01, 0.0], which="before"))["verdicts"]
    assert v["C op"].startswith("WORSE") and v["D op"].startswith("REVERTED"), v
    assert v["M op+host-bound"].startswith("product not within") and v["B op+host-bound"].startswith("SLOW"), v


def test_a_miss_this_leases_own_fit_explains_reads_lease_and_one_it_does_not_reads_next_term(tmp_path):
    s = script()
    folder = tmp_path / "fast-host"
    host_runs(folder, 0.7, s.HOST_PROBE)
    own = {(p, q, m, a): s.predict(p, q, m, a, folder)["step_ms"] / 1e3 for _, p, q, m, a in s.SHAPES}
    lease = s.read_out(synthetic(tmp_path / "lease", 0.0, [0.02, -0.02, 0.0, 0.01], host=0.7, base=own))["verdicts"]
    assert lease["M op+host-bound"].startswith("product not within"), lease
    assert lease["D op"].startswith("ADOPTED STAYS (lease): op+host-bound"), lease
    assert "op 47.1 us per kernel" in lease["O host"] and "(x0.84)" in lease["O host"], lease["O host"]   # 0.7 x the diag lease's
    # the product 16% fast (the term moved the right way, C BETTER) and no own fits to explain it
    nxt = s.read_out(synthetic(tmp_path / "next", -0.17, [0.02, -0.02, 0.01, -0.01, 0.0, 0.015], host=None))["verdicts"]
    assert nxt["C ckpt"].startswith("BETTER") and nxt["B ckpt"].startswith("FAST"), nxt
    assert nxt["D ckpt"].startswith("NEXT TERM: ckpt+host-bound, ckpt missed"), nxt


def test_loud_processes_read_noise_and_memory_outside_the_range_is_not_met(tmp_path):
    loud = script().read_out(synthetic(tmp_path / "loud", 0.0, [0.3, -0.3, 0.0, 0.25]))["verdicts"]
    assert "ABOVE the 8% target" in loud["N"] and loud["D op"].startswith("NOISE") and loud["D ckpt"].startswith("NOISE"), loud
    v = script().read_out(synthetic(tmp_path / "mem", 0.0, [0.0], mem=1.2))["verdicts"]
    assert v["P"].startswith("memory not met: max |error| 16.7%"), v["P"]


def bad_inputs_read_one_line(s, bundle, names: tuple[str, str, str], other: dict, model: str) -> None:
    """The one-GPU op sets' bad-input case (opcheck's, opsplit's read-outs on a synthetic bundle without a host probe):
    names' first shape loses its third process, the second's third is a traceback, the third's third ran `other` (an
    llm-step document of another shape); then rows[0]'s predicted[model] step goes from the registration."""
    missing, broken, wrong = names
    (bundle / "runs" / f"{missing}-r3.json").unlink()
    (bundle / "runs" / f"{broken}-r3.json").write_text("Traceback ...")
    (bundle / "runs" / f"{wrong}-r3.json").write_text(json.dumps(other))
    out = s.read_out(bundle)
    left = " ".join(out["left"])
    assert f"{missing}: 2 of 3 processes read" in left and f"{broken}-r3.json: no llm-step document" in left, left
    assert f"{wrong}-r3.json: ran" in left and "single: NO DATA" in out["verdicts"]["O host"] and not out["own"], out
    reg = yaml.safe_load((bundle / "registered.yaml").read_text())
    del reg["rows"][0]["predicted"][model]["step_ms"]
    (bundle / "registered.yaml").write_text(yaml.safe_dump(reg))
    with pytest.raises(SimclusterError, match=r"registered.yaml: rows\[0\]: missing or bad key"):
        s.read_out(bundle)


def test_missing_runs_bad_documents_and_a_bad_registration_are_one_line(tmp_path):
    bad_inputs_read_one_line(script(), synthetic(tmp_path, 0.0, [0.0, 0.01], host=None), ("op-1b", "ck-0.8b", "ckhb-0.5b"),
                             doc("0.5b", 960, 2, "none", 0.08, 7.0), "before")


def test_the_set_enters_the_error_bands_as_ckpt_and_op_rows_against_its_registered_product_step(tmp_path):
    """heldout/eager_hostsingle reads this set as it reads hostsingle's (REGISTERED_STEP_SETS): one row per registered
    row, its processes' mean against predicted.product (not rule C's `before`), regimes as registered (full
    checkpointing pooled with single, op its own), the set one source."""
    import math
    from collections import Counter

    from simcluster.heldout import eager_hostsingle, step_sets
    from simcluster.trust.build import eager_residuals

    assert eager_hostsingle.OPCHECK_BUNDLE in step_sets.STEP_SET_BUNDLES and BUNDLE.name in eager_hostsingle.OPCHECK_BUNDLE
    reg = yaml.safe_load((BUNDLE / "registered.yaml").read_text())["rows"]
    got = eager_hostsingle.held_out_rows(synthetic(tmp_path, -0.05, [0.0], host=None))
    assert [r["recompute"] for r in got] == [x["ac_mode"] for x in reg] and all(r["host_flag"] == "registered" for r in got)
    for r, x in zip(got, reg, strict=True):
        assert r["predicted_s"] == x["predicted"]["product"]["step_ms"] / 1e3
        assert r["measured_s"] == pytest.approx(r["predicted_s"] * math.exp(0.05))
    res = eager_residuals(got)
    assert [x.regime for x in res] == [x["regime"] for x in reg]
    assert Counter(x.regime.split(" | ")[2] for x in res) == {"single+sac-op": 1, "single+sac-op+host-bound": 1, "single": 1,
                                                               "single+host-bound": 1}
