"""Session 42's drift set (calibration/h200x2-eager-drift-2026-11-30): the registration against its script, the device
script's shape and order, and synthetic calls through the read-out's rules D, P, T and M."""

from __future__ import annotations

import json
import math
import re
import shutil

import pytest
import yaml
from conftest import ROOT, load_script

from simcluster.errors import SimclusterError

BUNDLE = ROOT / "calibration" / "h200x2-eager-drift-2026-11-30"
STATE = """t_ms {ms}
uptime 300.5 4000.1
loadavg {load} 1.00 0.50 2/900 1234
## cpu MHz
cpu MHz\t\t: {mhz}
cpu MHz\t\t: {mhz}
## scaling_cur_freq
none
## free
               total        used        free      shared  buff/cache   available
Mem:     1000000000000   1000   1000   0   0   {avail}
## ps
  PID %CPU %MEM ELAPSED COMMAND
  1 0.0 0.0 300 init
## nvidia-smi index, clocks.sm, clocks.mem, temperature.gpu, power.draw, utilization.gpu, memory.used
0, {sm}, 3201, 35, 120.5, 0, 500
1, 1980, 3201, 33, 118.0, 0, 500
## nvidia-smi clocks_event_reasons.active
0, 0x0000000000000000
"""


def script():
    return load_script("validation/eager_drift.py")


def synthetic(tmp_path, step_drift: float, loop_drift: float, jitter: list[float], gap_s: float = 25.0,
              mhz_drift: float = 0.0):
    """A call of len(jitter) processes, p01 at 5 s and one every gap_s: step 0.35 s x exp(step_drift x t / span) x
    exp(jitter[i]); a probe before each and at the end, loop 0.15 s x exp(loop_drift x t / span), torch ops flat."""
    bundle = tmp_path / "set"
    (bundle / "runs").mkdir(parents=True)
    shutil.copy(BUNDLE / "registered.yaml", bundle / "registered.yaml")
    n = len(jitter)
    span = gap_s * (n - 1)
    starts = []
    for i in range(n + 1):
        name = f"p{i + 1:02d}" if i < n else "end"
        t = 5.0 + gap_s * i
        (bundle / "runs" / f"probe-{name}.json").write_text(json.dumps(
            {"tool": "drift-probe", "t_ms": int((t - 3) * 1e3), "python_loop_s": [0.15 * math.exp(loop_drift * t / span)] * 5,
             "torch_cpu_s": [0.1, 0.1, 0.1, 0.1, 0.1]}))
        (bundle / "runs" / f"state-{name}.txt").write_text(STATE.format(
            ms=int((t - 4) * 1e3), load=1.0 + i, mhz=2400 * math.exp(mhz_drift * t / span), avail=900 * 2 ** 30, sm=1980))
        if i < n:
            starts.append(f"{name} {int(t * 1e3)}")
            step = 0.35 * math.exp(step_drift * t / span + jitter[i])
            doc = {"tool": "llm-step", "format": 1, "mode": "tp", "world_size": 2, "model": {"preset": "2b"},
                   "shapes": [{"seq": 2048, "micro_batch": 2, "status": "ok", "median_step_s": step,
                               "step_times_s": [step] * 10}]}
            (bundle / "runs" / f"{name}.json").write_text("torchrun noise\n" + json.dumps(doc))
    (bundle / "runs" / "starts.txt").write_text("\n".join(starts) + "\n")
    return bundle


QUIET = [0.005, -0.004, 0.003, -0.005, 0.004, -0.003, 0.002, -0.002]


def test_the_registration_records_todays_model_for_the_tpnoise_shape():
    s = script()
    reg = yaml.safe_load((BUNDLE / "registered.yaml").read_text())
    assert reg["rows"][0]["predicted"]["step_ms"] == pytest.approx(s.predicted()["predicted"]["step_ms"], rel=1e-3)
    tpnoise = yaml.safe_load((ROOT / "calibration" / "h200x2-eager-tpnoise-2026-11-30" / "registered.yaml").read_text())
    assert reg["rows"][0]["predicted"]["step_ms"] == tpnoise["rows"][0]["predicted"]["step_ms"]   # the same shape
    assert reg["judge"] == s.JUDGE and reg["rules"] == s.RULES


def test_the_device_script_repeats_the_registered_shape_with_a_state_before_each():
    text = (BUNDLE / "device_run.sh").read_text()
    assert re.search(r'^tp="\$two -m simcluster.runner.llm_step --warmup 5 --steps 10 --profile 0 --mode tp"$', text, re.M)
    assert re.search(r'^  guarded "\$1" 60 \$tp --preset 2b --shapes 2048:2$', text, re.M)
    cycle = text[text.index("cycle() {"):text.index("\n}\n", text.index("cycle() {"))]
    assert cycle.index("snap ") < cycle.index("starts.txt") < cycle.index("guarded"), "state, start, then the process"
    budget = int(re.search(r"BUDGET_S=\$\{BUDGET_S:-(\d+)\}", text).group(1))
    assert budget + 15 + 60 + 20 <= 285, "the worst case stays near the brief's ~280 s"


