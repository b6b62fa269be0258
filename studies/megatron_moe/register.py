"""Registration of the Megatron-Core MoE lab sets: the model's predictions of configurations it has not seen, written
before the set is run (llm-findings.md, session 30 and issue 44's moe3).

    python studies/megatron_moe/register.py > calibration/h200x4-megatron-moe2-2026-11-28/registered.yaml
    python studies/megatron_moe/register.py --set moe3 > calibration/h200x2-megatron-moe3-2026-11-28/registered.yaml
    python studies/megatron_moe/register.py --set moe4 > calibration/h200x1-megatron-moe4-2026-11-28/registered.yaml
    python studies/megatron_moe/register.py --set moe5 > calibration/h200x2-megatron-moe5-2026-11-30/registered.yaml
    python studies/megatron_moe/register.py --set moe6 > calibration/h200x2-megatron-moe6-2026-11-30/registered.yaml
    (moelab49, moelab49b: validation/moelab49.py / moelab49b.py --register; this file gives their configurations, flags and
    arm to device_run.sh)
    python studies/megatron_moe/register.py --flags NAME [--arm A|B]   # the runner's flags (device_run.sh)
    python studies/megatron_moe/register.py --env B        # an arm's environment, NAME=VALUE words (device_run.sh)
    python studies/megatron_moe/register.py --names moe3   # a set's configurations in run order
    python studies/megatron_moe/register.py --arms moe5    # the arms a set runs (moe5: B only)

The same step as studies/megatron_moe/compare.py prices (framework megatron-local-spec, N x H200, one micro-batch's
forward + backward); a set is read with `python studies/megatron_moe/compare.py FOLDER`. The moe3 set runs every
configuration twice (ARMS): A as moe2 was launched, B pinned with eager CUDA module loading and a longer warm-up; the
model knows neither, so it predicts one step per configuration. From moe6 on each run also registers its GPU-only part
(gpu_only_s: the same model with the MoE layer's host issue priced at 0, framework.MoeHost off: its compute and exposed EP
time), so that a miss splits into GPU and host against the traces' GPU busy time.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
COMMON = dict(layers=4, hidden=2048, head_dim=128, vocab=32768, seq=4096, micro_batch=1)
# not run before: a Mixtral-like layer at EP 2 (4 local experts of 5632), a Qwen3-like one with half the experts at EP 2
# (32 local experts), a DeepSeek-like fine-grained layer at EP 4 (64 experts of 1408, top-6: 16 local), and a small
# top-4 layer at EP 4 (32 experts: 8 local)
SET2 = {
    "mixtral-like-ep2": dict(COMMON, heads=16, kv_heads=8, experts=8, top_k=2, expert_ffn=5632, ep=2),
    "qwen3-like-e64-ep2": dict(COMMON, heads=32, kv_heads=4, experts=64, top_k=8, expert_ffn=768, ep=2),
    "deepseek-like-e64-top6-ep4": dict(COMMON, heads=16, kv_heads=16, experts=64, top_k=6, expert_ffn=1408, ep=4),
    "small-e32-top4-ep4": dict(COMMON, heads=16, kv_heads=4, experts=32, top_k=4, expert_ffn=1024, ep=4),
}


# moe3, 2 x H200, EP 2 (no data parallel across EP groups), not run before: the local experts per rank E_l = 4, 8, 16,
# 32, with top-k 1 / 4 / 6 / 8 and the expert width from 8192 down to 512 (the late rank's host share grows with E_l)
SET3 = {
    "switch-e8-top1-ffn8192-ep2": dict(COMMON, heads=16, kv_heads=8, experts=8, top_k=1, expert_ffn=8192, ep=2),
    "e16-top4-ffn2048-ep2": dict(COMMON, heads=16, kv_heads=4, experts=16, top_k=4, expert_ffn=2048, ep=2),
    "e32-top6-ffn1408-ep2": dict(COMMON, heads=16, kv_heads=16, experts=32, top_k=6, expert_ffn=1408, ep=2),
    "e64-top8-ffn512-ep2": dict(COMMON, heads=32, kv_heads=4, experts=64, top_k=8, expert_ffn=512, ep=2),
}
# moe4, 1 x H200 (only one GPU was lent when it was registered), moe3's configurations with all their experts on the one
# GPU (EP 1): no EP collective and no rank to wait for, so the set tests the local-spec host model's own constants
# (framework.MoeHost) apart from the ranks' skew
SET4 = {name.replace("-ep2", "-ep1"): dict(m, ep=1) for name, m in SET3.items()}
# moe5, 2 x H200, EP 2, not run before (issue 44, session 40): layers whose GPU time the attention core's torch softmax
# dominates (2-4 local experts, 16-32 heads, one at micro-batch 2), registered after the local spec's softmax and SwiGLU
# were priced kernel by kernel (llm/torch_kernels.py): they test that pricing, with the host's share small
SET5 = {
    "e4-top1-ffn11008-h32-ep2": dict(COMMON, heads=32, kv_heads=8, experts=4, top_k=1, expert_ffn=11008, ep=2),
    "e8-top2-ffn4096-h32-ep2": dict(COMMON, heads=32, kv_heads=8, experts=8, top_k=2, expert_ffn=4096, ep=2),
    "e8-top2-ffn2816-h24-ep2": dict(COMMON, heads=24, kv_heads=8, experts=8, top_k=2, expert_ffn=2816, ep=2),
    "e8-top2-ffn2048-mb2-ep2": dict(COMMON, micro_batch=2, heads=16, kv_heads=8, experts=8, top_k=2, expert_ffn=2048, ep=2),
}
# moe6, 2 x H200 (issue 44, session 41): today's model (the local spec's GPU side kernel by kernel, session 41 moegpu) on
# two layers new to calibration/ -- 32 heads at micro-batch 2 (the router's top-k at 8192 rows, its per-call times read at
# 4096) and 16 experts at EP 1, the two ranks data parallel with no gradient reduction (the runner runs none): all 16
# experts local, the per-call expert GEMMs and the host's issue of them -- then moe5's four again (repeats of a seen
# set: today's model's error on its shapes on a new lease). The new two first: the budget guard cuts the last run first.
NEW6 = {
    "e8-top2-ffn2048-h32-mb2-ep2": dict(COMMON, micro_batch=2, heads=32, kv_heads=8, experts=8, top_k=2, expert_ffn=2048, ep=2),
    "e16-top4-ffn1408-ep1": dict(COMMON, heads=16, kv_heads=8, experts=16, top_k=4, expert_ffn=1408, ep=1),
}
SET6 = {**NEW6, **SET5}
# moelab49, 2 x H200 (issue 44, session 49): an independent check of the MoE router / permutation term (llm/moe_router_term,
# measured in calibration/h200x1-moerouter-2026-12-01 on the published rows' layers) on layers no set has run, chosen so that
# the term moves the step by 10-28% (validation/moelab49.py registers each with the term off and on): many routed rows
# (top-k 4-8, micro-batch 2) and a wide hidden (3072, 4096: `hid`), one router-heavy (32 experts, top-4, hidden 2048),
# one permutation-heavy (8 experts, top-6, hidden 4096), one at EP 1 (the two ranks data parallel, no gradient reduction)
SET49 = {
    "e32-top8-ffn1024-hid4096-mb2-ep2": dict(COMMON, hidden=4096, micro_batch=2, heads=16, kv_heads=8, experts=32, top_k=8, expert_ffn=1024, ep=2),
    "e32-top4-ffn1024-mb2-ep2": dict(COMMON, micro_batch=2, heads=16, kv_heads=4, experts=32, top_k=4, expert_ffn=1024, ep=2),
    "e8-top6-ffn1024-hid4096-ep2": dict(COMMON, hidden=4096, heads=16, kv_heads=8, experts=8, top_k=6, expert_ffn=1024, ep=2),
    "e16-top8-ffn2048-hid3072-mb2-ep1": dict(COMMON, hidden=3072, micro_batch=2, heads=16, kv_heads=8, experts=16, top_k=8, expert_ffn=2048, ep=1),
}
# moelab49b, 2 x H200 (issue 44, session 49): is the term's ROUTER piece real? Four more layers no set has run, chosen where
# the whole term (ON) and its permutation piece alone (P) differ most (validation/moelab49b.py registers OFF, ON and P):
# router-heavy ones (32 experts at top-2 / top-3, micro-batch 2: many router rows x experts, few routed rows), one at EP 1
# with hidden 4096, and a wide-expert top-4 layer (16 experts of 2816); heads, kv-heads and widths new beside moelab49's
SET49B = {
    "e32-top2-ffn1024-kv8-mb2-ep2": dict(COMMON, micro_batch=2, heads=16, kv_heads=8, experts=32, top_k=2, expert_ffn=1024, ep=2),
    "e32-top3-ffn1536-hid3072-mb2-ep2": dict(COMMON, hidden=3072, micro_batch=2, heads=24, kv_heads=8, experts=32, top_k=3, expert_ffn=1536, ep=2),
    "e16-top4-ffn2816-mb2-ep2": dict(COMMON, micro_batch=2, heads=16, kv_heads=4, experts=16, top_k=4, expert_ffn=2816, ep=2),
    "e32-top2-ffn1536-hid4096-mb2-ep1": dict(COMMON, hidden=4096, micro_batch=2, heads=32, kv_heads=8, experts=32, top_k=2, expert_ffn=1536, ep=1),
}
# (configurations, GPUs, folder under calibration/, how the GPUs are joined)
SETS = {
    "moe2": (SET2, 4, "h200x4-megatron-moe2-2026-11-28", "NVLink"),
    "moe3": (SET3, 2, "h200x2-megatron-moe3-2026-11-28", "NVLink, NCCL_NVLS_ENABLE=0"),
    "moe4": (SET4, 1, "h200x1-megatron-moe4-2026-11-28", "one GPU, no EP collective"),
    "moe5": (SET5, 2, "h200x2-megatron-moe5-2026-11-30", "NVLink, NCCL_NVLS_ENABLE=0"),
    "moe6": (SET6, 2, "h200x2-megatron-moe6-2026-11-30", "NVLink, NCCL_NVLS_ENABLE=0"),
    "moelab49": (SET49, 2, "h200x2-moelab49-2026-12-01", "NVLink, NCCL_NVLS_ENABLE=0"),   # registered by validation/moelab49.py
    "moelab49b": (SET49B, 2, "h200x2-moelab49b-2026-12-01", "NVLink, NCCL_NVLS_ENABLE=0"),   # validation/moelab49b.py
}
# the arms each set runs (moe5 on: moe3's pinned launch only)
SET_ARMS = {"moe3": "AB", "moe4": "AB", "moe5": "B", "moe6": "B", "moelab49": "B", "moelab49b": "B"}
# moe3's two launches of each configuration (device.py flags and environment); A is moe2's launch
ARMS = {
    "A": dict(what="as before: torch.distributed.run, no pinning, lazy CUDA module loading (the default), warm-up 3, 8 timed steps",
              flags="--warmup 3 --steps 8 --profile 1", env={}),
    "B": dict(what="pinned: each rank's process bound to its own physical cores on its GPU's NUMA node before torch is "
                   "imported (device.py --pin), CUDA_MODULE_LOADING=EAGER, warm-up 10, 8 timed steps",
              flags="--pin --warmup 10 --steps 8 --profile 1", env={"CUDA_MODULE_LOADING": "EAGER"}),
}


def configuration(name: str) -> dict:
    for configs, *_ in SETS.values():
        if name in configs:
            return configs[name]
    refuse(f"no configuration {name!r}; known: {', '.join(n for c, *_ in SETS.values() for n in c)}")


def refuse(message: str) -> None:
    """A bad command line: one line on stderr, exit 2."""
    print(f"register.py: {message}", file=sys.stderr)
    raise SystemExit(2)


def known(what: str, name: str | None, table) -> str:
    """`name` when `table` has it, else the one-line refusal naming `what` and the names expected."""
    if name not in table:
        refuse(f"unknown {what} {name!r}; expected one of {', '.join(sorted(table))}")
    return name


def value(argv: list[str], option: str, default: str | None = None) -> str | None:
    """The word after `option` in argv (`default` when the option is absent); refused when the option ends the line."""
    if option not in argv:
        return default
    i = argv.index(option) + 1
    if i >= len(argv):
        refuse(f"{option} needs a value")
    return argv[i]


def gpu_only_s(m: dict, gpus: int) -> float:
    """The registered step's GPU-only part: the model with the host's issue of the MoE layer priced at 0
    (framework.MoeHost off; the local spec has no other host cost), i.e. its compute and exposed EP time."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from dataclasses import replace

    from compare import predicted_s

    from simcluster.llm.framework import MEGATRON_LOCAL

    return predicted_s(m, gpus, "H200", replace(MEGATRON_LOCAL, moe_host=None))[0]


