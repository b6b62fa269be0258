"""The cause categories of the published multi-node systems over 10% held out (studies/nccl_miss_triage.py, issue 41,
session 35): the rule on rows, and a forced Ring on one NVLink domain read as the domain's NVLink card."""

from conftest import ROOT, load_script

triage = load_script("studies/nccl_miss_triage.py")
GiB = 2**30
MiB = 2**20


def test_outlier_flag_wins_over_every_other_shape():
    rows = [(64 * MiB, +80.0, True), (8 * GiB, +40.0, True)]
    assert triage.category(rows, outlier=True) == "outlier"
    assert triage.category(rows, outlier=False) == "nvls-carry"


def test_nvls_carry_needs_a_miss_at_the_plateau_in_a_domain_past_eight_gpus():
    ramp_only = [(512 * MiB, +60.0, True), (4 * GiB, +5.0, True), (8 * GiB, +4.0, True)]
    assert triage.category(ramp_only, outlier=False) == "protocol-ramp"          # the plateau is right: a ramp
    eight_gpu_board = [(512 * MiB, +30.0, False), (8 * GiB, +25.0, False)]      # NVLS on an 8-GPU board: not the carry
    assert triage.category(eight_gpu_board, outlier=False) == "source-facts"


def test_ramp_needs_ten_points_more_below_one_gib_than_above():
    assert triage.category([(64 * MiB, +30.0, False), (2 * GiB, +5.0, False)], outlier=False) == "protocol-ramp"
    assert triage.category([(64 * MiB, -30.0, False), (2 * GiB, -5.0, False)], outlier=False) == "protocol-ramp"
    assert triage.category([(64 * MiB, +14.9, False), (2 * GiB, +5.0, False)], outlier=False) == "source-facts"
    assert triage.category([(64 * MiB, -20.0, False), (8 * GiB, +40.0, False)], outlier=False) == "source-facts"  # grows


def test_peaks_and_single_sizes_are_source_facts():
    assert triage.category([(None, +24.0, False), (None, +8.0, False)], outlier=False) == "source-facts"
    assert triage.category([(512 * MiB, -22.0, False)], outlier=False) == "source-facts"


def test_forced_ring_on_one_domain_without_nvls_is_the_nvlink_card():
    from simcluster.reference import nccl

    ref = nccl.read_nccl_file(ROOT / "calibration/published/nccl-azure-gb200-x1-aibenchguide.yaml")
    rows = {r.run: r for r in nccl.system_rows(ref)}
    assert sorted(rows) == list(range(16, 24))                                  # the 8 rows from 64 MiB
    cluster = nccl._cluster(ref.file("scenario"), 1)
    card = cluster.predict("all_reduce", 8 * GiB)                               # NCCL's own choice on the card
    assert rows[23].predicted == card.busbw_Bps and rows[23].detail.startswith("nvlink-card")


def _row(error, size=None, nodes=2, op="all_reduce", algo="ring/Simple"):
    return {"op": op, "algo": algo, "nodes": nodes, "size": size, "error": error}


def test_trend_is_the_mean_change_per_doubling_over_pairs_that_differ_in_one_thing():
    """Session 48 (--families): +10 points from 64 MiB to 256 MiB is +5 per doubling; a pair of another algorithm or
    node count is a series of its own; sizes less than 1.5x apart (nccl-tests#119's 1 MiB steps) are no pair."""
    rows = [_row(+30.0, 64 * MiB), _row(+40.0, 256 * MiB), _row(+0.0, 64 * MiB, algo="tree/Simple"),
            _row(-4.0, 128 * MiB, algo="tree/Simple"), _row(+99.0, 64 * MiB, nodes=4)]
    assert triage._trend(rows, "size", ("op", "algo", "nodes")) == (5.0 - 4.0) / 2
    assert triage._trend([_row(-11.0, 122 * MiB), _row(-6.0, 127 * MiB)], "size", ("op", "algo", "nodes")) is None
    by_nodes = [_row(+12.0, 16 * GiB, nodes=2), _row(+18.0, 16 * GiB, nodes=8), _row(+5.0, None, nodes=4)]
    assert triage._trend(by_nodes, "nodes", ("op", "algo", "size")) == 3.0     # the peak row has no size: no pair


def test_the_arch_counterfactual_drops_the_tree_ceiling_off_blackwell_only(monkeypatch):
    """studies/tree_ceiling_by_arch.py (session 48): on drobotics' Hopper 2-node pair its tree loses NCCL's tuner
    limit and is bound by NVLink (2 S at the intra card's rate); on B200 it is the shipped tree."""
    from simcluster.collectives import fabric
    from simcluster.machine_models import build_cluster
    from simcluster.scenario import load_variants

    study = load_script("studies/tree_ceiling_by_arch.py")
    assert fabric.ALGORITHM_MODELS is study.SHIPPED
    hopper = build_cluster(load_variants(ROOT / "scenarios/published/h100-roce-4x400g-x2-drobotics.yaml", 2)[0][1].machine)
    b200 = build_cluster(load_variants(ROOT / "scenarios/published/b200-ib-8x400g-x64-together.yaml", 4)[0][1].machine)
    shipped = {name: fabric.predict_fabric(c, "all_reduce", 16 * GiB, "tree") for name, c in (("h", hopper), ("b", b200))}
    monkeypatch.setattr(fabric, "ALGORITHM_MODELS",
                        tuple(study.BlackwellOnlyTree() if m.name == "tree" else m for m in study.SHIPPED))
    variant = {name: fabric.predict_fabric(c, "all_reduce", 16 * GiB, "tree") for name, c in (("h", hopper), ("b", b200))}
    assert shipped["h"].breakdown["binding_limit"].startswith("NCCL 2.28 tuner's tree limit (8 channels x 41.4 GB/s")
    assert variant["h"].breakdown["binding_limit"].startswith("NVLink")
    assert variant["h"].busbw_Bps > 1.05 * shipped["h"].busbw_Bps          # 308.1 -> 332.4 GB/s (measured 353.85)
    assert variant["b"].time_s == shipped["b"].time_s


def test_the_validator_gives_what_ran_as_data_and_the_row_prints_it():
    """Session 49: the study reads the algorithm, protocol and link from reference/nccl.system_runs' Ran, not from the
    row's printed detail / regime; the printed text is Ran.text(), the regime's algorithm and link Ran's."""
    from simcluster.reference import nccl

    runs = []
    for name in ("nccl-h100-ib-x2-x4-nccltests309", "nccl-azure-gb200-x1-aibenchguide"):
        ref = nccl.read_nccl_file(ROOT / f"calibration/published/{name}.yaml")
        pairs = nccl.system_runs(ref)
        assert [row for row, _ in pairs] == nccl.system_rows(ref)
        runs += pairs
    ran = [(row, r) for row, r in runs if r is not None]
    assert {r.algorithm for _, r in ran} >= {"nvls-tree", "nvlink-card"} and any(r.peak_bytes for _, r in ran)
    for row, r in ran:
        assert row.detail == r.text() and row.regime.split(" | ")[2] == r.algorithm and row.regime.endswith(" | " + r.link)
    assert nccl.Ran("ring", "LL128", "rdma-ib", "LL", 2**30).text() == "ring/LL128 (LL skipped: not runnable here, NCCL's) at 1024 MiB (peak)"
