"""Step times from MLPerf Training result logs (`:::MLLOG {json}` lines, mlperf-logging's format): read-only, not a test.

Two readings of one log, both arithmetic on what it prints:
- `train_step_timing in s` (`train_step_timing` in v3.1's logs; NVIDIA's NeMo implementation logs it as a `tracked_stats`
  event, one per logged step): the median, mean, min and max over the run's steps;
- blocks: each `block_start` / `block_stop` pair spans `epoch_count` tokens of training between two evaluations (the
  evaluation runs outside the block), so a block's step time = its duration / (epoch_count / (global_batch_size x
  max_sequence_length)). The first block is left out (it holds the warm-up steps after run_start); the median over the
  others is printed. Logs without per-step timings (NVIDIA's 1,452-node GPT-3 run) have only this reading.
Used to record calibration/published/llm-mlperf-training-v4.1-*.yaml (session 59), -v4.0-smc and -v3.1-azure (session 60):
    python studies/mlperf_step_times.py LOG [LOG ...]
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from simcluster.script_args import ArgumentParser  # noqa: E402

MARK = ":::MLLOG "


def events(path: Path) -> list[dict]:
    """Every MLLOG event of the log (rank prefixes such as '   0: ' ignored), in file order; unreadable JSON and non-objects skipped."""
    out = []
    for line in path.read_text(errors="replace").splitlines():
        at = line.find(MARK)
        if at < 0:
            continue
        try:
            event = json.loads(line[at + len(MARK):])
        except json.JSONDecodeError:
            continue
        if isinstance(event, dict):
            out.append(event)
    return out


def first_value(evs: list[dict], key: str):
    return next((e["value"] for e in evs if e.get("key") == key), None)


STEP_TIMING_KEYS = ("train_step_timing in s", "train_step_timing")   # v4.x logs / v3.1 logs (the same NeMo timer, seconds)


def step_timings(evs: list[dict]) -> list[float]:
    """The logged per-step times, seconds (the first of STEP_TIMING_KEYS a tracked_stats event holds)."""
    out = []
    for e in evs:
        value = e.get("value") if e.get("key") == "tracked_stats" else None
        key = next((k for k in STEP_TIMING_KEYS if k in value), None) if isinstance(value, dict) else None
        if key:
            out.append(float(value[key]))
    return out


def block_step_times(evs: list[dict], batch_tokens: int) -> list[float]:
    """Per-step time of every block after the first, seconds: duration / (tokens in the block / tokens a step)."""
    out, start = [], None
    for e in evs:
        if e.get("key") == "block_start":
            start = e
        elif e.get("key") == "block_stop" and start is not None:
            tokens = (start.get("metadata") or {}).get("epoch_count")
            if isinstance(tokens, (int, float)) and tokens > 0 and "time_ms" in e and "time_ms" in start:
                out.append((e["time_ms"] - start["time_ms"]) / 1e3 / (tokens / batch_tokens))
            start = None   # a block without its token count or times is left out
    return out[1:]


def summary(path: Path) -> str:
    evs = events(path)
    gbs, seq = first_value(evs, "global_batch_size"), first_value(evs, "max_sequence_length")
    if gbs is None or seq is None:
        return f"{path}: no global_batch_size / max_sequence_length event"
    steps = step_timings(evs)
    blocks = block_step_times(evs, int(gbs) * int(seq))
    text = f"{path}: GBS {gbs} seq {seq} accumulation {first_value(evs, 'gradient_accumulation_steps')}"
    if steps:
        text += (f"; steps {len(steps)} median {statistics.median(steps):.4f} mean {statistics.fmean(steps):.4f} "
                 f"min {min(steps):.4f} max {max(steps):.4f} s")
    if blocks:
        text += f"; blocks {len(blocks)} (first left out) median {statistics.median(blocks):.4f} s a step"
    return text


def main() -> None:
    parser = ArgumentParser(prog="mlperf_step_times.py", description=__doc__.splitlines()[0])
    parser.add_argument("logs", nargs="+", type=Path, help="MLPerf Training result_N.txt files")
    args = parser.parse_args()
    for log in args.logs:
        if not log.is_file():
            print(f"mlperf_step_times.py: {log}: not a file", file=sys.stderr)
            raise SystemExit(2)
        try:
            print(summary(log))
        except (TypeError, ValueError, KeyError) as e:   # a value of the wrong type in an event
            print(f"mlperf_step_times.py: {log}: unreadable MLLOG values ({e!r})", file=sys.stderr)
            raise SystemExit(2) from None


if __name__ == "__main__":
    main()
