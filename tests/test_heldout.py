"""simcluster/heldout/: the lab and storage sets the error-band table takes (issue 43), held out as each says."""

import copy
from pathlib import Path

import pytest

from simcluster.errors import SimclusterError
from simcluster.heldout import eager, eager_regimes, eager_runs, storage, transport
from simcluster.trust.build import eager_residuals, storage_residuals, transport_residuals

ROOT = Path(__file__).resolve().parent.parent


def test_transport_rows_are_the_sizes_the_fit_never_saw_from_sweeps_the_models_never_saw():
    from simcluster.fit.host_stack import SPLIT

    rows = transport.held_out_rows()
    assert rows and all(r["m"] > SPLIT and r["measured"] > 0 and r["predicted"] > 0 for r in rows)
    # the rule: TCP rows from sweeps registered after the TCP count model, UDP sender rows after the UDP one, and the
    # fifth sweep's (registered after the batching rules and the receiver's count model) both, the sixth's (registered
    # after the push ACK rule, TCP with TSO/GRO only) TCP
    sizes5, sizes6 = "h200-transport-sizes5-2026-11-29", "h200-transport-sizes6-2026-11-29"
    assert {(r["bundle"].split("/")[0], r["transport"]) for r in rows} == {
        ("h200-transport-sizes3-2026-11-29", "tcp"), ("h200-transport-udp4-2026-11-29", "udp"), (sizes5, "tcp"),
        (sizes5, "udp"), (sizes6, "tcp")}
    development = ("lab-sizes-", "loopback-sizes-", "h200-transport-sizes-2026-11-28", "h200-transport-sizes2-2026-11-28")
    assert not [r for r in rows if r["bundle"].startswith(development)]
    assert not [r for r in rows if r["transport"] == "udp" and r["bundle"].startswith("h200-transport-sizes3-")]
    # five configurations each: 3 TCP sizes (sizes3) and 3 UDP sender sizes (udp4) per configuration
    early = [r for r in rows if not r["bundle"].startswith((sizes5, sizes6))]
    assert len(early) == 30 and len({r["bundle"] for r in early}) == 10
    assert {(r["transport"], r["side"]) for r in early} == {("tcp", "both"), ("udp", "sender")}   # the judged costs only
    # sizes5: its registered read's 19 batching-rule rows + the 10 lab UDP sender rows (README "The registered rule")
    late = [r for r in rows if r["bundle"].startswith(sizes5)]
    by_kind = {k: sorted(int(r["m"]) for r in late if (r["bundle"].split("/")[1], r["transport"], r["side"]) == k)
               for k in {(r["bundle"].split("/")[1], r["transport"], r["side"]) for r in late}}
    kib = lambda *sizes: [s * 1024 for s in sizes]   # noqa: E731
    assert by_kind == {("lab-sizes-all-noshaping", "tcp", "both"): kib(20, 40, 96, 160),
                       ("loopback-sizes", "udp", "sender"): kib(14, 28, 40),
                       **{(c, "udp", "receiver"): kib(14, 20, 28, 40)
                          for c in ("loopback-sizes", "lab-sizes-csum-noshaping", "lab-sizes-none")},
                       **{(c, "udp", "sender"): kib(14, 20, 28, 40, 60)
                          for c in ("lab-sizes-csum-noshaping", "lab-sizes-none")}}
    # sizes6: the 12 judged rows of its registered read (two replicate bundles x 6 held-out sizes), TCP both sides
    sixth = [r for r in rows if r["bundle"].startswith(sizes6)]
    assert sorted((r["bundle"].split("/")[1], int(r["m"])) for r in sixth) == sorted(
        (c, m) for c in ("lab-sizes-all-noshaping", "lab-sizes-all-noshaping-2") for m in kib(10, 36, 56, 80, 112, 200))
    assert {(r["transport"], r["side"]) for r in sixth} == {("tcp", "both")}
    residuals = transport_residuals(rows)
    assert {r.regime for r in residuals} == {"transport | tcp", "transport | udp"}   # the band code's keys (by kind)
    shipped = [r for r in __import__("json").loads((ROOT / "simcluster" / "trust" / "error_bands.json").read_text())["rows"]
               if r["family"] == "transport"]
    from simcluster.heldout import rdma_ops  # the published RDMA rows join the family (session 35; per operation since 36)

    every = transport_residuals(rows + rdma_ops.held_out_rows())
    # the full label (the RDMA rows' first word is "per" whatever the row): a shipped row the code no longer gives fails
    assert {(r["regime"], r["row"]) for r in shipped} <= {(r.regime, r.row) for r in every}
    # rdma_rc since session 39 (host-stack-rdma-ops-2.yaml's two READ rate rows)
    assert {r["regime"] for r in shipped} == {"transport | tcp", "transport | udp", "transport | rdma_ud", "transport | rdma_rc"}


