"""Eager PyTorch training (the `llm-step` runner's code, simcluster/runner/llm_step.py) as a framework of the step model:
fp32 weights under bf16 autocast and torch AdamW (framework.TORCH_AMP), with the parallel wrapper the parallel block implies:
  dp > 1, zero 0   torch DDP: its reducer's fp32 bucket copy of the gradients (ddp_bucket_bytes 4; memory and the
                   step's bucket copies, work.ddp_bucket_copies_s); its bucket all_reduces and the backward they
                   overlap slow each other by the GPU card's measured comm_overlap (comm_interference, overlap.beside:
                   measured for all_reduce beside GEMMs over NVLink; the socket transport is not measured, and
                   validation/llm_two_gpu.py turns it off there)
  dp > 1, zero 3   FSDP2 (fully_shard per layer, MixedPrecisionPolicy bf16 parameters / fp32 reduce): parameters
                   gathered in bf16, the fp32 shard kept as optimizer state, no autocast weight copies; a bf16
                   residual stream and no attention-output copy in its saved tensors (bf16_param_block, memory); its
                   all_gathers / reduce_scatters beside the compute priced with the same comm_overlap (session 22:
                   all_reduce's terms taken for them, not measured for them)
  tp > 1           DTensor tensor parallelism of the decoder layers (no sequence parallelism); the embedding, final
                   norm and LM head replicated (tp_vocab_split False); each column-parallel linear (q, k, v, gate,
                   up) all-reduces its fp32 input gradient: 5 fp32 all_reduces per layer backward (tp_bwd_allreduces,
                   tp_bwd_bytes; a profiled 2-GPU 0.5B step shows 16 x 5 fp32 and 16 x 2 bf16 all_reduces of T h)
and the host cost of issuing each kernel in that mode (host.py), fitted on a folder of hidden-128 decoders run in
each mode on the machine (MODE-L<layers>.json, llm-step documents: calibration/h200x2-llm-host-2026-11-23 and its
device_run.sh). Composed (issue 44; unvalidated where no run measured them, docs/models/llm.md):
  tp > 1, dp > 1   DTensor TP inside, DDP (zero 0) or FSDP2 (zero 3) across the TP groups: each wrapper's terms above
                   together; the host cost of the tp mode (DTensor dispatch dominates)
  pp > 1           torch.distributed.pipelining: one stage per rank (virtual_stages > 1: ScheduleInterleaved1F1B,
                   Megatron's interleaved compute order, torch's sends and receives on one NCCL stream per rank:
                   llm/torch_p2p.py), pp_schedule 1f1b (Schedule1F1B: pp - r forwards, then
                   backward and forward in turn, Megatron's order) or gpipe (ScheduleGPipe); the boundary tensor is the
                   fp32 residual stream; the step runs under one autocast, whose cache casts each weight once per step;
                   each micro-batch's gradient is added into .grad (12 B per weight) and scale_grads divides them by m
                   (8 B per parameter); each stage holds its in-flight micro-batches' outputs (memory.py); the host cost
                   of the single mode (or of dp's / tp's wrapper)
  recompute full   torch.utils.checkpoint per decoder block (non-reentrant): the block's forward re-run in its backward,
                   its weights cast again under the recomputation's own autocast; only the block's fp32 input kept
                   (memory._checkpointed_live: the peak of the forward's end, the backward's start, one block's recompute)
  recompute_every N  (with full) every N-th block checkpointed, torchtitan's layer policy; recompute op: torchtitan's
                   op-level policy (llm/eager_ac.py); single GPU or dp only (spec_check.check_framework); host cost: the ckpt mode's per kernel of the
                   checkpointed blocks, the single mode's for the plain ones (every N), per step blended by their share
                   floor(L / N) / L (work._host_step_s); op: the op mode's own fit (hidden-128 runs with --ac-mode op:
                   the SAC cache's Python dispatch per aten op) split per phase, forward dearer than backward
                   (op_phase_factors, FrameworkSpec.host_bwd_kernel_s; held out on ophost2: 5.8% mean); the product's
                   op and ckpt terms: leases' fits at its host speed (leases.yaml scaled_to, lease_scaling); where a host
                   folder has no op runs, ckpt's (else single's) one cost per kernel, unsplit (caveats.sac_op_host)
  cp > 1           torch's context_parallel (llm/torch_cp.py: head-tail load balancing, all-gather K / V rotation,
                   ring SDPA on torch's flash kernel, attention_kernel fa2) with DDP over the dp x cp ranks (every rank
                   holds the weights and sees s / cp tokens of the same sequences): DDP's terms above over that group;
                   the host cost of the ddp mode (the ring's extra kernels counted; DTensor's dispatch of each SDPA
                   call not priced: unmeasured); no tp, pp, zero (ZeRO / FSDP) or recompute with it (mode_of)
  dp > 1, zero 2   FSDP2 with reshard_after_forward=False (the runner's --reshard-after-forward false, session 46):
                   ZeRO-2's layout in torch, each layer's bf16 parameters kept unsharded from its forward to its
                   backward (no backward all-gather; memory: every layer's gathered weights at the backward's start,
                   memory.py's zero-2 parameters), gradients reduce-scattered every micro-batch into fp32 shards; the
                   wrapper's terms as zero 3's, the step the model's ZeRO-2 path (gradient buckets reduced after each
                   backward, the parameters gathered once a step: FSDP2 gathers each micro-batch's forward, not priced;
                   FrameworkSpec.zero2_regather, off, prices it: llm/work.py) with zero2_wait on (llm/grad_sync.py)
Expert parallelism, ZeRO-1 and Megatron's selective recompute are refused at their key.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from functools import lru_cache
from pathlib import Path

from simcluster import strict
from simcluster.llm import compiled as compiled_layer
from simcluster.llm import eager_ac, eager_compiled, eager_leases, host
from simcluster.llm.framework import FSDP2_ZERO2, TORCH_AMP, TORCH_COMPILE, FrameworkSpec
from simcluster.llm.spec import BatchSpec, LlmConfigError, ParallelSpec, TransformerSpec

MODES = ("single", "ddp", "fsdp", "tp", "ckpt", "tp+ddp", "tp+fsdp", "compile", "op")   # the runner's modes with a host fit (fit_modes);
# compile: single with --compile (torch.compile per block: Inductor's wrapper launches, llm/compiled.py; issue 44);
# ckpt: single with --activation-checkpointing (issue 44, session 27); op: single with --ac-mode op (torchtitan's op
# policy: the SAC cache's dispatch per aten op, session 33). tp+ddp, tp+fsdp (the 2-D meshes over pairs of ranks)
# are fitted where a folder has them, but no layout takes them (host_mode): on the first 4-GPU set their fits put the
# 2-D steps 17-54% slow, tp's 5.9% / 15.3% mean (docs/models/llm-findings.md, session 28)
FALLBACK = {"ckpt": "single", "op": "ckpt"}   # a mode without a fit of its own takes this one's (fitted_mode)
# op's host cost per phase: a hidden-128 decoder's forward and backward issue times under the op policy (the ophost
# probe, development: tiny L24 seq 128, op_phase_factors)
OP_PHASES = Path(__file__).resolve().parents[2] / "calibration/h200x1-llm-ophost-2026-11-29/runs/tiny-L24-128x1.json"


def host_mode(par: ParallelSpec) -> str:
    """The runner mode whose host cost a layout takes: DTensor TP's dispatch where tp > 1, else FSDP2's or DDP's hooks
    where dp > 1, else torch.utils.checkpoint's (ckpt) for a checkpointed single GPU, else the plain module's (a pipeline
    stage issues its kernels like a single GPU). A mode without a fit of its own takes the single mode's (torch_framework)."""
    if par.tp > 1:   # TP x DP too: DTensor dispatch dominates (MODES says why not the 2-D modes' own fits)
        return "tp"
    if par.dp * par.cp > 1:   # context parallelism: DDP's hooks over the dp x cp ranks (llm/torch_cp.py)
        return "fsdp" if par.zero in (2, 3) else "ddp"   # zero 2: FSDP2's hooks, parameters kept from forward to backward
    if par.recompute == "op" and par.pp == 1:
        return "op"
    return "ckpt" if par.recompute == "full" and par.pp == 1 else "single"


