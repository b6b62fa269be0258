"""A long mutation fuzz run of every reader and command (tests/fuzzing.py), with the tally and the time per case.

    python bench/fuzz.py [CASES] [SEED] [READER_CASES] [KIND]   # default 10000 CLI cases, seed 0, no reader cases

KIND (optional): only the file kinds whose name holds it ('nccl-tuning': the reader's tool/nccl-tuning and the
command line's nccl-tuning), to rerun a finding's kind after its fix.

READER_CASES mutated files go first straight into their kind's reader (tests/fuzzing_readers.run_reader_cases: every file
kind, ~30 per second), then CASES through the command line (tests/fuzzing.run_cases: each input run by the
commands that read it, models included, ~1-3 per second on a shared machine). The issue-45 long run
(docs/testing.md): `nice -n 19 timeout -s TERM 4800 python bench/fuzz.py 40000 45 25000`; a stop (SIGTERM,
Ctrl-C) prints the tally of what ran.

Prints the count per outcome (ok, error, partial; any timeout, traceback, bad-error, bad-exit or bad-number is a
finding, listed), then the same counts per file kind of the reader cases (scenario/JOB-KIND, each card kind,
published/KIND, tool/TOOL: nccl-tests, nccl-info, nccl-tuning, ...), per file kind of the command-line cases and per
command (run, predict collective, storage simulate, calibrate, validate --decisions, ...), cases per second and the
slowest case.
"""

import re
import resource
import shutil
import signal
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from fuzzing import run_cases  # noqa: E402
from fuzzing_corpus import seeds  # noqa: E402
from fuzzing_readers import reader_seeds, run_reader_cases  # noqa: E402

BATCH = 100
FINDINGS = {"timeout", "traceback", "bad-error", "bad-exit", "bad-number", "memory", "escape"}
MEMORY_LIMIT = 4 * 2**30     # the address space a case may use (RLIMIT_AS): past it, a MemoryError is a finding


def main(cases: int = 10000, seed: int = 0, reader_cases: int = 0, only: str = "") -> int:
    if only and not any(only in s.kind for s in seeds()) and not any(only in c[1] for c in reader_seeds()):
        print(f"fuzz: KIND {only!r} names no reader or command-line kind", file=sys.stderr)
        return 2
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, resource.getrlimit(resource.RLIMIT_AS)[1]))
    start = time.perf_counter()
    results = []
    signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(KeyboardInterrupt()))
    with tempfile.TemporaryDirectory() as tmp:
        try:
            for batch in range(0, reader_cases, BATCH * 10):
                found = run_reader_cases(min(BATCH * 10, reader_cases - batch), Path(tmp) / f"r{batch}",
                                         seed=seed * 100000 + 50000 + batch, only=only)
                results += [("reader-" + r[0] if r[0] in ("read", "refused") else r[0], r[1], r[2], r[3], r[3][0], "(reader)")
                            for r in found]
                shutil.rmtree(Path(tmp) / f"r{batch}", ignore_errors=True)
                for outcome, detail, seed_file, kind in (r for r in found if r[0] in FINDINGS):
                    print(f"finding {outcome}: {detail[:160]} | {seed_file} | reader {kind[0]}", file=sys.stderr, flush=True)
                print(f"{len(results)} reader cases, {time.perf_counter() - start:.0f} s, "
                      f"{sum(r[0] in FINDINGS for r in results)} findings", file=sys.stderr, flush=True)
            for batch in range(0, cases, BATCH):
                found = run_cases(min(BATCH, cases - batch), Path(tmp) / f"b{batch}", seed=seed * 100000 + batch,
                                  only=only)
                results += [(*r, command_of(r[3])) for r in found]
                shutil.rmtree(Path(tmp) / f"b{batch}", ignore_errors=True)
                for outcome, detail, seed_file, argv, _ in (r for r in found if r[0] in FINDINGS):   # as they come
                    print(f"finding {outcome}: {detail[:160]} | {seed_file} | {' '.join(argv)[:240]}", file=sys.stderr,
                          flush=True)
                print(f"{len(results)} cases, {time.perf_counter() - start:.0f} s, "
                      f"{sum(r[0] in FINDINGS for r in results)} findings", file=sys.stderr, flush=True)
        except KeyboardInterrupt:   # stopped early: the tally of the cases that ran
            print(f"stopped after {len(results)} cases", file=sys.stderr)
    wall = time.perf_counter() - start
    tally = Counter(r[0] for r in results)
    print(f"{len(results)} cases, seed {seed}, {wall:.0f} s ({len(results) / wall:.1f} cases/s)")
    for outcome, n in sorted(tally.items()):
        print(f"  {outcome:>11}: {n}")
    _table("reader cases per file kind", [r for r in results if r[5] == "(reader)"], 4)
    _table("command-line cases per file kind", [r for r in results if r[5] != "(reader)"], 4)
    _table("command-line cases per command", [r for r in results if r[5] != "(reader)"], 5)
    findings = [r for r in results if r[0] in FINDINGS]
    places = Counter((r[0], re.sub(r"\d+", "N", r[1])[:90], r[2]) for r in findings)   # one line per kind and seed file
    for (outcome, detail, seed_file), n in places.most_common():
        example = next(r for r in findings if (r[0], re.sub(r"\d+", "N", r[1])[:90], r[2]) == (outcome, detail, seed_file))
        print(f"FINDING x{n} {outcome}: {example[1][:200]} | {example[2]} | {' '.join(example[3])[:300]}")
    timed = [float(r[1].split()[0]) for r in results if r[0] in ("ok", "partial", "cannot-run") and r[1].endswith(" s")]
    if timed:
        print(f"slowest passing case: {max(timed):.2f} s of CPU")
    return 1 if findings else 0


def command_of(argv: list[str]) -> str:
    """The command a case ran: 'run', 'predict collective', 'storage simulate', 'validate --decisions', ..."""
    words = argv[2:] if argv[:1] == ["--max-events"] else argv
    name = " ".join(words[:2]) if words[:1] in (["predict"], ["storage"]) else words[0]
    flag = next((f for f in ("--published", "--decisions", "--nccl-log", "--op-profile") if f in words), "")
    return f"{name} {flag}".strip() + (" (--max-events)" if words is not argv else "")


def _table(title: str, rows: list, column: int) -> None:
    """One line per kind or command: its cases, and how many of each outcome (findings named)."""
    if not rows:
        return
    print(f"{title}:")
    groups: dict[str, Counter] = {}
    for r in rows:
        groups.setdefault(r[column], Counter())[r[0].removeprefix("reader-")] += 1
    for name, tally in sorted(groups.items()):
        outcomes = ", ".join(f"{n:,} {outcome}" for outcome, n in sorted(tally.items()))
        print(f"  {name:<34} {sum(tally.values()):>6,}: {outcomes}")


if __name__ == "__main__":
    from simcluster.script_args import check

    usage = "[CASES [SEED [READER_CASES [ONLY]]]]"
    argv = check(words=4, usage=usage)
    try:
        numbers = [int(a) for a in argv[:3]]
    except ValueError as exc:
        raise SystemExit(f"fuzz.py: CASES, SEED and READER_CASES are integers ({exc}); usage: fuzz.py {usage}") from None
    sys.exit(main(*numbers, *argv[3:4]))
