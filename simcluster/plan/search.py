"""`simcluster plan`: a sweep of hardware (the `sweep:` section), for an LLM job a search over its parallelism
(`search:`), and the planning question (`plan:`): which configurations fit, how fast they train, what they cost.

    plan:
      catalogue: catalogue-2026.yaml      # prices and power (cost.py)
      target: {tokens: 1T, within: 30d}   # LLM: tokens to train; within: the deadline (training jobs: their own
                                          # dataset x epochs, `tokens` omitted)
    search:                               # LLM only: jobs[0].parallel and micro_batch, per hardware point
      tp: [1, 2, 4, 8]                    # must divide gpus_per_node (tensor parallelism stays inside a node)
      pp: [1, 2, 4]                       # must divide the layers
      micro_batch: [1, 2]
      zero: [1, 3]
      virtual_stages: [1]                 # optional (pp = 1 uses 1)
      recompute: [none, selective, full]  # optional: activation recomputation traded against memory (a base job's
                                          # recompute_modules go with selective only)
      ep: [8, 16, 32]                     # optional, MoE: expert parallelism (must divide the experts and dp x cp, or
                                          # dp x cp x tp with expert_tp 1: the reader refuses the rest, counted as skipped)
      moe_dispatcher: [alltoall, deepep]  # optional, MoE: the token dispatcher (llm/comm.py)
A base job with sequence_parallel: true keeps it wherever tp > 1 (it needs tensor parallelism).
dp = GPUs / (tp pp cp); global_batch must be a multiple of dp x micro_batch. Every candidate is then read by the
scenario reader (llm.spec_check.check: heads, kv heads, experts, pipeline schedule) and its per-GPU memory is computed
with llm.memory.memory_per_gpu (the function predict_llm uses): a refused or non-fitting candidate is counted,
not run. The rest run as a sweep (sweep/run.py) into OUT/results, are priced (cost.py) and ranked.
"""

from __future__ import annotations

import itertools
import math
from collections import Counter
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from simcluster import cost, strict
from simcluster.dotted import set_key
from simcluster.errors import ScenarioError, SimclusterError, UnitError
from simcluster.llm.spec import MOE_DISPATCHERS, RECOMPUTE
from simcluster.plan.trust import VALIDATION, band_value, pessimistic
from simcluster.sweep import run as sweep_run
from simcluster.sweep import spec as spec_module
from simcluster.sweep import store
from simcluster.units import parse_count

SEARCH_KEYS = ("tp", "pp", "micro_batch", "zero", "virtual_stages", "recompute", "ep", "moe_dispatcher", "cp")
NAMED = {"recompute": RECOMPUTE, "moe_dispatcher": MOE_DISPATCHERS}   # the keys whose values are names, not integers
MAX_CANDIDATES = 200_000


@dataclass(frozen=True)
class PlanSpec:
    catalogue: Path
    tokens: float | None
    within_s: float | None
    search: tuple[tuple[str, tuple], ...]      # (key, values): integers, recompute's names


@dataclass(frozen=True)
class PlanResult:
    summary: object                          # sweep_run.SweepSummary
    rows: list[dict]                         # every stored row, priced
    answer: dict
    skipped: dict = field(default_factory=dict)   # reason -> candidates not run


