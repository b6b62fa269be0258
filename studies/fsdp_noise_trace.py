"""Where the noisy FSDP2 0.5b 5120:2 step loses its time: both ranks' profiled step (issue 44, session 40; a trace read of
development data, not a test). Reads calibration/h200x2-eager-fsdpnoise-2026-11-30/trace-call/traces (runner --profile 1
--trace: ONE profiled step per rank and process, the file names' r1 / r2 are processes) and the run JSONs beside them.

Per rank: the profiled step's GPU span (first GPU event to last), the compute stream's busy time (the stream with the most
kernels; union of its kernels), its idle gaps (total, largest, count) each put on what ended it:
  bubble          a gap under BUBBLE_US (5 us): the GPU's own spacing between back-to-back kernels, neither host nor wait
  host launch     the kernel after the gap was launched after the gap began (the GPU waited for the host); split by the
                  host's runtime call under the gap: 'host sync' (cudaStreamSynchronize / cudaEventSynchronize /
                  cudaDeviceSynchronize), 'host alloc' (cudaMalloc / cudaFree), 'host optimizer' (launched under
                  Optimizer.step), else 'host launch'
  stream wait     the kernel was queued before the gap began: it waited (cudaStreamWaitEvent) on another stream; put on the
                  last other-stream event ending before it starts: 'wait all-gather' / 'wait reduce-scatter' (an NCCL
                  kernel, which itself may wait for the other rank), 'wait copy stream' (FSDP2's copy-in kernels)
and the NCCL kernels: count, summed duration, bytes, the excess over the fastest kernel of the same collective and size
in the rank pair (an empirical byte-time floor), and the cross-rank skew (matched by issue order; both processes share the
host clock): summed start lag of the other rank, i.e. how long this rank's kernels waited for it at most.
The profiler slows the host (CUPTI and the op records), so host gaps read here are larger than in an unprofiled step:
printed per step as the profiled / unprofiled ratio of rank 0's host issue (the run JSON records rank 0's only).
Beside them, the model's step, compute and host issue for the shape (heldout/eager_regimes.regime_predict, gpu "h200";
host issue = layers x host.layer_kernels x host_kernel_s + host_step_s of the fsdp host fit), the NCCL floor's bus rate
(bytes (n-1)/n over its time, n = 2) and each rank's step of NCCL kernels priced at the floor against the model's time.
    python studies/fsdp_noise_trace.py [TRACE_DIR]
"""

from __future__ import annotations

import collections
import functools
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "studies"))
sys.path.insert(0, str(ROOT / "studies" / "megatron_moe"))

import eager_mode_classes  # noqa: E402  (matched_loss: kernels against the same launches of a reference step)
import kernel_kinds  # noqa: E402  (its load: GPU events with launch time, launch stack, stream)

from simcluster.errors import SimclusterError  # noqa: E402
from simcluster.traces.torch_profiler import complete_events, length, union  # noqa: E402

TRACES = ROOT / "calibration" / "h200x2-eager-fsdpnoise-2026-11-30" / "trace-call" / "traces"
SYNCS = ("cudaStreamSynchronize", "cudaEventSynchronize", "cudaDeviceSynchronize")
ALLOCS = ("cudaMalloc", "cudaFree", "cudaMallocAsync", "cudaFreeAsync", "cuMemCreate", "cuMemMap", "cuMemUnmap", "cuMemRelease")
DTYPE_BYTES = {"BFloat16": 2, "Float": 4, "Half": 2, "Float32": 4}
SLACK_US = 2.0     # a launch this close to the gap's start counts as queued before it
BUBBLE_US = 5.0    # a shorter gap is the GPU's spacing between back-to-back kernels (review D 3: 1147-1718 of each rank's)


