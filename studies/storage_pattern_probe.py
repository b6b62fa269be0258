"""Does one NVMe drive give DLIO's CosmoFlow read pattern less bandwidth than ResNet-50's? (issue 42, device probe)

MLPerf Storage v1.0 drives give CosmoFlow a drive-specific share of what the same drive gives ResNet-50 on the same host
(docs/models/storage-findings.md, "Issue 42, seventh pass"): Micron 9550 0.68-0.70, 6500 ION 0.75-0.80, 9400 0.93-0.98,
Samsung PM1753 1.06. simcluster's drive is one bandwidth per card, so it predicts 1.00 for any pattern of reads of
128 KiB or more with enough of them in flight. This probe reads both patterns on one machine's drive as DLIO v1.0's
TensorFlow path issues them (dlio_benchmark bc693c6, the commit mlcommons/storage v1.0 pins: reader/tf_reader.py's
TFRecordDataset(buffer_size=transfer_size, num_parallel_reads=read_threads), a buffered file read in preads of
transfer_size, one file after another per reader; no O_DIRECT on that path):

- small: files of one CosmoFlow record (2,828,486 B), each opened, read from start to end in preads of `transfer`
  bytes, closed (one sample a file, as the v1.0 CosmoFlow dataset);
- large: files of one ResNet-50 TFRecord (1,251 records of 114,660 B = 143,439,660 B), read the same way.

R rank processes x T reader threads each (DLIO's ranks and read_threads); every file's pages are dropped after it is
read (posix_fadvise DONTNEED) so every read is cold, as in a data set 5x the host memory. Standard library only.

    python studies/storage_pattern_probe.py make --dir /tmp/probe --small 3000 --large 128
    python studies/storage_pattern_probe.py run --dir /tmp/probe --kind small --ranks 8 --threads 8 --transfer 1M
    python studies/storage_pattern_probe.py plan --dir /tmp/probe --out runs.json     # the registered plan
    python studies/storage_pattern_probe.py predict --card models/nvme/micron-9550-pro-7.68tb.yaml   # the model's ratios
    python studies/storage_pattern_probe.py read runs.json registered.json            # ratios against the registration
"""

from __future__ import annotations

import json
import multiprocessing as mp
import os
import platform
import random
import subprocess
import sys
import threading
import time
from pathlib import Path

SMALL_BYTES = 2_828_486            # CosmoFlow record_length (MLPerf Storage v1.0 cosmoflow_*.yaml)
LARGE_BYTES = 1251 * 114_660       # ResNet-50: num_samples_per_file x record_length (resnet50_*.yaml)
BLOCK = 64 * 2**20                 # bytes of random data written per write call
ALIGN = 4096
# The registered plan: (kind, ranks, threads, transfer bytes, mode). 16, 64 and 128 readers; TF's default buffer
# (256 KiB), Micron's CosmoFlow overrides (1 MiB 9400/6500, 2 MiB 9550); O_DIRECT whole-file reads at 64 readers;
# then 64 readers at 1 MiB with a full page cache (mode "full": no DONTNEED, the ranks in a memory cgroup of
# FULL_CACHE_BYTES, so reads reclaim pages as on an MLPerf host whose data set is 5x its memory).
MODES = ("buffered", "direct", "full")
FULL_CACHE_BYTES = 4 * 2**30
CGROUP = Path("/sys/fs/cgroup/storage_probe")
PLAN = [(kind, r, t, x, "buffered") for r, t in ((8, 2), (8, 8), (16, 8)) for x in (256 * 1024, 2**20, 2 * 2**20)
        for kind in ("large", "small")] + [(kind, 8, 8, 2 * 2**20, "direct") for kind in ("large", "small")] + \
    [(kind, 8, 8, 2**20, "full") for kind in ("large", "small")]


def size(text: str) -> int:
    units = {"K": 1024, "M": 2**20, "G": 2**30}
    return int(float(text[:-1]) * units[text[-1].upper()]) if text[-1].upper() in units else int(text)