def fitted_mode(mode: str, hosts: dict) -> str:
    """The mode whose host fit a layout of `mode` takes: its own where `hosts` has it, else FALLBACK's chain (op ->
    ckpt -> single); `mode` itself where none is fitted."""
    seen = mode
    while seen not in hosts and seen in FALLBACK:
        seen = FALLBACK[seen]
    return seen if seen in hosts else mode


def mode_of(par: ParallelSpec) -> str:
    """The layout's name as torch runs it (single, ddp, fsdp, tp, tp+ddp, tp+fsdp, pp-1f1b, pp-gpipe,
    pp-interleaved, pp-1f1b+ddp, ... with +ckpt under activation checkpointing; cp: context parallelism with DDP over
    its ranks, the runner's --mode cp, cp+ddp with dp > 1); LlmConfigError at the key for what torch cannot run or the
    model has no price for."""
    if par.ep != 1:
        raise LlmConfigError("parallel.ep", "framework torch: the eager decoder has no experts", hint="use framework: megatron")
    if par.cp > 1:
        if par.tp > 1 or par.pp > 1 or par.zero or par.recompute != "none":
            raise LlmConfigError("parallel.cp", "framework torch: context parallelism is modelled with DDP over the dp x cp "
                                 "ranks only (no tp, pp, zero (ZeRO / FSDP) or recompute)", hint="use framework: megatron")
        return "cp+ddp" if par.dp > 1 else "cp"
    if par.recompute == "selective":
        raise LlmConfigError("parallel.recompute", "framework torch checkpoints whole blocks (torch.utils.checkpoint per "
                             "layer: recompute: full); selective recompute is not modelled for it", hint="recompute: none or full")
    if par.zero == 1 or (par.zero == 2 and (par.dp < 2 or par.tp > 1 or par.pp > 1)):
        raise LlmConfigError("parallel.zero", f"framework torch has DDP (zero 0), FSDP2 (zero 3) and, over dp > 1 alone, "
                             f"FSDP2 with reshard_after_forward=False (zero 2); not ZeRO-{par.zero} with dp {par.dp}, tp "
                             f"{par.tp}, pp {par.pp}", hint="zero 0 or 3, or zero 2 with tp 1 and pp 1")
    parts = []
    if par.pp > 1:
        parts.append("pp-" + ("gpipe" if par.pp_schedule == "gpipe" else "interleaved" if par.virtual_stages > 1 else "1f1b"))
    if par.tp > 1:
        parts.append("tp")
    if par.dp > 1:
        parts.append({3: "fsdp", 2: "fsdp-zero2"}.get(par.zero, "ddp"))
    if par.recompute == "full":
        parts.append("ckpt" if par.recompute_every == 1 else f"ckpt-every{par.recompute_every}")
    if par.recompute == "op":
        parts.append("sac-op")
    return "+".join(parts) if parts and not parts[0].startswith(("ckpt", "sac")) else "+".join(["single"] + parts)


