"""Rank 0's profiled Megatron-Core MoE step (a Chrome trace of studies/megatron_moe/device.py --trace), read per forward
MoE layer: the dispatcher's host synchronisation, the host's issue after it, the GPU's idle time, and the EP collectives'
wait (their kernel's duration minus the model's byte time for them). A measurement read, not a test.

    python studies/megatron_moe/trace_read.py calibration/h200x4-megatron-moe-2026-11-27/trace-h200-x4-qwen3-like-ep4.json.gz
    python studies/megatron_moe/trace_read.py --ranks FOLDER/trace-h200-x4-NAME-rank0.json.gz ... rank3.json.gz

--ranks: one step's traces of every rank (device.py --trace FILE{rank}; the ranks' processes share one host clock):
for each NCCL kernel in issue order, when each rank's kernel started, and which rank arrived last by how much.

A forward MoE layer, as the trace shows it (megatron-core 0.14, alltoall dispatcher): the token-count all_gather, a
cudaStreamSynchronize that waits for it (the counts to the host), then the host issues the permutation, the dispatch
alltoalls (tokens, probabilities), the local experts one after the other, the combine alltoall, the unpermutation and
the next layer's attention and router, up to the next layer's synchronisation. A "period" is the host's time from one
synchronisation's end to the next one's start; its kernels are those launched in it.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from kernel_kinds import one_line_errors  # noqa: E402  (studies/megatron_moe: a bad trace is one line naming it)

from simcluster.script_args import check  # noqa: E402
from simcluster.traces.torch_profiler import complete_events  # noqa: E402

GPU_CATS = ("kernel", "gpu_memcpy", "gpu_memset")
LAUNCHES = ("cudaLaunchKernel", "cudaMemcpyAsync", "cudaMemsetAsync", "cuLaunchKernel", "cuLaunchKernelEx", "cudaLaunchKernelExC")
SYNC_MIN_US = 200.0   # a synchronisation the host waited on (the count syncs wait 5-9 ms; the trivial ones 5-7 us)


def load(path: Path) -> tuple[list[dict], list[dict], list[dict]]:
    """(GPU events with their launch time 'launch', host runtime calls, host count synchronisations), times in us."""
    ev = complete_events(path)   # the project's Chrome trace reader: plain or gzipped, a one-line error naming the file
    runtime = [e for e in ev if e.get("cat") in ("cuda_runtime", "cuda_driver")]
    launch_at = {e["args"]["correlation"]: e["ts"] for e in runtime if e["name"] in LAUNCHES and "correlation" in e.get("args", {})}
    gpu = sorted((dict(e, launch=launch_at.get(e["args"].get("correlation"))) for e in ev
                  if e.get("cat") in GPU_CATS), key=lambda e: e["ts"])
    syncs = sorted((e for e in runtime if e["name"] == "cudaStreamSynchronize" and e["dur"] > SYNC_MIN_US), key=lambda e: e["ts"])
    return gpu, sorted(runtime, key=lambda e: e["ts"]), syncs


def busy_us(events: list[dict], start: float, end: float) -> float:
    """GPU time covered by the events inside [start, end] (their union)."""
    total, cursor = 0.0, start
    for e in sorted(events, key=lambda e: e["ts"]):
        a, b = max(e["ts"], cursor), min(e["ts"] + e["dur"], end)
        if b > a:
            total += b - a
            cursor = b
    return total


def periods(gpu: list[dict], syncs: list[dict]) -> list[dict]:
    """One record per forward MoE layer after its count synchronisation (the last one runs to the forward's last
    SendRecv + the next kernel launch after it)."""
    out = []
    nccl = [e for e in gpu if e["name"].startswith("ncclDevKernel")]
    for i, s in enumerate(syncs):
        start = s["ts"] + s["dur"]
        after = [e for e in nccl if e["launch"] is not None and e["launch"] >= start]
        sendrecv = [e for e in after if "SendRecv" in e["name"]][:3]          # dispatch tokens, dispatch probs, combine
        gather = [e for e in nccl if "AllGather" in e["name"] and e["ts"] < start][-1:]
        end = syncs[i + 1]["ts"] if i + 1 < len(syncs) else sendrecv[-1]["launch"] + 1.0
        launched = [e for e in gpu if e["launch"] is not None and start <= e["launch"] < end]
        last_end = max(e["ts"] + e["dur"] for e in launched)
        busy = busy_us(launched, start, last_end)
        to_dispatch = [e for e in launched if e["launch"] <= sendrecv[0]["launch"]]
        to_combine = [e for e in launched if e["launch"] <= sendrecv[2]["launch"]]
        out.append(dict(
            wait_sync_us=s["dur"], host_us=end - start, kernels=len(launched),
            host_us_per_kernel=(end - start) / len(launched),
            sync_to_dispatch_launch_us=sendrecv[0]["launch"] - start, kernels_to_dispatch=len(to_dispatch),
            sync_to_dispatch_gpu_us=sendrecv[0]["ts"] - start,
            dispatch_to_combine_launch_us=sendrecv[2]["launch"] - sendrecv[0]["launch"],
            kernels_dispatch_to_combine=len(to_combine) - len(to_dispatch),
            gpu_span_us=last_end - start, gpu_busy_us=busy, gpu_idle_us=last_end - start - busy,
            sendrecv_us=[e["dur"] for e in sendrecv], count_all_gather_us=gather[0]["dur"] if gather else None))
    return out


def backward_nccl(gpu: list[dict], syncs: list[dict]) -> list[float]:
    """Durations (us) of the SendRecv kernels after the forward's last count synchronisation's three (none without a
    synchronisation: one GPU, EP 1, has no dispatch collective)."""
    if not syncs:
        return []
    start = syncs[-1]["ts"] + syncs[-1]["dur"]
    sendrecv = [e for e in gpu if "SendRecv" in e["name"] and e["launch"] is not None and e["launch"] >= start]
    return [e["dur"] for e in sendrecv[3:]]


def arrivals(paths: list[Path]) -> list[tuple[str, list[float]]]:
    """(collective kernel's name, each rank's start time in us from the earliest) for the NCCL kernels of one profiled step
    of every rank, matched by their order (each rank runs the same collectives in the same order)."""
    per_rank = [[e for e in load(p)[0] if e["name"].startswith("ncclDevKernel")] for p in paths]
    n = min(len(k) for k in per_rank)
    if any(len(k) != n for k in per_rank):
        print(f"  the ranks ran {[len(k) for k in per_rank]} NCCL kernels: the first {n} matched")
    out = []
    for i in range(n):
        starts = [k[i]["ts"] for k in per_rank]
        out.append((per_rank[0][i]["name"].split("(")[0], [t - min(starts) for t in starts]))
    return out


def main(argv: list[str]) -> int:
    check(options=("--ranks",), words=None, usage="[--ranks] TRACE ...", argv=argv)
    return one_line_errors(_main, argv)


def _main(argv: list[str]) -> int:
    if argv[:1] == ["--ranks"]:
        for name, starts in arrivals([Path(p) for p in argv[1:]]):
            print(f"  {name:32s} start per rank (us after the first) {[round(t) for t in starts]}; last rank {starts.index(max(starts))}")
        return 0
    for p in argv:
        gpu, runtime, syncs = load(Path(p))
        print(f"{Path(p).name}: {len(gpu)} GPU events, {len(syncs)} count synchronisations (> {SYNC_MIN_US:.0f} us)")
        for i, r in enumerate(periods(gpu, syncs)):
            print(f"  layer {i}: " + ", ".join(f"{k} {[round(x) for x in v] if isinstance(v, list) else round(v, 1)}"
                                             for k, v in r.items() if v is not None))
        bwd = backward_nccl(gpu, syncs)
        print(f"  backward SendRecv us: {[round(x) for x in bwd]} (sum {sum(bwd) / 1e3:.1f} ms)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
