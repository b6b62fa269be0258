"""The power-limited clock (hardware/gpu_clock.py): closed forms against hand computation, card errors, the fit on a
synthetic duty sweep, the shipped cards' clock blocks and the LLM step's own clock (llm/clock.py)."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
import yaml

from simcluster.errors import CalibrationError, ModelCardError, TraceFormatError
from simcluster.fit import gpu_clock as fit
from simcluster.hardware.gpu import gpu_params, load_gpu
from simcluster.hardware.gpu_clock import ClockParams, at_clock
from simcluster.llm import clock as settle_clock

ROOT = Path(__file__).resolve().parent.parent
C = ClockParams(max_clock_Hz=2.0e9, reference_clock_Hz=1.5e9, power_cap_W=700.0, idle_W=100.0, compute_W=800.0,
                memory_W=400.0, exponent=1.0, clock_share=0.5)


def test_clock_at_full_duty_and_low_duty_against_hand_computation():
    # duty 1: 100 + 800 (f / 2 GHz) = 700 -> f = 1.5 GHz
    assert C.clock_Hz(1.0, 0.0) == pytest.approx(1.5e9)
    # 0.5 GEMM + 0.5 copies: 100 + 200 + 400 (f / 2 GHz) = 700 -> f = 2 GHz, exactly the max
    assert C.clock_Hz(0.5, 0.5) == pytest.approx(2.0e9)
    # 0.7 GEMM + 0.3 copies: 100 + 120 + 560 x = 700 -> x = 480 / 560
    assert C.clock_Hz(0.7, 0.3) == pytest.approx(2.0e9 * 480 / 560)
    assert C.clock_Hz(0.2, 0.0) == 2.0e9 and C.clock_Hz(0.0, 1.0) == 2.0e9        # below the cap: the max clock
    squared = dataclasses.replace(C, exponent=2.0)
    assert squared.clock_Hz(1.0, 0.0) == pytest.approx(2.0e9 * (600 / 800) ** 0.5)


def test_clock_is_monotone_in_duty_and_capped_at_max():
    clocks = [C.clock_Hz(d, 0.2) for d in (0.1, 0.2, 0.4, 0.6, 0.8)]
    assert all(a >= b for a, b in zip(clocks, clocks[1:], strict=False)) and clocks[0] == C.max_clock_Hz > clocks[-1]
    assert all(C.clock_Hz(d, 1 - d) <= C.max_clock_Hz for d in (0.0, 0.3, 0.6, 1.0))


def test_time_scale_and_card_at_clock():
    # share 0.5 of the time at 2 GHz scales with 1 / f: at 1 GHz 0.5 * 2 + 0.5 = 1.5 x the 2 GHz time
    assert C.time_scale(1.0e9, 2.0e9) == pytest.approx(1.5)
    assert C.time_scale(1.5e9) == pytest.approx(1.0)
    gpu, _ = load_gpu(ROOT / "models/gpu/h100-sxm.yaml")
    fast = at_clock(gpu, gpu.clock.max_clock_Hz)
    k = gpu.clock.time_scale(gpu.clock.max_clock_Hz)
    assert fast.gemm_compute_s(8192, 8192, 8192) == pytest.approx(gpu.gemm_compute_s(8192, 8192, 8192) * k)
    assert fast.memory_time_s(1e9) == gpu.memory_time_s(1e9) and fast.clock.reference_clock_Hz == gpu.clock.max_clock_Hz


def _card_with_clock(**change):
    card = yaml.safe_load((ROOT / "models/gpu/h100-sxm.yaml").read_text())
    card["params"]["clock"].update(change)
    return card


@pytest.mark.parametrize(("change", "key"), [({"power_cap": "700"}, "power_cap"), ({"max_clock": "2GHz"}, "max_clock"),
                                             ({"exponent": "one"}, "exponent"), ({"clock_share": 1.5}, "clock_share"),
                                             ({"turbo": True}, "turbo"), ({"reference_duty": 1}, "reference_duty")])
def test_bad_clock_block_is_one_line_naming_the_key(change, key):
    with pytest.raises(ModelCardError) as err:
        gpu_params(_card_with_clock(**change), "card.yaml")
    assert key in err.value.one_line() and "\n" not in err.value.one_line()
    card = _card_with_clock()
    del card["params"]["clock"]["idle_power"]
    with pytest.raises(ModelCardError, match="idle_power"):
        gpu_params(card, "card.yaml")
    with pytest.raises(ModelCardError, match="card.yaml: params.clock.idle_power: 900 W must be >= 0 and below power_cap"):
        gpu_params(_card_with_clock(idle_power="900W"), "card.yaml")   # idle above the cap


def _synthetic_trace(tmp_path, truth: ClockParams) -> Path:
    """A duty sweep made from `truth`: GEMM times from its clock share, powers and clocks from its equations."""
    points = []
    for shape, t_max in (((4096, 8192, 3072), 260e-6), ((4096, 28672, 8192), 2400e-6)):
        for filler, duties in (("copy", (1.0, 0.8, 0.6, 0.45, 0.3, 0.2, 0.0)), ("sleep", (0.6, 0.3))):
            for d in duties:
                m = 1 - d if filler == "copy" else 0.0
                f = truth.clock_Hz(d, m)
                points.append({"m": shape[0], "n": shape[1], "k": shape[2], "filler": filler, "duty": d,
                               "gemm_s": t_max * truth.time_scale(f, truth.max_clock_Hz) if d else 0.0, "filler_s": 1e-4,
                               "bytes_per_cycle": 1e8, "sm_MHz": f / 1e6, "power_W": min(truth.power_W(d, m, f), truth.power_cap_W)})
    doc = {"tool": "gpu-micro", "device": {"name": "NVIDIA H100 80GB HBM3"}, "duty": {"idle": {"power_W": truth.idle_W}, "points": points}}
    path = tmp_path / "stdout.txt"
    path.write_text(json.dumps(doc))
    return path


def test_fit_recovers_a_synthetic_sweep_and_predicts_the_held_out_shape(tmp_path):
    truth = ClockParams(1.98e9, 1.98e9, 695.0, 130.0, 850.0, 380.0, 1.3, 0.4)
    points, idle, _ = fit.duty_points(_synthetic_trace(tmp_path, truth))
    c = fit.fit_clock(points, idle, (1.0, 0.0))
    assert c.compute_W == pytest.approx(850.0, rel=0.02) and c.exponent == pytest.approx(1.3, rel=0.03)
    assert c.clock_share == pytest.approx(0.4, abs=0.01) and c.memory_W == pytest.approx(380.0)
    assert c.reference_clock_Hz == pytest.approx(truth.clock_Hz(1.0, 0.0), rel=1e-3)
    rows = fit.held_out_rows(c, points)
    assert rows and all(abs(r["clock_MHz"][0] / r["clock_MHz"][1] - 1) < 0.01 for r in rows)
    timed = [r for r in rows if r["gemm_us"]]           # the base (duty-1) point is no prediction of its own time
    assert len(timed) == len(rows) - 1 and max(rows, key=lambda r: r["duty"])["gemm_us"] is None
    assert all(abs(r["gemm_us"][0] / r["gemm_us"][1] - 1) < 0.01 for r in timed)


def test_duty_trace_errors_are_one_line(tmp_path):
    path = tmp_path / "stdout.txt"
    path.write_text(json.dumps({"tool": "gpu-micro", "device": {}, "duty": {}}))   # the section did not run
    assert fit.duty_points(path) is None
    assert fit.main([str(path)]) == 2
    path.write_text(json.dumps({"tool": "gpu-micro", "device": {}, "duty": {"idle": {}, "points": []}}))
    with pytest.raises(TraceFormatError, match="no list of points"):
        fit.duty_points(path)
    path.write_text(json.dumps({"tool": "gpu-micro", "device": {}, "duty": {"idle": {"power_W": 100}, "points": [{"m": 1}]}}))
    with pytest.raises(Exception, match="missing 'n'"):
        fit.duty_points(path)


@pytest.mark.parametrize("gpu", ["h100", "h200"])
def test_shipped_clock_blocks_are_the_fit_of_the_duty_bundle(gpu):
    trace = ROOT / f"calibration/{gpu}x1-gpu-duty-2026-11-23/gpu-micro/gpu-micro/stdout.txt"
    points, idle, _ = fit.duty_points(trace)
    for card, duty in ((f"{gpu}-sxm", (1.0, 0.0)), (f"{gpu}-sxm-interleaved", fit.INTERLEAVED_DUTY)):
        shipped = load_gpu(ROOT / f"models/gpu/{card}.yaml")[0].clock
        made = fit.fit_clock(points, idle, duty)
        assert shipped.reference_clock_Hz == pytest.approx(made.reference_clock_Hz, rel=1e-3)
        assert shipped.compute_W == pytest.approx(made.compute_W, rel=1e-3) and shipped.clock_share == pytest.approx(made.clock_share, abs=1e-4)
    assert load_gpu(ROOT / "models/gpu/b200.yaml")[0].clock is None   # carried cards: no clock model


@pytest.mark.parametrize("gpu", ["h100", "h200"])
def test_both_cards_of_a_gpu_give_one_step_time(gpu):
    """Back-to-back and interleaved GEMM curves, each moved from its own reference clock to the step's clock, agree on
    the same step within 5% (their raw curves differ by 5-15%)."""
    from simcluster.llm.comm import Network
    from simcluster.llm.framework import TORCH_AMP
    from simcluster.llm.predict import predict_llm
    from simcluster.llm.spec import BatchSpec, ParallelSpec, TransformerSpec

    model = TransformerSpec(28, 3072, 8192, 24, 8, 128256, 2048, tied_embeddings=True)
    times = {}
    for card in (f"{gpu}-sxm", f"{gpu}-sxm-interleaved"):
        g, _ = load_gpu(ROOT / f"models/gpu/{card}.yaml")
        r = predict_llm(model, ParallelSpec(), BatchSpec(2, 2, "bf16"), g, Network(None, 1), 1, trace=False, framework=TORCH_AMP,
                        clock_model="duty")
        times[card] = r.step_time_s
        assert 0 < r.clock["compute_duty"] < 1 and r.clock["sm_clock_MHz"] <= 1980
        fixed = predict_llm(model, ParallelSpec(), BatchSpec(2, 2, "bf16"), g, Network(None, 1), 1, trace=False, framework=TORCH_AMP)
        assert fixed.clock == {} and fixed.step_time_s != r.step_time_s      # the default: the card's reference clock
    a, b = times.values()
    assert abs(a / b - 1) < 0.05


def test_scenario_clock_key_is_read_and_refused_where_the_card_has_no_clock(tmp_path):
    """machine.gpu.clock: fixed (default) or duty; duty on a card without a clock block (B200, carried) is a one-line
    error naming the key, and so is a value outside the choices; duty on a measured card reports the step's clock."""
    from simcluster.build import run_file
    from simcluster.errors import ScenarioError

    def scenario(card: str, clock: str | None):
        doc = {"name": "clock", "machine": {"card": str(ROOT / "models/collective/h200x4-nvlink.yaml"), "gpus_per_node": 8,
                                             "nodes": 1, "gpu": {"card": str(ROOT / card)}},
               "jobs": [{"kind": "llm_training", "model": {"layers": 4, "hidden": 4096, "ffn": 14336, "heads": 32, "kv_heads": 8,
                                                            "vocab": 128256, "seq": 4096},
                         "parallel": {"tp": 8}, "global_batch": 8, "micro_batch": 1}]}
        if clock is not None:
            doc["machine"]["gpu"]["clock"] = clock
        path = tmp_path / f"{clock}-{Path(card).stem}.yaml"
        path.write_text(yaml.safe_dump(doc))
        return path

    for clock, card in (("duty", "models/gpu/b200.yaml"), ("turbo", "models/gpu/h100-sxm.yaml")):
        with pytest.raises(ScenarioError, match=r"machine\.gpu\.clock"):
            run_file(scenario(card, clock))
    duty = run_file(scenario("models/gpu/h100-sxm.yaml", "duty"))[0].jobs[0].to_json()
    fixed = run_file(scenario("models/gpu/h100-sxm.yaml", None))[0].jobs[0].to_json()
    assert 1000 < duty["clock"]["sm_clock_MHz"] <= 1980 and fixed["clock"] == {}


