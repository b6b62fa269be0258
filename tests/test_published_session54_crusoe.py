"""The published files session 54 (zero54, issue 44) recorded: Crusoe Cloud's torchtitan table (Llama 3.1 8B under
FSDP2 on 16-128 H100, 32-128 H200, 8-16 B200), a held-out FSDP/ZeRO source outside KempnerForge, Alibaba and AWS.
Transcription checks (the printed TFLOP/s and MFU against torchtitan's formula on the recorded dimensions), the rows
compared and held out in their family, one source_group, and the errors they were predicted once with."""

from __future__ import annotations

import pytest
import yaml
from conftest import ROOT, published_llm_validation
from test_published_session49_records import torchtitan_flop_per_token

PUBLISHED = ROOT / "calibration" / "published"
NAMES = {"h100": 989e12, "h200": 989e12, "b200": 2250e12}   # torchtitan's peak bf16 FLOP/s a GPU (the printed mfu's divisor)
DOCS = {k: yaml.safe_load((PUBLISHED / f"llm-crusoe-torchtitan-{k}.yaml").read_text()) for k in NAMES}
LOCAL_BATCH = {"h100": 2, "h200": 4, "b200": 5}
ROWS = [(k, i) for k, doc in DOCS.items() for i in range(len(doc["runs"]))]


@pytest.mark.parametrize(("gpu", "i"), ROWS)
def test_row_is_the_printed_log_line(gpu, i):
    """tflops / tps is torchtitan's 6 N + 12 L h q s at seq 8192 (to the log's rounding), mfu = tflops / peak (two
    decimals), tokens_per_s = tps x GPUs, FSDP over every GPU at the table's batch column."""
    run = DOCS[gpu]["runs"][i]
    meas, par, batch = run["measured"], run["parallel"], run["batch"]
    flop = torchtitan_flop_per_token(run["model"])
    assert meas["tflops_per_gpu"] * 1e12 / meas["tokens_per_s_per_gpu"] == pytest.approx(flop, rel=2e-4)
    assert round(100 * meas["tflops_per_gpu"] * 1e12 / NAMES[gpu], 2) == pytest.approx(meas["mfu_percent"], abs=0.011)
    assert meas["tokens_per_s"] == meas["tokens_per_s_per_gpu"] * run["gpus"]
    assert (par["dp"], par["tp"], par["pp"], par["cp"], par["zero"]) == (run["gpus"], 1, 1, 1, 3)
    assert batch["micro_batch"] == LOCAL_BATCH[gpu] and batch["global_batch"] == LOCAL_BATCH[gpu] * run["gpus"]


def test_one_source_group_held_out_under_the_cudnn_framework():
    for doc in DOCS.values():
        usage = doc["simcluster"]
        assert usage["source_group"] == "llm-crusoe" and usage["held_out"] is True
        # named kempnerforge-fsdp2 until session 59 (the same spec: torchtitan-fsdp2 with the card's attention)
        assert usage["framework"] == "torchtitan-fsdp2-card" and not usage.get("runs_not_compared")
        assert "EXPECTATION" in doc["notes"]


@pytest.fixture(scope="module")
def validation():
    return published_llm_validation([PUBLISHED / f"llm-crusoe-torchtitan-{k}.yaml" for k in NAMES])


# the once print (validation/zero54-crusoe-torchtitan-predicted-once.txt, main aab7d118's model; + = fast), in %: the
# record, never updated
ONCE_PRINTED_PCT = {("h100", 0): +13.3, ("h100", 1): +9.6, ("h100", 2): -3.8, ("h200", 0): -2.3, ("h200", 1): +0.8,
                    ("h200", 2): +1.0, ("b200", 0): +13.1, ("b200", 1): +14.1}
# today's model's errors of the same rows (the once print's while the model is unchanged since aab7d118): a model change
# that moves them fails here; one that moves them on purpose updates this dict and says so in llm-findings
TODAY_ERRORS = {("h100", 0): +0.133, ("h100", 1): +0.096, ("h100", 2): -0.038, ("h200", 0): -0.023, ("h200", 1): +0.008,
                ("h200", 2): +0.010, ("b200", 0): +0.131, ("b200", 1): +0.141}


def test_every_row_is_compared_held_out_in_the_fsdp_family_and_reads_as_today_pinned(validation):
    rows = {(r.source.rsplit("-", 1)[-1], r.run): r for r in validation.rows if r.error is not None}
    assert rows.keys() == TODAY_ERRORS.keys() and not validation.skipped
    assert all(r.held_out and not r.development_for and r.family == "FSDP/ZeRO" for r in rows.values())
    for key, error in TODAY_ERRORS.items():
        assert rows[key].error == pytest.approx(error, abs=0.0006), key


