"""The v1.0 Micron rows audited against the submission's run files (studies/storage_v1_audit.py, issue 42, session 43).
A synthetic checkout stands in for mlcommons/storage_results_v1.0: one row's runs written as DLIO writes them."""

import json

import yaml
from conftest import load_script

audit = load_script("studies/storage_v1_audit.py")


def _row(workload="unet3d_h100", system="Micron_9550_Gen5_Performance_NVMe", **extra):
    rows = yaml.safe_load(audit.PUBLISHED.read_text())["runs"]
    return next(r for r in rows if r["workload"] == workload and r["system"] == system) | extra


def _write_run(base, row, run, memory_gb=250.2, **change):
    """One run directory (configs/config.yaml, summary.json) holding what simcluster takes for `row`, then `change`."""
    want = audit.taken(row) | change
    d = base / "Closed/Micron/results" / row["system"] / row["workload"].split("_")[0] / row["workload"].split("_")[1] / run
    (d / "configs").mkdir(parents=True)
    workload = {"dataset": {"record_length": want["record_length"], "num_files_train": want["num_files_train"]},
                "reader": {"batch_size": want["batch_size"], "read_threads": want["read_threads"],
                           "prefetch_size": want["prefetch_size"], "transfer_size": want["transfer_size"]},
                "train": {"computation_time": want["computation_time"]}, "metric": {"au": want["au"]}}
    (d / "configs/config.yaml").write_text(yaml.safe_dump({"workload": workload}))
    (d / "summary.json").write_text(json.dumps({"num_accelerators": want["accelerators"], "host_memory_GB": [memory_gb]}))
    return d


def test_a_run_that_matches_is_ok_and_each_changed_field_is_named(tmp_path):
    row = _row()
    _write_run(tmp_path, row, "run1")
    runs = audit.runs_of(tmp_path, row)
    assert len(runs) == 1 and audit.diff_fields(audit.taken(row), [audit.used(r) for r in runs]) == []
    _write_run(tmp_path, row, "run2", computation_time=0.188, batch_size=4)   # another version's H100 Unet3D
    seen = [audit.used(r) for r in audit.runs_of(tmp_path, row)]
    assert audit.diff_fields(audit.taken(row), seen) == ["batch_size", "computation_time"]


def test_host_memory_against_the_rows_page_cache(tmp_path):
    """MemTotal under mem=256G reads ~250 GiB: within 5% of the 256 GiB taken; a 320G host (313 GiB) is not, unless the
    row states its own page_cache_GiB (the 9550 ResNet-50 A100 row, session 43)."""
    row = {k: v for k, v in _row("resnet50_a100").items() if k != "page_cache_GiB"}   # as recorded before session 43
    _write_run(tmp_path, row, "run1", memory_gb=313.2)
    seen = [audit.used(r) for r in audit.runs_of(tmp_path, row)]
    assert audit.diff_fields(audit.taken(row), seen) == ["host_memory_GiB"]
    shipped = _row("resnet50_a100")
    assert shipped["page_cache_GiB"] == 313 and audit.diff_fields(audit.taken(shipped), seen) == []


def test_no_runs_found_differs_on_everything(tmp_path):
    row = _row()
    assert audit.diff_fields(audit.taken(row), []) == sorted(audit.taken(row))


def test_the_default_page_cache_is_the_packages():
    """The audit takes heldout/storage.PAGE_CACHE_BYTES for a row without page_cache_GiB, not a copy (mendC43)."""
    from simcluster.heldout.storage import PAGE_CACHE_BYTES

    row = {k: v for k, v in _row().items() if k != "page_cache_GiB"}
    assert audit.taken(row)["host_memory_GiB"] * 2**30 == PAGE_CACHE_BYTES


def test_a_run_missing_a_key_is_one_line_naming_the_run_and_the_key(tmp_path, monkeypatch, capsys):
    """A run whose summary.json has no host_memory_GB, or whose config has no read_threads: one line, no traceback."""
    row = _row()
    d = _write_run(tmp_path, row, "run1")
    (d / "summary.json").write_text(json.dumps({"num_accelerators": 8}))
    monkeypatch.setattr("sys.argv", ["storage_v1_audit.py", str(tmp_path)])
    assert audit.main() == 2
    out = capsys.readouterr().out.strip().splitlines()
    assert out[-1] == f"storage_v1_audit: {d / 'summary.json'}: missing 'host_memory_GB'"   # rows before it print theirs
    config = yaml.safe_load((d / "configs/config.yaml").read_text())
    del config["workload"]["reader"]["read_threads"]
    (d / "configs/config.yaml").write_text(yaml.safe_dump(config))
    try:
        audit.used(d)
    except audit.RunFileError as e:
        assert str(e) == f"{d / 'configs/config.yaml'}: missing 'read_threads'"
    else:
        raise AssertionError("no RunFileError")
