"""Scale-out losses: what a step loses as the job grows, each its own term of the breakdown.

**Stragglers** (`stragglers`): a step waits for its slowest GPU.

Every GPU of a data-parallel job meets the others at least once a step (the gradient reduction; ZeRO's parameter
gathers; a pipeline's sends), so the step's compute runs at the pace of the slowest of the N GPUs. With GPU speeds
spread around their mean with a coefficient of variation s (manufacturing and power-management variability of one
SKU, the OS and clock jitter of a step), the expected slowest of N is the mean plus s times the expected maximum of N
standard normal draws, m(N) = integral of x N phi(x) Phi(x)^(N-1) dx (m(1) = 0):

    T_stragglers = s m(N) T_compute            (added to the step as its own term, `stragglers`)

m grows like sqrt(2 ln N): 0.56 at 2 GPUs, 1.42 at 8, 2.59 at 128, 3.44 at 2,048, 3.97 at 16,384, so the per-GPU
throughput a job loses per doubling shrinks slowly with N. `s` is fitted on the per-GPU throughput ratios of one
published weak-scaling series and checked on the others (studies/scaleout_fit.py, docs/models/llm.md, "Scale-out
losses"); a scenario sets its own with `machine.gpu.speed_spread`.

**OS jitter** (`os_jitter`): the host of every GPU loses short spells to daemons, interrupts and the framework's own
housekeeping (timers, logging, the Python garbage collector). Spells are rare and short, so a GPU's lost time per
step is modelled as exponential with mean J, and the step, which synchronises every GPU at its gradient reduction and
optimizer step, waits for the unluckiest host: E[max of N exponentials] = J H_N (H_N the N-th harmonic number, ~ ln N
+ 0.577; Petrini et al. 2003 and Hoefler et al. 2010 model system noise the same way, amplified by the max at each
collective). The loss against one GPU's own jitter:

    T_os_jitter = J (H_N - 1)                  (seconds per step, whatever the step's length)

so it is an absolute cost: a short step (FP8) loses a larger fraction than a long one (BF16) of the same job. J is
fitted together with s on the same series (studies/scaleout_fit.py).

**FP8 amax all-reduces** (`fp8_amax_sync`, session 43): Transformer Engine's delayed scaling
all-reduces the latest amax values over Megatron-Core's amax-reduction group (the stage's tensor x context x data-parallel
ranks) at the exit of each FP8 autocast region (one TransformerBlock: a micro-batch of one virtual stage) and in its
backward, so a step has 2 m v all-reduces over G = tp cp dp ranks, issued on the compute stream (the next GEMM
waits). Current scaling (a row's "fp8-cs", batch.fp8_scaling "current") has no such reduction and pays nothing.
Shipped ("nccl"): each costs the fabric model's price of one all_reduce of the region's amaxes (a few hundred
bytes: latency) over the stage's G contiguous ranks, nothing fitted:

    T_fp8_amax_sync = 2 m v f T_allreduce(G, AMAX_BYTES_PER_LAYER x layers per region)   ("nccl", f = AMAX_CALL_FACTOR = 1)

Two jitter forms, each point waiting for the unluckiest rank (reported by studies/scaleout_fit.py, not shipped: j fitted
on the fit source moves the absolute FP8 rows too far, docs/models/llm.md "Scale-out losses"):

    T_fp8_amax_sync = 2 m v j (H_G - 1)                        ("fixed": exponential delay of mean j per interval)
                    = 2 m v j sqrt(T_compute / (2 m v)) m(G)   ("white": normal delay of sd j sqrt(interval / 1 s))

**ECMP collisions and cross-group congestion** (`ecmp_collisions`, `cross_group_congestion`): the data- and
pipeline-parallel groups that cross nodes run their rings at once on the fabric, each flow pinned to one spine by the
per-flow hash (network/platform.py), all of them sharing the links max-min (llm/comm.py). Their exposed time E is
split by two counterfactuals solved on the same flows (collectives/ring_flows.concurrent_ring_flows, `spread`): r_h
the slowest group's rate as the hash places the flows (what the step is priced at), r_s the same with every leaf's
spine links pooled (ideal spreading: no collision), r_1 one group alone with ideal spreading:

    ecmp_collisions          = E (1 - r_h / r_s)          flows the hash puts on one link while another idles
    cross_group_congestion   = E (r_h / r_s - r_h / r_1)  the other groups' flows on the same links
    exposed_<group>_comm     = E r_h / r_1                what the group would take alone on an ideal fabric

(the exposed time taken as proportional to the network time; no parameter: the hash is the platform's). They move
the breakdown, not the step: the step already prices the hashed, shared rates.
"""

from __future__ import annotations

import functools
import weakref

import numpy as np

from simcluster.collectives.ring_flows import concurrent_ring_flows

