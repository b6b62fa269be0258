"""MLPerf Storage's own measurement against the steady state (issue 42, session 42, helper storage).

MLPerf Storage reports DLIO's per-epoch numbers: each epoch starts with empty loader buffers (DLIO v1.0's PyTorch
loader iterates one DataLoader with persistent workers, whose prefetch restarts with each epoch's iterator; the TF
pipeline is re-iterated per epoch), its first load is left out of AU (AU = sum(compute[1:]) / (wall - proc[0])) but
counted in throughput (samples / epoch wall). An epoch is files x samples / (ranks x batch) steps, set by the submitted
dataset, so where the loaders hold T x f batches a rank against an epoch of a few hundred steps, the epoch's AU is
not the steady state's: the batches read during the excluded first load feed the epoch's first T x f steps.

This study predicts each published row both ways with the model as shipped (no constant changed):

  steady  heldout/storage.predict: the steady state at the submitted count (what the error-band table uses);
  epoch   one DLIO epoch of the submitted dataset at the submitted count (`storage simulate --steps` = the epoch's
          steps: a fixed run is one DLIO epoch, its loaders stop with it), DLIO's AU and throughput over it.

and, with --counts, the epoch AU at counts around the published one (the count MLPerf's rule would pass in the model).
A run whose epoch exceeds the simulation's read bound at 4 MiB reads is run at 8 or 16 MiB (printed; the model's
rate does not depend on the read size at these concurrencies, storage-findings.md, seventh pass).

    python studies/storage_epoch.py [--counts] [--files calibration/published/mlperf-storage-v1.0-micron.yaml ...]
"""

from __future__ import annotations

import time

from simcluster.errors import SimclusterError
from simcluster.heldout import storage as S
from simcluster.script_args import ArgumentParser
from simcluster.storage import loader
from simcluster.storage.nvme import load_nvme


def epoch_run(row: dict, n: int):
    """One DLIO epoch of the row's dataset at n accelerators: (AU %, MiB/s, steps, I/O size)."""
    w = S.workload_of(row)
    nvme, _ = load_nvme(S.ROOT / "models" / "nvme" / f"{S.CARDS[row['drive']]}.yaml")
    steps = w.steps_per_epoch(n)
    for io in (S.IO_SIZE, 2 * S.IO_SIZE, 4 * S.IO_SIZE):
        try:
            loader.check_reads(w, n, steps, io)
        except SimclusterError:
            continue
        cfg = loader.LoaderConfig(io_size=io, cache_bytes=S.page_cache_bytes(row), steps=steps)
        r = loader.simulate(w, nvme, n, S.drives_of(row), cfg, seed=0)
        return r.dlio_au_percent, r.dlio_throughput_samples_per_s * w.record_bytes / 2**20, steps, io
    return None


def main() -> None:
    ap = ArgumentParser()
    ap.add_argument("--files", nargs="*", default=[str(p) for p in S.published_files()])
    ap.add_argument("--counts", action="store_true", help="also the epoch AU at the published count -1 .. +2")
    args = ap.parse_args()
    print(f"{'row':>26} {'acc':>4} {'MiB/s meas':>10} {'AU meas':>7} | {'steady':>7} {'err':>6} {'AU':>5} | "
          f"{'epoch':>7} {'err':>6} {'AU':>5} {'steps':>6} {'I/O':>5} {'s':>4}")
    rows = []
    for f in args.files:
        for _, row in S.compared_runs(S.Path(f)):
            m = row["measured"]
            au_meas = sum(m["au_mean_percent_per_run"]) / len(m["au_mean_percent_per_run"])
            t = time.perf_counter()
            st = S.predict(row)
            ep = epoch_run(row, m["accelerators"])
            mib = m["throughput_MiB_per_s"]
            e_err = ep[1] / mib - 1 if ep else None
            rows.append((st["error_at_measured_count"], e_err))
            ep_text = (f"{ep[1]:7.0f} {e_err * 100:+5.1f}% {ep[0]:5.1f} {ep[2]:6d} {ep[3] >> 20:3d}Mi" if ep
                       else f"{'n/s':>7} {'':>6} {'':>5} {'':>6} {'':>5}")
            print(f"{S.label(row):>26} {m['accelerators']:4d} {mib:10.0f} {au_meas:7.1f} | {st['MiB_per_s_at_measured_count']:7.0f} "
                  f"{st['error_at_measured_count'] * 100:+5.1f}% {st['au_at_measured_count']:5.1f} | {ep_text} "
                  f"{time.perf_counter() - t:4.0f}", flush=True)
            if args.counts and ep:
                thr = S.workload_of(row).au_threshold * 100
                n0 = m["accelerators"]
                aus = {n: epoch_run(row, n) for n in range(max(1, n0 - 1), n0 + 3) if n != n0} | {n0: ep}
                passing = [n for n in sorted(aus) if aus[n] and aus[n][0] >= thr]
                print(f"{'':>26} epoch AU by count: " + ", ".join(f"{n}: {aus[n][0]:.1f}" for n in sorted(aus) if aus[n])
                      + f"  (largest passing {max(passing) if passing else 'none'} of those tried)", flush=True)
    within = [sum(abs(e) <= 0.10 for e in col if e is not None) for col in zip(*rows, strict=True)]
    print(f"{len(rows)} rows: within 10% at the submitted count: steady {within[0]}, epoch {within[1]} "
          f"(epoch run on {sum(e is not None for _, e in rows)}; the rest n/s)")


if __name__ == "__main__":
    main()
