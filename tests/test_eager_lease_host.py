"""Session 41 leasehost (issue 44): every rank's host issue in the runner (runner/host_issue.py) and the registered
lease-host set's read-out (validation/eager_lease_host.py) on synthetic bundles: the rule's parts each able to fail."""

from __future__ import annotations

import json
import shutil
import statistics

import pytest
import yaml
from conftest import ROOT, load_script

from simcluster.errors import SimclusterError
from simcluster.runner import host_issue

check = load_script(ROOT / "validation" / "eager_lease_host.py")
SHIPPED = ROOT / "calibration" / "h200x2-llm-host-2026-11-23"
SLOWER = 1.8   # the synthetic lease's host: every hidden-128 step 1.8x the shipped lease's


class _Dist:
    def __init__(self, others):
        self.others = others

    def all_gather_object(self, out, mine):
        out[:] = [mine, *self.others]


class _Torch:
    def __init__(self, others):
        self.distributed = _Dist(others)


def test_gather_records_every_ranks_issue_and_step_per_timed_step():
    rec = {"host_issue_s": [0.10, 0.12, 0.11], "step_times_s": [0.15, 0.16, 0.15]}
    other = {"host_issue_s": [0.14, 0.15, 0.13], "step_times_s": [0.15, 0.16, 0.15]}
    got = host_issue.gather(_Torch([other]), rec, 2)
    assert got["host_issue_s_by_rank"] == [rec["host_issue_s"], other["host_issue_s"]]
    assert got["step_times_s_by_rank"] == [rec["step_times_s"], other["step_times_s"]]
    assert got["host_issue_median_s_by_rank"] == [0.11, 0.14] and got["slowest_issue_rank"] == 1
    oom = host_issue.gather(_Torch([other]), {"status": "oom"}, 2)   # a rank without timed steps still joins the gather
    assert oom["host_issue_median_s_by_rank"] == [None, 0.14] and oom["slowest_issue_rank"] == 1
    alone = host_issue.gather(None, rec, 1)                          # single: no collective
    assert alone["host_issue_s_by_rank"] == [rec["host_issue_s"]] and alone["slowest_issue_rank"] == 0


def test_the_runner_gathers_after_the_timed_loop_for_every_shape():
    text = (ROOT / "simcluster" / "runner" / "llm_step.py").read_text()
    loop = text.index("host_cpu.timed_steps(step, sync, steps)")   # the timed loop (runner/host_cpu.py since session 42)
    call = text.index("host_issue.gather(torch, records[-1], world)")
    assert call > text.index("def main(") > loop   # in main, after run_shape returned: never inside the timed steps


def _host_runs(runs, scale=SLOWER):
    """The shipped lease's fsdp / ddp hidden-128 documents, every step `scale` x: a lease fit `scale` x the shipped."""
    runs.mkdir(parents=True)
    for path in [*SHIPPED.glob("fsdp-L*.json"), *SHIPPED.glob("ddp-L*.json")]:
        doc = json.loads(path.read_text())
        for s in doc["shapes"]:
            s["median_step_s"] *= scale
        (runs / path.name).write_text(json.dumps(doc))


def _process(path, median_ms, gap_ms, ranks=2, steps=10):
    """A process's run: rank 0's steps around median_ms; rank 1 issues slowest, ending gap_ms before its step."""
    step = [median_ms * (1 + 0.01 * (i - (steps - 1) / 2)) / 1e3 for i in range(steps)]   # median: median_ms
    issue = [[s - 0.030 for s in step], [s - gap_ms / 1e3 for s in step]][:ranks]
    shape = {"seq": 1, "micro_batch": 1, "status": "ok", "step_times_s": step, "median_step_s": statistics.median(step),
             "host_issue_s": issue[0], "host_issue_s_by_rank": issue, "step_times_s_by_rank": [step] * ranks}
    path.write_text(json.dumps({"model": {}, "shapes": [shape]}))


@pytest.fixture(scope="module")
def registered(tmp_path_factory):
    path = tmp_path_factory.mktemp("reg") / "registered.yaml"
    check.register(path)
    return path


