"""The storage questions `simcluster storage` answers, as documents (JSON-ready, SI units: bytes/s as `_Bps`, seconds
as `_s`; AU in percent as `_percent`) and their text (MiB/s): how many accelerators a set of drives feeds at the
workload's AU threshold, and one simulated run."""

from __future__ import annotations

import dataclasses
import math
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
    capacity: object = None     # the card's params.capacity (a size), if stated


def setup(workload_path: str, nvme_path: str, accelerator: str | None = None, io_size: str = "4MiB", depth: int = 2,
          steps: int | None = None, thread_rate: str | None = None, cores: float | None = None, network: str | None = None,
          page_cache: str | None = None, at_least: bool = False) -> StorageSetup:
    """A DLIO workload (optionally with the compute time MLPerf Storage publishes for an accelerator), an NVMe card
    and the loader's settings."""
    from simcluster.storage import dlio_workload
    from simcluster.storage.loader import LoaderConfig
    from simcluster.storage.nvme import load_nvme
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
    network_Bps = _rate("--network", network, parse_bandwidth)
    cache = _rate("--page-cache", page_cache, parse_size)
    if depth < 1:
        raise SimclusterError(f"--depth {depth}: reads in flight per loader thread must be >= 1")
    config = LoaderConfig(io_size=int(parse_size(io_size)), depth=depth, steps=steps, at_least=at_least,
                          thread_read_Bps=thread_Bps, cores=cores, network_Bps=network_Bps, cache_bytes=cache)
    return StorageSetup(w, nvme, str(card.get("name")), config, card.get("params", {}).get("capacity"))


def _rate(flag: str, text: str | None, parse) -> float | None:
    if text is None:
        return None
    from simcluster.errors import UnitError

    try:
        return strict.rate(parse(text))
    except (ValueError, TypeError, UnitError) as exc:
        raise SimclusterError(f"{flag} {text}: {exc}") from None


def check_capacity(s: StorageSetup, drives: int) -> None:
    """A dataset larger than the drives hold is refused (the card's capacity; none stated: not checked)."""
    from simcluster.units import parse_size

    if s.capacity is None or drives < 1:   # a drive count out of range is refused by the loader's check
        return
    w = s.workload
    data = w.num_files * w.samples_per_file * w.record_bytes
    room = drives * parse_size(str(s.capacity))
    if data > room:
        raise SimclusterError(f"dataset of {data / 1e12:.3g} TB (dataset.num_files_train {w.num_files} x "
                              f"{w.samples_per_file} samples x {w.record_bytes:.4g} B) is larger than {drives} x {s.nvme_name} "
                              f"({room / 1e12:.3g} TB)", where=w.path, hint="fewer files or more --drives")


def notes(s: StorageSetup) -> list[str]:
    """Stated limits of the model that apply to this workload."""
    from simcluster.storage.loader import MIN_IO_BYTES

    out = []
    if s.workload.record_bytes < MIN_IO_BYTES:
        out.append(f"records of {s.workload.record_bytes:.4g} B are below one page: each is read as one "
                   f"{MIN_IO_BYTES // 1024} KiB I/O (throughput counts the record's bytes, as DLIO does)")
    return out


def _ci(value: float) -> float | None:
    """A 95% half-width, None where one block gives none."""
    return value if math.isfinite(value) else None


def _pm(value: float | None) -> str:
    return f"+- {value:.2f}" if value is not None else "+- ? (one block)"


def _run_doc(r) -> dict:
    e = r.estimate
    return {"accelerators": r.accelerators, "au_percent": r.au_percent, "au_ci_percent": _ci(e.au_ci_percent),
            "throughput_Bps": r.throughput_MiB_per_s * MiB, "steps": r.steps, "settled": e.settled,
            "window_steps": [e.first_step, e.last_step], "limit": r.limit, "use": r.use}


def with_trust(out: dict, s: StorageSetup) -> dict:
    """A storage answer with its band and validation status (trust/: storage by workload x limit)."""
    from simcluster.trust.band import annotate, storage_trust

    return annotate(out, storage_trust(s.workload.model, out.get("limit"), out.get("accelerators") or None),
                    rates=("throughput_Bps",))


def trust_line(out: dict) -> str:
    """The answer's band and status in one line (trust/band.py), from the model, limit and count it names."""
    from simcluster.trust.band import storage_trust

    return f"trust: {storage_trust(out['model'], out.get('limit'), out.get('accelerators') or None).text()}"


def max_accelerators(s: StorageSetup, drives: int, seed: int) -> dict:
    from simcluster.storage import accelerator_search

    check_capacity(s, drives)
    best, tried = accelerator_search.max_accelerators(s.workload, s.nvme, drives, s.config, seed=seed)
    above = [r for r in tried if r.accelerators == (best.accelerators + 1 if best else 1)]
    stop = above[0] if above else None
    return with_trust({"workload": s.workload.path, "model": s.workload.model, "nvme": s.nvme_name, "drives": drives,
            "au_threshold_percent": s.workload.au_threshold * 100,
            "accelerators": best.accelerators if best else 0,
            "throughput_Bps": best.throughput_MiB_per_s * MiB if best else 0.0,
            "au_percent": best.au_percent if best else 0.0,
            "au_ci_percent": _ci(best.estimate.au_ci_percent) if best else None,
            "limit": stop.limit if stop else None,
            "limit_use": stop.use if stop else None,
            "at_least": bool(best and best.bound),
            "notes": notes(s) + ([best.bound] if best and best.bound else []),
            "tried": [_run_doc(r) for r in tried]}, s)


