"""Megatron-Core MoE decoder steps (forward + backward, no optimizer): one JSON document on stdout (rank 0).

    torchrun --nproc-per-node 4 studies/megatron_moe/device.py --layers 4 --hidden 2048 --heads 32 --kv-heads 4 \
        --experts 128 --top-k 8 --expert-ffn 768 --seq 4096 --ep 4

Megatron-Core's own GPTModel (megatron-core from PyPI, its local layer spec: no Transformer Engine, no Apex), every
layer a MoE layer (router, the alltoall token dispatcher, SequentialMLP experts: one GEMM set per local expert, torch
permutations), expert parallelism `--ep` over the ranks (tensor and pipeline parallelism 1, data parallel = ranks),
bf16 parameters, RMSNorm, rotary embeddings, QK-norm, SwiGLU experts, Megatron's unfused attention core
(DotProductAttention) and its vocabulary-parallel cross-entropy on random tokens. Each step is a forward and a
backward of one micro-batch; no gradient reduction and no optimizer step (the expert layers' compute and dispatch are
what it times). Wall clock of `--steps` steps between device synchronisations after `--warmup`, and one profiled step
(kernels, their summed GPU time, CUDA runtime calls: the host synchronisations the dispatcher makes). megatron-core and
torch are imported inside main only. `--pin` binds each rank's process to its own physical cores on its GPU's NUMA node
before torch is imported (pinning.py). The JSON (rank 0 writes it) has every rank's step and host-issue times of each
timed step (the host's time to issue one step, before the closing synchronisation), gathered by the eager runner's
simcluster/runner/host_issue.gather (its keys host_issue_s_by_rank, step_times_s_by_rank, host_issue_median_s_by_rank,
slowest_issue_rank; format 3: written once under those names -- format 2 also wrote them as host_issue_s_per_rank,
step_times_s_per_rank, median_host_issue_s_per_rank, which compare.py still reads), placement, pinning and thread count,
and the launch (warm-up, steps, CUDA_MODULE_LOADING).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time


def _config(torch, args):
    import torch.nn.functional as F
    from megatron.core.transformer.transformer_config import TransformerConfig

    return TransformerConfig(
        num_layers=args.layers, hidden_size=args.hidden, num_attention_heads=args.heads, num_query_groups=args.kv_heads,
        kv_channels=args.head_dim, ffn_hidden_size=args.expert_ffn, num_moe_experts=args.experts, moe_router_topk=args.top_k,
        moe_ffn_hidden_size=args.expert_ffn, moe_token_dispatcher_type=args.dispatcher, moe_grouped_gemm=False,
        moe_router_load_balancing_type="aux_loss", moe_aux_loss_coeff=1e-3, moe_permute_fusion=False,
        moe_router_pre_softmax=args.top_k == 1,   # Megatron-Core 0.14 refuses top-1 without it (moe4's switch runs, session 31)
        expert_model_parallel_size=args.ep, add_bias_linear=False, gated_linear_unit=True, activation_func=F.silu,
        normalization="RMSNorm", qk_layernorm=True, bf16=True, params_dtype=torch.bfloat16, pipeline_dtype=torch.bfloat16,
        hidden_dropout=0.0, attention_dropout=0.0, bias_dropout_fusion=False, apply_rope_fusion=False,
        gradient_accumulation_fusion=False, masked_softmax_fusion=False, persist_layer_norm=False,
        use_cpu_initialization=not torch.cuda.is_available())


def _placement(torch, device) -> dict:
    """Where this rank's process runs: the CPUs it may use, the CPU it is on now and that CPU's NUMA node, its GPU's
    NUMA node (Linux /proc and /sys; what is not readable is left out). Session 30: one rank's host issued ~1.2-1.6x
    slower than the others' and the traces could not say why."""
    info: dict = {}
    try:
        info["cpus_allowed"] = sorted(os.sched_getaffinity(0))
        with open("/proc/self/stat") as f:
            cpu = int(f.read().rsplit(")", 1)[1].split()[36])
        info["cpu_now"] = cpu
        nodes = [n for n in os.listdir(f"/sys/devices/system/cpu/cpu{cpu}") if n.startswith("node")]
        info["cpu_numa_node"] = int(nodes[0][4:]) if nodes else None
        props = torch.cuda.get_device_properties(device)
        bus = f"{props.pci_domain_id:04x}:{props.pci_bus_id:02x}:{props.pci_device_id:02x}.0"
        with open(f"/sys/bus/pci/devices/{bus}/numa_node") as f:
            info["gpu_pci"], info["gpu_numa_node"] = bus, int(f.read())
    except (OSError, AttributeError, ValueError, IndexError):
        pass
    return info