def test_the_once_print_is_kept_as_recorded():
    printed = {}
    for line in (ROOT / "validation" / "zero54-crusoe-torchtitan-predicted-once.txt").read_text().splitlines():
        words = line.split()
        if words and words[0].startswith("crusoe-torchtitan-") and words[1].isdigit() and words[2] != "rows":
            printed[(words[0].rsplit("-", 1)[-1], int(words[1]))] = float(next(w for w in words if w.endswith("%"))[:-1])
    assert printed == ONCE_PRINTED_PCT


def test_the_assumed_b200_nics_show_on_the_row_across_nodes_only(validation, tmp_path):
    """Cold review A54 item 5 (mendA54): the B200 file's NIC count is an assumption (not stated for B200), carried in
    simcluster.machine.nics_assumed; `validate --published llm` prints "assumed NICs" on its 16-GPU row (two nodes), not
    on the 8-GPU row (one node, no NIC), nor on the H100 / H200 files (Crusoe's IB docs state their NICs). A value that
    is not text is refused in one line naming the key."""
    from simcluster.errors import SimclusterError
    from simcluster.reference.llm import validate_published_llm

    detail = {(r.source.rsplit("-", 1)[-1], r.run): r.detail for r in validation.rows if r.error is not None}
    assert "NICs" in detail[("b200", 0)] and "NICs" not in detail[("b200", 1)]
    assert not any("NICs" in d for (gpu, _), d in detail.items() if gpu != "b200")
    assert "not stated for B200" in DOCS["b200"]["system"]["nic"]
    bad = (PUBLISHED / "llm-crusoe-torchtitan-b200.yaml").read_text().replace(
        'nics_assumed: "8 x 400G NDR a node, not stated for B200 (HGX B200 reference)"', "nics_assumed: [8]")
    (tmp_path / "llm-x.yaml").write_text(bad.replace("../../", str(ROOT) + "/"))
    with pytest.raises(SimclusterError, match="nics_assumed"):
        validate_published_llm(tmp_path / "llm-x.yaml")


FROM_SPEC = {   # system.nic says "not printed", but the NICs follow from what the source does state (not marked)
    "llm-aws-sagemaker-torchtitan-p5-h100-unverified": "p5.48xlarge stated: its EFA (3200 Gbps an instance) is the instance's spec",
    "llm-awsome-torchtitan-p5-h100": "p5.48xlarge stated: 32 x 100G EFAv2 is the instance's spec",
    "llm-megatron-moe-modelzoo-qwen3-235b-h100-2026": "the same Model Zoo's H100 tables print 'InfiniBand 8x50 GB/s' (R2 series)",
}


def test_llm_files_whose_text_says_the_nics_are_not_stated_carry_the_mark():
    """Final read 54 item 5 (mendF54): on llm rows the "assumed NICs" mark is set where the file's own text says its NICs
    are not stated / not printed / assumed: every file whose system.nic says so, and the files whose notes or usage say
    the network is not stated (read file by file; 34 files); FROM_SPEC names the three whose NICs follow from a
    stated instance type or the source series. Files with system.nic null whose text says nothing about
    the network are not marked (not checked; docs/models/llm.md says the mark is therefore a lower bound)."""
    import re

    import yaml

    marked = set()
    for path in sorted((ROOT / "calibration" / "published").glob("llm-*.yaml")):
        doc = yaml.safe_load(path.read_text())
        machine = (doc.get("simcluster") or {}).get("machine") or {}
        if machine.get("nics_assumed"):
            marked.add(path.stem)
        if re.search(r"not stated|not printed|assumed", str((doc.get("system") or {}).get("nic") or ""), re.I) and path.stem not in FROM_SPEC:
            assert machine.get("nics_assumed"), path.name
    # 35 at mendF54; 37 with session 55 moe55's two MoE files (the model cards, Megatron-LM's recipe index); 38 with hfds55's HF blog file
    # 39 with session 57's KempnerForge weak-scaling file; 40 with session 59's Oracle MLPerf file (NIC count not stated);
    # 41 with session 60's SMC MLPerf file (NDR's rate not stated; Azure's states 8 x 400G)
    assert "llm-mlperf-training-v4.1-oracle-gpt3-h100" in marked and "llm-mlperf-training-v4.1-nvidia-gpt3-h100" not in marked
    assert "llm-mlperf-training-v4.0-smc-gpt3-h100" in marked and "llm-mlperf-training-v3.1-azure-gpt3-h100" not in marked
    assert len(marked) == 41 and {"llm-dgxc-benchmarking-v25.05-deepseek-v3-h100", "llm-fms-fsdp-a100", "llm-bloom176b-tr11",
                                  "llm-crusoe-torchtitan-b200", "llm-kempnerforge-h200-fsdp2"} <= marked