def host_events(path: Path) -> tuple[list[dict], list[tuple[float, float]], dict]:
    """(the host's CUDA runtime / driver calls by start, the optimizer step's host windows (us), the trace as
    eager_mode_classes reads it)."""
    ev = complete_events(path)
    runtime = sorted((e for e in ev if e.get("cat") in ("cuda_runtime", "cuda_driver")), key=lambda e: e["ts"])
    opt = [(e["ts"], e["ts"] + e["dur"]) for e in ev if e.get("cat") == "user_annotation" and e["name"].startswith("Optimizer.step")]
    return runtime, opt, {"traceEvents": ev}


def nccl_bytes(k: dict) -> int:
    """Bytes a rank's NCCL kernel moves through its buffers: the all-gather's output, the reduce-scatter's input."""
    a = k["args"]
    n = a.get("Out msg nelems", 0) if "AllGather" in k["name"] else a.get("In msg nelems", 0)
    return int(n) * DTYPE_BYTES.get(a.get("dtype", ""), 4)


def stream_roles(gpu: list[dict]) -> dict:
    """{stream: 'compute' | 'all-gather' | 'reduce-scatter' | 'copy'}: the compute stream runs the most kernels."""
    count = collections.Counter(k["stream"] for k in gpu)
    compute = count.most_common(1)[0][0]
    roles = {}
    for s in count:
        names = [k["name"] for k in gpu if k["stream"] == s]
        if s == compute:
            roles[s] = "compute"
        elif any("AllGather" in n for n in names):
            roles[s] = "all-gather"
        elif any("ReduceScatter" in n for n in names):
            roles[s] = "reduce-scatter"
        else:
            roles[s] = "copy"
    return roles


def gap_causes(gpu: list[dict], runtime: list[dict], opt: list[tuple[float, float]]) -> list[tuple[float, str]]:
    """(idle us, cause) for each gap between consecutive kernels of the compute stream (see the module's doc)."""
    roles = stream_roles(gpu)
    comp = sorted((k for k in gpu if roles[k["stream"]] == "compute"), key=lambda k: k["ts"])
    others = sorted((k for k in gpu if roles[k["stream"]] != "compute"), key=lambda k: k["ts"] + k["dur"])
    out, end = [], comp[0]["ts"] + comp[0]["dur"]
    for k in comp[1:]:
        if k["ts"] - end >= BUBBLE_US:
            out.append((k["ts"] - end, _cause(k, end, others, roles, runtime, opt)))
        elif k["ts"] > end:
            out.append((k["ts"] - end, "bubble"))
        end = max(end, k["ts"] + k["dur"])
    return out


def _cause(k: dict, gap_start: float, others: list[dict], roles: dict, runtime: list[dict], opt: list[tuple[float, float]]) -> str:
    if k["launch"] is not None and k["launch"] > gap_start + SLACK_US:
        under = [r for r in runtime if r["ts"] < k["launch"] and r["ts"] + r["dur"] > gap_start]
        if any(r["name"] in SYNCS and r["dur"] > 50 for r in under):
            return "host sync"
        if any(r["name"] in ALLOCS for r in under):
            return "host alloc"
        if any(a <= k["launch"] <= b for a, b in opt):
            return "host optimizer"
        return "host launch"
    before = [o for o in others if o["ts"] + o["dur"] <= k["ts"] + SLACK_US]
    if not before:
        return "wait unknown"
    return "wait " + roles[before[-1]["stream"]].replace("copy", "copy stream")


def nccl_rows(gpu_a: list[dict], gpu_b: list[dict]) -> list[dict]:
    """Rank a's NCCL kernels matched to rank b's by issue order per collective: duration, bytes, b's start minus a's."""
    out = []
    for kind in ("AllGather", "ReduceScatter"):
        a = sorted((k for k in gpu_a if kind in k["name"]), key=lambda k: k["ts"])
        b = sorted((k for k in gpu_b if kind in k["name"]), key=lambda k: k["ts"])
        for i, k in enumerate(a):
            lag = b[i]["ts"] - k["ts"] if i < len(b) else 0.0
            out.append(dict(kind=kind, dur=k["dur"], bytes=nccl_bytes(k), lag=lag))
    return out