@pytest.mark.parametrize(("transport_name", "bundle", "admitted"), [
    ("tcp", "h200-transport-sizes3-2026-11-29/lab-sizes-none", True),
    ("tcp", "h200-transport-sizes2-2026-11-28/lab-sizes-none", False),     # the TCP count model read it
    ("tcp", "lab-sizes-none-2026-11-28", False),
    ("udp", "h200-transport-sizes3-2026-11-29/lab-sizes-none", False),     # the UDP count model read it
    ("udp", "h200-transport-udp4-2026-11-29/lab-sizes-csum", True),
    ("tcp", "h200-transport-sizes5-2026-11-29/lab-sizes-all-noshaping", True),   # after the TSO/GRO rule
    ("udp", "h200-transport-sizes5-2026-11-29/loopback-sizes", True),      # after the paged sender, receiver rules
    ("tcp", "h200-transport-sizes9-2026-12-01/lab-sizes-none", False),     # not named: not admitted until it is
])
def test_a_transport_row_counts_only_from_a_named_sweep_after_its_model(transport_name, bundle, admitted):
    assert transport.held_out(transport_name, bundle) is admitted


def test_a_bundle_outside_the_named_sweeps_gives_no_row(tmp_path):
    import shutil

    src = ROOT / "calibration" / "h200-transport-udp4-2026-11-29" / "lab-sizes-none"
    shutil.copytree(src, tmp_path / "h200-transport-udp4-2026-11-29" / "lab-sizes-none")
    shutil.copytree(src, tmp_path / "lab-sizes-dev")
    rows = transport.held_out_rows(tmp_path)
    assert rows and {r["bundle"] for r in rows} == {"h200-transport-udp4-2026-11-29/lab-sizes-none"}


def test_eager_rows_leave_the_development_bundles_out_and_take_the_registered_predictions():
    from simcluster.strict import load_yaml

    rows = eager_regimes.held_out_rows()
    bundles = {r["bundle"] for r in rows}
    assert not bundles & {Path(b).name for b in eager.DEVELOPMENT}
    assert bundles == {Path(b).name for b in (*eager.SEALED, *eager.REGISTERED)}
    for name, runs in ((eager.REGIMES_BUNDLE, 12), (eager.MESHES_BUNDLE, 15), (eager.MESHES2_BUNDLE, 15)):
        registered = {(r["preset"], r["mode"]): r["predicted"]["h200"]["step_ms"]
                      for r in load_yaml(ROOT / name / "registered.yaml")["runs"]}
        lab = [r for r in rows if r["bundle"] == Path(name).name]
        assert len(lab) == runs        # every registered run measured once; the smoke runs are not registered
        for r in lab:
            preset, mode = r["label"].split()[:2]
            assert r["predicted_s"] == pytest.approx(registered[(preset, mode)] / 1e3)
            assert r["gpus"] == (4 if name != eager.REGIMES_BUNDLE else 1 if mode.startswith("single") else 2)
    keys = {r.regime for r in eager_residuals(rows)}
    # CP: the cp set (session 36), its own regime, not DDP's; +host-bound: the rows the model predicts host-bound
    # (llm/host_bound.py, session 38): every TP x DP row, so no GPU-bound TP x DP regime
    # single+host-bound: session 44's product ckpt host term prices two of the regimes set's ckpt rows host-bound
    assert {"llm | PyTorch eager | DDP | bf16", "llm | PyTorch eager | FSDP | bf16", "llm | PyTorch eager | TP | bf16",
            "llm | PyTorch eager | PP | bf16", "llm | PyTorch eager | single | bf16", "llm | PyTorch eager | CP | bf16",
            *(f"llm | PyTorch eager | {mode}+host-bound | bf16" for mode in ("DDP", "FSDP", "TP", "PP", "TP x DP", "single"))} == keys
    assert {r.family for r in eager_residuals(rows)} == {"llm eager"}


