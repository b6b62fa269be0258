"""The ac6a / ac6b sets (validation/llm_ac6.py, calibration/h200x1-llm-ac6{a,b}-2026-11-29): each registration is its
plan (three shapes x none / full / every:2), no shape was measured before in any mode, the device script runs what the
registration lists, and the band's reader (eager_registered.read_sac) and the read-out take the runner's documents."""

from __future__ import annotations

import json
import pathlib

import pytest
from conftest import bundles_run_after, load_script, measured_llm_shapes, measured_llm_tokens, registered_shapes, registered_tokens

from simcluster.heldout.eager_registered import read_sac

ROOT = pathlib.Path(__file__).resolve().parent.parent
SAC_RUN = ROOT / "calibration/h200x1-llm-sac-2026-11-29/runs/1b-every2.json"   # a real llm-step document to edit
SETS = ("ac6a", "ac6b")


def _script():
    return load_script("validation/llm_ac6.py")


def _registered(folder: pathlib.Path) -> list[dict]:
    return json.loads((folder / "registered.json").read_text())["runs"]


# A step's allocated peak follows its tokens (seq x micro-batch), not their split: these registered (preset, tokens) an
# earlier measurement had already taken under another split, in some mode (found in session 35's cold read D). Their
# steps are still new (attention and kernel shapes change with seq); their memory is development evidence, not held out.
# Measured before each set's run, not counting the set itself or later ones:
REPEATED_TOKENS = {
    "ac6a": set(),
    "ac6b": {("1.1b", 16384), ("1b", 16384)},       # ac6a's 1.1b 2048:8 (the same registration), sac's 1b 2048:8
    "eager7": {("0.3b", 32768), ("3.1b", 8192)},    # sac's 0.3b 2048:16; ckpt-host's 3.1b 2048:4 (none and full, 2026-11-28)
    "eager8": {("0.5b", 32768), ("1.1b", 16384), ("2b", 16384)},   # ac6a's 0.5b 4096:8, 1.1b 2048:8, 2b 2048:8
}


def test_registered_tokens_repeat_only_the_recorded_ones_and_a_new_set_repeats_none():
    """Every set of llm_ac6.SETS (in registration order) against what was measured before it: its repeated (preset,
    tokens) are the recorded ones above; a set registered from now on (absent above) must repeat none."""
    sets = _script().SETS
    names = list(sets)
    for i, name in enumerate(names):
        reg = _registered(sets[name][0])
        before = measured_llm_tokens(*(sets[n][0] for n in names[i:]), *bundles_run_after(sets[name][0], unstamped_first=True))   # before it only
        repeated = {(preset, tokens) for preset, _, tokens in registered_tokens(reg) & before}
        assert repeated == REPEATED_TOKENS.get(name, set()), name


def test_the_repeated_tokens_peak_as_the_earlier_split_did():
    """The recorded fact behind the rule: eager8's 1.1b 1024:16 and ac6a's 1.1b 2048:8 (same tokens) peak within 0.01%
    in every mode, and so do eager7's 3.1b 4096:2 and ckpt-host's 3.1b 2048:4 without checkpointing."""
    def peak(path, tokens):
        text = (ROOT / "calibration" / path).read_text()
        shapes = json.loads(text[text.find("{"):])["shapes"]
        return next(s["max_memory_allocated_bytes"] for s in shapes if s["seq"] * s["micro_batch"] == tokens)
    for mode in ("none", "full", "every2"):
        a, b = (peak(f"h200x1-llm-{name}-2026-11-29/runs/1.1b-{mode}.json", 16384) for name in ("eager8", "ac6a"))
        assert a == pytest.approx(b, rel=1e-4)
    assert peak("h200x1-llm-eager7-2026-11-29/runs/3.1b-none.json", 8192) == pytest.approx(
        peak("h200x1-llm-ckpt-host-2026-11-28/check/llm-step/3.1b-single/stdout.txt", 8192), rel=1e-4)


