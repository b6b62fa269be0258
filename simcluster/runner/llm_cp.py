"""The llm-step runner's context-parallel mode (issue 44): --mode cp over every rank of the torchrun job.

Each step runs forward and backward inside torch.distributed.tensor.experimental.context_parallel on a 1-D "cp" mesh
of all ranks (as torchtitan's train step does): the step's tokens, labels and the rotary cos / sin tables of the whole
sequence are given as its buffers (sequence dims 1, 1, 2, 2; fresh copies each step, not restored), so torch reorders
them with its head-tail load balancer and keeps each rank's s / cp positions, labels and rotary angles consistent; the
decoder takes the sharded tables (Decoder.forward's `rope`) instead of building them from its local length. SDPA runs
on torch's flash backend only (sdpa_kernel): its ring attention dispatches flash, efficient and cuDNN, and cuDNN's
backward fails its stride assert under CP (pytorch/pytorch#176915). The rotate method is set to all-gather (torch's
default). The weights are replicated: DDP over the same ranks averages the gradients (each rank's loss is the mean over
its own tokens, the same count on every rank). The document records the CP options read back from torch ("context_parallel")
and each rank's step time and peak memory per shape ("ranks").
GQA goes through flash under CP as is (enable_gqa; both registered cp sets ran so): session 36's prepared fallback that
repeated the K / V heads first (SIMCLUSTER_CP_REPEAT_KV, as torchtitan does, pytorch/torchtitan#1283) was never used
and is gone (session 37); documents of that time record "repeat_kv": false.
torch is passed in (imported by llm_step.main only).
"""

from __future__ import annotations


def check_shapes(shapes: list[tuple[int, int]], world: int) -> None:
    """One shape per process: context_parallel patches SDPA (and shards its buffers) on entry and undoes it after its
    body, not in a finally (torch's source: the dispatcher is disabled after its yield), so an exception inside it (an OOM, which run_shape records
    and goes on from) would leave SDPA patched for the next shape's steps. Head-tail load balancing splits each
    sequence into 2 x world chunks."""
    if len(shapes) > 1:
        raise SystemExit(f"--mode cp: one --shapes entry per process, not {len(shapes)} (a failed step leaves SDPA patched)")
    bad = [seq for seq, _ in shapes if seq % (2 * world)]
    if bad:
        raise SystemExit(f"--mode cp: seq {bad[0]} is not a multiple of 2 x {world} ranks (head-tail load balancing)")


def _options(context_parallel):
    """torch's CP module, which holds set_rotate_method and _cp_options: the first of context_parallel's own __module__
    (torch re-exports it, so that may name the public package) and the modules torch defines it in (2.9+:
    _context_parallel._attention; before: _attention) that has set_rotate_method. SystemExit where none has it: the
    all-gather rotation the model prices would not be set (the probe of session 36 found __module__ alone naming the
    public package on torch 2.11)."""
    import importlib

    names = [getattr(context_parallel, "__module__", None) or "?",
             "torch.distributed.tensor.experimental._context_parallel._attention",
             "torch.distributed.tensor.experimental._attention"]
    for name in names:
        try:
            module = importlib.import_module(name)
        except ImportError:
            continue
        if callable(getattr(module, "set_rotate_method", None)):
            return module
    raise SystemExit(f"--mode cp: none of {', '.join(names)} has set_rotate_method (the all-gather rotation cannot be set)")


class ContextParallel:
    def __init__(self, torch, world: int, device):
        from torch.distributed.device_mesh import init_device_mesh
        from torch.distributed.tensor.experimental import context_parallel
        from torch.nn.attention import SDPBackend, sdpa_kernel

        self.torch, self.world, self.device = torch, world, device
        self.mesh = init_device_mesh(device.type, (world,), mesh_dim_names=("cp",))
        self.context_parallel, self.sdpa_kernel, self.backend = context_parallel, sdpa_kernel, SDPBackend.FLASH_ATTENTION
        self.module = _options(context_parallel)
        self.module.set_rotate_method("allgather")

    def step_maker(self, model, opt, amp: bool):
        """make_step(inputs, labels) for run_shape: one CP step over the whole sequences (module docstring)."""
        torch = self.torch
        raw = getattr(model, "module", model)   # DDP's wrapped decoder

        def make(inputs, labels):
            # the embedding output's dtype (fp32 weights under amp), as Decoder.forward builds them
            cos, sin = raw.rotary(inputs.shape[1], inputs.device, raw.embed.weight.dtype)

            def step():
                bufs = [inputs.clone(), labels.clone()] + ([cos.clone(), sin.clone()] if cos is not None else [])
                dims = [1, 1, 2, 2][:len(bufs)]
                with self.sdpa_kernel([self.backend]), self.context_parallel(self.mesh, buffers=bufs, buffer_seq_dims=dims,
                                                                              no_restore_buffers=set(bufs)):
                    with torch.autocast(inputs.device.type, dtype=torch.bfloat16, enabled=amp):
                        loss = model(bufs[0], bufs[1], tuple(bufs[2:]) if len(bufs) > 2 else None)
                    loss.backward()
                opt.step()
                opt.zero_grad(set_to_none=True)
                return loss
            return step
        return make

    def gather(self, record: dict) -> list[dict]:
        """Every rank's peak memory and median step of a shape (rank order; collective: every rank calls it)."""
        import torch.distributed as dist

        mine = {k: record.get(k) for k in ("status", "loss", "median_step_s", "max_memory_allocated_bytes", "max_memory_reserved_bytes",
                                           "memory_allocated_steady_bytes")}
        mine.update(rank=dist.get_rank(), stage=0)   # one pipeline stage: every rank against its one predicted peak
        out: list = [None] * dist.get_world_size()
        dist.all_gather_object(out, mine)
        return out

    def describe(self) -> dict:
        opts = getattr(self.module, "_cp_options", None)
        return {"api": "torch.distributed.tensor.experimental.context_parallel", "mesh": {"cp": self.world},
                "module": getattr(self.module, "__name__", None), "sdpa_backend": str(self.backend),
                "rotate_method": str(getattr(opts, "rotate_method", None)),
                "load_balance": getattr(opts, "enable_load_balance", None),
                "convert_to_f32": getattr(opts, "convert_to_f32", None), "gradient_sync": "DistributedDataParallel, all ranks"}
