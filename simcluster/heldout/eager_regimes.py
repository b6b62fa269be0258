"""The registered eager-PyTorch layouts (heldout/eager.py's REGISTERED bundles): each runner layout onto the model
(layout_of), the layout predicted as its registration predicts it (regime_predict: the registered step, memory and
breakdown), the bundles' runs read against their registered.yaml (registered_rows), and every held-out eager row of the
multi-GPU sets, SEALED (today's model, heldout/eager.bundle_rows) and REGISTERED together (held_out_rows). The
documents as they ran (which layout, a bundle's documents, a step set's processes): heldout/eager_runs.py."""

from __future__ import annotations

import json
from dataclasses import replace
from functools import cache
from pathlib import Path

from simcluster.heldout.eager import CARDS, H100, H100_HOST, H200, MICROBATCHES, MODE_HOST, REGISTERED, ROOT, SEALED, SEQ, bundle_rows, model_of
from simcluster.heldout.eager_runs import process_runs, regime_documents, regime_mode_of  # noqa: F401 - process_runs: for registered read-outs
from simcluster.llm import eager
from simcluster.llm.host_bound import is_host_bound
from simcluster.llm.spec import ParallelSpec


def regime_modes():
    """The eager-regimes bundle's layouts (one and two GPUs)."""
    return {"single": ParallelSpec(), "single+ckpt": ParallelSpec(recompute="full"),
            "pp-gpipe": ParallelSpec(pp=2, pp_schedule="gpipe"), "pp-1f1b": ParallelSpec(pp=2)}


def mesh_modes():
    """The 4-GPU layouts of the meshes bundle (runner modes tp+ddp, tp+fsdp, pp+ddp with --group 2, pp on 4 ranks)."""
    return {"tp+ddp": ParallelSpec(tp=2, dp=2), "tp+fsdp": ParallelSpec(tp=2, dp=2, zero=3),
            "pp4-1f1b": ParallelSpec(pp=4), "pp4-gpipe": ParallelSpec(pp=4, pp_schedule="gpipe"),
            "pp+ddp": ParallelSpec(pp=2, dp=2)}


def mesh2_modes():
    """The second 4-GPU set's layouts: the first's without GPipe, with interleaved 1F1B (2 chunks per rank)."""
    return {k: v for k, v in mesh_modes().items() if k != "pp4-gpipe"} | {"pp4-interleaved": ParallelSpec(pp=4, virtual_stages=2)}


def tpdp_modes():
    """The tpdp set's layouts (session 29): TP 2 x DDP 2 and TP 2 x FSDP2 2, host runs and steps on one lease."""
    return {k: v for k, v in mesh_modes().items() if k.startswith("tp+")}


def pipeline_modes():
    """The pipeline set's layouts (session 29): 4 stages under 1F1B and interleaved 1F1B, and 2 stages x DDP 2."""
    return {k: v for k, v in mesh2_modes().items() if k.startswith("pp")}


def two_modes():
    """The two set's layouts (session 36, each a 2-GPU host runs): DDP, FSDP2, TP over 2 ranks, the regimes set's 2-stage pipelines."""
    pipelines = {k: v for k, v in regime_modes().items() if k.startswith("pp")}
    return {"ddp": ParallelSpec(dp=2), "fsdp": ParallelSpec(dp=2, zero=3), "tp": ParallelSpec(tp=2)} | pipelines


def cp_modes():   # the cp set's layout (session 36): torch's context parallelism over 2 ranks, DDP over them (--mode cp)
    return {"cp": ParallelSpec(cp=2)}


def accum_modes():   # the nosync set's (session 45): FSDP2 over 2 ranks reducing once a step (set_requires_gradient_sync);
    # the ddpaccum set's: DDP over 2 ranks reducing every micro-batch (torch's default) or once a step (no_sync)
    return {"fsdp+nosync": ParallelSpec(dp=2, zero=3, grad_sync="step"), "ddp+sync": ParallelSpec(dp=2, grad_sync="micro_batch"),
            "ddp+nosync": ParallelSpec(dp=2, grad_sync="step"),
            "fsdp-zero2": ParallelSpec(dp=2, zero=2),   # the zero2 set's (session 46): FSDP2 reshard_after_forward=False
            "fsdp+ckpt": ParallelSpec(dp=2, zero=3, recompute="full")}   # compilefsdp's (session 46; compile: regime_predict's)