def _bundle(tmp_path, registered, host=(1.00, 1.02, 0.99), gap=2.0, controls=1.0, scale=SLOWER):
    bundle = tmp_path / "set"
    bundle.mkdir()
    shutil.copy(registered, bundle / "registered.yaml")
    _host_runs(bundle / "runs", scale)
    for row in check.ROWS:
        pred = check.predict(row, bundle / "runs")["step_ms"]
        factors = host if row[0] == check.HOST_ROW else [controls] * row[5]
        for k, f in enumerate(factors, 1):
            _process(bundle / "runs" / f"{row[0]}-r{k}.json", pred * f, gap if row[0] == check.HOST_ROW else 40.0)
    return bundle


def test_registration_holds_the_gpu_path_kernels_and_the_conditional_grid(registered):
    doc = yaml.safe_load(registered.read_text())
    rows = {r["name"]: r for r in doc["rows"]}
    assert set(rows) == {r[0] for r in check.ROWS}
    h = rows[check.HOST_ROW]["predicted"]
    assert h["gpu_path_ms"] < h["shipped"]["step_ms"] and h["kernels"] > 1000
    grid = [h["grid_step_ms"][f"{c:g}"] for c in check.GRID_US]
    assert grid == sorted(grid) and grid[-1] > h["gpu_path_ms"] * 1.5   # the row crosses into the host within the grid


def test_the_device_script_runs_the_shipped_fits_decoder_first_then_every_registered_process():
    script = (check.BUNDLE / "device_run.sh").read_text()
    arch = "--hidden 128 --ffn 352 --heads 4 --kv-heads 2 --vocab 512 --tied no --shapes 128:1,512:1 --warmup 5 --steps 20"
    assert arch in (SHIPPED / "device_run.sh").read_text() and arch in script   # the lease's fit: the shipped fit's runs
    assert "for layers in 2 8 32; do guarded fsdp-L$layers" in script and "for layers in 2 32; do guarded ddp-L$layers" in script
    first_row = min(script.index(f"{row[0]}-r1 ") for row in check.ROWS)
    assert script.index("fsdp-L$layers") < first_row and script.index("ddp-L$layers") < first_row
    for row in check.ROWS:
        name, mode, preset, seq, mb, procs = row
        lines = [x for x in script.splitlines() if f"guarded {name}-r" in x]
        assert len(lines) == procs and all(x.endswith(f"--preset {preset} --shapes {seq}:{mb} --mode {mode}") for x in lines)


def test_the_rule_holds_on_a_host_bound_row_at_the_lease_fit(tmp_path, registered, capsys):
    out = check.read_out(_bundle(tmp_path, registered))
    check.show(out)
    printed = capsys.readouterr().out
    assert "HOST-BOUND HOLDS" in printed and "fsdp 80.38 us/kernel + 13.59 ms" in printed and check.HOST_ROW in printed
    v = out["verdict"]
    assert v["host_bound"].startswith("HOST-BOUND HOLDS") and v["controls"] == "CONTROLS HOLD"
    assert "the lease fit is what mattered" in v["lease_vs_shipped"]
    from simcluster.llm import eager

    with eager.leases_unread():   # the synthetic lease: SLOWER x the shipped folder's own runs (not the pooled fsdp term)
        own = eager.fit_modes(SHIPPED)["fsdp"]
    lease, shipped = out["fits"]["lease"]["fsdp"], out["fits"]["shipped"]["fsdp"]
    assert lease[0] == pytest.approx(SLOWER * own[0], rel=1e-6)
    assert shipped[0] == pytest.approx(eager.fit_modes(SHIPPED)["fsdp"][0]) != pytest.approx(own[0])   # the pooled term


@pytest.mark.parametrize("kw, part", [
    (dict(host=(1.15, 1.16, 1.14)), "vs lease-fit prediction"),    # the step off the lease-fit prediction
    (dict(gap=9.0), "ends 9.0 ms before its step"),                 # the slowest issue well under its step
])
def test_each_part_of_the_host_bound_rule_can_fail(tmp_path, registered, kw, part):
    v = check.read_out(_bundle(tmp_path, registered, **kw))["verdict"]
    assert v["host_bound"].startswith("HOST-BOUND FAILS") and part in v["host_bound"]


