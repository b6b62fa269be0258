"""The host's own issue time without blocking waits (issue 44, session 42): the CPU time of the threads that issue a step.

llm_step's `host_issue_s` (host_issue.py) is the wall time until the step's last call returns: where the GPU is the
bottleneck it includes the waits (a launch blocking on a full launch queue, a synchronising call), so the host's own
pacing is never seen there. Two measures beside it, over the same window of every timed step:

    host_cpu_s      CPU time of the issuing threads, summed: the main thread (forward, optimizer) and autograd's device
                    threads (a CUDA backward runs there; torch names them pt_autograd_<device>). A thread asleep on a
                    condition (the main thread during backward) costs nothing; a wait that spins costs its wall time.
                    Under the CUDA default (CU_CTX_SCHED_AUTO: spin while contexts <= cores) a synchronising call spins;
                    `--sched blocking` sets CU_CTX_SCHED_BLOCKING_SYNC on the primary context before torch creates it
                    (set_sched), so synchronising calls sleep. The registered set calibration/h200x2-eager-hostwait-
                    2026-11-30 (KEEP NONE) found the GPU-bound rows' CPU time about the same under both flags (fsdp 0.5b
                    122-129 ms, single 0.5b 83 ms against the tiny twins' 122 / 50): the waits still read on the CPU
                    clock, or the excess is per-op host work that grows with tensor size (the backward thread
                    pt_autograd_0 carries it); the two cannot be told apart from these runs. So host_cpu_s is not the
                    host's own issue time where the GPU is the bottleneck. 2 of 4 blocking runs aborted at process exit
                    (after their documents were written); not shown to be the flag's fault.
    process_cpu_s   the process's CPU time over the window (every thread: NCCL's proxy and watchdog threads too)

and per shape `thread_cpu_s` (every thread's CPU seconds over all timed steps, by thread name: which threads work). Thread
clocks are the kernel's per-thread CPU clocks (clock_gettime on the clock id of a thread id: Linux only; elsewhere the
main thread's time.thread_time_ns alone, said in `issuing_threads`).
"""

from __future__ import annotations

import os
import time
from pathlib import Path

SCHED = {"auto": 0, "spin": 1, "yield": 2, "blocking": 4}   # CU_CTX_SCHED_* (cuda.h)
TASKS = Path("/proc/self/task")


def set_sched(ordinal: int, sched: str) -> dict:
    """The primary context's scheduling flag of CUDA device `ordinal` (CUDA_VISIBLE_DEVICES numbering) set through the
    driver API (libcuda.so.1: cuInit, cuDeviceGet, cuDevicePrimaryCtxSetFlags_v2), before torch creates the context; the
    record says what the driver holds after (cuDevicePrimaryCtxGetState) and whether the context was already active.
    `auto` touches nothing. Any failure is recorded, not raised (the step runs with the default)."""
    if sched == "auto":
        return {"requested": "auto", "set": False}
    import ctypes

    try:
        cu = ctypes.CDLL("libcuda.so.1")
        dev, flags, active = ctypes.c_int(), ctypes.c_uint(), ctypes.c_int()
        codes = [cu.cuInit(0), cu.cuDeviceGet(ctypes.byref(dev), ordinal)]
        codes += [cu.cuDevicePrimaryCtxGetState(dev, ctypes.byref(flags), ctypes.byref(active))]
        was_active = bool(active.value)
        set_flags = getattr(cu, "cuDevicePrimaryCtxSetFlags_v2", None) or cu.cuDevicePrimaryCtxSetFlags   # cuda.h's name
        codes += [set_flags(dev, SCHED[sched]),
                  cu.cuDevicePrimaryCtxGetState(dev, ctypes.byref(flags), ctypes.byref(active))]
    except (OSError, AttributeError) as exc:
        return {"requested": sched, "set": False, "error": f"{type(exc).__name__}: {exc}"[:200]}
    return {"requested": sched, "set": all(c == 0 for c in codes) and (flags.value & 7) == SCHED[sched],
            "flags": flags.value, "active_before": was_active, "cu_results": codes}


def _clock(tid: int) -> int:
    """The kernel's CPU-time clock id of thread `tid` of this process (CPUCLOCK_SCHED, per thread)."""
    return ((~tid) << 3) | 6


def thread_names() -> dict[int, str]:
    """{thread id: name} of this process's threads ({} where /proc is not there)."""
    out = {}
    try:
        for task in TASKS.iterdir():
            try:
                out[int(task.name)] = (task / "comm").read_text().strip()
            except (OSError, ValueError):
                continue
    except OSError:
        return {}
    return out


def _cpu_ns(tid: int) -> int | None:
    try:
        return time.clock_gettime_ns(_clock(tid))
    except (OSError, OverflowError, AttributeError):
        return None