def flags(m: dict) -> str:
    return " ".join(f"--{k.replace('_', '-')} {v}" for k, v in m.items())


def main(argv: list[str]) -> int:
    if argv[:1] == ["--flags"]:
        arm = value(argv, "--arm")
        arm = known("arm", arm, ARMS) if arm is not None else None
        print(flags(configuration(value(argv, "--flags"))) + (f" {ARMS[arm]['flags']}" if arm else ""))
        return 0
    if argv[:1] == ["--env"]:
        print(" ".join(f"{k}={v}" for k, v in ARMS[known("arm", value(argv, "--env"), ARMS)]["env"].items()))
        return 0
    if argv[:1] == ["--names"]:
        print(" ".join(SETS[known("set", value(argv, "--names"), SETS)][0]))
        return 0
    if argv[:1] == ["--arms"]:
        print(" ".join(SET_ARMS.get(known("set", value(argv, "--arms"), SETS), "A")))
        return 0
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from dataclasses import replace

    from compare import predicted_s  # the model (simcluster) only here: --flags runs on the device without its dependencies

    from simcluster.llm.framework import MEGATRON_LOCAL, MEGATRON_UNFUSED

    set_name = known("set", value(argv, "--set", "moe2"), SETS)
    if set_name in ("moelab49", "moelab49b"):   # several columns (the router term off, on, ...) and their own rules
        raise SystemExit(f"register.py: {set_name} is registered by validation/{set_name}.py --register")
    configs, gpus, folder, link = SETS[set_name]
    commit = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    print(f"# predictions of the model at {commit} (studies/megatron_moe/register.py), written before the runs; "
          "predicted_step_s is the registered prediction")
    print(f"set: {folder}\nframework: megatron-local-spec\ngpu: H200 x {gpus} ({link}), one micro-batch forward + backward")
    if set_name in SET_ARMS:
        print("arms:   # each configuration is run in every arm; the model's prediction is the same for all (it knows no pinning)")
        for arm, a in ((k, ARMS[k]) for k in SET_ARMS[set_name]):
            env = " ".join(f"{k}={v}" for k, v in a["env"].items())
            print(f"  {arm}:\n    what: \"{a['what']}\"\n    device_flags: \"{a['flags']}\"\n    env: \"{env}\"")
    print("runs:")
    for name, m in configs.items():
        t, parts = predicted_s(m, gpus, "H200")
        print(f"  {name}:\n    flags: \"{flags(m)}\"\n    predicted_step_s: {t:.5f}")
        print("    parts_s: {" + ", ".join(f"{k}: {v:.5f}" for k, v in sorted(parts.items())) + "}")
        if set_name == "moe6":
            print(f"    gpu_only_s: {gpu_only_s(m, gpus):.5f}   # the same model with the MoE host issue at 0 (reported beside "
                  "the traces' GPU busy, not judged)")
            print(f"    seen: {'false   # new to calibration/' if name in NEW6 else 'true   # a repeat of moe5 (2026-11-30): shapes seen, new lease'}")
        if set_name == "moe2":
            print(f"    before_s: {predicted_s(m, gpus, 'H200', MEGATRON_UNFUSED)[0]:.5f}   # the model before session 30 (megatron-unfused-attention)")
        if set_name == "moe5":   # the local spec as priced before session 40: fused-rate softmax bytes and SwiGLU, fused loss
            before = replace(MEGATRON_LOCAL, torch_chains=False, loss_fwd_bytes=6.0, loss_bwd_bytes=12.0)
            print(f"    before_s: {predicted_s(m, gpus, 'H200', before)[0]:.5f}   # the model before session 40 (torch_chains off)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
