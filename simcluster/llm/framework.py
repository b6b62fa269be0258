"""How the training code runs the model (FrameworkSpec): what it stores and moves besides the model's own math, and the
named frameworks (FRAMEWORKS). The model and parallel settings a framework's code does not have are refused at their key
by llm/spec_check.py (check_framework, check_model_framework), with the job's other cross-checks.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from simcluster.llm.spec import LlmConfigError


@dataclass(frozen=True)
class MoeHost:
    """The host's issue of one MoE layer of Megatron-Core's local spec (SequentialMLP experts, torch permutations, no TE):
    its kernel counts and host seconds per kernel, read from the profiled steps of calibration/h200x4-megatron-moe-2026-11-27
    (studies/megatron_moe/trace_read.py; llm-findings.md session 30). The forward is cut by the dispatcher's host sync (the
    token counts to the CPU): after it the permutation, dispatch, the local experts one by one and the combine
    (post_kernels + expert_kernels per local expert), then the unpermutation, the next attention block and router, up to
    the next sync (pre_kernels). The backward has no sync. The host times are the profiled step's, less the profiler's
    own share (profiled_over_plain)."""
    pre_kernels: int = 100          # forward, combine launch -> next sync: 100 (Qwen3-like) / 96 (Mixtral-like) kernels
    post_kernels: int = 18          # forward, sync -> combine, besides the experts: 14 to the dispatch + 4
    expert_kernels: int = 5         # forward per local expert: fc1, three elementwise (SwiGLU), fc2
    kernel_s: float = 50e-6         # forward host per kernel outside the expert loop: 42-61 us measured
    expert_kernel_s: float = 80e-6  # forward host per kernel, dispatch -> combine: 83 (Qwen3-like) / 78 us (Mixtral-like)
    bwd_kernels: int = 83           # backward besides the experts: 81 / 85 kernels
    bwd_expert_kernels: int = 10    # backward per local expert: 9.7 (Qwen3-like) / 9.5
    bwd_kernel_s: float = 50e-6     # backward host per kernel: 41-58 us measured (autograd's thread)
    profiled_over_plain: float = 1.25   # the profiler's share of those host times: the profiled Qwen3-like step's host issue
                                        # (208.8 ms) over the same run's median unprofiled step's (166.7 ms); the per-kernel
                                        # times above are divided by it


# Megatron + Transformer Engine: the host per modelled call after each MoE dispatcher sync, derived from the GPU idle of one
# Nsight profile of H100 BF16 with CUDA graphs over router and preprocess (llm/moe_sync.py docstring; python
# studies/moe_te_host.py; tests/test_llm_moe_sync.py checks it). B200 / GB200 hosts and fp8 runs use this H100 value unmeasured (extrapolated; llm/caveats.py)
MOE_SYNC_KERNEL_S = 147.2e-6   # 143.8 .. 150.6 us for the idle -25% .. +25% (146.3 before session 39's cuDNN attention form)


@dataclass(frozen=True)
class FrameworkSpec:
    """How the training code runs the model: what it stores and moves besides the model's own math.

    megatron: fused QKV GEMM, bf16 weights and residual stream, fp32 main_grad buffers that persist (every micro-batch's
      weight gradients added into them: grad_accumulate_bytes), fp32 master
      weights and Adam moments (2 + 4 + 12 bytes per parameter), fused kernels, Transformer Engine layers (under fp8:
      GEMM inputs saved in fp8, cached fp8 weights; llm/memory.py). A recipe's own gradient-buffer and optimizer dtypes
      and fp8 weights are memory-only fields set with dataclasses.replace (a published file's `simcluster.memory`).
    torch-amp (simcluster.runner.llm_step): fp32 weights under bf16 autocast, separate q / k / v Linears, fp32
      residual stream (embedding and weights are fp32), gradients created in each backward and freed by
      zero_grad(set_to_none=True), fused AdamW with fp32 moments (4 + 4 + 8 bytes per parameter), bf16 weight
      copies autocast makes in the forward and the backward keeps, eager (unfused) rotary, SwiGLU and loss.
      Its loss peaks at the start of the backward with 12 bytes per logit alive: log_softmax's saved fp32 output,
      the fp32 gradient nll_loss hands it and the fp32 gradient it returns (the forward's bf16 logits and fp32
      copy, 2 + 4 + 4 with log_softmax's output, are fewer).
    megatron-unfused-attention: megatron with the attention core of Megatron-LM before flash attention (scores
      Q K^T and the context P V as batched GEMMs, s x s scores, probabilities and dropout mask in HBM).
    megatron-local-spec: megatron-unfused-attention whose MoE layers the host issues kernel by kernel (MoeHost):
      Megatron-Core's local layer spec without Transformer Engine (SequentialMLP experts), its softmax in torch over
      fp32 copies of the scores (softmax_bytes), as studies/megatron_moe/device.py runs it.
    megatron-unfused-loss: megatron with Megatron-Core's unfused vocab-parallel cross-entropy (no
      --cross-entropy-loss-fusion): .float() cast (2 + 4 bytes per logit), max (4), subtract (4 + 4), exp in place (8),
      sum (4), divide in place (8) = 38 bytes forward; the gradient's multiply in place (8) and the cast back to bf16
      (4 + 2) = 14 backward (megatron/core/tensor_parallel/cross_entropy.py at core_r0.8.0 L27-113; the same kernels
      at 285068c8, megatron/model/gpt_model.py L38 calling it on output.float()).
    megatron-2023-sync: Megatron-LM of early 2023 (commit 285068c8): the unfused attention core (flash attention off by default),
      the data-parallel gradient reduction after the whole backward and the parameter all_gather after the optimizer step
      (neither overlapped), pipeline sends that block the sender, the unfused loss.
    """

    name: str
    fused_qkv: bool = True
    param_bytes: float = 2.0
    grad_bytes: float = 4.0
    state_bytes: float = 12.0
    persistent_grads: bool = True
    weight_copy_bytes: float = 0.0    # per parameter, held from the forward to the backward (autocast's bf16 copies)
    tp_vocab_split: bool = True       # embedding, LM head and logits split over tp (Megatron); False: replicated (memory only)
    tp_bwd_allreduces: int = 2        # TP all_reduces of a layer's input gradient (no sequence parallelism): Megatron's 2, fused
    tp_bwd_bytes: int = 2             # QKV and fused up-gate, in bf16; torch DTensor TP (llm/eager.py): 5 in fp32
    ddp_bucket_bytes: float = 0.0     # per parameter, torch DDP's reducer buckets (gradient_as_bucket_view off): dp > 1, no ZeRO
    zero2_wait: bool = False          # ZeRO-2 reducing each micro-batch: the next forward waits for its reduce-scatters (llm/grad_sync.py)
    zero2_regather: bool = False      # FSDP2 ZeRO-2: each micro-batch's forward all-gathers every layer again (llm/grad_sync.py); adopt2g
    zero2_fsdp2: bool = False         # FSDP2 ZeRO-2's per-group reduce-scatter and gather copy-out (llm/fsdp2_zero2.py); adopt2g
    zero2_exposed: bool = False       # with zero2_regather: each re-gather (and copy-out) waited for in full (llm/fsdp2_zero2.py); adopt2g
    zero2_bf16_weights: bool = False  # with zero2_fsdp2: FSDP2's bf16 parameters, no autocast weight cast in the forward (llm/fsdp2_zero2.py); adopt2g
    zero3_bf16_weights: bool = False  # FSDP2 zero 3: no autocast weight cast in the forward (llm/fsdp2_zero2.py); x2set49 Z3 candidate, off
    dtensor_sp: bool = False          # tp > 1: DTensor TP + sequence parallelism under whole-model torch.compile (KempnerForge's; llm/dtensor_tp.py)
    residual_bytes: int = 2           # element size of the residual stream
    adam_bytes: float = 30.0          # optimizer-step traffic per updated parameter (read + write)
    cast_bytes: float = 0.0           # per parameter per micro-batch: weight casts and gradient up-casts
    logit_bytes: float = 6.0          # bytes per logit at the loss's peak (Megatron: bf16 logits + fp32 copy; eager: 12, below)
    eager: bool = False               # unfused elementwise kernels and the extra tensors eager autograd saves
    compiled: bool = False            # eager's blocks under torch.compile (llm/compiled.py): fused memory-bound kernels, casts recomputed
    ckpt_in_graph: bool = False       # compiled, recompute full: the checkpoint traced into each block's graph (llm/compiled.py, session 46)
    whole_model_graph: bool = False   # ckpt_in_graph: recompute without down_proj's GEMM, the loss Inductor's (llm/compiled.py; compck, OFF)
    casts_in_block: bool = False      # compiled: each block's weight casts inside its graph, not before the first (work._block_casts; compileac: off)
    loss_in_graph: bool = True        # whole-model compiled FSDP2 (ckpt_in_graph, bf16_param_block): loss in last graph, root unit at end (compileac AM)
    compiled_nock_memory: bool = True  # its memory without checkpointing too, the blocks' input bf16 (compiled.loss_memory_in_last_graph; session 49 mem49)
    compiled_nock_loss: bool = False  # its loss's time without checkpointing too: Inductor's (compiled.fused_loss; session 50 fsdpc50, OFF)
    compiled_loss_donated: bool = False  # its loss's peak: the logits' gradient in their donated buffer, FSDP2's root unit live (memory.py; fsdpc50, OFF)
    host_kernel_s: float = 0.0        # host time to issue one kernel (eager; measured, llm/host.py); 0 = never host-bound
    host_step_s: float = 0.0          # fixed host time per step (optimizer, loss, Python)
    host_bwd_kernel_s: float = 0.0    # host time per backward kernel where it differs from the forward's host_kernel_s
                                      # (op: the policy's dispatch costs most in the forward, llm/eager.op_phase_factors); 0 = the same
    host_hook_kernel_s: float = 0.0   # FSDP2: its host cost per kernel over the single mode's (both fitted, llm/eager.py): the
                                      # per-layer gather / reduce hooks, of which no-sync spares the reduce (llm/grad_sync.py)
    host_plain_kernel_s: float = 0.0  # recompute_every N > 1: host time per kernel of the blocks run plain (the single mode's
                                      # fit; the checkpointed blocks' at host_kernel_s, the ckpt mode's; llm/eager.py)
    host_plain_step_s: float = 0.0    # with host_plain_kernel_s: the single mode's per-step host cost (host_step_s the ckpt
                                      # mode's), blended by the share of blocks checkpointed (work._host_step_s)
    moe_host: MoeHost | None = None   # Megatron-Core's MoE layer issued from the host around its dispatcher's sync (layer_work._moe_host)
    moe_sync_kernel_s: float = MOE_SYNC_KERNEL_S   # host seconds per modelled call after each MoE layer's dispatcher
                                      # sync, read only where transformer_engine (llm/moe_sync.applies); 0 = the host runs ahead
    bucket_params: int = 0            # gradient bucket (parameters); 0 = Megatron's max(40M, 1M dp)
    attention: str = "flash"          # 'flash' (fused, no s x s tensor) | 'unfused' (scores materialized, pre-2023 Megatron)
    softmax_bytes: tuple = ()         # unfused core: (forward, backward) bytes per score of a softmax in torch over fp32 copies of the
                                      # scores, with no dropout kernel (attention dropout 0); () = the fused bf16 softmax + dropout
    attention_kernel: str = "card"    # the fused kernel: 'card' (the GPU card's measured SDPA: cuDNN on Hopper) | 'fa2'
                                      # (FlashAttention 2 on Hopper) | 'fa2-full' (and no causal block skipped): attention_kernels.py
    grad_reduce_after_backward: bool = False   # DP gradient reduction after the whole backward, parameter gather after the
                                               # optimizer (Megatron-LM before --overlap-grad-reduce); False: overlapped
    blocking_p2p: bool = False        # pipeline sends block the sender's compute stream (batch_isend_irecv + wait + synchronize)
    comm_interference: bool = False   # data-parallel NCCL kernels and the compute they overlap slow each other by the GPU
                                      # card's measured comm_overlap (overlap.beside; eager torch DDP / FSDP2, llm/eager.py)
    loss_fwd_bytes: float = 6.0       # cross-entropy bytes per logit, forward (fused: bf16 logits read, fp32 softmax written)
    loss_bwd_bytes: float = 12.0      # and backward (eager frameworks: EAGER_LOSS, 2 kernels forward and 3 backward: vocab_ops)
    torch_pipelining: bool = False    # torch.distributed.pipelining's pipeline (torch, pp > 1; virtual stages: llm/torch_p2p.py)
    free_stage_hosts: bool = False    # torch pipelining with a host priced: each stage's host issues free of its inputs
                                      # (work.free_hosts, launch_backlog.free_host; session 44's candidate, registered in
                                      # validation/ppcouple.py, not the product); False: a stage's host issues a task once
                                      # its input arrived (the hosts in series); docs/models/llm.md
    launch_backlog: bool = False      # with free_stage_hosts: a stage's launch queue holds its earlier chunks not yet started
                                      # too (llm/launch_backlog.py; session 45's ppfree term, validation/ppfree.py; off)
    free_phase_host: bool = False     # par.gpus 1 only (session 45's op candidate, validation/opsplit.py; not the product): the host
                                      # issues the backward from the forward's last issue and the step's fixed host work beside
                                      # the backward's GPU backlog (work.free_hosts, work._beside_backlog); False: in series
    fsdp_free_phases: bool = False    # compiled one-stage FSDP2 step: only the fixed host work beside the backlog (free_hosts False: it reduce-scatters)
    grad_scale_bytes: float = 0.0     # per parameter per step: torch.distributed.pipelining's scale_grads divides every
                                      # gradient by the micro-batch count after the backward (read + write, fp32: 8)
    grad_accumulate_bytes: float = 10.0   # per weight element per micro-batch: the weight gradient added into the fp32
                                          # main_grad (bf16 read, fp32 read + write; ops.grad_accumulate); 0 = none
    torch_cp: bool = False            # context parallelism as torch's context_parallel runs it (llm/torch_cp.py; cp > 1)
    hybrid_shard: bool = False        # its code runs HSDP (parallel.dp_shard < dp: shard inside a group, replicate across;
                                      # llm/hsdp.py): FSDP1 HYBRID_SHARD (fms-fsdp 'hsdp', Composer), FSDP2's 2-D mesh (torchtitan)
    autocast_block: bool = False      # the llm-step runner's block under autocast with fp32 weights (llm/autocast_block.py):
                                      # fp32 rotary, non-vectorized mixed-dtype kernels, no attention-output / q/k/v gradient
                                      # copies (cuDNN's layout), every linear saving its own bf16 cast of its input
    # memory only (llm/memory.py; the step's DP traffic stays at param_bytes / grad_bytes, so step times do not depend on them)
    grad_buffer_bytes: float = 4.0    # the gradient buffer's element: Megatron's fp32 main_grad for bf16 (2 with grad_reduce_in_fp32 off)
    transformer_engine: bool = True   # TE layers: under fp8 the GEMM inputs are saved in 1 byte and each linear weight's fp8 copy and
                                      # transpose are cached across micro-batches (llm/memory.py); and (step time) the MoE host
                                      # after the dispatcher sync (llm/moe_sync.py, moe_sync_kernel_s)
    fp8_params: bool = False          # under fp8, linear weights stored in fp8 (Megatron --fp8-param-gather, NeMo fp8_params): 1 byte
                                      # + its cached transpose = the 2 of bf16, and no separate fp8 weight cache
    master_remainders: bool = False   # Apex DistributedFusedAdam's store_param_remainders: the fp32 master weight kept as the bf16
                                      # weight + a 16-bit remainder (state_bytes - 2); NeMo keeps a full fp32 master with fp8_params
    bf16_param_block: bool = False    # the llm-step runner's block under FSDP2's bf16 parameters (llm/eager.py): the embedding
                                      # output, so the residual stream and each norm's saved input, is bf16 (stashed at 2 B,
                                      # not residual_bytes), and cuDNN's output layout leaves no attention-output copy saved
    rope_fusion: bool = True          # MLA's rotary (llm/mla_layout.py): Megatron-Core's apply_rope_fusion, which rotates the query's
                                      # rope slice in place (Megatron and NeMo performance recipes set it); False: rotary on the
                                      # slice and torch.cat into a new query (eager torch; a recipe's apply_rope_fusion False:
                                      # a published file's `simcluster.recipe`, reference/llm.py)
    torch_chains: bool = False        # the unfused softmax and the experts' SwiGLU as Megatron-Core's local spec runs them, plain torch
                                      # kernels each at its own rate (llm/torch_kernels.py); False: softmax_bytes / a fused SwiGLU
    fused_expert_fc1: bool = False    # the experts' gate and up projections as one GEMM of 2 x expert ffn per local expert (Megatron-
                                      # Core's MLP linear_fc1 under gated_linear_unit, as SequentialMLP issues it); False: two GEMMs
    moe_graphs: bool = True           # MoE router and dispatcher preprocess CUDA-graphed (cuda_graph_scope moe_router, moe_preprocess),
                                      # as moe_sync's source row; False: issued call by call before the sync (llm/moe_graphs.py)
    moe_router_fusion: bool = True    # False: Megatron-Core's unfused router, priced from its measurement (llm/moe_router_unfused.py)
    zero3_module_calls: bool = False  # ZeRO-3's gathers and reduce-scatters one call per weight matrix, not one per layer (DeepSpeed's
                                      # per-submodule fetch; llm/dp_beside.calls_per_layer)
    dp_on_compute_stream: bool = False  # the data-parallel reductions on the compute stream, in series with it; ZeRO-3's gathers
                                        # stay beside it, prefetched (DeepSpeed's overlap_comm false; llm/dp_beside.py)
    hf_llama_saves: bool = False      # transformers' LlamaDecoderLayer's saved tensors (llm/hf_memory.py, memory only): each RMSNorm's
                                      # fp32 upcast, K and V after repeat_kv, no attention-output copy
    deepspeed_zero3_buffers: bool = False  # DeepSpeed stage 3's flat gradient partition, held, and its step's fp32 gradient of
                                           # one sub-group (llm/hf_memory.py, memory only; parallel.zero 3)

    @property
    def stash_residual_bytes(self) -> int:
        """Element size of the residual stream as the backward keeps it (memory.py): bf16 under bf16_param_block."""
        return 2 if self.bf16_param_block else self.residual_bytes

    def __post_init__(self) -> None:
        """An eager framework's loss is torch's F.cross_entropy(logits.float()): EAGER_LOSS (or, for the development
        'before' arm only, EAGER_LOSS_UNTIL_34), never the fused default a forgotten **EAGER_LOSS would leave."""
        loss = {"loss_fwd_bytes": self.loss_fwd_bytes, "loss_bwd_bytes": self.loss_bwd_bytes}
        if self.eager and loss not in (EAGER_LOSS, EAGER_LOSS_UNTIL_34):
            raise LlmConfigError("framework.loss_fwd_bytes", f"framework {self.name!r} is eager: its loss bytes per logit "
                                 f"must be framework.EAGER_LOSS {EAGER_LOSS}, got {loss}")
        if not self.moe_sync_kernel_s >= 0:
            raise LlmConfigError("framework.moe_sync_kernel_s", f"framework {self.name!r}: host seconds per call after the MoE "
                                 f"dispatcher's sync must be >= 0, got {self.moe_sync_kernel_s!r}")


MEGATRON = FrameworkSpec("megatron")
# Eager torch's loss, F.cross_entropy(logits.float()) (the runner's, torchtitan's; issue 44, session 34), bytes per logit as
# the kernels move them (calibration/h100x1-step-profile-2026-11-23/kernels.json, the runner's 1b 2048:2 step, 525 M
# logits: cunn_SoftMaxForward 2.81 ms and cunn_SoftMaxBackward 2.88 ms a step at the H100 card's 2.984 TB/s = 15.9 and
# 16.4 B: a row of 128K fp32 logits does not fit in shared memory, so each pass reads it three times or twice and writes
# once): forward the .float() copy (2 + 4) and log_softmax (3 x 4 + 4) = 22; backward nll_loss's zero-filled fp32
# gradient (4), log_softmax's backward (16) and the cast back to bf16 (4 + 2) = 26 (nll_loss's own kernels: < 20 us).
# Before session 34 the model charged 28 / 56 (two kernels of 14 B a logit forward, twice that backward).
# Measured in that profile: the two softmax kernels only; the copy (6), the fill (4) and the cast back (6) are nominal
# (the data types' bytes). compile4's H200 traces (calibration/h200x1-llm-compile4-2026-11-29/traces, five runs, 262-537 M
# logits; each kernel's time x the card's 4.179 TB/s per logit): .float() copy 11.9-12.6 (6 B at the SM-bound up-cast
# rate: vocab_ops prices it so since eagerfix), SoftMaxForward 13.1-13.2 (vocab 32K) / 15.9-16.2 (50K-128K), fill 3.55,
# SoftMaxBackward 16.8-17.5, cast back 5.70: forward 25.2-28.5 against the model's 28.2 in time (22 B, the copy as an
# up-cast), backward 26.0-26.7 against 26. compile4 was registered with 22 / 26 at the HBM rate (the copy as 6 B): a new
# value here needs a new registration, and these measured figures are its input (llm-findings.md, session 34 llmmend2).
EAGER_LOSS = {"loss_fwd_bytes": 22.0, "loss_bwd_bytes": 26.0}
EAGER_LOSS_UNTIL_34 = {"loss_fwd_bytes": 28.0, "loss_bwd_bytes": 56.0}   # until session 34 (a record: validation/llm_compile4.py --develop's 'before')
# torch.optim.AdamW(fused=True) on fp32 parameters (the runner's): param, grad, exp_avg, exp_avg_sq read, three written:
# 28 B a parameter, priced as the 33.9 B a streaming kernel would move in its time: its multi_tensor_apply kernel ran at
# 0.827 of the card's copy rate (H200: 0.80-0.83 over compile4's five traces; H100 3b, 1b: 0.866, 0.856; issue 44).
# Only the runner's framework (torch-amp, torch-compile) takes it: it was measured on the runner's own optimizer. The
# published trainers (torchtitan, Composer, fms-fsdp) keep 28 B at the card's rate: whether their optimizer runs the
# fused kernel is not recorded with their rows (torchtitan's default is believed fused), and moving them would move
# held-out published rows, which needs a registration first (cold read D).
FUSED_ADAMW_BYTES = 28.0 / 0.827
TORCH_AMP = FrameworkSpec("torch-amp", fused_qkv=False, param_bytes=4.0, grad_bytes=4.0, state_bytes=8.0, persistent_grads=False,
                          weight_copy_bytes=2.0, residual_bytes=4, adam_bytes=FUSED_ADAMW_BYTES, cast_bytes=12.0, logit_bytes=12.0, eager=True,
                          grad_accumulate_bytes=0.0, **EAGER_LOSS,   # autocast's gradient up-casts are in cast_bytes
                          bucket_params=25 * 2**20 // 4, transformer_engine=False,   # DDP's bucket_cap_mb = 25 of fp32 gradients
                          autocast_block=True, rope_fusion=False)
# The runner's decoder with each block under torch.compile (llm-step --compile; issue 44): TORCH_AMP's storage and loss,
# the blocks' ops fused (llm/compiled.py), autocast's bf16 weight copies saved for the backward as eager's are
# (weight_copy_bytes 2: the min-cut partitioner never recomputes a tensor a backward GEMM reads; measured, session 33's
# diagnostic), so the backward casts nothing again. Its host cost: the compile mode's fit.
# autocast_block off: the compiled block's ops are compiled.py's (its library calls taken from the generic eager list, as
# registered for compile4; the runner block's terms were not examined under torch.compile).
TORCH_COMPILE = replace(TORCH_AMP, name="torch-compile", compiled=True, autocast_block=False)
# Megatron-LM before flash attention (2021-2022: Narayanan et al. 2021, Korthikanti et al. 2022): the attention core as
# two batched GEMMs over the materialized s x s scores, a fused scale-mask-softmax and attention dropout.
MEGATRON_UNFUSED = FrameworkSpec("megatron-unfused-attention", attention="unfused", transformer_engine=False)
UNFUSED_LOSS = {"loss_fwd_bytes": 38.0, "loss_bwd_bytes": 14.0}    # Megatron-Core's vocab-parallel cross-entropy, unfused
# Megatron-Core's local layer spec (no Transformer Engine; megatron-core 0.14 get_gpt_layer_local_spec): the unfused
# attention core, and its MoE layer issued kernel by kernel from the host around the dispatcher's sync (MoeHost).
# megatron-core 0.14 FusedScaleMaskSoftmax.forward_torch_softmax (masked_softmax_fusion off, softmax_in_fp32), per score:
# bf16 -> fp32 (2 + 4 bytes), masked_fill with the causal mask (4 + 1 + 4), softmax (4 + 4), -> bf16 (4 + 2) = 29 forward;
# the gradient's cast up (2 + 4), softmax's backward (4 + 4 + 4), masked_fill (9), cast down (4 + 2) = 33 backward.
# Since session 40 (issue 44) priced kernel by kernel (torch_chains, llm/torch_kernels.py: the backward's two kernels more,
# grad x output and masked_fill's clone, 53 B; the casts and masked_fill at torch's unvectorized rates), with the experts'
# unfused SwiGLU (bias_activation_fusion off) and Megatron-Core's unfused vocab-parallel cross-entropy (TransformerConfig's
# cross_entropy_loss_fusion off by default; device.py leaves it off: _VocabParallelCrossEntropy in the traces), that loss
# kernel by kernel, the router's top-k kernels, and each local expert's linear_fc1 as the one GEMM of N = 2 x expert ffn it
# is (fused_expert_fc1; session 41, issue 44: the traces' per-expert nvjet calls come in fc1 / fc2 pairs).
MEGATRON_LOCAL = FrameworkSpec("megatron-local-spec", attention="unfused", softmax_bytes=(29, 33), transformer_engine=False,
                               moe_host=MoeHost(), rope_fusion=False,   # studies/megatron_moe/device.py: apply_rope_fusion False
                               torch_chains=True, fused_expert_fc1=True, **UNFUSED_LOSS)
MEGATRON_UNFUSED_LOSS = FrameworkSpec("megatron-unfused-loss", **UNFUSED_LOSS)
# Megatron-LM at commit 285068c8 (2023-01-11, MegaScale's baseline): megatron/training.py train_step reduces the gradients
# after forward_backward_func returns (L415-425) and gathers the distributed optimizer's parameters after optimizer.step
# (L440); megatron/p2p_communication.py waits on every batch_isend_irecv request and calls torch.cuda.synchronize()
# (L227-231); --use-flash-attn is off unless given (megatron/arguments.py L655), so the attention core is unfused.
MEGATRON_2023_SYNC = FrameworkSpec("megatron-2023-sync", attention="unfused", grad_reduce_after_backward=True, blocking_p2p=True,
                                   transformer_engine=False, **UNFUSED_LOSS)
# Composer / llm-foundry (MPT) under PyTorch FSDP1 (issue 44): FULL_SHARD per block, Composer's mixed_precision DEFAULT
# (composer/distributed/mosaic_fsdp_utils.get_mixed_precision: param_dtype = the autocast dtype, reduce_dtype fp32):
# parameters gathered in bf16 from an fp32 shard, bf16 compute and residual stream, each unsharded bf16 weight gradient
# up-cast to fp32 (2 read + 4 written per weight element, every micro-batch) and reduce-scattered in fp32 into the
# fp32 sharded gradient; AdamW on the fp32 shard (fp32 master + two moments: 12 bytes, 28 of traffic as torch's fused
# AdamW; held as param_bytes 2 + state_bytes 10, as fms-fsdp's and torchtitan's: the bf16 shard FSDP1 gathers from is
# transient, so 14 counted 2 bytes a sharded parameter twice until session 58); fused Wqkv (MPT's attention); its
# collectives beside compute at the card's measured comm_overlap (as FSDP2,
# llm/eager.py). Kernel-level: MPT's block is eager PyTorch (llm-foundry's MPTBlock: unfused LayerNorm, GeLU, residual
# adds, the attention output's copy, autograd's gradient adds): eager's op list (ops.eager_backward_extras), without
# rotary (MPT's positions are learned: model.rotary false). No host cost (none measured).
# Attention: FlashAttention 2 (llm-foundry's `gpu-flash2` install, attn_impl flash) at its measured Hopper rate, every
# score block computed ('fa2-full': adopted by the registered held-out test on the A100 tables, llm-findings.md session 27).
COMPOSER_FSDP = FrameworkSpec("composer-fsdp", fused_qkv=True, hybrid_shard=True, param_bytes=2.0, grad_bytes=4.0, state_bytes=10.0,
                              persistent_grads=False, residual_bytes=2, adam_bytes=28.0, grad_accumulate_bytes=6.0,
                              comm_interference=True, transformer_engine=False, logit_bytes=12.0, attention_kernel="fa2-full",
                              eager=True, rope_fusion=False, zero2_wait=True, **EAGER_LOSS)   # FSDP1 SHARD_GRAD_OP: zero 2
# Megatron-Core under Transformer Engine before its cuDNN preference on Hopper: TE 1.x's DotProductAttention "prioritizes
# FlashAttention over FusedAttention" (its docstring), so flash-attn 2 ran on H100; NeMo's docs changed to "prefers cuDNN
# flash attention on Hopper+" in NVIDIA/NeMo#9188 (May 2024). NeMo containers up to 24.03 (issue 44, session 27).
MEGATRON_FA2 = FrameworkSpec("megatron-te-fa2", attention_kernel="fa2")
# torch's scaled_dot_product_attention before PyTorch 2.5 (issue 44, session 42 fsdpsrc): the flash backend, FlashAttention 2
# since PyTorch 2.2, on every GPU. PyTorch 2.5.0 (release notes / blog, 2024-10-17: "a new CuDNN backend for SDPA, enabling
# speedups by default for users of SDPA on H100s or newer GPUs") made cuDNN's fused attention the default on Hopper, and
# pytorch/pytorch#138522 ("Make CuDNN Attention Opt in", merged on main 2024-10-22, cherry-picked onto release/2.5 for
# 2.5.1; the cherry-pick's own number, #138587, not confirmed from stored sources) turned that default off again. Before
# 2.5 the default was on in main NIGHTLIES for a while: pytorch/pytorch#125343 ("enable cuDNN SDPA by default on H100")
# landed on main, was reverted out of the 2.4 release branch by #128539 (2024-06-12, "Reverted in main") and, after a
# second landing, reverted from main again on 2024-06-28; the date it first landed on main was not confirmed from stored
# sources. So a nightly of about May-June 2024 may have run cuDNN on Hopper (the fms-fsdp compile table's, May 2024:
# calibration/published/llm-fms-fsdp-h100-compile.yaml says so); releases 2.2-2.4 and nightlies before that window run
# FlashAttention 2. The GPU cards' 'card' attention is torch 2.11's default SDPA, cuDNN on Hopper (llm/attention_kernels.py).
# So a trainer pinned to a torch of 2024-04 or earlier runs 'fa2' on Hopper; on the derived cards (A100) 'fa2' is their curve
# unchanged. Prompted by fms-fsdp's H100 rows (+26 to +50% fast): development for them (llm-fms-fsdp-h100.yaml, why).
PRE_CUDNN_SDPA = "fa2"
# llm/fsdp2_zero2.py's four switches (its ADOPTED), on for torch's zero 2 (llm/eager.py) and the FSDP2 frameworks since adopt2g;
# where cast_bytes is 0 (TORCHTITAN_FSDP2, the KEMPNERFORGE_FSDP2 forms) zero2_bf16_weights has no casts to drop: on for one spelling
FSDP2_ZERO2 = dict.fromkeys(("zero2_fsdp2", "zero2_regather", "zero2_exposed", "zero2_bf16_weights"), True)
# torchtitan's FSDP2 without torch.compile (issue 44; torchtitan 1ea476e9f, 2024-04-24, the code of its first A100 tables):
# fully_shard per TransformerBlock and the root, MixedPrecisionPolicy(param_dtype=bf16, reduce_dtype=fp32)
# (parallelize_llama.py L220-239): bf16 gathers of the fp32 shard (param_bytes 2) and fp32 reduce_scatters (grad_bytes 4),
# each unsharded bf16 gradient copied to fp32 before its reduce_scatter (foreach_reduce: 2 read + 4 written per weight
# element, grad_accumulate_bytes 6); fp32 shard + fp32 gradient + two fp32 AdamW moments (4 + 4 + 8 = param 2 + grad 4
# + state 10, as the runner's FSDP2); no autocast: bf16 compute and residual stream (residual_bytes 2, cast_bytes 0);
# AdamW(foreach=True) (train.py L95-98; priced at the fused 28 bytes, < 0.3% of these steps either way); the Llama
# block in eager PyTorch (models/llama/model.py: wq / wk / wv apart, rotary, RMSNorm and SwiGLU unfused, SDPA with
# is_causal, the logits cast .float() before cross_entropy: eager's op list and 12-byte loss peak); its collectives beside
# compute at the card's measured comm_overlap (as FSDP2, llm/eager.py); no host cost (none measured for these hosts).
# reshard_after_forward False on the last block only (L232) is not modelled (one layer's gather of L, < 1/L).
# Attention: SDPA's flash backend, FlashAttention 2 (PRE_CUDNN_SDPA below), a torch nightly of April 2024.
TORCHTITAN_FSDP2 = FrameworkSpec("torchtitan-fsdp2", fused_qkv=False, hybrid_shard=True, param_bytes=2.0, grad_bytes=4.0, state_bytes=10.0, eager=True,
                                 persistent_grads=False, residual_bytes=2, adam_bytes=28.0, grad_accumulate_bytes=6.0, comm_interference=True, zero2_wait=True,
                                 transformer_engine=False, logit_bytes=12.0, rope_fusion=False, attention_kernel=PRE_CUDNN_SDPA, **FSDP2_ZERO2, **EAGER_LOSS)
# IBM's fms-fsdp (foundation-model-stack/fms-fsdp 7746dac, 2024-03, the code of its README / PyTorch-blog table) under
# PyTorch FSDP1: FullyShardedDataParallel over the whole model, one unit per LLaMABlock, sharding_strategy 'fsdp' =
# FULL_SHARD, mixed_precision True = bfSixteen (param_dtype, reduce_dtype and buffer_dtype bf16:
# fms_fsdp/policies/mixed_precision.py), so bf16 gathers AND bf16 reduce_scatters (grad_bytes 2) of the bf16 unsharded
# gradient as it is (no up-cast: grad_accumulate_bytes 0), fp32 flat shard + fp32 sharded gradient + AdamW moments
# (16 bytes per parameter); limit_all_gathers True; use_torch_compile False; optim.AdamW defaults (main_training.py). The
# model is ibm-fms's LLaMA (foundation-model-stack b06c5dfb, 2024-02): query / key / value Linears apart, GatedLinearUnit
# w1 / wg / w2, eager LayerNormParameterized (RMS) and rotary, keys / values expanded for GQA, SDPA with is_causal, the
# logits from the untied reversible embedding in bf16 into torch's CrossEntropyLoss: eager's op list; the card's
# NCCL / compute interference beside compute (as FSDP2); no host cost (FSDP1's hooks not measured). Attention: SDPA's
# flash backend, FlashAttention 2 (PRE_CUDNN_SDPA below; PyTorch nightlies of Nov 2023 - Feb 2024, the blog's).
FMS_FSDP = FrameworkSpec("fms-fsdp", fused_qkv=False, hybrid_shard=True, param_bytes=2.0, grad_bytes=2.0, state_bytes=10.0, eager=True,
                         persistent_grads=False, residual_bytes=2, adam_bytes=28.0, grad_accumulate_bytes=0.0, comm_interference=True,
                         transformer_engine=False, logit_bytes=12.0, rope_fusion=False, attention_kernel=PRE_CUDNN_SDPA, zero2_wait=True, **EAGER_LOSS)
# fms-fsdp with torch.compile (fms-fsdp ed74fd5, 2024-05-09, the README table 'numbers are updated with torch.compile';
# issue 44, session 42 fsdpsrc, written before that table's rows were predicted): main_training.py wraps the model in
# FSDP1 (use_orig_params = use_torch_compile) and then calls torch.compile(model) on the whole FSDP model; train_config
# use_torch_compile True. Dynamo breaks the graph at every FSDP unit's hooks, so each LLaMABlock is its own graph, as
# llm/compiled.py prices a block compiled on its own (its fused memory-bound kernels; GEMMs and SDPA as eager's, SDPA
# FlashAttention 2 under the torch of May 2024); the FSDP1 collectives, dtypes and memory as fms-fsdp's. The compiled
# block under FSDP is not measured here (compiled.py's rows are one GPU): a caveat says so.
FMS_FSDP_COMPILE = replace(FMS_FSDP, name="fms-fsdp-compile", compiled=True)
# KempnerForge's trainer (KempnerInstitute/KempnerForge 01b461a, 2026-04-05; calibration/published/llm-kempnerforge-h200-
# fsdp2.yaml, session 45): FSDP2 laid out as torchtitan's (fully_shard per TransformerBlock and the root,
# MixedPrecisionPolicy bf16 parameters / fp32 reduce, fused AdamW, checkpoint_wrapper per block for full AC), its Llama block
# in eager torch; attention F.scaled_dot_product_attention(is_causal) on a torch of 2026, whose Hopper backend is cuDNN's
# (the GPU card's measured SDPA, 'card'; the repository's 13B profile lists aten::_cudnn_attention_backward). Not priced: the
# repeat_interleave copies of K and V to the query heads before SDPA. Its no-sync gradient accumulation (training/grad.py
# maybe_no_sync) is parallel.grad_sync: step (llm/grad_sync.py), not this spec.
# Its weights are bf16 (mixed_precision bf16 is the master dtype: config/training.py param_dtype, `model.to(dtype=param_dtype)`
# in distributed/parallel.py and scripts/train.py at 5666d0d; found in session 46, applied in session 58), so the fused
# torch.optim.AdamW keeps bf16 moments: 2 + 4 bytes a sharded parameter (state_bytes 4, not torchtitan's fp32 master and
# moments), FSDP2's sharded gradient in the parameter's dtype after its fp32 reduce (grad_buffer_bytes 2; the no-sync
# accumulator stays fp32: grad_bytes), and the step reads parameter, gradient and moments and writes parameter and moments at
# 2 bytes each (adam_bytes 14). Its loss is F.cross_entropy on the bf16 logits (training/loss.py, no up-cast) with the
# logits' name held through the backward (scripts/train.py): 8 bytes a logit at the backward's peak, measured
# (calibration/h200x1-lossbytes58-2026-12-02: 8.00 kept, 6.00 deleted; the .float() loss 14 / 12), logit_bytes 8.
# These are the trainer's, compiled or not (session 59: its one eager row had kept torchtitan's dtypes through a name it
# shared with Crusoe's files, which now name torchtitan-fsdp2-card).
TORCHTITAN_FSDP2_CARD = replace(TORCHTITAN_FSDP2, name="torchtitan-fsdp2-card", attention_kernel="card")
KEMPNERFORGE_FSDP2 = replace(TORCHTITAN_FSDP2_CARD, name="kempnerforge-fsdp2", state_bytes=4.0, grad_buffer_bytes=2.0,
                             adam_bytes=14.0, logit_bytes=8.0)
# ... with compile_model true (session 46): build_parallel_model applies checkpoint_wrapper per block, fully_shard, then
# torch.compile(model) (kempnerforge/distributed/parallel.py at 01b461a): the checkpoint is traced into each block's graph
# and dynamo breaks the graph at FSDP2's hooks (llm/compiled.py "Checkpointed", ckpt_in_graph; seen in the llm-step
# runner's --compile-scope model, which builds the same order). Not priced: the root's compiled embedding, final norm,
# head and loss (eager's kernels priced), Inductor's fusion across block boundaries on one GPU without FSDP's breaks.
# Its dtypes and loss bytes are the eager spelling's (above).
KEMPNERFORGE_FSDP2_COMPILE = replace(KEMPNERFORGE_FSDP2, name="kempnerforge-fsdp2-compile", compiled=True, ckpt_in_graph=True, dtensor_sp=True)
# Hugging Face transformers' Llama under its Trainer (issue 44, session 55 hfds55; docs/models/llm.md "Hugging Face trainers"
# gives every value's source): LlamaForCausalLM (transformers 00227283, modeling_llama.py): q / k / v / o and gate / up /
# down separate nn.Linear, eager LlamaRMSNorm (fp32 upcast) and rotary (rotate_half, torch.cat), SDPA's flash backend or
# flash_attention_2 (FlashAttention 2), logits .float() into CrossEntropyLoss: eager's op list and 12-byte loss peak, as
# fms-fsdp's LLaMA. Not priced: the loss's shift_logits .contiguous() copy (transformers < 4.46), the host's hooks.
HF_LLAMA = dict(fused_qkv=False, eager=True, persistent_grads=False, residual_bytes=2, logit_bytes=12.0, rope_fusion=False,
                hf_llama_saves=True, transformer_engine=False, attention_kernel=PRE_CUDNN_SDPA, **EAGER_LOSS)
# DeepSpeed ZeRO 1 / 2 / 3 (parallel.zero) under the Trainer's bf16 (DeepSpeed v0.16.4): module.bfloat16() (engine.py L1231: bf16
# weights and residual stream, no autocast), communication_data_type bf16 (L939-950): bf16 gathers (param_bytes 2) and
# reductions (grad_bytes 2; ZeRO-1/2's bucketed all_reduce since #4695, priced as the fp32 reduce_scatter of equal bytes);
# fp32 master + Adam moments (12); the step's partition: flatten (2 + 2) and upcast (2 + 4) of the bf16 gradient, Adam (28),
# the fp32 -> bf16 copy (4 + 2) = 44 B (stage_1_and_2.py L1881-1894); each gradient copied into the contiguous ipg bucket
# (contiguous_gradients: 2 + 2, grad_accumulate_bytes 4); reduce_bucket_size 5e8 (config.py L109; LLaMA-Factory's z2 file);
# ZeRO-3 fetches module by module (zero3_module_calls: the Trainer's 'auto' stage3_prefetch_bucket_size 0.9 h^2 and
# reduce_bucket_size h^2, accelerate v1.2.0 accelerator.py L1803, let about one matrix per call); ZeRO-2's reduction waited
# for after each micro-batch (zero2_wait). overlap_comm false (DeepSpeed's default for stages 1-2, LLaMA-Factory's
# examples/deepspeed files for 2 and 3): the reductions on the compute stream (dp_on_compute_stream; llm/dp_beside.py); ZeRO-3's
# gathers async and prefetched beside the compute whatever overlap_comm says, at the card's comm_overlap (comm_interference).
HF_DEEPSPEED = FrameworkSpec("hf-deepspeed", param_bytes=2.0, grad_bytes=2.0, state_bytes=12.0, adam_bytes=44.0, grad_accumulate_bytes=4.0,
                             bucket_params=500_000_000, zero2_wait=True, zero3_module_calls=True, dp_on_compute_stream=True,
                             comm_interference=True, deepspeed_zero3_buffers=True, **HF_LLAMA)
# ... with overlap_comm true (DeepSpeed's stage-3 default, config.py L353; transformers' documented ds_config examples): the
# collectives on their own streams beside compute at the card's comm_overlap, as the FSDP trainers'.
HF_DEEPSPEED_OVERLAP = replace(HF_DEEPSPEED, name="hf-deepspeed-overlap", dp_on_compute_stream=False)
# accelerate's FSDP1 under the Trainer (accelerate v1.2.0 utils/dataclasses.py): FULL_SHARD (L1409) or HYBRID_SHARD, one unit
# per LlamaDecoderLayer (TRANSFORMER_BASED_WRAP), MixedPrecision(param_dtype = reduce_dtype = bf16) (L1793: bf16 gathers and
# reduce_scatters of the unsharded bf16 gradient, no up-cast), the fp32 flat shard, its fp32 gradient and AdamW moments: the
# mechanism and dtypes of fms-fsdp's FSDP1 (FMS_FSDP), whose values it takes; the backward's gathers one unit ahead (the
# Trainer's default backward_prefetch NO_PREFETCH leaves the next unit's gather to its pre-backward hook: assumed as early).
HF_FSDP1 = replace(FMS_FSDP, name="hf-fsdp1", **HF_LLAMA)
FRAMEWORKS = {f.name: f for f in (MEGATRON, TORCH_AMP, MEGATRON_UNFUSED, MEGATRON_LOCAL, MEGATRON_UNFUSED_LOSS, MEGATRON_2023_SYNC, COMPOSER_FSDP,
                                  MEGATRON_FA2, TORCHTITAN_FSDP2, TORCHTITAN_FSDP2_CARD, FMS_FSDP, FMS_FSDP_COMPILE, KEMPNERFORGE_FSDP2,
                                  KEMPNERFORGE_FSDP2_COMPILE, HF_DEEPSPEED, HF_DEEPSPEED_OVERLAP, HF_FSDP1)}