def test_the_4gpu_layouts_map_onto_the_model_as_the_runner_runs_them():
    """Each 4-GPU layout's parallel setting, GPU count and micro-batches, and the runner document's name for it."""
    par, gpus, m = eager_regimes.layout_of("tp+fsdp")
    assert (par.tp, par.dp, par.zero, gpus, m) == (2, 2, 3, 4, 1)
    par, gpus, m = eager_regimes.layout_of("pp4-interleaved")
    assert (par.pp, par.virtual_stages, gpus, m) == (4, 2, 4, 8)
    assert eager_regimes.layout_of("pp+ddp")[1:] == (4, 4) and eager_regimes.layout_of("pp-1f1b")[1:] == (2, 4)
    assert eager_runs.regime_mode_of({"mode": "pp", "pipeline": {"stages": 4, "schedule": "ScheduleInterleaved1F1B"}}) == "pp4-interleaved"
    assert eager_runs.regime_mode_of({"mode": "pp", "pipeline": {"stages": 2, "schedule": "ScheduleGPipe"}}) == "pp-gpipe"
    assert eager_runs.regime_mode_of({"mode": "tp+ddp"}) == "tp+ddp"


def test_storage_rows_are_rates_by_system_and_a_bad_file_is_one_line(tmp_path):
    row = {"accelerators_measured": 4, "MiB_per_s_at_measured_count": 110.0, "MiB_per_s_measured": 100.0, "model": "unet3d",
           "limit": "drive", "system": "Micron_9400", "file": "f", "index": 0, "row": "9400 unet3d_a100"}
    (r,) = storage_residuals([row])
    assert r.rho == pytest.approx(1.1) and r.regime == "storage | unet3d | drive" and r.source == "mlperf-storage Micron_9400"
    bad = tmp_path / "mlperf-storage-bad.yaml"
    bad.write_text("kind: published-storage-run\nruns: 3\n")
    with pytest.raises(SimclusterError, match="runs") as err:
        storage.read(bad)
    assert "\n" not in str(err.value) and "mlperf-storage-bad.yaml" in str(err.value)
    files = {p.stem: p for p in storage.published_files()}
    assert len(storage.compared_runs(files["mlperf-storage-v1.0-micron"])) == 17


def test_a_storage_run_not_compared_is_left_out_with_its_reason_and_o_direct_reads_past_the_cache(tmp_path):
    path = ROOT / "calibration" / "published" / "mlperf-storage-v3.0-solidigm.yaml"
    pub = storage.read(path)
    assert [i for i, _ in storage.compared_runs(path)] == [0, 1] and not pub.usage.get("runs_not_compared")
    assert storage.page_cache_bytes(pub.runs[0]) == 0
    assert storage.page_cache_bytes({"reader": {"read_threads": 4, "prefetch_size": 0}}) == storage.PAGE_CACHE_BYTES
    left_out = tmp_path / "mlperf-storage-left-out.yaml"
    left_out.write_text(path.read_text() + "  runs_not_compared:\n    1: no drive card\n")
    assert [i for i, _ in storage.compared_runs(left_out)] == [0]


