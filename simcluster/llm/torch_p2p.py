"""The sends and receives of torch.distributed.pipelining's lowered schedules (ScheduleInterleaved1F1B, torch 2.11), as
the pipeline iteration runs them (llm/simulate.py and its max-plus twin llm/maxplus.py, PipelineWork.torch_p2p).

Torch lowers a multi-chunk schedule's compute order (each rank's forwards and backwards; its Interleaved1F1B order equals
simulate.schedule's at every shape read, micro-batches a multiple of pp) into one list of actions per rank, and places
the communication in lockstep (schedules._add_send_recv): the ranks take turns in rank order, each scheduling its next
action when its input is already on the way (its receive placed, or the producer ran on the same rank); a scheduled
compute action is followed by its send on its own rank and by the matching receive appended to the consumer rank's
list at that moment. The list's other actions take a turn each: schedules._add_unshard_reshard (max_active_stages 3,
its default) keeps the next three chunks the rank computes unsharded, an UNSHARD when one enters that window and a
RESHARD when one leaves it (with 2 or 3 chunks: one UNSHARD per chunk first, a RESHARD after a chunk's last backward;
with 4 or more the rank swaps chunks as it goes), and _add_reduce_grad a REDUCE_GRAD after a chunk's last backward. So a
receive sits where the lockstep put it, often before an unrelated compute action (rank 3 of 4, 2 chunks: 7RECV_F1 before
7B0). The lists this writes equal, action for action, every rank's annotations in the session-30 timelines (4 x H200;
0.5b and 2b at 8 micro-batches, 0.5b at 16; studies/pp_timelines.py).
They also equal the lists torch 2.13's own lowering writes (_add_unshard_reshard, _add_reduce_grad, _add_send_recv, run
outside the tests: CI has no torch) at pp x chunks x micro-batches 2x2x4, 2x3x6, 2x4x8, 4x2x4, 4x2x8, 4x2x12, 4x3x8,
4x4x8, 8x2x16 and 8x4x16.

At run time every send and receive of a rank is one NCCL kernel on that rank's one NCCL stream, in list order (the
timelines: one stream, 48 / 64 / 64 / 48 SendRecv kernels per rank and step at 8 micro-batches). A kernel starts when
the stream is free and the compute issued before it is done (the NCCL stream waits for the compute stream at posting);
a send and its receive rendezvous, so both end p2p_s after the later of the two starts. A send waiting for its peer
holds the stream, and the rank's next receives wait behind it. A compute action waits for the end of its receive; the
step's end waits for the rank's last sends (the schedule waits for its send works before returning).
Not modelled: the compute the waiting kernels slow down beside them (the timelines: x1.14-1.43 on the kernels that run
beside one; docs/models/llm-findings.md, session 30).
"""

from __future__ import annotations

import functools
from collections import deque

from simcluster.errors import SimclusterError


@functools.lru_cache(maxsize=256)
def program(pp: int, chunks: int, orders: tuple[tuple[tuple, ...], ...]) -> tuple[tuple[tuple, ...], ...]:
    """Each rank's actions in torch's lowered order, from each rank's compute order (`orders`: simulate.schedule's
    (F|B, chunk, micro-batch) per rank): ("F"|"B", chunk, micro-batch) for compute, ("S"|"R", tensor, posted) for a send
    or receive of `tensor` (("F", the virtual stage that consumes it, mb) or ("B", that stage, mb): the keys of
    simulate's arrived events), `posted` the number of the rank's compute actions listed before it."""
    last = pp * chunks - 1
    todo = {r: deque(_slots(pp, chunks, r, [(kind, c * pp + r, i) for kind, c, i in orders[r]])) for r in range(pp)}
    lists: dict[int, list] = {r: [] for r in range(pp)}
    computed = [0] * pp
    placed: list[set] = [set() for _ in range(pp)]      # the actions and receives already in each rank's list
    while any(todo.values()):
        progress = False
        for r in range(pp):
            if not todo[r]:
                continue
            if todo[r][0] is None:   # an UNSHARD, REDUCE_GRAD or RESHARD: the rank's turn passes
                todo[r].popleft()
                progress = True
                continue
            kind, vs, i = todo[r][0]
            if kind == "F" and vs > 0 and not {("R", ("F", vs, i)), ("F", vs - 1, i)} & placed[r]:
                continue
            if kind == "B" and vs < last and not {("R", ("B", vs, i)), ("B", vs + 1, i)} & placed[r]:
                continue
            lists[r].append((kind, vs // pp, i))
            placed[r].add((kind, vs, i))
            computed[r] += 1
            out = ("F", vs + 1, i) if kind == "F" and vs < last else ("B", vs - 1, i) if kind == "B" and vs > 0 else None
            if out is not None:
                lists[r].append(("S", out, computed[r]))
                dst = out[1] % pp
                lists[dst].append(("R", out, computed[dst]))
                placed[dst].add(("R", out))
            todo[r].popleft()
            progress = True
        if not progress:
            raise SimclusterError(f"torch's lowering cannot place the sends and receives of pp {pp}, {chunks} chunks")
    return tuple(tuple(lists[r]) for r in range(pp))


def _slots(pp: int, chunks: int, rank: int, order: list, max_active: int = 3) -> list:
    """The rank's compute order as torch's lockstep sees it (schedules._add_unshard_reshard, max_active_stages 3 by
    default, then _add_reduce_grad): its idle slots dropped; before each compute action a RESHARD for every active chunk
    that is not among the next `max_active` distinct chunks to compute, then an UNSHARD for every one of those not yet
    active; a REDUCE_GRAD after each chunk's last backward (each takes a turn; None here). With chunks <= 3 this is one
    UNSHARD per chunk first and a RESHARD before the action after the chunk's last backward; with 4 or more the rank
    swaps chunks in and out as it goes."""
    last_backward = {vs: n for n, (kind, vs, _) in enumerate(order) if kind == "B"}
    out: list = []
    active: set = set()
    for n, (action, upcoming) in enumerate(zip(order, _next_chunks(order, max_active), strict=True)):
        out += [None] * (len(active - upcoming) + len(upcoming - active))
        active = upcoming
        out.append(action)
        if action[0] == "B" and last_backward[action[1]] == n:
            out.append(None)
    return out + [None] * len(active)


def _next_chunks(order: list, count: int) -> list[set]:
    """For each position of the rank's order, the first `count` distinct virtual stages computed from there on: one
    backward pass keeping the distinct stages ahead in order of their next use (a rank holds few chunks)."""
    ahead: list = []
    out: list[set] = []
    for _, vs, _ in reversed(order):
        ahead = [vs] + [c for c in ahead if c != vs]
        out.append(set(ahead[:count]))
    return out[::-1]


def comm_ops(pp: int, chunks: int, orders: tuple[tuple[tuple, ...], ...]) -> tuple[tuple[tuple, ...], ...]:
    """Each rank's sends and receives in stream order: (side "S"|"R", tensor, compute actions that precede it)."""
    return tuple(tuple(op for op in ops if op[0] in ("S", "R")) for ops in program(pp, chunks, orders))
