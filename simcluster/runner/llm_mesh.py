"""The llm-step runner's parallel wrappers, one- and two-dimensional (issue 44).

One dimension: ddp (DistributedDataParallel over every rank), fsdp (FSDP2: fully_shard per decoder layer and the root,
bf16 parameters, fp32 reduction), tp (torch.distributed.tensor.parallel over every rank: q/k/v, gate, up column-wise,
o and down row-wise; the embedding, final norm and LM head replicated).

Two dimensions, a device mesh (dp, inner) of world / SIZE x SIZE ranks, the inner groups of SIZE consecutive ranks
(ranks 0..SIZE-1 form the first group), the dp groups across them (rank r with r + SIZE, ...):
  tp+ddp   the tp wrapper inside each group of --tp ranks; DDP across the groups, its process group the mesh's dp
           dimension; the TP layers' DTensor parameters handed to DDP as local tensors
           (torch.distributed.tensor.parallel.ddp._pre_dp_module_transform, torch's own TP + DDP composition)
  tp+fsdp  the tp wrapper inside each group of --tp ranks; FSDP2 across the groups (fully_shard on the mesh's dp
           dimension: each TP shard sharded again over dp), as torchtitan composes TP and FSDP
  pp+ddp   a pipeline of --pp stages inside each group (llm_pipeline.Pipeline with the group's ranks), each stage
           module replicated by DDP across the groups; torch.distributed.pipelining runs every backward but a step's
           last under DDP's no_sync, so the gradients are all-reduced once per step
torch is passed in (imported by llm_step.main only).
"""

from __future__ import annotations

MESH_MODES = ("tp+ddp", "tp+fsdp", "pp+ddp")


def mesh(torch, mode: str, world: int, size: int, device):
    """The (dp, inner) device mesh of a two-dimensional mode; SystemExit with the reason where the ranks do not split."""
    if size < 2 or world % size or world // size < 2:
        raise SystemExit(f"--mode {mode}: {world} ranks do not split into two or more groups of {size} (>= 2) ranks")
    from torch.distributed.device_mesh import init_device_mesh

    inner = mode.split("+")[0]
    return init_device_mesh(device.type, (world // size, size), mesh_dim_names=("dp", inner))


def tensor_parallel(model, tp_mesh, cfg: dict):
    """The decoder layers' projections split over the mesh's ranks (the module docstring's tp)."""
    from torch.distributed.tensor.parallel import ColwiseParallel, RowwiseParallel, parallelize_module

    size = tp_mesh.size()
    if cfg["heads"] % size or cfg["kv_heads"] % size:
        raise SystemExit(f"tensor parallel: heads {cfg['heads']} and kv_heads {cfg['kv_heads']} must divide by {size}")
    plan = {"attn.q": ColwiseParallel(), "attn.k": ColwiseParallel(), "attn.v": ColwiseParallel(),
            "attn.o": RowwiseParallel(), "mlp.gate": ColwiseParallel(), "mlp.up": ColwiseParallel(),
            "mlp.down": RowwiseParallel()}
    for layer in model.layers:
        parallelize_module(layer, tp_mesh, plan)
    return model


def fully_sharded(torch, model, dp_mesh=None, reshard: bool = True):
    """FSDP2 per decoder layer and at the root: bf16 parameters gathered, fp32 gradient reduction; reshard False:
    reshard_after_forward=False on every layer (ZeRO-2's layout: the gathered parameters kept from forward to backward,
    resharded after the backward; llm_accum.py's --reshard-after-forward)."""
    from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard

    mp = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32)
    for layer in model.layers:
        fully_shard(layer, mesh=dp_mesh, mp_policy=mp, reshard_after_forward=reshard)
    fully_shard(model, mesh=dp_mesh, mp_policy=mp, reshard_after_forward=reshard)
    return model


def data_parallel(torch, module, device, group=None):
    from torch.nn.parallel import DistributedDataParallel

    return DistributedDataParallel(module, device_ids=[device.index] if device.type == "cuda" else None, process_group=group)


def wrap(torch, model, mode: str, world: int, cfg: dict, device, size: int = 2, reshard: bool = True):
    """The model wrapped for `mode` (single: unchanged); pp and pp+ddp are llm_pipeline's; `reshard` FSDP2's
    reshard_after_forward (mode fsdp)."""
    if mode in ("ddp", "cp"):   # cp: DDP over the context-parallel ranks (llm_cp.py)
        return data_parallel(torch, model, device)
    if mode == "fsdp":
        return fully_sharded(torch, model, reshard=reshard)
    if mode == "tp":
        from torch.distributed.device_mesh import init_device_mesh

        return tensor_parallel(model, init_device_mesh(device.type, (world,)), cfg)
    if mode in ("tp+ddp", "tp+fsdp"):
        grid = mesh(torch, mode, world, size, device)
        tensor_parallel(model, grid["tp"], cfg)
        if mode == "tp+fsdp":
            return fully_sharded(torch, model, grid["dp"])
        from torch.distributed.tensor.parallel.ddp import _pre_dp_module_transform

        _pre_dp_module_transform(model)
        return data_parallel(torch, model, device, grid["dp"].get_group())
    return model


def layout(mode: str, world: int, size: int) -> dict:
    """The run document's record of its mesh: each dimension's size, inner dimension last."""
    if mode in MESH_MODES:
        return {"dp": world // size, mode.split("+")[0]: size}
    return {{"ddp": "dp", "fsdp": "dp", "tp": "tp", "pp": "pp", "cp": "cp"}.get(mode, "dp"): world}
