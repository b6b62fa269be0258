"""DTensor tensor parallelism with sequence parallelism under torch.compile of the whole model (issue 44, session 47):
KempnerForge's TP plan (framework kempnerforge-fsdp2-compile with tp > 1: FrameworkSpec.dtensor_sp), from its code and
torch's, nothing fitted.

KempnerForge (KempnerInstitute/KempnerForge 01b461a, kempnerforge/distributed/tensor_parallel.py apply_tensor_parallel
and _build_block_tp_plan; parallel.py build_parallel_model; setup.py init_distributed; scripts/train.py):
  - per block: attention_norm and mlp_norm SequenceParallel (activations sharded on the sequence between blocks);
    q_proj, k_proj, v_proj, gate_proj, up_proj ColwiseParallel(input_layouts=Shard(1)), each a module of its own;
    o_proj, down_proj RowwiseParallel(output_layouts=Shard(1)); sequence parallelism on unless a pipeline stage or tied
    embeddings (neither in the benchmark); the token embedding replicated (its output wrapped Replicate, the first norm
    slicing it to Shard(1) locally); final norm SequenceParallel; output head ColwiseParallel(input_layouts=Shard(1),
    output_layouts=Replicate()): every TP rank gets the full logits, and train.py's F.cross_entropy runs on them eagerly,
    outside the compiled model, on every TP rank.
  - order: TP, checkpoint_wrapper per block (full AC), fully_shard per block and the root (a dp_shard mesh dimension of
    size 1 is inserted when tp > 1 and dp is 1, so FSDP2 wraps every parameter), then torch.compile(model).
  - no async TP (no torch._inductor.config._micro_pipeline_tp, no symmetric memory) and no Inductor comm options set.
torch 2.11.0 (the benchmark's, uv.lock at 01b461a; source read from the 2.11.0 wheel, git 70d99e99):
  - compiled regions carry no DTensor dispatch: dynamo traces DTensor as a subclass and the compiled graph runs the local
    aten ops and functional collectives (torch.distributed._functional_collectives); FSDP2's hooks stay eager
    (torch._dynamo.config.skip_fsdp_hooks, llm/compiled.py), as does the loss. No host cost is priced (none is for the
    published trainers, framework.py); the FSDP2 hooks' and the optimizer's DTensor dispatch are per layer, not per op.
  - each redistribute is a functional collective followed by its wait (funcol._maybe_wrap_tensor: wait_tensor at once
    while tracing); Inductor's reorder_for_compute_comm_overlap, bucketing passes and aten_distributed_optimizations are
    off by default (torch/_inductor/config.py), and each collective feeds the next op: every TP collective is exposed.
  - Shard(1) -> Replicate is all_gather_into_tensor on dim 0 then chunk + cat onto dim 1 (funcol.all_gather_tensor,
    torch._utils._maybe_view_chunk_cat: a copy unless every dimension before the gather dim is 1, i.e. micro-batch 1);
    Partial -> Shard(1) is chunk + cat onto dim 0 (a copy) then reduce_scatter_tensor (funcol.reduce_scatter_tensor):
    one layout copy of T h bf16 (read + write) per collective (LAYOUT_BYTES_PER_ELEMENT).
  - AOTAutograd's partitioner CSEs the joint graph (torch/_functorch/partitioners.py min_cut_rematerialization_partition,
    functorch config.cse True; compile_utils.fx_graph_cse does not exempt collectives): the identical all-gathers of one
    norm output by q, k, v (and by gate, up) become one; their backwards stay apart (one reduce-scatter per linear's input
    gradient, on different tensors).
  - under the checkpoint traced in the graph every node is PREFER_RECOMPUTE (torch/_higher_order_ops/wrap.py tag_nodes),
    so force_save_collectives leaves the block's collectives recomputable: the backward re-runs the forward's collectives
    whose outputs it reads (the two all-gathers, o_proj's reduce-scatter), not down_proj's, which only the block's last
    residual add reads (llm/compiled.py: that add is not recomputed).
Per layer and micro-batch, each collective of T h bf16 (T = b s tokens; nccl-tests' size), on the TP group:
  forward    2 all-gathers (attention and MLP inputs) + 2 reduce-scatters (o_proj, down_proj outputs)
  recompute  2 all-gathers + 1 reduce-scatter (recompute full, checkpoint in the graph)
  backward   5 reduce-scatters (q, k, v, gate, up input gradients) + 2 all-gathers (o_proj, down_proj output gradients)
and a layout copy per collective (layout_copies). The model's two ends (ends_s): no embedding collective forward (the
replicated embedding sliced locally), its gradient all-gathered backward; the final norm's output all-gathered forward
and the head's input gradient reduce-scattered backward (as Megatron's sequence parallelism); the vocab-split logits
all-gathered to every TP rank (T V bf16) with its layout copy (gather on the last dim), and the loss over all T V logits
on every TP rank (vocab_ops, loss_logits).
Not priced: the 1-rank FSDP2 mesh's copy-in / all-gather / copy-out where dp is 1 (about 12 B per parameter per gather,
twice a micro-batch: 1-2% of these steps), the eager loss on bf16 logits (priced at framework.EAGER_LOSS, which has the
.float() up-cast torchtitan's loss has: over-estimates it), loss.item()'s host sync each micro-batch, the replicated
embedding's memory (memory.py splits it over TP as Megatron's). Memory (session 58): every TP rank holds the full
logits (memory.py's logit_split 1 here) at the bf16 loss's measured 8 bytes a logit (framework.KEMPNERFORGE_FSDP2_COMPILE).
"""

from __future__ import annotations

