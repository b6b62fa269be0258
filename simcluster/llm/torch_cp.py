"""Context parallelism as eager PyTorch runs it (issue 44): torch.distributed.tensor.experimental.context_parallel (torch
2.11), the llm-step runner's --mode cp (simcluster/runner/llm_cp.py), with DDP over the same ranks.

What torch does, read from its source (torch/distributed/tensor/experimental/_context_parallel/_attention.py and
_load_balancer.py, pytorch/pytorch at 09b101c5; docs/models/llm.md, "Context parallelism in eager PyTorch", says where):
  - the context manager shards its buffers (tokens, labels, the rotary tables) along the sequence over the cp ranks after
    the head-tail load balancer's reordering (_HeadTailLoadBalancer: rank r holds chunks r and 2c - 1 - r of 2c), and
    patches F.scaled_dot_product_attention so that q, k, v become DTensors sharded on the sequence and SDPA dispatches
    to _templated_ring_attention (flash, efficient and cuDNN ops; the runner runs flash: cuDNN's backward under CP
    fails its stride assert, pytorch/pytorch#176915, open; math is not supported, #147793)
  - rotate method: all-gather by default (_ContextParallelOptions.rotate_method = ALL_GATHER; set_rotate_method's
    docstring; torchtitan's default too): the forward gathers cat(K, V) of every rank once (ft_c.all_gather_tensor,
    issued before the first SDPA call, waited before the second); the backward gathers them again the same way and
    passes dK, dV around the ring in fp32 (a second rotater fixed to ALL_TO_ALL, i.e. permute_tensor: c passes of the
    rank's fp32 dK, dV, each sent after a ring step and waited after the next step's SDPA backward, the last one waited
    at once)
  - SDPA calls per layer per rank (c = cp, n = s / c local tokens): step 0 the local q, k, v, causal (n x n); step
    i = 1..c-1 non-causal, (n x n / 2) where i <= rank (the first half of the received K, V), else (n / 2 x n) (the
    second half of q: a 'partial' merge): every rank computes causal / c of the score FLOPs
  - each step's output and logsumexp are merged in fp32 (_SDPAMerger, convert_to_f32 True): the block output cast to
    fp32; out - sigmoid(lse_b - lse) (out - out_b) and lse - logsigmoid(lse - lse_b) (3 out-sized and 5 lse-sized
    kernels); a partial step writes its half back with a torch.cat of the whole tensor; the result cast back to bf16.
    The backward keeps fp32 dQ, dK, dV accumulators (zeros_like), adds each step's bf16 gradients into them (the
    partial halves again through torch.cat), casts them back to bf16 at the end; K and V are made contiguous (copies)
    in both passes and cat-ed for each exchange
Per layer, E = b a n d (elements of the local q / output), K = b g n d (of the local K, or V), L = b a n (logsumexp),
bytes read + written, kernels in brackets (_forward_seq, _backward_seq):
  forward   K, V contiguous 2 x 4K [2]; cat(K, V) 8K [1] per exchange (c - 1); each step's output to fp32 6E (3E partial)
            [1]; merge 32E (16E partial) [3] + 52L (26L) [5]; partial cat 8E + 8L [2]; output to bf16 6E [1]; the
            attention output's layout copy 4E where the rank had a partial step (torch.cat makes it (b, a, n, d)) [1]
  backward  fp32 zeros 4E + 2 x 4K [3]; contiguous and cats as forward; step 0: dK, dV += 2 x 10K [2], dQ += 10E [1];
            a full-q step as step 0 but dK, dV into their first half (2 x (5K + 8K cat)) [4]; a partial step: the
            logsumexp half made contiguous 4L [1], dK, dV += 2 x 10K [2], dQ's second half 5E + 8E cat [2]; each step's
            fp32 cat(dK, dV) 16K [1]; dQ to bf16 6E, dK / dV to bf16 12K [2]; dK, dV (and dQ after a partial) back
            into the linears' layout 4K each (4E) [2 (3)]
  comm      all_gather of c x 2K x 2 bytes forward and again backward; c sendrecv passes of 2K x 4 bytes backward, on the
            CP group's one NCCL stream (the 2-rank NVLink card); exposed_s walks the pass in issue order: what the
            compute stream waits for is the exposed CP time (exposed_cp_comm)
The step's time is the slowest rank's (layer_work._torch_cp_layer: each layer's all-gather couples the ranks); memory: the
activations of n tokens (memory.py) and, at the forward's or backward's attention, the gathered K, V and the fp32
buffers (transient_bytes) where they exceed the logits' peak they follow.
Not modelled: DTensor's wrapping and dispatch of each SDPA call on the host (no measurement; the steps this prices are
GPU-bound), DDP's bucket all_reduces serialised with the CP calls on their one NCCL stream (init_device_mesh over the
whole world reuses the default group, DDP's): a layer's MLP gradient buckets (3-12 x 25 MB, ~0.3-1.2 ms) queue ahead of
the attention backward's all-gather, which at 3b 16384:1 ends ~1.36 ms after its issue against a 1.98 ms local causal
backward call (still hidden, only just), the NCCL kernels slowing the attention beside them.
"""

