"""Little's law on the MLPerf Storage CosmoFlow misses (issue 42, helper storfile): can a per-command latency or a
per-file cost carry them?

The drive model (storage/nvme.py) has a per-command time (the card's service_time t0, plus s / B) and reads in flight
from the loader's threads and depth. A latency or per-file cost lowers the rate only where the bytes in flight fall
below the drive's bandwidth-delay product, so the question is arithmetic before it is a simulation:

    bytes in flight    Q  >= ranks x readers x min(p, file)    (one synchronous pread of p a reader; readahead not counted)
    response, no queue R0 = L + p / B                          (L: the drive's QD1 read latency, B: its card bandwidth)
    saturated when     Q  >= B x R0                            (Little's law: X = Q / R, R >= R0)
    latency a miss needs       L* = Q / X - p / B              (the latency at which Q gives only the measured X)
    per-file cost a miss needs c* = N S / X - S R0 / p         (N readers each spending c outside the drive per file of S)

Readers per rank, from DLIO v1.0's TF reader (dlio_benchmark reader/tf_reader.py at 01283ab: TFRecordDataset(
buffer_size=transfer_size, num_parallel_reads=read_threads)) and TensorFlow's readers.py (num_parallel_reads > 1: the
legacy parallel interleave with cycle_length T, prefetch_input_elements 2T, buffer_output_elements 2; its kernel runs
cycle_length + prefetch_input_elements worker threads, one input file each): a one-record file (CosmoFlow) is read
whole by whichever of the 3T workers holds it, so up to 3T files are read at once; a long file (ResNet-50: 1,251
records) is streamed by the T cycle workers while the 2T prefetch workers stop after 2 records. Both counts are given
(T is also what simcluster's loader uses). p: the row's transfer_size; TF's 256 KiB default when unset; a record when 0.
Unet3D (npz, PyTorch reader; `rows --models unet3d`): DLIO's NPZReader (reader/npz_reader.py, dlio_benchmark e1919d7:
np.load(filename)['x']) reads a file written by np.savez (uncompressed zip) through numpy's read_array, which reads a
member that is not a real file in chunks of BUFFER_SIZE = 2**18 bytes (numpy lib/format.py; 2.4.6: _format_impl.py L181,
L864-867); each chunk reaches the drive through Python's buffered file as one 252 KiB read and one 4 KiB read (strace of
np.load on a 64 MiB npz here, numpy 2.4.6 / Python 3.11: 255 reads of 258,048 B and 258 of 4,096 B). p = 258,048 B,
the large read; readers T (each PyTorch loader worker reads one file at a time), in both columns.

The device probes' counters (calibration/h200x1-storage-readahead-2026-11-29/runs.json: the block device's reads, ms
spent on reads and the phase length) give Little's law directly: reads in flight = reads x ms per read / phase; a
device whose rate does not move while its reads in flight change several-fold is saturated, and a loss there is its
rate for the pattern, not a shortage of reads in flight.

    python studies/storage_inflight.py rows       # the MLPerf rows: Q, B x R0, L*, c*
    python studies/storage_inflight.py device     # the readahead probe's counters through Little's law
    python studies/storage_inflight.py rows --models unet3d    # the Unet3D rows (npz, PyTorch: numpy's read chunk)
    python studies/storage_inflight.py pairs      # CosmoFlow against ResNet-50 on one host: a per-read or per-file cost?

`pairs` (issue 42, session 44, helper storage44; development: every rate it reads was seen by earlier passes). On one
host and drive, a cost k paid per unit (a device read, or a file) in a resource every reader shares, on top of the bytes,
gives 1 / X = n k + 1 / B (n: units per byte of the pattern, X: the rate the rows measured). The host's CosmoFlow and
ResNet-50 rows are two such points; solving for (k, B) from them says whether either cost can carry the loss at all:
a k below zero (the pattern with more units per byte read faster) or a B above the drive's PCIe link (PCIe 4.0 x4:
4 x 16 GT/s x 128/130 / 8 = 7.88 GB/s; 5.0 x4: 15.75 GB/s; the systems' names and the product briefs give the
generation) is not a cost of that kind. Units: device reads, one per pread (a file of S read in ceil(S / p) preads of
p); files, 1 / S. A per-file k that stands on each host is then compared across hosts: a host CPU cost would follow the
host's cores, a drive-side one the drive.
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

MiB = 2**20
TF_BUFFER_BYTES = 256 * 1024          # TensorFlow readers.py _DEFAULT_READER_BUFFER_SIZE_BYTES
NPZ_READ_BYTES = 2**18 - 4096        # numpy read_array's 2**18-byte chunk: one 252 KiB read + one 4 KiB buffer fill (above)
PREFETCH_FACTOR = 2                   # readers.py ParallelInterleaveDataset: prefetch_input_elements = 2 x cycle_length
READAHEAD_RUN = ROOT / "calibration" / "h200x1-storage-readahead-2026-11-29" / "runs.json"
# QD1 read latency from a source, per card (seconds); a card not here uses its own service_time (80 us, assumed)
DATASHEET_LATENCY_S = {"micron-9550-pro-7.68tb": 60e-6}   # the card's provenance.read_latency (Micron 9550 family)


def readers_per_rank(read_threads: int, samples_per_file: int, tf_prefetch: bool = True) -> int:
    """Files one rank reads at once: TF's interleave workers (3T) for one-record files, its T cycle workers for long
    files; with tf_prefetch False, T (simcluster's loader)."""
    if samples_per_file == 1 and tf_prefetch:
        return (1 + PREFETCH_FACTOR) * read_threads
    return read_threads


def pread_bytes(transfer_size: int | None, record_bytes: float, fmt: str = "tfrecord") -> float:
    """Bytes of one synchronous read: npz, numpy's read chunk as the buffered file issues it; else the row's
    transfer_size (TF's default buffer when unset; a record when 0)."""
    if fmt == "npz":
        return NPZ_READ_BYTES
    if transfer_size is None:
        return TF_BUFFER_BYTES
    return record_bytes if transfer_size == 0 else float(transfer_size)


def littles_law(ranks: int, readers: int, pread: float, file_bytes: float, measured_Bps: float, bandwidth_Bps: float,
                latency_s: float) -> dict:
    """Q, the bandwidth-delay product, and the latency and per-file cost at which Q gives only the measured rate."""
    p = min(pread, file_bytes)
    q = ranks * readers * p
    r0 = latency_s + p / bandwidth_Bps
    n = ranks * readers
    below = measured_Bps < bandwidth_Bps      # at or above its card a row needs no latency or per-file cost: None
    return {"readers": n, "pread_B": p, "inflight_B": q, "bdp_B": bandwidth_Bps * r0, "inflight_over_bdp": q / (bandwidth_Bps * r0),
            "latency_needed_s": q / measured_Bps - p / bandwidth_Bps if below else None,
            "per_file_needed_s": n * file_bytes / measured_Bps - file_bytes * r0 / p if below else None}


def rate_against_readers(rows: list[dict]) -> list[dict]:
    """Per drive with two CosmoFlow rows (A100 and H100 emulated: different rank counts, the same reader settings), the
    ratio of their readers against the ratio of their measured rates. A rate set by a per-command latency or a per-file
    cost (Q / R with R fixed) grows with the readers; a saturated resource's rate does not."""
    out = []
    for drive in sorted({r["row"].split()[0] for r in rows}):
        pair = sorted((r for r in rows if r["model"] == "cosmoflow" and r["row"].split()[0] == drive), key=lambda r: r["ranks"])
        if len(pair) == 2:
            lo, hi = pair
            out.append({"drive": drive, "readers_ratio": hi["T_readers"]["readers"] / lo["T_readers"]["readers"],
                        "rate_ratio": hi["measured_Bps"] / lo["measured_Bps"]})
    return out


def mlperf_rows(models=("cosmoflow", "resnet50")) -> list[dict]:
    """Every compared MLPerf Storage row of the given workloads through littles_law, at T and at TF's 3T readers."""
    from simcluster.heldout import storage
    from simcluster.storage.nvme import load_nvme

    out = []
    for path in storage.published_files():
        for _, row in storage.compared_runs(path):
            w = storage.workload_of(row)
            if w.model not in models:
                continue
            card = storage.CARDS[row["drive"]]
            nvme, _ = load_nvme(ROOT / "models" / "nvme" / f"{card}.yaml")
            latency = DATASHEET_LATENCY_S.get(card, nvme.service_time_s)
            file_bytes = w.record_bytes * row["samples_per_file"]
            pread = pread_bytes(row["reader"].get("transfer_size"), w.record_bytes, w.format)
            tf = w.format != "npz"      # npz: PyTorch's loader workers, one file each (T in both columns)
            measured = row["measured"]["throughput_MiB_per_s"] * MiB
            ranks = row["measured"]["accelerators"]
            common = (pread, file_bytes, measured, nvme.bandwidth_Bps, latency)
            rec = {"row": storage.label(row), "model": w.model, "ranks": ranks, "T": w.read_threads, "latency_s": latency,
                   "system": row["system"], "file_B": file_bytes, "card_Bps": nvme.bandwidth_Bps,
                   "storage_rate_below_Bps": rate_ceiling(measured, ranks, row["measured"], w.au_threshold),
                   "measured_Bps": measured,
                   "latency_from": "datasheet" if card in DATASHEET_LATENCY_S else "card service_time (assumed)",
                   "measured_over_card": measured / nvme.bandwidth_Bps,
                   "T_readers": littles_law(ranks, readers_per_rank(w.read_threads, row["samples_per_file"], False), *common),
                   "tf_readers": littles_law(ranks, readers_per_rank(w.read_threads, row["samples_per_file"], tf), *common)}
            out.append(rec)
    return out


PCIE_X4_BPS = {4: 4 * 16e9 * 128 / 130 / 8, 5: 4 * 32e9 * 128 / 130 / 8}   # a x4 link's data rate per generation


def reads_per_byte(file_bytes: float, pread: float) -> float:
    """Device reads a byte costs when a file of file_bytes is read in preads of pread (the last one short)."""
    return math.ceil(file_bytes / min(pread, file_bytes)) / file_bytes


def two_point_cost(n1: float, x1: float, n2: float, x2: float) -> tuple[float, float]:
    """(k, B) with 1 / x = n k + 1 / B through both points; B is inf when 1 / B <= 0 (no physical drive rate)."""
    k = (1 / x1 - 1 / x2) / (n1 - n2)
    inv_b = 1 / x1 - n1 * k
    return k, (1 / inv_b if inv_b > 0 else math.inf)


def rate_ceiling(measured_Bps: float, n: int, measured: dict, threshold: float) -> float:
    """The rate the storage stays below when N + 1 accelerators failed: N + 1 at the threshold need the measured rate x
    (N + 1) / N x threshold / AU (MLPerf publishes the largest passing count; the failing one is not shown)."""
    runs = measured.get("au_mean_percent_per_run") or []
    au = sum(runs) / len(runs) / 100 if runs else threshold
    return measured_Bps * (n + 1) / n * threshold / au


def workload_pairs(rows: list[dict]) -> list[dict]:
    """Per system with CosmoFlow and ResNet-50 rows: the rates (mean over a workload's rows), the share of the card
    each gets, and the per-read and per-file costs the pair would need (two_point_cost), each judged physical or not."""
    out = []
    for system in sorted({r["system"] for r in rows}):
        by = {m: [r for r in rows if r["system"] == system and r["model"] == m] for m in ("cosmoflow", "resnet50")}
        if not all(by.values()):
            continue
        c, r = by["cosmoflow"][0], by["resnet50"][0]
        xc = sum(x["measured_Bps"] for x in by["cosmoflow"]) / len(by["cosmoflow"])
        xr = sum(x["measured_Bps"] for x in by["resnet50"]) / len(by["resnet50"])
        link = PCIE_X4_BPS[5 if "Gen5" in system else 4]
        k_read, b_read = two_point_cost(reads_per_byte(c["file_B"], c["T_readers"]["pread_B"]), xc,
                                        reads_per_byte(r["file_B"], r["T_readers"]["pread_B"]), xr)
        k_file, b_file = two_point_cost(1 / c["file_B"], xc, 1 / r["file_B"], xr)
        unet = [{"row": u["row"], "measured_Bps": u["measured_Bps"], "below_Bps": u["storage_rate_below_Bps"],
                 "per_file_line_Bps": 1 / (k_file / u["file_B"] + 1 / b_file) if math.isfinite(b_file) else None}
                for u in rows if u["system"] == system and u["model"] == "unet3d"]
        out.append({"system": system, "card_Bps": c["card_Bps"], "link_Bps": link, "cosmoflow_Bps": xc, "resnet50_Bps": xr,
                    "unet3d": unet,
                    "pread_cosmoflow_B": c["T_readers"]["pread_B"], "pread_resnet50_B": r["T_readers"]["pread_B"],
                    "per_read_s": k_read, "per_read_B_Bps": b_read, "per_read_physical": k_read >= 0 and b_read <= link,
                    "per_file_s": k_file, "per_file_B_Bps": b_file, "per_file_physical": k_file >= 0 and b_file <= link})
    return out


def device_phases(path: Path = READAHEAD_RUN) -> list[dict]:
    """Each probe phase's block-device counters through Little's law: reads and bytes in flight, ms per read, GB/s."""
    rows = json.loads(path.read_text())["rows"]
    out = []
    for r in rows:
        phase = r["phase_s"]
        inflight = r["device_reads"] * r["device_read_ms_per_read"] / 1000 / phase
        out.append({"kind": r["kind"], "mode": r["mode"], "read_ahead_kb": r.get("read_ahead_kb"), "pread_B": r["transfer_B"],
                    "readers": r["readers"], "read_B": r["device_read_B_mean"], "ms_per_read": r["device_read_ms_per_read"],
                    "inflight_reads": inflight, "inflight_B": inflight * r["device_read_B_mean"],
                    "device_GBps": r["device_bytes"] / phase / 1e9})
    return out


def saturation(phases: list[dict]) -> dict:
    """Per pattern (kind) over the buffered phases: the spread of bytes in flight (max / min) against the spread of the
    device's rate. A rate that moves far less than the bytes in flight is a saturated device."""
    out = {}
    for kind in ("large", "small"):
        ps = [p for p in phases if p["kind"] == kind and p["mode"] == "buffered"]
        q = [p["inflight_B"] for p in ps]
        x = [p["device_GBps"] for p in ps]
        out[kind] = {"inflight_spread": max(q) / min(q), "rate_spread": max(x) / min(x),
                     "rate_at_least_inflight": x[q.index(min(q))], "rate_at_most_inflight": x[q.index(max(q))]}
    return out


def _print_rows(rows: list[dict]) -> None:
    print(f"{'row':>24} {'T':>3} {'meas/card':>9} {'readers T/3T':>12} {'pread':>7} {'Q MiB (T)':>9} {'B x R0 MiB':>10} "
          f"{'Q/BDP':>6} {'L used':>7} {'L* (T)':>8} {'L* (3T)':>8} {'c* (T)':>8} {'c* (3T)':>8}")
    for r in rows:
        a, b = r["T_readers"], r["tf_readers"]
        print(f"{r['row']:>24} {r['T']:3d} {r['measured_over_card']:9.2f} {a['readers']:5d}/{b['readers']:<6d} "
              f"{a['pread_B'] / 1024:6.0f}K {a['inflight_B'] / MiB:9.0f} {a['bdp_B'] / MiB:10.2f} {a['inflight_over_bdp']:6.0f} "
              f"{r['latency_s'] * 1e6:5.0f}us {_ms(a['latency_needed_s'])} {_ms(b['latency_needed_s'])} "
              f"{_ms(a['per_file_needed_s'])} {_ms(b['per_file_needed_s'])}")
    print("L*, c*: the unloaded per-command latency (per-file cost) at which the bytes in flight give only the measured rate; "
          "none for a row at or above its card.")
    for r in rate_against_readers(rows):
        print(f"{r['drive']} CosmoFlow, A100 against H100 rows: {r['readers_ratio']:.2f}x the readers, "
              f"{r['rate_ratio']:.2f}x the rate")


def _print_pairs(pairs: list[dict]) -> None:
    print(f"{'system':>36} {'card':>6} {'link':>6} {'CF GB/s':>7} {'R50':>6} {'CF/R50':>6} {'pread CF/R50':>13} "
          f"{'per read k, B':>17} {'ok':>3} {'per file k, B':>17} {'ok':>3}")
    for p in pairs:
        def cost(k: float, b: float) -> str:
            return f"{k * 1e6:7.1f}us {b / 1e9:6.2f}" if math.isfinite(b) else f"{k * 1e6:7.1f}us    inf"
        print(f"{p['system']:>36} {p['card_Bps'] / 1e9:6.2f} {p['link_Bps'] / 1e9:6.2f} {p['cosmoflow_Bps'] / 1e9:7.2f} "
              f"{p['resnet50_Bps'] / 1e9:6.2f} {p['cosmoflow_Bps'] / p['resnet50_Bps']:6.2f} "
              f"{p['pread_cosmoflow_B'] / 1024:5.0f}K/{p['pread_resnet50_B'] / 1024:4.0f}K "
              f"{cost(p['per_read_s'], p['per_read_B_Bps'])} {'yes' if p['per_read_physical'] else 'no':>3} "
              f"{cost(p['per_file_s'], p['per_file_B_Bps'])} {'yes' if p['per_file_physical'] else 'no':>3}")
    print("k, B: the cost per unit and the drive rate that put both of the host's workloads on 1 / X = n k + 1 / B; "
          "ok: k >= 0 and B within the drive's PCIe x4 link.")
    for p in pairs:
        for u in p["unet3d"]:
            line = "no line" if u["per_file_line_Bps"] is None else f"{u['per_file_line_Bps'] / 1e9:.2f} GB/s"
            print(f"{u['row']:>24}: the host's per-file line gives {line}; the storage delivered "
                  f"{u['measured_Bps'] / 1e9:.2f} GB/s and stays below {u['below_Bps'] / 1e9:.2f} (one more accelerator failed)")


def _ms(seconds: float | None) -> str:
    return f"{'none':>8}" if seconds is None else f"{seconds * 1e3:6.1f}ms"


def _print_device(phases: list[dict]) -> None:
    print(f"{'kind':>6} {'mode':>9} {'ra_kb':>6} {'pread':>6} {'read MiB':>8} {'ms/read':>8} {'in flight':>9} {'MiB':>7} {'GB/s':>6}")
    for p in phases:
        print(f"{p['kind']:>6} {p['mode']:>9} {p['read_ahead_kb']!s:>6} {p['pread_B'] // 1024:5d}K {p['read_B'] / MiB:8.2f} "
              f"{p['ms_per_read']:8.1f} {p['inflight_reads']:9.1f} {p['inflight_B'] / MiB:7.0f} {p['device_GBps']:6.2f}")
    for kind, s in saturation(phases).items():
        print(f"{kind}: bytes in flight over the buffered phases vary {s['inflight_spread']:.1f}x, the device's rate "
              f"{s['rate_spread']:.2f}x ({s['rate_at_least_inflight']:.2f} GB/s at the least in flight, "
              f"{s['rate_at_most_inflight']:.2f} at the most)")


def main() -> None:
    from simcluster.script_args import ArgumentParser

    parser = ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("what", choices=("rows", "device", "pairs"))
    parser.add_argument("--json", help="write the table as JSON here")
    parser.add_argument("--models", default="cosmoflow,resnet50", help="rows: the workloads, comma-separated "
                        "(cosmoflow, resnet50, unet3d)")
    args = parser.parse_args()
    models = tuple(m.strip() for m in args.models.split(",") if m.strip())
    if not set(models) <= {"cosmoflow", "resnet50", "unet3d"}:
        raise SystemExit(f"storage_inflight.py: --models {args.models!r}: expected cosmoflow, resnet50 and / or unet3d")
    if args.what == "pairs":
        table = workload_pairs(mlperf_rows(("cosmoflow", "resnet50", "unet3d")))
        _print_pairs(table)
    else:
        table = mlperf_rows(models) if args.what == "rows" else device_phases()
        (_print_rows if args.what == "rows" else _print_device)(table)
    if args.json:
        Path(args.json).write_text(json.dumps(table, indent=1))


if __name__ == "__main__":
    main()
