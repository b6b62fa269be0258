"""Session 47's repeats47 set (calibration/h200x2-repeats47-2026-11-30, validation/repeats47.py): FSDP2 + whole-model
compile + full checkpointing, the shipped model held out, three processes a shape. The registration against a fresh
--register at its commit, the device script against the registered rows (ABBA order, three rounds), the shapes new to
calibration/, synthetic runs through the rules, the rows into the error bands in the FSDP+compile+ckpt regime."""

from __future__ import annotations

import re

import test_compilefsdp_set
import test_nosync_set
import yaml
from conftest import ROOT, fresh_register_equals, load_script

BUNDLE = ROOT / "calibration" / "h200x2-repeats47-2026-11-30"


def script():
    return load_script("validation/repeats47.py")


def registered() -> dict:
    return yaml.safe_load((BUNDLE / "registered.yaml").read_text())


def synthetic(tmp_path, scale=None, jitter=(0.01, -0.01, 0.0), drop=()):
    """A bundle whose processes measure each row's registered step x scale[name] x exp(jitter[k]), as the runner writes
    the compile sets' fsdp processes (test_compilefsdp_set.as_run)."""
    return test_nosync_set.synthetic(tmp_path, scale, jitter, drop, BUNDLE, extra_doc=test_compilefsdp_set.as_run())


def registered_before_adopt48(script, bundle, tmp_path, monkeypatch) -> dict:
    """A compiled FSDP2 set registered before session 48 adopt48 switched whole_model_graph and fsdp_free_phases on for
    torch-compile+fsdp2: its fresh --register runs the model as registered (heldout/eager_compilefsdp.before_adopt48)
    and equals registered.yaml; two fsdp rows of three processes, one GPU-bound and one with host share 0.3-0.5."""
    from simcluster.heldout.eager_compilefsdp import before_adopt48
    from simcluster.llm import eager

    with eager.torch_framework_as(before_adopt48):
        reg = fresh_register_equals(script, bundle, tmp_path, monkeypatch)
    assert [r["variant"] for r in reg["rows"]] == ["fsdp", "fsdp"] and all(r["processes"] == 3 for r in reg["rows"])
    shares = [r["predicted"]["host_share"] for r in reg["rows"]]
    assert shares[0] < 0.2 and 0.3 < shares[1] < 0.5   # one GPU-bound, one nearer host-bound (not host-bound)
    return reg


def test_a_fresh_register_at_the_registering_commit_equals_the_registration(tmp_path, monkeypatch):
    registered_before_adopt48(script(), BUNDLE, tmp_path, monkeypatch)


def test_the_registration_is_the_shipped_model_before_adopt48():
    """The registered step is the product's own at registration (no fix toggled): predict with fixed=None under
    before_adopt48 equals it; the product since session 48 adopt48 prices these rows faster."""
    from simcluster.heldout.eager_compilefsdp import before_adopt48, predict
    from simcluster.llm import eager

    for r in registered()["rows"]:
        with eager.torch_framework_as(before_adopt48):
            assert predict(r["preset"], r["seq"], r["micro_batch"], "fsdp") == r["predicted"], r["name"]
        assert predict(r["preset"], r["seq"], r["micro_batch"], "fsdp")["step_ms"] < r["predicted"]["step_ms"]


def test_the_device_script_runs_the_registered_rows_abba():
    check_abba_script(script(), BUNDLE, registered()["rows"], worst_s=330)


