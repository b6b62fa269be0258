"""calibration/device_lib.sh, the run / pack helper new bundles' device scripts source (session 38): run on this machine
with a stand-in $OUT (no GPU needed: the machine records fail into their files and the runs go on)."""

import hashlib
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


def _commit_txt(tmp_path, cwd, lib, registered: bool, body: str = "", beside: str = "") -> list[str]:
    bundle, w, out = tmp_path / "bundle", tmp_path / "w", tmp_path / "out"
    bundle.mkdir()
    out.mkdir()
    (bundle / "device_run.sh").write_text(f"W={w}; . {lib}\n{body}\n")
    if beside:
        (bundle / "device_run.py").write_text(beside)
    if registered:
        (bundle / "registered.yaml").write_text("rule: {}\n")
    got = subprocess.run(["bash", str(bundle / "device_run.sh")], cwd=cwd, capture_output=True, text=True, timeout=60,
                         env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "OUT": str(out), "MAIN_COMMIT": "abc123"})
    assert got.returncode == 0, got.stderr
    return (w / "runs" / "commit.txt").read_text().splitlines()


def _sha(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_commit_txt_records_head_and_the_scripts_hashes(tmp_path):
    """MAIN_COMMIT, git HEAD where a .git exists, the sha256 of the calling script and of its registered.yaml."""
    lines = _commit_txt(tmp_path, ROOT, "calibration/device_lib.sh", registered=True)
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    assert lines[0].startswith("abc123 (main, as given by the caller)")
    assert lines[1] == f"{head} (git rev-parse HEAD of the device copy: the checkout's base commit, not the tree that ran -- the tree_hash line is)"
    assert lines[2].split() == [_sha(tmp_path / "bundle" / "device_run.sh"), str(tmp_path / "bundle" / "device_run.sh")]
    assert lines[3].split() == [_sha(tmp_path / "bundle" / "registered.yaml"), str(tmp_path / "bundle" / "registered.yaml")]


def test_commit_txt_says_so_without_a_git_or_a_registration(tmp_path):
    lines = _commit_txt(tmp_path, tmp_path, ROOT / "calibration" / "device_lib.sh", registered=False)
    assert lines[1] == "no .git (git rev-parse HEAD not taken)"
    assert lines[2].split()[0] == _sha(tmp_path / "bundle" / "device_run.sh")
    assert lines[3] == "no registered.yaml beside the calling script"
    assert lines[4] == "no Python script beside or named by the calling script"


def test_commit_txt_hashes_the_python_scripts_the_device_script_runs(tmp_path):
    """Each *.py beside the calling script and each .py it names that is a file in the repository (once each); a name
    that is no file (a module run with -m, a script elsewhere) is not hashed."""
    body = ("run a 5 python3 studies/fa2_wave_read.py --x\nrun b 5 python3 studies/fa2_wave_read.py\n"
            f"run c 5 python3 {tmp_path}/bundle/device_run.py\nrun d 5 python3 nowhere/gone.py")
    lines = _commit_txt(tmp_path, ROOT, "calibration/device_lib.sh", registered=True, body=body, beside="print(1)\n")
    beside = tmp_path / "bundle" / "device_run.py"
    assert [line.split() for line in lines[4:-1]] == [[_sha(beside), str(beside)],
                                                   [_sha(ROOT / "studies" / "fa2_wave_read.py"), "studies/fa2_wave_read.py"]]


def test_commit_txt_without_a_calling_script(tmp_path):
    w, out = tmp_path / "w", tmp_path / "out"
    out.mkdir()
    assert _source(tmp_path, "true", W=str(w), OUT=str(out)).returncode == 0
    assert (w / "runs" / "commit.txt").read_text().splitlines()[2] == "no calling script (sourced from a shell)"


def test_commit_txt_records_the_code_tree_that_ran_and_a_change_moves_it(tmp_path):
    """The last line is the documented tree hash of simcluster/ and validation/ (calibration/README.md's command); in a
    repository whose simcluster/ differs by one byte it differs; registration.checkout_tree_hash (what the read-outs
    compare it with) gives the same hash, also with a tracked file deleted (cold review finalB48 item 2); without a
    .git it says so."""
    from simcluster.heldout.registration import checkout_tree_hash

    lines = _commit_txt(tmp_path, ROOT, "calibration/device_lib.sh", registered=True)
    assert lines[-1] == f"{checkout_tree_hash(ROOT)} (tree_hash: simcluster/ and validation/ as they ran, tracked or not ignored)"
    repo = tmp_path / "repo"
    (repo / "simcluster").mkdir(parents=True)
    (repo / "simcluster" / "a.py").write_text("x = 1\n")
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    lib = ROOT / "calibration" / "device_lib.sh"
    for k in (1, 2):
        (tmp_path / f"r{k}").mkdir()
    before = _commit_txt(tmp_path / "r1", repo, lib, registered=False)[-1]
    (repo / "simcluster" / "a.py").write_text("x = 2\n")   # uncommitted: the copy that runs is what is hashed
    after = _commit_txt(tmp_path / "r2", repo, lib, registered=False)[-1]
    assert after.split()[0] == checkout_tree_hash(repo) and before != after
    (repo / "simcluster" / "b.py").write_text("y = 1\n")
    subprocess.run(["git", "add", "simcluster/b.py"], cwd=repo, check=True)
    (repo / "simcluster" / "b.py").unlink()   # tracked, deleted: left out by both
    (tmp_path / "r3").mkdir()
    deleted = _commit_txt(tmp_path / "r3", repo, lib, registered=False)[-1]
    assert deleted.split()[0] == checkout_tree_hash(repo) == after.split()[0]
    (tmp_path / "nogit").mkdir()
    lines = _commit_txt(tmp_path / "nogit", tmp_path / "nogit", ROOT / "calibration" / "device_lib.sh", registered=False)
    assert lines[-1] == "no .git (tree_hash not taken)"