SPEED_SPREAD = 0.0209     # s: fitted (studies/scaleout_fit.py) on llm-dgxc-benchmarking-v24.11.1-llama31-h100's ratios
OS_NOISE_S = 0.0          # J: fitted (studies/scaleout_fit.py) with s on the same series
AMAX_CALL_FACTOR = 1.0    # the shipped "nccl" form's factor on the priced all-reduce (unitless; 1: as priced, nothing fitted)
AMAX_SYNC_NOISE_S = 0.0   # j of the jitter forms only, seconds ("fixed") or seconds per sqrt(second) ("white"); fitted
                          # 105-140 us by studies/scaleout_fit.py, not shipped (docs/models/llm.md)
AMAX_SYNC_FORM = "nccl"   # "fixed": j (H_G - 1) per sync; "white": sd j sqrt(interval / 1 s) per interval; "nccl":
                          # AMAX_CALL_FACTOR x the all-reduce's own priced time per sync (module docstring); read once,
                          # by fp8_amax_s
AMAX_BYTES_PER_LAYER = 4 * 3 * 4   # the fp32 amaxes a layer's four FP8 GEMMs reduce in the forward (3 tensors each)
FITTED_ON = ("llm-dgxc-benchmarking-v24.11.1-llama31-h100",)   # its rows' scale term is in sample


@functools.lru_cache(maxsize=4096)
def expected_max_normal(n: int) -> float:
    """E[max of n standard normals] = integral of x n phi(x) Phi(x)^(n-1) dx, on a fine grid (1e-6 of the exact value
    up to 10^6 GPUs); 0 for n <= 1."""
    if n <= 1:
        return 0.0
    from scipy.special import log_ndtr  # log Phi (what scipy.stats.norm.logcdf calls; scipy.stats takes seconds to import)

    x = np.linspace(-8.0, 8.0, 16001)
    density = n * (np.exp(-x**2 / 2.0) / np.sqrt(2 * np.pi)) * np.exp((n - 1) * log_ndtr(x))
    return float(np.trapezoid(x * density, x))


def straggler_s(compute_s: float, gpus: int, spread: float = SPEED_SPREAD) -> float:
    """The time a step's compute loses waiting for the slowest of `gpus` GPUs."""
    return spread * expected_max_normal(int(gpus)) * compute_s


def os_jitter_s(gpus: int, noise_s: float | None = None) -> float:
    """The time a step loses waiting for the unluckiest of `gpus` hosts' jitter (mean `noise_s` per GPU and step):
    noise_s (H_N - 1)."""
    noise = OS_NOISE_S if noise_s is None else noise_s
    n = int(gpus)
    return noise * (float(np.sum(1.0 / np.arange(1, n + 1))) - 1.0) if n > 1 else 0.0


def amax_sync_s(syncs: int, group: int, noise_s: float | None = None, compute_s: float = 0.0,
                form: str = "nccl", call_s: float = 0.0, factor: float | None = None) -> float:
    """The time a step loses at Transformer Engine's delayed-scaling amax all-reduces (module docstring): `syncs` of
    them a step, each over `group` ranks. "nccl": `factor` (AMAX_CALL_FACTOR, unitless) x `call_s`, the priced
    all-reduce; the jitter forms, each waiting for the unluckiest rank: "fixed", an exponential delay of mean j
    (`noise_s`, AMAX_SYNC_NOISE_S) per rank and interval, syncs j (H_group - 1); "white", a normal one of sd
    j sqrt(interval / 1 s), the interval compute_s / syncs, so syncs j sqrt(compute_s / syncs / 1 s) m(group)."""
    n = int(group)
    if n <= 1 or syncs <= 0:
        return 0.0
    if form == "nccl":          # call_s: one amax all-reduce over the group, as the fabric prices it
        return syncs * (AMAX_CALL_FACTOR if factor is None else factor) * call_s
    j = AMAX_SYNC_NOISE_S if noise_s is None else noise_s
    if form == "white":
        return syncs * j * float(np.sqrt(compute_s / syncs)) * expected_max_normal(n)
    if form != "fixed":
        raise ValueError(f"scaleout.AMAX_SYNC_FORM: expected nccl, fixed or white, got {form!r}")
    return syncs * j * (float(np.sum(1.0 / np.arange(1, n + 1))) - 1.0)


def amax_call_s(net, group: int, gpus: int, layers_per_region: float) -> float:
    """One amax all-reduce's priced time (llm/comm.collective_s) over the stage's tp x cp x dp ranks (contiguous:
    Megatron's rank order puts pp outermost), AMAX_BYTES_PER_LAYER per layer of a region; 0 without a network."""
    if net is None or group <= 1:
        return 0.0
    from simcluster.llm import comm

    return comm.collective_s(net, comm.place("amax", group, 1, gpus, net), "all_reduce",
                             max(4.0, AMAX_BYTES_PER_LAYER * layers_per_region))


def fp8_amax_s(net, syncs: tuple[int, int], gpus: int, layers_per_region: float, compute_s: float,
               form: str | None = None) -> float:
    """The step's `fp8_amax_sync` term in `form` (AMAX_SYNC_FORM unless given: the one place it is read); `syncs`
    is amax_syncs' (all-reduces a step, ranks in each)."""
    form = AMAX_SYNC_FORM if form is None else form
    count, group = syncs
    if count <= 0 or group <= 1:
        return 0.0
    call = amax_call_s(net, group, gpus, layers_per_region) if form == "nccl" else 0.0
    return amax_sync_s(count, group, compute_s=compute_s, form=form, call_s=call)


