"""The moelab49 set (issue 44, session 49, calibration/h200x2-moelab49-2026-12-01): the router / permutation term checked on
four Megatron-Core local-spec MoE layers no set has run. Its registration (fresh: --register reproduces it; the layers
new; both columns from today's model), the read-out's rule on synthetic runs (each reading, launches left out, one-line
errors) and device_run.sh's flow with stub nvidia-smi / pip / launcher (no GPU here)."""

from __future__ import annotations

import json
import sys
import tarfile
from pathlib import Path

import pytest
import yaml
from conftest import ROOT, load_script
from test_megatron_moe_lab import run_device_script

sys.path.insert(0, str(ROOT / "studies" / "megatron_moe"))

import compare  # noqa: E402
import register  # noqa: E402

from simcluster.llm import moe_router_term  # noqa: E402

BUNDLE = ROOT / "calibration" / "h200x2-moelab49-2026-12-01"
script = load_script("validation/moelab49.py")


def reg() -> dict:
    return yaml.safe_load((BUNDLE / "registered.yaml").read_text())


def test_the_registration_is_fresh_and_never_overwritten(tmp_path, monkeypatch):
    """--register at the registered commit writes registered.yaml byte for byte (today's model, both columns priced again)."""
    fresh(script.main, BUNDLE, tmp_path, monkeypatch)


def fresh(main, bundle: Path, tmp_path, monkeypatch) -> None:
    """--register at the registered commit reproduces registered.yaml, refuses to overwrite it, and leaves the term's
    state as it found it (moelab49b's too)."""
    monkeypatch.setenv("REGISTER_COMMIT", yaml.safe_load((bundle / "registered.yaml").read_text())["commit"])
    state = moe_router_term.state()
    assert main(["--register", str(tmp_path / "again.yaml")]) == 0
    assert (tmp_path / "again.yaml").read_text() == (bundle / "registered.yaml").read_text()
    assert main(["--register", str(bundle / "registered.yaml")]) == 2
    assert moe_router_term.state() == state     # the term's state (on since adopt49) restored after pricing


def _parse(flags: str) -> dict:
    words = flags.split()
    return {w[2:].replace("-", "_"): int(v) for w, v in zip(words[::2], words[1::2], strict=True)}


def earlier_layers(set_name: str, bundle: Path, r: dict, rule: dict) -> list[dict]:
    """Checks a lab registration's head (rows, rule, framework, GPUs, no absolute paths) and gives every MoE layer of the
    other sets (register.SETS, compare.CONFIGS, any other bundle's registered flags with --experts): moelab49b's too."""
    assert r["rows"] == list(r["runs"]) == list(register.SETS[set_name][0]) and r["rule"] == rule
    assert r["framework"] == "megatron-local-spec" and r["gpu"].startswith("H200 x 2 ")
    assert "/work" not in (bundle / "registered.yaml").read_text()          # no absolute paths
    earlier = [m for s, (c, *_) in register.SETS.items() if s != set_name for m in c.values()] + list(compare.CONFIGS.values())
    for f in (ROOT / "calibration").glob("*/registered.yaml"):
        runs = yaml.safe_load(f.read_text()).get("runs") if f.parent != bundle else None
        earlier += [_parse(x["flags"]) for x in (runs.values() if isinstance(runs, dict) else []) if "--experts" in str(x.get("flags"))]
    assert len(earlier) > 34
    return earlier


def test_the_layers_are_new_and_the_term_moves_each_by_more_than_the_launch_spread():
    r = reg()
    earlier = earlier_layers("moelab49", BUNDLE, r, script.RULE)
    for name, run in r["runs"].items():
        assert run["flags"] == register.flags(register.SET49[name]) and _parse(run["flags"]) not in earlier
        assert run["flags"].count("--seq 4096") == 1
        # the term adds time (never removes), by 10-30% of the step; each piece alone adds part of it
        assert 1.10 < run["predicted_on_s"] / run["predicted_step_s"] < 1.30
        pieces = (run["router_only_s"], run["permute_only_s"])
        assert run["predicted_step_s"] < min(pieces) <= max(pieces) < run["predicted_on_s"]
        assert 0 < run["gpu_only_s"] <= run["predicted_step_s"]


