"""Issue 27, security and losing work: host names never reach ssh as options, run folders and card files stay in
their output folder, a manifest cannot make calibration read or record a file outside its bundle, one bad input
costs only its own card, and every result file is written atomically, under a lock, with one-line errors."""

from __future__ import annotations

import errno
import json
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from simcluster import files
from simcluster.cli import main
from simcluster.errors import SimclusterError
from simcluster.fit.bundle import calibrate_bundle
from simcluster.fit.bundle_files import timing_logs
from simcluster.runner import collect, plans

ROOT = Path(__file__).resolve().parent.parent
LOCAL = ROOT / "calibration" / "local-2026-11-22"
H200X4 = ROOT / "calibration" / "h200x4-collect-2026-11-22"


def _one_error_line(capsys) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("simcluster: error: "), err
    return err[0]


def _bundle(tmp_path: Path, source: Path, tools: tuple[str, ...], name: str = "b") -> Path:
    """A copy of `tools`' runs of a committed bundle (folders and manifest entries)."""
    bundle = tmp_path / name
    runs = [r for r in json.loads((source / "manifest.json").read_text())["runs"] if r["tool"] in tools]
    for tool in tools:
        shutil.copytree(source / tool, bundle / tool)
    (bundle / "manifest.json").write_text(json.dumps({"runs": runs}))
    return bundle


def _stub(bin_dir: Path, name: str) -> None:
    bin_dir.mkdir(exist_ok=True)
    path = bin_dir / name
    path.write_text("#!/bin/sh\nsleep 1\nexit 0\n")      # slow enough for ssh to run a ProxyCommand
    path.chmod(path.stat().st_mode | stat.S_IEXEC)


# --- collect: host names and run folders ------------------------------------------------------------------------

def test_a_host_that_reads_as_an_ssh_option_is_refused_and_runs_nothing(tmp_path, capsys, monkeypatch):
    """`--hosts 'localhost,-oProxyCommand=touch X'` used to reach `ssh -o BatchMode=yes -oProxyCommand=...`."""
    if shutil.which("ssh") is None:
        pytest.skip("no ssh client: the injected option could not run anyway")
    _stub(tmp_path / "bin", "qperf")                     # the client and readiness probe succeed
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}:{os.environ['PATH']}")
    marker = tmp_path / "pwned"
    code = main(["collect", "--out", str(tmp_path / "out"), "--tools", "qperf", "--qperf-repeat", "1", "--qperf-time", "1",
                 "--hosts", f"localhost,-oProxyCommand=touch {marker}"])
    assert code == 2
    line = _one_error_line(capsys)
    assert "-oProxyCommand" in line and "host name" in line
    assert not marker.exists() and not (tmp_path / "out" / "manifest.json").exists()


@pytest.mark.parametrize("host", ["-oProxyCommand=x", "a b", "h;id", "h\nx", "$(id)", "@h", "u@", "fe80::1%$(id)", "a..b", ""])
def test_bad_host_names_are_one_line_errors(host):
    with pytest.raises(SimclusterError, match="not a host name") as err:
        plans.check(plans.Options(hosts=["localhost", host]))
    assert "\n" not in err.value.one_line()


@pytest.mark.parametrize("host", ["localhost", "gpu-01.lab.example.com", "node_7", "10.0.0.2", "root@10.0.0.2", "::1",
                                  "fe80::1%eth0", "ubuntu@h200-a"])
def test_good_host_names_pass_and_ssh_ends_its_options_before_the_host(host):
    opts = plans.Options(hosts=["localhost", host])
    plans.check(opts)
    server = plans.qperf_steps(opts)[0].server_argv
    assert server[-3:] == ["--", host, "qperf"]


def test_qperf_host_is_checked_too():
    with pytest.raises(SimclusterError, match="--qperf-host"):
        plans.plan(["qperf"], plans.Options(qperf_host="-oX"), Path("/nonexistent"))