class IssueClock:
    """CPU clocks of the issuing threads: found with `find()` after the warm-up steps (autograd's threads start at the
    first backward); `start()` then `stop()` around each step's issue give (host_cpu_s, process_cpu_s)."""

    def __init__(self):
        self.tids: list[int] = []
        self.names: list[str] = []
        self._t0: tuple[int, int] = (0, 0)
        self._all0: dict[int, int] = {}

    def find(self) -> None:
        main = threading_native_id()
        names = thread_names()
        self.tids = [t for t, n in sorted(names.items()) if t == main or n.startswith("pt_autograd")]
        if not self.tids or _cpu_ns(main) is None:   # no /proc or no per-thread clocks: the main thread alone
            self.tids = []
        self.names = [names.get(t, "?") for t in self.tids] or ["main (time.thread_time_ns)"]
        self._all0 = {t: ns for t in names if (ns := _cpu_ns(t)) is not None}
        self._names_all = names

    def _issuing_ns(self) -> int:
        if not self.tids:
            return time.thread_time_ns()
        return sum(_cpu_ns(t) or 0 for t in self.tids)

    def start(self) -> None:
        self._t0 = (self._issuing_ns(), time.process_time_ns())

    def stop(self) -> tuple[float, float]:
        return (self._issuing_ns() - self._t0[0]) * 1e-9, (time.process_time_ns() - self._t0[1]) * 1e-9

    def by_thread(self) -> dict[str, float]:
        """Every thread's CPU seconds since find(), summed by thread name (threads started since are left out)."""
        out: dict[str, float] = {}
        for t, ns0 in self._all0.items():
            ns = _cpu_ns(t)
            if ns is not None:
                name = self._names_all.get(t, "?")
                out[name] = round(out.get(name, 0.0) + (ns - ns0) * 1e-9, 6)
        return dict(sorted(out.items(), key=lambda kv: -kv[1]))


def threading_native_id() -> int:
    """This (the main) thread's kernel thread id."""
    import threading

    return threading.get_native_id() if hasattr(threading, "get_native_id") else os.getpid()


def timed_steps(step, sync, steps: int):
    """llm_step's timed loop: per step the wall time between two synchronisations, the host issue time (until step()
    returns: close to the step where host-bound) and (host_cpu_s, process_cpu_s) over the issue; returns (steps' times,
    issue times, CPU pairs, the IssueClock, the last step's return value)."""
    times, issue, cpu, clk, out = [], [], [], IssueClock(), None
    clk.find()   # the main thread and autograd's (started by the warm-up's backward)
    for _ in range(steps):
        clk.start()
        t0 = time.perf_counter()
        out = step()
        issue.append(time.perf_counter() - t0)
        cpu.append(clk.stop())
        sync()
        times.append(time.perf_counter() - t0)
    return times, issue, cpu, clk, out


SYNC_CALLS = ("cudaDeviceSynchronize", "cudaStreamSynchronize", "cudaEventSynchronize", "cuCtxSynchronize",
              "cuStreamSynchronize", "cuEventSynchronize")
LAUNCH_FREE_S = 50e-6   # a launch call longer than this waited (queue space) for the rest: a free launch is ~5-20 us


def profiled_host(events: list[dict], steps: int) -> dict:
    """The host time of a torch.profiler trace's steps with the waits taken out (candidates b and c of the hostwait set):
    the issue window (first to last CPU op of the threads that ran CPU ops: main and autograd's), less the synchronising
    CUDA calls inside it (SYNC_CALLS) and each launch call's time beyond LAUNCH_FREE_S (`host_s`, per step); and the
    launch loop up to the first synchronising call: its seconds and the launches before it (`to_first_sync_s`,
    `launches_to_first_sync`; both None where no call in the window synchronises: there is no first sync to stop at,
    and the whole window would only repeat `window_s`). Seconds."""
    ops = [e for e in events if e.get("cat") == "cpu_op" and e.get("ph") == "X"]
    if not ops or steps < 1:
        return {}
    tids = {e.get("tid") for e in ops}
    lo, hi = min(e["ts"] for e in ops), max(e["ts"] + e.get("dur", 0) for e in ops)
    calls = sorted((e for e in events if e.get("cat") in ("cuda_runtime", "cuda_driver") and e.get("ph") == "X"
                    and e.get("tid") in tids and lo <= e.get("ts", -1) <= hi), key=lambda e: e["ts"])
    syncs = [e for e in calls if e.get("name") in SYNC_CALLS]
    launches = [e for e in calls if "Launch" in str(e.get("name"))]
    sync_us = sum(e.get("dur", 0) for e in syncs)
    wait_us = sum(max(0.0, e.get("dur", 0) - LAUNCH_FREE_S * 1e6) for e in launches)
    first = syncs[0]["ts"] if syncs else None
    return {"window_s": (hi - lo) * 1e-6 / steps, "sync_s": sync_us * 1e-6 / steps, "launch_wait_s": wait_us * 1e-6 / steps,
            "host_s": (hi - lo - sync_us - wait_us) * 1e-6 / steps, "launches": len(launches) / steps,
            "sync_calls": len(syncs) / steps, "to_first_sync_s": None if first is None else (first - lo) * 1e-6,
            "launches_to_first_sync": None if first is None else sum(1 for e in launches if e["ts"] < first)}
