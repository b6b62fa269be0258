"""The LLM step's answers pinned to what the code gave before the one-pass restructuring (main 18e00da, issue 46; the
breakdown regenerated once when the fabric's scale-out terms split the exposed DP / PP time, step times unchanged):
every shipped LLM scenario's step time, throughput, memory and breakdown per variant, and the llama8b plan's every
point (step time, memory, cost) and its ranking (cheapest within the deadline, fastest, top 10). A refactor that
moves any of them by more than rel 1e-9 fails here; a deliberate model change regenerates the file and says why:
    python tests/test_llm_pinned.py     # rewrites tests/fixtures/llm_pinned.json from this checkout's code
"""

from __future__ import annotations

import io
import json
import math
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PINNED = Path(__file__).resolve().parent / "fixtures" / "llm_pinned.json"
SCENARIOS = ("llama405b-16k", "llama70b-splits", "deepseek-v3-ep", "moe-dispatch", "moe-ep-inside-vs-across", "eager-torch-2gpu",
             "gb200-nvl72-vs-hgx-b200", "gb200-nvl72-vs-hgx-b200-dense", "gpu-h100-h200-b200", "nic-400g-800g",
             "rail-vs-leaf-spine")
PLAN = ROOT / "scenarios" / "plans" / "llama8b.yaml"
REL = 1e-9


def scenario_answers(name: str) -> dict:
    """variant -> the step's numbers (every LLM job of the scenario file, in order)."""
    from simcluster.build import run_file

    out = {}
    for res in run_file(ROOT / "scenarios" / "llm" / f"{name}.yaml"):
        for i, job in enumerate(res.jobs):
            p = job.prediction
            out[f"{res.variant or 'base'}/{i}"] = {
                "step_time_s": p.step_time_s, "tokens_per_s": p.tokens_per_s, "mfu": p.mfu, "fits": p.fits,
                "memory_per_gpu_GiB": p.memory_per_gpu_GiB, "breakdown": p.breakdown, "critical_stage": p.critical_stage}
    return out


def _label(row: dict | None):
    return None if row is None else sorted((k, str(v)) for k, v in row.items() if k.startswith("param."))


def _key(row: dict) -> str:
    """A point's parameters, short: 'machine.gpu.card=b200|...|jobs[0].parallel.tp=2' without the prefixes."""
    return "|".join(f"{k.split('.')[-1]}={Path(v).stem if k.endswith('card') else v}" for k, v in _label(row))


def plan_answers(out: Path) -> dict:
    """Every point of the llama8b plan (keyed by its parameters) and the plan's ranking."""
    from simcluster.plan.search import run_plan

    result = run_plan(PLAN, out, workers=0, progress=io.StringIO())
    points = {_key(r): {k: r.get(k) for k in ("jobs[0].step_time_s", "jobs[0].tokens_per_s",
                                                           "jobs[0].memory_per_gpu_GiB.total", "cost.total")}
              for r in result.rows}
    a = result.answer
    return {"points": points, "skipped": result.skipped, "cheapest": _label(a["cheapest_within"]), "fastest": _label(a["fastest"]),
            "top": [_label(r) for r in a["top_by_throughput"]], "feasible": a["feasible"], "priced": a["points_priced"]}


def _close(got, want, where: str) -> None:
    if isinstance(want, dict):
        assert set(got) == set(want), f"{where}: keys {sorted(set(got) ^ set(want))}"
        for k in want:
            _close(got[k], want[k], f"{where}.{k}")
    elif isinstance(want, float) and not isinstance(got, bool):
        assert math.isclose(got, want, rel_tol=REL, abs_tol=1e-15), f"{where}: {got!r} != pinned {want!r}"
    else:
        assert got == want, f"{where}: {got!r} != pinned {want!r}"


def _pinned() -> dict:
    return json.loads(PINNED.read_text())


@pytest.mark.parametrize("name", SCENARIOS)
def test_shipped_llm_scenario_answers_are_pinned(name):
    _close(json.loads(json.dumps(scenario_answers(name))), _pinned()["scenarios"][name], name)


def test_llama8b_plan_points_and_ranking_are_pinned(tmp_path):
    got, want = json.loads(json.dumps(plan_answers(tmp_path / "plan"))), _pinned()["plan"]
    assert len(got["points"]) == len(want["points"]) == 716
    _close(got, want, "plan")


if __name__ == "__main__":
    import tempfile

    sys.path.insert(0, str(ROOT))
    with tempfile.TemporaryDirectory() as tmp:
        doc = {"scenarios": {name: scenario_answers(name) for name in SCENARIOS}, "plan": plan_answers(Path(tmp) / "plan")}
    PINNED.write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n")
    print(f"wrote {PINNED}")