def read_plan(path: str | Path) -> tuple[spec_module.SweepFile, PlanSpec]:
    sweep = spec_module.read_sweep(path, sections=("sweep", "search", "plan"))
    r = _reader(sweep)
    if "plan" not in sweep.sections:
        r.fail("", "a plan file needs a 'plan:' section", hint="plan: {catalogue: FILE, target: {tokens: 1T, within: 30d}}")
    p = r.mapping(sweep.sections["plan"], "plan", {"catalogue", "target"}, set())
    t = r.mapping(p["target"], "plan.target", {"within"}, {"tokens"})
    catalogue = r.existing(p, "plan", "catalogue", "a hardware catalogue (kind: catalogue)")
    tokens = within = None
    try:
        tokens = parse_count(t["tokens"]) if "tokens" in t else None
    except UnitError as exc:
        r.fail("plan.target.tokens", exc.message)
    for i, job in enumerate(sweep.doc.get("jobs") or []):
        if isinstance(job, dict) and "train_tokens" in job:
            r.fail(f"jobs[{i}].train_tokens", "a plan trains plan.target.tokens at each point's steady-state goodput (closed "
                   "form); train_tokens would run the whole-job DES at every point", hint="remove train_tokens")
    try:
        within = cost.parse_duration(t["within"])
    except (ValueError, SimclusterError) as exc:
        r.fail("plan.target.within", getattr(exc, "message", str(exc)), hint="write e.g. 30d, 12h or 2w")
    if not within or within <= 0:
        r.fail("plan.target.within", "the deadline must be a positive duration")
    search: list[tuple[str, tuple]] = []
    if "search" in sweep.sections:
        s = r.mapping(sweep.sections["search"], "search", set(), set(SEARCH_KEYS))
        for key in SEARCH_KEYS:
            if key not in s:
                continue
            values = s[key]
            if key in NAMED:
                if not isinstance(values, list) or not values or any(not isinstance(v, str) or v not in NAMED[key] for v in values):
                    r.fail(f"search.{key}", f"expected a non-empty list of {', '.join(NAMED[key])}, got {strict.short(values)}")
            elif not isinstance(values, list) or not values or any(isinstance(v, bool) or not isinstance(v, int) for v in values):
                r.fail(f"search.{key}", f"expected a non-empty list of integers, got {strict.short(values)}")
            elif key == "zero" and any(v not in (0, 1, 2, 3) for v in values):
                r.fail("search.zero", f"expected ZeRO stages 0 to 3, got {strict.short(values)}")
            elif key != "zero" and any(v < 1 for v in values):
                r.fail(f"search.{key}", f"expected integers >= 1, got {strict.short(values)}")
            search.append((key, tuple(values)))
        jobs = sweep.doc.get("jobs")
        if not (isinstance(jobs, list) and len(jobs) == 1 and isinstance(jobs[0], dict) and jobs[0].get("kind") == "llm_training"):
            r.fail("search", "a parallelism search needs exactly one job, of kind llm_training")
        if tokens is None:
            r.fail("plan.target", "missing key 'tokens': an LLM plan trains a number of tokens (e.g. tokens: 1T)")
        searched = [k for k, _ in search if k in ("pp", "virtual_stages")]
        if searched and (jobs[0].get("parallel") or {}).get("pipeline_layout"):
            r.fail(f"search.{searched[0]}", "the base job's parallel.pipeline_layout fixes pp x virtual_stages; every other "
                   "split would be refused", hint="remove the layout from the base job, or this key from the search")
    return sweep, PlanSpec(catalogue, tokens, within, tuple(search))


def _reader(sweep):
    from simcluster.scenario_reader import ScenarioReader

    return ScenarioReader(sweep.path, sweep.lines)