@pytest.mark.parametrize("option, value, escaped", [
    ("--ops", "../../escaped-op", "escaped-op"),
    ("--ddp-models", "../../escaped-model:32:128", "escaped-model-32-b128"),
    ("--dlio-workload", "../../escaped-wl", "escaped-wl-1acc"),
])
def test_values_that_name_run_folders_cannot_leave_out(tmp_path, capsys, option, value, escaped):
    """Each of these used to build DIR/<tool>/<value...>, so '../../' put a run folder beside DIR."""
    tool = {"--ops": "nccl-tests", "--ddp-models": "ddp-step", "--dlio-workload": "dlio"}[option]
    out = tmp_path / "deep" / "out"
    code = main(["collect", "--out", str(out), "--tools", tool, option, value, "--timeout", "20", "--dlio", "/nonexistent/dlio"])
    assert code == 2
    assert value in _one_error_line(capsys)
    assert not any(p.name.startswith("escaped") for p in tmp_path.rglob("*")), escaped


def test_collect_refuses_a_step_whose_run_folder_leaves_the_bundle(tmp_path):
    step = collect.Step("fio", "../../outside", ["true"])
    with pytest.raises(SimclusterError, match="cannot name a file or folder"):
        collect.collect(tmp_path / "b", [step], ["fio"], {})
    assert not (tmp_path / "outside").exists()


def test_ddp_model_image_and_batch_must_be_numbers():
    with pytest.raises(SimclusterError, match="whole numbers"):
        plans.ddp_steps(plans.Options(gpus=1, ddp_models=("resnet18:32px:128",)))


# --- calibrate BUNDLE: names from trace data, manifest paths --------------------------------------------------------

def test_a_model_name_from_trace_data_cannot_write_outside_o(tmp_path, capsys):
    """ddp-step's model name names the training card's file: 'x/../../EVIL' used to write beside -o."""
    bundle = _bundle(tmp_path, H200X4, ("ddp-step",))
    log = bundle / "ddp-step" / "resnet18-32-b128" / "stdout.txt"
    log.write_text("".join(json.dumps({**json.loads(line), "model": "x/../../EVIL"}) + "\n"
                           for line in log.read_text().splitlines() if line.strip()))
    out = tmp_path / "cards"
    (out / "training-x").mkdir(parents=True)              # so that the old path would resolve
    assert main(["calibrate", str(bundle), "-o", str(out)]) == 3
    assert not list(tmp_path.rglob("EVIL*"))
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "x/../../EVIL" in err[0] and str(log) in err[0]
    assert sorted(p.name for p in out.glob("*.yaml")) == ["training-resnet101-224-b32.yaml", "training-resnet34-32-b256.yaml",
                                                          "training-resnet50-224-b64.yaml"]


@pytest.mark.parametrize("how", ["absolute", "dotdot", "symlink-folder", "symlink-file"])
def test_a_manifest_path_outside_the_bundle_is_never_read_or_recorded(tmp_path, capsys, how):
    """A qperf run whose files are outside the bundle (a real, valid trace) used to give a NIC card that
    recorded that file's path and sha256; now the run is refused, named on stderr, and no card is made of it."""
    outside = tmp_path / "outside"
    shutil.copytree(LOCAL / "qperf" / "qperf-1", outside)
    bundle = _bundle(tmp_path, LOCAL, ("fio",))
    path = {"absolute": str(outside), "dotdot": "../outside"}.get(how, "qperf/qperf-1")
    if how == "symlink-folder":
        (bundle / "qperf").mkdir()
        (bundle / "qperf" / "qperf-1").symlink_to(outside)
    elif how == "symlink-file":
        (bundle / "qperf" / "qperf-1").mkdir(parents=True)
        (bundle / "qperf" / "qperf-1" / "stdout.txt").symlink_to(outside / "stdout.txt")
    manifest = json.loads((bundle / "manifest.json").read_text())
    manifest["runs"].append({"tool": "qperf", "run_id": "qperf-1", "path": path, "status": "ok"})
    (bundle / "manifest.json").write_text(json.dumps(manifest))
    out = tmp_path / "cards"
    assert main(["calibrate", str(bundle), "-o", str(out)]) == 3
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "outside the bundle" in err[0] and "not read" in err[0]
    assert [p.name for p in out.glob("*.yaml")] == ["nvme-local.yaml"]
    recorded = [t["path"] for t in yaml.safe_load((out / "nvme-local.yaml").read_text())["provenance"]["traces"]]
    assert recorded and all(files.inside(bundle, p) for p in recorded)


