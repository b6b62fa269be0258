"""The MoE development rows the model prices fast or slow, by what their sources ran (issue 44, session 51 moedev51).
Development only: prints, judging nothing.

Per development row (the 13 judged files, heldout/registration.moe_rows_then; the held-out Model Zoo rows are NOT
printed here) the layout the model prices, its step breakdown (shares of the predicted step: compute, exposed EP / TP
communication, pipeline bubble, `other` = optimizer + host), one MoE layer's GPU split (forward + backward ms: attention
block, router, permutations, experts, shared expert; the host excess after the dispatcher sync, llm/moe_sync), and the
error before session 51's changes (heldout/registration.before_moedev51) and now. Then, per source, what the recipe set
that the model does not price or prices differently (SOURCE_FACTS: read this session from the recipes / Megatron-Core at
the cited commits, or the file's own notes where they were read before), with the rows' signed range.
    PYTHONPATH=. python studies/moedev51_rows.py > studies/moedev51_rows.txt
    PYTHONPATH=. python studies/moedev51_rows.py --steps > studies/moedev51_steps.txt   (each change added in turn)
+ = predicted fast (reference/llm's convention: (measured step - predicted) / predicted on the printed metric).
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

MLR = "NVIDIA/Megatron-LM"
# per development file (stem less 'llm-'): (what the source ran, how the model prices it) -- facts, with where they are read
SOURCE_FACTS = {
    "dgxc-benchmarking-v24.11.1-grok1-h100": [
        ("moe_pad_expert_input_to_capacity true, capacity factor 1.0 (grok1_314b.yaml L53-54 at v24.11.1 35a9aec; v25.02 "
         "8f5cbb3 the same)", f"NOT a no-sync path on these images (mendC51, cold review C51 item 1): the dispatcher's "
         f"explicit sync is 'no_sync' ({MLR} core_v0.10.0 7ee599a2 token_dispatcher.py L322-392), but moe_utils.permute / "
         "unpermute call masked_select (L178, L212) until f27a04f6 (core_v0.11.0): v25.02 runs NeMo 24.12 (core 0.10), "
         "v24.11.1 an unnamed nemo:dev image; the sync stays priced (moedev51 had priced it away)"),
        ("sequence parallel with TP 4 (configure.sh model.sequence_parallel=true): the router runs on the SP shard",
         "PRICED since moedev51 (router GEMM M = b s / (c t)); before b s / c"),
        ("moe_grouped_gemm false: SequentialMLP, one TE linear pair per local expert (yaml L51)",
         "not priced as its own calls: 1 local expert at EP 8 (the same), 2 / 4 at 8 / 16 GPUs (one call a group counted)"),
        ("the EP group leaves the node from 16 GPUs (TP 4 with EP 4 at 16 GPUs, EP 8 from 32: the EP ranks 4 apart, 2 a "
         "node); DGX H100 has one 400 Gb/s compute NIC per GPU (dgxc-benchmarking v25.02 8f5cbb3 README.md L80, L91-92); "
         "measured per-GPU throughput is flat from 8 to 2048 GPUs (MFU 0.454 -> 0.410 BF16)", "PRICED since session 52's "
         "moe52: the alltoall across nodes at each GPU's own NIC (48.65 GB/s on roce-400g); before, a group view of 2 "
         "ranks a node read as 2 GPU ports for 8 NICs, each rank at a quarter of its NIC (13.3 GB/s: "
         "collectives/cluster.NICS_AS_WIRED), the exposed EP 20-35% of the step from 16 GPUs up; "
         "studies/moe52_grok.txt prints every row before / after"),
        ("NCCL_P2P_NET_CHUNKSIZE=2097152 (grok1/configure.sh L31 at v25.02): NCCL's network p2p chunk 2 MiB, 16x the "
         "default 128 KiB", "not priced: the model's alltoall runs at the NIC's payload rate at any chunk size"),
        ("ub_tp_comm_overlap true, overlap_p2p_comm true, gc_interval 40, aux loss 0.01, the vocabulary padded to 128 x TP",
         "TP overlap priced (llm/overlap); overlap_p2p_comm, GC, aux loss, vocabulary padding not priced (the file's notes)")],
    "megatron-bridge-25.09-dgx-h100-moe": [
        ("rows 1, 2 (Qwen3 'tokendrop'): apply_moe_token_drop, moe_pad_expert_input_to_capacity True, capacity 1.0 "
         "(Megatron-Bridge v0.1.0rc3 bf71eba0 training/utils/moe_token_drop.py L18-21)",
         f"PRICED since moedev51: no dispatcher sync ({MLR} d98e8a64 token_dispatcher.py preprocess: drop_and_pad returns "
         "before any sync point); before: priced as dropless"),
        ("row 2 and row 0: TP 2 with sequence parallel: the router on the SP shard", "PRICED since moedev51"),
        ("row 0 (DeepSeek-V3): overlap_grad_reduce False on H100, precision-aware optimizer, MTP 1 layer, manual GC",
         "grad reduce overlapped by the model; optimizer fp32 Adam; MTP priced; GC not (the file's notes)")],
    "megatron-bridge-skills-moonlight16b-h100-bf16": [
        ("moe_router_fusion False (recipes/moonlight/h100/moonlight_16b.py at 600d069b): Megatron's unfused TopKRouter; "
         "its router config (models/deepseek/deepseek_v3_bridge.py L66-75: sigmoid, expert bias, seq_aux_loss, "
         "moe_router_dtype fp32, pre_softmax; n_group / topk_group mapped from the HF config, conversion/model_bridge.py "
         "L487-488, Moonlight's values not read here: counted at 1 / 1 and unset)",
         "NOT priced: llm/moe_graphs counts 7 ungraphed router calls (the fused router's); mcrouter50 measured "
         "Megatron-Core 0.14.0's unfused router at 44 kernels a forward, 82 forward + backward, in aux_loss / bf16 / "
         "no groups (calibration/h200x1-mcrouter50-2026-12-01 readout.txt, moonlight-ep8); at the run's Megatron-Core "
         "24bad8e6 with the recipe's settings the CPU leaf-op proxy counts 53 / 94 (groups 1 / 1; 44 / 85 unset; "
         "0.14.0: 55 / 96; the proxy read 44 / 83 where the GPU counted 44 / 82): neither the version nor the config of the measurement "
         "(studies/moe52_router_count.txt), so not applied (session 52 moe52). PRICED since session 52's moonprice52 "
         "(recipe moe_router_fusion false, llm/moe_router_unfused.py): calibration/h200x1-moonrouter52-2026-12-01 "
         "measured it at 24bad8e6 in the recipe's configuration, 55 / 95 kernels, 183.3 / 307.4 us (GPU, netted of the "
         "card's GEMM price) and its forward's host 1,444 us (54 calls after the GEMM at 26.3 us each, for moe_graphs' 7 x 40 us)"),
        ("TP 2 with sequence parallel (the recipe): the router on the SP shard", "PRICED since moedev51 (small: E 64, h 2048)"),
        ("GBS 4 on dp 4: one micro-batch a step; manual_gc every 5 steps; precision-aware optimizer with bf16 moments; "
         "routing not force-balanced (mock data, no moe_router_force_load_balancing)",
         "one micro-batch priced (no steady state); GC, bf16 moments, unbalanced routing not priced (the file's notes): an "
         "unbalanced router makes the slowest EP rank's experts and dispatch longer than the balanced load the model prices")],
    "megatron-bridge-25.11-dgx-h100-b200": [
        ("row 4: Qwen3 30B FP8 on 16 H100, the same preset as 25.09 row 1 (EP 8, PP 2, VP 24, MBS 2) but dropless",
         "priced as that row less the token drop: +72% (25.09's token-drop twin, row 1, reads -10.6%, the same layout): the measured "
         "throughput differs 1.99x (10,494 / 5,275 tokens/s/GPU) between the two releases' tables for one layout; not a model setting"),
        ("row 5: Qwen3 235B with TP 2 + SP and overlap_moe_expert_parallel_comm", "router on the SP shard PRICED since moedev51")],
    "megatron-bridge-26.04-26.06-dgx-h100-moe": [
        ("row 3: the 26.02 preset (HybridEP/DeepEP, a2a overlap, PP 2 VP 12, EP 8): its 26.02.01 re-run printed 9,058 "
         "tokens/s/GPU against 5,113 here (1.77x; the file's runs_not_held_out)", "a release outlier in the measurement: "
         "+103% here, +14.7% on the 26.02.01 twin (llm-megatron-bridge-26.02.01-26.04-dgx-h100-moe row 2)"),
        ("rows 0, 2: HybridEP on 2 nodes (EP 16); rows 1, 4: TP 2 + SP, alltoall with a2a overlap and delay_wgrad_compute; "
         "FP8 current scaling; no CUDA graphs in the releases' presets", "router on the SP shard PRICED since moedev51 (rows "
         "1, 4); HybridEP priced as the deepep dispatcher; delay_wgrad_compute priced inside the a2a overlap's schedule")],
    "megatron-bridge-26.02.01-26.04-dgx-h100-moe": [
        ("as 26.04 (Qwen3 30B HybridEP / DeepEP, Qwen3 235B TP 2 + SP with a2a overlap), no CUDA graphs",
         "router on the SP shard PRICED since moedev51 (rows 1, 3); the rest as 26.04's rows")],
    "megatron-bridge-26.02-26.04.01-dgx-h100-gpt-oss": [
        ("GPT-OSS 120B, EP 8 PP 4 at TP 1, selective recompute of layernorm + moe_act", "no SP (TP 1): nothing moves")],
    "dgxc-benchmarking-v25.05-deepseek-v3-h100": [
        ("TP 2 + SP, moe_shared_expert_overlap, recompute mla_up_proj", "router on the SP shard PRICED since moedev51")],
    "dgxc-benchmarking-v25.08-deepseek-v3-h100": [
        ("TP 1, DeepEP", "no SP: the router's M unchanged; the term's row for its layer now keyed by the tokens it was "
         "measured at (2048: dgxc 25.05's SP shard) and scaled x2 to this row's 4096 (before: read at 4096 unscaled)")],
    "flagperf-qwen15-moe-a800-megatron": [
        ("A800, EP 1, allgather dispatcher, SequentialMLP, no overlap_grad_reduce", "as the file's notes: not priced")],
    "megatron-bridge-skills-qwen3-30b-h100-bf16": [
        ("TP 1; rows 0-2 CUDA graphs over router / preprocess; HybridEP", "no SP; the profiled row of moe_sync's c")],
    "nemo-25.02-dgx-b200-fp8": [("Mixtral 8x7B on B200, TP 1, EP 8", "no SP: nothing moves")],
}


def rows_now() -> list:
    """[(source, run, RunPrediction)] of the development MoE rows (the judged files' MoE rows with an error)."""
    from simcluster.llm.moe_router_term import judged
    from simcluster.reference.llm import llm_usage, predict_run, published_files, read_published

    out = []
    for file in published_files(None, "llm-"):
        ref = read_published(file, "published-llm-run")
        if not judged(ref.name):
            continue
        usage = llm_usage(ref)
        for i, run in enumerate(ref.runs):
            p = predict_run(ref, usage, i, run)
            if not isinstance(p, str) and p.model.experts and p.error is not None:
                out.append((ref.name, i, p))
    return out


def layer_split(p) -> dict:
    """One MoE layer's forward + backward GPU ms by piece, and moe_sync's host excess (ms, forward + backward)."""
    from simcluster.llm import compiled, moe_sync, ops

    model, par, batch, gpu, fw = p.model, p.par, p.batch, p.gpu, p.framework
    f, b = compiled.layer_ops(model, par, batch, fw)
    pieces = {"router": ("router",), "permute": ("permute",), "experts": ("expert_", "swiglu"), "shared": ("shared_",)}
    out = dict.fromkeys(list(pieces) + ["rest"], 0.0)
    for o in f + b:
        name = o.name.removeprefix("recompute.")
        key = next((k for k, prefixes in pieces.items() if name.startswith(prefixes)), "rest")
        out[key] += 1e3 * ops.op_time_s(gpu, o, batch.precision)
    host = 0.0
    if moe_sync.applies(fw, par):
        ep = 0.0   # the segment's EP share left out: a lower bound on the host excess, printed for scale only
        host = 1e3 * sum(moe_sync.sync_host_s(gpu, f, b, batch.precision, ep, ep, max(par.layer_split(model.layers)),
                                             fw.moe_sync_kernel_s, fw))
    out["host"] = host
    return out


def main() -> int:
    from simcluster.heldout.registration import before_moedev51

    with before_moedev51():
        then = {(s, i): 100 * p.error for s, i, p in rows_now()}
    now = rows_now()
    print("development MoE rows (13 judged files); error % before moedev51 -> now; breakdown: shares of the predicted step;")
    print("layer ms: one MoE layer's forward + backward GPU time by piece (rest = attention block, norms, casts) and the")
    print("host excess after the dispatcher sync (moe_sync, without the EP share: a lower bound; 0 where it does not apply)")
    by_source: dict = {}
    for s, i, p in now:
        par, r = p.par, p.result
        st = r.step_time_s
        bd = r.breakdown
        share = " ".join(f"{k.replace('exposed_', '').replace('_comm', '')}={v / st:.2f}" for k, v in bd.items() if v > 0.005 * st)
        ls = layer_split(p)
        lay = " ".join(f"{k} {v:.2f}" for k, v in ls.items() if v > 0)
        flags = [n for n, on in (("sp", par.sequence_parallel), ("a2a", par.moe_a2a_overlap), ("shov", par.moe_shared_expert_overlap),
                                 ("pad", par.moe_pad_to_capacity)) if on]
        modules = f"({'+'.join(par.recompute_modules)})" if par.recompute_modules else ""
        print(f"{s[4:44]:40s} {i:2d} {p.gpu.name[:4]} {p.batch.precision:4s} t{par.tp} etp{par.etp} ep{par.ep} p{par.pp} "
              f"v{par.virtual_stages} c{par.cp} {par.moe_dispatcher} {'+'.join(flags) or '-'} {par.recompute}{modules}"
              f"  {then[(s, i)]:+6.1f} -> {100 * p.error:+6.1f}%")
        print(f"    step {st:.3f} s: {share} | layer ms: {lay}")
        by_source.setdefault(s, []).append((then[(s, i)], 100 * p.error))
    print()
    print("per source: rows, mean |error| before -> now, signed range now; then what the recipe set (-> how the model prices it)")
    for s, errs in by_source.items():
        a = sum(abs(x) for x, _ in errs) / len(errs)
        b = sum(abs(y) for _, y in errs) / len(errs)
        print(f"{s[4:]} ({len(errs)} rows): {a:.1f} -> {b:.1f}%, now {min(y for _, y in errs):+.1f}..{max(y for _, y in errs):+.1f}%")
        for ran, priced in SOURCE_FACTS.get(s[4:], []):
            print(f"  - {ran}\n      -> {priced}")
    allthen = [x for v in by_source.values() for x, _ in v]
    allnow = [y for v in by_source.values() for _, y in v]
    mean = lambda v: sum(map(abs, v)) / len(v)   # noqa: E731
    print(f"row-weighted ({len(allnow)} rows): {mean(allthen):.2f} -> {mean(allnow):.2f}%; within 10%: "
          f"{sum(abs(x) <= 10 for x in allthen)} -> {sum(abs(x) <= 10 for x in allnow)}")
    once_then = sum(mean([x for x, _ in v]) for v in by_source.values()) / len(by_source)
    once_now = sum(mean([y for _, y in v]) for v in by_source.values()) / len(by_source)
    print(f"each source once ({len(by_source)} files): {once_then:.2f} -> {once_now:.2f}%")
    return 0


def steps() -> int:
    """--steps (mendC51, cold review C51 items 3 and 8): moedev51's changes added in turn, one switch each
    (heldout/registration.moedev51_facts), then session 52 moe52's (registration.moe52_facts) and moonprice52's
    (registration.moonprice52_facts: Moonlight's unfused router priced from its measurement): the development rows'
    mean |error| after each, and one Grok-1 layer's permutation ms (v25.02 row 2: TP 4, expert TP 4, EP 8) before and
    after the expert-TP permute fact; then the Moonlight rows one by one before / after moonprice52."""
    from simcluster.heldout.registration import before_moedev51, moe52_facts, moedev51_facts, moonprice52_facts

    def read(rows) -> dict:
        return {(s, i): (100 * p.error, p) for s, i, p in rows}

    with before_moedev51(), moe52_facts(False), moonprice52_facts(False):
        base = read(rows_now())
    grok = ("llm-dgxc-benchmarking-v25.02-grok1-h100", 2)
    turns = [("before moedev51 (the table keyed as session 50, the three facts off)", None)]
    turns += [(label, facts) for label, facts in (
        ("the table re-keyed by the tokens measured, the three facts off", (False, False, False)),
        ("+ 1 the router on the rank's sequence shard", (True, False, False)),
        ("+ 2 no dispatcher sync under capacity padding (Megatron-Core >= 0.11 files only)", (True, True, False)),
        ("+ 3 the expert-TP permute / unpermute on the rank's own rows (= session 51's end)", (True, True, True)),
        ("+ 4 (session 52 moe52) a NIC's PCIe share over the node's wired GPUs, not the EP group's ranks a node",
         (True, True, True, True)),
        ("+ 5 (session 52 moonprice52) Moonlight's unfused router (moe_router_fusion false) priced from moonrouter52 (= now)",
         (True, True, True, True, True)))]
    print("moedev51's (session 51), moe52's and moonprice52's (session 52) changes added in turn over the 70 development MoE")
    print("rows (mean |error|, row-weighted and each file once; within 10%); Grok-1 = the two dgxc files' 36 rows, 25.09 =")
    print("Megatron-Bridge 25.09's 3, Moonlight = the skills file's 6; permute ms = one layer's forward + backward")
    print("permutation ops of v25.02 row 2")
    mean = lambda v: sum(map(abs, v)) / len(v)   # noqa: E731
    before: tuple = ()   # the rows and Moonlight's layer splits of the turn before moonprice52's
    for label, facts in turns:
        if facts is None:
            rows = base
        else:
            with moedev51_facts(*facts[:3]), moe52_facts(len(facts) > 3), moonprice52_facts(len(facts) > 4):
                rows = read(rows_now())
                perm = layer_split(rows[grok][1])["permute"]
                split = {k: layer_split(p) for k, (_, p) in rows.items() if "moonlight" in k[0]}
            before = before if len(facts) > 4 else (rows, split)
        if facts is None:
            with before_moedev51(), moe52_facts(False), moonprice52_facts(False):
                perm = layer_split(base[grok][1])["permute"]
        errs = {k: e for k, (e, _) in rows.items()}
        files: dict = {}
        for (src, _), e in errs.items():
            files.setdefault(src, []).append(e)
        once = sum(mean(v) for v in files.values()) / len(files)
        g = [e for (src, _), e in errs.items() if "grok1" in src]
        b = [e for (src, _), e in errs.items() if "25.09" in src]
        m = [e for (src, _), e in errs.items() if "moonlight" in src]
        print(f"{label}\n    {len(errs)} rows {mean(errs.values()):.2f}%, each file once {once:.2f}%, "
              f"{sum(abs(e) <= 10 for e in errs.values())} within; Grok-1 {mean(g):.2f}%, 25.09 {mean(b):.2f}%, "
              f"Moonlight {mean(m):.2f}%; permute {perm:.2f} ms")
    print("Moonlight rows, + 4 -> + 5 (moonprice52): error %, step s; one MoE layer's router GPU ms (forward + backward) and host")
    print("excess after the dispatcher sync ms (layer_split)")
    then, split_then = before
    for k in sorted(split):
        e0, p0 = then[k]
        e1, p1 = rows[k]
        print(f"    row {k[1]}: {e0:+6.1f} -> {e1:+6.1f}%  step {p0.result.step_time_s:.4f} -> {p1.result.step_time_s:.4f} s  "
              f"router {split_then[k]['router']:.3f} -> {split[k]['router']:.3f} ms  host {split_then[k]['host']:.3f} -> "
              f"{split[k]['host']:.3f} ms")
    return 0


if __name__ == "__main__":
    import study_args  # an unknown argument refused before the study runs
    raise SystemExit(steps() if study_args.check(options=("--steps",)) == ["--steps"] else main())