def candidates(sweep: spec_module.SweepFile, plan: PlanSpec) -> tuple[list[spec_module.Point], Counter]:
    """The points to run, and how many candidates were not run, by reason."""
    skipped: Counter = Counter()
    hardware = spec_module.combinations(sweep.spec)
    if not plan.search:
        return spec_module.points(sweep, hardware), skipped
    job = sweep.doc["jobs"][0]
    par = job.get("parallel") or {}
    space = dict(plan.search)
    space.setdefault("tp", (par.get("tp", 1),))
    space.setdefault("pp", (par.get("pp", 1),))
    space.setdefault("micro_batch", (job.get("micro_batch", 1),))
    space.setdefault("zero", (par.get("zero", 0),))
    space.setdefault("virtual_stages", (par.get("virtual_stages", 1),))
    space.setdefault("recompute", (par.get("recompute", "none"),))
    moe_keys = [k for k in ("ep", "moe_dispatcher", "cp") if k in space]     # set on a candidate only when searched
    space.setdefault("ep", (par.get("ep", 1),))
    space.setdefault("moe_dispatcher", (par.get("moe_dispatcher", "alltoall"),))
    space.setdefault("cp", (par.get("cp", 1) if isinstance(par.get("cp", 1), int) else 1,))
    count = len(hardware) * math.prod(len(v) for v in space.values())
    if count > MAX_CANDIDATES:
        raise ScenarioError(f"{count:,} candidates; at most {MAX_CANDIDATES:,}", where=str(sweep.path),
                            hint="narrow the search or the sweep")
    out, seen = [], set()
    layers = (job.get("model") or {}).get("layers")
    batch = job.get("global_batch")
    for hw in hardware:
        doc = sweep.doc
        try:
            for k, v in hw:
                doc = set_key(doc, k, v)
        except ValueError:
            skipped["hardware point not settable"] += 1
            continue
        m = doc.get("machine") or {}
        per_node, nodes = m.get("gpus_per_node", 1), m.get("nodes", 1)
        if not all(isinstance(x, int) and not isinstance(x, bool) for x in (per_node, nodes, layers, batch)):
            out.append(spec_module.build_point(sweep, hw))   # the reader says what is wrong
            continue
        gpus = per_node * nodes
        domain = m.get("nvlink_domain") if isinstance(m.get("nvlink_domain"), int) else per_node   # GPUs on one NVLink fabric
        for tp, pp, mb, zero, vs, rc, ep, dispatcher, cp in itertools.product(*(space[k] for k in SEARCH_KEYS)):
            if tp < 1 or domain % tp:
                skipped["tp does not divide the GPUs of an NVLink domain"] += 1
                continue
            if pp < 1 or pp > layers:   # uneven stages are split as the scenario reader splits them (spec.layer_split)
                skipped["pp larger than the layers"] += 1
                continue
            if gpus % (tp * pp * cp):
                skipped["tp x pp x cp does not divide the GPUs"] += 1
                continue
            dp = gpus // (tp * pp * cp)
            if mb < 1 or batch % (dp * mb):
                skipped["global batch not a multiple of dp x micro-batch"] += 1
                continue
            vs = 1 if pp == 1 else vs
            sp = (("jobs[0].parallel.sequence_parallel", tp > 1),) if par.get("sequence_parallel") is True else ()
            params = hw + sp + (("jobs[0].parallel.tp", tp), ("jobs[0].parallel.pp", pp), ("jobs[0].parallel.dp", dp),
                           ("jobs[0].parallel.zero", zero), ("jobs[0].parallel.virtual_stages", vs), ("jobs[0].micro_batch", mb),
                           ("jobs[0].parallel.recompute", rc))
            params += tuple((f"jobs[0].parallel.{k}", {"ep": ep, "moe_dispatcher": dispatcher, "cp": cp}[k]) for k in moe_keys)
            point = spec_module.build_point(sweep, params)
            if point.hash in seen:
                continue
            seen.add(point.hash)
            if point.scenario is None:
                skipped[_reason(point.error)] += 1
                continue
            if not _fits(point.scenario):
                skipped["does not fit in GPU memory"] += 1
                continue
            out.append(point)
    return out, skipped


def _reason(line: str) -> str:
    """A reader error without its file:line (so equal reasons count together)."""
    text = line.split(": ", 1)[-1] if line and ".yaml:" in line.split(": ", 1)[0] else line
    return f"refused: {text}"


@lru_cache(maxsize=64)
def _gpu(path: str):
    from simcluster.hardware.gpu import load_gpu

    return load_gpu(path)[0]


def _fits(sc) -> bool:
    from simcluster.llm.memory import memory_per_gpu

    job = sc.jobs[0]
    gpu = _gpu(str(sc.machine.gpu_card))
    return memory_per_gpu(job.model, job.parallel, job.batch, gpu.hbm_capacity_bytes, job.framework_spec()).fits


def price(rows: list[dict], plan: PlanSpec) -> list[dict]:
    return cost.annotate(rows, cost.load_catalogue(plan.catalogue), plan.tokens)


def answer(rows: list[dict], plan: PlanSpec, top: int = 10, include_unvalidated: bool = False) -> dict:
    """The cheapest configuration that trains within the deadline, the fastest, and the top ones by throughput, each
    judged at the slow end of its 80% band (trust/band.py; a machine-marked row, which has none, at the slow end of the
    band its regime would have had: plan/trust.rho_high); unvalidated configurations are left out unless
    `include_unvalidated`, and counted by regime: those whose regime is unvalidated (`excluded_unvalidated`) apart from
    those whose machine's rule marks them whatever the regime (`excluded_machine_unvalidated`)."""
    ok = [pessimistic(r) for r in rows if r.get("status") == "ok" and r.get("jobs[0].fits") is not False and r.get("cost.time_to_train_s")]
    excluded: dict[str, int] = {}
    marked: dict[str, int] = {}       # its machine's rule (trust/band.machine_shape_why), whatever the regime
    if not include_unvalidated:
        kept = []
        for r in ok:
            if r.get(VALIDATION + "status") == "unvalidated":
                regime = str(r.get(VALIDATION + "regime") or "no regime")
                into = marked if r.get(VALIDATION + "unvalidated_why") else excluded
                into[regime] = into.get(regime, 0) + 1
            else:
                kept.append(r)
        ok = kept
    feasible = [r for r in ok if r["pessimistic.time_to_train_s"] <= plan.within_s]
    key = _throughput_key(ok)
    # exact ties broken by the configuration itself (store.configuration_key), never by the hash (it carries the code digest)
    tie = store.configuration_key
    cheapest = min(feasible, key=lambda r: (r["pessimistic.cost"], r["pessimistic.time_to_train_s"], tie(r)), default=None)
    fastest = min(ok, key=lambda r: (r["pessimistic.time_to_train_s"], r["pessimistic.cost"], tie(r)), default=None)
    ranked = sorted(ok, key=lambda r: (-(r.get(key) or 0.0) / r["pessimistic.rho"], r["pessimistic.cost"], tie(r)))[:top] if key else []
    return {"tokens": plan.tokens, "within_s": plan.within_s, "points_priced": len(ok), "feasible": len(feasible),
            "ranked_by": "the slow end of each configuration's 80% band (pessimistic.*)",
            "excluded_unvalidated": excluded, "excluded_machine_unvalidated": marked,
            "include_unvalidated": include_unvalidated,
            "cheapest_within": _brief(cheapest), "fastest": _brief(fastest), "throughput_key": key,
            "top_by_throughput": [_brief(r) for r in ranked]}


