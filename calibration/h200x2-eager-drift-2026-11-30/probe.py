"""The host's pace without the GPU (issue 44, session 42, h200x2-eager-drift-2026-11-30): one JSON line with the
seconds of a fixed pure-Python loop and of a fixed run of small CPU torch ops (the dispatcher the eager step's host
issue goes through), REPEATS times each, on one thread. argv[1]: the call's clock (ms since the device script began),
copied into the document so that the read-out places the probe in the call."""

import json
import sys
import time

REPEATS = 5
LOOP_N = 2_000_000   # pure Python: about 0.1-0.2 s a repeat on a current server core
OPS_N = 10_000       # two small CPU torch ops per iteration: about 0.05-0.2 s a repeat


def python_loop() -> float:
    t = time.perf_counter()
    s = 0
    for i in range(LOOP_N):
        s += i * i % 7
    return time.perf_counter() - t


def torch_ops(torch) -> float:
    x = torch.ones(64)
    t = time.perf_counter()
    for _ in range(OPS_N):
        x = x.add(1.0).mul(0.5)
    return time.perf_counter() - t


def main() -> None:
    doc = {"tool": "drift-probe", "t_ms": int(sys.argv[1]) if len(sys.argv) > 1 else None,
           "loop_n": LOOP_N, "ops_n": OPS_N, "python_loop_s": [python_loop() for _ in range(REPEATS)]}
    try:
        import torch

        torch.set_num_threads(1)
        torch_ops(torch)   # one untimed pass (first-call costs)
        doc["torch_cpu_s"] = [torch_ops(torch) for _ in range(REPEATS)]
    except Exception as exc:   # the Python loop still counts
        doc["torch_error"] = f"{type(exc).__name__}: {exc}"
    print(json.dumps(doc))


if __name__ == "__main__":
    main()
