"""Sensitivity only, not the model (issue 44, session 36 moeprof): how the H100 MoE rows under moe_a2a_overlap move if the
dispatcher's SMs were held beside compute for the whole overlapped layer pair, as DeepSeek's DualPipe profile shows
(studies/moe_deepseek_profile.py: DeepEP's 20 blocks resident for 89% of the compute time), instead of for the EP time
alone (layer_work.exposed_ep: EP_COMM_SMS / sm_count x ep). The whole-pair form charges compute x S / (N - S), every compute
class taken as compute-bound: an upper bound. Megatron's overlap keeps its kernels resident for less (the skills' Nsight
table: 10.83 s of HybridEP kernels in a ~21 s step), so the truth for the rows lies between the two columns.
    python studies/moe_sm_share.py
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import moe_rows  # noqa: E402

from simcluster.llm import layer_work, moe_compute  # noqa: E402

MODEL_EXPOSED_EP = layer_work.exposed_ep


def whole_pair(par, lc, gpu, fw, c):
    """layer_work.exposed_ep with the SM share over the pair's whole compute (A2A overlap only)."""
    ep_f, ep_b = lc.ep_fwd_s, lc.ep_bwd_s
    if not (par.moe_a2a_overlap and ep_f + ep_b > 0):
        return MODEL_EXPOSED_EP(par, lc, gpu, fw, c)
    s = layer_work.EP_COMM_SMS
    exposed = max(moe_compute.a2a_pair_s(c, ep_f, ep_b) - c.total, s / (gpu.sm_count - s) * c.total)
    return exposed * ep_f / (ep_f + ep_b), exposed * ep_b / (ep_f + ep_b)


def main() -> None:
    rows = [(stem, i) for stem, runs in moe_rows.MOE_ROWS + moe_rows.NEW_ROWS for i in runs]
    base = {key: moe_rows.predict_row(*key) for key in rows}
    layer_work.exposed_ep = whole_pair
    try:
        print(f"{'row (A2A overlap only)':44s} {'model':>8s} {'whole pair':>11s}")
        for key in rows:
            if base[key].par.moe_a2a_overlap:
                print(f"{key[0][4:44]:40s} {key[1]:3d} {100 * base[key].error:+7.1f}% {100 * moe_rows.predict_row(*key).error:+10.1f}%")
    finally:
        layer_work.exposed_ep = MODEL_EXPOSED_EP


if __name__ == "__main__":
    import study_args  # an unknown argument refused before the study runs
    study_args.check()
    main()
