"""Why one rank reaches the EP collectives last: every rank's profiled step (device.py --trace FILE{rank}), read per
NCCL kernel. A measurement read, not a test (development: the session-30 held-out set, already read once).

    python studies/megatron_moe/rank_skew.py calibration/h200x4-megatron-moe2-2026-11-28/trace-h200-x4-NAME-rank?.json.gz

The ranks' processes share one host clock and CUPTI puts the GPU times on it, so a collective kernel's start on each
rank is when that rank reached it. The time from the previous collective's end to this one's start (a "segment") is
what the rank did in between; in it:
  gpu     the GPU busy time of the kernels it ran (their union; NCCL kernels excluded)
  gemm    the part of it in GEMM kernels (nvjet / cutlass / gemm names)
  lag     how long after the previous collective's end the host launched this collective (host issue of the segment;
          <= 0: launched ahead, the GPU's queue decided the start)
  rows    for an all_to_allv: the rows this rank receives (PyTorch's record_param_comms 'Out split size'): the tokens
          routed to its local experts (dispatch) or back to it (combine)
A rank whose segment is host-bound starts the collective at its launch (lag); a GPU-bound one at its GPU's end.
Per rank also: each launching thread's (forward: the main thread; backward: autograd's device thread) median launch
call and spacing, a few aten ops' median host time, the longest stretch with no traced op on a thread (Python alone,
its garbage collector, or the thread descheduled), and host stalls (a span with over 1 ms of its own time). Per run:
which rank each collective waited for (within each EP group), the host issue between collective launches (the
slowest of the group per collective, summed), the late rank's extra segment time split into its extra host stalls,
its extra GPU busy (more tokens) and the rest (a slower host issue), and the routing imbalance: the most-loaded rank's
received rows over the mean, against independent uniform top-k routing (the per-run JSON beside the traces gives
E, top-k, EP).
"""

from __future__ import annotations

import json
import re
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from kernel_kinds import one_line_errors  # noqa: E402  (a missing or bad trace: one line naming it, exit 1)
from trace_read import GPU_CATS, LAUNCHES, busy_us  # noqa: E402  (the same folder's reader of one rank's trace)

from simcluster.script_args import check  # noqa: E402
from simcluster.traces.torch_profiler import complete_events  # noqa: E402

GEMM = re.compile(r"nvjet|gemm|cutlass|sm90_xmma", re.I)
STALL_US = 1000.0   # a host span with more than this of its own time (no child) is a stall


def load(path: Path) -> dict:
    """One rank's step: GPU events (with their host launch time 'launch'), NCCL kernels, runtime calls, CPU op spans."""
    ev = complete_events(path)   # the project's Chrome trace reader (its complete events; a one-line error naming the file)
    runtime = [e for e in ev if e.get("cat") in ("cuda_runtime", "cuda_driver") and e.get("ph") == "X"]
    launch_at = {e["args"]["correlation"]: e["ts"] for e in runtime if e["name"] in LAUNCHES and "correlation" in e.get("args", {})}
    gpu = sorted((dict(e, launch=launch_at.get(e["args"].get("correlation"))) for e in ev
                  if e.get("cat") in GPU_CATS and e.get("ph") == "X"), key=lambda e: e["ts"])
    launches = sorted(e["ts"] for e in runtime if e["name"] in LAUNCHES)
    gc = [e for e in ev if e.get("ph") == "X" and "gc" in e.get("name", "").lower().split(":")[0].split(" ")]
    cpu = [e for e in ev if e.get("cat") == "cpu_op" and e.get("ph") == "X"]
    host = [e for e in ev if e.get("ph") == "X" and e.get("cat") in ("cpu_op", "cuda_runtime", "cuda_driver", "user_annotation")]
    return dict(host=host, stalls=stalls(host), runtime=runtime, gpu=gpu, launches=launches, gc=gc, cpu=cpu,
                nccl=[e for e in gpu if e["name"].startswith("ncclDevKernel")])