def _doc(name: str, step_s: float, pinned: bool = True, ep: int | None = None, configs: dict = register.SET49) -> dict:
    m = configs[name]
    return {"tool": "megatron-moe", "format": 3, "world_size": 2, "device": "NVIDIA H200",
            "model": {k: m[k] for k in ("layers", "hidden", "heads", "kv_heads", "head_dim", "experts", "top_k", "expert_ffn",
                                        "vocab", "seq", "micro_batch")},
            "parallel": {"ep": ep or m["ep"], "tp": 1, "pp": 1, "dp": 2},
            "pin_per_rank": [{"cpus": [i], "cpus_after": str(i)} if pinned else None for i in range(2)],
            "rank0": {"status": "ok", "median_step_s": step_s}}


def _bundle(folder: Path, at, launch2: bool = True, bundle: Path = BUNDLE, configs: dict = register.SET49) -> Path:
    """A bundle whose configurations measure at(run) seconds (each launch 2% apart); None: not run (moelab49b's too)."""
    (folder / "runs" / script.LAUNCH2).mkdir(parents=True)
    (folder / "registered.yaml").write_text((bundle / "registered.yaml").read_text())
    for name, run in yaml.safe_load((bundle / "registered.yaml").read_text())["runs"].items():
        t = at(run)
        if t is None:
            continue
        for sub, f in (("", 0.99), (script.LAUNCH2, 1.01))[:2 if launch2 else 1]:
            (folder / "runs" / sub / f"megatron-moe-h200-x2-{name}-armB.json").write_text(json.dumps(_doc(name, t * f, configs=configs)))
    return folder


@pytest.mark.parametrize(("at", "reading"), [
    (lambda r: r["predicted_on_s"], "HOLDS"),                                    # measured at ON: OFF 10-22% fast
    (lambda r: r["predicted_step_s"], "FAILS"),                                  # measured at OFF: ON 10-28% slow
    (lambda r: (r["predicted_step_s"] + r["predicted_on_s"]) / 2, "UNDECIDED"),  # halfway: the same |error| both ways
    (lambda r: 1.5 * r["predicted_on_s"], "UNDECIDED"),                          # ON better by the margin, past the level
])
def test_the_read_out_prints_every_configuration_and_one_rule_line(tmp_path, capsys, at, reading):
    assert script.main([str(_bundle(tmp_path / "b", at))]) == 0
    out = capsys.readouterr().out
    assert [ln.split()[0] for ln in out.splitlines()[1:5]] == list(register.SET49)
    rule = [ln for ln in out.splitlines() if ln.startswith("RULE: ")]
    assert len(rule) == 1 and rule[0].startswith(f"RULE: {reading} (") and "left out" not in out


def test_launches_that_do_not_count_are_left_out_with_why(tmp_path, capsys):
    folder = _bundle(tmp_path / "b", lambda r: r["predicted_on_s"], launch2=False)
    names = list(register.SET49)
    (folder / "runs" / f"megatron-moe-h200-x2-{names[0]}-armB.json").write_text(json.dumps(_doc(names[0], 0.1, pinned=False)))
    (folder / "runs" / f"megatron-moe-h200-x2-{names[1]}-armB.json").write_text(json.dumps(_doc(names[1], 0.1, ep=1)))
    res = script.read_out(folder)
    assert [x["name"] for x in res["rows"]] == names[2:] and res["verdict"].startswith("NO READING (2 configurations")
    assert sum("no run file" in ln for ln in res["left"]) == 4
    assert any("not every rank pinned" in ln for ln in res["left"]) and any("ep 1, registered 2" in ln for ln in res["left"])
    assert all(x["launches"] and x["spread"] == 1.0 for x in res["rows"])


