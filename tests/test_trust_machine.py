"""The machine's trust rule (issue 41, session 52 trust52): a machine across NVLink domains of more than 8 GPUs, or one
that opts in to NCCL's tables by release (machine.nccl_tables: stated), makes every answer priced on its collectives
"unvalidated, no band" with the reason (trust/band.machine_shape_why, applied by trust_of through Regime.unvalidated):
predict collective, run (a sweep, a DDP step, an LLM step), predict training, and a sweep's stored row alike, text and
--json. The predicted numbers do not move; on a plain machine the band is the regime key's, as before."""

from __future__ import annotations

import copy
import json

import pytest
import yaml
from conftest import ROOT

from simcluster import build
from simcluster.build import run_scenario
from simcluster.report.results import render
from simcluster.scenario import load
from simcluster.trust.band import machine_shape_why, trust_of

MACHINE = {"card": str(ROOT / "models/collective/gb200-nvlink-derived.yaml"), "gpus_per_node": 4, "nodes": 2,
           "gpu": {"card": str(ROOT / "models/gpu/b200.yaml")},
           "nic": {"card": str(ROOT / "models/nic/ib-ndr-400g.yaml"), "per_node": 4, "via_cpu": True},
           "fabric": {"kind": "rail-optimized", "down_ports": 64, "spines": 32, "link_latency": "100ns",
                      "switch_latency": "600ns"}}
JOBS = [{"kind": "collective_sweep", "op": "all_reduce", "min_size": "1G", "max_size": "2G", "factor": 2},
        {"kind": "training", "workload": str(ROOT / "models/training/seed000-resnet18-224-b128.yaml"),
         "ddp": str(ROOT / "models/training/ddp-h200x4.yaml"), "dataset_samples": 50000, "epochs": 1},
        {"kind": "llm_training", "model": {"layers": 4, "hidden": 2048, "ffn": 8192, "heads": 16, "kv_heads": 8,
                                           "vocab": 32000, "seq": 2048},
         "parallel": {"tp": 4, "pp": 1, "dp": 0, "zero": 1}, "global_batch": 0, "micro_batch": 1}]
SHAPES = {"opt-in": {"nccl": "2.26.2", "nccl_tables": "stated"},          # 2 trays of 4 GPUs, 2.25.1's tables
          "racks": {"nodes": 36, "nvlink_domain": 72},                    # 2 NVL72 racks joined by the network
          "plain": {}}                                                    # 2 trays of 4 GPUs, the default tables
WHY = {"opt-in": "NCCL's tables opted in (2.25.1's tuner tables", "racks": "across NVLink domains of 72 GPUs"}


def _scenario(tmp_path, shape: str, llm_only: bool = False) -> str:
    machine = {**copy.deepcopy(MACHINE), **SHAPES[shape]}
    gpus = machine["nodes"] * machine["gpus_per_node"]
    jobs = copy.deepcopy(JOBS if "nvlink_domain" not in machine else JOBS[::2])   # no DDP job on an NVLink domain
    jobs = jobs[-1:] if llm_only else jobs
    jobs[-1]["parallel"]["dp"], jobs[-1]["global_batch"] = gpus // 4, 2 * gpus // 4
    path = tmp_path / f"{shape}.yaml"
    path.write_text(yaml.safe_dump({"name": shape, "machine": machine, "jobs": jobs}, sort_keys=False))
    return str(path)


def _validations(doc) -> list[dict]:
    """Every `validation` object of a result's JSON, wherever it sits."""
    if isinstance(doc, dict):
        return ([doc["validation"]] if "validation" in doc else []) + [v for x in doc.values() for v in _validations(x)]
    return [v for x in doc for v in _validations(x)] if isinstance(doc, list) else []


def _bands(doc) -> list:
    if isinstance(doc, dict):
        return [v for k, v in doc.items() if k.endswith("_band") and k != "gpu_in_band"] + [b for x in doc.values() for b in _bands(x)]
    return [b for x in doc for b in _bands(x)] if isinstance(doc, list) else []


def test_the_rule_is_the_machines():
    assert machine_shape_why(0, "") == machine_shape_why(8, "") == ""
    assert machine_shape_why(72, "").startswith("across NVLink domains of 72 GPUs (no held-out row of this shape")
    assert machine_shape_why(0, "2.25.1").startswith("NCCL's tables opted in (2.25.1's tuner tables")
    assert " and NCCL's tables opted in" in machine_shape_why(36, "2.30.3")