def make(folder: Path, small: int, large: int) -> dict:
    """Write the two sets (random bytes, so a compressing drive sees what MLPerf's generated data gives it)."""
    rng = random.Random(0)
    block = bytes(rng.getrandbits(8) for _ in range(2**16)) * (BLOCK // 2**16)
    t0 = time.perf_counter()
    for kind, count, nbytes in (("small", small, SMALL_BYTES), ("large", large, LARGE_BYTES)):
        (folder / kind).mkdir(parents=True, exist_ok=True)
        for i in range(count):
            path = folder / kind / f"{i:06d}.tfrecord"
            if path.exists() and path.stat().st_size == nbytes:
                continue
            with open(path, "wb") as f:
                left, off = nbytes, (i * 7919 * ALIGN) % BLOCK
                while left:
                    n = min(left, BLOCK - off)
                    f.write(block[off:off + n])
                    left, off = left - n, 0
                f.flush()
                os.fsync(f.fileno())       # written pages leave the cache too, even where drop_caches is refused
                os.posix_fadvise(f.fileno(), 0, 0, os.POSIX_FADV_DONTNEED)
    os.sync()
    return {"small_files": small, "large_files": large, "write_s": time.perf_counter() - t0}


def _reader(files, transfer, mode, stop, out, index, start):
    """One reader thread: its files one after another (again from the first when through: each was dropped from the
    page cache after its read, so every read is cold), each opened, read in preads of `transfer` bytes, closed."""
    import itertools
    import mmap

    buf = mmap.mmap(-1, transfer)              # page-aligned, as O_DIRECT needs
    view = memoryview(buf)
    nbytes = nfiles = 0
    flags = os.O_RDONLY | (os.O_DIRECT if mode == "direct" else 0)
    start.wait()
    for path in itertools.cycle(files):
        if stop.is_set():
            break
        fd = os.open(path, flags)
        try:
            off = 0
            while not stop.is_set():
                n = os.preadv(fd, [view], off)
                off += n
                out[index] = (nbytes, nfiles, nbytes + off)     # every pread's bytes too (partial files)
                if n < transfer:
                    break
            nbytes += off
            nfiles += 1
            if mode != "full":
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)
        out[index] = (nbytes, nfiles, nbytes)
    out[index] = (nbytes, nfiles, nbytes)


def _cpu_s() -> float:
    """User + system CPU seconds of this process (all its threads) so far."""
    import resource

    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def _cgroup(limit: int) -> str:
    """A memory cgroup (v2) of `limit` bytes for the ranks of a full-cache phase: its path, or '' where the machine has
    no cgroup v2 memory controller to give (then the phase is skipped: its files would stay cached)."""
    parent = CGROUP.parent
    try:
        if "memory" not in (parent / "cgroup.controllers").read_text().split():
            return ""
        if "memory" not in (parent / "cgroup.subtree_control").read_text().split():
            (parent / "cgroup.subtree_control").write_text("+memory\n")
        CGROUP.mkdir(exist_ok=True)
        if not (CGROUP / "memory.max").exists():
            return ""
        (CGROUP / "memory.max").write_text(f"{limit}\n")
        return str(CGROUP)
    except OSError:
        return ""


def _diskstat(dev: str) -> list[int] | None:
    """The block device's read counters (/sys/block/DEV/stat: reads completed, merged, sectors, ms), None if unreadable."""
    try:
        return [int(v) for v in Path(f"/sys/block/{dev}/stat").read_text().split()[:4]]
    except (OSError, ValueError):
        return None


