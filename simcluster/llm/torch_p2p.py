"""The sends and receives of torch.distributed.pipelining's lowered schedules (ScheduleInterleaved1F1B, torch 2.11), as
the pipeline iteration runs them (llm/simulate.py and its max-plus twin llm/maxplus.py, PipelineWork.torch_p2p).

Torch lowers a multi-chunk schedule's compute order (each rank's forwards and backwards; its Interleaved1F1B order equals
simulate.schedule's at every shape read, micro-batches a multiple of pp) into one list of actions per rank, and places
the communication in lockstep (schedules._add_send_recv): the ranks take turns in rank order, each scheduling its next
action when its input is already on the way (its receive placed, or the producer ran on the same rank); a scheduled
compute action is followed by its send on its own rank and by the matching receive appended to the consumer rank's
list at that moment. The list's other actions (one UNSHARD per chunk first, REDUCE_GRAD and RESHARD after a chunk's
last backward) take a turn each. So a receive sits where the lockstep put it, often before an unrelated compute action
(rank 3 of 4, 2 chunks: 7RECV_F1 before 7B0). The lists this writes equal, action for action, every rank's
annotations in the session-30 timelines (4 x H200; 0.5b and 2b at 8 micro-batches, 0.5b at 16; studies/pp_timelines.py).

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


@functools.lru_cache(maxsize=256)
def program(pp: int, chunks: int, orders: tuple[tuple[tuple, ...], ...]) -> tuple[tuple[tuple, ...], ...]:
    """Each rank's actions in torch's lowered order, from each rank's compute order (`orders`: simulate.schedule's
    (F|B, chunk, micro-batch) per rank): ("F"|"B", chunk, micro-batch) for compute, ("S"|"R", tensor, posted) for a send
    or receive of `tensor` (("F", the virtual stage that consumes it, mb) or ("B", that stage, mb): the keys of
    simulate's arrived events), `posted` the number of the rank's compute actions listed before it."""
    last = pp * chunks - 1
    todo = {r: _slots(pp, chunks, r, [(kind, c * pp + r, i) for kind, c, i in orders[r]]) for r in range(pp)}
    lists: dict[int, list] = {r: [] for r in range(pp)}
    computed = [0] * pp
    placed: list[set] = [set() for _ in range(pp)]      # the actions and receives already in each rank's list
    while any(todo.values()):
        progress = False
        for r in range(pp):
            if not todo[r]:
                continue
            if todo[r][0] is None:   # an UNSHARD, REDUCE_GRAD or RESHARD: the rank's turn passes
                todo[r].pop(0)
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
            todo[r].pop(0)
            progress = True
        if not progress:
            raise ValueError(f"torch's lowering cannot place the sends and receives of pp {pp}, {chunks} chunks")
    return tuple(tuple(lists[r]) for r in range(pp))


def _slots(pp: int, chunks: int, rank: int, order: list) -> list:
    """The rank's compute order as torch's lockstep sees it: its idle slots dropped (schedules._add_unshard_reshard), one
    UNSHARD per chunk first, REDUCE_GRAD and RESHARD after each chunk's last backward (each takes a turn; None here)."""
    last_backward = {vs: n for n, (kind, vs, _) in enumerate(order) if kind == "B"}
    out: list = [None] * chunks
    for n, action in enumerate(order):
        out.append(action)
        if last_backward.get(action[1]) == n and action[0] == "B":
            out += [None, None]
    return out


def comm_ops(pp: int, chunks: int, orders: tuple[tuple[tuple, ...], ...]) -> tuple[tuple[tuple, ...], ...]:
    """Each rank's sends and receives in stream order: (side "S"|"R", tensor, compute actions that precede it)."""
    return tuple(tuple(op for op in ops if op[0] in ("S", "R")) for ops in program(pp, chunks, orders))
