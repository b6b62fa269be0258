"""Registration of the second Megatron-Core MoE lab set (calibration/h200x4-megatron-moe2-2026-11-28): the model's
predictions of configurations it has not seen, written before the set is run (llm-findings.md, session 30).

    python studies/megatron_moe/register.py > calibration/h200x4-megatron-moe2-2026-11-28/registered.yaml
    python studies/megatron_moe/register.py --flags NAME     # the runner's flags of one configuration (device_run.sh)

The same step as studies/megatron_moe/compare.py prices (framework megatron-local-spec, 4 x H200, one micro-batch's
forward + backward); the set is read with `python studies/megatron_moe/compare.py calibration/h200x4-megatron-moe2-2026-11-28`.
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


def flags(m: dict) -> str:
    return " ".join(f"--{k.replace('_', '-')} {v}" for k, v in m.items())


def main(argv: list[str]) -> int:
    if argv[:1] == ["--flags"]:
        print(flags(SET2[argv[1]]))
        return 0
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from compare import predicted_s  # the model (simcluster) only here: --flags runs on the device without its dependencies

    from simcluster.llm.framework import MEGATRON_UNFUSED

    commit = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    print(f"# predictions of the model at {commit} (studies/megatron_moe/register.py), written before the runs; "
          "predicted_step_s is the registered prediction")
    print("set: h200x4-megatron-moe2-2026-11-28\nframework: megatron-local-spec\ngpu: H200 x 4 (NVLink), one micro-batch forward + backward")
    print("runs:")
    for name, m in SET2.items():
        t, parts = predicted_s(m, 4, "H200")
        print(f"  {name}:\n    flags: \"{flags(m)}\"\n    predicted_step_s: {t:.5f}")
        print("    parts_s: {" + ", ".join(f"{k}: {v:.5f}" for k, v in sorted(parts.items())) + "}")
        print(f"    before_s: {predicted_s(m, 4, 'H200', MEGATRON_UNFUSED)[0]:.5f}   # the model before session 30 (megatron-unfused-attention)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
