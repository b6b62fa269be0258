"""Issue 43: every answer with its 80% band and validation status (simcluster/trust/)."""

import json
from pathlib import Path

import pytest

from simcluster.cli import main
from simcluster.trust import report
from simcluster.trust.band import trust_of
from simcluster.trust.build import held_out_coverage, leave_one_source_out
from simcluster.trust.regime import Regime, llm_regime
from simcluster.trust.table import Residual, Table, conformal_bounds, load_table

ROOT = Path(__file__).resolve().parent.parent


def test_conformal_bounds_are_the_split_conformal_order_statistics():
    rhos = [float(i) for i in range(19, 0, -1)]         # n = 19: k = floor(2) = 2, k' = ceil(18) = 18
    assert conformal_bounds(rhos) == (2.0, 18.0)
    assert conformal_bounds([1.1, 0.9, 1.0]) == (0.9, 1.1)   # n < 9: the rows' whole range


def _rows(regime, family, sources, rhos, scale=64.0):
    return [Residual(family, regime, s, str(i), scale, r) for i, (s, r) in enumerate(zip(sources, rhos, strict=True))]


def test_status_validated_extrapolated_unvalidated_and_never_checked():
    key = "llm | Megatron/NeMo | TP+PP | bf16"
    table = Table(_rows(key, "llm", ["a", "b", "c", "a", "b"], [0.95, 1.0, 1.05, 1.1, 1.2]) +
                  _rows("llm | Megatron/NeMo | MoE | bf16", "llm", ["a", "b"], [1.4, 1.5]))
    ok = trust_of(Regime("llm", key, 64.0), table)
    assert ok.status == "validated" and ok.rho == (0.95, 1.2) and ok.rows == 5 and ok.sources == 3
    assert ok.time_band(10.0) == pytest.approx([9.5, 12.0]) and ok.rate_band(12.0) == pytest.approx([10.0, 12.0 / 0.95])
    far = trust_of(Regime("llm", key, 16384.0), table)
    assert far.status == "extrapolated" and "16384" in far.outside and far.rho == ok.rho
    moe = trust_of(Regime("llm", "llm | Megatron/NeMo | MoE | bf16", 64.0), table)
    assert moe.status == "unvalidated" and moe.pooled and moe.rows == 7 and moe.rho == (0.95, 1.5)
    never = trust_of(Regime("storage", "storage | x"), table)
    assert never.status == "unvalidated" and never.rho is None and "never checked" in never.text()


def test_two_sources_are_not_enough_to_validate():
    key = "llm | Megatron/NeMo | TP | bf16"
    table = Table(_rows(key, "llm", ["a", "b"] * 5, [1.0] * 10))
    assert trust_of(Regime("llm", key, 64.0), table).status == "unvalidated"


def test_the_regime_is_the_riskiest_parallelism_family():
    assert llm_regime("megatron", 8, 16, 1, 1, False, "bf16", 16384).key == "llm | Megatron/NeMo | TP+PP | bf16"
    assert llm_regime("megatron", 8, 16, 2, 1, True, "fp8", 1024).key == "llm | Megatron/NeMo | MoE | fp8"
    eager = llm_regime("torch-amp", 1, 1, 1, 3, False, "bf16", 8)
    assert eager.key == "llm | PyTorch eager | FSDP | bf16" and eager.family == "llm eager"
    assert llm_regime("torch-amp", 2, 1, 1, 1, False, "bf16", 8).key == "llm | PyTorch eager | TP x DP | bf16"
    assert llm_regime("torch-amp", 2, 1, 1, 1, False, "bf16", 2).key == "llm | PyTorch eager | TP | bf16"
    assert llm_regime("torch-amp", 1, 2, 1, 1, False, "bf16", 2).key == "llm | PyTorch eager | PP | bf16"
    assert llm_regime("torch-amp", 1, 1, 1, 1, False, "bf16", 4).key == "llm | PyTorch eager | DDP | bf16"


