"""Predicted vs measured 2- and 4-GPU Llama-shaped training steps (DDP, FSDP2, tensor parallel), development rows (not a test).

Every `llm-step` run with world_size 2 or 4 of the bundles below (rank 0's document; torchrun on one 2 x H200 node, or
4 x H200 for session 24's sealed set: dp or tp is the run's world size, the collective card the NVLink card of that
many ranks (CARDS), the GPU card that of the run's GPU (H100 or H200))
is predicted from its architecture, sequence length, micro-batch and mode alone, with the same pieces as
validation/llm_single_gpu.py: the H200 interleaved GPU card (fitted on gpu-micro only), the torch-amp framework
with the eager host cost of the run's own mode (per kernel and per step, fitted on hidden-128 decoders of 2, 8 and
32 layers run in that mode on a 2 x H200 host: calibration/h200x2-llm-host-2026-11-23; session 21), and a collective
card for the transport. Nothing here was fitted on the 2-GPU llm-step runs. Since session 20 these three
bundles are DEVELOPMENT data (mechanisms from torch's documented behaviour were added after seeing them: docs/models/llm-findings.md); the held-out 2-GPU test
is the sealed set registered there; session 22's (calibration/h200x2-llm-2gpu-sealed3-2026-11-27, NVLink, read once
as registered, llm-findings.md) is the current held-out table of docs/models/llm.md, session 21's socket rows
(calibration/h200x2-llm-2gpu-sealed2-socket-2026-11-23) the last held-out socket ones.
    python validation/llm_two_gpu.py [--transport auto|nvlink|socket] [BUNDLE ...]

Transports and cards (a bundle's transport: its runs' recorded NCCL_P2P_DISABLE=1 and NCCL_SHM_DISABLE=1, or
"socket" in its folder name; --transport overrides):
  NVLink  models/collective/h200x2-primitives.yaml: the NCCL-primitives card fitted on a 2 x H200 machine's
          nccl-tests (every op, 2 ranks), the card `predict collective` uses for 2-rank H200 collectives.
  socket  models/collective/h200x2-socket.yaml: NCCL's socket transport at 2 ranks on one host (chunked ring, fitted
          on the all_reduce and all_gather sweeps of calibration/h200x2-nvlink-2026-11-22/nccl-tests-socket; session
          21; until then the 4-rank card h200x4-socket.yaml). reduce_scatter goes through the ring schedule, outside
          its fitted ops. How far its all_reduce is from another 2 x H200 socket sweep it never saw is printed first.

Modes onto the model (llm-step's docstring says what each mode runs):
  ddp   ParallelSpec(dp=2), torch-amp (fp32 gradients all-reduced in DDP's 25 MiB buckets: bucket_params),
        global batch 2 x micro-batch, one micro-batch per step; ddp_bucket_bytes 4: DDP's reducer keeps its own fp32
        bucket copy of the gradients for the run (gradient_as_bucket_view off, the runner's default; session 20).
  fsdp  ParallelSpec(dp=2, zero=3), torch-amp with FSDP2's mixed precision in the framework's bytes: parameters
        gathered in bf16 (param_bytes 2), gradients reduce-scattered in fp32 (grad_bytes 4), the fp32 shard kept as
        optimizer state (state_bytes 8 + 4 = 10 + param_bytes 2 = the real 4 + 8 per sharded parameter), no
        autocast weight copies (weight_copy_bytes 0: the gathered weights are already bf16).
  tp    ParallelSpec(tp=2), no sequence parallelism, torch-amp with tp_vocab_split False (embedding, head and logits
        whole on each rank: memory only); global batch = micro-batch.
What the model cannot express (expected direction of the error, decided before the data):
  all   DDP's first 1 MiB bucket; the NCCL kernels' slowdown of the overlapped compute (priced since session 21
        for DDP, 22 for FSDP2, NVLink only: overlap.beside); host costs that grow with
        the tensors' size (the host model is fitted on hidden-128 decoders; each mode's hooks and DTensor dispatch
        are in its own fit since session 21).
  fsdp  the root unit (embedding, LM head, final norm) stays gathered in bf16 through the step; the model holds
        only two layers gathered -> memory under-predicted by 2 bytes x those parameters. The fp32 -> bf16 cast
        is priced as autocast's (6 bytes per parameter forward, 6 backward: at dp 2 the same total as FSDP2's
        casts of the shard twice and of the gradient once).
  tp    the runner shards only the decoder layers: the embedding, final norm and LM head are replicated; the memory
        model holds them whole (tp_vocab_split False, session 20), the step model still splits the head's compute
        and optimizer update over the vocabulary (Megatron) -> those under-predicted. Each column-parallel Linear
        (q, k, v, gate, up) converts its fp32 input to a replicated DTensor, whose backward all-reduces the input
        gradient in fp32: 5 all_reduces of 4 bytes per element per layer, counted on a profiled 2-GPU 0.5B step
        (session 24) and priced since then (eager.torch_framework: tp_bwd_allreduces 5, tp_bwd_bytes 4; Megatron's 2 of
        2 bytes before). The runner's AdamW is not fused under tp (the model prices the fused one).
Step time: the median of rank 0's timed steps; memory: rank 0's torch.cuda.max_memory_allocated against the
model's allocated peak (the job's, with DDP's first-iteration bucket rebuild, for a run's first shape; the steady
peak for the later shapes of the same process, whose peak statistics were reset after those iterations); "comm ms":
the predicted exposed data- and tensor-parallel communication of the step.
The reading, mapping and prediction of the runs are simcluster.heldout.eager's (the rows the error-band table takes its
`llm eager` family from: the sealed bundles and the eager-regimes bundle); this script prints them per bundle.
Targets (issue 22): 5% over NVLink, 10% over sockets. A run or mode the model cannot express is printed as
"not predicted: why"; a missing bundle is a one-line error (exit status 1).
"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

from simcluster.cards import load_collective
from simcluster.collectives.model import predict
from simcluster.errors import SimclusterError
from simcluster.hardware.gpu import load_gpu
from simcluster.heldout.eager import CARDS as HELDOUT_CARDS
from simcluster.heldout.eager import DEVELOPMENT, MODE_HOST, WORLDS, Run, gpu_card_of, pct, read_runs, rows, transport_of
from simcluster.llm import eager
from simcluster.llm.comm import Network
from simcluster.script_args import ArgumentParser
from simcluster.traces import nccl_tests

ROOT = Path(__file__).resolve().parent.parent
BUNDLES = DEVELOPMENT
CARDS = dict(HELDOUT_CARDS)    # --socket-card replaces the 2-rank socket card for this run
READ_SEALED = ("calibration/h200x2-llm-2gpu-sealed-2026-11-23", "calibration/h200x2-llm-2gpu-sealed-socket-2026-11-23",   # session 20
               "calibration/h200x2-llm-2gpu-sealed2-2026-11-23", "calibration/h200x2-llm-2gpu-sealed2-socket-2026-11-23",  # 21
               "calibration/h200x2-llm-2gpu-sealed3-2026-11-27",  # session 22 (read at 82da8dc)
               "calibration/h200x4-llm-4gpu-sealed4-2026-11-27-ddp", "calibration/h200x4-llm-4gpu-sealed4-2026-11-27",  # 24 (200c183)
               "calibration/h200x4-llm-4gpu-sealed4-socket-2026-11-27",                                   # 24 (597d355)
               "calibration/h200x4-llm-4gpu-sealed4-socket-2026-11-27-tp",
               "calibration/h200x4-llm-4gpu-sealed5-socket-tp-2026-11-27")                                # 24 (3360db7)
TARGET_PCT = {"nvlink": 5.0, "socket": 10.0}
# a socket all_reduce sweep of another lease than each socket card was fitted on, per rank count
SOCKET_SWEEP = {2: "calibration/h200x2-ddp-paired-2026-11-22/all_reduce-socket.txt",
                4: "calibration/h200x4-nvlink-2026-11-22/nccl-tests-socket/all_reduce_g4_socket.txt"}


def socket_card_context(card, world: int) -> str:
    """The socket card's all_reduce at `world` ranks against a socket sweep of another lease it was not fitted on (>= 1 MiB)."""
    path = ROOT / SOCKET_SWEEP[world]
    if not path.is_file():
        return f"no {world}-rank socket sweep to compare the card with"
    errs = [abs(pct(predict(card, "all_reduce", r.size_bytes, world).time_s, r.time_s))
            for r in nccl_tests.parse(path).rows if r.size_bytes >= 2**20]
    return (f"its {world}-rank all_reduce vs {SOCKET_SWEEP[world]} (>= 1 MiB): mean |error| {statistics.mean(errs):.1f}%, "
            f"max {max(errs):.1f}%")