def test_the_v3_solidigm_row_is_predicted_within_the_issues_10_percent():
    """MLPerf Storage v3.0, Solidigm D5-P5336, Unet3D on 1 B200: held out (nothing fitted on it); issue 42's target is
    10% on the count and the throughput (6,041 against 5,902 MiB/s when first predicted, +2.4%). The model's drive keeps
    up (AU 100%, the drive 90% busy): the prediction is the accelerator's compute ceiling, so the row checks that the
    drive keeps up at the submitted count and the count arithmetic, not the drive's rate (its limit names the accelerators)."""
    path = ROOT / "calibration" / "published" / "mlperf-storage-v3.0-solidigm.yaml"
    (_, row), _ = storage.compared_runs(path)
    r = storage.predict(row, search=True)
    assert r["accelerators_predicted"] == r["accelerators_measured"] == 1 and r["limit"] == "accelerators (storage keeps up)"
    assert abs(r["error_at_measured_count"]) <= 0.10 and abs(r["MiB_per_s_error"]) <= 0.10


def test_the_v3_d7_ps1010_row_is_predicted_within_the_issues_10_percent():
    """MLPerf Storage v3.0, Solidigm D7-PS1010 7.68 TB, Unet3D on 2 B200: held out, its card (14,500 MB/s, Solidigm's
    family rating) chosen before the first prediction (12,082 against 11,889 MiB/s, +1.6%; 2 accelerators, exact). The
    drive keeps up at 2 (87% busy) and 3 would need 3 x 6.33 GB/s x 0.9 = 17.1 GB/s: the count checks that the card's
    rate lies between the two, the throughput is the compute ceiling."""
    path = ROOT / "calibration" / "published" / "mlperf-storage-v3.0-solidigm.yaml"
    _, (_, row) = storage.compared_runs(path)
    r = storage.predict(row, search=True)
    assert r["accelerators_predicted"] == r["accelerators_measured"] == 2 and r["limit"] == "accelerators (storage keeps up)"
    assert abs(r["error_at_measured_count"]) <= 0.10 and abs(r["MiB_per_s_error"]) <= 0.10


def test_a_published_count_is_a_lower_bound_only_when_one_more_accelerator_would_pass_at_its_throughput():
    """MLPerf Storage publishes only the largest count a submitter reports passing. N is a lower bound only when N + 1
    would pass at the storage's measured throughput (AU x N / (N + 1) >= threshold); no published row does: the 6500's
    Unet3D rows (AU 96-98% at N = 1 and 3) and the Samsung's (96% at N = 4) are the storage's maximum as far as the
    submission shows, and a prediction above them is a miss."""
    path = ROOT / "calibration" / "published" / "mlperf-storage-v1.0-micron.yaml"
    rows = {f"{r['system'].split('_')[1]} {r['workload']}": r for _, r in storage.compared_runs(path)}
    for name, threshold in (("6500 unet3d_h100", 0.90), ("6500 unet3d_a100", 0.90), ("9400 unet3d_a100", 0.90),
                            ("6500 resnet50_h100", 0.90), ("9550 cosmoflow_a100", 0.70)):
        assert not storage.count_is_lower_bound(rows[name], threshold), name
    at_98 = {"measured": {"accelerators": 20, "au_mean_percent_per_run": [98.0]}}   # 98% x 20 / 21 = 93.3% >= 90%
    assert storage.count_is_lower_bound(at_98, 0.90) and not storage.count_is_lower_bound(at_98, 0.95)
    assert not storage.count_is_lower_bound({"measured": {"accelerators": 1}}, 0.90)  # no AU published: not assumed
    assert storage.count_check(+0.05, False) == "met" and storage.count_check(+1.0, True) == "lower bound"
    assert storage.count_check(-0.25, True) == "miss" and storage.count_check(+0.33, False) == "miss"