def check_abba_script(s, bundle, rows: list[dict], worst_s: int, cap_s: int = 90, host_runs: bool = False) -> None:
    """A compiled FSDP2 set's device_run.sh (repeats47's shape; compck's and compck2's too): its two shapes alternated
    A B | B A | A B over s.PROCESSES rounds, the fsdp variant's flags, one guarded run per registered row's process, the
    budget guard plus one run's `cap_s` within `worst_s`; `host_runs`: hidden-128 host runs lead it (compck2's), so the
    no-single-mode check reads the step runs' part only."""
    text = (bundle / "device_run.sh").read_text()
    a, b = (f"{p}:{seq}:{mb}" for p, seq, mb, _ in s.SHAPES)
    assert re.findall(r'order="([^"]+)"', text) == [f"{a} {b}", f"{b} {a}"]   # round 2 reversed, rounds 1 and 3 alike
    assert "[ $r -eq 2 ] && order=" in text
    assert re.search(r"^for r in (.*); do$", text, re.M).group(1).split() == [str(k) for k in range(1, s.PROCESSES + 1)]
    assert 'common="--warmup 3 --steps 5 --profile 0 --compile --ac-mode full"' in text
    steps = text[text.index('common="'):] if host_runs else text
    assert "--mode fsdp --compile-scope model $common" in text and "--mode single" not in steps
    assert f'guarded "$preset-${{seq}}x$mb-fsdp-r$r" {cap_s} $fsdp' in text
    assert {"{}-{}x{}-fsdp".format(*o.split(":")) for o in (a, b)} == {r["name"] for r in rows}
    budget = int(re.search(r"BUDGET_S:-(\d+)", text).group(1))
    assert budget + cap_s <= worst_s   # worst case: no launch after BUDGET_S, each run at most cap_s


def test_the_registered_shapes_are_new_to_calibration():
    from conftest import measured_llm_tokens, registered_tokens, seqs_named_elsewhere

    rows = registered()["rows"]
    assert {r["seq"] for r in rows} <= {1568, 1600, 1632, 3712, 3744, 3776}   # this helper's own list (session 47)
    assert seqs_named_elsewhere(BUNDLE, {r["seq"] for r in rows}) == []
    assert registered_tokens(rows) & measured_llm_tokens(BUNDLE) == set()


def test_runs_at_the_registered_steps_read_met_and_a_miss_and_noise_are_named(tmp_path):
    out = script().read_out(synthetic(tmp_path / "a"))
    v = out["verdicts"]
    assert v["D"] == "MET" and v["M"].startswith("within") and v["P"].startswith("memory met"), v
    assert len(out["procs"]) == 6 and not out["left"] and "(4 dof)" in v["N"] and v["F"].count("(2 dof)") == 2, v
    slow = script().read_out(synthetic(tmp_path / "b", {"0.5b-1600x6-fsdp": 1.12}))["verdicts"]   # measured 12% over
    assert slow["D"] == "MODEL: 0.5b-1600x6-fsdp not within" and slow["M"].startswith("not within"), slow
    loud = script().read_out(synthetic(tmp_path / "c", jitter=(0.3, -0.3, 0.0)))["verdicts"]
    assert loud["D"].startswith("NOISE"), loud
    short = script().read_out(synthetic(tmp_path / "d", drop={"1b-3744x2-fsdp-r2", "1b-3744x2-fsdp-r3"}))
    assert "1b-3744x2-fsdp NO DATA" in short["verdicts"]["F"] and len(short["left"]) == 2


def test_the_set_enters_the_error_bands_in_the_compile_ckpt_regime(tmp_path):
    from simcluster.heldout import eager_compilefsdp, step_sets
    from simcluster.trust.build import eager_residuals

    assert eager_compilefsdp.REPEATS47_BUNDLE in step_sets.STEP_SET_BUNDLES
    assert BUNDLE.name in eager_compilefsdp.REPEATS47_BUNDLE
    assert eager_compilefsdp.held_out_rows(tmp_path) == []   # registered, not run: no row
    got = eager_compilefsdp.held_out_rows(synthetic(tmp_path / "a"))
    assert len(got) == 2 and all(r["host_flag"] == "registered" and r["processes"] == 3 for r in got)
    for r, x in zip(got, registered()["rows"], strict=True):
        assert r["predicted_s"] == x["predicted"]["step_ms"] / 1e3
    assert {x.regime for x in eager_residuals(got)} == {"llm | PyTorch eager | FSDP+compile+ckpt | bf16"}
    assert {x.scale for x in eager_residuals(got)} == {2}
