"""The storage pattern probe's read-out (issue 42): which phases give a rate, the registered ratios judged, and what the
kernel's readahead makes of each pattern. Standard library only (it runs on the device after the probe).

    python studies/storage_pattern_read.py runs.json registered.json     # = storage_pattern_probe.py read ...
    python studies/storage_pattern_read.py windows --file 2828486 --pread 1M --ra-kb 8192 --max-kb 4096

The registered measure (registered.json's rule) is the probe's GBps: bytes of the files a phase's readers COMPLETED
inside the counted window, over the window. Each reader's count is off by less than one file (the file in progress at
the window's start is counted whole, the one in progress at its end not at all), so the count of n files by R readers
bounds the rate to within R / n of itself. A phase where fewer files completed than there are readers (none at all in
the 16x8 large phases of the first run) gives no reading: the count is not a rate of every reader. Beside it, as
development and not the registered measure, the block device's own bytes over the phase (every byte read, finished
files or not; readahead past the readers' stop included).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

PAGE = 4096


def load(path: Path, what: str = "a JSON object") -> dict:
    """A JSON file's object; a missing file, bad JSON or a non-object is one line naming the file (SystemExit)."""
    try:
        doc = json.loads(Path(path).read_text())
    except FileNotFoundError:
        raise SystemExit(f"{path}: no such file") from None
    except (OSError, ValueError) as e:
        raise SystemExit(f"{path}: not readable JSON ({str(e).splitlines()[0]})") from None
    if not isinstance(doc, dict):
        raise SystemExit(f"{path}: expected {what}, got {type(doc).__name__}")
    return doc


def load_rows(path: Path, keys: tuple[str, ...], measured: tuple[str, ...] = ()) -> tuple[dict, list[dict]]:
    """(the runs file's object, its `rows`): each row a mapping with `keys`, and `measured` too unless it was skipped;
    anything missing is one line naming the file, the row and the key (SystemExit)."""
    doc = load(path, "a runs object with `rows`")
    rows = doc.get("rows")
    if not isinstance(rows, list):
        raise SystemExit(f"{path}: rows: expected a list of phase rows, got {'nothing' if rows is None else type(rows).__name__}")
    for i, row in enumerate(rows):
        if not isinstance(row, dict):
            raise SystemExit(f"{path}: rows[{i}]: expected a mapping, got {type(row).__name__}")
        for k in keys + (() if "skipped" in row else measured):
            if k not in row:
                raise SystemExit(f"{path}: rows[{i}].{k}: missing")
    return doc, rows


def reading(row: dict) -> tuple[float | None, str]:
    """(rate in GB/s, '') for a phase whose count is a rate of every reader, else (None, the reason)."""
    if "skipped" in row:
        return None, f"skipped: {row['skipped']}"
    if row.get("readers_failed"):
        return None, f"{row['readers_failed']} of {row['readers']} readers raised"
    files, readers = row["files"], row["readers"]
    if files == 0:
        return None, (f"no file completed in the {row['seconds']:.1f} s counted ({readers} readers): the count of "
                      f"completed files is 0 whatever was read")
    if files < readers:
        return None, f"{files} files completed by {readers} readers: fewer than one a reader, not a rate of every reader"
    return row["GBps"], ""


def bound(row: dict) -> float:
    """Relative half-width of a completed-file count: each of R readers is off by less than one file of n counted."""
    return row["readers"] / row["files"]


def device_ratio(small: dict, large: dict) -> tuple[float | None, str]:
    """Development, not the registered measure: small / large from the block device's bytes over each phase, per phase
    second where the rows carry `phase_s`, else assuming both phases lasted the same (the first run's rows do not carry
    it: each phase is 6 s plus its processes' start and stop). Bytes read ahead past the readers' stop are included:
    at most one readahead window per reader (`overread`)."""
    if "device_bytes" not in small or "device_bytes" not in large:
        return None, "no device counters"
    s, g = small["device_bytes"], large["device_bytes"]
    if "phase_s" in small and "phase_s" in large:
        return (s / small["phase_s"]) / (g / large["phase_s"]), "per phase second"
    return s / g, "equal phase lengths assumed"


def pairs(rows: list[dict]) -> list[tuple[str, dict, dict]]:
    """(setting, small row, large row) in plan order, for each setting with both halves in the rows."""
    by = {(r["kind"], r["ranks"], r["threads"], r["transfer_B"], r["mode"]): r for r in rows}
    out = []
    for (kind, rk, t, x, d), large in by.items():
        small = by.get(("small", rk, t, x, d))
        if kind == "large" and small is not None:
            out.append((f"{rk}x{t} {x // 1024} KiB {d}", small, large))
    return out


