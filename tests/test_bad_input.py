"""The bad inputs a new user tried (issue 21, item 6): each is one line on stderr with exit 2 (or a warning and
exit 3 where the rest of the work is still done), never a traceback or a silent table."""

import os

import pytest
from conftest import ROOT

from simcluster.cli import main

CARD = str(ROOT / "models" / "collective" / "h200x2-primitives.yaml")
NVME = str(ROOT / "models" / "nvme" / "micron-9400-pro-7.68tb.yaml")
WORKLOAD = str(ROOT / "scenarios" / "workloads" / "unet3d_h100.yaml")
LOG = ROOT / "calibration" / "h200x2-nvlink-2026-11-22" / "nccl-tests" / "all_reduce.txt"


def one_line_error(capsys, argv, expect: str = "") -> str:
    code = main(argv)
    err = capsys.readouterr().err.strip()
    assert code == 2, err
    assert "\n" not in err and err.startswith("simcluster: error:") and "Traceback" not in err
    assert expect in err
    return err


@pytest.fixture
def binary(tmp_path):
    path = tmp_path / "b.yaml"
    path.write_bytes(os.urandom(4096).replace(b"\x00", b"\x01") + b"\xff")
    return str(path)


@pytest.mark.parametrize("argv", [
    ["run", "{b}"], ["predict", "collective", "--scenario", "{b}", "--op", "all_reduce"],
    ["predict", "collective", "--card", "{b}", "--op", "all_reduce", "--ranks", "2"],
    ["predict", "training", "--scenario", "{b}"],
    ["storage", "max-accelerators", "--workload", "{b}", "--nvme", NVME],
    ["storage", "max-accelerators", "--workload", WORKLOAD, "--nvme", "{b}"]])
def test_a_binary_file_is_one_line_naming_it(capsys, binary, argv):
    err = one_line_error(capsys, [a.replace("{b}", binary) for a in argv], binary)
    assert "not UTF-8" in err or "not a text file" in err


@pytest.mark.parametrize("ranks,expect", [("-2", "1 to 1024"), ("0", "1 to 1024"), ("10000000", "1 to 1024")])
def test_rank_counts_out_of_range(capsys, ranks, expect):
    one_line_error(capsys, ["predict", "collective", "--card", CARD, "--op", "all_reduce", "--ranks", ranks], expect)


def test_sizes_in_the_wrong_order_and_multi_node_on_a_card(capsys):
    one_line_error(capsys, ["predict", "collective", "--card", CARD, "--op", "all_reduce", "--ranks", "2",
                            "-b", "1M", "-e", "1K"], "larger than -e")
    err = one_line_error(capsys, ["predict", "collective", "--card", CARD, "--op", "all_reduce", "--ranks", "512",
                                  "--ranks-per-node", "8"], "spans several nodes")
    assert "--scenario" in err and "not modelled" not in err


def test_no_arguments_is_one_clean_line(capsys):
    err = one_line_error(capsys, [])
    assert err.count("simcluster:") == 1


def test_a_truncated_log_validates_what_it_has_and_says_so(capsys, tmp_path):
    cut = tmp_path / "cut.txt"
    cut.write_bytes(LOG.read_bytes()[:3000])
    code = main(["validate", str(cut), "--card", CARD])
    out, err = capsys.readouterr()
    assert code == 3 and "size(B)" in out
    assert "cut short" in err or "truncated" in err


def test_a_scenario_of_ten_million_gpus_is_refused_with_the_bound(capsys, tmp_path):
    text = (ROOT / "scenarios" / "scale-16k.yaml").read_text()
    path = tmp_path / "scenarios" / "big.yaml"
    path.parent.mkdir()
    (tmp_path / "models").symlink_to(ROOT / "models")
    path.write_text(text.replace("nodes: 2048", "nodes: 1250000"))
    one_line_error(capsys, ["predict", "collective", "--scenario", str(path), "--op", "all_reduce"], "machine.nodes")


def test_an_alias_bomb_is_refused_quickly(capsys, tmp_path):
    bomb = tmp_path / "bomb.yaml"
    levels = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    levels += [f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]" for i in range(1, 9)]
    bomb.write_text("\n".join(levels) + "\nname: *a8\n")
    one_line_error(capsys, ["run", str(bomb)], "expands to more than")


@pytest.mark.parametrize("value,expect", [("-50us", "from 0"), (".nan", "not a time"), ("-1ms", "from 0")])
def test_negative_or_nan_latencies_in_a_card_are_refused(capsys, tmp_path, value, expect):
    text = (ROOT / "models" / "collective" / "h200x2-primitives.yaml").read_text()
    bad = tmp_path / "card.yaml"
    import re

    bad.write_text(re.sub(r"ll_base_latency: \S+", f"ll_base_latency: '{value}'", text, count=1))
    one_line_error(capsys, ["predict", "collective", "--card", str(bad), "--op", "all_reduce", "--ranks", "2"], expect)


