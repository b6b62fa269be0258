"""Mutation fuzzing of every file kind's reader itself, without a command or a model behind it: scenarios, every
card kind, DLIO workloads, published tables, bundle and results-store manifests, the plan catalogue and each tool's
output parser, each given the repository's own files mutated as tests/fuzzing_corpus.mutate does. A case passes when the
reader returns what simcluster.output accepts or refuses with one SimclusterError line, within CASE_SECONDS of CPU
and without writing anything. tests/test_robust_readers_fuzz.py runs a seeded set; bench/fuzz.py READER_CASES the
long run.
"""

from __future__ import annotations

import random
import signal
from pathlib import Path

from fuzzing_corpus import CAL, ROOT, mutate
from fuzzing_outcome import CASE_SECONDS, CaseTimeout, _alarm


def reader_seeds() -> list[tuple[Path, str, object]]:
    """(seed file, kind, reader) for every file kind simcluster reads: scenarios, every card kind, DLIO workloads,
    published tables, bundle and results-store manifests, the plan catalogue, and each tool's output parser."""
    from simcluster import cards, scenario
    from simcluster.cost import load_catalogue
    from simcluster.fit.bundle_files import read_manifest
    from simcluster.hardware.gpu import load_gpu
    from simcluster.published import read_published
    from simcluster.reference.nccl import read_nccl_file
    from simcluster.storage import dlio_workload
    from simcluster.storage.nvme import load_nvme
    from simcluster.sweep import store
    from simcluster.traces import dlio, fio, gpu_micro, llm_step, nccl_info, nccl_tests, nccl_tuning, perf_stat, qperf
    from simcluster.training import workload

    out = [(p, f"scenario/{_job_kind(p)}", scenario.load) for p in sorted((ROOT / "scenarios").rglob("*.yaml"))
           if p.parent.name in ("scenarios", "llm", "whatif", "published")]
    loaders = {"collective": cards.load_collective, "nic": cards.load_nic, "nvme": load_nvme, "gpu": load_gpu,
               "switch": cards.load_aggregation, "nvswitch": cards.load_nvls,
               "training": lambda p: (cards.load_ddp if p.name.startswith("ddp") else cards.load_training)(p)}
    for folder, load in loaders.items():
        out += [(p, f"{folder}-card", load) for p in sorted((ROOT / "models" / folder).glob("*.yaml"))
                if not p.name.startswith("op-profile")]
    out += [(p, "op-profile", cards.load_op_profiles) for p in sorted((ROOT / "models" / "collective").glob("op-profile-*.yaml"))]
    out += [(p, "dlio", dlio_workload.load) for p in sorted((ROOT / "scenarios" / "workloads").glob("*.yaml"))]
    pub = ROOT / "calibration" / "published"
    out += [(p, "published/nccl", read_nccl_file) for p in sorted(pub.glob("nccl-*.yaml"))]   # with its chooser
    for prefix, kind in (("llm-", "published-llm-run"), ("reliability-", "published-reliability")):
        out += [(p, "published/" + prefix.rstrip("-"), lambda p, kind=kind: read_published(p, kind))
                for p in sorted(pub.glob(prefix + "*.yaml"))]
    out += [(p, "bundle-manifest", lambda p: read_manifest(p.parent)) for p in sorted(CAL.glob("*/manifest.json"))]
    out += [(ROOT / "tests" / "fixtures" / "results-store" / store.MANIFEST, "results-store",
             lambda p: store.read_manifest(p.parent)),
            (ROOT / "scenarios" / "plans" / "catalogue-2026.yaml", "catalogue", load_catalogue)]
    tools = [("h200x4-collect-2026-11-22/ddp-step/resnet18-32-b128/stdout.txt", "ddp-step", workload.read_runs),
             ("h200x4-collect-2026-11-22/ddp-step/resnet50-224-b64/profiler-traces/profile-summary.json",
              "profile-summary", lambda p: workload._profiles(p.parent.parent)),
             ("local-2026-11-22/fio/randread-4k-qd16/stdout.txt", "fio", fio.parse),
             ("local-2026-11-22/dlio/unet3d_h100-1acc/output/summary.json", "dlio-summary", dlio.parse_summary),
             ("local-2026-11-22/dlio/unet3d_h100-1acc/output/0_output.json", "dlio-output", dlio.parse_output),
             ("local-2026-11-22/dlio/unet3d_h100-1acc/output/per_epoch_stats.json", "dlio-epochs", dlio.parse_epoch_stats),
             ("local-2026-11-22/qperf/qperf-1/stdout.txt", "qperf", qperf.parse),
             ("local-2026-11-22/perf-stat/qperf-tcp_bw/perf.csv", "perf-stat", perf_stat.parse),
             ("h200x2-nvlink-2026-11-22/nccl-tests/all_reduce.txt", "nccl-tests", nccl_tests.parse),
             ("h200x2-nvlink-2026-11-22/nccl-tests/all_reduce_J.json", "nccl-tests-json", nccl_tests.parse),
             ("h200x2-graph2-2026-11-22/nccl-tests/all_reduce-tuning/stdout.txt", "nccl-tuning", nccl_tuning.parse),
             ("published/nccl-decisions-h100x8-nccl1595/log.txt", "nccl-info",
              lambda p: nccl_info.parse(p, op="all_reduce")),
             ("published/nccl-decisions-h200x8x64-nccl1752/log.txt", "nccl-info",
              lambda p: nccl_info.parse(p, op="all_reduce")),
             ("h100x1-gpu-2026-11-23/gpu-micro/gpu-micro/stdout.txt", "gpu-micro", gpu_micro.parse),
             ("h100x1-gpu-2026-11-23/llm-step/1b-single/stdout.txt", "llm-step", llm_step.parse)]
    out += [(CAL / f, "tool/" + kind, read) for f, kind, read in tools]
    return [(p, kind, read) for p, kind, read in out if p.is_file()]