def judge(rows: list[dict], reg: dict) -> list[str]:
    """One line a setting: the registered ratio and verdict (registered.json's rule on the count's ratio), the ratio's
    range over the counting bound and whether the verdict holds over it, and the device-bytes ratio (development)."""
    lines, tol = [], reg.get("tolerance", 0.05)
    for key, small, large in pairs(rows):
        pred = reg.get("predicted_ratio", {}).get(key)
        rs, why_s = reading(small)
        rl, why_l = reading(large)
        dev, how = device_ratio(small, large)
        devtxt = "" if dev is None else f"; device bytes {dev:.2f} ({how}; development)"
        if rs is None or rl is None:
            why = "; ".join(f"{k}: {w}" for k, w in (("small", why_s), ("large", why_l)) if w)
            lines.append(f"{key:>22}: no reading, not judged ({why}){devtxt}")
            continue
        r, a, b = rs / rl, bound(small), bound(large)
        lo, hi = r * (1 - a) / (1 + b), (r * (1 + a) / (1 - b) if b < 1 else float("inf"))
        verdict = ""
        if pred is not None:
            met = abs(r / pred - 1) <= tol
            held = all(abs(v / pred - 1) <= tol for v in (lo, hi)) if met else (hi < pred * (1 - tol) or
                                                                               lo > pred * (1 + tol))
            verdict = (f" (model {pred:.2f}): model {'met' if met else 'missed'}, holds over the counting bound" if held
                       else f" (model {pred:.2f}): not decided over the counting bound (the point ratio alone "
                            f"{'meets' if met else 'misses'})")
        lines.append(f"{key:>22}: small / large = {r:.2f}{verdict}; range {lo:.2f}-{hi:.2f} "
                     f"(count bounds {a:.0%} small, {b:.0%} large){devtxt}")
    return lines


def read(runs: Path, registered: Path | None) -> None:
    data, rows = load_rows(runs, ("kind", "ranks", "threads", "transfer_B", "mode"),
                           ("readers", "files", "seconds", "GBps"))
    reg = load(registered) if registered else {}
    m = data.get("machine") if isinstance(data.get("machine"), dict) else {}
    print(json.dumps(m.get("queue", {})), m.get("model", ""))
    for row in rows:
        rate, why = reading(row)
        if rate is None:
            print(f"{row['kind']:>5} {row['ranks']:3d}x{row['threads']:<2d} {row['transfer_B'] // 1024:5d} KiB "
                  f"{row['mode']:>8}: no reading ({why})")
    for line in judge(rows, reg):
        print(line)


def windows(file_B: int, pread_B: int, ra_kb: int, max_kb: int) -> list[int]:
    """The readahead windows (bytes) of one cold file read start to end in preads of pread_B, as Linux's on-demand
    readahead sizes them (mm/readahead.c, 6.x): the first window from the first read's size (rounded up to a power of
    two, x4 when <= max/32, x2 when <= max/4, else max), each next one x4 while below max/16, x2 while <= max/2, then
    max; max = read_ahead_kb, raised to min(read, max_sectors_kb) for a read larger than it; the async part of a window
    starts the next when the reader reaches it; no window runs past the file's last page. Split at max_sectors_kb,
    the block layer's largest request, these are the device reads. A model of the sizes, not the kernel: it ignores
    folio alignment, the block layer's segment limits and metadata reads."""
    n, req = -(-file_B // PAGE), -(-pread_B // PAGE)
    ra, io = ra_kb * 1024 // PAGE, max_kb * 1024 // PAGE
    top = min(req, io) if req > ra and io > ra else ra

    def init(size):
        p = 1 << (size - 1).bit_length()
        return 4 * p if p <= top // 32 else 2 * p if p <= top // 4 else top

    def nxt(size):
        return 4 * size if size < top // 16 else 2 * size if size <= top // 2 else top

    out, pos, start, size, asz, covered = [], 0, 0, 0, 0, 0
    while pos < n:
        end = min(n, pos + req)
        if pos >= covered:                                   # a cold read: synchronous readahead from here
            start, size = pos, init(req)
            asz = size - req if size > req else size
            if size == asz:                                  # the read reaches its own marker: merged at once
                asz = nxt(size)
                size += asz
            out.append(min(n, start + size) - start)
            covered = start + size
        mark = start + size - asz
        while asz and pos <= mark < end and covered < n:     # the reader reaches the async part: the next window
            start, size = start + size, nxt(size)
            asz = size
            out.append(min(n, start + size) - start)
            covered, mark = start + size, start
        pos = end
    return [piece * PAGE for w in out for piece in [io] * (w // io) + ([w % io] if w % io else [])]


def main() -> None:
    args = sys.argv[1:]
    if args[:1] == ["windows"]:
        sys.path.insert(0, str(Path(__file__).resolve().parent.parent))   # simcluster/script_args.py: standard library only
        from simcluster.script_args import ArgumentParser

        p = ArgumentParser(prog="storage_pattern_read.py windows")
        p.add_argument("--file", type=int, required=True, help="file bytes")
        p.add_argument("--pread", default="1M")
        p.add_argument("--ra-kb", type=int, default=128)
        p.add_argument("--max-kb", type=int, default=1280)
        a = p.parse_args(args[1:])
        units = {"K": 1024, "M": 2**20}
        pread = int(float(a.pread[:-1]) * units[a.pread[-1].upper()]) if a.pread[-1].upper() in units else int(a.pread)
        reqs = windows(a.file, pread, a.ra_kb, a.max_kb)
        print(json.dumps({"device_reads_B": reqs, "mean_KiB": round(sum(reqs) / len(reqs) / 1024)}))
        return
    if not args or len(args) > 2:
        sys.exit("usage: storage_pattern_read.py RUNS.json [REGISTERED.json] | windows --file B --pread 1M ...")
    read(Path(args[0]), Path(args[1]) if len(args) > 1 else None)


if __name__ == "__main__":
    import study_args  # an unknown argument refused before the study runs (windows: its own argparse)
    if sys.argv[1:2] != ["windows"]:
        study_args.check(words=2, usage="RUNS.json [REGISTERED.json] | windows --file B [--pread 1M] [--ra-kb K] [--max-kb K]")
    main()
