"""torch.distributed.pipelining's lowered sends and receives (llm/torch_p2p.py): the order read from torch 2.11's timelines
(session 30, 4 x H200, ScheduleInterleaved1F1B, 2 chunks per rank, 8 micro-batches) and the NCCL stream the DES runs."""

import pytest

from simcluster.llm.simulate import PipelineWork, StageWork, Task, schedule, simulate_iteration
from simcluster.llm.torch_p2p import comm_ops, program

# the PP: annotations of ranks 1 and 3 in the 0.5b timeline (studies/pp_timelines.py), UNSHARD / REDUCE_GRAD / RESHARD left out
RANK1 = ("1RECV_F0 1F0 1SEND_F0 1RECV_F1 1F1 1SEND_F1 1RECV_F2 1F2 1SEND_F2 1RECV_F3 1F3 1SEND_F3 5RECV_F0 5F0 5SEND_F0 "
         "5RECV_F1 5F1 5SEND_F1 5RECV_F2 5F2 5SEND_F2 5RECV_F3 5F3 5SEND_F3 5RECV_B0 1RECV_F4 1F4 1SEND_F4 1RECV_F5 5B0 "
         "5SEND_B0 5RECV_B1 1RECV_F6 1F5 1SEND_F5 5B1 5SEND_B1 5RECV_B2 1RECV_F7 1F6 1SEND_F6 5B2 5SEND_B2 5RECV_B3 5RECV_F4 "
         "1F7 1SEND_F7 5B3 5SEND_B3 1RECV_B0 5RECV_F5 5F4 5SEND_F4 1B0 1SEND_B0 1RECV_B1 5RECV_F6 5F5 5SEND_F5 1B1 1SEND_B1 "
         "1RECV_B2 5RECV_F7 5F6 5SEND_F6 1B2 1SEND_B2 1RECV_B3 5F7 5SEND_F7 1B3 1SEND_B3 5RECV_B4 5B4 5SEND_B4 5RECV_B5 5B5 "
         "5SEND_B5 5RECV_B6 5B6 5SEND_B6 5RECV_B7 5B7 5SEND_B7 1RECV_B4 1B4 1SEND_B4 1RECV_B5 1B5 1SEND_B5 1RECV_B6 1B6 "
         "1SEND_B6 1RECV_B7 1B7 1SEND_B7")
RANK3 = ("3RECV_F0 3F0 3SEND_F0 3RECV_F1 3F1 3SEND_F1 3RECV_F2 3F2 3SEND_F2 3RECV_F3 3F3 3SEND_F3 7RECV_F0 7F0 7RECV_F1 7B0 "
         "7SEND_B0 7RECV_F2 7F1 7B1 7SEND_B1 7RECV_F3 7F2 7B2 7SEND_B2 3RECV_F4 7F3 3RECV_B0 7B3 7SEND_B3 3RECV_F5 3F4 3SEND_F4 "
         "3RECV_B1 3B0 3SEND_B0 3RECV_F6 3F5 3SEND_F5 3RECV_B2 3B1 3SEND_B1 3RECV_F7 3F6 3SEND_F6 3RECV_B3 3B2 3SEND_B2 "
         "7RECV_F4 3F7 3SEND_F7 3B3 3SEND_B3 7RECV_F5 7F4 7B4 7SEND_B4 7RECV_F6 7F5 7B5 7SEND_B5 7RECV_F7 7F6 3RECV_B4 7B6 "
         "7SEND_B6 7F7 3RECV_B5 7B7 7SEND_B7 3RECV_B6 3RECV_B7 3B4 3SEND_B4 3B5 3SEND_B5 3B6 3SEND_B6 3B7 3SEND_B7")


def _orders(pp, chunks, m):
    return tuple(tuple(schedule(pp, chunks, m, r)) for r in range(pp))


def _named(op, rank: int, pp: int) -> str:
    if op[0] in ("F", "B"):
        return f"{op[1] * pp + rank}{op[0]}{op[2]}"
    kind, vs, i = op[1]
    return f"{vs - 1 if kind == 'F' else vs + 1}SEND_{kind}{i}" if op[0] == "S" else f"{vs}RECV_{kind}{i}"


@pytest.mark.parametrize("rank,seen", [(1, RANK1), (3, RANK3)])
def test_the_lowered_order_is_torchs_as_the_timelines_show_it(rank, seen):
    ops = program(4, 2, _orders(4, 2, 8))[rank]
    assert " ".join(_named(op, rank, 4) for op in ops) == seen


def test_every_send_has_its_receive_on_the_consumer_rank():
    for pp, chunks, m in ((4, 2, 8), (4, 2, 16), (2, 3, 4), (3, 2, 6), (4, 2, 4)):
        streams = comm_ops(pp, chunks, _orders(pp, chunks, m))
        sends = {t for ops in streams for side, t, _ in ops if side == "S"}
        for r, ops in enumerate(streams):
            for side, tensor, _ in ops:
                if side == "R":
                    assert tensor in sends and tensor[1] % pp == r
        # a send for every chunk boundary but the model's ends: 2 (pp chunks - 1) per micro-batch
        assert len(sends) == 2 * (pp * chunks - 1) * m


def _work(torch_p2p: bool, p2p_s: float = 0.002) -> PipelineWork:
    def task(s):
        return Task(s, {"compute": s, "tp": 0.0, "cp": 0.0, "ep": 0.0, "dp": 0.0, "host": 0.0})
    stages = tuple(StageWork((task(0.004), task(0.004 + 0.002 * (s == 3))), (task(0.008), task(0.008 + 0.004 * (s == 3))))
                   for s in range(4))
    return PipelineWork(stages, 8, p2p_s, torch_p2p=torch_p2p)


