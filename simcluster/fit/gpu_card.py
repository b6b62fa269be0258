"""A GPU card fitted from a bundle's gpu-micro traces (fit/gpu.py's fits), written with its held-out error
(fit/gpu_validate.py) and, where the trace has a duty sweep, its clock block (fit/gpu_clock.py)."""

from __future__ import annotations

import os
from dataclasses import replace

from simcluster.errors import CalibrationError
from simcluster.fit.gpu import ATTN_FIT_SEQS, BASE_KEY, FP8_HELD_HIDDEN, FP8_HELD_TOKENS, FP8_KEY, GEMM_FIT_ROLES, MEMORY_FIT_OPS, datasheet_for, fit_gpu
from simcluster.fit.gpu_validate import summary, validate
from simcluster.hardware.gpu import GpuParams, gpu_params_yaml
from simcluster.traces.gpu_micro import GpuMicroTrace


def gpu_card(params: GpuParams, trace: GpuMicroTrace, provenance: dict, gemm_trace: GpuMicroTrace | None = None,
             fp8_trace: GpuMicroTrace | None = None) -> dict:
    """A `kind: gpu` card fitted from one gpu-micro trace (GEMMs from `gemm_trace`, fp8 GEMMs from `fp8_trace` where
    given), with its held-out error summary."""
    sheet = datasheet_for(trace.device_name)
    if gemm_trace is None:
        rows = validate(params, trace, split=True)
    else:
        rows = validate(params, trace, True, ("attention", "memory")) + validate(params, gemm_trace, True, ("gemm",))
    gemm_from = gemm_trace or trace
    if fp8_trace is not None:   # the fp8 rows: those of the fp8 trace, in the condition of the card's GEMMs
        rows = [r for r in rows if not r.op.startswith("gemm-fp8")] + \
            [r for r in validate(params, fp8_trace, True, ("gemm",), gemm_from.gemm_condition) if r.op.startswith("gemm-fp8")]
    return {
        "kind": "gpu", "name": params.name,
        "description": f"{trace.device_name} measured with gpu-micro (torch {trace.torch}, CUDA {trace.cuda}): GEMM, attention, "
                       f"memory-bound and launch curves fitted by simcluster.fit.gpu on its fit set (GEMMs {gemm_from.gemm_condition}"
                       f"{', from ' + gemm_from.path if gemm_trace else ''}{'; fp8 from ' + fp8_trace.path if fp8_trace else ''}); "
                       f"peak FLOP/s, HBM peak "
                       f"and capacity from the datasheet ({sheet.source}).",
        "params": gpu_params_yaml(params),
        "valid_range": {"gemm": "bf16 M, N, K 256..28672 (tokens 512..16384); fp8 1024..28672"
                                + (" (layer GEMMs: M, N, K 2048..106496)" if fp8_trace else "") + "; tf32 2048..8192",
                        "attention": "causal SDPA (flash), seq 512..8192, head_dim 64..128, MHA and GQA, bf16",
                        "memory": "256KiB..8GiB moved per kernel; single-kernel elementwise ops",
                        "launch": "eager-mode issue floor of this host and driver (the GPU's own launch cost is lower)"},
        "fit": {"method": "scipy least_squares on log(time), one op class at a time (simcluster/fit/gpu.py)",
                "fit_set": {"gemm": {k: list(v) for k, v in GEMM_FIT_ROLES.items()}
                            | ({"fp8": f"fp8-layers GEMMs except hidden {list(FP8_HELD_HIDDEN)} and tokens {list(FP8_HELD_TOKENS)}"}
                               if fp8_trace else {}),
                            "attention": f"every head configuration at seq {list(ATTN_FIT_SEQS)}", "memory": list(MEMORY_FIT_OPS)},
                "held_out": "every other sample of the trace (gemm mlp_down, wgrad, fp8 "
                            + ("layer GEMMs of the held-out hidden and tokens" if fp8_trace else "mlp_up")
                            + "; attention at seq 1024, 4096; memory add, scale; rms_norm for reference)",
                "error": summary(rows)},
        "provenance": {**provenance, "device": trace.device, "torch": trace.torch, "cuda": trace.cuda, "clocks": trace.clocks,
                       "datasheet": sheet.source},
    }


