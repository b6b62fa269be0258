"""Issue 43: every command's JSON carries its bands (`<key>_band` beside each predicted time or rate) and a `validation`
object (status, regime, rows; the axis outside the validated range when extrapolated): one test per command."""

import json
from pathlib import Path

import pytest
import yaml

from simcluster.cli import main
from simcluster.trust.band import STATUSES

ROOT = Path(__file__).resolve().parent.parent


def answers(doc):
    """Every dict of a JSON document that carries a `validation` object, with its path."""
    stack = [("", doc)]
    while stack:
        path, node = stack.pop()
        if isinstance(node, dict):
            if isinstance(node.get("validation"), dict):
                yield path, node
            stack += [(f"{path}.{k}", v) for k, v in node.items()]
        elif isinstance(node, list):
            stack += [(f"{path}[{i}]", v) for i, v in enumerate(node)]


def check_validation(v: dict, where: str) -> None:
    assert v["status"] in STATUSES, where
    assert isinstance(v["regime"], str) and " | " in v["regime"], where
    assert isinstance(v["rows"], int) and v["rows"] >= 0, where
    if v["status"] == "extrapolated":   # the axis outside, or (session 54, trust/targets) its rows miss the family's target
        assert v["outside"] and ("outside the validated" in v["outside"] or "target" in v["outside"]), where
    if v["status"] == "validated":
        assert v["rows"] >= 5 and v["sources"] >= 3 and "band_from" not in v, where


def check_bands(doc, required: tuple[str, ...]) -> int:
    """Each answer's validation object checked, and each of `required` present there with its `_band` sibling
    ([low, high] around the value, or None where the family was never checked). Returns the answers seen."""
    seen = 0
    for where, node in answers(doc):
        check_validation(node["validation"], where)
        for key in required:
            if key in node:
                band = node[f"{key}_band"]
                assert band is None or (0 < band[0] <= band[1]), (where, key, band)
                assert band is not None or node["validation"]["rows"] == 0, (where, key)   # None: never checked
        seen += 1
    return seen