def _random_step(rng):
    """A random valid card (idle + memory < cap, exponent 0.5-4) and a random step (C, M, T, compute part, bubble)."""
    f_max, cap = rng.uniform(1.0e9, 2.5e9), rng.uniform(300, 1000)
    idle = rng.uniform(0.05, 0.5) * cap
    card = ClockParams(f_max, f_max, cap, idle, rng.uniform(10, 5000), rng.uniform(0, 0.999) * (cap - idle), rng.uniform(0.5, 4),
                       rng.uniform(0, 1))
    step = rng.uniform(0.01, 2)
    c = rng.uniform(0, 1) * step
    m = rng.uniform(0, 1) * (step - c)
    part = c + m + rng.uniform(0, 1) * (step - c - m)
    return card, (c, m, step, part, rng.uniform(0, 1) * (step - part))


def _residual_Hz(card, f, c, m, step, part, bubble):
    return abs(f - settle_clock.demanded_Hz(card, f, c, m, step, 1.0 + bubble / part if part > 0 else 1.0))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_step_clock_is_self_consistent_on_random_valid_cards(seed):
    """The step's clock is a root of f - clock(duty(f)) (llm/clock.py settle) for any valid card and step: within
    [floor, f_max] and self-consistent to 1 kHz."""
    import random

    rng = random.Random(seed)
    for _ in range(300):
        card, step = _random_step(rng)
        f = settle_clock.settle(card, *step)
        assert card.floor_Hz <= f <= card.max_clock_Hz and _residual_Hz(card, f, *step) < 1e3


