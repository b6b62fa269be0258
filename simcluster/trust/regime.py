"""The regime of a prediction: the class of answers whose held-out residuals say how far to trust it.

A regime is a family (llm, collective, storage, transport) and a key of the few settings that decide the model's
accuracy there, plus one scale axis (GPUs) checked against the range the regime was validated on:
  llm         framework family (Megatron/NeMo, PyTorch FSDP, PyTorch eager, Megatron local spec, or the name) x
              parallelism family x precision                     (axis: GPUs); eager PyTorch (`llm eager`) and
              Megatron-Core's local spec (`llm local spec`) are families of their own: lab steps, pooled apart
  collective  op x algorithm x size band x link                 (axis: GPUs); two families, one node (NVLink) and
              across nodes, whose rows are pooled apart; one node's link is the NVLink card's GPU (nvlink_link:
              nvlink-h200, nvlink-gb200: a generation's NVLink is its own regime); across nodes the link is the
              transport and, for RDMA, the fabric (EFA, InfiniBand, RoCE: fabric_link)
The parallelism family is the riskiest one the configuration uses, in this order: MoE (experts), CP (cp > 1),
ZeRO-3/FSDP, TP+PP (pp > 1), TP (tp > 1), DP/ZeRO-1/2; eager PyTorch's (family `llm eager`) is the runner's mode:
FSDP, PP, TP x DP, TP, DDP, single; then +compile, +<checkpointing policy> and +host-bound (the model's prediction
of the step is host-bound: llm/host_bound.py), each a regime of its own.
  ddp         one key (data-parallel step)                       (axis: GPUs)
  storage     workload x the limit the run names                 (axis: accelerators)
  transport   transport kind (tcp, udp) x side                   (axis: none)
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

MIB = 2**20
SIZE_BANDS = ((0, MIB, "<1MiB"), (MIB, 64 * MIB, "1-64MiB"), (64 * MIB, float("inf"), ">=64MiB"))


@dataclass(frozen=True)
class Regime:
    family: str                  # llm, collective, storage, transport
    key: str                     # "llm | Megatron/NeMo | TP+PP | bf16"
    scale: float | None = None   # the answer's value on the axis (GPUs), checked against the validated range
    axis: str = "gpus"
    gpu: str = ""                # the answer's GPU model (gpu_model: 'H100', 'H200'), checked against its rows' GPUs; '' unknown
    # why the answer's machine is unvalidated whatever this key's band (trust/band.machine_shape_why; trust_of applies it)
    unvalidated: str = ""


# PyTorch FSDP under its trainers at scale (llm/framework.py): FSDP2 in torchtitan, FSDP1 in fms-fsdp and Composer. One
# family, as every Megatron-Core variant is one: the model prices the same mechanism for all three (a gather per block
# one block ahead, a reduce_scatter per block, sharded AdamW), they differ in dtypes and kernels (issue 44, llmfam)
FSDP_TRAINERS = ("torchtitan-fsdp2", "torchtitan-fsdp2-card", "fms-fsdp", "composer-fsdp", "fms-fsdp-compile", "kempnerforge-fsdp2",
                 "kempnerforge-fsdp2-compile")
# a trainer's compiled variant (its blocks under torch.compile): a regime of its own in the family, as +compile is
# under eager PyTorch, unvalidated until rows of it exist (session 42, fsdpsrc)
FSDP_COMPILED = ("fms-fsdp-compile", "kempnerforge-fsdp2-compile")
# Hugging Face transformers' Llama under the Trainer's DeepSpeed ZeRO or accelerate's FSDP1 (llm/framework.HF_DEEPSPEED,
# HF_FSDP1; session 55 hfds55): a framework family of its own, so its answers take no band from the FSDP trainers' rows
# until rows of its own exist; its published rows are in the FSDP/ZeRO family at any ZeRO stage (published_family)
HF_TRAINERS = ("hf-deepspeed", "hf-deepspeed-overlap", "hf-fsdp1")


# Megatron-Core's local layer spec as the lab runs it (llm/framework.MEGATRON_LOCAL): no Transformer Engine, SequentialMLP
# experts, the MoE layer issued from the host kernel by kernel (MoeHost). Not the Megatron/NeMo family: a different
# stack whose lab steps are host-bound on 1-4 GPUs, where the Megatron/NeMo rows are Megatron+TE runs at scale (issue 44)
LOCAL_SPEC = "megatron-local-spec"


# an eager step the model predicts host-bound (llm/host_bound.py): its own regime, the time a lease's host speed sets (a
# FSDP2 0.8b 2048:1 step 120.6 / 144.4 / 141.6 ms in three processes, calibration/h200x2-eager-host-diagnose-2026-11-29)
HOST_BOUND_AXIS = "+host-bound"


def framework_family(name: str) -> str:
    if name == LOCAL_SPEC:
        return "Megatron local spec"
    if name.startswith("megatron"):
        return "Megatron/NeMo"
    if name in FSDP_TRAINERS:
        return "PyTorch FSDP"
    if name in HF_TRAINERS:
        return "Hugging Face Trainer"
    if name.startswith("torch") and not name.startswith("torchtitan"):   # torchtitan at scale: its own name, family llm
        return "PyTorch eager"
    return name


def parallel_family(tp: int, pp: int, cp: int, zero: int, moe: bool) -> str:
    if moe:
        return "MoE"
    if cp > 1:
        return "CP"
    if zero >= 3:
        return "ZeRO-3/FSDP"
    if pp > 1:
        return "TP+PP"
    if tp > 1:
        return "TP"
    return "DP/ZeRO-1/2"


# Issue 44's five published families, in which its target is read (per family: held-out rows <= 10% mean |error|, >= 80%
# of them within 10%). A row's family is the first of these its resolved configuration takes, riskiest first as
# parallel_family orders them; the one place that decides it (no source file or name sets it, so a new source is placed
# as it is recorded): MoE (the model has experts), long-sequence (sequence >= LONG_SEQUENCE tokens, with or without
# context parallelism), FSDP/ZeRO (a PyTorch FSDP trainer, or ZeRO stage 2-3 under Megatron / DeepSpeed), fp8 (fp8
# GEMMs), and Megatron/NeMo (the rest of the Megatron-Core and Megatron-LM rows); another framework keeps its own family
PUBLISHED_FAMILIES = ("Megatron/NeMo", "FSDP/ZeRO", "long-sequence", "fp8", "MoE")   # the order, for printing
LONG_SEQUENCE = 16384   # tokens: where published long-context tables start (NeMo's 16K row; context parallel from 32K)


def published_family(framework: str, moe: bool, seq: int, zero: int, precision: str) -> str:
    """The issue-44 family of a published row (PUBLISHED_FAMILIES) from its resolved configuration."""
    if moe:
        return "MoE"
    if seq >= LONG_SEQUENCE:
        return "long-sequence"
    fw = framework_family(framework)
    if fw in ("PyTorch FSDP", "Hugging Face Trainer") or zero >= 2:
        return "FSDP/ZeRO"
    if precision == "fp8":
        return "fp8"
    return fw


def eager_mode(tp: int, pp: int, cp: int, zero: int, moe: bool, gpus: int) -> str:
    """Eager PyTorch's parallelism as the llm-step runner's modes name it: FSDP (FSDP2), PP (torch.distributed.
    pipelining), TP x DP (a 2-D mesh), TP (DTensor), DDP, single (one GPU); MoE and CP as parallel_family names them."""
    if moe or cp > 1:
        return parallel_family(tp, pp, cp, zero, moe)
    if tp > 1 and pp == 1:   # DTensor TP, alone or under DDP / FSDP2 across its groups (a 2-D mesh)
        return "TP x DP" if gpus > tp else "TP"
    if zero >= 2:   # zero 2: FSDP2 with reshard_after_forward=False (the runner's fsdp mode; llm/eager.py, session 46)
        return "FSDP"
    if pp > 1:
        return "PP"
    return "DDP" if gpus > 1 else "single"


def llm_regime(framework: str, tp: int, pp: int, cp: int, zero: int, moe: bool, precision: str, gpus: int,
               checkpointing: str = "", host_bound: bool = False, gpu: str = "") -> Regime:
    """Megatron/NeMo (and other frameworks) in family `llm`; eager PyTorch in its own family, `llm eager`, and
    Megatron-Core's local spec in its own, `llm local spec`: their rows are lab steps on 1-4 GPUs, host-bound in ways
    the Megatron runs at scale are not, so each is pooled apart from the others (an unvalidated answer's band comes from
    its own stack's rows). Under eager PyTorch, torch.compile and the selective checkpointing policies (checkpointing:
    'sac-op', 'ckpt-every<N>'; eager_checkpointing, which alone decides the suffix), and torch.compile with every block
    checkpointed ('ckpt', given only under a torch-compile framework: +compile+ckpt), are regimes of their own, unvalidated until rows of them exist; and
    so is a host-bound step (`host_bound`: llm/host_bound.py's definition, from the model's own prediction of the step,
    never from its measurement: `+host-bound` after the rest), whose time is the lease's host speed's (HOST_BOUND_AXIS).
    `gpu`: the answer's GPU model (gpu_model), not part of the key: checked against the GPUs the regime's rows ran on."""
    fw = framework_family(framework)
    if fw == "PyTorch eager":
        # compiled: its own regime; compiled with every block checkpointed: +compile+ckpt (eager_checkpointing decides)
        mode = eager_mode(tp, pp, cp, zero, moe, gpus) + ("+compile" if eager_compiled(framework) else "")
        mode += f"+{checkpointing}" if checkpointing else ""
        mode += HOST_BOUND_AXIS if host_bound else ""
        return Regime("llm eager", f"llm | {fw} | {mode} | {precision}", float(gpus), gpu=gpu)
    if fw == "Megatron local spec":
        return Regime("llm local spec", f"llm | {fw} | {parallel_family(tp, pp, cp, zero, moe)} | {precision}", float(gpus),
                      gpu=gpu)
    family = parallel_family(tp, pp, cp, zero, moe) + ("+compile" if framework in FSDP_COMPILED else "")
    return Regime("llm", f"llm | {fw} | {family} | {precision}", float(gpus), gpu=gpu)


def llm_regime_of(model, par, batch, framework: str, host_bound: bool = False, gpu: str = "") -> Regime:
    """The regime of an LLM step (llm/spec.py's TransformerSpec, ParallelSpec, BatchSpec); `host_bound`: the step's
    prediction is host-bound (llm/host_bound.is_host_bound of its host share); `gpu` the GPU card's name (gpu_model)."""
    return llm_regime(framework, par.tp, par.pp, par.cp, par.zero, bool(model.experts), batch.precision, par.gpus,
                      eager_checkpointing(par.recompute, par.recompute_every, framework), host_bound, gpu_model(gpu))


def eager_compiled(framework: str) -> bool:
    """An eager framework under torch.compile (torch-compile; torch-compile+fsdp2: llm/eager_compiled.compiled_framework)."""
    return framework.startswith("torch-compile")


def eager_checkpointing(recompute: str, every: int, framework: str) -> str:
    """The one place that decides an eager step's checkpointing suffix (llm_regime appends it as given): torchtitan's
    selective checkpointing policies as eager.mode_of names them (sac-op, ckpt-every<N>); 'ckpt' for full (every block)
    only under torch.compile (eager_compiled), '' for it otherwise (eager's full rows are the ckpt mode's, pooled with
    eager's; compiled + checkpointed steps are a regime of their own, session 46's compilefsdp set: registered rule M
    "not within", D "NOISE", cold review B46 item 2); '' for none."""
    if recompute == "op":
        return "sac-op"
    if recompute != "full":
        return ""
    return f"ckpt-every{every}" if every > 1 else "ckpt" if eager_compiled(framework) else ""


def size_band(size_bytes: float) -> str:
    return next(name for low, high, name in SIZE_BANDS if low <= size_bytes < high)


FABRIC_KINDS = (("efa", "efa"), ("infiniband", "ib"), ("ib", "ib"), ("roce", "roce"))


def fabric_link(transport: str, nic_name: str) -> str:
    """The link across nodes of a regime: the NIC's transport, and for RDMA the fabric the NIC card names (its name's
    dash-separated words: efa-400g -> rdma-efa, ib-ndr-400g -> rdma-ib, oci-roce-200g -> rdma-roce). AWS's EFA (SRD,
    libfabric), InfiniBand and RoCE differ in the physics the fabric model leaves out (congestion control, multipath,
    the provider's software path), and their held-out rows differ accordingly (docs/models/trust.md). A card naming
    none keeps the bare transport: a regime with no rows, answered unvalidated."""
    if transport != "rdma":
        return transport
    words = set(nic_name.lower().replace("_", "-").split("-"))
    return next((f"rdma-{kind}" for word, kind in FABRIC_KINDS if word in words), transport)


GPU_WORD = re.compile(r"^((?:gb|gh|[abhlv])\d{2,4}|mi\d{3})(x\d+)?$")   # h200, h200x2, gb200, b200, a100, mi300x4


def gpu_model(text: str) -> str:
    """The GPU model a card name, a bundle's folder or a source's free text names, as the card names it ('H200', 'GB200',
    'A100'): its first word (split at anything not a letter or digit) that GPU_WORD takes ('h200-sxm' -> H200,
    'DGX-H100 (H100 SXM 80GB)' -> H100, 'a100_80gb' -> A100, 'NVIDIA GB200 185GB' -> GB200); '' when none does."""
    for word in re.split(r"[^0-9a-z]+", str(text).lower()):
        m = GPU_WORD.match(word)
        if m and (m.group(1) == "v100" or not m.group(1).startswith("v")):   # v25.02: a version, not a GPU
            return m.group(1).upper()
    return ""


def nvlink_link(*names: str) -> str:
    """The link of a one-node (NVLink) collective: 'nvlink-<gpu>', the GPU of the first name (a collective card's name,
    its file stem, a bundle's folder) whose first dash-separated word names one (h200x2-primitives -> nvlink-h200,
    gb200-nvlink-derived -> nvlink-gb200). NVLink generations differ in the physics the card leaves out (the GB200
    tray's 8 rows lie +2.7..+8.3% where the H200 pairs' lie -1..+3%), so each is pooled apart; a name naming no GPU
    gives the bare 'nvlink', a regime with no rows, answered unvalidated."""
    for name in names:
        gpu = gpu_model(str(name).split("-")[0])
        if gpu:
            return f"nvlink-{gpu.lower()}"
    return "nvlink"


def card_nvlink_link(card: dict, path) -> str:
    """The one-node link of a collective card: the GPU its name names, else its file's (nvlink_link)."""
    return nvlink_link(str(card.get("name") or ""), Path(path).stem)


def collective_regime(op: str, algorithm: str, size_bytes: float, link: str, ranks: int, gpu: str = "") -> Regime:
    """link: 'nvlink-<gpu>' (one NVLink domain: nvlink_link) or the link across nodes (fabric_link: 'rdma-ib',
    'rdma-efa', 'tcp', ...); `gpu` the answer's GPU model, one NVLink domain's by default the one its link names."""
    ops = "all_reduce" if op == "all_reduce" else "all_gather/reduce_scatter" if op in ("all_gather", "reduce_scatter") else op
    family = "collective one node" if link.startswith("nvlink") else "collective across nodes"
    gpu = gpu or (gpu_model(link) if link.startswith("nvlink") else "")
    return Regime(family, f"collective | {ops} | {algorithm} | {size_band(size_bytes)} | {link}", float(ranks), gpu=gpu)


DDP_REGIME = "ddp | data-parallel step | one node"


def ddp_regime(gpus: int, nodes: int = 1, gpu: str = "") -> Regime:
    """A DDP step (training/), one node or across nodes (the network's all_reduce, the host's TCP cores: physics the
    one-node rows never had), GPUs as its axis; `gpu` the answer's GPU model."""
    return Regime("ddp", DDP_REGIME if nodes <= 1 else "ddp | data-parallel step | across nodes", float(gpus), gpu=gpu)


def storage_regime(model: str, limit: str | None, accelerators: int | None) -> Regime:
    """A storage answer: the workload's model x the limit its run names (drive, threads, ...); accelerators its axis."""
    return Regime("storage", f"storage | {model} | {limit or 'simulated run'}",
                  None if accelerators is None else float(accelerators), "accelerators")


def transport_kind(test: str) -> str:
    """A qperf test's transport: tcp_bw -> tcp, udp_lat -> udp, rc_bw -> rdma_rc, ud_lat -> rdma_ud."""
    head = test.split("_")[0]
    return {"rc": "rdma_rc", "ud": "rdma_ud", "uc": "rdma_uc"}.get(head, head)


def transport_regime(kind: str) -> Regime:
    """A host transport (tcp, udp, rdma_rc, ...): no scale axis."""
    return Regime("transport", f"transport | {kind}", None, "")