def test_validate_bundle_refuses_a_manifest_path_outside_it(tmp_path):
    bundle = tmp_path / "b"
    bundle.mkdir()
    (bundle / "manifest.json").write_text(json.dumps({"runs": [
        {"tool": "nccl-tests", "run_id": "all_reduce", "path": "/etc", "status": "ok"}]}))
    with pytest.raises(SimclusterError, match="outside the bundle"):
        timing_logs(bundle)


def test_the_library_returns_documents_and_writes_nothing(tmp_path):
    bundle = _bundle(tmp_path, LOCAL, ("fio",))
    before = sorted(tmp_path.rglob("*"))
    result = calibrate_bundle(bundle)
    assert sorted(tmp_path.rglob("*")) == before
    assert list(result.documents) == ["nvme-local.yaml"] and result.problems == ()
    assert yaml.safe_load(result.documents["nvme-local.yaml"])["kind"] == "nvme"


# --- losing work: one bad input costs only its own card --------------------------------------------------------------

def test_one_empty_ddp_log_of_four_keeps_the_other_three_cards(tmp_path, capsys):
    bundle = _bundle(tmp_path, H200X4, ("ddp-step",))
    empty = bundle / "ddp-step" / "resnet34-32-b256" / "stdout.txt"
    empty.write_text("")
    out = tmp_path / "cards"
    assert main(["calibrate", str(bundle), "-o", str(out)]) == 3
    assert sorted(p.name for p in out.glob("*.yaml")) == ["training-resnet101-224-b32.yaml", "training-resnet18-32-b128.yaml",
                                                          "training-resnet50-224-b64.yaml"]
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"simcluster: skipped: {empty}: the file is empty"]


def test_a_bad_perf_csv_costs_the_note_not_the_nic_card(tmp_path, capsys):
    bundle = _bundle(tmp_path, LOCAL, ("qperf", "perf-stat"))
    csv = bundle / "perf-stat" / "qperf-tcp_bw" / "perf.csv"
    csv.write_text("# started on a day\n# nothing counted\n")
    out = tmp_path / "cards"
    assert main(["calibrate", str(bundle), "-o", str(out)]) == 3
    card = yaml.safe_load((out / "nic-tcp.yaml").read_text())
    assert not any("perf stat" in note for note in card["fit"]["notes"])
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and str(csv) in err[0] and "without the perf note" in err[0]
    # the same bundle with its perf.csv intact: exit 0, and the note is there
    good = _bundle(tmp_path, LOCAL, ("qperf", "perf-stat"), "good")
    assert main(["calibrate", str(good), "-o", str(tmp_path / "good-cards")]) == 0
    notes = yaml.safe_load((tmp_path / "good-cards" / "nic-tcp.yaml").read_text())["fit"]["notes"]
    assert any(n.startswith("perf stat task-clock") for n in notes)


def test_a_bundle_that_gives_no_card_exits_2_with_each_reason_on_stderr(tmp_path, capsys):
    bundle = _bundle(tmp_path, LOCAL, ("fio",))
    for log in (bundle / "fio").glob("*/stdout.txt"):
        log.write_text("")
    assert main(["calibrate", str(bundle), "-o", str(tmp_path / "cards")]) == 2
    captured = capsys.readouterr()
    err = captured.err.strip().splitlines()
    assert captured.out == "" and len(err) == 7
    assert all(line.startswith("simcluster: skipped: ") and "the file is empty" in line for line in err[:6])
    assert err[-1].startswith("simcluster: error: ") and "no card" in err[-1]
    assert not (tmp_path / "cards").exists()