def test_step_clock_converges_where_plain_iteration_does_not_and_takes_the_highest_root():
    # found by a random scan: 200 steps of f -> clock(duty(f)) from f_max end 2.8 kHz from self-consistent (oscillating)
    card = ClockParams(1267.930115e6, 1267.930115e6, 836.2262, 318.1386, 2025.6856, 345.9520, 0.563188, 0.755045)
    step = (0.10240291, 0.80824274, 0.93767695, 0.93761111, 6.1029e-05)
    f, plain = settle_clock.settle(card, *step), card.max_clock_Hz
    for _ in range(200):
        plain = settle_clock.demanded_Hz(card, plain, *step[:3], 1.0 + step[4] / step[3])
    assert _residual_Hz(card, plain, *step) > 1e3 and _residual_Hz(card, f, *step) < 1e3
    # three self-consistent clocks (~213 MHz, ~1516 MHz and f_max): the controller, lowering the clock from f_max while
    # over the cap, stays at f_max, and so does settle
    card = ClockParams(1837.952361e6, 1837.952361e6, 798.7088, 385.7840, 3572.0058, 152.1739, 0.563011, 0.943542)
    step = (0.02319765, 0.09093466, 0.24181324, 0.12428946, 0.08490474)
    g = [f - settle_clock.demanded_Hz(card, f, *step[:3], 1.0 + step[4] / step[3]) for f in (1500e6, 1530e6)]
    assert g[0] * g[1] < 0 and settle_clock.settle(card, *step) == card.max_clock_Hz