def amax_syncs(batch, par, framework, micro_batches: int) -> tuple[int, int]:
    """(amax all-reduces a step, ranks in each) of Transformer Engine's delayed scaling under Megatron-Core: one at the
    exit of each FP8 autocast region (a TransformerBlock: one per micro-batch and virtual stage) and one in its
    backward, over the stage's tensor x context x data-parallel ranks; (0, 1) without fp8 or TE layers, and under
    current scaling (batch.fp8_scaling "current": TE's Float8CurrentScaling takes each tensor's amax as it casts it,
    with no amax history to reduce over the data-parallel group; what it does reduce, within the tensor-parallel
    group for sequence-parallel inputs, is left unpriced: docs/models/llm.md "Scale-out losses")."""
    if batch.precision != "fp8" or not framework.transformer_engine or batch.fp8_scaling != "delayed":
        return 0, 1
    return 2 * int(micro_batches) * par.virtual_stages, par.tp * par.cp * par.dp


def fabric_split(net, groups, breakdown: dict, gpus: int) -> dict:
    """The exposed data- and pipeline-parallel time split into what each group takes alone on an ideal fabric, ECMP
    collisions and cross-group congestion (module docstring): {breakdown key: seconds}, the keys' sum unchanged."""
    out = {"ecmp_collisions": 0.0, "cross_group_congestion": 0.0}
    if net.cluster is None:
        return out
    for group, key in ((groups.dp, "exposed_dp_comm"), (groups.pp, "exposed_pp_comm")):
        exposed = breakdown.get(key, 0.0)
        if group.inside_node or exposed <= 0:
            continue
        r_h, r_s, r_1 = split_rates(net.cluster, group, net.gpus_per_node, gpus)
        if not (r_h > 0 and r_s > 0 and r_1 > 0):
            continue
        r_s, r_1 = max(r_s, r_h), max(r_1, r_s, r_h)
        out["ecmp_collisions"] += exposed * (1 - r_h / r_s)
        out["cross_group_congestion"] += exposed * (r_h / r_s - r_h / r_1)
        out[key] = exposed * r_h / r_1
    return out


_RATES: dict[int, tuple] = {}   # id(cluster) -> (a weak reference to it, {group's layout: (r_h, r_s, r_1)}); an entry
                                # leaves when its cluster is collected (the reference's callback), before its id is reused


def split_rates(cluster, group, gpus_per_node: int, gpus: int) -> tuple[float, float, float]:
    """(r_h, r_s, r_1) of the slowest of a group kind's concurrent rings (module docstring): solved once per cluster
    and group layout (every point of a sweep that shares them asks again), since they depend on nothing else."""
    ident = id(cluster)
    entry = _RATES.get(ident)
    if entry is None or entry[0]() is not cluster:
        entry = _RATES[ident] = (weakref.ref(cluster, lambda _: _RATES.pop(ident, None)), {})
    key = (group.stride, group.size, group.ranks_per_node, gpus_per_node, gpus)
    if key not in entry[1]:
        sets = node_sets(group, gpus_per_node, gpus)
        hashed = concurrent_ring_flows(cluster, sets)
        slowest = min(range(len(sets)), key=lambda i: hashed[i].node_rate_Bps)
        entry[1][key] = (hashed[slowest].node_rate_Bps,
                         concurrent_ring_flows(cluster, sets, spread=True)[slowest].node_rate_Bps,
                         concurrent_ring_flows(cluster, [sets[slowest]], spread=True)[0].node_rate_Bps)
    return entry[1][key]


def node_sets(group, gpus_per_node: int, gpus: int) -> list[np.ndarray]:
    """The node sets of every concurrent group of one kind, in ring order (as llm/comm.place lays them out: ranks
    `stride` apart, `ranks_per_node` of them per node)."""
    ranks = np.arange(gpus)
    base = ranks[(ranks // group.stride) % group.size == 0]
    sets = np.unique((base[:, None] + group.stride * np.arange(group.size)[None, :]) // gpus_per_node, axis=0)
    return list(sets[:, ::group.ranks_per_node])


def losses(compute_s: float, gpus: int, breakdown: dict, net=None, groups=None, speed_spread: float | None = None,
           os_noise_s: float | None = None, amax_s: float = 0.0) -> dict:
    """Every scale-out term of one step: {breakdown key: seconds}. `stragglers`, `os_jitter` and `fp8_amax_sync`
    (`amax_s`: fp8_amax_s's seconds) add to the step; the fabric split replaces exposed_dp_comm / exposed_pp_comm by
    their parts (the sum unchanged)."""
    out = {"stragglers": straggler_s(compute_s, gpus, SPEED_SPREAD if speed_spread is None else speed_spread),
           "os_jitter": os_jitter_s(gpus, os_noise_s), "fp8_amax_sync": amax_s}
    if net is not None and groups is not None:
        out.update(fabric_split(net, groups, breakdown, gpus))
    return out