def test_one_place_decides_the_eager_checkpointing_suffix():
    """eager_checkpointing gives 'ckpt' (every block checkpointed) only under torch.compile; llm_regime appends what it
    is given, so eager's full rows pool with their mode and the compiled ones are +compile+ckpt."""
    from simcluster.trust.regime import eager_checkpointing

    assert [eager_checkpointing("full", 1, f) for f in ("torch-amp", "torch-fsdp2", "torch-compile", "torch-compile+fsdp2")] \
        == ["", "", "ckpt", "ckpt"]
    assert [eager_checkpointing(r, e, "torch-amp") for r, e in (("full", 2), ("op", 1), ("none", 1), ("selective", 1))] \
        == ["ckpt-every2", "sac-op", "", ""]
    ckpt = eager_checkpointing("full", 1, "torch-compile+fsdp2")
    assert llm_regime("torch-compile+fsdp2", 1, 1, 1, 3, False, "bf16", 2, ckpt).key == \
        "llm | PyTorch eager | FSDP+compile+ckpt | bf16"
    assert llm_regime("torch-fsdp2", 1, 1, 1, 3, False, "bf16", 2, eager_checkpointing("full", 1, "torch-fsdp2")).key == \
        "llm | PyTorch eager | FSDP | bf16"


def test_the_link_across_nodes_names_the_fabric_the_nic_card_names():
    from simcluster.trust.regime import fabric_link

    assert [fabric_link("rdma", n) for n in ("efa-400g", "ib-ndr-400g", "oci-roce-200g", "seed004-ib-edr-offload", "x-400g")] == \
        ["rdma-efa", "rdma-ib", "rdma-roce", "rdma-ib", "rdma"]
    assert fabric_link("tcp", "roce-400g") == "tcp"          # the transport first: a TCP NIC is TCP on any fabric


def test_a_one_node_collectives_link_is_its_nvlink_cards_gpu():
    from simcluster.trust.regime import collective_regime, nvlink_link

    assert [nvlink_link(n) for n in ("h200x2-primitives", "gb200-nvlink-derived", "a100-nvlink-derived",
                                     "h200x2-channels-2026-11-22", "nccl-tests-4ranks")] == \
        ["nvlink-h200", "nvlink-gb200", "nvlink-a100", "nvlink-h200", "nvlink"]
    assert nvlink_link("nccl-tests-4ranks", "h200x4-collect-nvlink") == "nvlink-h200"   # the card's file when its name has none
    # a held-out machine's bundle is a path: its first part naming a GPU, not a subfolder's name ("n20" is no GPU);
    # the regeneration after mendD2 split machine M2's rows into 'nvlink-n20' / 'nvlink-n200' until this was mended
    assert nvlink_link(*Path("calibration/h200x2-n200-2026-11-22/n20").parts) == "nvlink-h200"
    assert [nvlink_link(n) for n in ("n20", "n200", "m5", "rep1")] == ["nvlink"] * 4
    shipped = {r.regime.split(" | ")[-1] for r in load_table().residuals if r.family == "collective one node"}
    # the shipped table: the H200 machines, the GB200 tray and (session 47, mendA47) the OCI A100 node, no other
    assert shipped == {"nvlink-h200", "nvlink-gb200", "nvlink-a100"}
    assert {collective_regime("all_reduce", "nvlink-card", 2**30, link, 4).family for link in ("nvlink-gb200", "nvlink")} == \
        {"collective one node"}


def test_the_gb200_trays_answer_band_contains_its_measured_rows_and_h200_answers_keep_theirs(capsys):
    """mendD2: pooled with the H200 pairs, the tray's answer read -1%..+3%, "validated on 80 rows from 6 sources", and
    its own 8 rows lie at +2.7..+8.3%. Keyed by the card's GPU it is its own (unvalidated) regime whose band holds them."""
    from simcluster.reference.nccl import validate_published_nccl

    assert main(["predict", "collective", "--scenario", str(ROOT / "scenarios/published/azure-ndgb200v6-x1.yaml"),
                 "--op", "all_reduce", "-b", "64M", "-e", "8G", "-f", "2", "--algorithm", "ring", "--json"]) == 0
    answer = json.loads(capsys.readouterr().out)["rows"]
    measured = validate_published_nccl(ROOT / "calibration/published/nccl-azure-gb200-x1-aibenchguide.yaml").rows
    assert len(measured) == 8 and all(0.02 < r.error < 0.09 for r in measured)
    for r in measured:
        row = next(a for a in answer if a["busbw_Bps"] == pytest.approx(r.predicted, rel=1e-9))
        assert row["validation"]["regime"] == r.regime and r.regime.endswith("| >=64MiB | nvlink-gb200")
        assert row["validation"]["status"] == "unvalidated" and row["validation"]["regime_rows"] == 10   # + OCI's tray (nccl49)
        lo, hi = row["busbw_Bps_band"]
        assert lo * (1 - 1e-6) <= r.measured <= hi, (r.configuration, lo, r.measured, hi)   # the table's rho: 6 digits
    h200 = trust_of(Regime("collective one node", "collective | all_reduce | nvlink-card | >=64MiB | nvlink-h200", 2.0))
    assert h200.status == "validated" and (h200.rows, h200.sources) == (72, 5)
    assert h200.rho[1] < min(1 + r.error for r in measured)       # its band would have missed every tray row