def test_clock_stays_within_floor_and_max():
    steep = dataclasses.replace(C, exponent=0.5, compute_W=5000.0)
    # room 700 - 100 - 400 = 200 W: the unclamped clock 2 GHz x (200 / 5000)^2 = 3.2 MHz is below the 100 MHz floor
    assert steep.clock_Hz(1.0, 1.0) == steep.floor_Hz == pytest.approx(100e6)
    assert C.clock_Hz(0.0, 1.0) == C.max_clock_Hz and C.clock_Hz(1.0, 1.0) < C.max_clock_Hz


@pytest.mark.parametrize(("change", "key"), [({"memory_power": "4000W"}, "memory_power"), ({"memory_power": "559W"}, "memory_power"),
                                             ({"compute_power": "0W"}, "compute_power"), ({"exponent": 0.05}, "exponent"),
                                             ({"reference_duty": {"compute": 1.0, "memory": 0.9}}, "reference_duty"),
                                             ({"reference_clock": "1500MHz"}, "reference_clock")])
def test_card_whose_clock_cannot_meet_its_cap_or_reference_is_one_line(change, key):
    """Copies alone over the cap (idle 133.1 + memory >= cap 691.6 W), no compute power, an exponent outside [0.5, 4],
    a reference duty over 1, a reference clock that is not the clock of the reference duty: one line naming the key."""
    with pytest.raises(ModelCardError) as err:
        gpu_params(_card_with_clock(**change), "card.yaml")
    line = err.value.one_line()
    assert f"card.yaml: params.clock.{key}: " in line and "clock: clock" not in line and "\n" not in line
    gpu_params(_card_with_clock(memory_power="558W"), "card.yaml")     # idle + memory just below the cap: accepted


