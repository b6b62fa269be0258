"""The storage questions `simcluster storage` answers, as documents (JSON-ready, SI units: bytes/s as `_Bps`, seconds
as `_s`; AU in percent as `_percent`) and their text (MiB/s): how many accelerators a set of drives feeds at the
workload's AU threshold, and one simulated run."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from simcluster import strict
from simcluster.errors import SimclusterError

MiB = 2**20


@dataclass(frozen=True)
class StorageSetup:
    workload: object            # storage.dlio_workload.DlioWorkload
    nvme: object                # storage.nvme.NvmeParams
    nvme_name: str
    config: object              # storage.loader.LoaderConfig


def setup(workload_path: str, nvme_path: str, accelerator: str | None = None, io_size: str = "4MiB", depth: int = 2,
          steps: int | None = None, thread_rate: str | None = None, cores: float | None = None) -> StorageSetup:
    """A DLIO workload (optionally with the compute time MLPerf Storage publishes for an accelerator), an NVMe card
    and the loader's settings."""
    from simcluster.cards import load_nvme
    from simcluster.storage import dlio_workload
    from simcluster.storage.loader import LoaderConfig
    from simcluster.units import parse_bandwidth, parse_size

    w = dlio_workload.load(workload_path)
    if accelerator:
        key = (w.model, accelerator.lower())
        if key not in dlio_workload.COMPUTE_TIME_S:
            known = sorted(f"{m}/{a}" for m, a in dlio_workload.COMPUTE_TIME_S)
            raise SimclusterError(f"--accelerator {accelerator}: no published compute time for {w.model}",
                                  hint=f"known: {', '.join(known)}")
        w = dataclasses.replace(w, computation_time_s=dlio_workload.COMPUTE_TIME_S[key])
    if cores is not None and not 0 < cores <= 2**16:
        raise SimclusterError(f"--cores {cores}: expected a number of host cores > 0")
    nvme, card = load_nvme(nvme_path)
    thread_Bps = None
    if thread_rate:
        try:
            thread_Bps = strict.rate(parse_bandwidth(thread_rate))
        except ValueError as exc:
            raise SimclusterError(f"--thread-rate {thread_rate}: {exc}") from None
    config = LoaderConfig(io_size=int(parse_size(io_size)), depth=depth, steps=steps, thread_read_Bps=thread_Bps,
                          cores=cores)
    return StorageSetup(w, nvme, str(card.get("name")), config)


def max_accelerators(s: StorageSetup, drives: int, seed: int) -> dict:
    from simcluster.storage import loader

    best, tried = loader.max_accelerators(s.workload, s.nvme, drives, s.config, seed=seed)
    return {"workload": s.workload.path, "model": s.workload.model, "nvme": s.nvme_name, "drives": drives,
            "au_threshold_percent": s.workload.au_threshold * 100,
            "accelerators": best.accelerators if best else 0,
            "throughput_Bps": best.throughput_MiB_per_s * MiB if best else 0.0,
            "au_percent": best.au_percent if best else 0.0,
            "tried": [{"accelerators": r.accelerators, "au_percent": r.au_percent,
                       "throughput_Bps": r.throughput_MiB_per_s * MiB} for r in tried]}


def max_accelerators_text(out: dict) -> str:
    lines = [f"{out['model']} ({out['workload']}) on {out['drives']} x {out['nvme']}: AU threshold "
             f"{out['au_threshold_percent']:.0f}%"]
    lines += [f"  {r['accelerators']:5d} accelerators  AU {r['au_percent']:6.2f}%  {r['throughput_Bps'] / MiB:9.1f} MiB/s"
              for r in out["tried"]]
    if out["accelerators"] == 0:
        tried = out["tried"][0] if out["tried"] else None
        lines.append(f"max accelerators: none: even {tried['accelerators'] if tried else 1} accelerator(s) stay below the "
                     f"{out['au_threshold_percent']:.0f}% AU threshold" + (f" (AU {tried['au_percent']:.2f}%)" if tried else "")
                     + ": the storage path is too slow for this workload")
    else:
        lines.append(f"max accelerators: {out['accelerators']} at {out['throughput_Bps'] / MiB:.1f} MiB/s, "
                     f"AU {out['au_percent']:.2f}%")
    return "\n".join(lines) + "\n"


def simulate(s: StorageSetup, accelerators: int, drives: int, seed: int):
    """One run: (the document, the RunResult for figures)."""
    from simcluster.storage import loader
    from simcluster.storage.report import qd_stats, throughput_stats

    r = loader.simulate(s.workload, s.nvme, accelerators, drives, s.config, seed=seed)
    return {"workload": s.workload.path, "model": s.workload.model, "nvme": s.nvme_name, "accelerators": r.accelerators,
            "drives": r.drives, "steps": r.steps, "au_percent": r.au_percent, "au_threshold_percent": s.workload.au_threshold * 100,
            "compute_per_step_s": s.workload.computation_time_s, "throughput_samples_per_s": r.throughput_samples_per_s,
            "throughput_Bps": r.throughput_MiB_per_s * MiB, "storage_stall_per_step_s": r.stall_per_step_s,
            "queue_depth": qd_stats(r), "device_throughput": {"drive": 0, **throughput_stats(r)},
            "latency_s": {"drive": 0, **r.logs[0].latency_percentiles()}}, r


def simulate_text(out: dict) -> str:
    """One run as lines: AU against the threshold, throughput, the stall beside the compute, the first drive's device view."""
    dev, lat = out["device_throughput"], out["latency_s"]
    pcts = ", ".join(f"p{k} {v * 1e3:.1f} ms" for k, v in lat.items() if k != "drive")
    return "\n".join([
        f"{out['model']} ({out['workload']}) on {out['drives']} x {out['nvme']}, {out['accelerators']} accelerators, "
        f"{out['steps']} steps each",
        f"  AU {out['au_percent']:.2f}% (threshold {out['au_threshold_percent']:.0f}%: "
        f"{'met' if out['au_percent'] >= out['au_threshold_percent'] else 'not met'})",
        f"  throughput {out['throughput_samples_per_s']:.1f} samples/s, {out['throughput_Bps'] / MiB:.1f} MiB/s (all accelerators)",
        f"  per step: compute {out['compute_per_step_s'] * 1e3:.1f} ms, stall {out['storage_stall_per_step_s'] * 1e3:.1f} ms "
        "beyond it (own batch wait + the barrier's wait for the others' loads and compute jitter; first step excluded)",
        f"  drive 0 of {out['drives']}: read rate mean {dev['mean_Bps'] / MiB:.1f} MiB/s (p90 {dev['p90_Bps'] / MiB:.1f}, "
        f"{dev['bin_s']} s bins); read latency {pcts}",
    ] + [f"  figure {f}" for f in out.get("figures", [])]) + "\n"
