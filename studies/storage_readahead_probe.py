"""Is the small-file loss of the first pattern probe run the kernel's readahead window? (issue 42, device probe 2)

The first run (calibration/h200x1-storage-pattern-2026-11-29, "## Result") read 2.8 MB files slower than 143 MB files
through the page cache (device bytes 0.60-0.79 small / large) but not with O_DIRECT (0.99), and its device's rate
followed the request size: long files reached 4 MiB requests (read_ahead_kb 8192 cut at max_sectors_kb 4096), small
files 0.85-1.34 MiB. This run sets the block device's read_ahead_kb to 8192 and then 128 and reads both patterns
at each (64 readers, 256 KiB / 1 MiB / 2 MiB preads, buffered), then both O_DIRECT: if the readahead window is the
mechanism, small / large falls at 8192 and not at 128, where a long file's windows are no larger than its preads
(a read larger than read_ahead_kb gets a window of its own size, up to max_sectors_kb).

The rate is every pread's bytes in the counted window (`GBps_read`: partial files included, so a phase always reads;
the first run's measure counted only completed files). Standard library only; runs as root on the device (it writes
/sys/block/DEV/queue/read_ahead_kb, restored at the end).

    python studies/storage_readahead_probe.py plan --dir DIR --out runs.json          # make first (pattern probe)
    python studies/storage_readahead_probe.py predict > registered.json               # model + mechanism ratios
    python studies/storage_readahead_probe.py read runs.json registered.json
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from storage_pattern_probe import LARGE_BYTES, SMALL_BYTES, drop_caches, machine, model_rate, run  # noqa: E402
from storage_pattern_read import load, load_rows, windows  # noqa: E402

MiB = 2**20
# (read_ahead_kb, kind, ranks, threads, transfer bytes, mode); read_ahead_kb 0 for O_DIRECT (no readahead)
PLAN = [(ra, kind, 8, 8, x, "buffered") for ra in (8192, 128) for x in (MiB // 4, MiB, 2 * MiB)
        for kind in ("large", "small")] + [(0, kind, 8, 8, 2 * MiB, "direct") for kind in ("large", "small")]
FIRST = Path(__file__).resolve().parents[1] / "calibration" / "h200x1-storage-pattern-2026-11-29" / "runs.json"


def key(ra: int, x: int, mode: str) -> str:
    return f"8x8 {x // 1024} KiB {mode}" + (f" ra {ra}" if mode == "buffered" else "")


def set_read_ahead(dev: str, kb: int) -> str:
    """Write the device's read_ahead_kb; the value read back ('' where it cannot be written: not root)."""
    path = Path(f"/sys/block/{dev}/queue/read_ahead_kb")
    try:
        path.write_text(f"{kb}\n")
        return path.read_text().strip()
    except OSError:
        return ""


def plan(folder: Path, out: Path, seconds: float, budget_s: float) -> None:
    head = {"machine": machine(folder), "plan": [list(p) for p in PLAN]}
    dev, rows, t0 = head["machine"]["block_device"], [], time.perf_counter()
    original = head["machine"]["queue"].get("read_ahead_kb", "")
    try:
        for ra, kind, ranks, threads, x, mode in PLAN:
            if time.perf_counter() - t0 > budget_s:
                rows.append({"kind": kind, "read_ahead_kb": ra, "transfer_B": x, "mode": mode,
                             "skipped": f"budget {budget_s:.0f} s reached"})
                continue
            got = set_read_ahead(dev, ra) if mode == "buffered" else ""
            if mode == "buffered" and got != str(ra):
                rows.append({"kind": kind, "read_ahead_kb": ra, "transfer_B": x, "mode": mode,
                             "skipped": f"read_ahead_kb {ra} not set on {dev} (read back {got!r})"})
                continue
            drop_caches()
            row = run(folder, kind, ranks, threads, x, mode, seconds, dev=dev) | {"read_ahead_kb": ra}
            rows.append(row)
            print(f"{kind:>5} ra {ra:5d} {x // 1024:5d} KiB {mode:>8} {row['GBps_read']:6.2f} GB/s read "
                  f"{row.get('device_read_B_mean', 0) / 1024:6.0f} KiB/device read", flush=True)
            out.write_text(json.dumps({**head, "rows": rows}, indent=1))
    finally:
        if original:
            set_read_ahead(dev, int(original))
    out.write_text(json.dumps({**head, "rows": rows, "read_ahead_kb_restored": original}, indent=1))


