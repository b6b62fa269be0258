"""predict_llm: one training iteration of a transformer on a machine -> LlmResult.

Model FLOPs per step (the standard count, no recomputation, embedding lookups excluded):
  F = 3 T (2 N_mm + c 4 L s h),   T = global_batch x seq tokens,
  N_mm = L (attention + active MLP weights) + V h (LM head),  c = 1/2 for causal attention
("6 N T + attention, causal", the default), c = 1 for the Megatron-LM papers' convention (Narayanan et al.
2021: 72 B s l h^2 (1 + s / 6h + V / 12 l h) for a 4h MLP). tflops_per_gpu = F / step_time / GPUs;
mfu = tflops_per_gpu / the card's dense bf16 peak.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from simcluster.llm import attention_kernels, clock, comm, eager_ac, host_bound, hsdp, launch_backlog, scaleout
from simcluster.llm.caveats import caveats, notes
from simcluster.llm.framework import MEGATRON, FrameworkSpec
from simcluster.llm.maxplus import evaluate_iteration
from simcluster.llm.memory import memory_per_gpu
from simcluster.llm.simulate import simulate_iteration
from simcluster.llm.spec import BatchSpec, ParallelSpec, TransformerSpec
from simcluster.llm.spec_check import check, check_framework, check_model_framework
from simcluster.llm.work import build_work
from simcluster.perfetto import chrome_trace
from simcluster.trust.band import annotate
from simcluster.trust.regime import llm_regime_of

CONVENTIONS = ("causal", "megatron")


def model_flops_per_step(model: TransformerSpec, batch: BatchSpec, convention: str = "causal") -> float:
    if convention not in CONVENTIONS:
        raise ValueError(f"convention must be one of {CONVENTIONS}")
    h, s = model.hidden, model.seq
    k = model.mlp_matrices
    mlp = k * h * (model.expert_ffn * model.top_k + model.shared_expert_ffn) + h * model.experts if model.moe else k * h * model.ffn
    attn = model.attention_params()
    moe_layers = model.moe_layers if model.moe else model.layers
    n_mm = moe_layers * (attn + mlp) + (model.layers - moe_layers) * (attn + model.dense_mlp_params()) + model.vocab * h
    n_mm += model.mtp_layers * (attn + mlp + 2 * h * h + model.vocab * h)    # MTP: layer, projection, the shared head
    layers = model.layers + model.mtp_layers
    core = model.heads * (model.head_dim + model.value_dim) / 2            # = h for a plain decoder
    c = 0.5 if convention == "causal" else 1.0
    share = model.window_share        # sliding-window layers: window_keys keys per query (either convention)
    keys = (1 - share) * c * s + share * model.window_keys
    return 3.0 * batch.global_batch * s * (2 * n_mm + 4 * layers * keys * core)


@dataclass(frozen=True)
class LlmResult:
    step_time_s: float
    tokens_per_s: float
    tflops_per_gpu: float
    mfu: float
    memory_per_gpu_GiB: dict
    fits: bool
    breakdown: dict
    events: int
    gpus: int
    micro_batches: int
    model_flops_per_step: float
    flops_convention: str
    parameters: int
    gpu: str
    groups: dict
    critical_stage: int
    framework: str = "megatron"
    clock: dict = field(default_factory=dict)   # the step's SM clock and duty cycle (llm/clock.py); {} without a clock model
    caveats: list = field(default_factory=list)   # what is known about this class of prediction's accuracy (llm/caveats.py)
    notes: list = field(default_factory=list)     # what the configuration implies (llm/caveats.notes)
    timeline: dict = field(default_factory=dict, repr=False, compare=False)
    regime: object = None                         # trust/regime.py's Regime: the class whose held-out residuals bound it
    host_share: float | None = None               # the share of the step that moves with the host's speed (llm/host_bound.py);
                                                  # None where the framework prices no host
    flag_host_share: float | None = None          # where it prices none: the share the host-bound flag was read from,
    flag_host_folder: str | None = None           # the default host fits' (host_bound.flag_framework) and their folder

    @property
    def status(self) -> str:
        """'ok', or 'does_not_fit': the configuration cannot start (its times are what it would take if it fit)."""
        return "ok" if self.fits else "does_not_fit"

    @property
    def trust(self):
        from simcluster.trust.band import trust_of

        return trust_of(self.regime)

    def to_json(self, timeline: bool = False) -> dict:
        out = {k: getattr(self, k) for k in ("step_time_s", "tokens_per_s", "tflops_per_gpu", "mfu", "memory_per_gpu_GiB",
                                             "fits", "breakdown", "events", "gpus", "micro_batches", "model_flops_per_step",
                                             "flops_convention", "parameters", "gpu", "groups", "critical_stage", "framework", "clock",
                                             "caveats", "notes", "host_share",
                                             "flag_host_share", "flag_host_folder")}
        if timeline:
            out["timeline"] = self.timeline
        out["status"] = self.status
        if self.regime is not None:
            out = annotate(out, self.trust, times=("step_time_s",), rates=("tokens_per_s", "tflops_per_gpu", "mfu"))
        return json.loads(json.dumps(out))


def predict_llm(model: TransformerSpec, par: ParallelSpec, batch: BatchSpec, gpu, net: comm.Network,
                gpus: int | None = None, convention: str = "causal", seed: int = 0, trace: bool = True,
                framework: FrameworkSpec = MEGATRON, clock_model: str = "fixed", speed_spread: float | None = None,
                simulate: bool = True, os_jitter_s: float | None = None) -> LlmResult:
    """One iteration in one pass: the groups placed on the network (llm/comm.py, each collective priced once per group),
    the work of every stage from the GPU card and those times (llm/work.py), then the pipeline run: the DES
    (llm/simulate.py), or with `simulate` False and no trace the same schedule's max-plus recurrence (llm/maxplus.py:
    equal numbers, no timeline or event count), then the memory model. `gpu` and `net` are typed objects built at the
    edge (build.py); nothing here reads a file. clock_model "fixed" runs the GPU at its card's reference clock; "duty"
    at the step's own power-limited clock (llm/clock.py; the card needs a `clock:` block). `speed_spread`: the GPUs'
    speed spread behind the stragglers term, `os_jitter_s` the hosts' mean OS jitter per step behind the os_jitter
    term (llm/scaleout.py; None: their shipped defaults)."""
    check(model, par, batch, gpus)
    check_framework(par, framework, batch.precision)
    check_model_framework(model, framework)
    eager_ac.check_op(model, par)
    gpu = attention_kernels.for_kernel(gpu, framework.attention_kernel)   # the framework's own attention kernel
    g = comm.groups(par, net)
    run = simulate_iteration if simulate or trace else (lambda work, seed, trace: evaluate_iteration(work))
    info = {}
    if clock_model == "duty":   # the step's own clock: a first run at the card's reference clock
        def reference(card):
            w = build_work(model, par, batch, card, net, g, framework)
            return w.micro_batches, run(w, seed, False)
        gpu, info = clock.clocked(model, par, batch, gpu, framework, reference)
    work = build_work(model, par, batch, gpu, net, g, framework)
    it = launch_backlog.steady(work, lambda w: run(w, seed, trace)) if work.launch_backlog else run(work, seed, trace)
    if info:
        info = clock.report(info, model, par, batch, gpu, framework, work.micro_batches, it)

    def printed(r) -> tuple[float, dict]:   # the step as printed: the pipeline's plus the scale-out losses that add to it
        syncs = scaleout.amax_syncs(batch, par, framework, work.micro_batches)
        amax = scaleout.fp8_amax_s(net, syncs, par.gpus, model.layers / (par.pp * par.virtual_stages), r.breakdown["compute"])
        lost = scaleout.losses(r.breakdown["compute"], par.gpus, r.breakdown, net, g, speed_spread, os_jitter_s, amax)
        return r.step_time_s + lost["stragglers"] + lost["os_jitter"] + lost["fp8_amax_sync"], lost

    def share_of(fw: FrameworkSpec, step_s: float | None = None) -> float:   # llm/host_bound.py, on the printed step
        def printed_step(f: FrameworkSpec) -> float:   # the schedule's max-plus recurrence: the DES's numbers, no event queue
            w = build_work(model, par, batch, gpu, net, g, f)
            return printed(launch_backlog.steady(w, evaluate_iteration) if w.launch_backlog else evaluate_iteration(w))[0]
        return host_bound.host_share(printed_step(fw) if step_s is None else step_s, printed_step(host_bound.slower_host(fw)))

    step, losses = printed(it)
    share = share_of(framework, step) if host_bound.prices_host(framework) else None
    flag_fw = host_bound.flag_framework(framework, par)   # no host priced: the default fits' share, for the flag only
    flag_share = None if flag_fw is None else share_of(flag_fw)
    flag = host_bound.is_host_bound(share if flag_fw is None else flag_share)
    flops = model_flops_per_step(model, batch, convention)
    per_gpu = flops / step / par.gpus
    mem = memory_per_gpu(model, par, batch, gpu.hbm_capacity_bytes, framework)
    return LlmResult(step, batch.global_batch * model.seq / step, per_gpu / 1e12,
                     per_gpu / gpu.peak_flops["bf16"], mem.to_gib(), mem.fits, {**it.breakdown, **losses},
                     it.events + info.get("reference_run_events", 0), par.gpus,
                     work.micro_batches, flops, convention, model.parameter_count(), gpu.name, {**g.describe(), **hsdp.describe(par, net)},
                     it.critical_stage, framework.name, info, caveats(model, par, framework, gpu, batch.precision, share,
                                                                  share is None and flag, work.micro_batches),
                     notes(model, par), _timeline(model, par, it) if trace else {},
                     llm_regime_of(model, par, batch, framework.name, flag, gpu.name), share, flag_share,
                     None if flag_fw is None else host_bound.default_folder())


def _timeline(model: TransformerSpec, par: ParallelSpec, it) -> dict:
    return chrome_trace(f"{model.parameter_count() / 1e9:.1f}B on {par.gpus} GPUs, one pipeline", list(it.timeline))


def network_for(machine, intra, cluster=None) -> comm.Network:
    """What the collectives of a scenario machine run on: its collective card's model `intra` inside an NVLink domain (a
    node, or several nodes with machine.nvlink_domain) and its `cluster` (collectives/cluster.py) across domains, both
    built by the caller from the cards (build.py)."""
    if cluster is None and machine.domains > 1:
        raise ValueError(f"a machine of {machine.domains} NVLink domains needs its Cluster to place groups across them")
    return comm.Network(cluster.intra if cluster is not None else intra, machine.domain_gpus, cluster,
                        aligned=not machine.nvlink_domain)


def predict_llm_job(machine, job, gpu, net: comm.Network, trace: bool = True, simulate: bool = True,
                    where: str | None = None) -> LlmResult:
    """A scenario's `kind: llm_training` job on its machine: `gpu` the machine's GPU card (hardware/gpu.py's GpuParams)
    and `net` its network (network_for), loaded once at the edge; `where`: the scenario file, named by its errors."""
    from simcluster.errors import ScenarioError

    if machine.gpu_clock == "duty" and gpu.clock is None:
        raise ScenarioError(f"machine.gpu.clock: 'duty' needs a GPU card with a clock: block; {machine.gpu_card} has none",
                            where=where, hint="use clock: fixed, or a measured card (models/gpu/h100-sxm*.yaml, h200-sxm*.yaml)")
    try:
        return predict_llm(job.model, job.parallel, job.batch, gpu, net, machine.gpus_per_node * machine.nodes, trace=trace,
                           framework=job.framework_spec(), clock_model=machine.gpu_clock,
                           speed_spread=machine.gpu_speed_spread, simulate=simulate,
                           os_jitter_s=machine.os_jitter_s)
    except ScenarioError as exc:   # e.g. a group that does not tile the machine's NVLink domains (llm/comm.py)
        if exc.where:
            raise
        raise ScenarioError(exc.message, where=where, hint=exc.hint) from None