# --- the writer -----------------------------------------------------------------------------------------------------

def _fail_on_second_write(monkeypatch, exc: OSError):
    """The second staged document fails half-way (a full disk): some bytes written, then the error."""
    real = files._stage
    calls = []

    def stage(target, text, mode):
        calls.append(target)
        if len(calls) == 2:
            tmp = real(target, text[: len(text) // 2], mode)
            tmp.unlink()
            raise exc
        return real(target, text, mode)

    monkeypatch.setattr(files, "_stage", stage)


def test_a_failure_mid_write_leaves_every_old_card_whole(tmp_path, monkeypatch):
    folder = tmp_path / "cards"
    files.write_documents(folder, {"a.yaml": "old a\n", "b.yaml": "old b\n"})
    _fail_on_second_write(monkeypatch, OSError(errno.ENOSPC, "No space left on device"))
    with pytest.raises(files.OutputError, match="No space left on device") as err:
        files.write_documents(folder, {"a.yaml": "new a\n" * 1000, "b.yaml": "new b\n" * 1000})
    assert "\n" not in err.value.one_line()
    assert (folder / "a.yaml").read_text() == "old a\n" and (folder / "b.yaml").read_text() == "old b\n"
    assert sorted(p.name for p in folder.iterdir()) == ["a.yaml", "b.yaml"]          # no temporary file, no lock left


def test_a_real_crash_mid_write_leaves_the_old_card(tmp_path):
    """A process killed while writing (os._exit after ten bytes): the old card is whole; its stale lock is taken
    over by the next write."""
    folder = tmp_path / "cards"
    files.write_document(folder / "card.yaml", "old\n")
    script = (f"import os, simcluster.files as f\n"
              f"real = f._stage\n"
              f"def stage(t, x, m):\n    p = real(t, x[:10], m)\n    os._exit(9)\n"
              f"f._stage = stage\nf.write_document({str(folder / 'card.yaml')!r}, 'new card ' * 100)\n")
    assert subprocess.run([sys.executable, "-c", script], cwd=ROOT).returncode == 9
    assert (folder / "card.yaml").read_text() == "old\n"
    files.write_document(folder / "card.yaml", "new\n")
    assert (folder / "card.yaml").read_text() == "new\n" and not list(folder.glob(".*.lock"))


def test_a_folder_in_use_by_a_live_simcluster_process_is_refused(tmp_path):
    folder = tmp_path / "cards"
    folder.mkdir()
    holder = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        (folder / files.FOLDER_LOCK).write_text(f"{holder.pid} {os.uname().nodename}\n")
        with pytest.raises(files.OutputError, match=f"another simcluster process \\(pid {holder.pid}\\)"):
            files.write_documents(folder, {"a.yaml": "x\n"})
        assert not (folder / "a.yaml").exists() and (folder / files.FOLDER_LOCK).exists()
    finally:
        holder.kill()
        holder.wait()
    # the holder is gone: its lock is stale, taken over, and removed at the end
    files.write_documents(folder, {"a.yaml": "x\n"})
    assert (folder / "a.yaml").read_text() == "x\n" and not (folder / files.FOLDER_LOCK).exists()


def test_two_calibrations_into_one_folder_the_second_is_refused(tmp_path, capsys, monkeypatch):
    bundle = _bundle(tmp_path, LOCAL, ("fio",))
    out = tmp_path / "cards"
    seen = []
    real = files._commit

    def commit(targets):                                # while the first holds the lock, a second run starts
        seen.append(main(["calibrate", str(bundle), "-o", str(out)]))
        return real(targets)

    monkeypatch.setattr(files, "_commit", commit)
    assert main(["calibrate", str(bundle), "-o", str(out)]) == 0
    assert seen == [2] and "another simcluster process" in capsys.readouterr().err
    assert (out / "nvme-local.yaml").is_file()


def _read_only(monkeypatch, folder: Path):
    """Creating anything under `folder` fails as on a read-only mount (as root, chmod would not stop it)."""
    real = os.open

    def ro_open(path, flags, *args, **kwargs):
        if flags & os.O_CREAT and str(path).startswith(str(folder)):
            raise OSError(errno.EROFS, "Read-only file system", str(path))
        return real(path, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", ro_open)


def test_a_read_only_folder_is_one_line(tmp_path, capsys, monkeypatch):
    bundle = _bundle(tmp_path, LOCAL, ("fio",))
    out = tmp_path / "cards"
    out.mkdir()
    if os.geteuid() == 0:
        _read_only(monkeypatch, out)
    else:
        out.chmod(0o555)
    assert main(["calibrate", str(bundle), "-o", str(out)]) == 2
    line = _one_error_line(capsys)
    assert str(out) in line and ("Read-only" in line or "Permission denied" in line)


def test_a_folder_where_a_file_is_expected_and_the_reverse_are_one_line(tmp_path, capsys):
    bundle = _bundle(tmp_path, LOCAL, ("fio",))
    out = tmp_path / "cards"
    (out / "nvme-local.yaml").mkdir(parents=True)
    assert main(["calibrate", str(bundle), "-o", str(out)]) == 2
    assert "a folder is in the way" in _one_error_line(capsys)
    a_file = tmp_path / "file"
    a_file.write_text("")
    assert main(["calibrate", str(bundle), "-o", str(a_file)]) == 2
    assert "a file is in the way" in _one_error_line(capsys)
    scenario = ROOT / "scenarios" / "seed000-resnet18-2servers.yaml"
    assert main(["predict", "training", "--scenario", str(scenario), "--trace", str(out)]) == 2
    assert "a folder is in the way" in _one_error_line(capsys)


def test_output_names_stay_inside_the_folder(tmp_path):
    for name in ("../x.yaml", "/tmp/x.yaml", "a/b/c.yaml", ".hidden", "a/../../x"):
        with pytest.raises(files.OutputError):
            files.write_documents(tmp_path / "out", {name: "x"})
    (tmp_path / "out" / "link").symlink_to(tmp_path)
    with pytest.raises(files.OutputError, match="outside the output folder"):
        files.write_documents(tmp_path / "out", {"link/x.yaml": "x"})
    assert not (tmp_path / "x.yaml").exists()


def test_collect_refuses_a_bundle_folder_another_process_is_writing(tmp_path):
    out = tmp_path / "b"
    out.mkdir()
    (out / files.FOLDER_LOCK).write_text(f"{os.getpid()} {os.uname().nodename}\n")
    with pytest.raises(files.OutputError, match="another simcluster process"):
        collect.collect(out, [collect.Step("fio", "x", ["true"])], ["fio"], {})
    assert not (out / "fio").exists()
    (out / files.FOLDER_LOCK).unlink()
    manifest, code = collect.collect(out, [collect.Step("fio", "x", ["true"])], ["fio"], {})
    assert code == collect.EXIT_OK and not (out / files.FOLDER_LOCK).exists()


def test_a_manifest_not_written_by_collect_is_one_line(tmp_path, capsys):
    """Hand-made manifests (runs without status) used to stop calibration with a KeyError traceback."""
    bundle = tmp_path / "b"
    bundle.mkdir()
    (bundle / "manifest.json").write_text(json.dumps({"runs": [{"file": "x.txt", "op": "all_reduce"}]}))
    assert main(["calibrate", str(bundle), "-o", str(tmp_path / "cards")]) == 2
    assert "not a manifest written by simcluster collect" in _one_error_line(capsys)


def test_collect_into_a_file_is_one_line(tmp_path, capsys):
    """fio's data folder and the hostfile are made while planning: a file in the way used to be a traceback."""
    a_file = tmp_path / "file"
    a_file.write_text("")
    for tools in ("fio", "qperf"):
        assert main(["collect", "--out", str(a_file), "--tools", tools, "--qperf-repeat", "1"]) == 2
        assert "a file is in the way" in _one_error_line(capsys)
