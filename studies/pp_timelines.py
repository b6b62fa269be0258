"""Read torch.distributed.pipelining's per-rank Chrome timelines (torch.profiler, CPU + CUDA, one profiled step per rank).

Usage: python studies/pp_timelines.py DIR [RUN ...]   (DIR holds RUN-<seq>x<mb>-rank<r>.json.gz; the timelines are not in
the repository: /work/pptrace of session 30). Per rank it prints:
  - each schedule action (PP:<stage><ACTION><mb>): its host span on the main thread, and its GPU kernels (assigned by the
    launching runtime call's time, any thread: the backward's kernels come from autograd's thread): first start, last end,
    busy time (union of the non-NCCL kernels);
  - the NCCL SendRecv kernels: count, time, and how much of it ran beside compute kernels (a receive posted before the
    peer sent spins on the GPU: its SMs are taken for that time);
  - the compute stream's idle gaps > 20 us, by what ended them: a NCCL receive that finished (waits for the peer), a
    kernel launched after the gap began (the host), or other;
  - compute kernels beside a NCCL kernel against the same kernel (name and grid) alone: the time ratio (the SM share
    the waiting NCCL kernel takes).
Development data only (session 30): nothing here is a registered prediction.
"""

from __future__ import annotations

import gzip
import json
import re
import statistics
import sys
from collections import defaultdict
from pathlib import Path

ACTION = re.compile(r"PP:(\d+)(F|B|I|W|SEND_F|SEND_B|RECV_F|RECV_B|UNSHARD|RESHARD|REDUCE_GRAD)(\d*)$")


def union(spans):
    total, end = 0.0, None
    for a, b in sorted(spans):
        if end is None or a > end:
            total += b - a
            end = b
        elif b > end:
            total += b - end
            end = b
    return total


def read_rank(path: Path) -> dict:
    events = json.load(gzip.open(path))["traceEvents"]
    kernels = [e for e in events if e.get("cat") == "kernel"]
    launch = {e["args"]["correlation"]: e["ts"] for e in events
              if e.get("cat") in ("cuda_runtime", "cuda_driver") and "correlation" in e.get("args", {})}
    actions = sorted((e for e in events if e.get("cat") == "user_annotation" and ACTION.match(e["name"])), key=lambda e: e["ts"])
    steps = [e for e in events if e.get("cat") == "user_annotation" and e["name"].startswith("ProfilerStep")]
    t0 = min(e["ts"] for e in events if e.get("ph") == "X" and e.get("cat") in ("cpu_op", "user_annotation", "kernel"))
    for k in kernels:
        k["launch"] = launch.get(k["args"]["correlation"], k["ts"])
        k["nccl"] = "nccl" in k["name"].lower()
    return {"kernels": kernels, "actions": actions, "t0": t0, "steps": steps}


def action_rows(rank: dict) -> list[dict]:
    rows = []
    compute = sorted((k for k in rank["kernels"] if not k["nccl"]), key=lambda k: k["launch"])
    for a in rank["actions"]:
        lo, hi = a["ts"], a["ts"] + a["dur"]
        mine = [k for k in compute if lo <= k["launch"] < hi]
        row = {"name": a["name"][3:], "host_start": lo, "host_end": hi, "kernels": len(mine)}
        if mine:
            row.update(gpu_start=min(k["ts"] for k in mine), gpu_end=max(k["ts"] + k["dur"] for k in mine),
                       busy=union([(k["ts"], k["ts"] + k["dur"]) for k in mine]))
        rows.append(row)
    return rows


def gaps(rank: dict, least_us: float = 20.0) -> dict:
    """The compute stream's idle time by what ended each gap (microseconds)."""
    comp = sorted((k for k in rank["kernels"] if not k["nccl"]), key=lambda k: k["ts"])
    nccl = [k for k in rank["kernels"] if k["nccl"]]
    out = defaultdict(float)
    count = defaultdict(int)
    end = comp[0]["ts"] + comp[0]["dur"]
    for k in comp[1:]:
        gap = k["ts"] - end
        if gap > least_us:
            if any(abs(n["ts"] + n["dur"] - k["ts"]) < 50 or n["ts"] <= end and n["ts"] + n["dur"] >= k["ts"] - 50 for n in nccl):
                why = "recv"
            elif k["launch"] > end:
                why = "host"
            else:
                why = "other"
            out[why] += gap
            count[why] += 1
        end = max(end, k["ts"] + k["dur"])
    return {w: (count[w], out[w]) for w in out}


def beside(rank: dict) -> tuple[float, float, int]:
    """Compute kernels that run at least half their time beside a NCCL kernel: their time against the median of the same
    kernel (name, grid) run with no NCCL kernel beside it. (time beside, time alone of the same kernels, count)."""
    nccl = sorted((k["ts"], k["ts"] + k["dur"]) for k in rank["kernels"] if k["nccl"])
    alone, with_nccl = defaultdict(list), []
    for k in rank["kernels"]:
        if k["nccl"]:
            continue
        a, b = k["ts"], k["ts"] + k["dur"]
        ov = sum(max(0.0, min(b, y) - max(a, x)) for x, y in nccl if x < b and y > a)
        key = (k["name"], tuple(k["args"].get("grid", ())))
        if ov == 0:
            alone[key].append(k["dur"])
        elif ov >= 0.5 * k["dur"]:
            with_nccl.append((key, k["dur"]))
    t_with = t_alone = 0.0
    n = 0
    for key, dur in with_nccl:
        if len(alone[key]) >= 3:
            t_with += dur
            t_alone += statistics.median(alone[key])
            n += 1
    return t_with, t_alone, n


