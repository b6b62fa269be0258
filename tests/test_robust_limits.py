"""Issue 45: limits before work. Counts and sizes that would take minutes or gigabytes are refused when the input
is read, with one line naming the key and the limit."""

import pytest
import yaml
from conftest import ROOT

from simcluster.cli import main

MODELS = ROOT / "models"


def _scenario(tmp_path, nodes, gpus, nics, extra_job=None):
    doc = {"name": "limits", "machine": {"card": str(MODELS / "collective" / "h200x4-nvlink.yaml"), "gpus_per_node": gpus,
                                         "nodes": nodes, "nic": {"card": str(MODELS / "nic" / "roce-400g.yaml"), "per_node": nics},
                                         "fabric": {"kind": "leaf-spine"}},
           "jobs": [extra_job or {"kind": "qperf", "tests": ["tcp_bw"]}]}
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(doc))
    return str(path)


def _one_line(capsys, argv) -> str:
    code = main(argv)
    err = capsys.readouterr().err.strip()
    assert code == 2, err
    assert err.startswith("simcluster: error:") and "\n" not in err
    return err


@pytest.mark.parametrize("nodes,gpus,nics,expect", [
    (16384, 8, 16, "16384 nodes x 16 NICs is 262,144 NICs; at most 131,072"),
    (2, 8, 1024, "machine.nic.per_node: expected an integer from 1 to 64, got 1024")])
def test_nic_counts_are_bounded_before_the_fabric_is_built(tmp_path, capsys, nodes, gpus, nics, expect):
    assert expect in _one_line(capsys, ["run", _scenario(tmp_path, nodes, gpus, nics)])


def test_gradient_buckets_are_bounded_before_the_list_is_made():
    from simcluster.llm import comm
    from simcluster.llm.spec import LlmConfigError

    assert len(comm.buckets(405e9, 1)) == 10125                  # Llama 3 405B in Megatron's 40M buckets
    with pytest.raises(LlmConfigError, match=r"model.layers: 2e\+17 gradient parameters in buckets of 40,000,000 are more than 100,000"):
        comm.buckets(2e17, 1)                                    # 5e9 buckets: a MemoryError before the bound
    with pytest.raises(LlmConfigError, match="framework.bucket_params"):
        comm.buckets(405e9, 1, bucket_params=1)


def test_an_extreme_layer_count_is_refused_at_its_key(tmp_path, capsys):
    job = {"kind": "llm_training", "model": {"layers": 10**8, "hidden": 1024, "ffn": 4096, "heads": 16, "kv_heads": 8,
                                             "vocab": 32000, "seq": 2048},
           "parallel": {"tp": 4, "pp": 2, "dp": 2}, "global_batch": 16, "micro_batch": 1}
    path = _scenario(tmp_path, 4, 4, 4, job)
    doc = yaml.safe_load(open(path))
    doc["machine"]["gpu"] = {"card": str(MODELS / "gpu" / "h200-sxm.yaml")}
    open(path, "w").write(yaml.safe_dump(doc))
    assert "jobs[0].model.layers: expected an integer from 1 to 16,384, got 100000000" in _one_line(capsys, ["run", path])


def test_a_simulation_that_never_ends_is_refused_at_the_event_limit(monkeypatch):
    from simcluster import engine

    monkeypatch.setattr(engine, "MAX_EVENTS", 100_000)
    sim = engine.Simulation()

    def forever():
        while True:
            yield sim.timeout(1.0)

    sim.process(forever())
    with pytest.raises(engine.EventLimitError, match="passed 100,000 events without finishing .*--max-events"):
        sim.run()
    assert 100_000 < sim.events_processed <= 100_000 + 65_536


def test_max_events_is_checked_and_set(capsys, monkeypatch):
    from simcluster import engine

    monkeypatch.setattr(engine, "MAX_EVENTS", engine.MAX_EVENTS)
    assert "--max-events 10: expected 1e5 to 1e12" in _one_line(capsys, ["--max-events", "10", "run", "x.yaml"])
    from simcluster import build
    from simcluster.errors import SimclusterError

    seen = []

    def run_file(*args, **kwargs):
        seen.append(engine.MAX_EVENTS)
        raise SimclusterError("stopped here")

    monkeypatch.setattr(build, "run_file", run_file)
    before = engine.MAX_EVENTS
    main(["--max-events", "2e5", "run", "missing.yaml"])
    assert seen == [200_000]                   # the command ran under the limit given
    assert engine.MAX_EVENTS == before         # and the next one (in the same process) under the default again


def test_the_max_accelerators_search_stops_once_its_read_budget_is_spent(monkeypatch):
    import dataclasses

    from simcluster.errors import SimclusterError
    from simcluster.storage import accelerator_search, questions

    s = questions.setup(str(ROOT / "scenarios" / "workloads" / "unet3d_h100.yaml"),
                        str(MODELS / "nvme" / "micron-9400-pro-7.68tb.yaml"), steps=2)
    monkeypatch.setattr(accelerator_search, "MAX_SEARCH_IOS", 1)                  # spent by the first run
    every = dataclasses.replace(s.workload, au_threshold=0.0)        # every count meets it: the search would go on
    with pytest.raises(SimclusterError, match="the search simulated [0-9,]+ reads before trying 2 accelerators; at most 1 "):
        accelerator_search.max_accelerators(every, s.nvme, 1, s.config)


def test_an_llm_iteration_past_the_event_limit_is_refused_before_it_runs(tmp_path, capsys):
    job = {"kind": "llm_training", "model": {"layers": 8, "hidden": 1024, "ffn": 4096, "heads": 16, "kv_heads": 8, "vocab": 32000,
                                             "seq": 2048},
           "parallel": {"tp": 4, "pp": 2, "dp": 2}, "global_batch": 40_000_000, "micro_batch": 1}
    path = _scenario(tmp_path, 4, 4, 4, job)
    doc = yaml.safe_load(open(path))
    doc["machine"]["gpu"] = {"card": str(MODELS / "gpu" / "h200-sxm.yaml")}
    open(path, "w").write(yaml.safe_dump(doc))
    import time
    start = time.process_time()
    err = _one_line(capsys, ["run", path, "--json"])
    assert "20,000,000 micro-batches on 2 pipeline stages: about 320,000,000 events" in err and "--max-events" in err
    assert time.process_time() - start < 10      # refused from the estimate, not after 100 M events


def test_a_ddp_step_log_appended_to_over_and_over_is_refused_before_it_is_read(tmp_path):
    from simcluster.errors import TraceFormatError
    from simcluster.training import workload

    log = ROOT / "calibration" / "h200x4-collect-2026-11-22" / "ddp-step" / "resnet18-32-b128" / "stdout.txt"
    line = next(x for x in log.read_text().splitlines() if x.strip())
    path = tmp_path / "stdout.txt"
    path.write_text((line + "\n") * 5000)      # the long fuzz run's one timeout: calibrate spent > 20 s fitting these
    with pytest.raises(TraceFormatError, match="5,000 ddp-step records; at most 1,000 are read"):
        workload.read_runs(path)
    path.write_text((line + "\n") * 3)
    assert len(workload.read_runs(path)) == 3