def test_the_regime_module_machine_models_may_import_holds_no_machine_rule():
    """Cold review B53 item 12 (mendB53): the import contract keeps machine_models off trust's band / table / rules but
    allows trust.regime (its link and GPU names); so the machine rule must not move there: regime defines no `*_why`
    function and reads no LARGE_DOMAIN_GPUS (the rule's threshold, trust/band.py)."""
    import ast
    import inspect

    from simcluster.trust import regime

    tree = ast.parse(inspect.getsource(regime))   # names the code uses (comments and docstrings may cite the rule)
    used = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)} | {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute)}
    assert not used & {"LARGE_DOMAIN_GPUS", "machine_shape_why", "domain_gpus_across"}
    assert not [n for n, f in vars(regime).items() if callable(f) and n.endswith("_why")]


@pytest.mark.parametrize("shape", ["opt-in", "racks"])
def test_every_answer_of_run_on_the_machine_says_unvalidated_no_band(tmp_path, shape):
    """`simcluster run` (and predict training, which runs the same jobs): the collective sweep's rows, the DDP step (not
    modelled on NVLink domains: no such job on the racks) and the LLM step each say unvalidated with the reason and carry
    no band, in --json and in the text."""
    result = run_scenario(load(_scenario(tmp_path, shape)), simulate=False)
    assert len(result.jobs) == (3 if shape == "opt-in" else 2)
    for job in result.jobs:
        doc = job.to_json()
        found = _validations(doc)
        assert found and all(v["status"] == "unvalidated" and v["unvalidated_why"].startswith(WHY[shape])
                             and "measured_over_predicted_time" not in v for v in found), (type(job).__name__, found)
        assert all(b is None for b in _bands(doc)), type(job).__name__
        text = render(job)
        assert f"unvalidated, no band: {WHY[shape]}" in text and "80% band)" not in text, (type(job).__name__, text)


@pytest.mark.parametrize("shape", ["opt-in", "racks"])
def test_predict_collective_and_a_sweep_row_say_it_too(tmp_path, shape):
    from simcluster.predict_collective import sweep_from_scenario
    from simcluster.sweep.run import evaluate

    path = _scenario(tmp_path, shape)
    (swept,) = sweep_from_scenario(path, "all_reduce", "1G", "2G", 2, None)
    assert swept.machine_trust.unvalidated.startswith(WHY[shape])
    assert all(f"unvalidated, no band: {WHY[shape]}" in line for line in swept.trust_lines())
    sc = load(path)
    (row,) = evaluate([("h", {}, sc)])
    assert row["status"] == "ok", row.get("error")
    for i in range(len(sc.jobs)):
        where = f"jobs[{i}].rows[0]." if i == 0 else f"jobs[{i}]."     # a sweep's validation is per size
        assert row[where + "validation.status"] == "unvalidated", i
        assert str(row[where + "validation.unvalidated_why"]).startswith(WHY[shape]), i
        assert "validation.measured_over_predicted_time" not in str([k for k in row if k.startswith(where)]), i


def test_the_numbers_do_not_move_only_the_trust_statement(tmp_path, monkeypatch):
    """The rule marks the answers; every predicted number is the one the unmarked machine gives."""
    sc = load(_scenario(tmp_path, "racks"))
    marked = [job.to_json() for job in run_scenario(sc, simulate=False).jobs]
    monkeypatch.setattr(build, "machine_unvalidated", lambda machine: "")
    plain = [job.to_json() for job in run_scenario(sc, simulate=False).jobs]

    def numbers(doc):
        if isinstance(doc, dict):
            return {k: numbers(v) for k, v in doc.items() if k != "validation" and not k.endswith("_band")}
        return [numbers(x) for x in doc] if isinstance(doc, list) else doc

    assert json.dumps(numbers(marked), sort_keys=True) == json.dumps(numbers(plain), sort_keys=True)
    assert all(v["status"] != "unvalidated" or "unvalidated_why" not in v for v in _validations(plain))


def test_on_a_plain_machine_the_band_is_the_regime_keys(tmp_path):
    """Two trays of 4 GPUs, the default tables: no reason, and each answer's validation is its regime key's lookup (the
    band as before this rule), a band printed."""
    result = run_scenario(load(_scenario(tmp_path, "plain")), simulate=False)
    sweep, ddp, llm = result.jobs
    assert not sweep.machine_trust.unvalidated and not ddp.machine_trust.unvalidated and llm.prediction.regime.unvalidated == ""
    assert ddp.to_json()["validation"] == trust_of(ddp.trust.regime).to_json()
    assert llm.to_json()["validation"] == trust_of(llm.prediction.regime).to_json()
    for job in (sweep, ddp, llm):
        found = _validations(job.to_json())
        assert found and all("unvalidated_why" not in v and v.get("measured_over_predicted_time") for v in found)
        assert "no band" not in render(job)


