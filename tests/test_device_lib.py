"""calibration/device_lib.sh, the run / pack helper new bundles' device scripts source (session 38): run on this machine
with a stand-in $OUT (no GPU needed: the machine records fail into their files and the runs go on)."""

import subprocess
import tarfile

from conftest import ROOT


def _source(tmp_path, body: str, **env) -> subprocess.CompletedProcess:
    script = f". calibration/device_lib.sh\n{body}\n"
    return subprocess.run(["bash", "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=60,
                          env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), **env})


def test_runs_are_recorded_and_packed_after_each(tmp_path):
    w, out = tmp_path / "w", tmp_path / "out"
    out.mkdir()
    got = _source(tmp_path, 'run ok 10 echo \'{"a": 1}\'\nrun bad 10 bash -c "echo oops >&2; exit 3"\nrun slow 1 sleep 5',
                  W=str(w), OUT=str(out))
    assert got.returncode == 0, got.stderr
    status = (w / "runs" / "status.txt").read_text().splitlines()
    assert [line.split()[:3] for line in status] == [["ok", "exit", "0"], ["bad", "exit", "3"], ["slow", "exit", "124"]]
    assert (w / "runs" / "ok.json").read_text() == '{"a": 1}\n'
    assert "oops" in got.stdout   # a failed run's stderr tail is shown
    with tarfile.open(out / "runs.tgz") as tar:
        names = set(tar.getnames())
    assert {"runs/ok.json", "runs/bad.stderr.txt", "runs/status.txt", "runs/commit.txt"} <= names


def test_it_refuses_without_its_folders(tmp_path):
    got = _source(tmp_path, "echo reached", OUT=str(tmp_path))
    assert got.returncode != 0 and "set W" in got.stderr and "reached" not in got.stdout
    got = _source(tmp_path, "echo reached", W=str(tmp_path / "w"))
    assert got.returncode != 0 and "OUT" in got.stderr and "reached" not in got.stdout
