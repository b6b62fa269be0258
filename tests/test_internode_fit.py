"""Issue 41 item 3: a multi-node nccl-tests log calibrates the NIC's inter-node terms (fit/fabric.py)."""

from pathlib import Path

import yaml

from simcluster.cli import main

ROOT = Path(__file__).resolve().parent.parent
OCI_LOG = ROOT / "calibration/oci-bm-gpu-h100-8x2/nccl-tests/all_reduce.txt"


def _scenario(tmp_path, efficiency, latency):
    nic = (ROOT / "models/nic/seed000-roce-100g.yaml").read_text()
    nic = "\n".join(f"  efficiency: {efficiency}" if line.startswith("  efficiency:") else
                    f"  latency: {latency}" if line.startswith("  latency:") else line for line in nic.splitlines())
    (tmp_path / "nic.yaml").write_text(nic + "\n")
    text = (ROOT / "scenarios/whatif/100g-vs-400g.yaml").read_text()
    text = text.replace("../../models/nic/seed000-roce-100g.yaml", str(tmp_path / "nic.yaml")).replace("../../models", str(ROOT / "models"))
    (tmp_path / "sc.yaml").write_text(text)
    return tmp_path / "sc.yaml"


def test_a_log_made_by_a_known_nic_gives_that_nic_back(tmp_path, capsys):
    """Closed loop: the 100G machine's own predicted all_reduce, written in nccl-tests' layout, calibrated on the same
    machine with a wrong NIC card (efficiency 0.8, latency 30 us) recovers the card it was made with (0.973, 13.9 us)."""
    assert main(["predict", "collective", "--scenario", str(ROOT / "scenarios/whatif/100g-vs-400g.yaml"), "--variant", "100g",
                 "--op", "all_reduce", "-b", "8", "-e", "4G", "-f", "4"]) == 0
    log = tmp_path / "log.txt"
    log.write_text(capsys.readouterr().out)
    out = tmp_path / "fitted.yaml"
    assert main(["calibrate", str(log), "--scenario", str(_scenario(tmp_path, 0.8, "30us")), "--variant", "100g", "-o", str(out)]) == 0
    card = yaml.safe_load(out.read_text())
    assert abs(card["params"]["efficiency"] - 0.973) < 0.005
    assert card["params"]["latency"].endswith("us") and abs(float(card["params"]["latency"][:-2]) - 13.9) < 0.7
    assert card["fit"]["fitted"] == ["efficiency", "latency"] and card["fit"]["mean_abs_error_pct_in_sample"] < 0.5
    assert card["fit"]["mean_abs_error_pct_before"] > 10


def test_a_multi_node_log_without_a_machine_or_on_a_nic_that_does_not_bind_is_one_line(tmp_path, capsys):
    assert main(["calibrate", str(OCI_LOG), "-o", str(tmp_path / "x.yaml")]) == 2
    assert "give --scenario" in capsys.readouterr().err
    # seed 002's 1-16 GiB all_reduce runs NVLS-tree, bound inside the nodes: the NIC's terms do not move it
    assert main(["calibrate", str(OCI_LOG), "--scenario", str(ROOT / "scenarios/oci-bm-gpu-h100-8x2.yaml"), "-o", str(tmp_path / "x.yaml")]) == 2
    err = capsys.readouterr().err
    assert "another limit binds" in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "x.yaml").exists()


def test_a_log_a_few_percent_slower_than_an_nvls_bound_machine_is_still_refused():
    """Which NIC terms are free is decided at the card's values before the fit (fit/fabric._moves): seed 002's log made
    3% and 5% slower still cannot calibrate the NIC (judged at the fitted point, the optimizer's eta 0.607 once made
    eta look free: the reviewer's finding, session 33)."""
    import numpy as np

    from simcluster.fit import fabric as fit
    from simcluster.scenario import load_variants
    from simcluster.traces import nccl_tests

    trace = nccl_tests.parse(str(OCI_LOG))
    rows = sorted((r.size_bytes, r.time_s) for r in trace.rows if r.size_bytes >= 1024 and r.time_s > 0)
    sizes = np.array([s for s, _ in rows], float)
    nic, times = fit._predictor(load_variants(str(ROOT / "scenarios/oci-bm-gpu-h100-8x2.yaml"))[0][1], trace.op,
                                [int(s) for s in sizes])
    for scale in (1.03, 1.05):
        eff, lat, free = fit._fit(times, nic, sizes, np.array([t for _, t in rows]) * scale)
        assert free == () and (eff, lat) == (nic.efficiency, nic.latency_s)