def test_shipped_table_records_each_familys_held_out_coverage_and_storage_under_target():
    """The claim docs/accuracy.md makes: each source left out, 70-90% of a family's rows inside the band. Two families
    missed it by rows, recorded here so that the docs are revisited when any changes (docs/models/trust.md): storage (the
    Samsung PM1753 and 9550/6500 drives reading 53-80% of their printed rate, still under) and, since session 31, llm local spec
    (Megatron-Core's local-spec MoE lab sets: three sources that disagree, 4-GPU steps 1.48-2.06x the registered step,
    1-GPU ones 0.73-1.28x, 2-GPU ones (moe3, session 33) 1.24-1.52x: tests/test_heldout_moe_lab.py). Across nodes
    meets it by rows and, since session 31's five systems (helper fabric5), by source too. llm missed it (65-70%) until
    session 34's B200 GEMM level from a measured B200 run (engineer b200: the B200 rows +12..+21% fast instead of
    +18..+22%): 71.0% since, the validated half-width 14.2%; 75.1% since session 35 (the MoE host term, five new MoE rows,
    an unvalidated band widened to its own rows). Collective one node by source fell to 65.8% in session 35 (the Azure
    GB200 tray's 8 rows outside the H200 NVLink bands) until mendD2 keyed the one-node regimes by the NVLink card's GPU:
    the tray's rows lie in a regime of their own (nvlink-gb200, unvalidated: its band the pooled one widened to them),
    none shares a regime with the H200 machines' rows, and the family meets 70% by source (73.7% at mendD2). llm local
    spec meets it since session 41's moe6 (six rows registered with today's model, read HOLDS: 75.0% by rows).
    Collective across nodes fell to 68.3% by rows in session 46 (Snellius's tight InfiniBand rows narrowed the family's
    pooled band, and the EFA regimes' answers, unvalidated, held 15 and 12 of their 30 rows); since mendA46 an
    unvalidated collective regime pools its own link's rows (Table.pool_link): 78.5%, the EFA answers 30 of 30 each.
    Those 293 rows are development for the pool rule (it was chosen with their coverage in view: cold read C46 item 4),
    so the 70-90% bound here is not a held-out check of it, and EFA's 30 of 30 is over-coverage (bands wider than the
    ~80% conformal target); the first new across-nodes source recorded after it is the rule's held-out check."""
    cov = {c.family: c for c in held_out_coverage(load_table())}
    families = {"llm", "llm eager", "llm local spec", "collective one node", "collective across nodes", "ddp", "storage",
                "transport"}
    assert set(cov) == families
    for family in ("llm eager", "collective one node", "collective across nodes", "ddp", "transport"):
        assert 70.0 <= cov[family].coverage_pct <= 90.0, cov[family]
    # session 50 (mendB1, cold read B50 item 2): the ten dgxc-benchmarking files are one source (one NVIDIA team's recipes
    # re-measured each release), so each of llm's folds leaves all of them out together: 77.5% -> 69.7% (99 of 142 rows),
    # under the 70% claim, recorded as a miss (docs/models/trust.md, "What moved in session 50"), not widened. Session 51:
    # publ51's two publishers outside NVIDIA's recipes (FlagPerf, Google's gpu-recipes: 8 rows), the two Megatron-Bridge
    # 25.11 files one source (mendB51) and moedev51's MoE source facts: 153 rows, 12 sources, 70.6% (108 of 153), by
    # source 70.5%: back over the claim by 1 row (70% of 153 is 107.1), not by widening anything. Session 52: publ52's
    # NeMo Megatron 22.08 A100 tables (11 rows, predicted once: 16.4%, 5 within 10%; zero 1 -> 2 after cold read C52, a
    # transcription correction: 15.1%) and, by the source-group rule (mendC52), the five NeMo-team files one source: 164
    # rows, 11 sources, 73.2% (120 of 164); by source 83.3% (13 sources, ungrouped: 70.7%, 116 of 164)
    # Session 53: moe53's AWS Qwen3-30B p5 MoE rows (6, +38..+126% fast, predicted once), pubmix53's Alibaba
    # Megatron-LLaMA rows (5) and the grouping rule R1-R4 applied to every file (pubmix53, mendC53, the lead's R2 by
    # authorship): 175 rows, 12 sources, 78.9% (138 of 175), by source 78.1%: the groups changed the folds, no band widened
    # by hand; the median half-width rose to 23.2% (the AWS MoE rows widen the pooled llm band). Session 54: zero54's
    # Crusoe torchtitan FSDP2 rows (8, predicted once: 7.3%, 5 within 10%; a source of its own): 183 rows, 13 sources,
    # 77.6% (142 of 183), by source 78.7%; the median half-width 18.9% (the FSDP regime gains a validated band of its own)
    # Session 55: moe55's two MoE rows (joined held groups) and hfds55's Hugging Face blog rows (2, a source of its
    # own, predicted once): 187 rows, 14 sources, 77.5% (145 of 187), by source 79.9%; half-width 18.9%. Session 57: the
    # KempnerForge weak-scaling file (12 rows joining the held KempnerForge group, predicted once: 13.6%, 5 within 10%):
    # 199 rows, 14 sources, 76.4% (152 of 199), by source 79.7%; half-width 21.4%. Session 59 mlperf59: MLPerf v4.1's
    # GPT-3 175B logs (5 rows, two sources: NVIDIA on Eos, Oracle on OCI; predicted once: 10.7%, 2 within 10%): 204 rows,
    # 16 sources, 76.5% (156 of 204), by source 75.4%; half-width 19.3%. Session 60 mlperf60: SMC's v4.0 (512 H100) and
    # Azure+NVIDIA's v3.1 (10,752 H100) GPT-3 rows, two sources (predicted once: -4.9 / -12.7%): 206 rows, 18 sources,
    # 76.7% (158 of 206), by source 78.1%; half-width 19.3%. Then mlperf60b: NVIDIA's own v3.1 (7) and v4.0 (2) Eos rows,
    # joining NVIDIA's MLPerf group (predicted once: -9.3..-14.3%): 215 rows, 18 sources, 75.8% (163 of 215), by source
    # 75.6%; half-width 15.8%. Session 61 mlperf61: MLPerf v3.0's GPT-3 rows, NVIDIA's DGX H100 (2, NVIDIA's group) and
    # NVIDIA+CoreWeave's (3, a new source), predicted once (-2.2..-5.6%): 220 rows, 19 sources, 75.9% (167 of 220), by
    # source 78.2%; half-width 15.8%
    assert 75.0 < cov["llm"].coverage_pct < 76.5 and cov["llm"].sources == 19 and cov["llm"].covered == 167, cov["llm"]
    for family in cov:
        assert cov[family].checked == cov[family].rows
    # moe6 (session 41, the first set registered with today's local-spec model): 63.3% -> 75.0% by rows, 72.9% by source;
    # session 49 (wire49b): moelab49 / moelab49b's eight layers, 44 rows / 7 sources, 79.5% by rows, 80.6% by source
    assert 70.0 <= cov["llm local spec"].coverage_pct <= 90.0 and cov["llm local spec"].sources == 7
    assert cov["llm local spec"].by_source_pct >= 70.0
    # 14.2% until session 39's cuDNN form; 11.7% since session 43; 13.6% since session 47: Megatron/NeMo MoE fp8
    # reached enough held-out rows to be validated (6 rows, 4 sources, with Bridge 25.09's; mean |error| 25.7% after mendC47, band
    # -4.9..+138.4%), beside MoE bf16 (mean |error| 27.3%); the A100 FSDP rows left (development) in session 46
    # session 49: adopt49's router term makes every published MoE row development (no MoE regime in the bands): 11.7%
    # session 50: the dgxc files one source (mendB1): 11.2%; session 51: 11.4%; session 52: publ52's NeMo 22.08 A100 rows
    # (the 175B rows +15..+30% fast join TP+PP bf16 and widen its band; the 5B rows open DP/ZeRO-1/2 bf16): 14.7%; with
    # the NeMo-team files one source (mendC52; fewer folds, wider left-out bands): 15.8%; session 53 (the regrouping:
    # CP | fp8 and TP+PP | fp8 no longer validated, TP | bf16 gains Alibaba's source): 15.8%
    # session 54 (review C54 item 2): "validated regimes" counts rows whose answer reads validated, no longer every
    # band of a regime's own (extrapolated ones were in it, the widest: collective across nodes read 79.1%): llm 16.2%,
    # 5 of 10 covered; then mendC54's rule C (a thin band regime reads extrapolated; no band moves): 13.6%, 4 of 9.
    # Their coverage is a recorded miss, not widened: collective across nodes 41 of 77 (42 of 79 before rule C; the
    # Engaging rows with Engaging left out); session 55: fabpub55's 8 MIT ORCD DGX H100 -g 1 rows, one of them in a validated
    # regime (joins the Engaging group): 42 of 78. Session 59 mlperf59: TP+PP | fp8 validated again (11 rows, 4 sources);
    # two of its rows read validated with their source left out and both lie outside that band: llm 4 of 11. Session 60
    # mlperf60: TP+PP | fp8 13 rows / 6 sources (band -15.7..+6.7%); SMC's row inside, Azure's outside: llm 5 of 12.
    # mlperf60b: NVIDIA's 9 rows make TP+PP | fp8 22 rows at 12.0% mean |error|, over the 10% target: extrapolated by
    # rule54 (no longer validated); llm 6 of 20, median half-width of the validated regimes 9.7%
    assert 9.0 < cov["llm"].median_half_width_validated_pct < 10.5
    assert (cov["collective across nodes"].covered_validated, cov["collective across nodes"].checked_validated) == (42, 78)
    # session 61 (mlperf61): NVIDIA's two v3.0 rows join its MLPerf group, which with the group left out reads TP+PP | fp8
    # validated (band 0.873-1.067): both inside (-5.1 / -5.6%); the group's other 11 such rows, 2 inside: 8 of 22
    assert (cov["llm"].covered_validated, cov["llm"].checked_validated) == (8, 22)
    assert cov["ddp"].checked_validated == 0 and cov["ddp"].median_half_width_validated_pct is None
    assert 60.0 < cov["storage"].coverage_pct < 70.0
    assert 70.0 <= cov["collective across nodes"].by_source_pct < 80.0
    one_node = load_table().family_rows("collective one node")
    tray = {r.regime for r in one_node if r.source == "nccl-azure-gb200-x1-aibenchguide"}
    assert tray and all(k.endswith("| nvlink-gb200") for k in tray)
    gb200 = ("nccl-azure-gb200-x1-aibenchguide", "nccl-oci-gb200-quickstart")   # OCI's page (nccl49) shares the regimes
    assert not tray & {r.regime for r in one_node if r.source not in gb200}
    # session 40: OCI's 2 x GB200.4 NVLink domain (4 of 10 rows inside with the source left out) took the family under
    # 70% by source. Session 44: its rows prompted the NVLS fill mendA44 adopted (above 8 GPUs only), so the file is
    # development (held_out false) and out of the table: 6 sources, by source back over 70% -- a smaller held-out set,
    # not a better model (docs/models/trust.md, "What moved in session 44")
    oci = "nccl-oci-gb200-x2-mnnvl-oke"
    assert not [r for r in one_node if r.source == oci]
    assert 70.0 <= cov["collective one node"].by_source_pct < 90.0 and cov["collective one node"].sources == 8   # OCI A100 s47; OCI GB200 s49