def print_bundle(name: str, runs: list[Run], transport: str, how: str, world: int, fw_how: str,
                 hosts: dict | None = None) -> dict | None:
    card_name, gpu_name = CARDS[(transport, world)], gpu_card_of(runs)
    card_path = Path(card_name) if Path(card_name).is_absolute() else ROOT / card_name
    try:
        card, card_doc = load_collective(card_path)
        gpu, _ = load_gpu(ROOT / gpu_name)
    except SimclusterError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return None
    print(f"== {name}: {world} ranks, {transport} ({how}); collective card {card_name}; GPU card {gpu_name}")
    print(f"   framework torch-amp, {fw_how}")
    if transport == "socket":
        print(f"   socket card: {str(card_doc.get('description', ''))[:90]}; {socket_card_context(card, world)}")
    print(f"{'model':>6} {'mode':>5} {'seq':>5} {'mb':>3} {'meas ms':>9} {'pred ms':>9} {'err %':>7} {'comm ms':>8} "
          f"{'meas GiB':>9} {'pred GiB':>9} {'err %':>7}")
    errors: dict[str, dict[str, list[float]]] = {}
    net = Network(card, world)
    for run in runs:
        if run.doc is None:
            print(f"{run.path.relative_to(ROOT) if run.path.is_relative_to(ROOT) else run.path}: not predicted: {run.failure}")
            continue
        for r in rows(run, gpu, net, hosts, transport == "socket"):
            head = f"{r['preset']:>6} {r['mode']:>5} {r['seq']:>5} {r['mb']:>3}"
            mem_meas = r.get("meas_mem_GiB", float("nan"))
            if "why" in r:
                print(f"{head} {r.get('meas_ms', float('nan')):>9.1f} not predicted: {r['why']}")
                continue
            me = pct(r["pred_mem_GiB"], mem_meas) if "meas_mem_GiB" in r else float("nan")
            acc = errors.setdefault(r["mode"], {"time": [], "mem": []})
            if r["status"] == "ok" and me == me:    # an OOM's peak is where it failed, not the step's
                acc["mem"].append(me)
            if r["status"] != "ok":
                print(f"{head} {'OOM':>9} {'':>9} {'':>7} {'':>8} {mem_meas:>9.2f} {r['pred_mem_GiB']:>9.2f} predicted fits: {r['fits']}")
                continue
            te = pct(r["pred_ms"], r["meas_ms"])
            acc["time"].append(te)
            print(f"{head} {r['meas_ms']:>9.1f} {r['pred_ms']:>9.1f} {te:>+7.1f} {r['comm_ms']:>8.2f} "
                  f"{mem_meas:>9.2f} {r['pred_mem_GiB']:>9.2f} {me:>+7.1f}")
    target = TARGET_PCT[transport]
    for mode, acc in sorted(errors.items()):
        t, m = [abs(e) for e in acc["time"]], [abs(e) for e in acc["mem"]]
        parts = [f"step time mean |error| {statistics.mean(t):.1f}%, max {max(t):.1f}%, "
                 f"{sum(e <= target for e in t)} of {len(t)} within {target:.0f}%"] if t else ["no timed shape"]
        if m:
            parts.append(f"memory mean |error| {statistics.mean(m):.1f}%, max {max(m):.1f}% over {len(m)}")
        role = ("development" if name in BUNDLES else "sealed, read once: development since" if name in READ_SEALED
                else "sealed, held out" if "sealed" in name else "not in the registered split")
        print(f"{mode} over {transport} ({role}): " + "; ".join(parts))
    print()
    return errors