def test_the_rule_at_its_edges():
    assert script.verdict([0.10, 0.10, 0.10], [0.07, 0.07, 0.07]).startswith("HOLDS")      # exactly the margin
    assert script.verdict([0.10, 0.10, 0.10], [0.071, 0.071, 0.071]).startswith("UNDECIDED")
    assert script.verdict([0.20, 0.20, 0.20], [-0.11, 0.11, 0.11]).startswith("UNDECIDED")   # better, past the level
    assert script.verdict([0.05, 0.05, 0.05], [0.081, 0.081, -0.081]).startswith("FAILS")
    assert script.verdict([0.05, 0.05], [0.0, 0.0]).startswith("NO READING")


def bad_bundles_are_one_line(main, tmp_path, capsys, other_set: str = "moerouter") -> None:
    """A read-out's main on an empty folder, a file and another set's bundle: exit 1, one line naming why (moelab49b's too)."""
    empty, a_file, other = tmp_path / "empty", tmp_path / "f.txt", tmp_path / "other"
    empty.mkdir()
    a_file.write_text("x")
    (other / "runs").mkdir(parents=True)
    (other / "registered.yaml").write_text(f"set: {other_set}\nrows: []\n")
    for bundle, said in ((empty, "registered.yaml: missing"), (a_file, "not a bundle folder"), (other, f"set '{other_set}'")):
        assert main([str(bundle)]) == 1
        err = capsys.readouterr().err
        assert said in err and err.count("\n") == 1, err


def test_bad_bundles_are_one_line(tmp_path, capsys):
    bad_bundles_are_one_line(script.main, tmp_path, capsys)
    damaged_registrations_are_one_line(script.main, BUNDLE, tmp_path / "damaged", capsys)


def damaged_registrations_are_one_line(main, bundle: Path, folder: Path, capsys) -> None:
    """A read-out's main on a copy of `bundle`'s registration with one run's flags or one registered step missing or not
    a number: exit 1, one line naming registered.yaml, the run and the key, before any run is read (final read 49, item
    2; moelab49b's too)."""
    runs = yaml.safe_load((bundle / "registered.yaml").read_text())["runs"]
    name = list(runs)[1]
    (folder / "runs").mkdir(parents=True)
    for key in ("flags", *(k for k in runs[name] if k.startswith("predicted_"))):
        for wrong in (None, 3 if key == "flags" else "fast"):      # missing, of the wrong type
            doc = yaml.safe_load((bundle / "registered.yaml").read_text())
            run = doc["runs"][name]
            run.pop(key) if wrong is None else run.update({key: wrong})
            (folder / "registered.yaml").write_text(yaml.safe_dump(doc, sort_keys=False))
            assert main([str(folder)]) == 1
            err = capsys.readouterr().err
            assert err.count("\n") == 1 and f"registered.yaml: runs: {name}: {key} missing or not a " in err, err


def test_device_run_flow_with_stubs(tmp_path):
    out, res = run_device_script(tmp_path, 2, BUNDLE / "device_run.sh", MOELAB49_WORK=str(tmp_path / "w"))
    lines = res.stdout.splitlines()
    names = list(register.SET49)
    assert [ln.split(": launch")[0] for ln in lines if "device.py" in ln] == [f"h200-x2-{n}-armB" for n in names + names[::-1]], res.stderr
    assert all("CUDA_MODULE_LOADING=EAGER device.py" in ln and "--pin --warmup 10 --steps 8" in ln for ln in lines if "device.py" in ln)
    assert sum(" exit 0 " in ln for ln in lines) == 8
    with tarfile.open(out / "runs.tgz") as tgz:
        members = tgz.getnames()
    for n in names:
        assert f"runs/megatron-moe-h200-x2-{n}-armB.json" in members and f"runs/launch2/megatron-moe-h200-x2-{n}-armB.json" in members
    assert "runs/commit.txt" in members and "runs/host.txt" in members
    text = (BUNDLE / "device_run.sh").read_text()
    assert "BUDGET_S=${BUDGET_S:-230}" in text and text.count(" 50 $two ") == 2     # worst case 230 + 50 s
    (tmp_path / "b0").mkdir()
    _, res = run_device_script(tmp_path / "b0", 2, BUNDLE / "device_run.sh", MOELAB49_WORK=str(tmp_path / "b0" / "w"), BUDGET_S="0")
    assert res.stdout.count("skipped: budget 0 s spent") == 8