def _rank(files, threads, transfer, mode, seconds, warmup, queue, barrier):
    """One rank process: `threads` readers over its share of the files; bytes read between warmup and seconds."""
    if mode == "full":
        try:
            (CGROUP / "cgroup.procs").write_text(f"{os.getpid()}\n")
        except OSError:
            pass
    stop, start = threading.Event(), threading.Event()
    out = [(0, 0, 0)] * threads
    shards = [files[i::threads] for i in range(threads)]
    pool = [threading.Thread(target=_reader, args=(s, transfer, mode, stop, out, i, start), daemon=True)
            for i, s in enumerate(shards)]
    for t in pool:
        t.start()
    barrier.wait()
    start.set()
    time.sleep(warmup)
    b0, f0, t0, c0, a0 = (sum(o[0] for o in out), sum(o[1] for o in out), time.perf_counter(), _cpu_s(),
                          sum(o[2] for o in out))
    time.sleep(seconds - warmup)
    b1, f1, t1, c1, a1 = (sum(o[0] for o in out), sum(o[1] for o in out), time.perf_counter(), _cpu_s(),
                          sum(o[2] for o in out))
    died = sum(not t.is_alive() for t in pool)   # a reader that raised (stop not yet set: none should have ended)
    stop.set()
    for t in pool:
        t.join(timeout=5)
    queue.put((b1 - b0, f1 - f0, t1 - t0, died, c1 - c0, sum(o[0] for o in out), a1 - a0))


def run(folder: Path, kind: str, ranks: int, threads: int, transfer: int, mode: str = "buffered",
        seconds: float = 6.0, warmup: float = 1.5, seed: int = 0, dev: str = "") -> dict:
    """R ranks x T readers on one set for `seconds`; the rate counted after `warmup` (all readers started). With `dev`
    (the block device under `folder`), the device's own counters over the whole phase: bytes it read (readahead
    included) and the mean size of its read requests, which is what the kernel made of the preads."""
    files = sorted(str(p) for p in (folder / kind).glob("*.tfrecord"))
    if not files:
        raise SystemExit(f"{folder / kind}: no *.tfrecord files (run `make` first)")
    random.Random(seed).shuffle(files)
    if len(files) < ranks * threads:
        raise SystemExit(f"{folder / kind}: {len(files)} files for {ranks * threads} readers (each needs its own)")
    ctx = mp.get_context("fork")
    queue, barrier = ctx.Queue(), ctx.Barrier(ranks)
    procs = [ctx.Process(target=_rank, args=(files[r::ranks], threads, transfer, mode, seconds, warmup, queue, barrier))
             for r in range(ranks)]
    cgroup = _cgroup(FULL_CACHE_BYTES) if mode == "full" else ""
    if mode == "full" and not cgroup:
        return {"kind": kind, "ranks": ranks, "threads": threads, "transfer_B": transfer, "mode": mode,
                "skipped": "no cgroup v2 memory controller here: without one the files stay cached"}
    d0, p0 = (_diskstat(dev) if dev else None), time.perf_counter()
    for p in procs:
        p.start()
    got = [queue.get(timeout=seconds + 60) for _ in procs]
    for p in procs:
        p.join(timeout=10)
    d1, phase_s = (_diskstat(dev) if dev else None), time.perf_counter() - p0
    window = max(g[2] for g in got)
    nbytes = sum(g[0] for g in got)
    row = {"kind": kind, "ranks": ranks, "threads": threads, "readers": ranks * threads, "transfer_B": transfer,
           "mode": mode, "seconds": window, "bytes": nbytes, "files": sum(g[1] for g in got),
           "phase_s": phase_s, "GBps": nbytes / window / 1e9, "GBps_read": sum(g[6] for g in got) / window / 1e9,
           "readers_failed": sum(g[3] for g in got),
           "cpu_s_per_GB": sum(g[4] for g in got) / max(sum(g[6] for g in got) / 1e9, 1e-9)}   # per byte read in the window
    if mode == "full":
        row["cgroup"] = f"{cgroup} memory.max {FULL_CACHE_BYTES}"
    if d0 and d1 and d1[0] > d0[0]:
        reads, sectors = d1[0] - d0[0], d1[2] - d0[2]
        row |= {"device_reads": reads, "device_bytes": sectors * 512, "device_read_B_mean": sectors * 512 / reads,
                "device_bytes_per_read_byte": sectors * 512 / max(1, sum(g[5] for g in got)),
                "device_merged": d1[1] - d0[1], "device_read_ms_per_read": (d1[3] - d0[3]) / reads}
    return row


def drop_caches() -> None:
    try:
        os.sync()
        Path("/proc/sys/vm/drop_caches").write_text("3\n")
    except OSError:
        pass                                     # not root: the per-file DONTNEED still keeps the reads cold


