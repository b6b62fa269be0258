"""Issue 45, limits before work: every DES `simcluster run` (and `storage simulate`) starts estimates its kernel events
first and refuses a run past --max-events before it starts, in one line naming the estimate and the flag; a normal run
under the same limit is not refused. The estimates are checked against the kernel's own count."""

import time
from pathlib import Path

import pytest
import yaml

from simcluster import engine
from simcluster.cli import main

ROOT = Path(__file__).resolve().parents[1]
MODELS = ROOT / "models"
LOW = "1e5"      # the lowest --max-events takes


def _err(capsys, argv) -> tuple[int, str]:
    start = time.process_time()
    code = main(argv)
    err = capsys.readouterr().err
    assert time.process_time() - start < 20
    return code, err


def _refused(code: int, err: str, what: str) -> None:
    assert code == 2 and err.count("\n") == 1, err
    assert what in err and "events to simulate, past the limit of 100,000 (--max-events)" in err, err


def _many_buckets_card(tmp_path) -> Path:
    card = yaml.safe_load((MODELS / "training/seed000-resnet18-224-b128.yaml").read_text())
    card["params"]["grad_bytes"] = [1024] * 40_000
    card["params"]["bucket_cap"] = "1KiB"
    path = tmp_path / "many-buckets.yaml"
    path.write_text(yaml.safe_dump(card))
    return path


def _training_scenario(tmp_path, workload: Path) -> Path:
    doc = yaml.safe_load((ROOT / "scenarios/seed000-resnet18-2servers.yaml").read_text())
    doc.pop("variants")
    for name in ("card",):
        doc["machine"][name] = str((ROOT / "scenarios" / doc["machine"][name]).resolve())
    doc["machine"]["nic"]["card"] = str((ROOT / "scenarios" / doc["machine"]["nic"]["card"]).resolve())
    doc["jobs"][0]["workload"] = str(workload)
    doc["jobs"][0]["ddp"] = str(MODELS / "training/ddp-h200x4.yaml")
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


def test_a_ddp_step_of_too_many_buckets_is_refused_before_it_runs(tmp_path, capsys):
    big = _training_scenario(tmp_path, _many_buckets_card(tmp_path))
    _refused(*_err(capsys, ["--max-events", LOW, "run", str(big), "--json"]), "gradient buckets on 1 simulated rank(s)")
    normal = _training_scenario(tmp_path, MODELS / "training/seed000-resnet18-224-b128.yaml")
    assert _err(capsys, ["--max-events", LOW, "run", str(normal), "--json"])[0] == 0


def test_a_storage_run_of_too_many_reads_is_refused_before_it_runs(capsys):
    args = ["storage", "simulate", "--workload", str(ROOT / "scenarios/workloads/unet3d_h100.yaml"),
            "--nvme", str(MODELS / "nvme/micron-9400-pro-7.68tb.yaml"), "--json"]
    _refused(*_err(capsys, ["--max-events", LOW, *args, "--accelerators", "8", "--steps", "60"]), "the loader's 60 steps x 8")
    assert _err(capsys, ["--max-events", LOW, *args, "--accelerators", "1", "--steps", "8"])[0] == 0


def test_a_chunk_level_collective_past_the_limit_is_refused_before_it_runs(tmp_path, capsys):
    doc = {"name": "des", "machine": {"card": str(MODELS / "collective/h200x4-nvlink.yaml"), "gpus_per_node": 4},
           "jobs": [{"kind": "collective_sweep", "op": "all_reduce", "min_size": "8G", "max_size": "8G", "engine": "des"}]}
    path = tmp_path / "des.yaml"
    path.write_text(yaml.safe_dump(doc))
    _refused(*_err(capsys, ["--max-events", LOW, "run", str(path), "--json"]), "a chunk-level all_reduce of")
    doc["jobs"][0].update(min_size="1M", max_size="1M")
    path.write_text(yaml.safe_dump(doc))
    assert _err(capsys, ["--max-events", LOW, "run", str(path), "--json"])[0] == 0


def test_the_job_des_of_too_many_checkpoints_is_refused_before_it_runs(monkeypatch):
    from simcluster.llm.goodput_des import simulate_job

    monkeypatch.setattr(engine, "MAX_EVENTS", 100_000)
    with pytest.raises(engine.EventLimitError, match=r"the job DES of 60,000 checkpoints .* past the limit of 100,000 "
                                                     r"\(--max-events\)"):
        simulate_job(6e4, 1.0, 0.0, 0.0, 1.0, 1e-9)
    assert simulate_job(1e3, 1.0, 0.0, 0.0, 1.0, 1e-9).checkpoints == 1000


@pytest.mark.parametrize("run", ["ddp", "storage", "goodput"])
def test_an_estimate_is_within_a_factor_of_two_of_the_kernel_count(run, tmp_path):
    """The estimate is what the refusal says: compared with the events the kernel then counts."""
    seen, estimates = [], []
    original_run = engine.Simulation.run

    def counting_run(self, until=None):
        out = original_run(self, until)
        seen.append(self.events_processed)
        return out

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(engine.Simulation, "run", counting_run)
        if run == "ddp":
            from simcluster.cards import load_ddp, load_training
            from simcluster.training import step

            mp.setattr(step, "expect_events", lambda events, *a, **k: estimates.append(events))
            w, _ = load_training(_many_buckets_card(tmp_path))
            step.simulate_step(w, 4, lambda size: 1e-5 + size / 1e10, load_ddp(MODELS / "training/ddp-h200x4.yaml")[0])
        elif run == "storage":
            from simcluster.storage import loader, questions

            mp.setattr(loader, "expect_events", lambda events, *a, **k: estimates.append(events))
            s = questions.setup(str(ROOT / "scenarios/workloads/unet3d_h100.yaml"),
                                str(MODELS / "nvme/micron-9400-pro-7.68tb.yaml"), steps=8)
            loader.simulate(s.workload, s.nvme, 4, 1, s.config)
        else:
            from simcluster.llm import goodput_des

            mp.setattr(goodput_des, "expect_events", lambda events, *a, **k: estimates.append(events))
            goodput_des.simulate_job(2e4, 1.0, 0.1, 0.5, 5.0, 1e-2)
    assert len(estimates) == 1 and len(seen) == 1
    assert 0.5 < seen[0] / estimates[0] < 2.0, (seen, estimates)


def test_a_ddp_step_with_an_input_pipeline_counts_its_repeated_steps(capsys):
    """The host-cores what-if runs the step with an input pipeline (up to MAX_STEPS steps per run, fewer once the step
    settles): each estimate bounds what the kernel then counts from above, the longest run reaching a quarter of it
    (a second read found the estimate 7.5x under before it counted the repeats)."""
    from simcluster.cli import main
    from simcluster.training import step

    seen, estimates = [], []
    original_run, original_expect = engine.Simulation.run, step.expect_events

    def counting_run(self, until=None):
        out = original_run(self, until)
        seen.append(self.events_processed)
        return out

    def recording_expect(events, *args, **kwargs):
        estimates.append(events)
        return original_expect(events, *args, **kwargs)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(engine.Simulation, "run", counting_run)
        mp.setattr(step, "expect_events", recording_expect)
        assert main(["run", str(ROOT / "scenarios/whatif/host-cores.yaml")]) == 0
    capsys.readouterr()
    assert estimates and len(seen) == len(estimates)
    assert all(s <= e for s, e in zip(seen, estimates, strict=True)), (seen, estimates)
    assert max(seen) > max(estimates) / 4, (seen, estimates)