def test_a_control_off_its_prediction_fails_by_name(tmp_path, registered):
    v = check.read_out(_bundle(tmp_path, registered, controls=1.05))["verdict"]
    assert v["controls"].startswith("CONTROLS FAIL") and "ddp-1b-4096x3 +5.0%" in v["controls"]


def test_a_lease_like_the_shipped_one_says_the_fit_did_not_matter(tmp_path, registered):
    v = check.read_out(_bundle(tmp_path, registered, scale=1.0))["verdict"]
    assert "both fits predict it" in v["lease_vs_shipped"]


def test_missing_host_fit_runs_are_incomplete_and_a_moved_model_is_refused(tmp_path, registered):
    bundle = _bundle(tmp_path, registered)
    for path in (bundle / "runs").glob("fsdp-L*.json"):
        path.unlink()
    assert check.read_out(bundle)["verdict"]["host_bound"].startswith("INCOMPLETE")
    doc = yaml.safe_load((bundle / "registered.yaml").read_text())
    doc["rows"][0]["predicted"]["gpu_path_ms"] += 1.0
    (bundle / "registered.yaml").write_text(yaml.safe_dump(doc))
    with pytest.raises(SimclusterError, match="the model moved"):
        check.read_out(bundle)


def test_a_bad_run_file_is_dropped_by_name_and_the_cli_errors_in_one_line(tmp_path, registered, capsys):
    bundle = _bundle(tmp_path, registered)
    (bundle / "runs" / f"{check.HOST_ROW}-r3.json").write_text("{ truncated")
    out = check.read_out(bundle)
    assert any(f"{check.HOST_ROW}-r3.json" in d for d in out["dropped"])
    assert check.main([str(tmp_path / "nothing")]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "registered.yaml" in err[0]


@pytest.mark.parametrize("key, value", [("host_issue_s_by_rank", [None, None]),
                                        ("step_times_s_by_rank", [[0.1] * 9 + ["0.1"], [0.1] * 10]),
                                        ("step_times_s_by_rank", [[0.1] * 10, [0.1] * 9]),
                                        ("host_issue_s_by_rank", "0.1")])
def test_a_malformed_by_rank_list_is_one_line_naming_the_file_and_key(tmp_path, key, value):
    path = tmp_path / "run-r1.json"
    _process(path, 100.0, 2.0)
    doc = json.loads(path.read_text())
    doc["shapes"][0][key] = value
    path.write_text(json.dumps(doc))
    with pytest.raises(SimclusterError) as err:
        check.process(path)
    msg = str(err.value)
    assert "\n" not in msg and str(path) in msg and key in msg


def test_absent_by_rank_lists_give_no_gap_and_whole_ones_the_slow_ranks(tmp_path):
    path = tmp_path / "run-r1.json"
    _process(path, 100.0, 2.0)
    got = check.process(path)
    assert got["median_ms"] == pytest.approx(100.0) and got["gap_ms"] == pytest.approx(2.0)
    doc = json.loads(path.read_text())
    del doc["shapes"][0]["host_issue_s_by_rank"]
    path.write_text(json.dumps(doc))
    assert check.process(path)["gap_ms"] is None


def test_regime_framework_refuses_fits_it_would_ignore_or_override(tmp_path):
    """Cold read B 11b (session 41): `fits` replaces the H200 host fits; with an h100 label it was silently ignored,
    and beside an own_host folder it silently won. Both are one line now."""
    import pytest

    from simcluster.errors import SimclusterError
    from simcluster.heldout.eager_regimes import regime_framework

    with pytest.raises(SimclusterError, match="gpu label 'h100'"):
        regime_framework("ddp", "h100", fits={})
    with pytest.raises(SimclusterError, match="own_host"):
        regime_framework("ddp", "h200", own_host=tmp_path, fits={})