def curve(first: Path = FIRST) -> tuple[float, float]:
    """The first run's device rate by request size, rate = s / (c + s / B), least squares in 1/rate against 1/s over
    its 8x8 phases: (c seconds a request, B bytes/s). A phase's length is the small phases' device bytes over their
    counted rate (whole files, bounds of 2%); the large phases' lengths are taken the same."""
    rows = [r for r in json.loads(first.read_text())["rows"] if r["ranks"] == 8 and r["threads"] == 8]
    phase = statistics.mean(r["device_bytes"] / (r["GBps"] * 1e9) for r in rows if r["kind"] == "small")
    xs = [1 / r["device_read_B_mean"] for r in rows]
    ys = [phase / r["device_bytes"] for r in rows]
    mx, my = statistics.mean(xs), statistics.mean(ys)
    c = sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sum((x - mx) ** 2 for x in xs)
    return c, 1 / (my - c * mx)


def predictions(card: Path, max_kb: int = 4096) -> dict:
    """The model's ratios (simcluster's drive: no readahead, one bandwidth) and the mechanism's (the readahead
    windows' device reads at each read_ahead_kb, windows() with this VM's max_sectors_kb, through the first run's
    rate-by-request-size curve; O_DIRECT: both patterns cut into the same requests, 1.00)."""
    c, b = curve()
    model, mech, sizes = {}, {}, {}
    for ra, kind, ranks, threads, x, mode in PLAN:
        if kind == "small":
            continue
        k = key(ra, x, mode)
        model[k] = round(model_rate(card, "small", ranks * threads, x) / model_rate(card, "large", ranks * threads, x), 4)
        if mode == "direct":
            mech[k] = 1.0
            continue
        s = [windows(n, x, ra, max_kb) for n in (SMALL_BYTES, LARGE_BYTES)]
        mean = [sum(w) / len(w) for w in s]
        sizes[k] = [round(m / 1024) for m in mean]
        rate = [m / (c + m / b) for m in mean]
        mech[k] = round(rate[0] / rate[1], 3)
    return {"model_ratio": model, "mechanism_ratio": mech, "mechanism_request_KiB_small_large": sizes,
            "curve": {"c_s": c, "B_Bps": b}}


def read(runs: Path, registered: Path) -> None:
    _, rows = load_rows(runs, ("read_ahead_kb", "kind", "transfer_B", "mode"))
    reg = load(registered)
    for name in ("model_ratio", "mechanism_ratio", "tolerance"):
        if not isinstance(reg.get(name), dict):
            raise SystemExit(f"{registered}: {name}: expected a mapping, got {type(reg.get(name)).__name__}")
    for name in ("model_ratio", "mechanism_ratio"):
        if name not in reg["tolerance"]:
            raise SystemExit(f"{registered}: tolerance.{name}: missing")
    by = {(r["read_ahead_kb"], r["kind"], r["transfer_B"], r["mode"]): r for r in rows}
    for ra, kind, _, _, x, mode in PLAN:
        if kind == "small":
            continue
        k, small, large = key(ra, x, mode), by.get((ra, "small", x, mode), {}), by.get((ra, "large", x, mode), {})
        why = next((f"{n}: {r.get('skipped', 'missing')}" for n, r in (("small", small), ("large", large))
                    if not r.get("GBps_read")), "")
        if why:
            print(f"{k:>26}: no reading ({why})")
            continue
        r = small["GBps_read"] / large["GBps_read"]
        verdicts = []
        for name in ("model_ratio", "mechanism_ratio"):
            if k not in reg[name]:
                raise SystemExit(f"{registered}: {name}.{k}: missing")
            p, tol = reg[name][k], reg["tolerance"][name]
            verdicts.append(f"{name.split('_')[0]} {p:.2f} {'met' if abs(r / p - 1) <= tol else 'missed'}")
        print(f"{k:>26}: small / large = {r:.2f} ({'; '.join(verdicts)}); device reads "
              f"{small.get('device_read_B_mean', 0) / 1024:.0f} / {large.get('device_read_B_mean', 0) / 1024:.0f} KiB")


def main() -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))   # simcluster/script_args.py: standard library only
    from simcluster.script_args import ArgumentParser

    p = ArgumentParser(description=__doc__.split("\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    pl = sub.add_parser("plan")
    pl.add_argument("--dir", type=Path, required=True)
    pl.add_argument("--out", type=Path, required=True)
    pl.add_argument("--seconds", type=float, default=6.0)
    pl.add_argument("--budget", type=float, default=300.0)
    pr = sub.add_parser("predict")
    pr.add_argument("--card", type=Path, default=Path("models/nvme/micron-9550-pro-7.68tb.yaml"))
    rd = sub.add_parser("read")
    rd.add_argument("runs", type=Path)
    rd.add_argument("registered", type=Path)
    a = p.parse_args()
    if a.cmd == "plan":
        plan(a.dir, a.out, a.seconds, a.budget)
    elif a.cmd == "predict":
        print(json.dumps(predictions(a.card), indent=1))
    else:
        read(a.runs, a.registered)


if __name__ == "__main__":
    main()
