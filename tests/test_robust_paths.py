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
