"""Audit the recorded MLPerf Storage v1.0 Micron rows against the submission's own files (issue 42, session 43).

    python studies/storage_v1_audit.py CHECKOUT      # CHECKOUT: a clone of github.com/mlcommons/storage_results_v1.0

For each row of calibration/published/mlperf-storage-v1.0-micron.yaml, reads every run's configs/config.yaml and
summary.json under Closed/Micron/results/<system>/<model>/<accelerator>/ and prints what the runs used against what
simcluster takes: the workload file's batch, computation_time, AU threshold and record length; the row's read_threads,
prefetch_size, transfer_size and file count; the host memory the runs report against the row's page cache. A line
ends in OK when every field agrees, else it names the fields that differ. Exit status 1 when any row differs."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from simcluster.heldout.storage import PAGE_CACHE_BYTES  # noqa: E402

PUBLISHED = ROOT / "calibration/published/mlperf-storage-v1.0-micron.yaml"
DEFAULT_PAGE_CACHE_GiB = PAGE_CACHE_BYTES // 2**30   # the page cache heldout/storage.py takes for a row without page_cache_GiB


class RunFileError(Exception):
    """A run whose files lack a key the audit reads: the run and the key, said in one line."""


def runs_of(checkout: Path, row: dict) -> list[Path]:
    model, acc = row["workload"].split("_")
    base = checkout / "Closed/Micron/results" / row["system"] / model / acc
    return sorted(p.parent for p in base.rglob("summary.json"))


def used(run: Path) -> dict:
    """What the run used, from its configs/config.yaml and summary.json; RunFileError names the run and a missing key."""
    where = "configs/config.yaml"
    try:
        w = yaml.safe_load((run / where).read_text())["workload"]
        r, d, t = w["reader"], w["dataset"], w["train"]
        got = {"batch_size": r["batch_size"], "computation_time": t["computation_time"], "au": w["metric"]["au"],
               "record_length": d["record_length"], "read_threads": r["read_threads"],
               "prefetch_size": r.get("prefetch_size"), "transfer_size": r.get("transfer_size"),
               "num_files_train": d["num_files_train"]}
        where = "summary.json"
        s = json.loads((run / where).read_text())
        return got | {"accelerators": s["num_accelerators"], "host_memory_GiB": round(s["host_memory_GB"][0])}
    except (KeyError, IndexError, TypeError) as e:
        key = e.args[0] if isinstance(e, KeyError) else "a list or mapping"
        raise RunFileError(f"{run / where}: missing {key!r}") from None


def taken(row: dict) -> dict:
    wl = yaml.safe_load((ROOT / "scenarios/workloads" / f"{row['workload']}.yaml").read_text())
    rd = row["reader"]
    return {"batch_size": wl["reader"]["batch_size"], "computation_time": wl["train"]["computation_time"],
            "au": wl["metric"]["au"], "record_length": wl["dataset"]["record_length"],
            "read_threads": rd["read_threads"], "prefetch_size": rd.get("prefetch_size"),
            "transfer_size": rd.get("transfer_size"), "num_files_train": row["num_files_train"],
            "accelerators": row["measured"]["accelerators"],
            "host_memory_GiB": row.get("page_cache_GiB", DEFAULT_PAGE_CACHE_GiB)}


def differs(a, b, key: str) -> bool:
    if key == "host_memory_GiB":   # MemTotal under a mem=NG boot option is a few GiB below N
        return abs(a - b) > 0.05 * b
    if key == "transfer_size" and not a and not b:
        return False
    return a != b


def diff_fields(want: dict, seen: list[dict]) -> list[str]:
    """The fields on which any run differs from what simcluster takes; every field when no run was found."""
    if not seen:
        return sorted(want)
    return sorted({k for s in seen for k in want if differs(s[k], want[k], k)})


def main() -> int:
    if len(sys.argv) != 2 or not (Path(sys.argv[1]) / "Closed/Micron").is_dir():
        print("usage: python studies/storage_v1_audit.py CHECKOUT (a clone of mlcommons/storage_results_v1.0)")
        return 2
    checkout = Path(sys.argv[1])
    bad = 0
    for row in yaml.safe_load(PUBLISHED.read_text())["runs"]:
        runs = runs_of(checkout, row)
        try:
            seen = [used(r) for r in runs]
        except RunFileError as e:
            print(f"storage_v1_audit: {e}")
            return 2
        want = taken(row)
        diff = diff_fields(want, seen)
        name = f"{row['system'].split('_')[1]} {row['workload']}"
        got = {k: sorted({str(s[k]) for s in seen}) for k in diff}
        bad += bool(diff)
        print(f"{name:>20}: {len(runs)} runs  " + ("OK" if not diff else
              "DIFFERS " + "; ".join(f"{k}: runs {'/'.join(got[k])}, taken {want[k]}" for k in diff)))
    print(f"{bad} of the rows differ from their runs")
    return 1 if bad else 0


if __name__ == "__main__":
    import study_args  # an unknown argument refused before the study runs
    study_args.check(words=1, usage="CHECKOUT (a clone of mlcommons/storage_results_v1.0)")
    sys.exit(main())