@pytest.mark.parametrize("io_size", ["0", "128"])
def test_tiny_io_sizes_are_refused_not_simulated_for_minutes(capsys, io_size):
    one_line_error(capsys, ["storage", "simulate", "--workload", WORKLOAD, "--nvme", NVME, "--io-size", io_size],
                   "I/O size")


def test_nan_or_negative_measurements_in_traces_are_refused(tmp_path, capsys):
    qperf = tmp_path / "q.txt"
    qperf.write_text((ROOT / "calibration" / "local-2026-11-22" / "qperf" / "qperf-1" / "stdout.txt").read_text()
                     .replace("=  47.8 MB/sec", "=  -47.8 MB/sec", 1))
    one_line_error(capsys, ["calibrate", str(qperf), "--line-rate", "1Gbps", "-o", str(tmp_path / "c.yaml")], "negative")
    fio_log = next((ROOT / "calibration" / "local-2026-11-22" / "fio").glob("*/stdout.txt"))
    bad = tmp_path / "fio.txt"
    bad.write_text(fio_log.read_text().replace('"bw_bytes" : ', '"bw_bytes" : NaN, "was" : ', 1))
    from simcluster.errors import TraceFormatError
    from simcluster.traces import fio

    with pytest.raises(TraceFormatError, match="NaN is not a measurement"):
        fio.parse(bad)


def test_unknown_names_deep_in_cards_are_refused(tmp_path, capsys):
    """A typo inside a card's tables is one line, not silently ignored (NCCL's tuner table, a GPU card's sections)."""
    text = (ROOT / "models" / "collective" / "h200x2-primitives.yaml").read_text()
    bad = tmp_path / "tuner.yaml"
    bad.write_text(text.replace("        LL128:", "        LL129:", 1))
    one_line_error(capsys, ["predict", "collective", "--card", str(bad), "--op", "all_reduce", "--ranks", "2"],
                   "LL129: expected one of LL, LL128, Simple, got 'LL129'")
    gpu = (ROOT / "models" / "gpu" / "h100-sxm.yaml").read_text()
    assert "    k_ramp:" in gpu
    card = tmp_path / "gpu.yaml"
    card.write_text(gpu.replace("    k_ramp:", "    k_rmap:", 1))
    from simcluster.errors import ModelCardError
    from simcluster.hardware.gpu import load_gpu

    with pytest.raises(ModelCardError, match="unknown key 'k_rmap'"):
        load_gpu(card)


def test_a_gpu_card_of_any_name_says_its_architecture(tmp_path, capsys):
    """NCCL's decision model needs the GPU architecture: read from the card's name, or its machine.arch."""
    import yaml

    card = yaml.safe_load((ROOT / "models" / "gpu" / "h100-sxm.yaml").read_text())
    card["name"] = "my-custom-gpu"
    scenario = (ROOT / "scenarios" / "llm" / "llama70b-splits.yaml").read_text().replace(
        "../../models/gpu/h100-sxm.yaml", str(tmp_path / "gpu.yaml")).replace("../../models", str(ROOT / "models"))
    (tmp_path / "s.yaml").write_text(scenario)
    (tmp_path / "gpu.yaml").write_text(yaml.safe_dump(card))
    one_line_error(capsys, ["run", str(tmp_path / "s.yaml")], "machine.arch")
    card["machine"] = {"arch": "hopper"}
    (tmp_path / "gpu.yaml").write_text(yaml.safe_dump(card))
    assert main(["run", str(tmp_path / "s.yaml"), "--json"]) == 0


KIND = str(ROOT / "models" / "collective" / "h200-nvlink-kind.yaml")
GRAPH = str(ROOT / "calibration" / "h200x2-graph-2026-11-22")


@pytest.mark.parametrize("argv,expect", [
    (["calibrate", f"{GRAPH}/manifest.json", "--kind-card", KIND, "-o", "{o}"], "read trace bundles"),
    (["calibrate", GRAPH, str(ROOT / "calibration" / "h200x2-graph2-2026-11-22"), "--kind-card", KIND, "-o", "{o}"], "one probe bundle"),
    (["calibrate", GRAPH, "--kind", "--kind-card", KIND, "-o", "{o}"], "give one of them"),
    (["validate", "--held-out-machines", GRAPH, "--card", KIND], "--card does not apply"),
])
def test_options_that_would_be_ignored_are_refused(capsys, tmp_path, argv, expect):
    out = str(tmp_path / "card.yaml")
    one_line_error(capsys, [a.replace("{o}", out) for a in argv], expect)
    assert not (tmp_path / "card.yaml").exists()
