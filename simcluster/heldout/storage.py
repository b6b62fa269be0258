"""MLPerf Storage closed submissions predicted from what each submission states: the drive's specification (a card
per drive, models/nvme/), the workload with the run's reader overrides and dataset size, the host's memory as page
cache (none when the run reads with O_DIRECT). Nothing is fitted on these rows; a run the model cannot express is in the
file's `simcluster.runs_not_compared` with its reason and is not predicted.

Per row: the steady-state throughput simulated at the published accelerator count (the question `storage simulate`
answers) against the published MiB/s, and, when asked, the count `storage max-accelerators` answers."""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
CARDS = {"micron-9400": "micron-9400-pro-7.68tb", "micron-6500": "micron-6500-ion-30.72tb", "micron-9550": "micron-9550-pro-7.68tb",
         "solidigm-d5-p5336": "solidigm-d5-p5336-61.44tb", "solidigm-d7-ps1010": "solidigm-d7-ps1010-7.68tb",
         "samsung-pm1753": "samsung-pm1753-7.68tb", "samsung-pm1725a": "samsung-pm1725a-1.6tb"}
PAGE_CACHE_BYTES = 256 * 2**30     # the v1.0 Micron systems' mem=256G boot option (a row's `page_cache_GiB` overrides it)
IO_SIZE = 4 * 2**20                # simcluster's default read size (storage --io-size)
PATTERN = "mlperf-storage-*.yaml"


def published_files(folder: str | Path | None = None) -> list[Path]:
    return sorted((Path(folder) if folder else ROOT / "calibration" / "published").glob(PATTERN))


def read(path: Path):
    """A published storage file, read as every published file is (published.read_published: one-line error naming the
    file when it is not one)."""
    from simcluster.published import read_published

    return read_published(path, "published-storage-run")


def compared_runs(path: Path) -> list[tuple[int, dict]]:
    """(index, run) of the runs predicted: all but the file's `simcluster.runs_not_compared` (each with its reason)."""
    pub = read(path)
    skip = pub.usage.get("runs_not_compared") or {}
    for i, row in enumerate(pub.runs):
        _check_options(path, i, row)
    return [(i, row) for i, row in enumerate(pub.runs) if i not in skip]


def _check_options(path: Path, i: int, row: dict) -> None:
    """A row's optional storage keys, each a one-line error at its key when it is not what the model takes."""
    from simcluster.errors import CalibrationError

    drives, cache = row.get("drives", 1), row.get("page_cache_GiB", 0)
    if isinstance(drives, bool) or not isinstance(drives, int) or drives < 1:
        raise CalibrationError(f"runs[{i}].drives: expected a whole number of drives >= 1, got {drives!r}", where=str(path))
    if isinstance(cache, bool) or not isinstance(cache, (int, float)) or cache < 0:
        raise CalibrationError(f"runs[{i}].page_cache_GiB: expected a size in GiB >= 0, got {cache!r}", where=str(path))


def page_cache_bytes(row: dict) -> int:
    """The page cache a run reads through: none with O_DIRECT (DLIO's `reader.odirect`), else the host's memory as the
    row states it (`page_cache_GiB`, e.g. a cgroup limit), else 256 GiB."""
    return 0 if row["reader"].get("odirect") else (int(row["page_cache_GiB"] * 2**30) if "page_cache_GiB" in row
                                                       else PAGE_CACHE_BYTES)


def drives_of(row: dict) -> int:
    """The drives holding the dataset (`drives`, default 1), files striped over them."""
    return int(row.get("drives", 1))


def label(row: dict) -> str:
    """The row's short name: its `label`, else the system name's second word and the workload."""
    return row.get("label") or f"{row['system'].split('_')[1]} {row['workload']}"


def workload_of(row: dict):
    from simcluster.storage import dlio_workload

    w = dlio_workload.load(ROOT / "scenarios" / "workloads" / f"{row['workload']}.yaml")
    reader = row["reader"]
    return dataclasses.replace(w, path=f"{row['system']}/{row['workload']}", num_files=row["num_files_train"],
                               samples_per_file=row["samples_per_file"], read_threads=reader["read_threads"],
                               prefetch=reader["prefetch_size"])