def _throughput_key(rows) -> str | None:
    for key in ("jobs[0].tokens_per_s", "jobs[0].samples_per_s"):
        if any(r.get(key) for r in rows):
            return key
    return None


def _brief(row: dict | None) -> dict | None:
    if row is None:
        return None
    keep = ("point_hash", "machine.gpus", "machine.nodes", "machine.gpu_card", "machine.nic_card", "jobs[0].step_time_s",
            "jobs[0].tokens_per_s", "jobs[0].samples_per_s", "jobs[0].mfu", "jobs[0].memory_per_gpu_GiB.total",
            "jobs[0].goodput_steady", "jobs[0].mtbf_s", "jobs[0].caveats",
            "cost.time_to_train_s", "cost.total", "cost.energy_kWh", "cost.per_hour", "cost.power_W", "cost.currency",
            "pessimistic.rho", "pessimistic.time_to_train_s", "pessimistic.cost", VALIDATION + "status", VALIDATION + "regime",
            VALIDATION + "rows", VALIDATION + "sources", VALIDATION + "outside", VALIDATION + "band_from",
            VALIDATION + "unvalidated_why", VALIDATION + "regime_band_not_applied", VALIDATION + "regime_band_not_applied_from")
    bands = {k: band_value(v) for k, v in row.items() if k.startswith("jobs[0].") and k.endswith("_band") and v is not None}
    counts = {k: int(row[k]) for k in (VALIDATION + "rows", VALIDATION + "sources") if isinstance(row.get(k), float)}
    return {**{k: v for k, v in row.items() if k.startswith("param.")}, **{k: row[k] for k in keep if row.get(k) is not None},
            **bands, **counts}


def run_plan(path: str | Path, out: str | Path, workers: int = 2, scheduler: str | None = None, progress=None,
             chunk: int | None = None, include_unvalidated: bool = False) -> PlanResult:
    """Read the plan, enumerate and run its points into OUT/results, price them and answer."""
    sweep, plan = read_plan(path)
    catalogue = cost.load_catalogue(plan.catalogue)      # a bad catalogue fails before any point runs
    pts, skipped = candidates(sweep, plan)
    for p in pts:                                         # ... and so does a card it does not price
        if p.scenario is not None:
            facts = sweep_run.machine_facts(p.scenario)
            cost.point_cost(catalogue, facts["machine.gpus"], facts["machine.gpu_card"], facts["machine.nics"],
                            facts["machine.nic_card"], facts["machine.nodes"], facts["machine.switches"], None)
    if not pts:
        raise SimclusterError("no candidate configuration is valid and fits in memory", where=str(sweep.path),
                              hint="; ".join(f"{n} {reason}" for reason, n in skipped.most_common(3)))
    kwargs = {"progress": progress} if progress is not None else {}
    summary = sweep_run.run(sweep, Path(out) / "results", points=pts, workers=workers, scheduler=scheduler, chunk=chunk,
                            extra_manifest={"plan_file": str(sweep.path)}, **kwargs)
    rows = price(store.rows(Path(out) / "results"), plan)
    wanted = {p.hash for p in pts}
    rows = [r for r in rows if r["point_hash"] in wanted]
    return PlanResult(summary, rows, answer(rows, plan, include_unvalidated=include_unvalidated), dict(skipped))
