"""gpu-micro's measuring instruments: nvidia-smi clocks (`clocks`, `ClockSampler`), the median timer (`Timer`: CUDA
events on a GPU, perf_counter on a CPU; back to back or interleaved), the memory-bound work run between interleaved
calls (`Interleaver`) and the two timing conditions of a GEMM sweep (`both_conditions`). torch is passed in, never
imported here. The sections that use them are runner/gpu_micro.py."""

from __future__ import annotations

import math
import statistics
import subprocess
import threading
import time

SETTLE_S = 0.25            # seconds each interleaved shape runs untimed first (clocks follow power within ~0.1 s)
HOST_ISSUE_CYCLES = 1.2e5  # GPU sleep cycles per interleaved call: >= 60 us at 2 GHz, more than the host needs to issue one


def clocks() -> dict:
    """SM and memory clocks (MHz) from nvidia-smi, if it answers within 5 s."""
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=clocks.sm,clocks.max.sm,clocks.mem,power.draw,temperature.gpu",
                              "--format=csv,noheader,nounits"], capture_output=True, text=True, timeout=5).stdout
        sm, sm_max, mem, power, temp = [x.strip() for x in out.splitlines()[0].split(",")]
        return {"sm_MHz": sm, "sm_max_MHz": sm_max, "mem_MHz": mem, "power_W": power, "temperature_C": temp}
    except (OSError, subprocess.SubprocessError, ValueError, IndexError):
        return {}


class ClockSampler:
    """nvidia-smi's SM clock and power every 0.1 s in a thread; `window(t0, t1)` the medians between two
    perf_counter times (empty where nvidia-smi does not answer, e.g. on a CPU)."""

    def __init__(self):
        self.samples: list[tuple[float, float, float]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        while not self._stop.is_set():
            try:
                out = subprocess.run(["nvidia-smi", "--query-gpu=clocks.sm,power.draw", "--format=csv,noheader,nounits"],
                                     capture_output=True, text=True, timeout=5).stdout
                sm, power = (float(x) for x in out.splitlines()[0].split(","))
            except (OSError, subprocess.SubprocessError, ValueError, IndexError):
                return
            self.samples.append((time.perf_counter(), sm, power))
            time.sleep(0.1)

    def start(self) -> ClockSampler:
        self._thread.start()
        return self

    def stop(self):
        self._stop.set()

    def window(self, t0: float, t1: float) -> dict:
        got = [(sm, pw) for t, sm, pw in list(self.samples) if t0 <= t <= t1]
        if not got:
            return {}
        return {"sm_MHz": statistics.median(s for s, _ in got), "power_W": statistics.median(p for _, p in got), "clock_samples": len(got)}


class Timer:
    """Median time of a callable: CUDA events on a GPU, perf_counter on a CPU."""

    def __init__(self, torch, device, warmup: int, repeats: int, min_batch_s: float):
        self.torch, self.device, self.warmup, self.repeats, self.min_batch_s = torch, device, warmup, repeats, min_batch_s

    def _batch(self, fn, inner: int) -> float:
        if self.device.type == "cuda":
            start, end = self.torch.cuda.Event(enable_timing=True), self.torch.cuda.Event(enable_timing=True)
            start.record()
            for _ in range(inner):
                fn()
            end.record()
            end.synchronize()
            return start.elapsed_time(end) / 1e3
        t0 = time.perf_counter()
        for _ in range(inner):
            fn()
        return time.perf_counter() - t0

    def __call__(self, fn) -> dict:
        for _ in range(self.warmup):
            fn()
        one = max(self._batch(fn, 1), 1e-7)
        inner = int(min(2000, max(1, math.ceil(self.min_batch_s / one))))
        samples = [self._batch(fn, inner) / inner for _ in range(self.repeats)]
        return {"time_s": statistics.median(samples), "samples_s": samples, "inner": inner}

    def interleaved(self, fn, between, settle_s: float) -> dict:
        """Like __call__, but `between()` runs before every call and each call is timed alone (CUDA events
        around `fn` only); a sample is the mean call time of a batch. The pattern first runs untimed for
        `settle_s` (clocks and power settle to it); each timed batch starts behind a GPU sleep long enough for
        the host to issue the whole batch, so no host gap falls inside a GEMM's events."""
        if self.device.type != "cuda":
            for _ in range(self.warmup):
                between()
            return self(fn)
        t0 = time.perf_counter()
        while time.perf_counter() - t0 < settle_s:
            for _ in range(10):
                between()
                fn()
            self.torch.cuda.synchronize(self.device)
        one = max(self._batch(fn, 1), 1e-7)
        inner = int(min(200, max(1, math.ceil(self.min_batch_s / one))))
        samples = []
        for _ in range(self.repeats):
            events = [(self.torch.cuda.Event(enable_timing=True), self.torch.cuda.Event(enable_timing=True)) for _ in range(inner)]
            self.torch.cuda._sleep(int(inner * HOST_ISSUE_CYCLES))
            for start, end in events:
                between()
                start.record()
                fn()
                end.record()
            events[-1][1].synchronize()
            samples.append(sum(s.elapsed_time(e) for s, e in events) / 1e3 / inner)
        return {"time_s": statistics.median(samples), "samples_s": samples, "inner": inner}


class Interleaver:
    """bf16 copies lasting about `seconds` (at the copy rate measured here on the full buffers, read + written),
    from one preallocated pair of buffers: the memory-bound work a training step runs between its GEMMs."""

    def __init__(self, torch, dev, timer, elements: int):
        self.src = torch.randn(elements, device=dev, dtype=torch.bfloat16)
        self.dst = torch.empty_like(self.src)
        self.rate_Bps = 4 * elements / timer(lambda: self.dst.copy_(self.src))["time_s"]

    def between(self, seconds: float):
        elements = max(1, int(seconds * self.rate_Bps / 4))
        full, rest = divmod(elements, self.src.numel())
        src, dst = self.src, self.dst

        def run():
            for _ in range(full):
                dst.copy_(src)
            if rest:
                dst[:rest].copy_(src[:rest])
        return run


def both_conditions(timer, clock, interleaver, records: list[tuple[dict, object]]) -> list[dict]:
    """Every (shape, make) back to back first (one sweep, as the first bundles ran it), then every one
    interleaved (copies of its back-to-back time between calls, settled for SETTLE_S first), each record with
    the clocks nvidia-smi reported while it ran. make() returns the call, holding its operands while it lives."""
    out, b2b = [], []
    for shape, make in records:
        fn = make()
        t0 = time.perf_counter()
        b2b.append(timer(fn))
        out.append({**shape, "condition": "back-to-back", **b2b[-1], **clock.window(t0, time.perf_counter())})
        del fn
    for (shape, make), first in zip(records, b2b, strict=True):
        fn = make()
        t0 = time.perf_counter()
        rec = timer.interleaved(fn, interleaver.between(first["time_s"]), SETTLE_S)
        out.append({**shape, "condition": "interleaved", **rec, **clock.window(t0, time.perf_counter())})
        del fn
    return out