def test_the_samsung_v1_file_is_three_held_out_rows_with_a_card():
    """MLPerf Storage v1.0, Samsung PM1753 (added at issue 42's fourth pass, predicted once before any change: 27 / 82 / 5
    accelerators against 20 / 58 / 4; docs/models/storage.md). Reading it needs no simulation."""
    path = ROOT / "calibration" / "published" / "mlperf-storage-v1.0-samsung.yaml"
    runs = storage.compared_runs(path)
    assert [r["workload"] for _, r in runs] == ["cosmoflow_h100", "resnet50_h100", "unet3d_h100"]
    assert all(r["drive"] in storage.CARDS and (ROOT / "models" / "nvme" / f"{storage.CARDS[r['drive']]}.yaml").exists()
               for _, r in runs)
    assert not any(storage.count_is_lower_bound(r, t) for (_, r), t in zip(runs, (0.70, 0.90, 0.90), strict=True))
    assert storage.workload_of(runs[2][1]).read_threads == 8 and storage.page_cache_bytes(runs[2][1]) == storage.PAGE_CACHE_BYTES


def test_the_v05_files_state_drives_cache_and_counts_that_are_not_maxima():
    """MLPerf Storage v0.5 (issue 42's sixth pass): Micron's 9400 at 17 and 1 V100s, ANL's Polaris node (2 x PM1725a
    RAID0, a 32 GB cgroup) at 8 and 1 for Unet3D and 8 for BERT. Reading them needs no simulation."""
    folder = ROOT / "calibration" / "published"
    micron = [r for _, r in storage.compared_runs(folder / "mlperf-storage-v0.5-micron.yaml")]
    anl = [r for _, r in storage.compared_runs(folder / "mlperf-storage-v0.5-anl.yaml")]
    assert [r["measured"]["accelerators"] for r in micron + anl] == [17, 1, 8, 1, 8]
    assert all((ROOT / "models" / "nvme" / f"{storage.CARDS[r['drive']]}.yaml").exists() for r in micron + anl)
    assert [storage.drives_of(r) for r in micron + anl] == [1, 1, 2, 2, 2]
    assert storage.page_cache_bytes(anl[0]) == 32 * 2**30 and storage.page_cache_bytes(micron[0]) == storage.PAGE_CACHE_BYTES
    assert [bool(r["measured"].get("count_not_a_maximum")) for r in micron + anl] == [False, True, True, True, True]
    bert = storage.workload_of(anl[2])
    assert (bert.format, bert.batch_size, bert.read_threads, bert.computation_time_s) == ("tfrecord", 48, 1, 0.968)
    assert storage.count_check(+0.06, False, not_a_maximum=True) == "not a maximum"
    assert storage.count_check(+1.0, False, not_a_maximum=True) == "not a maximum"
    assert storage.count_check(-0.5, False, not_a_maximum=True) == "miss"     # fewer than the count that ran: a miss
    assert storage.count_check(-0.10, False, not_a_maximum=True) == "not a maximum"   # within 10% below: not a miss
    # a search answer of "at least N" (its limit or the simulation's bound) under the published count does not contradict it
    assert storage.count_check(-0.5, False, predicted_at_least=True) == "search bound"
    assert storage.count_check(-0.5, False, predicted_at_least=False) == "miss"
    assert storage.count_check(+0.05, False, predicted_at_least=True) == "met"
    assert storage.label(micron[0]) == "9400 v0.5 unet3d_v100 x17"


def test_two_striped_drives_feed_more_than_one():
    """A row's `drives` reaches the loader: the ANL Unet3D row at 16 V100s (about 6.6 GB/s at full AU) is drive-bound on
    one PM1725a (3.3 GB/s) and not on two."""
    row = next(r for _, r in storage.compared_runs(ROOT / "calibration" / "published" / "mlperf-storage-v0.5-anl.yaml"))
    at16 = copy.deepcopy(row)
    at16["measured"]["accelerators"] = 16
    one = copy.deepcopy(at16)
    one["drives"] = 1
    two_drives, one_drive = storage.predict(at16), storage.predict(one)
    assert one_drive["MiB_per_s_at_measured_count"] < 0.6 * two_drives["MiB_per_s_at_measured_count"]