def test_a_drift_is_told_from_a_flat_call(tmp_path):
    s = script()
    drift = s.read_out(synthetic(tmp_path / "drift", 0.20, 0.0, QUIET))["verdicts"]
    assert drift["D"].startswith("step DRIFT: "), drift["D"]
    change = float(re.match(r"step DRIFT: ([-+.0-9]+)%", drift["D"]).group(1)) / 100
    assert change == pytest.approx(math.expm1(0.20), abs=0.01)   # the drift put in, first to last start
    assert drift["P"].startswith("Python loop FLAT: +0.0%"), drift["P"]
    assert drift["T"].startswith("CPU torch ops FLAT"), drift["T"]
    flat = s.read_out(synthetic(tmp_path / "flat", 0.0, 0.0, QUIET))["verdicts"]
    assert flat["D"].startswith("step FLAT"), flat["D"]
    faster = s.read_out(synthetic(tmp_path / "faster", -0.20, 0.0, QUIET))["verdicts"]
    assert faster["D"].startswith("step FASTER"), faster["D"]


def test_a_noisy_call_is_undecided_and_the_probe_is_judged_on_its_own(tmp_path):
    s = script()
    loud = [0.1, -0.1, 0.08, -0.08, 0.0, 0.1, -0.1, 0.05]
    r = s.read_out(synthetic(tmp_path, 0.04, 0.15, loud, mhz_drift=-0.1))
    assert r["verdicts"]["D"].startswith("step UNDECIDED"), r["verdicts"]["D"]
    big = s.read_out(synthetic(tmp_path / "big", 0.10, 0.0, loud))["verdicts"]["D"]   # above the band, 0 inside the interval
    assert big.startswith("step UNDECIDED: +8.6%"), big
    assert r["verdicts"]["P"].startswith("Python loop DRIFT"), r["verdicts"]["P"]
    assert r["state"]["cpu_mhz"]["change"] < -0.05 and r["state"]["load1"]["change"] > 0
    assert r["processes"][0]["state"]["gpus"][0]["sm_mhz"] == 1980
    assert r["processes"][0]["state"]["avail_gib"] == pytest.approx(900)


def test_the_model_is_read_at_the_calls_start_and_end(tmp_path):
    m = script().read_out(synthetic(tmp_path, 0.20, 0.0, [0.0] * 8))["verdicts"]["M"]
    # 0.35 s x exp(0.2 x 5/175) = 352.0 ms at the first start, x exp(0.2 x 180/175) = 430.0 ms at the last
    assert m.startswith("model 356.9 ms not within the target: mean |error| 8.4% over 8 processes"), m
    assert "first start +1.4%, last -17.0%" in m, m
    near = script().read_out(synthetic(tmp_path / "near", 0.0, 0.0, [0.0] * 8))["verdicts"]["M"]
    assert near.startswith("model 356.9 ms within the target: mean |error| 2.0%"), near


def test_partial_or_bad_input_is_left_out_or_one_line(tmp_path):
    s = script()
    bundle = synthetic(tmp_path, 0.0, 0.0, QUIET)
    (bundle / "runs" / "p08.json").unlink()
    (bundle / "runs" / "p07.json").write_text("Traceback ...")
    (bundle / "runs" / "probe-p03.json").write_text("{")
    one_gpu = json.loads((bundle / "runs" / "p02.json").read_text().split("\n", 1)[1]) | {"world_size": 1}
    (bundle / "runs" / "p02.json").write_text(json.dumps(one_gpu))
    r = s.read_out(bundle)
    left = " ".join(r["left"])
    assert "p08: no runs/p08.json" in left and "p07: no llm-step document" in left
    assert "p02: not tp / 2 ranks / 2b (mode tp, world 1)" in left
    assert "probe-p03.json: not a probe document" in left
    assert len(r["processes"]) == 5 and len(r["probes"]) == 8
    for name in [f"p{i:02d}.json" for i in range(4, 7)]:
        (bundle / "runs" / name).unlink()
    assert s.read_out(bundle)["verdicts"]["D"] == "step NO DATA: fewer than 4 processes"
    (bundle / "runs" / "starts.txt").write_text("p01\n")
    with pytest.raises(SimclusterError, match="starts.txt: not 'NAME MS' lines"):
        s.read_out(bundle)
    (bundle / "runs" / "starts.txt").unlink()
    with pytest.raises(SimclusterError, match="starts.txt: missing"):
        s.read_out(bundle)
    reg = yaml.safe_load((bundle / "registered.yaml").read_text())
    del reg["judge"]
    (bundle / "registered.yaml").write_text(yaml.safe_dump(reg))
    with pytest.raises(SimclusterError, match="registered.yaml: missing or bad key"):
        s.read_out(bundle)


def test_an_ok_shape_with_a_null_seq_leaves_its_process_out_in_one_line(tmp_path):
    """review C 42: `seq: null` in an ok shape was a TypeError traceback (int(None)); as eager_tpnoise (86846779) the
    process is left out with one 'left out' line and the others are read."""
    s = script()
    bundle = synthetic(tmp_path, 0.0, 0.0, QUIET)
    for name, bad in (("p03", {"seq": None}), ("p05", {"micro_batch": "two"})):
        doc = json.loads((bundle / "runs" / f"{name}.json").read_text().split("\n", 1)[1])
        doc["shapes"][0] |= bad
        (bundle / "runs" / f"{name}.json").write_text(json.dumps(doc))
    r = s.read_out(bundle)
    left = " ".join(r["left"])
    assert "p03: a shape without a usable seq / micro_batch (TypeError" in left
    assert "p05: a shape without a usable seq / micro_batch (ValueError" in left
    assert len(r["processes"]) == len(QUIET) - 2


def test_the_command_line_prints_one_line_on_a_bad_bundle(tmp_path, capsys):
    assert script().main([str(tmp_path)]) == 1
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "registered.yaml: missing" in err
