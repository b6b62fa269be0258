"""calibration/device_tree.sh in a temporary git repository (mendB, s35): slim removes only large tracked files (transport
sweeps and KEEP_PATTERN kept, names with spaces included), a second slim goes ahead, restore brings back only the deleted
files (an uncommitted edit survives), slim refuses an uncommitted edit."""

import shutil
import subprocess

import pytest
from conftest import ROOT

pytestmark = pytest.mark.skipif(shutil.which("git") is None or shutil.which("bash") is None, reason="needs git and bash")
BIG = 300_000


def _git(repo, *args):
    subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True)


def _repo(tmp_path):
    cal = tmp_path / "calibration"
    (cal / "a set").mkdir(parents=True)
    shutil.copy(ROOT / "calibration/device_tree.sh", cal / "device_tree.sh")
    (cal / "a set" / "big trace.json.gz").write_bytes(b"x" * BIG)
    (cal / "a set" / "keep-me.gz").write_bytes(b"k" * BIG)
    (cal / "transport-sweep.csv").write_bytes(b"t" * BIG)
    (cal / "small.txt").write_text("small\n")
    _git(tmp_path, "init", "-q")
    _git(tmp_path, "add", "-A")
    _git(tmp_path, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "init")
    return cal


def _run(cal, *args):
    return subprocess.run(["bash", str(cal / "device_tree.sh"), *args], capture_output=True, text=True)


def test_slim_restore_and_refusal(tmp_path):
    cal = _repo(tmp_path)
    r = _run(cal, "slim", "keep-me")
    assert r.returncode == 0, r.stderr
    assert not (cal / "a set" / "big trace.json.gz").exists()
    assert (cal / "a set" / "keep-me.gz").exists() and (cal / "transport-sweep.csv").exists() and (cal / "small.txt").exists()
    again = _run(cal, "slim")           # the deletions are not changes to refuse
    assert again.returncode == 0, again.stderr
    assert not (cal / "a set" / "keep-me.gz").exists()
    (cal / "small.txt").write_text("edited, not committed\n")
    r = _run(cal, "restore")
    assert r.returncode == 0, r.stderr
    assert (cal / "a set" / "big trace.json.gz").stat().st_size == BIG and (cal / "a set" / "keep-me.gz").exists()
    assert (cal / "small.txt").read_text() == "edited, not committed\n"     # restore keeps an uncommitted edit
    refused = _run(cal, "slim")
    assert refused.returncode == 2 and "uncommitted changes" in refused.stderr
    assert (cal / "a set" / "big trace.json.gz").exists()


def test_slim_with_nothing_large_succeeds(tmp_path):
    cal = _repo(tmp_path)
    for path in (cal / "a set" / "big trace.json.gz", cal / "a set" / "keep-me.gz", cal / "transport-sweep.csv"):
        path.write_bytes(b"s")
    _git(tmp_path, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qam", "small")
    r = _run(cal, "slim")
    assert r.returncode == 0 and "removed 0 files" in r.stdout, r.stderr