def test_docs_and_readme_accuracy_lines_are_the_shipped_tables():
    table = load_table()
    assert (ROOT / "docs" / "accuracy.md").read_text() == report.accuracy_page(table)
    readme = (ROOT / "README.md").read_text()
    assert report.readme_block(table) in readme


def test_predict_training_json_carries_bands_and_validation(capsys):
    assert main(["predict", "training", "--scenario", str(ROOT / "scenarios/llm/llama405b-16k.yaml"), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["status"] == "ok"
    lo, hi = doc["step_time_s_band"]
    assert lo <= doc["step_time_s"] * 1.5 and hi >= lo > 0
    assert doc["tokens_per_s_band"][0] == pytest.approx(doc["tokens_per_s"] * doc["step_time_s"] / hi)
    v = doc["validation"]
    assert v["status"] == "extrapolated" and v["regime"] == "llm | Megatron/NeMo | TP+PP | bf16" and "gpus 16384" in v["outside"]


def test_a_configuration_that_does_not_fit_exits_4_and_prints_no_step_time(tmp_path, capsys):
    scenario = tmp_path / "big.yaml"
    scenario.write_text(f"""name: too-big
machine:
  card: {ROOT}/models/collective/h200x2-primitives.yaml
  gpus_per_node: 2
  nodes: 1
  gpu: {{card: {ROOT}/models/gpu/h200-sxm.yaml}}
jobs:
  - kind: llm_training
    model: {{layers: 80, hidden: 8192, ffn: 28672, heads: 64, kv_heads: 8, vocab: 128256, seq: 4096}}
    parallel: {{dp: 2}}
    global_batch: 2
    micro_batch: 1
""")
    assert main(["predict", "training", "--scenario", str(scenario)]) == 4
    text = capsys.readouterr().out
    assert "DOES NOT FIT" in text and "step time " not in text and "days to train" not in text
    assert main(["predict", "training", "--scenario", str(scenario), "--json"]) == 4
    assert json.loads(capsys.readouterr().out)["status"] == "does_not_fit"


def test_predict_collective_json_every_variant_and_one(capsys):
    args = ["predict", "collective", "--scenario", str(ROOT / "scenarios/whatif/100g-vs-400g.yaml"), "--op", "all_reduce",
            "-b", "1K", "-e", "1G", "-f", "1024"]
    assert main(args + ["--json"]) == 0
    docs = json.loads(capsys.readouterr().out)
    assert [d["variant"] for d in docs] == ["100g", "400g"]
    for d in docs:
        for row in d["rows"]:
            assert row["time_s_band"][0] <= row["time_s_band"][1] and row["busbw_Bps_band"][0] <= row["busbw_Bps_band"][1]
            assert row["validation"]["status"] in ("validated", "extrapolated", "unvalidated")
    assert main(args + ["--json", "--variant", "400g"]) == 0
    assert json.loads(capsys.readouterr().out)["variant"] == "400g"
    assert main(args) == 0
    text = capsys.readouterr().out
    assert text.count("== variant") == 2 and "# trust 1GiB: measured time" in text
    assert main(args + ["--variant", "800g"]) == 2
    assert "no such variant" in capsys.readouterr().err


def test_card_sweep_json_and_every_run_job_kind_carry_validation(capsys):
    assert main(["predict", "collective", "--card", str(ROOT / "models/collective/h200x2-nvlink.yaml"), "--ranks", "2",
                 "--op", "all_gather", "-b", "64M", "-e", "64M", "--json"]) == 0
    row = json.loads(capsys.readouterr().out)["rows"][0]
    assert row["validation"]["status"] == "validated" and row["validation"]["regime"].endswith("| >=64MiB | nvlink-h200")
    for scenario in ("quickstart.yaml", "concurrent-jobs.yaml", "seed000-resnet18-2servers.yaml", "local-lab-qperf.yaml"):
        assert main(["run", str(ROOT / "scenarios" / scenario), "--json"]) in (0, 3)
        out = capsys.readouterr().out
        assert out.count('"validation"') >= 1, scenario


@pytest.mark.slow
def test_the_shipped_table_is_what_validate_error_bands_builds_today(tmp_path, capsys):
    out = tmp_path / "bands.json"
    assert main(["validate", "--error-bands", "--table", str(out)]) == 0
    fresh = json.loads(out.read_text())["rows"]
    shipped = json.loads((ROOT / "simcluster/trust/error_bands.json").read_text())["rows"]
    assert [(r["regime"], r["source"], r["row"]) for r in fresh] == [(r["regime"], r["source"], r["row"]) for r in shipped]
    assert [r["rho"] for r in fresh] == pytest.approx([r["rho"] for r in shipped], rel=1e-6)


def test_the_report_reads_each_rows_band_for_its_error_bars():
    from simcluster.report.html import band, scaling_bands

    rows = [{"machine.gpus": 8.0, "jobs[0].tokens_per_s": 10.0, "jobs[0].tokens_per_s_band": "[8.0, 11.0]", "machine.gpu_card": "a"},
            {"machine.gpus": 8.0, "jobs[0].tokens_per_s": 12.0, "jobs[0].tokens_per_s_band": "[9.0, 12.5]", "machine.gpu_card": "a"},
            {"machine.gpus": 16.0, "jobs[0].tokens_per_s": 20.0, "machine.gpu_card": "a"}]
    assert band(rows[0], "jobs[0].tokens_per_s") == (8.0, 11.0) and band(rows[2], "jobs[0].tokens_per_s") is None
    (series,) = scaling_bands(rows, "jobs[0].tokens_per_s").values()
    assert series == {8: (9.0, 12.5)}             # the best configuration's band at 8 GPUs; none known at 16


def test_storage_answers_carry_their_status(capsys):
    assert main(["storage", "simulate", "--workload", str(ROOT / "scenarios/workloads/unet3d_h100.yaml"), "--nvme",
                 str(ROOT / "models/nvme/micron-9400-pro-7.68tb.yaml"), "--accelerators", "1", "--steps", "8", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    v = doc["validation"]
    assert v["regime"] == f"storage | unet3d | {doc['limit']}" and v["status"] in ("validated", "extrapolated", "unvalidated")
    lo, hi = doc["throughput_Bps_band"]          # MLPerf Storage rows: a band, the regime's or the family's pooled one
    assert lo <= hi and (v["status"] != "unvalidated" or "band_from" in v)


def test_an_unvalidated_regimes_band_is_the_pooled_band_widened_to_its_own_rows():
    """Cold read (session 35): an rdma_ud answer read the transport family's pooled -24%..+16% while the regime's one
    held-out row was at -96%. The pooled band's order statistics cut that tail row; the answer's band must contain it."""
    tcp = _rows("transport | tcp", "transport", ["a", "b", "c", "d"] * 5, [0.8 + 0.02 * i for i in range(20)], scale=0.0)
    ud = _rows("transport | rdma_ud", "transport", ["erpc"], [0.043], scale=0.0)
    table = Table(tcp + ud)
    pooled = table.pooled_bounds("transport")
    assert not pooled[0] <= 0.043                          # the cut: the row lies outside the family's pooled band
    t = trust_of(Regime("transport", "transport | rdma_ud", None, ""), table)
    assert t.status == "unvalidated" and t.widened and t.rho == (0.043, pooled[1])
    assert t.time_band(1.0)[0] == pytest.approx(0.043)
    assert "widened to its own rows" in t.text() and "-96%..+" in t.text()
    assert "(pooled 80% band widened to its rows' range)" in t.text() and "(80% band)" not in t.text()
    assert t.to_json()["band_from"].endswith("widened to its own rows")
    rc = trust_of(Regime("transport", "transport | rdma_rc", None, ""), table)   # no rows of its own: the pooled band
    assert rc.rho == pooled and not rc.widened and "widened" not in rc.text() and "(80% band)" in rc.text()


def test_every_unvalidated_regimes_band_contains_its_own_rows_in_the_shipped_table():
    """Every family: an answer in a regime with too few rows gets a band that contains each of those rows' rho (a
    validated regime's conformal band leaves about 20% of its rows out by design)."""
    table = load_table()
    pooled = 0
    for key, g in table.regimes.items():
        lo, hi = g.scale_range
        t = trust_of(Regime(g.family, key, lo, "gpus" if hi else ""), table)
        if t.status == "unvalidated":
            pooled += 1
            assert all(t.rho[0] <= r.rho <= t.rho[1] for r in g.rows), (key, t.rho)
    assert pooled >= 10


def test_coverage_widens_the_pooled_band_by_the_regimes_rows_of_the_other_sources_only():
    """The coverage check measures the band answers get: rows of a pooled regime left out in turn are checked against
    the pooled band widened to the regime's rows from the other sources (2 of the 3 below fall inside; 0 without)."""
    tcp = _rows("transport | tcp", "transport", ["a", "b", "c", "d"] * 5, [1.0] * 20, scale=0.0)
    ud = _rows("transport | rdma_ud", "transport", ["x", "y", "y"], [0.04, 0.03, 0.05], scale=0.0)
    (cov,) = held_out_coverage(Table(tcp + ud))
    assert (cov.rows, cov.checked, cov.covered) == (23, 23, 22)


def test_an_unvalidated_collective_regime_pools_its_own_links_rows():
    """An EFA answer's band comes from the EFA rows, not from InfiniBand systems' (Table.pool_link): each regime's rows
    checked with their source left out hold inside it; a link with too few rows for a band pools the whole family."""
    table = load_table()
    efa = "collective | alltoall | alltoall | >=64MiB | rdma-efa"
    assert not table.regimes[efa].enough and table.pool_link("collective across nodes", efa) == "rdma-efa"
    trust = trust_of(Regime("collective across nodes", efa, 16.0), table)
    assert trust.pooled and trust.pool_link == "rdma-efa" and "rows over rdma-efa pooled" in trust.text()
    assert trust.to_json()["band_from"].startswith("every held-out collective across nodes row over rdma-efa, pooled")
    assert trust.rows == len(table.family_rows("collective across nodes", "rdma-efa")) < len(
        table.family_rows("collective across nodes"))
    checks = [c for c in leave_one_source_out(table, "collective across nodes") if c.row.regime == efa]
    assert len(checks) == 32 and sum(c.covered for c in checks) >= 26   # 12 of 30 on the family's pooled band; a regression pin on rows
    # that chose pool_link (development for the rule, trust.md session 46), not a held-out check of it. Session 53 xa2a53:
    # AWS's 2025 p5 alltoall_perf rows (2, rho 1.33 / 1.30, not blind) join: 32, all covered (the pool's EFA band is wide)
    # a link with no rows, and the one-node GB200 links (18 rows from 2 sources since nccl49: Azure's tray, OCI's page as one
    # source_group): the family's pooled band
    assert table.pool_link("collective across nodes", "collective | all_reduce | ring | >=64MiB | tcp") == ""
    assert table.pool_link("collective one node", "collective | all_reduce | nvlink-card | >=64MiB | nvlink-gb200") == ""
    assert table.pool_link("llm", "llm | Megatron/NeMo | TP+PP | bf16") == ""


def test_validated_regimes_count_validated_answers_only_not_extrapolated_ones():
    """Review C54 item 2: a regime that misses its target is extrapolated and keeps its band; its rows must not enter
    the "validated regimes" columns (they did: the column read wider than the family's median)."""
    from simcluster.trust.build import RowCheck

    row = Residual("llm", "llm | x", "a", "a 0", 8.0, 1.0)
    assert RowCheck(row, (0.9, 1.1), "validated").validated
    extrapolated = RowCheck(row, (0.5, 3.0), "extrapolated")
    assert not extrapolated.validated and extrapolated.own_band
    assert not RowCheck(row, (0.9, 1.1), "unvalidated").own_band


def test_band_edges_name_one_or_two_sources_holding_an_edges_tail():
    """Review C54 item 4: an answer's band whose edge rests on one or two sources' rows names them (display only)."""
    from simcluster.trust.table import band_edges, edges_text

    rows = [Residual("f", "k", s, f"{s} {i}", 8.0, 1.0 + 0.001 * i) for s in "abcde" for i in range(5)]
    rows += [Residual("f", "k", "slow", f"slow {i}", 8.0, 2.0 + i) for i in range(5)]   # 30 rows: 3 at or above k'=28
    band = conformal_bounds([r.rho for r in rows])
    assert band_edges(rows, band) == (("upper", (("slow", 3),)),)     # the low edge: one row, nothing named
    assert edges_text(band_edges(rows, band)) == "upper edge: rows of slow (3) at or beyond it"
    spread = rows[:20] + [Residual("f", "k", s, f"{s} x", 8.0, 3.0) for s in "abc"]
    assert band_edges(spread, conformal_bounds([r.rho for r in spread])) == ()   # three sources: none named


def test_ib_nvls_tree_answer_names_the_engaging_rows_at_its_upper_edge():
    trust = trust_of(Regime("collective across nodes", "collective | all_reduce | nvls-tree | >=64MiB | rdma-ib", 16.0))
    assert dict(trust.edges)["upper"][0] == ("mit-orcd-engaging-b200", 9)
    assert "upper edge: rows of mit-orcd-engaging-b200 (9)" in trust.text()
    assert trust.to_json()["band_edge_sources"]["upper"]["mit-orcd-engaging-b200"] == 9


def test_rule_c_a_band_regime_meeting_its_target_on_one_sources_rows_reads_extrapolated():
    """mendC54 rule C (trust-findings "Session 54: mendC54 rule C"): trust/thin on a band regime's rows; stricter only."""
    key = "llm | PyTorch FSDP | ZeRO-3/FSDP | bf16"
    one = [Residual("llm", key, "big", f"big {i}", 64.0, 1.02) for i in range(8)]
    thin = Table(one + [Residual("llm", key, s, f"{s} 0", 64.0, 1.03) for s in ("b", "c")])
    trust = trust_of(Regime("llm", key, 64.0), thin)
    assert trust.status == "extrapolated" and "thin: 2 rows outside the largest source, 3 needed" in trust.outside
    enough = Table(one + [Residual("llm", key, s, f"{s} {i}", 64.0, 1.03) for s in ("b", "c") for i in range(2)])
    assert trust_of(Regime("llm", key, 64.0), enough).status == "validated"
    shipped = trust_of(Regime("llm", key, 64.0))
    assert shipped.status == "extrapolated" and shipped.outside.startswith("thin:"), shipped.outside
    roce = trust_of(Regime("collective across nodes", "collective | all_reduce | nvls-tree | >=64MiB | rdma-roce", 16.0))
    assert roce.status == "extrapolated" and "each source once 17.2%" in roce.outside