def test_an_llm_step_on_gb200_trays_is_judged_as_gb200s_not_its_b200_cards(tmp_path, monkeypatch):
    """Cold review B53 item 6 (mendB53): on two trays of 4 GB200 (the b200 GPU card, the GB200 NVLink card) the LLM
    step's regime names the machine's GPU, GB200 (machine_models.machine_gpu, the one MachineTrust), as the sweep and
    the DDP step do. No validated llm regime holds B200 rows today, so (final read 53 item 4, mendF53) the test reads a
    synthetic table: the shipped one with TP | bf16's rows relabelled B200. The same job then reads `validated` on an
    HGX B200 machine (the b200 GPU card, the B200 NVLink card) and `extrapolated` on the GB200 trays (GB200 outside the
    rows' GPUs); with the mend reverted (the regime naming the b200 card's B200) the trays would read validated too."""
    import dataclasses

    from simcluster.trust import band
    from simcluster.trust.table import Table, load_table

    key = "llm | Megatron/NeMo | TP | bf16"
    shipped = load_table()
    synthetic = Table([dataclasses.replace(r, gpu="B200") if r.regime == key else r for r in shipped.residuals])
    assert synthetic.regimes[key].enough and set(synthetic.regimes[key].gpus) == {"B200"}
    monkeypatch.setattr(band, "load_table", lambda path=None: synthetic)
    job = {"kind": "llm_training", "model": {"layers": 4, "hidden": 4096, "ffn": 14336, "heads": 32, "kv_heads": 8,
                                             "vocab": 128256, "seq": 16384},
           "parallel": {"tp": 2, "pp": 1, "cp": 1, "dp": 4, "zero": 1}, "precision": "bf16", "global_batch": 4,
           "micro_batch": 1}     # llm | Megatron/NeMo | TP | bf16
    hgx = dict(copy.deepcopy(MACHINE), card=str(ROOT / "models/collective/b200-nvlink-derived.yaml"), gpus_per_node=8,
               nodes=1)
    found = {}
    for name, machine in (("gb200", copy.deepcopy(MACHINE)), ("hgx", hgx)):
        path = tmp_path / f"{name}.yaml"
        path.write_text(yaml.safe_dump({"name": name, "machine": machine, "jobs": [job]}, sort_keys=False))
        (llm,) = run_scenario(load(str(path)), simulate=False).jobs
        found[name] = (llm.prediction.regime.gpu, llm.to_json()["validation"])
    assert not [r for r in shipped.residuals if r.regime.startswith("llm") and r.gpu == "GB200"]
    (gpu, v), (hgx_gpu, h) = found["gb200"], found["hgx"]
    assert v["regime"] == h["regime"] == key, (v, h)
    assert (h["status"], h["gpu"], h["gpu_in_band"]) == ("validated", "B200", True), h
    assert (v["status"], v["gpu"], v["gpu_in_band"]) == ("extrapolated", "GB200", False), v
    assert (gpu, hgx_gpu) == ("GB200", "B200")


def test_a_plan_leaves_such_rows_out_and_says_why_where_they_are_ranked():
    """A plan (sweep rows flattened from the same answers): a row the machine's rule marks is left out unless
    --include-unvalidated, counted under its regime apart from unvalidated regimes; ranked, its line says no band and why."""
    from simcluster.plan import search
    from simcluster.report import html
    from simcluster.report.plan import answer_text

    why = machine_shape_why(72, "")
    row = {"status": "ok", "point_hash": "r", "cost.time_to_train_s": 50.0, "cost.total": 10.0, "cost.energy_kWh": 1.0,
           "jobs[0].tokens_per_s": 2e7, "jobs[0].validation.status": "unvalidated",
           "jobs[0].validation.regime": "llm | Megatron/NeMo | TP | bf16", "jobs[0].validation.rows": 0,
           "jobs[0].validation.sources": 0, "jobs[0].validation.unvalidated_why": why}
    plan = search.PlanSpec(None, 1e9, 100.0, ())
    left = search.answer([row], plan)
    assert left["excluded_machine_unvalidated"] == {"llm | Megatron/NeMo | TP | bf16": 1} and left["cheapest_within"] is None
    assert left["excluded_unvalidated"] == {}    # counted apart from unvalidated regimes (cold review A52 item 6)
    ranked = search.answer([row], plan, include_unvalidated=True)
    text = answer_text(ranked)
    assert (f"cheapest: unvalidated, no band: {why}; ranked at its predicted time (its regime has no band to rank by, "
            "nor has its family), regime llm | Megatron/NeMo | TP | bf16") in text, text
    page = html._answer(ranked)
    assert "Cheapest: unvalidated, regime llm | Megatron/NeMo | TP | bf16; no band: across NVLink domains of 72 GPUs" in page
    # it has no regime_band_not_applied to rank by: at its predicted time, and said so
    assert ranked["cheapest_within"]["pessimistic.rho"] == 1.0 and "ranked at its predicted time" in text, text