from __future__ import annotations

from collections import deque
from dataclasses import replace

from simcluster.llm import ops
from simcluster.llm.ops import Op, attention, memory
from simcluster.llm.spec import BatchSpec, ParallelSpec, TransformerSpec

LOCAL, RING = "attention.cp_local", "attention.cp_ring"
ISSUE_AG, WAIT_AG, ISSUE_PASS, WAIT_PASS = "issue_all_gather", "wait_all_gather", "issue_pass", "wait_pass"


def _sizes(model: TransformerSpec, par: ParallelSpec, batch: BatchSpec) -> tuple[int, int, float, float, float]:
    c, b, n = par.cp, batch.micro_batch, model.seq // par.cp
    return c, n, float(b * model.heads * n * model.head_dim), float(b * model.kv_heads * n * model.head_dim), float(b * model.heads * n)


def sdpa_calls(model: TransformerSpec, par: ParallelSpec, batch: BatchSpec, rank: int) -> list[tuple[Op, bool]]:
    """The rank's SDPA calls of one layer forward in ring order, each with whether it is a partial (half-q) step."""
    c, n, _, _, _ = _sizes(model, par, batch)
    b, a, g, d = batch.micro_batch, model.heads, model.kv_heads, model.head_dim
    calls = [(attention(LOCAL, b, a, g, n, n, d, True, False), False)]
    for i in range(1, c):
        sq, skv = (n, n // 2) if i <= rank else (n // 2, n)
        calls.append((attention(f"{RING}{i}", b, a, g, sq, skv, d, False, False), i > rank))
    return calls


def _forward_seq(model: TransformerSpec, par: ParallelSpec, batch: BatchSpec, rank: int) -> list:
    c, _, E, K, L = _sizes(model, par, batch)
    seq: list = [memory("cp.kv_contiguous", 4 * K, count=2)]
    partials = False
    for i, (call, partial) in enumerate(sdpa_calls(model, par, batch, rank)):
        if i > 0:
            seq.append(WAIT_AG if i == 1 else None)
        if i < c - 1:
            seq += [memory("cp.kv_cat", 8 * K)] + ([ISSUE_AG] if i == 0 else [])
        e, lse = (E / 2, L / 2) if partial else (E, L)
        seq += [call, _mixed("cp.out_fp32", 6 * e, kind="upcast")]
        if i > 0:
            seq += [memory("cp.merge_out", 32 * e / 3, count=3), memory("cp.merge_lse", 52 * lse / 5, count=5)]
        if partial:
            seq += [memory("cp.partial_cat", 8 * E), memory("cp.partial_cat_lse", 8 * L)]
            partials = True
    seq.append(memory("cp.out_bf16", 6 * E))
    return [x for x in seq if x is not None] + ([memory("cp.out_copy", 4 * E)] if partials else [])


def _backward_seq(model: TransformerSpec, par: ParallelSpec, batch: BatchSpec, rank: int) -> list:
    c, _, E, K, L = _sizes(model, par, batch)
    seq: list = [memory("cp.grad_zeros", 4 * E), memory("cp.grad_kv_zeros", 4 * K, count=2),
                 memory("cp.kv_contiguous.bwd", 4 * K, count=2)]
    partials = False
    for i, (call, partial) in enumerate(sdpa_calls(model, par, batch, rank)):
        if i == 1:
            seq.append(WAIT_AG)
        if i < c - 1:
            seq += [memory("cp.kv_cat.bwd", 8 * K)] + ([ISSUE_AG] if i == 0 else [])
        b, a, g, sq, skv, d = call.shape[:6]
        seq += ([memory("cp.lse_contiguous", 4 * L)] if partial else []) + [
            attention(call.name + ".bwd", b, a, g, sq, skv, d, call.shape[6], True)] + ([WAIT_PASS] if i > 0 else [])
        if i == 0 or partial:
            seq.append(_mixed("cp.dkv_add", 10 * K, count=2))
        else:
            seq += [_mixed("cp.dkv_partial_add", 5 * K, count=2), memory("cp.dkv_partial_cat", 8 * K, count=2)]
        seq += [memory("cp.dkv_cat", 16 * K), ISSUE_PASS]
        seq += [_mixed("cp.dq_partial_add", 5 * E), memory("cp.dq_partial_cat", 8 * E)] if partial else [_mixed("cp.dq_add", 10 * E)]
        partials = partials or partial
    seq += [memory("cp.dq_bf16", 6 * E), WAIT_PASS, memory("cp.dkv_bf16", 12 * K), memory("cp.dkv_copy", 4 * K, count=2)]
    return seq + ([memory("cp.dq_copy", 4 * E)] if partials else [])


def _mixed(name: str, nbytes: float, count: int = 1, kind: str = "unvectorized") -> Op:
    """A kernel of mixed dtypes (fp32 += bf16: torch's non-vectorized path) or a bf16 -> fp32 copy (kind upcast), priced
    at the card's upcast rate as the runner block's (llm/autocast_block.py)."""
    return replace(memory(name, nbytes, count=count), kind=kind)


def _ops_only(seq: list) -> list[Op]:
    return [x for x in seq if isinstance(x, Op)]


def runner_ops(model: TransformerSpec, par: ParallelSpec, batch: BatchSpec, fwd: list[Op], bwd: list[Op],
               rank: int = 0) -> tuple[list[Op], list[Op]]:
    """The layer's ops with the attention kernel(s) (Megatron's CP blocks, ops._attention_core) replaced by the rank's
    ring calls and their copies, merges and accumulators (module docstring), at the same place in each pass."""
    def swap(lst: list[Op], new: list[Op]) -> list[Op]:
        at = next((i for i, o in enumerate(lst) if o.kind == "attention"), len(lst))
        rest = [o for o in lst if o.kind != "attention"]
        return rest[:at] + new + rest[at:]
    return (swap(fwd, _ops_only(_forward_seq(model, par, batch, rank))),
            swap(bwd, _ops_only(_backward_seq(model, par, batch, rank))))


def comm_s(model: TransformerSpec, par: ParallelSpec, batch: BatchSpec, net, group) -> tuple[float, float]:
    """(all_gather of every rank's K and V in bf16, one fp32 dK / dV pass to the next rank) on the CP group."""
    from simcluster.llm.comm import collective_s

    c, _, _, K, _ = _sizes(model, par, batch)
    return collective_s(net, group, "all_gather", c * 2 * K * 2), collective_s(net, group, "sendrecv", 2 * K * 4)


def _exposed(gpu, dtype: str, seq: list, ag_s: float, pass_s: float) -> float:
    """Seconds the compute stream waits on the CP group's NCCL stream over one pass, calls in issue order (one stream:
    a call starts when the previous one ended and the compute before its issue is done)."""
    t = nccl = waited = ag_end = 0.0
    passes: deque = deque()
    for item in seq:
        if isinstance(item, Op):
            t += ops.op_time_s(gpu, item, dtype)
        elif item in (ISSUE_AG, ISSUE_PASS):
            nccl = max(nccl, t) + (ag_s if item == ISSUE_AG else pass_s)
            ag_end = nccl if item == ISSUE_AG else ag_end
            if item == ISSUE_PASS:
                passes.append(nccl)
        else:
            ready = ag_end if item == WAIT_AG else passes.popleft()
            waited += max(0.0, ready - t)
            t = max(t, ready)
    return waited


def exposed_s(gpu, dtype: str, model: TransformerSpec, par: ParallelSpec, batch: BatchSpec, net, group,
              rank: int = 0) -> tuple[float, float]:
    """(forward, backward) seconds of one layer the rank's compute waits for its CP calls."""
    ag, one = comm_s(model, par, batch, net, group)
    return (_exposed(gpu, dtype, _forward_seq(model, par, batch, rank), ag, one),
            _exposed(gpu, dtype, _backward_seq(model, par, batch, rank), ag, one))


def transient_bytes(model: TransformerSpec, par: ParallelSpec, batch: BatchSpec) -> float:
    """Bytes alive during one layer's CP attention beyond the stashed activations, the larger pass's: forward, the
    gathered K, V (4 c K), the exchange's cat (4 K) and the fp32 merge's out-sized tensors (three fp32 and one bf16: 14 E);
    backward, the fp32 dQ (4 E), dK, dV (8 K) and their two exchange buffers (16 K), the gathered K, V and cat, the
    step's bf16 gradients (2 E + 4 K) and a partial cat's fp32 temporary (4 E)."""
    c, _, E, K, _ = _sizes(model, par, batch)
    return max(4 * c * K + 4 * K + 14 * E, 10 * E + (4 * c + 32) * K)