def rank_read(gpu: list[dict], host: tuple, nccl: list[dict], floor: dict, other_trace: dict) -> dict:
    """One rank's profiled step in milliseconds (see the module's doc); `host`: host_events' answer, `other_trace`: the
    other rank's, whose GEMM / attention kernels are the reference for this rank's (eager_mode_classes.matched_loss)."""
    runtime, opt_windows, trace = host
    roles = stream_roles(gpu)
    launches = sorted(k["launch"] for k in gpu if k["launch"] is not None)
    span = max(k["ts"] + k["dur"] for k in gpu) - min(k["ts"] for k in gpu)
    comp = [(k["ts"], k["ts"] + k["dur"]) for k in gpu if roles[k["stream"]] == "compute"]
    gaps = gap_causes(gpu, runtime, opt_windows)
    by, count = collections.defaultdict(float), collections.Counter(cause for _, cause in gaps)
    for us, cause in gaps:
        by[cause] += us
    opt = [(k["ts"], k["ts"] + k["dur"]) for k in gpu if k["launch"] is not None and any(a <= k["launch"] <= b for a, b in opt_windows)]
    beside, beside_extra, away_extra = eager_mode_classes.matched_loss(trace, other_trace)
    excess = sum(r["dur"] - floor[(r["kind"], r["bytes"])] for r in nccl)
    over_model = sum(floor[(r["kind"], r["bytes"])] - model_byte_s(r["kind"], r["bytes"]) * 1e6 for r in nccl)
    waited = sum(max(r["lag"], 0.0) for r in nccl)
    return dict(span=span / 1e3, busy=length(union(comp)) / 1e3, all_busy=length(union([(k["ts"], k["ts"] + k["dur"]) for k in gpu])) / 1e3,
                idle=sum(us for us, _ in gaps) / 1e3, largest=max((us for us, _ in gaps), default=0.0) / 1e3, gaps=len(gaps),
                causes={c: v / 1e3 for c, v in by.items()}, counts=dict(count), largest_cause=max(gaps, default=(0.0, "-"))[1],
                optimizer=length(union(opt)) / 1e3, nccl=sum(r["dur"] for r in nccl) / 1e3, nccl_n=len(nccl),
                nccl_excess=excess / 1e3, floor_over_model=over_model / 1e3, other_rank_late=waited / 1e3,
                syncs=sum(r["dur"] for r in runtime if r["name"] in SYNCS) / 1e3,
                allocs=sum(1 for r in runtime if r["name"] in ALLOCS), host_issue=(launches[-1] - launches[0]) / 1e3,
                launches=len(launches), beside=beside * 1e3, beside_extra=beside_extra * 1e3, away_extra=away_extra * 1e3)


@functools.cache
def model_byte_s(kind: str, nbytes: int) -> float:
    """The model's time for one 2-rank NVLink collective of `nbytes` (its nccl-tests size: the all-gather's output, the
    reduce-scatter's input) on the H200 x 2 card the eager regimes use (llm/comm.collective_s)."""
    from simcluster.cards import load_collective
    from simcluster.heldout.eager import CARDS
    from simcluster.llm.comm import Network, collective_s, place

    card, _ = load_collective(ROOT / CARDS[("nvlink", 2)])
    net = Network(card, 2)
    return collective_s(net, place("dp", 2, 1, 2, net), "all_gather" if kind == "AllGather" else "reduce_scatter", nbytes)


def floors(rows: list[list[dict]]) -> dict:
    """{(collective, bytes): the fastest such kernel of the pair, us} from both ranks' nccl_rows."""
    out: dict = {}
    for r in (r for rank in rows for r in rank):
        key = (r["kind"], r["bytes"])
        out[key] = min(out.get(key, r["dur"]), r["dur"])
    return out