@pytest.mark.parametrize("name", (*SETS, "eager7", "eager8"))
def test_the_registration_is_the_plan_on_never_measured_shapes(name):
    mod = _script()
    folder, plan = mod.SETS[name]
    reg = _registered(folder)
    assert [(r["preset"], r["seq"], r["micro_batch"], r["ac_mode"]) for r in reg] == \
        [(p, s, m, mode) for p, s, m in plan for mode in mod.MODES]
    folders = [mod.SETS[n][0] for n in (*SETS, "eager7", "eager8")]   # eager7 / eager8 (session 35): none of ac6's shapes either
    assert not any(registered_shapes(reg) & registered_shapes(_registered(mod.SETS[n][0])) for n in mod.SETS if n != name)
    assert max(r["predicted_mem_GiB"] for r in reg) < 110   # fits the 141 GB card without checkpointing, with margin
    assert not registered_shapes(reg) & measured_llm_shapes(*folders, *bundles_run_after(folder, unstamped_first=True))   # before it ran
    for r in reg:   # every:2 saves more than full and less than none; full costs the most time
        by_mode = {x["ac_mode"]: x for x in reg if (x["preset"], x["seq"]) == (r["preset"], r["seq"])}
        assert by_mode["full"]["predicted_mem_GiB"] < by_mode["every:2"]["predicted_mem_GiB"] < by_mode["none"]["predicted_mem_GiB"]
        assert by_mode["none"]["predicted_step_ms"] < by_mode["every:2"]["predicted_step_ms"] < by_mode["full"]["predicted_step_ms"]


def test_the_two_sets_share_no_shape_and_the_device_script_reads_the_registration():
    mod = _script()
    a, b = (registered_shapes(_registered(mod.SETS[n][0])) for n in SETS)
    assert not a & b and len(a) == len(b) == 3
    script = (mod.SETS["ac6a"][0] / "device_run.sh").read_text()
    assert "$SRC/registered.json" in script and '--ac-mode "$mode"' in script and "--profile 0" in script
    assert "ac6a|ac6b" in script


def _run_doc(run: dict, scale: float) -> str:
    doc = json.loads(SAC_RUN.read_text())
    shape = doc["shapes"][0]
    doc["model"]["preset"] = run["preset"]
    doc["ac_mode"] = run["ac_mode"]
    doc["activation_checkpointing"] = run["ac_mode"] != "none"
    shape.update(seq=run["seq"], micro_batch=run["micro_batch"], median_step_s=run["predicted_step_ms"] / 1e3 * scale,
                 max_memory_allocated_bytes=int(run["predicted_mem_GiB"] * 2**30 * 1.02))
    return json.dumps(doc)


def test_the_band_reader_and_the_read_out_take_its_documents(tmp_path, capsys):
    mod = _script()
    folder = mod.SETS["ac6a"][0]
    (tmp_path / "runs").mkdir()
    (tmp_path / "registered.json").write_text((folder / "registered.json").read_text())
    reg = _registered(folder)
    for r, scale in zip(reg, (1.0, 1.1, 0.9, 1.1, 1.0, 1.0, 0.95, 1.2, 1.0), strict=True):
        (tmp_path / "runs" / f"{r['run']}.json").write_text(_run_doc(r, scale))
    rows, skipped = read_sac(tmp_path)
    assert not skipped and len(rows) == 9
    assert {r["recompute"] for r in rows} == {"none", "full"} and {r["recompute_every"] for r in rows} == {1, 2}
    assert mod.main(["ac6a", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    verdicts = {line.split()[0]: line for line in out.splitlines() if " step mean |error| " in line}
    assert verdicts["full"].endswith(": NOT met") and verdicts["none"].endswith(": met"), verdicts   # full: 8.6% mean
    assert mod.main(["ac6c", str(tmp_path)]) == 2 and mod.main(["--register"]) == 2
    assert "llm_ac6: expected" in capsys.readouterr().err
    assert mod.main(["--register", "ac6a"]) == 2   # registered: never overwritten, one line
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "never overwritten" in err and "ac6a" in err


def _without_model_now(text: str) -> list[list[str]]:
    """The read-out's cells, a run line's fifth column (today's model, "now ms") left out: it may move, nothing else may."""
    rows = [line.split() for line in text.splitlines()]
    return [cells[:4] + cells[5:] if len(cells) == 8 and cells[0] != "run" else cells for cells in rows]


REGISTRATION = {"ac6a": "a48362f66546f92a6487a578757d08afd5a0a144", "ac6b": "a48362f66546f92a6487a578757d08afd5a0a144",
                "eager7": "1844559f26098869d4cf189bfae87c2592552fe7", "eager8": "4505374d1918d630d8acd2e847dd0320a6ac8418"}


@pytest.mark.parametrize("name", (*SETS, "eager7", "eager8"))
def test_the_read_out_reproduces_the_committed_readout_and_the_band_takes_all_nine_runs(name, capsys):
    from simcluster.heldout.eager_registered import REGISTERED

    mod = _script()
    folder = mod.SETS[name][0]
    assert mod.main([name, str(folder)]) == 0
    assert _without_model_now(capsys.readouterr().out) == _without_model_now((folder / "readout.txt").read_text())
    rows, skipped = read_sac(folder)
    assert not skipped and len(rows) == 9 and str(folder.relative_to(ROOT)) in REGISTERED
    assert (folder / "commit.txt").read_text().strip() == REGISTRATION[name]   # the run came from its registration