def _bundle_with_duty(tmp_path, duty) -> tuple[Path, list[dict]]:
    """A bundle of one full gpu-micro run (the H100 curves) with `duty` as its duty section (absent: None)."""
    doc = json.loads((ROOT / "calibration/h100x1-gpu-2026-11-23/gpu-micro/gpu-micro/stdout.txt").read_text())
    doc.pop("duty", None)
    if duty is not None:
        doc["duty"] = duty
    run = tmp_path / "gpu-micro" / "gpu-micro"
    run.mkdir(parents=True)
    (run / "stdout.txt").write_text(json.dumps(doc))
    runs = [{"tool": "gpu-micro", "run_id": "gpu-micro", "status": "ok", "path": "gpu-micro/gpu-micro"}]
    (tmp_path / "manifest.json").write_text(json.dumps({"runs": runs}))
    return run / "stdout.txt", runs


def _measured_duty() -> dict:
    return json.loads((ROOT / "calibration/h100x1-gpu-duty-2026-11-23/gpu-micro/gpu-micro/stdout.txt").read_text())["duty"]


def test_calibrate_fits_the_clock_block_when_the_run_has_a_duty_section(tmp_path):
    """A full gpu-micro run with its duty section (the default sections since the clock term): `calibrate` writes the
    curves and the clock block, referenced to the GEMMs' condition (back to back here: duty (1, 0))."""
    from simcluster.fit.gpu_card import bundle_cards

    _, runs = _bundle_with_duty(tmp_path, _measured_duty())
    problems = []
    card = bundle_cards(tmp_path, runs, {}, problems)["gpu-h100-sxm.yaml"]
    shipped = yaml.safe_load((ROOT / "models/gpu/h100-sxm.yaml").read_text())["params"]["clock"]
    made = card["params"]["clock"]
    assert {k: v for k, v in made.items() if k != "source"} == {k: v for k, v in shipped.items() if k != "source"} and not problems


def test_calibrate_writes_the_card_without_clock_when_the_duty_sweep_cannot_be_fitted(tmp_path):
    """A sweep that never reaches the power cap (every clock at max) cannot fit the clock: the card is written without a
    clock block and one line names the trace; no duty section: no clock block, no line."""
    from simcluster.fit.bundle import calibrate_bundle
    from simcluster.fit.gpu_card import bundle_cards

    duty = _measured_duty()
    for p in duty["points"]:
        p["sm_MHz"] = 1980.0
    path, _ = _bundle_with_duty(tmp_path / "uncapped", duty)
    result = calibrate_bundle(tmp_path / "uncapped")
    assert "clock" not in yaml.safe_load(result.documents["gpu-h100-sxm.yaml"])["params"] and len(result.problems) == 1
    line = result.problems[0]
    assert str(path) in line and "0 capped" in line and "without a clock block" in line and "\n" not in line
    _, runs = _bundle_with_duty(tmp_path / "none", None)
    problems = []
    assert "clock" not in bundle_cards(tmp_path / "none", runs, {}, problems)["gpu-h100-sxm.yaml"]["params"] and not problems


