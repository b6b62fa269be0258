"""Every rank's host issue time of a shape's timed steps (issue 44): gathered to every rank after the timed loop.

llm_step.run_shape records, per timed step, the host time to issue the step (`host_issue_s`: until the step's last
call returns, blocking waits included) and the step itself (`step_times_s`, between two device synchronisations), on
every rank; the document is rank 0's. `gather` collects each rank's lists with torch.distributed.all_gather_object
(collective: every rank calls it, once a shape, after the timed steps and the profiled ones, never inside them) and
`fields` turns them into the record's keys:

    host_issue_s_by_rank        [[issue of step 1, 2, ...] of rank 0, ... of rank 1, ...]   seconds
    step_times_s_by_rank        the same for the steps (each rank's own clock, its own synchronisations)
    host_issue_median_s_by_rank each rank's median issue (null where a rank has no timed steps, e.g. out of memory)
    slowest_issue_rank          the rank with the largest median issue (null when none has one)

and, where the runner measured them (llm_step, host_cpu.py: the host time without the waits that sleep),
    host_cpu_s_by_rank          per rank, per timed step: the issuing threads' CPU seconds over the issue
    process_cpu_s_by_rank       the same for the whole process (NCCL's threads too)
    host_cpu_median_s_by_rank   each rank's median host_cpu_s (null where none)
    thread_cpu_s_by_rank        per rank, every thread's CPU seconds over the timed steps by thread name
    profiled_host_by_rank       per rank, its profiled step's issue window less its waits (host_cpu.profiled_host; null
                                where that rank profiled nothing)

torch is passed in (imported by the runner's main only).
"""

from __future__ import annotations

import statistics

CPU_KEYS = ("host_cpu_s", "process_cpu_s", "thread_cpu_s")


def own(record: dict) -> dict:
    """This rank's part: its timed steps' issue and step times (empty lists where the shape did not run), and its CPU
    times where the runner recorded them."""
    part = {"host_issue_s": list(record.get("host_issue_s") or []), "step_times_s": list(record.get("step_times_s") or [])}
    part |= {k: record[k] for k in CPU_KEYS if k in record}
    if "host_cpu_s" in record:
        part["profiled_host"] = (record.get("profile") or {}).get("host")
    return part


def fields(parts: list[dict]) -> dict:
    """The record's keys from the ranks' parts, in rank order."""
    issues = [p["host_issue_s"] for p in parts]
    medians = [statistics.median(x) if x else None for x in issues]
    known = [(m, r) for r, m in enumerate(medians) if m is not None]
    out = {"host_issue_s_by_rank": issues, "step_times_s_by_rank": [p["step_times_s"] for p in parts],
           "host_issue_median_s_by_rank": medians, "slowest_issue_rank": max(known)[1] if known else None}
    if any("host_cpu_s" in p for p in parts):   # llm_step's CPU times (host_cpu.py); absent: the keys are left out
        for key in CPU_KEYS:
            out[f"{key}_by_rank"] = [p.get(key) or ({} if key == "thread_cpu_s" else []) for p in parts]
        out["host_cpu_median_s_by_rank"] = [statistics.median(x) if x else None for x in out["host_cpu_s_by_rank"]]
        out["profiled_host_by_rank"] = [p.get("profiled_host") for p in parts]
    return out


def gather(torch, record: dict, world: int) -> dict:
    """Every rank's issue and step times of `record` (collective over the default group when world > 1)."""
    mine = own(record)
    if world <= 1:
        return fields([mine])
    parts: list = [None] * world
    torch.distributed.all_gather_object(parts, mine)
    return fields(parts)
