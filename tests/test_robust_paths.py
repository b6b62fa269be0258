"""Issue 45: names derived from input data are sanitised before they become file names; nothing is written outside
the folders the user named; temporary folders go on every exit path."""

import pytest
from conftest import ROOT

from simcluster.cli import main
from simcluster.files import file_stem

WORKLOAD = ROOT / "scenarios" / "workloads" / "unet3d_h100.yaml"
NVME = str(ROOT / "models" / "nvme" / "micron-9400-pro-7.68tb.yaml")


@pytest.mark.parametrize("value,stem", [("../../x", "_.._x"), ("/etc/passwd", "_etc_passwd"), ("..", "out"), ("", "out"),
                                        ("a b$c", "a_b_c"), ("x" * 300, "x" * 80), ("unet3d-1acc", "unet3d-1acc")])
def test_file_stem_is_always_a_plain_name(value, stem):
    assert file_stem(value) == stem


def test_plot_dir_figures_stay_in_the_plot_folder(tmp_path, capsys):
    model = "../../escaped$" + "x" * 300
    workload = tmp_path / "w.yaml"
    workload.write_text(WORKLOAD.read_text().replace("model: unet3d", f"model: {model!r}"))
    plots = tmp_path / "a" / "plots"
    code = main(["storage", "simulate", "--workload", str(workload), "--nvme", NVME, "--steps", "2", "--accelerators", "1",
                 "--plot-dir", str(plots), "--json"])
    assert code == 0, capsys.readouterr().err
    written = sorted(p for p in tmp_path.rglob("*.png"))
    assert len(written) == 3 and all(p.parent == plots for p in written)
    assert all(len(p.name) < 120 for p in written)
    assert not (tmp_path / "escaped").exists()


@pytest.mark.slow
@pytest.mark.parametrize("how", ["SIGINT", "SIGTERM"])   # Ctrl-C; kill or a CI's timeout
def test_an_interrupted_sweep_leaves_no_dask_scratch_folder(tmp_path, how):
    import os
    import signal
    import subprocess
    import sys
    import time

    from test_sweep_spec import collective_sweep

    from simcluster.sweep import store

    scratch = tmp_path / "tmp"
    scratch.mkdir()
    scenario = collective_sweep(tmp_path, nodes=tuple(range(2, 2002)), per_node=(1, 2))   # long enough to be caught running
    out = tmp_path / "results"
    proc = subprocess.Popen([sys.executable, "-m", "simcluster", "sweep", str(scenario), "-o", str(out), "--workers", "1",
                             "--chunk", "1", "--flush-rows", "5"], env={**os.environ, "TMPDIR": str(scratch)},
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            # a job started in the background of a non-interactive shell inherits SIGINT ignored; Ctrl-C is not
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.time() + 90
    try:
        while not store.parts(out) and proc.poll() is None and time.time() < deadline:
            time.sleep(0.05)
        assert list(scratch.iterdir()), "the sweep made no scratch folder to clean"
        assert proc.poll() is None, "the sweep finished before it could be interrupted (make it longer)"
        proc.send_signal(getattr(signal, how))
    finally:
        proc.wait(timeout=60)
    assert proc.returncode != 0, "the sweep finished before it could be interrupted"
    assert store.parts(out)                     # what was written stays
    assert not list(scratch.iterdir()), list(scratch.iterdir())


@pytest.mark.parametrize("argv", [["run", "x\x00.yaml"], ["parse", "a\x00b"], ["calibrate", str(ROOT / "README.md"), "-o", "c\x00.yaml"]])
def test_a_nul_byte_in_an_argument_is_one_line(capsys, argv):
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("simcluster: error: argument") and "NUL byte" in err and "\n" not in err


def test_a_nul_byte_or_a_long_name_in_a_library_path_is_a_simcluster_error(tmp_path):
    from simcluster import strict
    from simcluster.errors import SimclusterError

    with pytest.raises(SimclusterError, match="embedded null byte"):
        strict.read_text("a\x00b.yaml")
    with pytest.raises(SimclusterError, match="File name too long"):
        strict.load_yaml(tmp_path / ("n" * 300 + ".yaml"))