def pair_read(paths: list[Path]) -> list[dict]:
    """Both ranks of one process pair: each rank's read, then the pair's NCCL floor (floors)."""
    loaded = [(kernel_kinds.load(p)[0], host_events(p)) for p in paths]
    gpus = [g for g, _ in loaded]
    nccl = [nccl_rows(gpus[i], gpus[1 - i]) for i in range(2)]
    floor = floors(nccl)
    reads = [rank_read(g, h, nc, floor, loaded[1 - i][1][2]) for i, ((g, h), nc) in enumerate(zip(loaded, nccl, strict=True))]
    return reads + [floor]


def run_steps(trace_dir: Path, name: str) -> tuple[list[float], list[float]] | None:
    """(the timed steps, rank 0's host issue) of the process's run JSON (trace-call/trace-NAME.json), in ms; None where
    there is none."""
    p = trace_dir.parent / f"trace-{name}.json"
    return doc_steps(p) if p.is_file() else None


def doc_steps(p: Path) -> tuple[list[float], list[float]]:
    """(timed steps, rank 0's host issue) of an llm-step run JSON, ms."""
    try:
        s = json.loads(p.read_text())["shapes"][0]
        return [t * 1e3 for t in s["step_times_s"]], [t * 1e3 for t in s["host_issue_s"]]
    except (KeyError, IndexError, ValueError, TypeError) as exc:
        raise SimclusterError(f"{p}: not an llm-step run document ({type(exc).__name__}: {exc})") from None


def unprofiled_runs(trace_dir: Path) -> list[str]:
    """One line per fsdp run JSON of the bundle's runs/ (unprofiled processes of the noise set): rank 0's host issue's range
    and each step minus its issue, in ms."""
    lines = []
    for p in sorted((trace_dir.parent.parent / "runs").glob("fsdp-*.json")):
        steps, issue = doc_steps(p)
        lines.append(f"  runs/{p.name}: rank 0's host issue {min(issue):.1f}-{max(issue):.1f} ms, step minus issue "
                     + ", ".join(f"{s - h:.1f}" for s, h in zip(steps, issue, strict=True)))
    return lines


def model_row(name: str) -> dict:
    """The model's step, compute and host issue (ms) for a pair named MODE-PRESET-rN-SEQxMB (heldout/eager_regimes; see
    the module's doc)."""
    from simcluster.heldout.eager_regimes import layout_of, model_of, regime_framework, regime_predict
    from simcluster.llm import host
    from simcluster.llm.spec import BatchSpec
    from simcluster.runner.llm_decoder import PRESETS

    try:
        mode, preset, _, shape = name.split("-")
        seq, mb = (int(x) for x in shape.split("x"))
        model = model_of({"model": PRESETS[preset]}, seq)
    except (ValueError, KeyError):
        raise SimclusterError(f"{name}: not a MODE-PRESET-rN-SEQxMB trace name of a runner preset") from None
    pred = regime_predict(preset, mb, mode, "h200", seq=seq)
    fw, _ = regime_framework(mode, "h200")
    if fw.host_bwd_kernel_s or fw.host_plain_kernel_s:   # the fsdp fit prices every kernel alike; another would not
        raise SimclusterError(f"{name}: the {mode} host fit splits its kernel cost; this study's issue sum does not")
    par, _, m = layout_of(mode)
    kernels = model.layers * host.layer_kernels(model, par, BatchSpec(mb * m * par.dp, mb, "bf16"), fw)
    return dict(step=pred["step_ms"], compute=pred["breakdown_ms"]["compute"], kernels=kernels,
                host_kernel_us=fw.host_kernel_s * 1e6, host_step=fw.host_step_s * 1e3,
                host_issue=(kernels * fw.host_kernel_s + fw.host_step_s) * 1e3)


def bus_gbs(nbytes: int, us: float, n: int = 2) -> float:
    """A collective's bus rate, GB/s a rank: the bytes (n - 1) / n of its buffer that cross the link, over its time."""
    return nbytes * (n - 1) / n / us / 1e3