def test_the_des_runs_one_nccl_kernel_per_send_and_receive_as_the_timelines_count_them():
    """48 / 64 / 64 / 48 SendRecv kernels per rank and step (the 0.5b and 2b timelines, 4 ranks, 2 chunks, 8 micro-batches)."""
    spans = simulate_iteration(_work(True), 0, True).timeline
    per_rank = [sum(1 for x in spans if x.lane == "nccl" and x.process == f"stage {s}") for s in range(4)]
    assert per_rank == [48, 64, 64, 48]


def test_a_send_waiting_for_its_peer_delays_the_step():
    """The same work with each boundary tensor on its own send stream (Megatron's path) is faster: torch's receives
    wait behind sends on one stream, and are posted where the lockstep placed them."""
    fifo, free = simulate_iteration(_work(True), 0, False), simulate_iteration(_work(False), 0, False)
    assert fifo.step_time_s > free.step_time_s * 1.02
    assert fifo.breakdown["pipeline_bubble"] + fifo.breakdown["exposed_pp_comm"] > \
        free.breakdown["pipeline_bubble"] + free.breakdown["exposed_pp_comm"]


def test_a_send_ends_no_earlier_than_p2p_s_after_its_receive_starts():
    """The rendezvous: a send and its receive both end p2p_s after the later of their two starts. With the last stage
    five times slower than the others, the earlier stages' sends are posted long before the last stage posts their
    receives, so a send that ended p2p_s after its own start would end before its receive could start. The DES's NCCL
    spans must show every pair ending together, p2p_s after the later start; the recurrence (llm/maxplus.py) must give
    the DES's step on the same work, where a send's p2p_s (0.02 s, five forwards of the fast stages) holds its stream
    long enough for the rendezvous to move the step (2.04 s; 1.92 s with sends that end p2p_s after their own start)."""
    from simcluster.llm.maxplus import evaluate_iteration

    p2p_s = 0.02

    def task(s):
        return Task(s, {"compute": s, "tp": 0.0, "cp": 0.0, "ep": 0.0, "dp": 0.0, "host": 0.0})
    stages = tuple(StageWork((task(0.004 * (1 + 4 * (s == 3))),) * 2, (task(0.008 * (1 + 4 * (s == 3))),) * 2)
                   for s in range(4))
    work = PipelineWork(stages, 8, p2p_s, torch_p2p=True)
    result = simulate_iteration(work, 0, True)
    spans = {}
    for x in result.timeline:
        if x.lane == "nccl":
            side, tensor = x.name.split(" ", 1)
            spans.setdefault(tensor, {})[side] = (x.start_s, x.end_s)
    assert len(spans) == 2 * (4 * 2 - 1) * 8
    late = 0
    for tensor, pair in spans.items():
        (send_start, send_end), (recv_start, recv_end) = pair["send"], pair["recv"]
        assert send_end == pytest.approx(recv_end, abs=1e-12), tensor
        assert send_end == pytest.approx(max(send_start, recv_start) + p2p_s, abs=1e-12), tensor
        late += recv_start > send_start + p2p_s
    assert late > 0, "no send waited for its receive: the test's pipeline does not exercise the rendezvous"
    assert evaluate_iteration(work).step_time_s == pytest.approx(result.step_time_s, rel=1e-12)
    assert result.step_time_s == pytest.approx(2.04, rel=1e-9)


def test_with_four_chunks_a_rank_keeps_three_active_as_torch_does():
    """torch's _add_unshard_reshard (max_active_stages 3) then _add_reduce_grad, on rank 0 of pp 2, 4 chunks (virtual
    stages 0 2 4 6), 2 micro-batches; its compute order F0.0 F0.1 F2.0 F2.1 F4.0 F4.1 F6.0 F6.1 B6.0 B6.1 B4.0 B4.1 B2.0
    B2.1 B0.0 B0.1. Before each action the next three distinct stages ahead are kept active:
      F0.0: ahead {0, 2, 4}: UNSHARD 0 2 4 (3 turns)          F0.1: same, none
      F2.0: ahead {2, 4, 6}: RESHARD 0, UNSHARD 6 (2 turns)   F2.1 .. B6.0: same set, none
      B6.1: the last backward of 6: REDUCE_GRAD after it (1)
      B4.0: ahead {4, 2, 0}: RESHARD 6, UNSHARD 0 (2)         B4.1, then REDUCE_GRAD (1)
      B2.0: ahead {2, 0}: RESHARD 4 (1)                       B2.1, then REDUCE_GRAD (1)
      B0.0: ahead {0}: RESHARD 2 (1)                          B0.1, then REDUCE_GRAD (1), RESHARD 0 at the end (1)
    (The one-UNSHARD-per-chunk placement would give 4 turns first, none at F2.0 and two after every chunk's last
    backward.)"""
    from simcluster.llm.torch_p2p import _slots

    order = [(kind, c * 2, i) for kind, c, i in schedule(2, 4, 2, 0)]
    turns = " ".join("-" if a is None else f"{a[0]}{a[1]}.{a[2]}" for a in _slots(2, 4, 0, order))
    assert turns == ("- - - F0.0 F0.1 - - F2.0 F2.1 F4.0 F4.1 F6.0 F6.1 B6.0 B6.1 - - - B4.0 B4.1 - - B2.0 B2.1 - - "
                     "B0.0 B0.1 - -")