def _layout(path: Path, kind: str) -> str:
    """The case folder of a seed: one per kind and seed folder, so that a folder linked into one layout (models,
    calibration, scenarios/published, ...) is never where another seed of that layout is written."""
    return "-".join([kind.replace("/", "-"), *path.parent.relative_to(ROOT).parts])


def _job_kind(path: Path) -> str:
    """A scenario's kind for the tally: its first job's kind (the job declaration its reader goes through)."""
    import re

    match = re.search(r"(?m)^\s*-?\s*\{?\s*kind:\s*([a-z_]+)", path.read_text().split("\njobs:", 1)[-1])
    return match.group(1) if match else "other"


def _plain(value):
    """A reader's answer as plain data for the output check (dataclasses as dicts; other objects left out)."""
    import dataclasses

    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        try:
            return dataclasses.asdict(value)
        except (TypeError, RecursionError):
            return None
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    return value if isinstance(value, (int, float, str, bool, type(None))) else None


def run_reader_cases(count: int, folder: Path, seed: int = 0, only: str = "") -> list[tuple[str, str, str, list[str]]]:
    """`count` mutated files, each read by its kind's reader in a copy of the repository's layout under `folder`:
    (outcome, detail, seed file, [kind]); outcome 'read' or 'refused' (one line), else a finding: traceback,
    bad-error (not one line), bad-number (a NaN/inf or negative quantity in what was read), timeout, memory.
    `only`: the kinds whose name holds it (a finding's kind, rerun after its fix)."""
    from simcluster import output
    from simcluster.errors import AnswerError, SimclusterError

    rng = random.Random(seed)
    pool: dict[str, list] = {}
    for path, kind, read in (case for case in reader_seeds() if only in case[1]):   # each kind as often as another,
        pool.setdefault(kind, []).append((path, kind, read))
    kinds = sorted(pool)
    if not kinds:   # a KIND no reader has (a command-line kind's name): none to run
        return []
    folders = {_layout(path, kind) for seeds in pool.values() for path, kind, _ in seeds}
    results = []
    for _ in range(count):
        path, kind, read = rng.choice(pool[rng.choice(kinds)])
        data = mutate(path.read_text(errors="replace"), rng)
        case_dir = folder / _layout(path, kind)     # one layout per kind and folder, made once: the mutated file replaced
        target = case_dir / path.relative_to(ROOT)  # case after case
        target.parent.mkdir(parents=True, exist_ok=True)
        for shared in ("models", "calibration", "scenarios/workloads", "scenarios/published", "scenarios/plans"):
            link = case_dir / shared
            if not link.is_symlink() and not link.exists() and not target.is_relative_to(link):
                link.parent.mkdir(parents=True, exist_ok=True)
                link.symlink_to(ROOT / shared)
        if any(p.is_symlink() for p in target.parents if p.is_relative_to(case_dir)) or target.is_symlink():
            raise RuntimeError(f"{target} would be written through a link into the repository")   # never
        target.write_bytes(data)
        before = {p.name for p in target.parent.iterdir()}
        old = signal.signal(signal.SIGPROF, _alarm)
        signal.setitimer(signal.ITIMER_PROF, CASE_SECONDS)
        try:
            answer = read(target)
            output.check(_plain(answer), str(target))
            outcome, detail = "read", ""
        except AnswerError as exc:    # the output layer's refusal: what was read holds a number no answer may
            outcome, detail = "bad-number", exc.one_line()[:200]
        except SimclusterError as exc:
            line = exc.one_line()
            outcome, detail = ("refused", line[:200]) if "\n" not in line else ("bad-error", line[:300])
        except CaseTimeout:
            outcome, detail = "timeout", f"> {CASE_SECONDS} s"
        except MemoryError:
            outcome, detail = "memory", "MemoryError"
        except KeyboardInterrupt:
            raise
        except BaseException as exc:  # noqa: BLE001 - any escape is the finding
            outcome, detail = "traceback", f"{type(exc).__name__}: {str(exc)[:200]}"
        finally:
            signal.setitimer(signal.ITIMER_PROF, 0)
            signal.signal(signal.SIGPROF, old)
        target.unlink()
        written = {p.name for p in target.parent.iterdir()} - before
        if written or any(p.name not in folders for p in folder.iterdir()):   # a reader wrote beside what it read
            outcome, detail = "escape", f"wrote {sorted(written)[:3]} reading {target.name}"
        results.append((outcome, detail, str(path.relative_to(ROOT)), [kind]))
    return results