def pairs(trace_dir: Path) -> list[tuple[str, list[Path]]]:
    out = []
    for r0 in sorted(trace_dir.glob("*-rank0.json.gz")):
        r1 = r0.with_name(r0.name.replace("-rank0", "-rank1"))
        if r1.is_file():
            out.append((r0.name.replace("-rank0.json.gz", ""), [r0, r1]))
    return out


def main(argv: list[str]) -> int:
    """The command line; a missing folder or a corrupt trace is one line on stderr naming it, exit 1."""
    return kernel_kinds.one_line_errors(_main, argv)


def _main(argv: list[str]) -> int:
    trace_dir = Path(argv[0]) if argv else TRACES
    found = pairs(trace_dir)
    if not found:
        raise SimclusterError(f"{trace_dir}: no NAME-rank0.json.gz / NAME-rank1.json.gz pair")
    for name, paths in found:
        steps = run_steps(trace_dir, name.rsplit("-", 1)[0])
        *reads, floor = pair_read(paths)
        if steps is None:
            print(f"{name}: no run JSON")
        else:
            ratios = ", ".join(f"{reads[0]['host_issue'] / h:.2f}" for h in steps[1])
            print(f"{name}: timed steps {[round(t, 1) for t in steps[0]]} ms, rank 0's host issue {[round(t, 1) for t in steps[1]]} ms; "
                  f"rank 0's profiled / unprofiled issue {ratios}")
        m = model_row(name)
        print(f"  model: step {m['step']:.1f} ms, compute {m['compute']:.1f}, host issue {m['host_issue']:.1f} "
              f"({m['kernels']} kernels x {m['host_kernel_us']:.2f} us + {m['host_step']:.2f} ms)")
        print("  NCCL byte time, the pair's fastest kernel vs the model's: " + ", ".join(
            f"{kind} {b / 1e6:.1f} MB {us:.0f} vs {model_byte_s(kind, b) * 1e6:.0f} us ({bus_gbs(b, us):.0f} GB/s)"
            for (kind, b), us in sorted(floor.items())))
        for rank, r in enumerate(reads):
            causes = ", ".join(f"{c} {v:.1f} ({r['counts'][c]})" for c, v in sorted(r["causes"].items(), key=lambda x: -x[1]))
            print(f"  rank {rank}: span {r['span']:.1f} ms, compute busy {r['busy']:.1f} (any stream {r['all_busy']:.1f}), "
                  f"compute idle {r['idle']:.1f} in {r['gaps']} gaps (largest {r['largest']:.2f}, {r['largest_cause']}), "
                  f"optimizer {r['optimizer']:.1f}")
            print(f"          idle by cause, ms (gaps): {causes}")
            print(f"          NCCL {r['nccl_n']} kernels {r['nccl']:.1f} ms, over the pair's fastest same-size kernel "
                  f"{r['nccl_excess']:.1f} ms, other rank started later by {r['other_rank_late']:.1f} ms in all; at the floor "
                  f"{r['floor_over_model']:+.1f} ms over the model's time; host syncs (the closing one included) "
                  f"{r['syncs']:.1f} ms, allocator calls {r['allocs']}")
            print(f"          host: {r['launches']} launches over {r['host_issue']:.1f} ms; GEMM / attention beside NCCL "
                  f"{r['beside']:.1f} ms, {r['beside_extra']:+.1f} ms over the other rank's same kernels ({r['away_extra']:+.1f} ms away from NCCL)")
    runs = unprofiled_runs(trace_dir)
    if runs:
        print("unprofiled processes of the same lease (no trace):")
        print("\n".join(runs))
    return 0


if __name__ == "__main__":
    import study_args  # an unknown argument refused before the study runs
    study_args.check(words=1, usage="[TRACE_DIR]")
    sys.exit(main(sys.argv[1:]))