def test_calibrate_refuses_a_malformed_duty_section_naming_the_file(tmp_path):
    from simcluster.fit.bundle import calibrate_bundle
    from simcluster.fit.gpu_card import bundle_cards

    duty = _measured_duty()
    del duty["points"][3]["power_W"]
    path, runs = _bundle_with_duty(tmp_path, duty)
    with pytest.raises(TraceFormatError) as err:
        bundle_cards(tmp_path, runs, {}, [])
    assert str(path) in err.value.one_line() and "duty.points[3]: missing 'power_W'" in err.value.one_line()
    del duty["points"][3]
    for p in duty["points"]:
        p.pop("sm_MHz"), p.pop("power_W")
        p["clock_samples"] = 0          # nvidia-smi gave no samples: nothing to fit, not malformed
    path, runs = _bundle_with_duty(tmp_path / "nosmi", duty)
    problems = []
    assert "clock" not in bundle_cards(tmp_path / "nosmi", runs, {}, problems)["gpu-h100-sxm.yaml"]["params"]
    assert len(problems) == 1 and "no nvidia-smi samples" in problems[0] and str(path) in problems[0]
    with pytest.raises(CalibrationError, match="no nvidia-smi samples"):
        fit.duty_points(path)
    result = calibrate_bundle(tmp_path)   # the malformed one: no card, one line naming the file
    assert not result.documents and len(result.problems) == 1 and str(tmp_path / "gpu-micro/gpu-micro/stdout.txt") in result.problems[0]


@pytest.mark.parametrize("duty", ["x", "0.5", "1,0,0", "0.8,0.5", "-0.1,0", "1.5,0"])
def test_fit_cli_refuses_a_bad_reference_duty_in_one_line(tmp_path, duty, capsys):
    trace = _synthetic_trace(tmp_path, C)
    with pytest.raises(SystemExit) as exc:
        fit.main([str(trace), "--reference-duty", duty])
    assert exc.value.code == 2 and "--reference-duty" in capsys.readouterr().err
    assert fit.reference_duty("0.5,0.5") == (0.5, 0.5)


def test_fit_cli_card_and_output_errors_are_one_line(tmp_path, capsys):
    trace = _synthetic_trace(tmp_path, ClockParams(1.98e9, 1.98e9, 695.0, 130.0, 850.0, 380.0, 1.3, 0.4))
    card = ROOT / "models/gpu/h100-sxm.yaml"
    no_params, not_yaml = tmp_path / "no-params.yaml", tmp_path / "bad.yaml"
    no_params.write_text("kind: gpu\nname: x\n")
    not_yaml.write_text("kind: gpu\n  a: [\n")
    for args, said in (([str(tmp_path / "none.yaml"), str(tmp_path / "o.yaml")], "cannot read"),
                       ([str(no_params), str(tmp_path / "o.yaml")], "missing key 'params'"),
                       ([str(not_yaml), str(tmp_path / "o.yaml")], "not valid YAML"),
                       ([str(card), str(tmp_path / "no" / "dir" / "o.yaml")], "no such folder"),
                       ([str(card), str(tmp_path)], "cannot write")):
        assert fit.main([str(trace), "--card", args[0], "-o", args[1]]) == 2
        err = capsys.readouterr().err.strip()
        assert said in err and "\n" not in err and "Traceback" not in err
    assert not (tmp_path / "no").exists()
    out = tmp_path / "h100-clock.yaml"
    assert fit.main([str(trace), "--card", str(card), "-o", str(out)]) == 0
    assert load_gpu(out)[0].clock.power_cap_W == pytest.approx(695.0, rel=0.01)


def test_reference_clock_hint_gives_the_whole_refit_command():
    card = yaml.safe_load((ROOT / "models/gpu/h100-sxm.yaml").read_text())
    card["params"]["clock"]["reference_clock"] = "1000MHz"
    with pytest.raises(ModelCardError) as exc:
        gpu_params(card, "h100-sxm.yaml")
    assert "fit.gpu_clock TRACE --card CARD --reference-duty C,M -o OUT" in exc.value.one_line()