def _same(a, b, where: str) -> None:
    assert a.critical_stage == b.critical_stage, where
    _close(list(b.stage_ends_s), list(a.stage_ends_s), f"{where} stage ends")
    _close(b.breakdown, a.breakdown, f"{where} breakdown")


@pytest.mark.parametrize("name", SCENARIOS)
def test_the_recurrence_gives_the_des_numbers_on_every_shipped_llm_scenario(name):
    """llm/maxplus.py (a sweep's points) against the DES (`simcluster run`), job by job, variant by variant."""
    from simcluster.build import _Context
    from simcluster.llm import comm
    from simcluster.llm.maxplus import evaluate_iteration
    from simcluster.llm.simulate import simulate_iteration
    from simcluster.llm.work import build_work
    from simcluster.scenario import load_variants

    for label, sc in load_variants(ROOT / "scenarios" / "llm" / f"{name}.yaml"):
        context = _Context(sc)
        net = context.llm_network()
        for job in sc.jobs:
            work = build_work(job.model, job.parallel, job.batch, context.gpu(), net, comm.groups(job.parallel, net),
                              job.framework_spec())
            des, rec = simulate_iteration(work, 0, False), evaluate_iteration(work)
            assert rec.events == 0 < des.events
            _same(des, rec, f"{name} {label}")


def _stage(f: float, b: float, chunks: int = 1, buckets=(0.3, 0.3, 0.2), gather: float = 0.0, gather_buckets: int = 0):
    from simcluster.llm.simulate import StageWork, Task

    def task(s, dp=0.0):
        return Task(s + dp, {"compute": s, "tp": 0.0, "cp": 0.0, "ep": 0.0, "dp": dp, "host": 0.0})
    return StageWork(tuple(task(f + 0.01 * c) for c in range(chunks)), tuple(task(b + 0.02 * c, 0.05) for c in range(chunks)),
                     tuple(buckets for _ in range(chunks)), tuple(gather for _ in range(chunks)), 0.4,
                     tuple(gather_buckets for _ in range(chunks)), tuple(0.01 for _ in range(chunks)))


@pytest.mark.parametrize("pp,chunks,m,flags,gather,gather_buckets", [
    (1, 1, 4, {}, 0.0, 0), (1, 1, 3, {"grads_every_micro_batch": True}, 0.5, 0), (2, 1, 4, {"p2p_s": 0.3}, 2.0, 4),
    (4, 2, 8, {"p2p_s": 0.05}, 0.7, 3), (4, 1, 6, {"p2p_s": 0.2, "blocking_p2p": True}, 0.3, 0),
    (3, 1, 5, {"p2p_s": 0.1, "dp_after_backward": True}, 0.4, 0), (4, 1, 6, {"p2p_s": 0.1, "gpipe": True}, 0.0, 0),
    (2, 3, 4, {"p2p_s": 0.01, "grads_every_micro_batch": True}, 1.5, 2),
    (1, 1, 4, {"grads_every_micro_batch": True, "grads_wait_each_backward": True}, 0.0, 0),
    (2, 2, 4, {"p2p_s": 0.05, "grads_every_micro_batch": True, "grads_wait_each_backward": True}, 0.0, 0),
    (4, 2, 8, {"p2p_s": 0.05, "torch_p2p": True}, 0.0, 0), (4, 2, 16, {"p2p_s": 0.3, "torch_p2p": True}, 0.7, 3),
    (2, 3, 4, {"p2p_s": 0.0, "torch_p2p": True}, 0.0, 0), (3, 2, 6, {"p2p_s": 0.1, "torch_p2p": True}, 0.4, 0)])
def test_the_recurrence_gives_the_des_numbers_on_every_schedule_feature(pp, chunks, m, flags, gather, gather_buckets):
    """Uneven stages, interleaving, ZeRO-2's per-micro-batch reductions (and torch DDP's, waited for after each
    backward), overlapped and waited gathers, blocking sends,
    reductions after the backward, GPipe, torch's lowered sends and receives on one NCCL stream per rank (torch_p2p): the
    recurrence's step, ends and breakdown are the DES's."""
    from simcluster.llm.maxplus import evaluate_iteration
    from simcluster.llm.simulate import PipelineWork, simulate_iteration

    stages = tuple(_stage(1.0 + 0.3 * (s == pp - 1), 2.0 + 0.1 * s, chunks, gather=gather, gather_buckets=gather_buckets)
                   for s in range(pp))
    work = PipelineWork(stages, m, **flags)
    _same(simulate_iteration(work, 0, False), evaluate_iteration(work), f"pp {pp} v {chunks} m {m} {flags}")
