"""fio results -> NVMe card parameters.

  t0     = mean completion latency of 4 KiB random reads at iodepth 1, less the 4 KiB transfer
  sigma  = ln(p99 / p50) / 2.326 of those latencies (a lognormal's shape from two percentiles)
  P      = the highest 4 KiB random-read IOPS over iodepths x (t0 + 4 KiB / B_unit)   (Little's law)
  B      = the highest bandwidth of any run with blocks >= 128 KiB
  B_unit = B (one large I/O alone streams at the link rate)
"""

from __future__ import annotations

import math

from simcluster.errors import CalibrationError
from simcluster.storage.nvme import NvmeParams
from simcluster.traces.fio import FioResult
from simcluster.units import format_bandwidth, format_time

Z99 = 2.3263


def fit_nvme(results: list[FioResult]) -> tuple[NvmeParams, dict]:
    reads = [r for r in results if r.direction == "read"]
    small = [r for r in reads if r.block_bytes == 4096 and "rand" in r.rw]
    qd1 = [r for r in small if r.iodepth == 1]
    large = [r for r in reads if r.block_bytes >= 128 * 1024]
    if not qd1 or not large:
        raise CalibrationError("an NVMe card needs fio 4 KiB random reads at iodepth 1 and a read with blocks >= 128 KiB",
                               hint="collect with 'simcluster collect --tools fio'")
    bw = max(r.bw_Bps for r in large)
    q = qd1[0]
    t0 = max(1e-7, q.clat_mean_s - 4096 / bw)
    p50, p99 = q.clat_percentiles_s.get(50.0), q.clat_percentiles_s.get(99.0)
    sigma = math.log(p99 / p50) / Z99 if p50 and p99 and p99 > p50 else 0.0
    iops = max(r.iops for r in small)
    parallelism = max(1, round(iops * (t0 + 4096 / bw)))
    params = NvmeParams(t0, sigma, parallelism, bw, bw)
    info = {"qd1_4k_clat": format_time(q.clat_mean_s), "max_4k_iops": round(iops), "max_large_bw": format_bandwidth(bw),
            "runs": len(reads)}
    return params, info


def nvme_params_yaml(p: NvmeParams) -> dict:
    return {"service_time": format_time(p.service_time_s), "sigma": round(p.sigma, 4), "parallelism": p.parallelism,
            "bandwidth": format_bandwidth(p.bandwidth_Bps), "unit_bandwidth": format_bandwidth(p.unit_bandwidth_Bps)}


def nvme_card(p: NvmeParams, name: str, description: str, fit: dict, provenance: dict) -> dict:
    return {"kind": "nvme", "name": name, "description": description, "params": nvme_params_yaml(p),
            "fit": fit, "provenance": provenance}
