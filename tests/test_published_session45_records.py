"""Transcription checks of the published files session 45 recorded (review A45 item 9): the identities each file's notes
state on its printed numbers, so a number mistyped later fails here. The KempnerForge file has its own
(test_fsdp_family.py)."""

from __future__ import annotations

import pytest
import yaml
from conftest import ROOT

PUBLISHED = ROOT / "calibration" / "published"
NEMOTRON = yaml.safe_load((PUBLISHED / "llm-dgxc-benchmarking-v25.04-nemotron4-h100.yaml").read_text())
MOONLIGHT = yaml.safe_load((PUBLISHED / "llm-megatron-bridge-skills-moonlight16b-h100-bf16.yaml").read_text())
SEQ = 4096


@pytest.mark.parametrize("i", range(len(NEMOTRON["runs"])))
def test_dgxc_v25_04_nemotron4_column(i):
    """dgxc v25.04 nemotron/README.md: tokens/s = 4096 x GBS / step time as printed (to the printed integer: the
    README's last step, printed to 0.01 s); GBS = 4 x GPUs (15B) or GPUs / 4 (340B), launch.sh; GBS = GA x MBS x dp with
    GA 4 (15B) / 16 (340B); dp = GPUs / (tp pp)."""
    run = NEMOTRON["runs"][i]
    gpus, par, batch, meas = run["gpus"], run["parallel"], run["batch"], run["measured"]
    gbs = batch["global_batch"]
    big = run["model"]["name"] == "Nemotron-4 340B"
    assert run["model"]["name"] in ("Nemotron-4 15B", "Nemotron-4 340B")
    assert gbs == (gpus // 4 if big else 4 * gpus)
    assert batch["global_batch_tokens"] == SEQ * gbs
    assert par["dp"] == gpus // (par["tp"] * par["pp"])
    assert gbs == (16 if big else 4) * batch["micro_batch"] * par["dp"]
    assert abs(SEQ * gbs / meas["step_time_s"] - meas["tokens_per_s"]) <= 1.0


def test_dgxc_v25_04_nemotron4_series():
    """24 columns: 15B at 16-2,048 GPUs and 340B at 256-2,048, each in BF16 and FP8."""
    cols = sorted((r["model"]["name"], r["batch"]["precision"], r["gpus"]) for r in NEMOTRON["runs"])
    want = sorted([("Nemotron-4 15B", p, 2 ** k) for p in ("bf16", "fp8") for k in range(4, 12)]
                  + [("Nemotron-4 340B", p, 2 ** k) for p in ("bf16", "fp8") for k in range(8, 12)])
    assert cols == want


@pytest.mark.parametrize("i", range(len(MOONLIGHT["runs"])))
def test_moonlight16b_row(i):
    """Megatron-Bridge skills' Moonlight 16B table: GBS 4, 16384 tokens a step, dp = 8 / (tp pp cp) = 4 at micro-batch 1
    (one micro-batch a rank); printed TFLOP/s/GPU x 8 GPUs x step / 16384 tokens = 1.73e10 FLOPs a token (within 1%: the
    six rows' model FLOPs per token, whatever they recompute)."""
    run = MOONLIGHT["runs"][i]
    par, batch, meas = run["parallel"], run["batch"], run["measured"]
    assert run["gpus"] == 8 and batch["global_batch"] == 4 and batch["global_batch_tokens"] == 4 * SEQ
    assert par["dp"] == run["gpus"] // (par["tp"] * par["pp"] * par["cp"]) == 4 and batch["micro_batch"] == 1
    per_token = meas["tflops_per_gpu"] * 1e12 * run["gpus"] * meas["step_time_s"] / batch["global_batch_tokens"]
    assert abs(per_token / 1.73e10 - 1) < 0.01, per_token


def test_moonlight16b_variants():
    """Six rows, each changing only recompute_modules; row 0 (the printed empty list) is recompute none."""
    mods = [(r["parallel"]["recompute"], tuple(r["parallel"].get("recompute_modules") or ())) for r in MOONLIGHT["runs"]]
    assert mods == [("none", ()), ("selective", ("core_attn",)), ("selective", ("mla_up_proj",)),
                    ("selective", ("mla_up_proj", "mlp")), ("selective", ("moe_act",)),
                    ("selective", ("layernorm", "moe_act"))]