def stalls(host: list[dict], min_self_us: float = STALL_US) -> list[tuple[str, float, float]]:
    """(name, start us, self us) of the host spans whose own time (less their children's) exceeds min_self_us, host
    waits (synchronisations) and the profiler's step span left out: e.g. an aten::mm whose cuBLAS call stalls before
    its launch the first time a GEMM shape is seen."""
    out: list[tuple[str, float, float]] = []
    by_tid: dict[int, list[dict]] = {}
    for e in host:
        by_tid.setdefault(e["tid"], []).append(e)
    for ops in by_tid.values():
        stack: list[list] = []
        for e in sorted(ops, key=lambda e: (e["ts"], -e["dur"])) + [None]:
            while stack and (e is None or stack[-1][1] <= e["ts"]):
                name, _, own, ts = stack.pop()
                if own > min_self_us and "Synchronize" not in name and "ProfilerStep" not in name:
                    out.append((name, ts, own))
            if e is not None:
                if stack:
                    stack[-1][2] -= e["dur"]
                stack.append([e["name"], e["ts"] + e["dur"], e["dur"], e["ts"]])
    return sorted(out, key=lambda x: x[1])


def rows(kernel: dict, hidden: int | None) -> int | None:
    """Rows this rank receives in an all_to_allv (sum of 'Out split size'), None for other collectives."""
    split = kernel["args"].get("Out split size", "[]")
    vals = json.loads(split) if isinstance(split, str) else split
    return sum(vals) if vals else None


def segments(rank: dict) -> list[dict]:
    """Per NCCL kernel (issue order): its start/end, the segment before it (gpu, gemm, lag), its received rows."""
    out, prev_end, prev_launch = [], None, None
    waits = [e for e in rank["runtime"] if e["name"] in ("cudaStreamSynchronize", "cudaDeviceSynchronize") and e["dur"] > 200.0]
    for k in rank["nccl"]:
        rec = dict(name=k["name"].split("(")[0].replace("ncclDevKernel_", ""), start=k["ts"], end=k["ts"] + k["dur"],
                   launch=k["launch"], rows=rows(k, None), split=k["args"].get("Out split size"))
        if prev_end is not None:
            inside = [e for e in rank["gpu"] if not e["name"].startswith("ncclDevKernel") and e["ts"] < k["ts"] and e["ts"] + e["dur"] > prev_end]
            rec.update(seg=k["ts"] - prev_end, gpu=busy_us(inside, prev_end, k["ts"]),
                       gemm=busy_us([e for e in inside if GEMM.search(e["name"])], prev_end, k["ts"]),
                       lag=(k["launch"] - prev_end) if k["launch"] is not None else None)
        if prev_launch is not None and k["launch"] is not None:
            waited = sum(w["dur"] for w in waits if prev_launch <= w["ts"] < k["launch"])
            rec.update(host=k["launch"] - prev_launch - waited,
                       stall=sum(own for _, ts, own in rank["stalls"] if prev_launch <= ts < k["launch"]),
                       launched=sum(1 for t in rank["launches"] if prev_launch < t <= k["launch"]))
        out.append(rec)
        prev_end, prev_launch = rec["end"], k["launch"]
    return out


def thread_stats(rank: dict) -> list[tuple[str, int, float, float, float]]:
    """Per host thread that launches kernels, forward (the first to launch) then backward (autograd's device thread):
    (label, launches, median cudaLaunchKernel call us, median us between launches under 2 ms, its span ms)."""
    by_tid: dict[int, list[dict]] = {}
    for e in rank["runtime"]:
        if e["name"] == "cudaLaunchKernel":
            by_tid.setdefault(e["tid"], []).append(e)
    threads = sorted((sorted(v, key=lambda e: e["ts"]) for v in by_tid.values() if len(v) > 50), key=lambda v: v[0]["ts"])
    out = []
    for label, calls in zip(("forward", "backward"), threads, strict=False):
        gaps = [b["ts"] - a["ts"] for a, b in zip(calls, calls[1:], strict=False) if b["ts"] - a["ts"] < 2000.0]
        out.append((label, len(calls), statistics.median(e["dur"] for e in calls), statistics.median(gaps),
                    (calls[-1]["ts"] - calls[0]["ts"]) / 1e3))
    return out


def uncovered_gaps_ms(rank: dict) -> tuple[float, float]:
    """(largest, summed) ms between consecutive host spans of a launching thread within its launches, no traced op
    running: Python alone, its garbage collector, or the thread descheduled."""
    largest = total = 0.0
    by_tid: dict[int, list[dict]] = {}
    for e in rank["host"]:
        by_tid.setdefault(e["tid"], []).append(e)
    for ops in by_tid.values():
        launches = [e["ts"] for e in ops if e["name"] in LAUNCHES]
        if len(launches) < 50:
            continue
        cursor = None
        for e in sorted(ops, key=lambda e: e["ts"]):
            if cursor is not None and e["ts"] > cursor and min(launches) <= cursor and e["ts"] <= max(launches):
                largest, total = max(largest, e["ts"] - cursor), total + e["ts"] - cursor
            cursor = max(cursor or 0.0, e["ts"] + e["dur"])
    return largest / 1e3, total / 1e3