def machine(folder: Path) -> dict:
    """What the drive and the kernel's read path are: the block device under `folder`, its queue settings."""
    def sh(cmd):
        try:
            return subprocess.run(cmd, shell=True, capture_output=True, text=True, timeout=20).stdout.strip()
        except (OSError, subprocess.SubprocessError) as e:
            return f"error: {e}"
    src = sh(f"findmnt -n -o SOURCE,FSTYPE,OPTIONS --target {folder}")
    dev = sh(f"lsblk -no PKNAME $(findmnt -n -o SOURCE --target {folder}) 2>/dev/null") or \
        os.path.basename(src.split()[0]) if src else ""
    if not dev or not Path(f"/sys/block/{dev}").is_dir():   # an overlay or a container's root: name the NVMe disk
        disks = [ln.split() for ln in sh("lsblk -dn -o NAME,TYPE").splitlines()]
        names = [d[0] for d in disks if len(d) == 2 and d[1] == "disk"]
        dev = next((n for n in names if n.startswith("nvme")), names[0] if names else "")
    queue = {k: sh(f"cat /sys/block/{dev}/queue/{k} 2>/dev/null") for k in
             ("read_ahead_kb", "max_sectors_kb", "max_hw_sectors_kb", "nr_requests", "rotational", "scheduler")}
    return {"kernel": platform.release(), "cpus": os.cpu_count(), "mount": src, "block_device": dev, "queue": queue,
            "model": sh(f"cat /sys/block/{dev}/device/model 2>/dev/null"), "lsblk": sh("lsblk -o NAME,SIZE,TYPE,MODEL,TRAN"),
            "nvme": sh("nvme list 2>/dev/null | head -20"), "df": sh(f"df -h {folder}"), "meminfo": sh("head -3 /proc/meminfo")}


def plan(folder: Path, out: Path, seconds: float, budget_s: float) -> list[dict]:
    """The registered plan in order; stops starting phases once `budget_s` has passed; JSON rewritten after each."""
    t0, rows = time.perf_counter(), []
    head = {"machine": machine(folder), "plan": [list(p) for p in PLAN]}
    dev = head["machine"]["block_device"]
    for kind, ranks, threads, transfer, mode in PLAN:
        if time.perf_counter() - t0 > budget_s:
            rows.append({"kind": kind, "ranks": ranks, "threads": threads, "transfer_B": transfer, "mode": mode,
                         "skipped": f"budget {budget_s:.0f} s reached"})
            continue
        drop_caches()
        row = run(folder, kind, ranks, threads, transfer, mode, seconds, dev=dev)
        rows.append(row)
        if "skipped" in row:
            print(f"{kind:>5} {ranks:3d}x{threads:<2d} {transfer // 1024:5d} KiB {mode:>8} skipped: {row['skipped']}")
            continue
        cpu = f"{row['cpu_s_per_GB']:6.2f}" if row["bytes"] else "     -"   # no completed file: no bytes counted
        print(f"{kind:>5} {ranks:3d}x{threads:<2d} {transfer // 1024:5d} KiB {mode:>8} "
              f"{row['GBps']:7.2f} GB/s {row['files']:7d} files {cpu} CPU s/GB "
              f"{row.get('device_read_B_mean', 0) / 1024:7.0f} KiB/device read", flush=True)
        out.write_text(json.dumps({**head, "rows": rows}, indent=1))
    return rows


def model_rate(card: Path, kind: str, readers: int, transfer: int, seconds: float = 0.5, depth: int = 2) -> float:
    """simcluster's drive (storage/nvme.py, the card's P units and link) under the same pattern: `readers` streams, each
    reading its files one after another in reads of `transfer` bytes with `depth` in flight (the loader's readahead,
    storage/loader.py's default depth), no host cost. Bytes/s over `seconds` of simulated time."""
    import numpy as np
    import simpy

    from simcluster.storage.nvme import NvmeDevice, load_nvme

    params, _ = load_nvme(card)
    env = simpy.Environment()
    dev = NvmeDevice(env, params, np.random.default_rng(0))
    file_bytes = SMALL_BYTES if kind == "small" else LARGE_BYTES
    done = [0]

    def stream():
        while True:
            off, inflight = 0, []
            while off < file_bytes:
                n = min(transfer, file_bytes - off)
                inflight.append((dev.read(n), n))
                off += n
                if len(inflight) >= depth:
                    ev, m = inflight.pop(0)
                    yield ev
                    done[0] += m
            for ev, m in inflight:
                yield ev
                done[0] += m

    for _ in range(readers):
        env.process(stream())
    env.run(until=seconds / 5)
    d0 = done[0]
    env.run(until=seconds)
    return (done[0] - d0) / (seconds * 4 / 5)


