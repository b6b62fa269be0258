"""KempnerForge's DTensor TP + sequence parallelism under torch.compile (llm/dtensor_tp.py; issue 44, session 47): the
mechanics of the plan on synthetic shapes (no recorded row): collective counts, layout copies, the sequence-sharded
norms, the replicated loss and gathered logits, the refusals, and the published machine's GPUs per node."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from simcluster.llm import comm, compiled, dtensor_tp, vocab_ops
from simcluster.llm.framework import FRAMEWORKS, MEGATRON
from simcluster.llm.spec import BatchSpec, LlmConfigError, ParallelSpec, TransformerSpec

KF = FRAMEWORKS["kempnerforge-fsdp2-compile"]
MODEL = TransformerSpec(8, 2048, 5632, 16, 8, 32000, 2048)   # synthetic: no recorded row's shape
TP2 = ParallelSpec(tp=2, recompute="full", sequence_parallel=True)
BATCH = BatchSpec(4, 2)


def test_only_the_compiled_kempnerforge_framework_runs_the_plan():
    assert KF.dtensor_sp and dtensor_tp.applies(KF, TP2)
    assert not dtensor_tp.applies(KF, replace(TP2, tp=1, sequence_parallel=False))
    assert not any(f.dtensor_sp for name, f in FRAMEWORKS.items() if name != "kempnerforge-fsdp2-compile")


def test_collectives_per_layer_forward_recompute_backward():
    # forward 2 AG + 2 RS; the checkpoint in the graph re-runs 2 AG + 1 RS (down_proj's RS only feeds the last add);
    # backward 5 RS (q, k, v, gate, up input gradients apart) + 2 AG
    assert dtensor_tp.calls_per_layer(replace(TP2, recompute="none")) == (4, 7)
    assert dtensor_tp.calls_per_layer(TP2) == (4, 10)
    assert dtensor_tp.calls_per_layer(TP2, ckpt_in_graph=False) == (4, 11)


def test_layer_seconds_are_the_counted_collectives_on_the_tp_group():
    from simcluster.cards import load_collective
    from simcluster.llm.predict import network_for
    from simcluster.reference.llm import LlmUsage, machine_for

    usage = LlmUsage(Path("models/gpu/h200-sxm.yaml"), Path("models/nic/ib-ndr-400g.yaml"),
                     Path("models/collective/h200x4-nvlink.yaml"), 4, {}, 4)
    machine = machine_for(usage, 2)
    net = network_for(machine, load_collective(machine.card)[0], None)
    group = comm.groups(TP2, net).tp
    act = BATCH.micro_batch * MODEL.seq * MODEL.hidden * 2
    ag, rs = (comm.collective_s(net, group, op, act) for op in ("all_gather", "reduce_scatter"))
    fwd, bwd = dtensor_tp.layer_s(MODEL, TP2, BATCH, net, group)
    assert fwd == pytest.approx(2 * ag + 2 * rs) and ag > 0 and rs > 0
    assert bwd == pytest.approx((2 + 2) * ag + (5 + 1) * rs)
    emb_f, emb_b, head_f, head_b = dtensor_tp.ends_s(MODEL, TP2, BATCH, net, group)
    logits = comm.collective_s(net, group, "all_gather", BATCH.micro_batch * MODEL.seq * MODEL.vocab * 2)
    assert emb_f == 0.0 and emb_b == pytest.approx(ag) and head_b == pytest.approx(rs)
    assert head_f == pytest.approx(ag + logits)


def test_layout_copies_one_per_collective_and_views_at_micro_batch_one():
    fwd = dtensor_tp.layout_copies(MODEL, TP2, BATCH, backward=False)
    bwd = dtensor_tp.layout_copies(MODEL, TP2, BATCH, backward=True)
    elems = BATCH.micro_batch * MODEL.seq * MODEL.hidden
    assert [o.count for o in fwd + bwd] == [4, 10]
    assert fwd[0].bytes == 4 * elems   # bf16 read + write
    one = BatchSpec(4, 1)
    assert [o.count for o in dtensor_tp.layout_copies(MODEL, TP2, one, False) + dtensor_tp.layout_copies(MODEL, TP2, one, True)] == [2, 6]


def test_compiled_layer_runs_norms_on_the_sequence_shard_and_adds_the_copies():
    f1, b1 = compiled.layer_ops(MODEL, replace(TP2, tp=1, sequence_parallel=False), BATCH, KF)
    f2, b2 = compiled.layer_ops(MODEL, TP2, BATCH, KF)

    def named(ops_list, name):
        return next(o for o in ops_list if o.name == name)
    for name in ("norm1_cast", "add_norm2_cast", "residual_add"):
        assert named(f2, name).bytes == pytest.approx(named(f1, name).bytes / 2)
    assert named(f2, "swiglu").bytes == pytest.approx(named(f1, "swiglu").bytes / 2)   # ffn split, all T tokens
    assert named(f2, "tp_layout").count == 4 and named(b2, "tp_layout.bwd").count == 10
    assert not any(o.name.startswith("tp_layout") for o in f1 + b1)


def test_the_loss_reads_every_logit_on_every_tp_rank_and_the_head_gemm_is_split():
    tokens = BATCH.micro_batch * MODEL.seq
    kf, meg = vocab_ops.head_forward(MODEL, TP2, BATCH, KF), vocab_ops.head_forward(MODEL, TP2, BATCH, MEGATRON)
    ce = next(o for o in kf if o.name == "cross_entropy")
    assert ce.flops == 5 * tokens * MODEL.vocab
    assert next(o for o in meg if o.name == "cross_entropy").flops == 5 * tokens * MODEL.vocab // 2
    assert next(o for o in kf if o.name == "lm_head").shape[1] == MODEL.vocab // 2
    assert any(o.name == "logits_layout" for o in kf)
    assert not any(o.name.startswith("logits_layout") for o in vocab_ops.head_backward(MODEL, TP2, BATCH, KF))


def test_memory_holds_the_full_logits_on_every_tp_rank_at_the_bf16_loss_bytes():
    """Session 58: the head's output_layouts Replicate gives each TP rank all T V logits, and KempnerForge's bf16
    F.cross_entropy with the logits' name kept holds 8 bytes a logit at its backward's peak (measured,
    calibration/h200x1-lossbytes58-2026-12-02); the head's weights stay split over TP (parameters), Megatron's logits
    split over TP."""
    from simcluster.llm.memory import stage_memories
    par = replace(TP2, dp=2, zero=3)
    logits = {tp: stage_memories(MODEL, replace(par, tp=tp, sequence_parallel=tp > 1), BATCH, 141e9, KF)[0].logits for tp in (1, 2)}
    elements = BATCH.micro_batch * MODEL.seq * MODEL.vocab
    assert KF.logit_bytes == 8.0
    assert logits[2] == logits[1] == pytest.approx(8.0 * elements)
    meg = {tp: stage_memories(MODEL, replace(par, tp=tp, zero=1, sequence_parallel=tp > 1), BATCH, 141e9, MEGATRON)[0].logits
           for tp in (1, 2)}
    assert meg[2] == pytest.approx(meg[1] / 2)
    params = {tp: stage_memories(MODEL, replace(par, tp=tp, sequence_parallel=tp > 1), BATCH, 141e9, KF)[0].parameters
              for tp in (1, 2)}
    assert params[2] == pytest.approx(params[1] / 2, rel=1e-3)   # the head and embedding split too (ColwiseParallel head)


def test_refusals_at_their_keys():
    with pytest.raises(LlmConfigError, match="parallel.sequence_parallel"):
        compiled.check_compiled(MODEL, replace(TP2, sequence_parallel=False), KF)
    with pytest.raises(LlmConfigError, match="parallel.pp: 2"):
        compiled.check_compiled(MODEL, replace(TP2, pp=2), KF)
    compiled.check_compiled(MODEL, replace(TP2, dp=2, zero=3), KF)   # TP x FSDP2: allowed
    with pytest.raises(LlmConfigError, match="parallel.tp: 2"):   # the runner's torch.compile: tp still refused
        compiled.check_compiled_parallel(TP2, fsdp=True, torch_fsdp2=True)


def test_step_prices_exposed_tp_comm_for_the_plan():
    from simcluster.cards import load_collective
    from simcluster.hardware.gpu import load_gpu
    from simcluster.llm.predict import network_for, predict_llm
    from simcluster.reference.llm import LlmUsage, machine_for

    usage = LlmUsage(Path("models/gpu/h200-sxm.yaml"), Path("models/nic/ib-ndr-400g.yaml"),
                     Path("models/collective/h200x4-nvlink.yaml"), 4, {}, 4)
    machine = machine_for(usage, 2)
    net = network_for(machine, load_collective(machine.card)[0], None)
    r = predict_llm(MODEL, TP2, BATCH, load_gpu(machine.gpu_card)[0], net, 2, "megatron", trace=False, framework=KF)
    assert r.breakdown["exposed_tp_comm"] > 0


def test_machine_takes_the_files_gpus_per_node():
    from simcluster.reference.llm import LlmUsage, machine_for

    four = LlmUsage(Path("a"), Path("b"), Path("c"), 4, {}, 4)
    eight = LlmUsage(Path("a"), Path("b"), Path("c"), 8, {})
    assert (machine_for(four, 8).gpus_per_node, machine_for(four, 8).nodes) == (4, 2)
    assert (machine_for(four, 2).gpus_per_node, machine_for(four, 2).nodes) == (2, 1)
    assert (machine_for(eight, 16).gpus_per_node, machine_for(eight, 16).nodes) == (8, 2)


def test_framework_by_run_refuses_a_bad_index_or_name(tmp_path):
    import yaml
    from conftest import ROOT

    from simcluster.errors import SimclusterError
    from simcluster.published import read_published
    from simcluster.reference.llm import llm_usage

    doc = yaml.safe_load((ROOT / "calibration" / "published" / "llm-kempnerforge-h200-fsdp2.yaml").read_text())
    doc["simcluster"]["machine"] = {k: str((ROOT / "calibration" / "published" / v).resolve()) if k.endswith("card") else v
                                    for k, v in doc["simcluster"]["machine"].items()}
    for bad, words in (({14: "kempnerforge-fsdp2"}, "run index from 0 to 13"), ({7: "nope"}, "is not one of")):
        doc["simcluster"]["framework_by_run"] = bad
        path = tmp_path / "llm-bad.yaml"
        path.write_text(yaml.safe_dump(doc))
        with pytest.raises(SimclusterError, match=words):
            llm_usage(read_published(path, "published-llm-run"))


def _kempnerforge_doc():
    import yaml
    from conftest import ROOT

    doc = yaml.safe_load((ROOT / "calibration" / "published" / "llm-kempnerforge-h200-fsdp2.yaml").read_text())
    doc["simcluster"]["machine"] = {k: str((ROOT / "calibration" / "published" / v).resolve()) if k.endswith("card") else v
                                    for k, v in doc["simcluster"]["machine"].items()}
    return doc


def test_gpus_not_a_whole_number_of_nodes_is_one_line_naming_both_keys(tmp_path):
    """Cold review B47 item 9: system.gpus_per_node 3 on KempnerForge's file (4-GPU runs and more): the file loader
    refuses it at runs[i].gpus naming system.gpus_per_node (a ValueError or a path error deep in the model before)."""
    import yaml

    from simcluster.errors import SimclusterError
    from simcluster.published import read_published
    from simcluster.reference.llm import llm_usage

    doc = _kempnerforge_doc()
    path = tmp_path / "llm-per-node.yaml"
    path.write_text(yaml.safe_dump(doc))
    assert llm_usage(read_published(path, "published-llm-run")).gpus_per_node == doc["system"]["gpus_per_node"]
    doc["system"]["gpus_per_node"] = 3
    path.write_text(yaml.safe_dump(doc))
    with pytest.raises(SimclusterError, match=r"runs\[\d+\]\.gpus.*system\.gpus_per_node = 3"):
        llm_usage(read_published(path, "published-llm-run"))


def test_framework_of_takes_the_runs_index_and_refuses_a_copy():
    """Cold review B47 item 10: framework_by_run by the index predict_run holds; a copied run is refused, not priced
    with the file's default framework."""
    from conftest import ROOT

    from simcluster.errors import SimclusterError
    from simcluster.published import read_published
    from simcluster.reference.llm import framework_of

    ref = read_published(ROOT / "calibration" / "published" / "llm-kempnerforge-h200-fsdp2.yaml", "published-llm-run")
    by_run = ref.usage["framework_by_run"]
    i = next(iter(by_run))
    assert framework_of(ref, dict(ref.runs[i]), i).name == by_run[i] == framework_of(ref, ref.runs[i]).name
    with pytest.raises(SimclusterError, match="pass its index"):
        framework_of(ref, dict(ref.runs[i]))


def test_a_files_framework_keys_are_checked_once_and_name_each_run_as_before(monkeypatch):
    """llm_usage checks the file's framework keys once (LlmUsage.frameworks); a row priced with them reads the same
    framework as one that checks the file itself, and does not check the file again."""
    from conftest import ROOT

    from simcluster.published import read_published
    from simcluster.reference import llm_frameworks
    from simcluster.reference.llm import framework_of, llm_usage

    ref = read_published(ROOT / "calibration" / "published" / "llm-kempnerforge-h200-fsdp2.yaml", "published-llm-run")
    usage = llm_usage(ref)
    each = [framework_of(ref, run, i).name for i, run in enumerate(ref.runs)]
    assert len(set(each)) == 2   # framework_by_run names row 7 apart from the file's default

    def checked_again(_ref):
        raise AssertionError("the file's framework keys checked again")

    monkeypatch.setattr(llm_frameworks, "framework_choice", checked_again)
    monkeypatch.setattr(llm_frameworks, "framework_by_run", checked_again)
    assert [framework_of(ref, run, i, usage.frameworks).name for i, run in enumerate(ref.runs)] == each