def op_medians_us(rank: dict, names=("aten::empty", "aten::view", "aten::mm", "aten::add_", "aten::mul")) -> dict:
    """Median host duration of a few CPU-only / launch-only aten ops (the same calls on every rank)."""
    return {n.split("::")[1]: round(statistics.median(e["dur"] for e in rank["cpu"] if e["name"] == n), 1) for n in names}


def report(paths: list[Path]) -> None:
    ranks = [load(p) for p in paths]
    segs = [segments(r) for r in ranks]
    n = min(len(s) for s in segs)
    print(f"{paths[0].name.rsplit('-rank', 1)[0]}: {[len(s) for s in segs]} NCCL kernels per rank")
    for i, r in enumerate(ranks):
        stats = "; ".join(f"{lab} {k} launches, call {c:.1f} us, {g:.1f} us apart, {sp:.1f} ms" for lab, k, c, g, sp in thread_stats(r))
        gap, gaps = uncovered_gaps_ms(r)
        print(f"  rank {i}: {stats}; op medians us {op_medians_us(r)}; no op on the thread: largest {gap:.2f} ms, "
              f"{gaps:.1f} ms in all; GC-named spans {len(r['gc'])}")
    first = json.loads(ranks[0]["nccl"][1]["args"].get("Process Group Ranks", "[0]"))
    if first != list(range(len(first))):   # the EP groups are read as contiguous blocks (tp 1): say so when they are not
        raise SystemExit(f"rank_skew: rank 0's EP group {first} is not ranks 0..{len(first) - 1}; strided groups are not read")
    groups = [list(range(g, g + len(first))) for g in range(0, len(ranks), len(first))]
    late = [0] * len(ranks)
    excess = []
    for j in range(n):
        row = f"  {j:2d} {segs[0][j]['name']:17s}"
        for grp in groups:
            starts = [segs[i][j]["start"] for i in grp]
            last = grp[starts.index(max(starts))]
            late[last] += 1
            row += f" ranks {grp}: start +us {[round(t - min(starts)) for t in starts]} last {last};"
            if "seg" in segs[last][j] and segs[last][j]["gemm"] > 0:
                others = [segs[i][j] for i in grp if i != last]
                mine = segs[last][j]
                excess.append((j, last, *(mine.get(key, 0.0) - statistics.fmean(o.get(key, 0.0) for o in others)
                                          for key in ("seg", "gpu", "gemm")),
                               mine["lag"] >= mine["seg"] - 50.0,
                               mine.get("stall", 0.0) - statistics.fmean(o.get("stall", 0.0) for o in others)))
        if "seg" in segs[0][j]:
            row += (" | seg " + str([round(s[j]["seg"]) for s in segs]) + " gpu " + str([round(s[j]["gpu"]) for s in segs])
                    + " gemm " + str([round(s[j]["gemm"]) for s in segs])
                    + " lag " + str([round(s[j]["lag"]) if s[j]["lag"] is not None else None for s in segs]))
        if segs[0][j]["rows"] is not None:
            row += " rows " + str([s[j]["rows"] for s in segs])
        print(row)
    print(f"  last to arrive in its EP group, count per rank: {late}")
    host = [[s[j].get("host", 0.0) for j in range(1, n)] for s in segs]
    launched = [sum(s[j].get("launched", 0) for j in range(1, n)) for s in segs]
    print("  host issue between collective launches (host waits at syncs left out), per rank: "
          + ", ".join(f"{sum(h) / 1e3:.1f} ms / {k} launches = {sum(h) / k:.0f} us" for h, k in zip(host, launched, strict=True)))
    for grp in groups:
        slowest = sum(max(host[i][j] for i in grp) for j in range(n - 1))
        mean = statistics.fmean(sum(host[i]) for i in grp)
        print(f"  EP group {grp}: the sum over collectives of the group's slowest host {slowest / 1e3:.1f} ms, its ranks' mean "
              f"{mean / 1e3:.1f} ms ({slowest / mean:.2f}x), rank {grp[0]}'s {sum(host[grp[0]]) / 1e3:.1f} ms")
    print("  segments with GEMMs, the last rank against its group's others' mean (us): collective, rank, +segment, +GPU busy, "
          "+GEMM, +host stalls, host-bound")
    for j, last, dseg, dgpu, dgemm, host_bound, dstall in excess:
        print(f"    {j:2d} rank {last}: +{dseg:.0f} segment, {dgpu:+.0f} GPU, {dgemm:+.0f} GEMM, {dstall:+.0f} host stalls, "
              f"host-bound {host_bound}")
    tot = [sum(x[k] for x in excess) for k in (2, 3, 4, 6)]
    from_stalls = sum(min(max(x[6], 0.0), max(x[2], 0.0)) for x in excess)
    from_gpu = sum(min(max(x[3], 0.0), max(x[2], 0.0)) for x in excess)
    print(f"  sum: +{tot[0] / 1e3:.1f} ms segment, {tot[1] / 1e3:+.1f} ms GPU busy, {tot[2] / 1e3:+.1f} ms GEMM, "
          f"{tot[3] / 1e3:+.1f} ms host stalls ({sum(x[5] for x in excess)} of {len(excess)} host-bound); the lateness "
          f"(+segment) explained by the late rank's extra host stalls {from_stalls / 1e3:.1f} ms ({from_stalls / tot[0]:.0%}), by "
          f"its extra GPU busy {from_gpu / 1e3:.1f} ms ({from_gpu / tot[0]:.0%}), the rest {(tot[0] - from_stalls - from_gpu) / 1e3:.1f} ms "
          "its host's slower issue")
    routing_imbalance(paths[0], segs, groups)
    for i, r in enumerate(ranks):
        mm = [st for st in r["stalls"] if st[0] == "aten::mm"]
        print(f"  rank {i} host stalls (> {STALL_US / 1e3:.0f} ms own time): {len(r['stalls'])}, {sum(x[2] for x in r['stalls']) / 1e3:.1f} ms; "
              f"in aten::mm {len(mm)}, {sum(x[2] for x in mm) / 1e3:.1f} ms")


