"""llm/moe_router_unfused.FILE from calibration/h200x1-moonrouter52-2026-12-01's committed runs (session 52, moonprice52;
issue 44): the `mcore-recipe` records of runs/moonrouter52.json (Megatron-Core 24bad8e6's unfused router in Moonlight's
recipe configuration), netted of the H200 card's bf16 GEMM prices as heldout/moerouter.rows_of nets session 49's router.

    PYTHONPATH=. python -c "from simcluster.heldout.moonprice52 import write_file; write_file()"

tests/test_moonprice52.py checks that the shipped file is this output (document_text() == the file's text)."""

from __future__ import annotations

import json
from pathlib import Path

from simcluster.errors import SimclusterError
from simcluster.hardware.gpu import load_gpu
from simcluster.heldout import moeker50, moerouter

ROOT = Path(__file__).resolve().parents[2]
BUNDLE = ROOT / "calibration" / "h200x1-moonrouter52-2026-12-01"
TRACE = "moonrouter52.json"     # under the bundle's runs/ (studies/moonrouter52_device.py)
IMPL, LAYER = "mcore-recipe", "moonlight-ep8"


def records(path: Path) -> dict:
    """{(pass, clock): record} of IMPL's router records in a studies/moonrouter52_device.py output, checked as an H200's
    full measurement of a run not stopped (heldout/moeker50.read_trace, check_complete); one line if missing, not such
    an output, stopped, or without the records used."""
    def key(r: dict):
        return (r["pass"], r["clock"]) if (r["impl"], r["layer"], r["piece"]) == (IMPL, LAYER, "router") else None

    tr = moeker50.read_trace(path, "studies/moonrouter52_device.py", key)
    moeker50.check_complete(tr, path)
    recs = tr["records"]
    need = [("fwd", "kernels"), ("fwdbwd", "kernels"), ("fwd", "host")]
    if any(k not in recs for k in need):
        raise SimclusterError(f"{path}: expected {IMPL}'s {LAYER} router records {need} (pass, clock)")
    return recs


def document(bundle: Path = BUNDLE) -> dict:
    """The figures llm/moe_router_unfused reads: the layer's shape, the router's kernel seconds beyond the H200 card's
    GEMM prices (forward; backward = fwdbwd - fwd - dgrad - wgrad; at least 0), the host seconds of a forward and its
    kernel count, the H200's HBM rate."""
    if Path(bundle).is_file():
        raise SimclusterError(f"{bundle}: a file, expected the moonrouter52 bundle's folder (its runs/{TRACE})")
    rec = records(bundle / "runs" / TRACE)
    name, _, E, h, *_ = next(g for g in moerouter.GRID if g[0] == LAYER)
    T = int(rec[("fwd", "kernels")]["tokens"])
    gpu = load_gpu(moerouter.H200_CARD)[0]
    gf = gpu.gemm_time_s(T, E, h, dtype="bf16")
    gb = gpu.gemm_time_s(T, h, E, dtype="bf16") + gpu.gemm_time_s(h, E, T, dtype="bf16")
    kf, kfb = float(rec[("fwd", "kernels")]["time_s"]), float(rec[("fwdbwd", "kernels")]["time_s"])
    return {"from": f"heldout/moonprice52.document of {bundle.relative_to(ROOT)}/runs/{TRACE}: {IMPL}, {name} "
                    "(session 52, moonprice52)",
            "tokens": T, "experts": E, "hidden": h,
            "router_f_s": max(0.0, kf - gf), "router_b_s": max(0.0, kfb - kf - gb),
            "host_fwd_s": float(rec[("fwd", "host")]["time_s"]), "kernels_fwd": int(rec[("fwd", "kernels")]["n_kernels"]),
            "kernels_fwd_s": kf, "kernels_fwdbwd_s": kfb, "gemm_price_f_s": gf, "gemm_price_b_s": gb,
            "h200_hbm_Bps": moerouter.h200_rate()}


def document_text(bundle: Path = BUNDLE) -> str:
    return json.dumps(document(bundle), indent=1) + "\n"


def write_file(path: Path | None = None) -> None:
    """Write document_text() to llm/moe_router_unfused.FILE (or `path`)."""
    from simcluster.llm import moe_router_unfused

    Path(path or moe_router_unfused.FILE).write_text(document_text())