def _threads(pinned: dict | None) -> dict:
    """This process's threads at the end and how many may run outside its pinned CPUs (pinning.thread_affinity)."""
    try:
        from pinning import thread_affinity

        return thread_affinity(pinned["cpus"] if pinned else None)
    except (ImportError, OSError):
        return {}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    for name, default in (("layers", 4), ("hidden", 2048), ("heads", 32), ("kv-heads", 4), ("head-dim", 128), ("experts", 128),
                          ("top-k", 8), ("expert-ffn", 768), ("vocab", 32768), ("seq", 4096), ("micro-batch", 1), ("ep", 1),
                          ("warmup", 3), ("steps", 8), ("profile", 1)):
        ap.add_argument(f"--{name}", type=int, default=default)
    ap.add_argument("--dispatcher", choices=("alltoall", "allgather"), default="alltoall", help="Megatron's token dispatcher")
    ap.add_argument("--pin", action="store_true", help="bind this rank's process to its own physical cores on its GPU's NUMA "
                    "node before torch is imported (studies/megatron_moe/pinning.py; the moe3 set's arm B)")
    ap.add_argument("--trace", metavar="FILE", help="keep rank 0's profiled step as a gzipped Chrome trace (Perfetto); a FILE "
                    "with {rank} in it: every rank's")
    args = ap.parse_args(argv)
    local = int(os.environ.get("LOCAL_RANK", "0"))
    pinned = None
    if args.pin:   # before torch: every thread started from here on inherits the set
        import pinning

        pinned = pinning.pin(local, int(os.environ.get("LOCAL_WORLD_SIZE", "1")))
    import torch
    import torch.distributed as dist
    from megatron.core import parallel_state
    from megatron.core.models.gpt.gpt_layer_specs import get_gpt_layer_local_spec
    from megatron.core.models.gpt.gpt_model import GPTModel
    from megatron.core.tensor_parallel.random import model_parallel_cuda_manual_seed
    from megatron.core.transformer.moe import moe_utils

    from simcluster.runner import host_issue  # on PYTHONPATH beside megatron-core (device_run.sh), as llm_profile below

    for name in ("te_general_gemm",):   # megatron-core 0.14 reads it unguarded when Transformer Engine is absent
        if not hasattr(moe_utils, name):
            setattr(moe_utils, name, None)
    cuda = torch.cuda.is_available()
    if cuda:
        torch.cuda.set_device(local)
    dist.init_process_group("nccl" if cuda else "gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    parallel_state.initialize_model_parallel(tensor_model_parallel_size=1, pipeline_model_parallel_size=1,
                                             expert_model_parallel_size=args.ep)
    if cuda:
        model_parallel_cuda_manual_seed(1234)
    torch.manual_seed(1234)
    config = _config(torch, args)
    spec = get_gpt_layer_local_spec(num_experts=args.experts, moe_grouped_gemm=False, qk_layernorm=True,
                                    normalization="RMSNorm")
    model = GPTModel(config, spec, vocab_size=args.vocab, max_sequence_length=args.seq, position_embedding_type="rope",
                     share_embeddings_and_output_weights=False)
    device = torch.device("cuda", local) if cuda else torch.device("cpu")
    model = model.to(device=device, dtype=torch.bfloat16)
    gen = torch.Generator(device="cpu").manual_seed(rank)
    tokens = torch.randint(0, args.vocab, (args.micro_batch, args.seq + 1), generator=gen).to(device)
    inputs, labels = tokens[:, :-1].contiguous(), tokens[:, 1:].contiguous()
    position_ids = torch.arange(args.seq, device=device).unsqueeze(0).expand(args.micro_batch, -1)
    sync = torch.cuda.synchronize if cuda else (lambda: None)

    def step():
        loss = model(inputs, position_ids, None, labels=labels)
        loss.float().mean().backward()
        for p in model.parameters():
            p.grad = None
            if hasattr(p, "main_grad"):
                p.main_grad = None

    record = {"status": "ok"}
    try:
        for _ in range(args.warmup):
            step()
        sync()
        times, issue = [], []
        for _ in range(args.steps):
            t0 = time.perf_counter()
            step()
            issue.append(time.perf_counter() - t0)
            sync()
            times.append(time.perf_counter() - t0)
        record.update(step_times_s=times, median_step_s=statistics.median(times), host_issue_s=issue)
        if cuda:
            record["max_memory_allocated_bytes"] = torch.cuda.max_memory_allocated(device)
        if args.profile > 0:
            from simcluster.runner.llm_profile import profile_steps

            trace = args.trace.format(rank=rank) if args.trace and "{rank}" in args.trace else (args.trace if rank == 0 else None)
            record["profile"] = profile_steps(torch, step, sync, args.profile, trace)
    except Exception as exc:  # noqa: BLE001 - recorded, the document still comes out
        import traceback

        record.update(status="error", error=f"{type(exc).__name__}: {exc}"[:500], where=traceback.format_exc()[-1500:])
    # every rank's issue and step times of each timed step (the eager runner's gather, issue 44: collective, after the
    # timed and profiled steps), then its median step, placement, pinning and threads
    issue_fields = host_issue.gather(torch, record, world)
    ranks = [None] * world
    mine = {"median_step_s": record.get("median_step_s"), "placement": _placement(torch, device) if cuda else {},
            "pin": pinned, "threads": _threads(pinned)}
    dist.all_gather_object(ranks, mine)
    medians = [r["median_step_s"] for r in ranks]
    if rank == 0:
        import megatron.core

        props = torch.cuda.get_device_properties(device) if cuda else None
        params = sum(p.numel() for p in model.parameters())
        doc = {"tool": "megatron-moe", "format": 3, "world_size": world, "device": props.name if props else "cpu",
               "torch": torch.__version__, "megatron_core": getattr(megatron.core, "__version__", "?"),
               "python": platform.python_version(), "nccl": ".".join(map(str, torch.cuda.nccl.version())) if cuda else None,
               "model": {k.replace("-", "_"): getattr(args, k.replace("-", "_")) for k in
                         ("layers", "hidden", "heads", "kv-heads", "head-dim", "experts", "top-k", "expert-ffn", "vocab", "seq",
                          "micro-batch")},
               "parallel": {"ep": args.ep, "tp": 1, "pp": 1, "dp": world}, "dispatcher": args.dispatcher,
               "rank0_parameters": params,
               "spec": "megatron-core local (no TE): SequentialMLP experts, alltoall dispatcher, unfused DotProductAttention",
               "median_step_s_per_rank": medians,
               "placement_per_rank": [r["placement"] for r in ranks],
               "launch": {"warmup": args.warmup, "steps": args.steps, "pin": args.pin,
                          "cuda_module_loading": os.environ.get("CUDA_MODULE_LOADING"),
                          "omp_num_threads": os.environ.get("OMP_NUM_THREADS")},
               "pin_per_rank": [r["pin"] for r in ranks], "threads_per_rank": [r["threads"] for r in ranks],
               **issue_fields, "rank0": record}
        json.dump(doc, sys.stdout, indent=1)
        sys.stdout.write("\n")
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