def torch_framework(par: ParallelSpec, hosts: dict[str, tuple[float, float, int]] | None = None,
                    compiled: bool = False) -> FrameworkSpec:
    """TORCH_AMP with the wrappers of the parallel setting (module docstring), composed: DTensor TP inside, DDP or
    FSDP2 across the TP groups, torch.distributed.pipelining's stages around them; and, where `hosts` has it
    (fit_modes), the host seconds per kernel and per step of host_mode's runner mode. `compiled`: each decoder block
    under torch.compile (TORCH_COMPILE, llm/compiled.py; one GPU or FSDP2: llm/eager_compiled.py) with the host cost of
    the runner's compile mode."""
    mode_of(par)
    if compiled:
        return eager_compiled.compiled_framework(par, hosts or {}, torch_framework)
    fw = TORCH_AMP
    mode = host_mode(par)
    mode = fitted_mode(mode, hosts or {})   # no host runs of that mode: its nearest mode's cost per kernel
    if hosts and mode in hosts:
        fw = replace(fw, host_kernel_s=hosts[mode][0], host_step_s=hosts[mode][1])
    if hosts and mode == "op" and mode in hosts:   # its own fit: the policy's dispatch costs most in the forward (op_phase_factors)
        f_fwd, f_bwd = op_phase_factors()
        fw = replace(fw, host_kernel_s=hosts[mode][0] * f_fwd, host_bwd_kernel_s=hosts[mode][0] * f_bwd)
    if hosts and mode == "ckpt" and par.recompute_every > 1 and "single" in hosts:   # the plain blocks: single's costs
        # (per step blended by the share of blocks checkpointed, floor(L / N) / L: work._host_step_s)
        fw = replace(fw, host_plain_kernel_s=hosts["single"][0], host_plain_step_s=hosts["single"][1])
    names = []
    if par.tp > 1:
        # the runner's tp optimizer is AdamW per parameter (foreach off), not the fused kernel FUSED_ADAMW_BYTES measures: 28 B
        fw = replace(fw, tp_vocab_split=False, tp_bwd_allreduces=5, tp_bwd_bytes=4, adam_bytes=28.0)
        names.append("dtensor-tp")
    if par.dp > 1 and par.zero in (2, 3):   # zero 2: reshard_after_forward=False (module docstring), the same wrapper
        # autocast_block off: FSDP2's bf16 parameters make the embedding output and so cos / sin bf16 (not examined)
        fw = replace(fw, param_bytes=2.0, state_bytes=10.0, weight_copy_bytes=0.0, comm_interference=True, autocast_block=False,
                     bf16_param_block=True)
        if hosts and mode == "fsdp" and {"fsdp", "single"} <= hosts.keys():   # the hooks' share (llm/grad_sync.py: no-sync spares the reduce's)
            fw = replace(fw, host_hook_kernel_s=max(0.0, hosts["fsdp"][0] - hosts["single"][0]))
        if par.zero == 2:   # its root post-backward callback waits for the reduce-scatters (llm/grad_sync.py); FSDP2's
            fw = replace(fw, zero2_wait=True, **FSDP2_ZERO2)   # exposed re-gathers, no forward weight casts (llm/fsdp2_zero2.py)
        names.append("fsdp2" if par.zero == 3 else "fsdp2-zero2")
    elif par.dp * par.cp > 1:   # DDP; with cp > 1 over the dp x cp ranks, beside torch's ring attention on its flash kernel
        fw = replace(fw, ddp_bucket_bytes=4.0, comm_interference=True)
        if par.cp > 1:
            fw = replace(fw, torch_cp=True, attention_kernel="fa2")
            names.append(f"cp{par.cp}")
        names.append("ddp")
    if par.pp > 1:   # each micro-batch's gradient added into .grad (fp32 read, read, write), then all divided by m
        fw = replace(fw, grad_accumulate_bytes=12.0, grad_scale_bytes=8.0, torch_pipelining=True)
        names.insert(0, "pipelining")
    return replace(fw, name="torch-" + "+".join(names)) if names else fw