def predictions(card: Path) -> dict[str, float]:
    """The model's small / large ratio for every pair of the plan (the registration's numbers)."""
    rate = {(k, r, t, x, d): model_rate(card, k, r * t, x) for k, r, t, x, d in PLAN}
    return ratios([{"kind": k[0], "ranks": k[1], "threads": k[2], "transfer_B": k[3], "mode": k[4], "GBps": v / 1e9}
                   for k, v in rate.items()])


def ratios(rows: list[dict]) -> dict[str, float]:
    """small / large rate at each (ranks, threads, transfer, mode) where both ran."""
    rate = {(r["kind"], r["ranks"], r["threads"], r["transfer_B"], r["mode"]): r["GBps"] for r in rows if "GBps" in r}
    return {f"{rk}x{t} {x // 1024} KiB {d}": rate[("small", rk, t, x, d)] / rate[k]
            for k in rate if k[0] == "large" and rate[k] > 0 for (_, rk, t, x, d) in [k] if ("small", rk, t, x, d) in rate}


def main() -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))   # simcluster/script_args.py: standard library only
    from simcluster.script_args import ArgumentParser

    p = ArgumentParser(description=__doc__.split("\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    m = sub.add_parser("make")
    m.add_argument("--dir", type=Path, required=True)
    m.add_argument("--small", type=int, default=3000)
    m.add_argument("--large", type=int, default=128)
    r = sub.add_parser("run")
    r.add_argument("--dir", type=Path, required=True)
    r.add_argument("--kind", choices=("small", "large"), required=True)
    r.add_argument("--ranks", type=int, default=8)
    r.add_argument("--threads", type=int, default=8)
    r.add_argument("--transfer", default="1M")
    r.add_argument("--mode", choices=MODES, default="buffered")
    r.add_argument("--seconds", type=float, default=6.0)
    pl = sub.add_parser("plan")
    pl.add_argument("--dir", type=Path, required=True)
    pl.add_argument("--out", type=Path, required=True)
    pl.add_argument("--seconds", type=float, default=6.0)
    pl.add_argument("--budget", type=float, default=300.0, help="seconds after which no further phase starts")
    pr = sub.add_parser("predict", help="the model's ratios for the plan (simcluster's drive; needs simpy, numpy)")
    pr.add_argument("--card", type=Path, default=Path("models/nvme/micron-9550-pro-7.68tb.yaml"))
    rd = sub.add_parser("read", help="studies/storage_pattern_read.py's read-out of a runs.json")
    rd.add_argument("runs", type=Path)
    rd.add_argument("registered", type=Path, nargs="?")
    a = p.parse_args()
    if a.cmd == "make":
        print(json.dumps(make(a.dir, a.small, a.large)))
    elif a.cmd == "run":
        if a.ranks < 1 or a.threads < 1 or size(a.transfer) < ALIGN:
            sys.exit("--ranks and --threads must be >= 1 and --transfer >= 4K")
        print(json.dumps(run(a.dir, a.kind, a.ranks, a.threads, size(a.transfer), a.mode, a.seconds)))
    elif a.cmd == "plan":
        plan(a.dir, a.out, a.seconds, a.budget)
    elif a.cmd == "predict":
        print(json.dumps({"card": str(a.card), "predicted_ratio": predictions(a.card)}, indent=1))
    else:                                        # the read-out (phases without a rate, ratios judged) lives beside
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        from storage_pattern_read import read
        read(a.runs, a.registered)


if __name__ == "__main__":
    main()