def _plan_file(tmp_path) -> str:
    """Cold review A52 item 1's reproduction: one 4-node H100 point stating NCCL 2.26.2, swept over
    machine.nccl_tables 2.28.3 / stated (tp 1 / 2): the two rows predict the same numbers."""
    doc = {"name": "plan-a52", "machine": {
        "card": str(ROOT / "models/collective/h200x4-nvlink.yaml"), "gpu": {"card": str(ROOT / "models/gpu/h100-sxm.yaml")},
        "gpus_per_node": 8, "nodes": 4, "nic": {"card": str(ROOT / "models/nic/roce-400g.yaml"), "per_node": 8},
        "fabric": {"kind": "rail-optimized", "down_ports": 64, "spines": 4, "link_latency": "100ns", "switch_latency": "600ns"},
        "host": {"cores": 112}, "nccl": "2.26.2"},
        "jobs": [{"kind": "llm_training", "model": {"layers": 32, "hidden": 4096, "ffn": 14336, "heads": 32, "kv_heads": 8,
                                                    "vocab": 128256, "seq": 8192},
                  "parallel": {"tp": 1, "pp": 1, "dp": 32, "zero": 1, "sequence_parallel": True},
                  "global_batch": 512, "micro_batch": 1}],
        "sweep": {"mode": "product", "keys": {"machine.nccl_tables": ["2.28.3", "stated"]}},
        "search": {"tp": [1, 2], "pp": [1], "micro_batch": [1], "zero": [1]},
        "plan": {"catalogue": str(ROOT / "scenarios/plans/catalogue-2026.yaml"),
                 "target": {"tokens": "50G", "within": "30d"}}}
    path = tmp_path / "plan.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return str(path)


def test_a_marked_row_ties_with_the_same_answer_with_a_band(tmp_path, capsys):
    """Cold review A52 item 1: with --include-unvalidated the opted-in row (marked, no band) and the plain row give the
    same numbers; both are ranked at the slow end of the same band (the plain row's, which the marked row's regime
    would have had), so they tie, as at 48976f09, and the marked row's line says which band ranked it."""
    from simcluster.cli import main

    out = tmp_path / "out"
    assert main(["plan", _plan_file(tmp_path), "-o", str(out), "--workers", "0", "--include-unvalidated"]) == 0
    printed = capsys.readouterr().out
    answer = json.loads((out / "plan.json").read_text())["answer"]
    rows = {r["param.machine.nccl_tables"]: r for r in answer["top_by_throughput"]}
    marked, plain = rows["stated"], rows["2.28.3"]
    assert marked["jobs[0].validation.unvalidated_why"].startswith("NCCL's tables opted in (2.25.1's")
    assert "jobs[0].validation.unvalidated_why" not in plain and plain["pessimistic.rho"] > 1.0
    assert marked["cost.total"] == plain["cost.total"]                       # the same numbers
    for key in ("pessimistic.rho", "pessimistic.cost", "pessimistic.time_to_train_s"):
        assert marked[key] == plain[key], key                                # so the same rank
    assert answer["feasible"] == 2 and answer["points_priced"] == 2
    picked = answer["fastest"]
    if picked["param.machine.nccl_tables"] == "stated":      # a tie, broken on the point's hash: the line says the band
        assert "ranked at the slow end of the family's pooled band" in printed, printed
    # without the opt-in flag the marked row is left out and counted apart from unvalidated regimes
    out2 = tmp_path / "out2"
    assert main(["plan", _plan_file(tmp_path), "-o", str(out2), "--workers", "0"]) == 0
    printed = capsys.readouterr().out
    left = json.loads((out2 / "plan.json").read_text())["answer"]
    assert left["excluded_machine_unvalidated"] == {"llm | Megatron/NeMo | TP | bf16": 1}
    assert "1 configurations on a machine unvalidated whatever the regime (its rule: no band)" in printed, printed