# The clear() of each cache whose values read torch_framework (host fits, host shares, through fit_modes or a
# prediction): torch_framework_as clears them on the way in and out, so neither form's values outlive its block.
_FRAMEWORK_CACHES: list[Callable[[], None]] = []


def reads_torch_framework(cached: Callable) -> Callable:
    """Decorator above a functools cache whose values read torch_framework: torch_framework_as clears it."""
    _FRAMEWORK_CACHES.append(cached.cache_clear)
    return cached


def _clear_framework_caches() -> None:
    for clear in _FRAMEWORK_CACHES:
        clear()


@contextmanager
def torch_framework_as(wrap: Callable[[FrameworkSpec], FrameworkSpec]) -> Iterator[None]:
    """Inside the block, this module's torch_framework returns wrap(the kept torch_framework's framework): a candidate
    or an earlier model priced everywhere torch_framework is read, fit_modes included (its
    host fits refitted with the candidate's kernel count, as adoption would ship it). For studies, registrations and
    tests; restored on the way out, exceptions too, with every cache that reads it (reads_torch_framework) cleared
    on the way in and out."""
    global torch_framework
    kept = torch_framework
    _clear_framework_caches()
    torch_framework = lambda *a, **k: wrap(kept(*a, **k))   # noqa: E731
    try:
        yield
    finally:
        torch_framework = kept
        _clear_framework_caches()


def _parallel(mode: str) -> tuple[ParallelSpec, int]:
    return {"single": (ParallelSpec(), 1), "compile": (ParallelSpec(), 1), "ddp": (ParallelSpec(dp=2), 2), "fsdp": (eager_compiled.AROUND_MODES["fsdp"], 2),
            "tp": (ParallelSpec(tp=2), 1), "ckpt": (eager_compiled.AROUND_MODES["ckpt"], 1), "op": (ParallelSpec(recompute="op"), 1),
            "tp+ddp": (ParallelSpec(tp=2, dp=2), 2), "tp+fsdp": (ParallelSpec(tp=2, dp=2, zero=3), 2)}[mode]


