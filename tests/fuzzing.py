"""Mutation fuzzing of every command: the repository's own inputs (tests/fuzzing_corpus.py), mutated as a careless or
hostile user would, each written into its own copy of the repository's layout and run through the CLI in-process by
one of the command lines that read its kind (tests/fuzzing_commands.py).

A case passes (tests/fuzzing_outcome.py) when the command returns 0, 2, 3 or 4 without raising (a MemoryError is the
finding 'memory'); a 2 ends stderr with one error line ('simcluster: error: ...'); nothing printed as JSON is NaN or
infinite, and no time, size or bandwidth in it is negative; it finishes within CASE_SECONDS of CPU time; and it writes
nothing outside its case folder (the finding 'escape'). tests/test_fuzz.py runs a few hundred seeded cases in CI;
bench/fuzz.py runs as many as asked and prints the tally.
"""

from __future__ import annotations

import os
import random
import shutil
from pathlib import Path

from fuzzing_commands import commands
from fuzzing_corpus import ROOT, mutate, seeds
from fuzzing_outcome import _memoised_fits, run_case
from fuzzing_scenarios import GPU_SCENARIO, NIC_SCENARIO, NVLS_SCENARIO, SWITCH_SCENARIO, TRAINING_SCENARIO


def cases(count: int, seed: int = 0, only: str = ""):
    """`count` (seed, argv-with-{file}, mutated bytes) cases, deterministic for a seed; `only`: just the seed files of
    a kind whose name holds it (a finding's kind, rerun after its fix)."""
    rng = random.Random(seed)
    pool = [s for s in seeds() if only in s.kind]
    if not pool:   # a KIND no command-line case has (a reader's kind name): none to run
        return
    for _ in range(count):
        s = rng.choice(pool)
        if not s.path.is_file():  # removed since the corpus was listed (a card being edited elsewhere)
            continue
        data = mutate(s.path.read_text(errors="replace"), rng)
        argv = rng.choice(commands(s.kind, "{file}"))
        yield s, argv, data


def _link_or_copy(src, dst) -> None:
    try:
        os.link(src, dst)
    except OSError:  # another filesystem
        shutil.copy2(src, dst)


def _fill(arg: str, fills: dict) -> str:
    for key, value in fills.items():
        arg = arg.replace(key, value)
    return arg


def run_cases(count: int, folder: Path, seed: int = 0, verbose: bool = False,
              only: str = "") -> list[tuple[str, str, str, list[str], str]]:
    """Run the cases with each mutated file written into its own copy of the repository's layout under `folder`
    (models/, calibration/ linked), so the cards it names resolve; (outcome, detail, seed file, argv, kind) per case."""
    results = []
    _memoised_fits()
    for i, (s, argv, data) in enumerate(cases(count, seed, only)):
        case_dir = folder / f"case{i}"
        target = case_dir / s.path.relative_to(ROOT)   # where the original is, so its relative card paths resolve
        target.parent.mkdir(parents=True, exist_ok=True)
        for shared in ("models", "calibration", "scenarios/workloads", "scenarios/published"):
            link = case_dir / shared
            if not link.exists() and not target.is_relative_to(link):
                link.parent.mkdir(parents=True, exist_ok=True)
                link.symlink_to(ROOT / shared)
        if s.bundle is not None:   # the bundle as hard links, the mutated file a new file (never written through a link)
            shutil.copytree(s.bundle, case_dir / s.bundle.relative_to(ROOT), copy_function=_link_or_copy, dirs_exist_ok=True)
            target.unlink()
        target.write_bytes(data)
        if s.kind in ("sweep", "catalogue", "results-store"):   # the plan's catalogue and the other plans; the store's other files
            for child in s.path.parent.iterdir():
                if child.is_file() and child.name != s.path.name:
                    _link_or_copy(child, target.parent / child.name)
        if s.kind in ("bundle", "published-decisions"):  # the mutated file beside its folder's real files (hard links: a bundle refuses
            for child in s.path.parent.iterdir():  # a path that leads outside it, symbolic links included)
                if child.is_dir():
                    shutil.copytree(child, target.parent / child.name, copy_function=_link_or_copy)
                elif child.name != s.path.name:
                    _link_or_copy(child, target.parent / child.name)
        ddp = ROOT / "models" / "training" / "ddp-h200x4.yaml"
        fills = {"{file}": str(target), "{tmp}": str(case_dir), "{dir}": str(target.parent),
                 "{bundle}": str(case_dir / s.bundle.relative_to(ROOT)) if s.bundle else str(target.parent)}
        for name, template in (("nic", NIC_SCENARIO), ("gpu", GPU_SCENARIO), ("switch", SWITCH_SCENARIO),
                               ("nvls", NVLS_SCENARIO), ("training", TRAINING_SCENARIO)):
            if "{" + name + "_scenario}" in argv:
                path = case_dir / f"{name}-scenario.yaml"
                path.write_text(template.format(card=target, ddp=target if target.name.startswith("ddp") else ddp))
                fills["{" + name + "_scenario}"] = str(path)
        rng = random.Random(f"{seed}/{i}")
        fills.update({"{n}": rng.choice(["0", "1", "-3", "4", "1000000000", "nan", "1e308", "2", "abc"]),
                      "{op}": rng.choice(["all_reduce", "alltoall", "sendrecv", "ALL_GATHER", "nop", ""]),
                      "{size}": rng.choice(["0", "128", "4KiB", "4MiB", "1e30B", "abc", "64MiB"]),
                      "{rate}": rng.choice(["0", "1B/s", "nan", "400MB/s", "1e30GB/s", "10GB/s"])})
        args = [_fill(a, fills) for a in argv]
        outcome, detail = run_case(args)
        escaped = [p.name for p in folder.iterdir() if not p.name.startswith("case")] + \
            [p.name for p in Path("/tmp").glob("abs-escape*")]
        if escaped:   # a name from the input led a write out of the case's folder
            outcome, detail = "escape", f"wrote {escaped[0]} outside {case_dir}"
            for p in folder.iterdir():
                if not p.name.startswith("case"):
                    shutil.rmtree(p) if p.is_dir() else p.unlink()
        results.append((outcome, detail, str(s.path.relative_to(ROOT)), args, s.kind))
        if verbose:
            print(outcome, detail, " ".join(args), flush=True)
    return results