def main(argv: list[str]) -> int:
    ap = ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("bundles", nargs="*", metavar="BUNDLE", help=f"bundle folders (default: {', '.join(BUNDLES)})")
    ap.add_argument("--transport", choices=("auto", "nvlink", "socket"), default="auto",
                    help="the collectives' transport of every bundle given (default: from the runs or the bundle's name)")
    ap.add_argument("--host-fit", metavar="FOLDER", default=str(MODE_HOST.relative_to(ROOT)),
                    help="the folder of hidden-128 decoder runs per mode that sets each mode's host cost (device_run.sh there)")
    ap.add_argument("--socket-card", metavar="CARD", default=CARDS[("socket", 2)],
                    help="the socket transport's collective card for 2-rank runs (4-rank runs keep the 4-rank card)")
    args = ap.parse_args(argv)
    CARDS[("socket", 2)] = args.socket_card
    host_folder = Path(args.host_fit) if Path(args.host_fit).is_absolute() else ROOT / args.host_fit
    if not host_folder.is_dir():
        print(f"error: --host-fit {args.host_fit}: no such folder", file=sys.stderr)
        return 1
    hosts = eager.fit_modes(host_folder)
    if hosts:
        fw_how = ("host per mode (" + host_folder.name + "): " + ", ".join(
            f"{m} {c * 1e6:.1f} us/kernel + {a * 1e3:.2f} ms/step" for m, (c, a, _) in hosts.items())
            + "; a mode without its own fit: no host cost (GPU-bound)")
    else:
        fw_how = f"no host fit in {host_folder}: GPU-bound only"
    status = 0
    for name in args.bundles or BUNDLES:
        bundle = Path(name) if Path(name).is_absolute() else ROOT / name
        if not bundle.is_dir():
            print(f"error: {name}: no such bundle (not collected yet?)", file=sys.stderr)
            status = 1
            continue
        runs = read_runs(bundle)
        if not runs:
            print(f"error: {name}: no llm-step runs with world_size {' or '.join(map(str, WORLDS))}", file=sys.stderr)
            status = 1
            continue
        transport, how = transport_of(bundle, runs, args.transport)
        for world in sorted({r.world for r in runs}):
            same = [r for r in runs if r.world == world]
            if print_bundle(name, same, transport, how, world, fw_how, hosts) is None:
                status = 1
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