def _mode_documents(folder: Path, mode: str) -> list[Path]:
    """A mode's hidden-128 runs: MODE-L<n>.json files (a folder written by a device script), or the runs of a
    `simcluster collect --tools llm-step` bundle (llm-step/<run>/stdout.txt) whose document is that mode (ckpt: single
    with activation checkpointing; compile: single with --compile)."""
    paths = sorted(folder.glob(f"{mode}-L*.json"))
    for path in sorted(folder.glob("llm-step/*/stdout.txt")):
        doc = read_document(path)
        ac = eager_ac.document_mode(doc)   # llm-step --ac-mode
        ckpt, comp = ac == "full", bool(doc.get("compile"))
        want = {"ckpt": ("single", True, False), "compile": ("single", False, True)}.get(mode, (mode, False, False))
        if mode == "op":
            if ac == "op" and doc.get("mode") == "single" and not comp:
                paths.append(path)
        elif ac in ("none", "full") and (doc.get("mode"), ckpt, comp) == want:
            paths.append(path)
    return paths


def read_document(path: Path) -> dict:
    """An llm-step run's JSON document (what follows the first '{' of its output); ValueError naming the file."""
    text = path.read_text()
    start = text.find("{")
    try:
        doc = strict.loads_json(text[start:]) if start >= 0 else None
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path}: not an llm-step JSON document ({exc.msg})") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("model"), dict) or not isinstance(doc.get("shapes"), list):
        raise ValueError(f"{path}: not an llm-step JSON document (no model or shapes)")
    return doc


def fit_modes(folder: Path, fields: dict | None = None) -> dict[str, tuple[float, float, int]]:
    """Each mode's (host seconds per kernel, host seconds per step, timed shapes) from the folder's MODE-L<n>.json
    runs (hidden-128 decoders: GPU work negligible, so the step is the host): host.fit_host over the layer counts,
    with the model's kernels per layer of that mode (its framework, with `fields` replaced: an earlier model's, for a
    development record). A mode with fewer than two layer counts is left out; a file that is not an llm-step document
    is a ValueError naming it. A mode the folder's leases.yaml names (lease_fits): the mean of its leases' own fits
    (per kernel and per step; timed shapes summed), each at the product's host speed where scaled_to (lease_scaling)."""
    out = _fit_folder(folder, fields)
    entries = eager_leases.read_leases(folder, MODES)   # read once; each lease folder fitted once below
    for mode, (leases, ref) in sorted(entries.items(), key=lambda e: e[1][1] is not None):   # plain means first: a scale's reference
        owned = [(lease, _fit_folder(lease, fields)) for lease in leases]
        fits = [fit for _, fit in eager_leases.own_fits(folder, mode, mode, owned)]
        if ref:   # each lease's fit at the product's host speed: x (the pooled reference c / the lease's own)
            c = out[ref][0]
            own = [fit[0] for _, fit in eager_leases.own_fits(folder, mode, ref, owned)]
            fits = [(f[0] * c / o, f[1] * c / o, f[2]) for f, o in zip(fits, own, strict=True)]
        out[mode] = (sum(f[0] for f in fits) / len(fits), sum(f[1] for f in fits) / len(fits), sum(f[2] for f in fits))
    return out


def lease_scaling(folder: Path) -> dict[str, str]:
    """{mode: REF} of the folder's leases.yaml entries {scaled_to: REF, leases: [...]} (session 44): each lease's fit
    times the folder's pooled REF cost per kernel over the lease's own, before the mean (fit_modes; docs/models/llm.md)."""
    return {mode: ref for mode, (_, ref) in eager_leases.read_leases(folder, MODES).items() if ref}


def lease_folders(folder: Path) -> dict[str, list[Path]]:
    """{mode: [host folders]} of the folder's leases.yaml (llm/eager_leases.py); {} where there is none. A bad file:
    ValueError naming it and the key."""
    return {mode: folders for mode, (folders, _) in eager_leases.read_leases(folder, MODES).items()}