def expected_max_normal(n: int) -> float:
    """E[max of n independent standard normals]."""
    from scipy import integrate, stats

    return integrate.quad(lambda x: x * n * stats.norm.pdf(x) * stats.norm.cdf(x) ** (n - 1), -10.0, 10.0)[0]


def routing_imbalance(trace: Path, segs: list[list[dict]], groups: list[list[int]]) -> None:
    """Per forward layer: the most-loaded rank's received rows over the group's mean (the dispatch alltoall after each
    count all_gather), against independent uniform top-k routing (each token picks k distinct of E experts: the rows a
    rank with E_l local experts receives are a sum of hypergeometric draws; the expected maximum over the EP group)."""
    doc = trace.with_name("megatron-moe-" + trace.name.split("trace-", 1)[1].rsplit("-rank", 1)[0] + ".json")
    if not doc.exists():
        return
    d = json.loads(doc.read_text())
    e, k, ep, seq = d["model"]["experts"], d["model"]["top_k"], d["parallel"]["ep"], d["model"]["seq"]
    share = (e // ep) / e
    var_per_token = k * share * (1 - share) * (e - k) / (e - 1)
    tokens = ep * seq * d["model"]["micro_batch"]
    mean = tokens * k * share
    expected = 1 + expected_max_normal(ep) * (tokens * var_per_token) ** 0.5 / mean
    dispatch = [j for j in range(1, len(segs[0])) if segs[0][j - 1]["name"].startswith("AllGather")]
    measured = [max(max(segs[i][j]["rows"] for i in g) / statistics.fmean(segs[i][j]["rows"] for i in g) for g in groups)
                for j in dispatch]
    print(f"  routing: max / mean received rows per forward layer {[round(x, 3) for x in measured]}; independent uniform "
          f"top-{k} routing of {tokens} tokens over {e} experts at EP {ep} expects {expected:.4f}")


def main(argv: list[str]) -> int:
    check(words=None, usage="TRACE ...", argv=argv)
    if not argv:
        print(__doc__)
        return 2
    return one_line_errors(lambda paths: report([Path(p) for p in paths]) or 0, argv)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
