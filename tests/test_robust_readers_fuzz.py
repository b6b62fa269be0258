"""Issue 45: a fast mutation fuzz of the readers themselves (no CLI, no model): the repository's own tool output and
manifests, mutated (tests/fuzzing.mutate: truncations, flipped bytes, NaN/Infinity/1e999, deep nesting, NULs,
duplicated lines, wrong types): 400 cases in a few seconds, 2,000 in the slow set (bench/fuzz.py is the long run,
through the CLI). Each reader either returns a document whose every number simcluster.output accepts, or refuses
with a SimclusterError; nothing else escapes."""

import dataclasses
import random
from collections import Counter

import pytest
from conftest import ROOT
from fuzzing import mutate

from simcluster import output
from simcluster.errors import SimclusterError

CAL = ROOT / "calibration"


def _readers():
    from simcluster.fit.bundle_files import read_manifest
    from simcluster.traces import dlio, fio, gpu_micro, llm_step, nccl_tests, perf_stat, qperf
    from simcluster.training import workload

    def manifest(path):
        return read_manifest(path.parent)

    def profile(path):
        return workload._profiles(path.parent.parent)

    return [
        (CAL / "h200x4-collect-2026-11-22/ddp-step/resnet18-32-b128/stdout.txt", workload.read_runs),
        (CAL / "h200x4-collect-2026-11-22/ddp-step/resnet50-224-b64/profiler-traces/profile-summary.json", profile),
        (CAL / "h200x4-collect-2026-11-22/manifest.json", manifest),
        (CAL / "local-2026-11-22/fio/randread-4k-qd16/stdout.txt", fio.parse),
        (CAL / "local-2026-11-22/dlio/unet3d_h100-1acc/output/summary.json", dlio.parse_summary),
        (CAL / "local-2026-11-22/dlio/unet3d_h100-1acc/output/per_epoch_stats.json", dlio.parse_epoch_stats),
        (CAL / "local-2026-11-22/qperf/qperf-1/stdout.txt", qperf.parse),
        (CAL / "local-2026-11-22/perf-stat/qperf-tcp_bw/perf.csv", perf_stat.parse),
        (CAL / "h200x2-nvlink-2026-11-22/nccl-tests/all_reduce.txt", nccl_tests.parse),
        (CAL / "h100x1-gpu-2026-11-23/gpu-micro/gpu-micro/stdout.txt", gpu_micro.parse),
        (CAL / "h100x1-gpu-2026-11-23/llm-step/1b-single/stdout.txt", llm_step.parse),
    ]


def _plain(value):
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    if hasattr(value, "as_json"):
        return value.as_json()
    return value


@pytest.mark.parametrize("seed,cases", [(45, 400), pytest.param(46, 2000, marks=pytest.mark.slow)])
def test_mutated_tool_output_is_read_or_refused_in_one_line(tmp_path, seed, cases):
    rng = random.Random(seed)
    readers = _readers()
    tally: Counter = Counter()
    escaped = []
    for i in range(cases):
        seed, read = readers[i % len(readers)]
        data = mutate(seed.read_text(errors="replace"), rng)
        if len(data) > 4 * 2**20:    # a line repeated 5,000 times: the size limit is another test's
            continue
        folder = tmp_path / f"c{i}" / seed.parent.relative_to(CAL)
        folder.mkdir(parents=True)
        path = folder / seed.name
        path.write_bytes(data)
        try:
            output.check(_plain(read(path)), str(path))
            tally["read"] += 1
        except SimclusterError as exc:
            assert "\n" not in exc.one_line()
            tally["refused"] += 1
        except Exception as exc:  # noqa: BLE001 - the finding
            escaped.append(f"{seed.name}: {type(exc).__name__}: {str(exc)[:120]}")
    assert not escaped, "\n".join(escaped[:10])
    assert tally["read"] >= cases // 12 and tally["refused"] >= cases // 4, tally     # both paths taken: the mutations are not all fatal