def _use_text(use: dict) -> str:
    return ", ".join(f"{k} {v * 100:.0f}%" for k, v in use.items())


def max_accelerators_text(out: dict) -> str:
    lines = [f"{out['model']} ({out['workload']}) on {out['drives']} x {out['nvme']}: AU threshold "
             f"{out['au_threshold_percent']:.0f}% at steady state"]
    lines += [f"  {r['accelerators']:5d} accelerators  AU {r['au_percent']:6.2f}% {_pm(r['au_ci_percent'])}  "
              f"{r['throughput_Bps'] / MiB:9.1f} MiB/s  ({r['steps']} steps, steady over {r['window_steps'][0]}-"
              f"{r['window_steps'][1]}{'' if r['settled'] else ', NOT settled within the bound'}; busy: {_use_text(r['use'])})"
              for r in out["tried"]]
    if out["accelerators"] == 0:
        tried = out["tried"][0] if out["tried"] else None
        lines.append(f"max accelerators: none: even {tried['accelerators'] if tried else 1} accelerator(s) stay below the "
                     f"{out['au_threshold_percent']:.0f}% AU threshold" + (f" (AU {tried['au_percent']:.2f}%)" if tried else "")
                     + f"; limited by {out['limit']}")
    else:
        lines.append(f"max accelerators: {'at least ' if out.get('at_least') else ''}{out['accelerators']} at {out['throughput_Bps'] / MiB:.1f} MiB/s, "
                     f"AU {out['au_percent']:.2f}% {_pm(out['au_ci_percent'])} (95%)")
        if out["limit"]:
            lines.append(f"limit: {out['limit']} ({out['accelerators'] + 1} accelerators: {_use_text(out['limit_use'])} busy)")
    lines += [f"note: {n}" for n in out["notes"]] + [trust_line(out)]
    return "\n".join(lines) + "\n"


def simulate(s: StorageSetup, accelerators: int, drives: int, seed: int):
    """One run: (the document, the RunResult for figures)."""
    from simcluster.storage import loader
    from simcluster.storage.report import qd_stats, throughput_stats

    check_capacity(s, drives)
    r = loader.simulate(s.workload, s.nvme, accelerators, drives, s.config, seed=seed)
    e = r.estimate
    out = {"workload": s.workload.path, "model": s.workload.model, "nvme": s.nvme_name, "accelerators": r.accelerators,
            "drives": r.drives, "steps": r.steps, "au_percent": r.au_percent, "au_threshold_percent": s.workload.au_threshold * 100,
            "au_ci_percent": _ci(e.au_ci_percent), "settled": e.settled, "window_steps": [e.first_step, e.last_step],
            "dlio_au_percent": r.dlio_au_percent, "dlio_throughput_Bps": r.dlio_throughput_samples_per_s * s.workload.record_bytes,
            "limit": r.limit, "use": r.use, "notes": notes(s),
            "compute_per_step_s": s.workload.computation_time_s, "throughput_samples_per_s": r.throughput_samples_per_s,
            "throughput_Bps": r.throughput_MiB_per_s * MiB, "storage_stall_per_step_s": r.stall_per_step_s,
            "queue_depth": qd_stats(r), "device_throughput": {"drive": 0, **throughput_stats(r)},
            "latency_s": {"drive": 0, **r.logs[0].latency_percentiles()}}
    return with_trust(out, s), r


def simulate_text(out: dict) -> str:
    """One run as lines: AU against the threshold, throughput, the stall beside the compute, the first drive's device view."""
    dev, lat = out["device_throughput"], out["latency_s"]
    pcts = ", ".join(f"p{k} {v * 1e3:.1f} ms" for k, v in lat.items() if k != "drive")
    return "\n".join([
        f"{out['model']} ({out['workload']}) on {out['drives']} x {out['nvme']}, {out['accelerators']} accelerators, "
        f"{out['steps']} steps each",
        f"  AU {out['au_percent']:.2f}% {_pm(out['au_ci_percent'])} (95%) at steady state, steps {out['window_steps'][0]}-"
        f"{out['window_steps'][1]}{'' if out['settled'] else ' (NOT settled: a longer run would tell)'} (threshold "
        f"{out['au_threshold_percent']:.0f}%: {'met' if out['au_percent'] >= out['au_threshold_percent'] else 'not met'}); "
        f"DLIO's AU over the whole run {out['dlio_au_percent']:.2f}%",
        f"  throughput {out['throughput_samples_per_s']:.1f} samples/s, {out['throughput_Bps'] / MiB:.1f} MiB/s (all accelerators, "
        f"steady); DLIO's over the run {out['dlio_throughput_Bps'] / MiB:.1f} MiB/s",
        f"  limit: {out['limit']} (busy: {_use_text(out['use'])})",
        f"  per step: compute {out['compute_per_step_s'] * 1e3:.1f} ms, stall {out['storage_stall_per_step_s'] * 1e3:.1f} ms "
        "beyond it (own batch wait + the barrier's wait for the others' loads and compute jitter; first step excluded)",
        f"  drive 0 of {out['drives']}: read rate mean {dev['mean_Bps'] / MiB:.1f} MiB/s (p90 {dev['p90_Bps'] / MiB:.1f}, "
        f"{dev['bin_s']} s bins); read latency {pcts}",
    ] + [f"  note: {n}" for n in out["notes"]] + [f"  figure {f}" for f in out.get("figures", [])] + [f"  {trust_line(out)}"]) + "\n"