def test_predict_training_ddp_json(capsys):
    assert main(["predict", "training", "--scenario", str(ROOT / "scenarios/seed000-resnet18-2servers.yaml"), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert check_bands(doc, ("step_time_s", "samples_per_s")) >= 1
    v = next(node for _, node in answers(doc))["validation"]
    assert v["regime"] == "ddp | data-parallel step | across nodes"      # 2 servers: the one-node rows do not cover it
    assert v["status"] != "unvalidated" or v["rows"] == 0 or "band_from" in v


def test_predict_training_llm_json_says_which_axis_is_outside(capsys):
    assert main(["predict", "training", "--scenario", str(ROOT / "scenarios/llm/llama405b-16k.yaml"), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert check_bands(doc, ("step_time_s", "tokens_per_s", "mfu")) == 1
    assert doc["validation"]["status"] == "extrapolated" and doc["validation"]["outside"].startswith("gpus 16384")
    assert doc["step_time_s_band"][0] < doc["step_time_s_band"][1]


def test_predict_collective_json_across_nodes_names_the_fabric(capsys):
    assert main(["predict", "collective", "--scenario", str(ROOT / "scenarios/whatif/100g-vs-400g.yaml"), "--op", "all_reduce",
                 "-b", "256M", "-e", "256M", "--json"]) == 0
    docs = json.loads(capsys.readouterr().out)
    assert sum(check_bands(d, ("time_s", "busbw_Bps")) for d in docs) == len(docs)
    for d in docs:
        regime = d["rows"][0]["validation"]["regime"]
        assert regime.split(" | ")[-1] in ("rdma-roce", "rdma-ib", "rdma-efa", "rdma", "tcp"), regime


def test_run_json_every_job_kind(capsys):
    for scenario in ("quickstart.yaml", "concurrent-jobs.yaml", "seed000-resnet18-2servers.yaml", "local-lab-qperf.yaml",
                     "llm/llama70b-splits.yaml"):
        assert main(["run", str(ROOT / "scenarios" / scenario), "--json"]) in (0, 3)
        doc = json.loads(capsys.readouterr().out)
        assert check_bands(doc, ("time_s", "busbw_Bps", "step_time_s", "samples_per_s", "tokens_per_s",
                                 "time_alone_s", "time_shared_s")) >= 1, scenario


def test_run_json_qperf_has_each_tests_transport(capsys):
    assert main(["run", str(ROOT / "scenarios/local-lab-qperf.yaml"), "--json"]) == 0
    job = json.loads(capsys.readouterr().out)["jobs"][0]
    assert set(job["validation_by_test"]) == set(job["predicted"]) == set(job["predicted_band"])
    assert {v["regime"] for v in job["validation_by_test"].values()} == {"transport | tcp"}


def test_storage_max_accelerators_json(capsys):
    assert main(["storage", "max-accelerators", "--workload", str(ROOT / "scenarios/workloads/unet3d_h100.yaml"), "--nvme",
                 str(ROOT / "models/nvme/micron-9400-pro-7.68tb.yaml"), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert check_bands(doc, ("throughput_Bps",)) == 1
    v = doc["validation"]
    assert v["regime"] == f"storage | unet3d | {doc['limit'] or 'simulated run'}"
    if v["status"] != "unvalidated":
        assert "validated_accelerators" in v


def test_storage_simulate_json(capsys):
    assert main(["storage", "simulate", "--workload", str(ROOT / "scenarios/workloads/unet3d_h100.yaml"), "--nvme",
                 str(ROOT / "models/nvme/micron-9400-pro-7.68tb.yaml"), "--accelerators", "2", "--steps", "8", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert check_bands(doc, ("throughput_Bps",)) == 1 and doc["validation"]["regime"].startswith("storage | unet3d | ")
    assert main(["storage", "simulate", "--workload", str(ROOT / "scenarios/workloads/unet3d_h100.yaml"), "--nvme",
                 str(ROOT / "models/nvme/micron-9400-pro-7.68tb.yaml"), "--accelerators", "2", "--steps", "8"]) == 0
    line = capsys.readouterr().out.strip().splitlines()[-1]
    assert line.strip().startswith("trust: measured time") and doc["validation"]["regime"] in line


def test_sweep_json_counts_the_statuses_and_stores_the_bands(tmp_path, capsys):
    from simcluster.sweep import store

    out = tmp_path / "res"
    assert main(["sweep", str(ROOT / "scenarios/plans/seed000-ddp.yaml"), "-o", str(out), "--workers", "0", "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    counts = summary["validation"]["status_counts"]
    assert set(counts) <= set(STATUSES) and sum(counts.values()) == summary["ok"] == 21
    rows = store.rows(out)
    assert all(r["jobs[0].validation.status"] in STATUSES and "jobs[0].step_time_s_band" in r for r in rows)


def _plan_70b(tmp_path) -> Path:
    """scenarios/plans/llama70b-1024-h100.yaml with a smaller search (the same 1,024 H100s)."""
    doc = yaml.safe_load((ROOT / "scenarios/plans/llama70b-1024-h100.yaml").read_text())
    doc["search"] = {"tp": [4, 8], "pp": [1, 4], "micro_batch": [1], "zero": [1, 3]}
    text = yaml.safe_dump(doc, sort_keys=False).replace("../../", str(ROOT) + "/")
    path = tmp_path / "plan.yaml"
    path.write_text(text.replace("catalogue: catalogue-2026.yaml", f"catalogue: {ROOT}/scenarios/plans/catalogue-2026.yaml"))
    return path


def test_plan_json_and_report_carry_bands_and_status(tmp_path, capsys):
    """Issue 43's headline: Llama-3-70B on 1,024 H100s is ranked in a validated regime, or the answer says none is."""
    out = tmp_path / "plan"
    assert main(["plan", str(_plan_70b(tmp_path)), "-o", str(out), "--workers", "0", "--json"]) == 0
    answer = json.loads(capsys.readouterr().out)["answer"]
    head = answer["cheapest_within"]
    if head is None:
        assert answer["excluded_unvalidated"]          # none validated: said, with what was left out
    else:
        assert head["jobs[0].validation.status"] in ("validated", "extrapolated")
        assert isinstance(head["jobs[0].validation.rows"], int) and head["jobs[0].validation.rows"] >= 5
        lo, hi = head["jobs[0].step_time_s_band"]
        rho = head["pessimistic.rho"]
        assert rho == pytest.approx(max(1.0, hi / head["jobs[0].step_time_s"]), rel=1e-4) and lo < hi   # rho rounded to 4 places
        assert head["pessimistic.time_to_train_s"] == pytest.approx(head["cost.time_to_train_s"] * rho)
    assert all(r["jobs[0].validation.status"] != "unvalidated" for r in answer["top_by_throughput"])
    page = (out / "report.html").read_text()
    assert "validation (80% band)" in page and ("Cheapest: validated" in page or "Left out:" in page)
    assert main(["report", str(out / "results"), "-o", str(tmp_path / "again.html")]) == 0
    assert "validation (80% band)" in (tmp_path / "again.html").read_text()