def layout_of(mode: str):
    """(ParallelSpec, GPUs, micro-batches per step) of a layout: a pipeline 2 per stage (4 on 2 stages, 8 on 4), others 1."""
    par = {**regime_modes(), **mesh_modes(), **mesh2_modes(), **two_modes(), **cp_modes(), **accum_modes()}[mode]
    return par, par.gpus, (MICROBATCHES * par.pp // 2 if par.pp > 1 else 1)


def step_set_rows(bundle: Path, shipped: str, measure, regs: list[dict] | None = None, describe=None) -> list[dict]:
    """A registered eager step set's rows (heldout/eager_pphost, eager_cudnnstep, eager_today) against each row's
    registered `shipped` step, host share and flag (host_flag "registered"), in held_out_rows' keys; measure(reg) -> the
    row's measured step (ms), None to leave the row out. Hooks for a set with its own reading (eager_today): `regs`,
    registered.yaml's rows as the set checked them (else read here); describe(reg) -> keys set over the row's (its
    label, transport, today_s, keys of its own). A row without the shipped prediction or a layout: one SimclusterError
    line naming rows[i]."""
    from simcluster.errors import SimclusterError
    from simcluster.heldout.eager import step_shape
    from simcluster.strict import load_yaml

    path = bundle / "registered.yaml"
    out = []
    for i, reg in enumerate(load_yaml(path)["rows"] if regs is None else regs):
        try:
            pred = reg["predicted"][shipped]
            step_ms, share, flag = float(pred["step_ms"]), pred["host_share"], bool(pred["host_bound"])
            par, gpus, _ = layout_of(reg["mode"])
        except (KeyError, TypeError, ValueError) as exc:
            raise SimclusterError(f"{path}: rows[{i}]: no predicted.{shipped} step, share and flag, or no layout "
                                  f"({type(exc).__name__}: {exc})") from None
        measured_ms = measure(reg)
        if measured_ms is None:
            continue
        label = f"{reg['preset']} {reg['mode']} seq {reg['seq']} mb {reg['micro_batch']}"
        row = {"bundle": bundle.name, "label": label + (f" x{reg['microbatches']} micro-batches" if par.pp > 1 else ""),
               "gpus": gpus, "tp": par.tp, "pp": par.pp, "cp": par.cp, "zero": par.zero, "transport": "nvlink",
               "measured_s": measured_ms / 1e3, "predicted_s": step_ms / 1e3, "host_share": share,
               "host_bound": flag, "host_flag": "registered", "shape": step_shape(*(reg[k] for k in ("preset", "seq", "micro_batch")),
                                                                                   reg.get("microbatches", 1))}
        out.append(row | (describe(reg) if describe else {"today_s": todays_step_s(reg)}))   # product host fits
    return out


def h100_host_framework():
    """TORCH_AMP with the host cost per kernel and per step fitted on the H100 machine's tiny-decoder steps."""
    from simcluster.llm import host
    from simcluster.llm.framework import TORCH_AMP
    from simcluster.llm.spec import BatchSpec, ParallelSpec

    points, kernels = [], None
    for path in sorted(H100_HOST.glob("h100-L*.json")):
        doc = json.loads(path.read_text())
        for shape in doc["shapes"]:
            if shape["status"] == "ok":
                kernels = host.layer_kernels(model_of(doc, shape["seq"]), ParallelSpec(),
                                             BatchSpec(shape["micro_batch"], shape["micro_batch"]), TORCH_AMP)
                points.append((doc["model"]["layers"], shape["median_step_s"]))
    if not points:
        return TORCH_AMP, "no host measurement: GPU-bound only"
    c, a = host.fit_host(points, kernels)
    return replace(TORCH_AMP, host_kernel_s=c, host_step_s=a), f"host {c * 1e6:.1f} us/kernel + {a * 1e3:.2f} ms/step"


def host_fits(mode: str, own_host: Path | None = None, base_host: Path = MODE_HOST) -> dict:
    """Each runner mode's host fit on H200 hosts (`base_host`: MODE_HOST, the 2-GPU host, or the folder a registration
    names for its held-out step). `own_host` (the variant the 4-GPU sets register beside the model's: MESH_HOST for the
    second set, the tpdp set's own lease): a 2-D layout takes its own mode's fit from the host runs there in place of
    tp's, which the product's eager.host_mode gives it."""
    from simcluster.llm import eager

    fits = eager.fit_modes(base_host)
    if own_host is None:
        return fits
    own = eager.fit_modes(own_host)
    if mode in tpdp_modes():
        return fits | {"tp": own[mode]}
    return fits | own   # a 1-D layout: each mode's own fit from the lease's host runs (the product's framework.host)


def regime_framework(mode: str, gpu_label: str, own_host: Path | None = None, base_host: Path = MODE_HOST,
                     fits: dict | None = None, compiled: bool = False):
    """An eager-regimes layout's torch framework with the host cost of its runner mode on that GPU's machine kind
    (host_fits, or `fits` where given; H100: the single mode's); `compiled` (H200 with `fits` only): each block under
    torch.compile (eager_compiled.compiled_framework)."""
    from simcluster.llm import eager

    if gpu_label not in ("h200", "h100"):   # any other label used to price an H100 silently
        from simcluster.errors import SimclusterError
        raise SimclusterError(f"eager regimes: gpu label {gpu_label!r}: expected 'h200' or 'h100'")
    if fits is not None and (gpu_label != "h200" or own_host is not None):   # was ignored (h100) or overrode own_host
        from simcluster.errors import SimclusterError
        raise SimclusterError(f"eager regimes: `fits` replaces the h200 host fits; not with gpu label {gpu_label!r} "
                              f"or an own_host folder ({own_host})")
    par, _, _ = layout_of(mode)
    if compiled and (gpu_label != "h200" or fits is None):
        from simcluster.errors import SimclusterError
        raise SimclusterError("eager regimes: `compiled` is priced with the caller's h200 fits (a compile fit among them)")
    if gpu_label == "h200" and fits is not None:
        return eager.torch_framework(par, fits, compiled), "host: the caller's fits"
    if gpu_label == "h200":
        hosts = host_fits(mode, own_host, base_host)
        if own_host is not None:
            where = Path(own_host).resolve()   # named from the repository where it lies in it (a label the same in any checkout)
            return eager.torch_framework(par, hosts), f"host: {mode}, own fit from {where.relative_to(ROOT) if where.is_relative_to(ROOT) else where}"
        pooled = eager.lease_folders(base_host).get(eager.host_mode(par))   # a mean over leases (leases.yaml)
        return eager.torch_framework(par, hosts), (f"host: {eager.host_mode(par)} mode of {base_host.name}"
                                                   + (f" (mean of {len(pooled)} leases' fits)" if pooled else ""))
    base, how = h100_host_framework()
    fw = eager.torch_framework(par)
    return replace(fw, host_kernel_s=base.host_kernel_s, host_step_s=base.host_step_s), f"{how} ({H100_HOST.name})"


def regime_predict(preset: str, mb: int, mode: str, gpu_label: str, own_host: Path | None = None,
                   microbatches: int | None = None, seq: int = SEQ, base_host: Path = MODE_HOST, fits: dict | None = None,
                   free_hosts: bool | None = None, layers: int | None = None, timeline: bool = False,
                   backlog: bool | None = None, compiled: bool = False) -> dict:
    """One eager-regimes layout predicted: step (ms), each stage's memory (GiB), breakdown; `own_host`, `base_host`:
    host_fits'; `microbatches`: the step's micro-batch count where the plan sets it (pipeline2), else layout_of's; `seq`
    (cp's); `fits` (H200): eager.fit_modes-shaped fits taken in place of host_fits' (a registration's GPU path or its
    host-cost grid, validation/eager_lease_host.py); `free_hosts`: True a pipeline's stage hosts issuing free of their
    inputs (framework.free_stage_hosts: session 44's candidate, validation/ppcouple.py), False in series, None the
    product's own coupling (eager.torch_framework); `layers`: the preset's with
    that many layers (the runner's --layers); `timeline`: the simulated step's Chrome trace too (llm/predict's);
    `backlog`: True the hosts free in the steady state with the launch queue shared across a stage's chunks
    (framework.launch_backlog: session 45's ppfree term, validation/ppfree.py; with free_hosts False: a SimclusterError);
    `compiled`: each block under torch.compile (regime_framework; with `fits`)."""
    from simcluster.cards import load_collective
    from simcluster.hardware.gpu import load_gpu
    from simcluster.llm.comm import Network
    from simcluster.llm.memory import GiB, stage_memories
    from simcluster.llm.predict import predict_llm
    from simcluster.llm.spec import BatchSpec
    from simcluster.runner.llm_decoder import PRESETS
    from simcluster.runner.llm_pipeline import chunk_layer_ranges

    par, gpus, m = layout_of(mode)
    m = microbatches or m
    model = model_of({"model": PRESETS[preset] | ({"layers": layers} if layers else {})}, seq)
    if par.pp > 1:   # the layers each chunk ran: the runner's split (llm_pipeline.py), not spec.layer_split's balance
        par = replace(par, pipeline_layout=tuple(hi - lo for lo, hi in chunk_layer_ranges(model.layers, par.pp * par.virtual_stages)))
    batch = BatchSpec(mb * m * par.dp, mb, "bf16")
    gpu, _ = load_gpu(ROOT / (H200 if gpu_label == "h200" else H100))
    fw, how = regime_framework(mode, gpu_label, own_host, base_host, fits, compiled)
    if backlog and free_hosts is False:
        from simcluster.errors import SimclusterError
        raise SimclusterError("regime_predict: backlog needs free hosts (free_hosts True or None), got free_hosts False")
    if free_hosts is not None or backlog is not None:   # a coupling named; None and None: the product's own
        term = bool(backlog)
        fw = replace(fw, free_stage_hosts=bool(free_hosts) or term, launch_backlog=term)
    card, _ = load_collective(ROOT / CARDS[("nvlink", 2)])
    # every group here is two ranks (tp 2, dp 2, pipeline neighbours): the 2-rank NVLink card, on a node of `gpus`
    r = predict_llm(model, par, batch, gpu, Network(card, gpus), gpus, trace=timeline, framework=fw)
    mems = stage_memories(model, par, batch, gpu.hbm_capacity_bytes, fw)
    return {"step_ms": round(r.step_time_s * 1e3, 2), "stage_mem_GiB": [round(s.allocated / GiB, 3) for s in mems],
            "steady_mem_GiB": [round(s.steady_allocated / GiB, 3) for s in mems],   # the peak after the first steps
            "breakdown_ms": {k: round(v * 1e3, 2) for k, v in r.breakdown.items() if v}, "framework": fw.name, "host": how,
            "host_share": None if r.host_share is None else round(r.host_share, 4)} | ({"timeline": r.timeline} if timeline else {})


def registered_row(preset: str, seq: int, mb: int, mode: str, gpu_label: str = "h200", memory: bool = False,
                   microbatches: int | None = None, free_hosts: bool | None = None) -> dict:
    """One shape's registration row (the registered sets of validation/eager_tpnoise.py, eager_drift.py,
    eager_fsdphost.py, pphost.py): preset, seq, micro_batch, mode and today's regime_predict step (ms), host share and
    host fit, with `memory` its steady and job-peak memory of stage 0 (GiB) too; `microbatches` (a pipeline's per step,
    recorded in the row) where the set runs other than layout_of's; `free_hosts` regime_predict's (a pipeline's coupling
    named: the registering commit's product, whatever the product's coupling becomes)."""
    p = regime_predict(preset, mb, mode, gpu_label, microbatches=microbatches, seq=seq, free_hosts=free_hosts)
    mem = {"steady_mem_GiB": p["steady_mem_GiB"][0], "peak_mem_GiB": p["stage_mem_GiB"][0]} if memory else {}
    return {"preset": preset, "seq": seq, "micro_batch": mb, "mode": mode} | ({"microbatches": microbatches} if microbatches else {}) | {
            "predicted": {"step_ms": p["step_ms"], "host_share": p["host_share"], "host": p["host"]} | mem}


@eager.reads_torch_framework
@cache
def _todays(preset: str, mb: int, mode: str, gpu_label: str, microbatches: int | None, seq: int,
            base_host: Path = MODE_HOST) -> dict:
    return regime_predict(preset, mb, mode, gpu_label, microbatches=microbatches, seq=seq, base_host=base_host)


@eager.reads_torch_framework
@cache
def _todays_host_share(preset: str, mb: int, mode: str, gpu_label: str, microbatches: int, seq: int,
                       base_host: Path = MODE_HOST) -> float | None:
    return _todays(preset, mb, mode, gpu_label, microbatches, seq, base_host)["host_share"]


def todays_step_s(reg: dict, gpu_label: str = "h200", base_host: Path = MODE_HOST) -> float:
    """Today's model's step (s) of a registered row (preset, micro_batch, mode, seq, microbatches where a pipeline sets
    them) with the host fits its registration's held-out step was predicted with (`base_host`): only beside the
    registered step (trust/moved.py); the row's residual stays against the registration."""
    m = reg.get("microbatches")
    return _todays(reg["preset"], reg["micro_batch"], reg["mode"], gpu_label, m if m and m > 1 else None, reg["seq"],
                   base_host)["step_ms"] / 1e3


def registered_host(registration: dict, path: Path) -> Path:
    """The H200 host folder a registration's held-out step (`predicted`) was predicted with: its calibration.host.h200
    (validation/llm_eager_regimes.register records it), else MODE_HOST. Not the own-fit variant's folder
    (calibration.host.predicted_own_host: meshes2, tpdp, tpdp2, twohost): the row is judged against `predicted`, so its
    flag is that prediction's. A folder named but absent: a one-line SimclusterError naming `path` and the key."""
    named = (registration.get("calibration") or {}).get("host", {}).get("h200")
    if named is None:
        return MODE_HOST
    folder = ROOT / named
    if not folder.is_dir():
        from simcluster.errors import SimclusterError

        raise SimclusterError(f"{path}: calibration.host.h200: {named!r} is not a folder of host runs")
    return folder


def registered_host_share(reg: dict, gpu_label: str, base_host: Path = MODE_HOST) -> tuple[float | None, str]:
    """(host share, where it came from) of a registered run (llm/host_bound.py): the registered prediction's own where
    its registered.yaml records one (`host_share`, registered since session 38), else today's model's of the same
    layout, shape and host fits as the held-out step (regime_predict with `base_host`, the folder the registration
    names for it: registered_host; MODE_HOST for every registration so far) -- for the regime's host-bound flag only;
    the row's residual stays against the registered step."""
    own = reg["predicted"][gpu_label]
    if "host_share" in own:
        return own["host_share"], "registered"
    return _todays_host_share(reg["preset"], reg["micro_batch"], reg["mode"], gpu_label, reg["microbatches"], reg["seq"],
                              base_host), "today's model"


def held_out_rows() -> list[dict]:
    """Every timed shape of the held-out bundles: SEALED predicted with today's model, then the eager-regimes bundle
    against its registered predictions: {bundle, label, gpus, tp, pp, zero, measured_s, predicted_s, transport,
    host_share, host_bound, host_flag, shape} (host_bound: llm/host_bound.is_host_bound of the prediction's host share;
    host_flag: whose prediction the share is, the row's own or today's model's: registered_host_share; shape:
    heldout/eager.step_shape, every reader's row carries it)."""
    from simcluster.heldout.eager import step_shape

    hosts = eager.fit_modes(MODE_HOST)
    out = []
    for name in SEALED:
        for r in bundle_rows(ROOT / name, hosts):
            if "pred_ms" in r and "meas_ms" in r:
                par = r["parallel"]
                out.append({"bundle": Path(name).name, "label": f"{r['preset']} {r['mode']} x{r['world']} seq {r['seq']} mb {r['mb']}",
                            "gpus": r["world"], "tp": par.tp, "pp": par.pp, "cp": par.cp, "zero": par.zero, "transport": r["transport"],
                            "measured_s": r["meas_ms"] / 1e3, "predicted_s": r["pred_ms"] / 1e3,
                            "host_share": r["host_share"], "host_bound": is_host_bound(r["host_share"]), "host_flag": "today's model",
                            "shape": step_shape(r["preset"], r["seq"], r["mb"])})
    return out + [row for name in REGISTERED for row in registered_rows(ROOT / name)]


def registered_rows(bundle: Path) -> list[dict]:
    """The eager-regimes bundle's runs against the predictions registered before they ran (registered.yaml): the
    model changed after that read (the pipeline's memory), so the registered step is the held-out one; the host-bound
    flag from registered_host_share."""
    from simcluster.heldout.eager import step_shape
    from simcluster.strict import load_yaml

    registration = load_yaml(bundle / "registered.yaml")
    registered = {(r["preset"], r["mode"], r["seq"], r["micro_batch"]): r for r in registration["runs"]}
    base_host = registered_host(registration, bundle / "registered.yaml")
    docs, _ = regime_documents(bundle)
    out = []
    for doc in docs:
        mode, preset = regime_mode_of(doc), doc["model"].get("preset")
        gpu = "h100" if "H100" in str(doc.get("device", {}).get("name")) else "h200"
        for shape in doc["shapes"]:
            reg = registered.get((preset, mode, shape["seq"], shape["micro_batch"]))
            par, gpus, _ = layout_of(mode) if reg is not None else (None, 0, 0)
            if (reg is None or shape["status"] != "ok" or reg["microbatches"] != shape.get("microbatches", 1)
                    or doc.get("world_size", 1) != gpus):   # smoke / host runs; another rank count
                continue
            share, flag = registered_host_share(reg, gpu, base_host)
            out.append({"bundle": bundle.name, "label": f"{preset} {mode} seq {shape['seq']} mb {shape['micro_batch']}",
                        "gpus": gpus, "tp": par.tp, "pp": par.pp, "cp": par.cp, "zero": par.zero, "transport": "nvlink",
                        "measured_s": shape["median_step_s"], "predicted_s": reg["predicted"][gpu]["step_ms"] / 1e3,
                        "host_share": share, "host_bound": is_host_bound(share), "host_flag": flag,
                        "today_s": todays_step_s(reg, gpu, base_host),   # beside the registered step (trust/moved.py)
                        "shape": step_shape(preset, shape["seq"], shape["micro_batch"], reg["microbatches"])})
    return out
