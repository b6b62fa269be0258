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