@contextmanager
def leases_unread(modes: tuple[str, ...] | None = None) -> Iterator[None]:
    """Inside the block no folder's leases.yaml is read: each mode's fit is its folder's own runs' (the model before
    session 43's pooled FSDP2 host term, for the registrations made with it and before / after studies); `modes`: only
    those modes' entries unread (("ckpt", "op"): the product before session 44's pooled ckpt / op terms); every cache
    that reads torch_framework cleared on the way in and out."""
    try:
        with eager_leases.unread(modes):
            _clear_framework_caches()
            yield
    finally:
        _clear_framework_caches()


def lease_fits(folder: Path, mode: str, fields: dict | None = None) -> list[tuple[Path, tuple[float, float, int]]]:
    """[(lease folder, its own (seconds per kernel, seconds per step, timed shapes) of `mode`)] over the leases the
    folder's leases.yaml names for `mode` (lease_folders); [] where it names none. A lease without two layer counts of
    the mode: ValueError naming it."""
    return eager_leases.own_fits(folder, mode, mode, [(lease, _fit_folder(lease, fields)) for lease in lease_folders(folder).get(mode, [])])


def _fit_folder(folder: Path, fields: dict | None = None) -> dict[str, tuple[float, float, int]]:
    out = {}
    for mode in MODES:
        par, dp = _parallel(mode)
        points, kernels = [], None
        for path in _mode_documents(folder, mode):
            doc = read_document(path)
            m = doc["model"]
            for shape in doc["shapes"]:
                if shape.get("status") != "ok":
                    continue
                tiny = TransformerSpec(m["layers"], m["hidden"], m["ffn"], m["heads"], m["kv_heads"], m["vocab"], shape["seq"],
                                       tied_embeddings=bool(m["tied"]))
                kernels = host.layer_kernels(tiny, par, BatchSpec(shape["micro_batch"] * dp, shape["micro_batch"]),
                                             replace(TORCH_COMPILE if mode == "compile" else torch_framework(par), **(fields or {})))
                points.append((m["layers"], shape["median_step_s"]))
        if len({p[0] for p in points}) >= 2:
            c, a = host.fit_host(points, kernels)
            out[mode] = (c, a, len(points))
    return out


@lru_cache(maxsize=4)
def op_phase_factors(path: Path = OP_PHASES) -> tuple[float, float]:
    """(forward, backward) host cost per kernel of the op mode as multiples of its fitted mean (fit_modes' op c): a
    hidden-128 probe run's median forward and backward issue seconds F and B (GPU work negligible, so both are host)
    over the model's L n_f forward and L n_b backward kernels (the backward's recomputation and weight recasts
    included): F / (L n_f) and B / (L n_b), each divided by (F + B) / (L (n_f + n_b)). n_f f_fwd + n_b f_bwd =
    n_f + n_b: a hidden-128 step's host total is the fit's. A file that is not the probe's document is a ValueError
    naming it."""
    doc = strict.load_json(path, what="op host probe (ophost hostprobe.py document)")
    try:
        m = doc["model"]
        op = next(x for x in doc["modes"] if x["mode"] == "op" and x["status"] == "ok")
        fwd_s, bwd_s = float(op["median"]["fwd_issue_s"]), float(op["median"]["bwd_issue_s"])
        tiny = TransformerSpec(m["layers"], m["hidden"], m["ffn"], m["heads"], m["kv_heads"], m["vocab"], op["seq"],
                               tied_embeddings=bool(m["tied"]))
    except (KeyError, TypeError, StopIteration) as exc:
        raise ValueError(f"{path}: not an ophost probe document with an ok op mode ({exc!r})") from None
    par = ParallelSpec(recompute="op")
    fwd, bwd = compiled_layer.layer_ops(tiny, par, BatchSpec(op["micro_batch"], op["micro_batch"]), TORCH_AMP)
    w = host.weight_matrices(tiny, TORCH_AMP)
    n_f = sum(o.count for o in fwd) + w
    n_b = sum(o.count for o in bwd) + (1 + host.recasts_weights(par, TORCH_AMP)) * w
    mean = (fwd_s + bwd_s) / (n_f + n_b)
    return fwd_s / n_f / mean, bwd_s / n_b / mean