@pytest.mark.parametrize("key, value, expected", [("drives", "two", "runs[0].drives: expected a whole number of drives >= 1, got 'two'"),
                                                  ("drives", 0, "runs[0].drives: expected a whole number"),
                                                  ("page_cache_GiB", "lots", "runs[0].page_cache_GiB: expected a size in GiB >= 0, got 'lots'")])
def test_a_storage_rows_bad_option_is_one_line_at_its_key(tmp_path, key, value, expected):
    import yaml

    src = ROOT / "calibration" / "published" / "mlperf-storage-v0.5-anl.yaml"
    doc = yaml.safe_load(src.read_text())
    doc["runs"][0][key] = value
    bad = tmp_path / "mlperf-storage-bad.yaml"
    bad.write_text(yaml.safe_dump(doc, sort_keys=False))
    with pytest.raises(SimclusterError) as err:
        storage.compared_runs(bad)
    assert expected in str(err.value) and "\n" not in str(err.value) and str(bad) in str(err.value)


def test_transport_rows_need_a_named_sweep_under_the_folder_given(tmp_path):
    from simcluster.errors import CalibrationError
    from simcluster.heldout import transport

    with pytest.raises(CalibrationError, match="none of the held-out transport sweeps"):
        transport.held_out_rows(transport.ROOT / "calibration" / "h200-transport-udp4-2026-11-29")   # a sweep, not the root


def test_the_counts_report_says_so_when_there_is_nothing_to_count():
    from simcluster.fit.host_counts import counts_report

    assert counts_report([]).startswith("no tcp_bw runs")


def test_the_transport_rows_are_the_error_of_the_card_models_that_read_them_or_of_no_card():
    """heldout/transport.py's docstring: a row is the error of a lab card's model (refitted on its configuration) where
    that card is fitted by the same read (stack_cards: TCP count model, TSO/GRO batching rule, UDP sender and receiver
    models), and of no card on loopback (no loopback card), on sizes3's offloads-all TCP rows (the count model's read,
    which the GSO card no longer uses) or on sizes5's TSO/GRO rows (the fifth sweep's ACK count, which the GSO card no
    longer uses: it is the push rule, fitted on sizes6, whose 12 rows are its error): 51 and 20 of the 71 rows."""
    from collections import Counter

    from simcluster.cards import load_nic
    from simcluster.fit import host_stack_readout, offload_readout, stack_cards

    gso_rule = load_nic(ROOT / "models/nic/local-lab-tcp-gso-stack.yaml")[0].ack_rule

    def card(row):
        bundle = ROOT / "calibration" / row["bundle"]
        if bundle.name.startswith("loopback"):
            return None
        if row["transport"] == "udp":
            return f"local-lab-udp-stack {row['side']}"
        batching = host_stack_readout.registered_read(bundle) == host_stack_readout.BATCHING
        if stack_cards.is_tso(bundle):
            card_rule = offload_readout.tso_ack_rule_name(bundle) == gso_rule     # the count the sweep registered
            return "local-lab-tcp-gso-stack" if batching and card_rule else None
        return "local-lab-tcp-stack"

    assert Counter(card(r) for r in transport.held_out_rows()) == {
        "local-lab-tcp-stack": 9, "local-lab-tcp-gso-stack": 12, "local-lab-udp-stack sender": 22,
        "local-lab-udp-stack receiver": 8, None: 20}