from simcluster.llm import comm, ops
from simcluster.llm.spec import BatchSpec, LlmConfigError, ParallelSpec, TransformerSpec

COLUMN_LINEARS = 5          # q, k, v, gate, up: ColwiseParallel modules apart (one reduce-scatter of the input gradient each)
FORWARD = {"all_gather": 2, "reduce_scatter": 2}
RECOMPUTE = {"all_gather": 2, "reduce_scatter": 1}
BACKWARD = {"all_gather": 2, "reduce_scatter": COLUMN_LINEARS}
LAYOUT_BYTES_PER_ELEMENT = 2 * ops.ACT_BYTES   # chunk + cat: the bf16 tensor read once and written once
LOGITS_LAYOUT = "logits_layout"


def applies(fw, par: ParallelSpec) -> bool:
    """KempnerForge's compiled DTensor TP prices this layout (fw.dtensor_sp, tp > 1)."""
    return fw.dtensor_sp and par.tp > 1


def check(par: ParallelSpec) -> None:
    """What the plan is modelled for: sequence parallelism on (KempnerForge turns it off only for pipeline stages and
    tied embeddings), no pp / cp / ep, recompute none or full; one LlmConfigError at the key."""
    if not par.sequence_parallel:
        raise LlmConfigError("parallel.sequence_parallel", "KempnerForge's TP plan runs SequenceParallel norms with "
                             "Shard(1) linears unless a pipeline stage or tied embeddings (tensor_parallel.py at 01b461a)",
                             hint="sequence_parallel: true")
    off = [f"parallel.{k}: {getattr(par, k)}" for k in ("pp", "cp", "ep") if getattr(par, k) != 1]
    if off:
        raise LlmConfigError("framework.compile", "DTensor TP under torch.compile is modelled with FSDP2 alone beside it "
                             f"(no pp, cp, ep); got {', '.join(off)}", hint="pp, cp and ep 1")


def layer_calls(par: ParallelSpec, backward: bool, ckpt_in_graph: bool = True) -> dict[str, int]:
    """One layer's TP collectives per micro-batch, op -> count (module docstring): the forward's, or the backward's
    with the recomputation's under recompute full (all of the forward's where the checkpoint runs eagerly)."""
    if not backward:
        return dict(FORWARD)
    calls = dict(BACKWARD)
    if par.recompute == "full":
        for op, n in (RECOMPUTE if ckpt_in_graph else FORWARD).items():
            calls[op] += n
    return calls


def layer_s(model: TransformerSpec, par: ParallelSpec, batch: BatchSpec, net: comm.Network, group: comm.Group,
            ckpt_in_graph: bool = True) -> tuple[float, float]:
    """(forward, backward) exposed TP seconds of one layer and micro-batch (layer_calls)."""
    act = batch.micro_batch * model.seq * model.hidden * ops.ACT_BYTES
    return tuple(sum(n * comm.collective_s(net, group, op, act) for op, n in layer_calls(par, phase, ckpt_in_graph).items())
                 for phase in (False, True))


def calls_per_layer(par: ParallelSpec, ckpt_in_graph: bool = True) -> tuple[int, int]:
    """(forward, backward) TP collectives of one layer and micro-batch: each has one layout copy (layout_copies)."""
    return tuple(sum(layer_calls(par, phase, ckpt_in_graph).values()) for phase in (False, True))


def layout_copies(model: TransformerSpec, par: ParallelSpec, batch: BatchSpec, backward: bool,
                  ckpt_in_graph: bool = True) -> list:
    """The chunk + cat copies around the layer's TP collectives (module docstring): one memory op of T h bf16 read and
    written per collective; an all-gather's is a view at micro-batch 1 (_maybe_view_chunk_cat: only the
    reduce-scatters' torch.cat copies then)."""
    calls = layer_calls(par, backward, ckpt_in_graph)
    n = sum(calls.values()) - (calls["all_gather"] if batch.micro_batch == 1 else 0)
    elems = batch.micro_batch * model.seq * model.hidden
    name = "tp_layout.bwd" if backward else "tp_layout"
    return [ops.memory(name, LAYOUT_BYTES_PER_ELEMENT * elems, count=n)] if n else []


def loss_logits(model: TransformerSpec, par: ParallelSpec, batch: BatchSpec) -> int:
    """Logits the loss reads on one GPU: all T V (the head's output redistributed to Replicate on every TP rank)."""
    return batch.micro_batch * model.seq * model.vocab


def logits_layout(model: TransformerSpec, par: ParallelSpec, batch: BatchSpec) -> list:
    """The logits' all-gather on the last dim: its chunk + cat copy (T V bf16 read and written; no backward: the
    gradient of Replicate -> Shard(-1) is a local slice: vocab_ops.head_backward leaves it out)."""
    return [ops.memory(LOGITS_LAYOUT, LAYOUT_BYTES_PER_ELEMENT * loss_logits(model, par, batch))]


def ends_s(model: TransformerSpec, par: ParallelSpec, batch: BatchSpec, net: comm.Network,
           group: comm.Group) -> tuple[float, float, float, float]:
    """(embedding forward, embedding backward, head forward, head backward) exposed TP seconds per micro-batch: the
    embedding replicated (none forward, its gradient all-gathered backward), the final norm's output all-gathered and
    the logits all-gathered (T V bf16) forward, the head's input gradient reduce-scattered backward."""
    act = batch.micro_batch * model.seq * model.hidden * ops.ACT_BYTES
    logits = loss_logits(model, par, batch) * ops.ACT_BYTES
    gather = comm.collective_s(net, group, "all_gather", act)
    return (0.0, gather, gather + comm.collective_s(net, group, "all_gather", logits),
            comm.collective_s(net, group, "reduce_scatter", act))
