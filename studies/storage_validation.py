"""Predict real DLIO runs on this machine's disk from cards the runs did not produce.

    python studies/storage_validation.py [BUNDLE]

Inputs: the disk card fitted from fio (same bundle), the loader thread rate measured by separate
calibration runs (dlio-cold/: one read thread, compute 0, page cache dropped, so the whole pipeline
of one thread including the kernel's buffered reads; dlio-warm/ for comparison), the host's cores,
and the I/O size the kernel's readahead issues (max_sectors_kb of the
block device, from the manifest). Each cold-cache DLIO run (dlio/unet3d_h100-<N>acc) is then
predicted and compared with DLIO's own summary.json: AU and throughput (MiB/s).
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from simcluster.files import scratch_folder, write_documents
from simcluster.fit.bundle import calibrate_bundle
from simcluster.fit.loader import thread_rate_Bps, thread_rate_through_model
from simcluster.script_args import ArgumentParser
from simcluster.storage import loader
from simcluster.storage.dlio_workload import DlioWorkload
from simcluster.storage.nvme import load_nvme
from simcluster.traces import dlio

ROOT = Path(__file__).resolve().parent.parent



def workload_of(run: dict) -> DlioWorkload:
    """The DLIO workload a run used: the base config's values with the run's hydra overrides."""
    base = {"num_files_train": 168, "record_length": 146600628, "record_length_stdev": 68341808, "read_threads": 4,
            "batch_size": 7, "computation_time": 0.323, "epochs": 5}
    for o in run["meta"]["overrides"]:
        key, value = o.lstrip("+").split("=")
        base[key.split(".")[-1]] = float(value)
    return DlioWorkload(run["run_id"], "unet3d", "npz", int(base["num_files_train"]), 1, base["record_length"],
                        base["record_length_stdev"], int(base["batch_size"]), int(base["read_threads"]), 2,
                        base["computation_time"], 0.0, int(base["epochs"]), 0.9)


def main() -> None:
    parser = ArgumentParser()
    parser.add_argument("bundle", nargs="?", default=str(ROOT / "calibration/local-2026-11-22"))
    args = parser.parse_args()
    bundle = Path(args.bundle)
    manifest = json.loads((bundle / "manifest.json").read_text())
    cards = scratch_folder("storage-validation")
    write_documents(cards, calibrate_bundle(bundle).documents)
    nvme, _ = load_nvme(cards / "nvme-local.yaml")
    rates = {}
    for cache in ("warm", "cold"):
        out = next((bundle / f"dlio-{cache}").glob("*/output"))
        open_rate, _ = thread_rate_Bps(dlio.parse_pfw(out / "trace-0-of-1.pfw.gz"))
        rates[cache] = dlio.parse_summary(out / "summary.json").io_MiB_per_s * 2**20
        print(f"{cache}-cache calibration run (1 read thread, compute 0): file reads {open_rate / 1e6:.0f} MB/s inside "
              f"NPZReader.open, whole pipeline {rates[cache] / 1e6:.0f} MB/s")
    host = manifest["host"]
    dev = max(host.get("block_devices", {"vda": {"max_sectors_kb": 1024}}).values(), key=lambda d: d["max_sectors_kb"])
    config = loader.LoaderConfig(io_size=dev["max_sectors_kb"] * 1024, depth=2, cores=host["cores"])
    # the intake rate for which the model reproduces the cold calibration run (its 1 thread's reads and intake overlap
    # in part, so its whole-pipeline rate is below the intake rate); the calibration run is not among the predicted ones
    cold = json.loads(next((bundle / "dlio-cold").glob("*/run.json")).read_text())
    rate = thread_rate_through_model(workload_of(cold), nvme, config, rates["cold"])
    print(f"cold calibration run reproduced by the model at an intake rate of {rate / 1e6:.0f} MB/s per thread")
    config = dataclasses.replace(config, thread_read_Bps=rate)
    print(f"disk: {nvme.bandwidth_Bps / 1e6:.0f} MB/s, t0 {nvme.service_time_s * 1e6:.0f} us, P {nvme.parallelism}; "
          f"loader thread {rate / 1e6:.0f} MB/s; {host['cores']} cores; I/O {config.io_size >> 10} KiB")
    print(f"{'run':>18} {'AU meas':>8} {'AU pred':>8} {'err pp':>7} {'MiB/s meas':>10} {'MiB/s pred':>10} {'err':>7}")
    for run in manifest["runs"]:
        if run["tool"] != "dlio" or run["status"] != "ok" or "accelerators" not in run["meta"]:
            continue
        s = dlio.parse_summary(bundle / run["path"] / "output" / "summary.json")
        w = workload_of(run)
        # one DLIO epoch, as the run measured it (DLIO's AU and throughput over the epoch, not the steady state)
        r = loader.simulate(w, nvme, s.accelerators, 1, dataclasses.replace(config, steps=w.steps_per_epoch(s.accelerators)), seed=0)
        mib = r.dlio_throughput_samples_per_s * w.record_bytes / 2**20
        print(f"{run['run_id']:>18} {s.au_mean_percent:8.1f} {r.dlio_au_percent:8.1f} {r.dlio_au_percent - s.au_mean_percent:+7.1f} "
              f"{s.io_MiB_per_s:10.1f} {mib:10.1f} {(mib / s.io_MiB_per_s - 1) * 100:+6.1f}%")


if __name__ == "__main__":
    main()