def report(folder: Path, run: str) -> None:
    paths = sorted(folder.glob(f"{run}-*-rank*.json.gz"))
    doc = json.loads((folder / f"{run}.json").read_text())
    print(f"== {run}: median step {doc['shapes'][0]['median_step_s'] * 1e3:.1f} ms, host issue "
          f"{statistics.median(doc['shapes'][0]['host_issue_s']) * 1e3:.1f} ms")
    for path in paths:
        r = int(re.search(r"rank(\d+)", path.name).group(1))
        rank = read_rank(path)
        rows = action_rows(rank)
        comp = [k for k in rank["kernels"] if not k["nccl"]]
        nccl = [k for k in rank["kernels"] if k["nccl"]]
        start = min(k["ts"] for k in rank["kernels"])
        end = max(k["ts"] + k["dur"] for k in rank["kernels"])
        busy = union([(k["ts"], k["ts"] + k["dur"]) for k in comp])
        nccl_t = sum(k["dur"] for k in nccl)
        nccl_beside = sum(max(0.0, min(n["ts"] + n["dur"], b) - max(n["ts"], a)) for n in nccl
                          for a, b in _merged([(k["ts"], k["ts"] + k["dur"]) for k in comp]))
        tw, ta, nb = beside(rank)
        g = gaps(rank)
        print(f"rank {r}: GPU span {(end - start) / 1e3:.1f} ms, compute busy {busy / 1e3:.1f} ms, NCCL {len(nccl)} kernels "
              f"{nccl_t / 1e3:.1f} ms ({nccl_beside / 1e3:.1f} ms beside compute); compute beside NCCL {nb} kernels "
              f"{tw / 1e3:.1f} ms vs {ta / 1e3:.1f} ms alone (x{tw / ta if ta else float('nan'):.3f}); gaps "
              + ", ".join(f"{w} {c} x {t / 1e3:.1f} ms" for w, (c, t) in sorted(g.items())))
        print("   action      host start..end (ms)   GPU start..end (ms)   busy   kernels  GPU start - host start")
        for row in rows:
            if "gpu_start" not in row:
                continue
            t = rank["t0"]
            print(f"   {row['name']:<10} {(row['host_start'] - t) / 1e3:7.2f}..{(row['host_end'] - t) / 1e3:7.2f}   "
                  f"{(row['gpu_start'] - t) / 1e3:7.2f}..{(row['gpu_end'] - t) / 1e3:7.2f}   {row['busy'] / 1e3:6.2f} "
                  f"{row['kernels']:5d}   {(row['gpu_start'] - row['host_start']) / 1e3:7.2f}")


def _merged(spans):
    out = []
    for a, b in sorted(spans):
        if out and a <= out[-1][1]:
            out[-1][1] = max(out[-1][1], b)
        else:
            out.append([a, b])
    return out


def main(argv: list[str]) -> None:
    folder = Path(argv[0])
    runs = argv[1:] or sorted({re.sub(r"-\d+x\d+-rank\d+\.json\.gz$", "", p.name) for p in folder.glob("*-rank*.json.gz")})
    for run in runs:
        if "interleaved" in run:
            lowered_order_check(folder, run)
        report(folder, run)


def lowered_order_check(folder: Path, run: str, pp: int = 4, chunks: int = 2) -> None:
    """Each rank's PP: actions in the timeline against llm/torch_p2p.program (torch's lowering as the model writes it)."""
    from simcluster.llm.simulate import schedule
    from simcluster.llm.torch_p2p import program

    doc = json.loads((folder / f"{run}.json").read_text())
    m = doc["shapes"][0]["microbatches"]
    prog = program(pp, chunks, tuple(tuple(schedule(pp, chunks, m, r)) for r in range(pp)))
    for path in sorted(folder.glob(f"{run}-*-rank*.json.gz")):
        r = int(re.search(r"rank(\d+)", path.name).group(1))
        seen = [a["name"][3:] for a in read_rank(path)["actions"]
                if not re.search(r"UNSHARD|RESHARD|REDUCE_GRAD", a["name"])]
        model = []
        for op in prog[r]:
            if op[0] in "FB":
                model.append(f"{op[1] * pp + r}{op[0]}{op[2]}")
            else:
                kind, vs, i = op[1]
                model.append(f"{vs - 1 if kind == 'F' else vs + 1}SEND_{kind}{i}" if op[0] == "S" else f"{vs}RECV_{kind}{i}")
        print(f"{run} rank {r}: {len(seen)} actions; torch_p2p.program {'equal' if seen == model else 'DIFFERS'}")


if __name__ == "__main__":
    import study_args  # an unknown argument refused before the study runs
    study_args.check(words=None, usage="DIR [RUN ...]")
    main(sys.argv[1:])
