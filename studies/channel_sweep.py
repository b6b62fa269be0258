"""What one NCCL channel moves, by primitive (prints tables; not a test).

Reads calibration/h200x2-channels-2026-11-22 (2 x H200, NCCL 2.28, nccl-tests with NCCL_MIN/MAX_NCHANNELS = c):

1. bus bandwidth against the channel count at 1 GiB, out-of-place and in-place, CUDA graphs and host-launched;
2. the single-channel rates of NCCL's Simple primitives, solved from four logs and checked on the others.
   At 2 ranks a channel runs its primitives one after another (src/device/*.h), so its time per byte sent is
   the sum of its primitives' times: all_reduce sends 2 chunks per loop with send + recvReduceCopySend
   (+ recv when its buffers are not registered: host-launched or in place), reduce_scatter 1 with
   send + recvReduceCopy, all_gather 1 with copySend (or send in place) (+ recv unregistered). A chain op's two
   GPUs run concurrently, so it moves at its slower primitive;
3. reduce_scatter, all_gather, all_reduce at 4 GiB against NCCL_BUFFSIZE and NCCL_NTHREADS, and how much each
   op moves when all_reduce barely does (or moves alone);
4. sendrecv and alltoall below 4 MiB: LL as NCCL picks it, Simple forced (NCCL_P2P_LL_THRESHOLD=0), one p2p
   channel; next to the same machine's all_reduce, reduce and broadcast.

    python studies/channel_sweep.py
"""

import functools
from pathlib import Path

from simcluster.traces import nccl_tests

BUNDLE = Path(__file__).resolve().parents[1] / "calibration" / "h200x2-channels-2026-11-22"
CHANNELS = (1, 2, 4, 8, 16, 24)
GiB = 2**30


@functools.cache
def rows(name: str, folder: str = "channels") -> dict:
    return {r.size_bytes: r for r in nccl_tests.parse(BUNDLE / folder / f"{name}.txt").rows}


def busbw(name: str, size: int = GiB, inplace: bool = False, folder: str = "channels") -> float:
    """GB/s, out-of-place (nccl-tests' first block) or in-place."""
    row = rows(name, folder)[size]
    return (row.busbw_inplace_Bps if inplace else row.busbw_Bps) / 1e9


def channel_table():
    print("1. bus bandwidth at 1 GiB (GB/s) against NCCL channels; out-of-place / in-place")
    print(f"{'op':>15} {'launch':>6}" + "".join(f"{'c=' + str(c):>14}" for c in CHANNELS) + f"{'per channel, c=1':>18}")
    for op in ("all_reduce", "reduce_scatter", "all_gather", "reduce", "broadcast", "sendrecv"):
        for mode in ("graph", "host"):
            cells = []
            for c in CHANNELS:
                path = BUNDLE / "channels" / f"{op}-{mode}-c{c}.txt"
                cells.append(f"{busbw(path.stem):6.1f}/{busbw(path.stem, inplace=True):<6.1f}" if path.exists()
                             else " " * 13)
            if any(cell.strip() for cell in cells):
                print(f"{op:>15} {mode:>6}" + "".join(f"{cell:>14}" for cell in cells)
                      + f"{busbw(f'{op}-{mode}-c1'):18.2f}")


def primitive_rates():
    """Single-channel rates (GB/s) of the Simple primitives, solved from four logs, checked on the rest."""
    one = {name: 1 / busbw(f"{name}-c1") for name in ("all_reduce-graph", "all_reduce-host", "all_gather-graph",
                                                       "all_gather-host", "reduce_scatter-graph", "reduce-graph",
                                                       "broadcast-graph")}
    copy_send = 1 / one["all_gather-graph"]                      # registered all_gather: copySend alone
    recv = 1 / (one["all_gather-host"] - one["all_gather-graph"])  # unregistered all_gather adds a recv
    send_and_rrcs = 2 * one["all_reduce-graph"]                  # per 2 chunks: send + recvReduceCopySend
    recv_from_ar = 1 / (2 * one["all_reduce-host"] - send_and_rrcs)
    send = busbw("all_gather-graph-c1", inplace=True)            # in-place registered all_gather: send alone
    rrcs = 1 / (send_and_rrcs - 1 / send)
    rrc = 1 / (one["reduce_scatter-graph"] - 1 / send)
    print("\n2. single-channel Simple primitive rates, 2 ranks, GB/s per channel (bytes through the primitive / s)")
    print(f"   copySend (a local and a remote destination), registered all_gather      {copy_send:6.1f}")
    print(f"   send (one remote destination), in-place registered all_gather           {send:6.1f}")
    print(f"   recv (FIFO -> output, local), host all_gather - graph all_gather          {recv:6.1f}")
    print(f"   recv again, from host all_reduce - graph all_reduce                       {recv_from_ar:6.1f}")
    print(f"   recvReduceCopySend (two destinations), graph all_reduce - send            {rrcs:6.1f}")
    print(f"   recvReduceCopy (one local destination), reduce_scatter - send             {rrc:6.1f}")
    checks = (
        ("broadcast, graph, out of place: copySend then nothing", copy_send, busbw("broadcast-graph-c1")),
        ("broadcast, in place: send", send, busbw("broadcast-graph-c1", inplace=True)),
        ("all_gather, host, in place: send + recv", 1 / (1 / send + 1 / recv), busbw("all_gather-host-c1", inplace=True)),
        ("all_reduce, graph, in place (not registered): send + rrcs + recv", 2 / (1 / send + 1 / rrcs + 1 / recv),
         busbw("all_reduce-graph-c1", inplace=True)),
        ("reduce: the slower of send and recvReduceCopy", min(send, rrc), busbw("reduce-graph-c1")),
    )
    print("   checks, predicted from the rates above / measured (GB/s, 1 GiB, one channel):")
    for what, predicted, measured in checks:
        print(f"     {what:<66} {predicted:6.1f} / {measured:6.1f} ({100 * (predicted / measured - 1):+.1f}%)")
    print("   at 24 channels, 1 GiB (graph, out-of-place / in-place): " + ", ".join(
        f"{op} {busbw(f'{op}-graph-c24'):.0f}/{busbw(f'{op}-graph-c24', inplace=True):.0f}"
        for op in ("all_reduce", "reduce_scatter", "all_gather", "reduce", "broadcast")))