@pytest.mark.parametrize(("bundle", "source"), [
    ("h200-transport-sizes6-2026-11-29/lab-sizes-all-noshaping-2", "h200-transport-sizes6-2026-11-29/lab-sizes-all-noshaping"),
    ("h200-transport-sizes6-2026-11-29/lab-sizes-all-noshaping", "h200-transport-sizes6-2026-11-29/lab-sizes-all-noshaping"),
    ("h200-transport-sizes3-2026-11-29/lab-sizes-csum-noshaping", "h200-transport-sizes3-2026-11-29/lab-sizes-csum-noshaping"),
    ("sweep/loopback-sizes-12", "sweep/loopback-sizes"),
    ("sweep/lab-sizes-none-1", "sweep/lab-sizes-none-1"),       # -1 is not a replicate's suffix (the first run has none)
])
def test_a_transport_source_is_the_sweeps_configuration_with_replicates_folded(bundle, source):
    assert transport.source_of(bundle) == source


def test_the_transport_sources_are_one_per_sweep_and_configuration():
    """source_of's name rule agrees with the bundles' own configuration (host_stack.config_label from their manifests):
    two held-out bundles are one source exactly when they are one sweep's one configuration (sizes6's two replicates)."""
    from simcluster.fit import host_stack

    rows = transport.held_out_rows()
    bundles = {r["bundle"]: r["source"] for r in rows}
    config = {b: (b.split("/")[0], host_stack.config_label(host_stack.bundle_samples(ROOT / "calibration" / b)[1]))
              for b in bundles}
    assert all((bundles[a] == bundles[b]) == (config[a] == config[b]) for a in bundles for b in bundles)
    assert (len(bundles), len(set(bundles.values()))) == (16, 15)
    residuals = transport_residuals(rows)
    assert len({(r.source, r.row) for r in residuals}) == len(residuals) == 71   # the replicates' rows stay apart


def test_each_micron_v1_host_reads_through_the_memory_its_runs_report():
    """The 6500 runs' summary.json report 1,007 GiB of memory (and data sets of 5 x that), the 9400 / 9550 runs' 251 /
    250 GiB (session 42): the 6500 rows' page cache is 1007 GiB, the others the 256 GiB default, and the 6500 Unet3D
    row's cache share is then c^2 / 2 with c = 1007 GiB / 5.5 TB, about 2% (0.1% at 256 GiB). The 9550 ResNet-50 A100 row
    ran under its own system file (mem=320G; its runs report 313.2 GB): 313 GiB (session 43, studies/storage_v1_audit.py)."""
    from simcluster.storage.loader import cache_hit_share

    path = ROOT / "calibration" / "published" / "mlperf-storage-v1.0-micron.yaml"
    rows = {f"{r['system'].split('_')[1]} {r['workload']}": r for _, r in storage.compared_runs(path)}
    for name, row in rows.items():
        expect = (1007 * 2**30 if name.startswith("6500") else 313 * 2**30 if name == "9550 resnet50_a100"
                  else storage.PAGE_CACHE_BYTES)
        assert storage.page_cache_bytes(row) == expect, name
    row = rows["6500 unet3d_h100"]
    h = cache_hit_share(storage.workload_of(row), storage.page_cache_bytes(row))
    assert 0.015 < h < 0.025


def test_an_mlperf_epoch_counts_its_first_load_in_throughput_and_not_in_au():
    """studies/storage_epoch.py: one DLIO epoch of a row's own dataset (loaders start empty, the first load left out of
    AU, counted in throughput). On ANL's compute-bound x8 Unet3D row the epoch's AU is the steady state's (100%) while
    its throughput is lower by the first load's share of the epoch (4 batches a rank read at once before step 1)."""
    from conftest import load_script

    study = load_script("studies/storage_epoch.py")
    path = ROOT / "calibration" / "published" / "mlperf-storage-v0.5-anl.yaml"
    (_, row), *_ = storage.compared_runs(path)
    au, mib, steps, io = study.epoch_run(row, 8)
    steady = storage.predict(row)
    assert steps == 3200 // (8 * 4) and io == storage.IO_SIZE
    assert au == pytest.approx(100.0, abs=0.1) and steady["au_at_measured_count"] == pytest.approx(100.0, abs=0.1)
    assert 0.005 < 1 - mib / steady["MiB_per_s_at_measured_count"] < 0.05
