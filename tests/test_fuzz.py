"""Every reader and command, on a seeded corpus of mutated inputs: exit 0/2/3, one-line errors, no NaN/inf or
negative quantities, bounded time (tests/fuzzing_outcome.py says what a case checks)."""

from collections import Counter

import pytest
from fuzzing import run_cases
from fuzzing_commands import commands
from fuzzing_corpus import seeds

FAILURES = {"timeout", "traceback", "bad-error", "bad-exit", "bad-number", "memory", "escape"}


def test_the_corpus_covers_every_kind_of_input():
    kinds = Counter(s.kind for s in seeds())
    assert set(kinds) == {"scenario", "dlio", "collective-card", "nic-card", "nvme-card", "gpu-card", "switch-card",
                          "nvswitch-card", "training-card", "op-profile", "nccl-log", "qperf-log", "storage-flags", "flags", "bundle",
                          "nccl-tuning", "ddp-log", "profile-summary", "fio-json", "dlio-json", "perf-stat", "gpu-micro", "llm-step", "sweep",
                          "catalogue", "plot-dir", "long-name", "results-store",
                          "published-nccl", "published-llm", "published-decisions"}
    for kind in kinds:
        assert commands(kind, "x")


@pytest.mark.parametrize("seed", [0, pytest.param(1, marks=pytest.mark.slow), pytest.param(2, marks=pytest.mark.slow)])
def test_mutated_inputs_never_escape_as_tracebacks(tmp_path, seed):
    results = run_cases(100, tmp_path, seed=seed)
    failed = [r for r in results if r[0] in FAILURES]
    assert not failed, "\n".join(f"{o}: {d} | {f} | {' '.join(a)}" for o, d, f, a, _ in failed[:10])
    # the corpus is not all refused: some mutations leave a valid input, which must still run
    assert Counter(r[0] for r in results)["ok"] >= 5