def fifo_table():
    print("\n3. bus bandwidth at 4 GiB (GB/s) against NCCL_BUFFSIZE (4 MiB is the default) and NCCL_NTHREADS")
    size = 4 * GiB
    for op, mode in (("all_reduce", "graph"), ("all_reduce", "host"), ("reduce_scatter", "graph"),
                     ("all_gather", "graph"), ("all_gather", "host")):
        cells = [f"{busbw(f'{op}-{mode}-buff{b}', size, folder='fifo'):7.1f}" for b in (4194304, 16777216, 67108864)]
        print(f"{op:>15} {mode:>6}  buffsize 4 / 16 / 64 MiB: {' '.join(cells)}")
    for op in ("all_reduce", "reduce_scatter", "all_gather", "reduce"):
        full = [busbw(f"{op}-graph-nt{t}", size, folder="fifo") for t in (256, 640)]
        single = [busbw(f"{op}-graph-nt{t}-c1", GiB, folder="fifo") for t in (256, 640)]
        print(f"{op:>15}  graph  threads 256 / 640: {full[0]:6.1f} / {full[1]:6.1f} at 24 channels, "
              f"{single[0]:5.1f} / {single[1]:5.1f} on one channel (1 GiB)")
    print("   what an all_reduce log does not see, 24 channels, 4 GiB, graph (busbw change against NCCL's default;\n"
          "   NCCL_NTHREADS=640 is clamped to Simple's maximum, 512, the default: src/graph/tuning.cc getNthreads):")
    for what, changed, default in (("NCCL_BUFFSIZE 64 MiB", "buff67108864", "buff4194304"),
                                   ("NCCL_NTHREADS 256", "nt256", "nt640")):
        moves = []
        for op in ("all_reduce", "reduce_scatter", "all_gather", "reduce"):
            if (BUNDLE / "fifo" / f"{op}-graph-{changed}.txt").exists():
                ratio = busbw(f"{op}-graph-{changed}", size, folder="fifo") / busbw(f"{op}-graph-{default}", size,
                                                                                     folder="fifo")
                moves.append(f"{op} {100 * (ratio - 1):+.1f}%")
        print(f"     {what:<22} " + ", ".join(moves))


def p2p_table():
    print("\n4. time (us) below 4 MiB, CUDA graphs: p2p as NCCL picks (LL to 512 KiB per peer), Simple forced,"
          " one p2p channel")
    names = ("sendrecv-graph-small", "sendrecv-graph-small-simple", "sendrecv-graph-small-p1", "alltoall-graph-small",
             "alltoall-graph-small-simple", "alltoall-graph-small-p1", "all_reduce-graph-small",
             "reduce-graph-small", "broadcast-graph-small")
    times = {name: {s: r.time_s * 1e6 for s, r in rows(name).items()} for name in names}
    print(f"{'size':>9}" + "".join(f"{n.replace('-graph-small', '').replace('-simple', ' Simple'):>17}" for n in names))
    for size in sorted(times[names[0]]):
        print(f"{size:>9}" + "".join(f"{times[n][size]:17.2f}" for n in names))


def main():
    channel_table()
    primitive_rates()
    fifo_table()
    p2p_table()


if __name__ == "__main__":
    import study_args  # an unknown argument refused before the study runs
    study_args.check()
    main()