def bundle_cards(bundle, runs: list[dict], manifest: dict, problems: list[str] | None = None) -> dict[str, dict]:
    """`gpu-<card name>.yaml` for the gpu-micro run(s) of a bundle (`simcluster calibrate BUNDLE`); a duty sweep that
    cannot be fitted leaves its card without a clock block and adds one line saying why to `problems`."""
    import datetime as _dt
    from pathlib import Path

    from simcluster import __version__
    from simcluster.traces import gpu_micro

    cards = {}
    for run in runs:
        if run.get("tool") != "gpu-micro":
            continue
        path = Path(bundle) / run["path"] / "stdout.txt"
        trace, gemm_trace = gpu_micro.parse(path), None
        clock = _duty_clock(path, trace.gemm_condition, [] if problems is None else problems)
        if clock is not None and not trace.gemm and not trace.attention:
            raise CalibrationError("a duty-only gpu-micro trace has no curves to fit", where=str(path),
                                   hint="add its clock block to a card: python -m simcluster.fit.gpu_clock TRACE --card CARD -o OUT")
        if manifest.get(BASE_KEY):   # this bundle's GEMMs; attention, memory and launch from the base bundle's trace
            gemm_trace, trace = trace, gpu_micro.parse(_beside(bundle, manifest[BASE_KEY]))
        fp8_trace = gpu_micro.parse(_beside(bundle, manifest[FP8_KEY])) if manifest.get(FP8_KEY) else None
        sheet = datasheet_for(trace.device_name)
        params = fit_gpu(trace, f"{sheet.name}-{gemm_trace.gemm_condition}" if gemm_trace else None, gemm_trace, fp8_trace)
        if clock is not None:   # the run measured its own duty sweep: the clock block, referenced to its GEMMs' condition
            params = replace(params, clock=clock)
        used = [trace] + ([gemm_trace] if gemm_trace else []) + ([fp8_trace] if fp8_trace else [])
        provenance = {"simcluster_version": __version__, "fitted_at": _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
                      "bundle": str(bundle), "host": {k: manifest.get("host", {}).get(k) for k in ("hostname", "cpu_model", "cores")},
                      "traces": [{"path": t.path, "sha256": t.sha256} for t in used],
                      "gemm_condition": (gemm_trace or trace).gemm_condition}
        if fp8_trace:   # the fp8 curve's own trace: on any other, the card's fp8 rows are held out (fit/gpu_validate.py)
            provenance["fp8_trace"] = {"path": fp8_trace.path, "sha256": fp8_trace.sha256}
        cards[f"gpu-{params.name}.yaml"] = gpu_card(params, trace, provenance, gemm_trace, fp8_trace)
    return cards


def _beside(bundle, named: str):
    """A trace a bundle manifest names: a path as given, or relative to the bundle."""
    from pathlib import Path

    path = Path(named)
    return path if path.is_file() else Path(os.path.normpath(Path(bundle) / path))


def _duty_clock(path, condition: str, problems: list[str]):
    """The clock block fitted on the trace's duty section (fit/gpu_clock.py), referenced to the GEMMs' `condition`;
    None when the trace has no duty section, or when the sweep cannot be fitted (then one line in `problems` naming
    the trace). A malformed duty section raises TraceFormatError naming the file."""
    from simcluster.fit import gpu_clock

    try:
        found = gpu_clock.duty_points(path)
        if found is None:
            return None
        points, idle, device = found
        return gpu_clock.fit_clock(points, idle, gpu_clock.INTERLEAVED_DUTY if condition == "interleaved" else (1.0, 0.0),
                                   f"fitted by simcluster.fit.gpu_clock on the first shape of {path} ({device})")
    except CalibrationError as exc:
        problems.append(f"gpu-micro: {path}: the duty sweep cannot be fitted ({exc.message}); its card is written without a clock block")
        return None