def test_nvl72_racks_rank_at_the_band_their_regime_would_have(tmp_path, monkeypatch):
    """Cold review A52 item 1, the project's own question (NVL72 racks vs HGX-like trays): a racks row is marked (no
    band) and ranked at the slow end of the band its regime key gives unmarked, never ahead of the same numbers with
    that band; a tray row keeps its own band."""
    from simcluster.plan import search
    from simcluster.plan.trust import pessimistic
    from simcluster.sweep.run import evaluate

    def llm_row(shape):
        (row,) = evaluate([(shape, {}, load(_scenario(tmp_path, shape, llm_only=True)))])
        assert row["status"] == "ok", row.get("error")
        base = row["jobs[0].step_time_s"] * 1e4
        return dict(row, **{"cost.time_to_train_s": base, "cost.total": base / 3600 * 6.0, "cost.energy_kWh": 1.0})

    racks = llm_row("racks")
    why = racks["jobs[0].validation.unvalidated_why"]
    assert why.startswith(WHY["racks"]) and "jobs[0].validation.measured_over_predicted_time" not in racks
    monkeypatch.setattr(build, "machine_unvalidated", lambda machine: "")
    same = dict(llm_row("racks"), point_hash="same")          # the racks' numbers with the band its key gives
    tray = llm_row("plain")
    slow = json.loads(same["jobs[0].validation.measured_over_predicted_time"])[1]
    assert json.loads(racks["jobs[0].validation.regime_band_not_applied"])[1] == pytest.approx(slow, abs=1e-4)
    assert slow > 1.0 and pessimistic(racks)["pessimistic.rho"] == pytest.approx(slow, abs=1e-4)
    assert tray["jobs[0].validation.measured_over_predicted_time"] and "jobs[0].validation.unvalidated_why" not in tray
    plan = search.PlanSpec(None, 1e9, 1e12, ())
    assert pessimistic(racks)["pessimistic.cost"] == pessimistic(same)["pessimistic.cost"]      # a tie, never ahead
    a = search.answer([racks, same, tray], plan, include_unvalidated=True)
    assert a["points_priced"] == 3 and {r["pessimistic.rho"] for r in a["top_by_throughput"]} >= {pessimistic(same)["pessimistic.rho"]}


def test_a_stated_release_on_the_default_tables_is_not_marked(tmp_path):
    """Cold review A52 item 4: machine.nccl_tables: stated with NCCL 2.28.3 (or one before 2.23) runs the default's
    tables, so its numbers are the plain machine's: nothing is marked; 2.26.2 (2.25.1's tables) is."""
    from simcluster.collectives.nccl_versions import NcclRelease
    from simcluster.predict_collective import sweep_from_scenario

    assert NcclRelease((2, 28, 3), "stated").opted_in == NcclRelease((2, 21, 5), "stated").opted_in == ""
    assert NcclRelease((2, 28, 7), "stated").opted_in == "2.28.7"
    SHAPES["default-stated"] = {"nccl": "2.28.3", "nccl_tables": "stated"}
    try:
        path = _scenario(tmp_path, "default-stated")
    finally:
        del SHAPES["default-stated"]
    (swept,) = sweep_from_scenario(path, "all_reduce", "1G", "2G", 2, None)
    (plain,) = sweep_from_scenario(_scenario(tmp_path, "plain"), "all_reduce", "1G", "2G", 2, None)
    assert swept.machine_trust.unvalidated == "" and swept.trust_lines() == plain.trust_lines()
    assert not any("tuner tables" in n for n in swept.notes), swept.notes
    assert [p.time_s for p in swept.predictions] == [p.time_s for p in plain.predictions]


def test_a_marked_answers_json_carries_no_band_evidence(tmp_path):
    """Cold review A52 item 6: a marked answer's validation has rows and sources 0 and no GPU coverage (nothing reads as
    a band); the band not applied is named with the rows behind it; the text says the machine's rule, not a shape."""
    result = run_scenario(load(_scenario(tmp_path, "opt-in", llm_only=True)), simulate=False)
    (job,) = result.jobs
    v = job.to_json()["validation"]
    assert v["rows"] == v["sources"] == 0 and not {"gpu_in_band", "gpu", "gpus_of_rows", "band_from"} & set(v), v
    assert len(v["regime_band_not_applied"]) == 2 and "held-out" in v["regime_band_not_applied_from"], v
    text = render(job)
    assert "not applied (the machine's rule)" in text and "does not see this shape" not in text, text