def count_is_lower_bound(row: dict, threshold: float) -> bool:
    """MLPerf Storage publishes the largest count a submitter reports passing; a count that failed is never published. A
    published count N is only a lower bound of what the storage feeds when N + 1 accelerators would pass even if the
    storage delivered no more than it did at N: mean AU x N / (N + 1) >= threshold. A high AU alone does not show it (at
    small N one more accelerator adds 1/N of the demand, so a storage at its maximum shows a high AU at N)."""
    runs = row["measured"].get("au_mean_percent_per_run") or []
    n = row["measured"].get("accelerators") or 0
    return bool(runs) and n > 0 and sum(runs) / len(runs) / 100 * n / (n + 1) >= threshold


def count_check(accelerators_error: float, lower_bound: bool, not_a_maximum: bool = False, predicted_at_least: bool = False) -> str:
    """Issue 42's count target on one row: 'met' within 10%; a prediction above a lower-bound count is consistent with
    it but not checked by it ('lower bound', counted apart from 'met'); a count the submission states is not its largest
    (the row's `measured.count_not_a_maximum`, with the reason) is 'not a maximum' when predicted above it (a prediction
    more than 10% below a count that ran is a 'miss' all the same); else 'miss'. A predicted count that is itself only a
    lower bound (`predicted_at_least`: the search stopped at its limit or the simulation's bound, "at least N") more than
    10% below the published one is 'search bound', not a miss: the answer does not contradict the count."""
    if predicted_at_least and accelerators_error < -0.10:
        return "search bound"
    if not_a_maximum:   # the published count ran, so a predicted maximum more than 10% below it is still a miss
        return "miss" if accelerators_error < -0.10 else "not a maximum"
    if abs(accelerators_error) <= 0.10:
        return "met"
    return "lower bound" if lower_bound and accelerators_error > 0 else "miss"


def predict(row: dict, seed: int = 0, search: bool = False) -> dict:
    """One submission predicted: throughput at its accelerator count; with `search`, also the max-accelerators answer."""
    from simcluster.storage import accelerator_search, loader
    from simcluster.storage.nvme import load_nvme

    w = workload_of(row)
    nvme, _ = load_nvme(ROOT / "models" / "nvme" / f"{CARDS[row['drive']]}.yaml")
    config = loader.LoaderConfig(io_size=IO_SIZE, cache_bytes=page_cache_bytes(row))
    m = row["measured"]
    t0 = time.perf_counter()
    at = loader.simulate(w, nvme, m["accelerators"], drives_of(row), config, seed=seed)
    out = {"row": label(row), "system": row["system"], "model": w.model,
           "accelerators_measured": m["accelerators"], "MiB_per_s_measured": m["throughput_MiB_per_s"],
           "MiB_per_s_at_measured_count": at.throughput_MiB_per_s, "au_at_measured_count": at.au_percent,
           "error_at_measured_count": at.throughput_MiB_per_s / m["throughput_MiB_per_s"] - 1, "limit": at.limit,
           "count_lower_bound": count_is_lower_bound(row, w.au_threshold)}
    if search:
        best, _ = accelerator_search.max_accelerators(w, nvme, drives_of(row), config, seed=seed)
        n, mib = (best.accelerators, best.throughput_MiB_per_s) if best else (0, 0.0)
        out |= {"accelerators_predicted": n, "accelerators_error": n / m["accelerators"] - 1, "MiB_per_s_predicted": mib,
                "MiB_per_s_error": mib / m["throughput_MiB_per_s"] - 1,
                "count_check": count_check(n / m["accelerators"] - 1, out["count_lower_bound"],
                                           bool(m.get("count_not_a_maximum")), bool(best and best.bound)),
                "search_bound": best.bound if best else ""}
    out["wall_s"] = time.perf_counter() - t0
    return out


def held_out_rows(folder: str | Path | None = None) -> list[dict]:
    """Every published submission predicted at its own accelerator count, with the file it came from."""
    out = []
    for path in published_files(folder):
        for i, row in compared_runs(path):
            out.append({**predict(row), "file": path.stem, "index": i})
    return out
