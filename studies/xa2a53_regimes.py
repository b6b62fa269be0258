"""Session 53, xa2a53: the p5 EFA alltoall miss split into a fixed time per call and a rate (development rows only).

The HyperPod p5 file's alltoall rows (calibration/published/nccl-aws-p5-hyperpod-x2-x32-gpucomm.yaml, 2-32 nodes,
64 MiB-2 GiB; development for the held-out-systems check since session 43) against the shipped model
(`validate --published nccl`): per node count, a least-squares line T = a + S_remote / r_meas through the measured
times (S_remote = S (n - G) / n, a GPU's bytes that leave its node), set beside the model's per-GPU network rate r_model
(its busbw at 2 GiB x (n - G) / (n - 1)). a is the intercept of a line through 64 MiB-2 GiB extrapolated to 0 B, printed
with its standard error (numpy polyfit's covariance), the line's miss at 64 MiB (fit - measured, % of measured), a over
the measured 64 MiB time, the model's whole miss there ((measured - model) / measured) and a from 64-512 MiB alone
(mendB53, cold review B53 items 3-4: two fitted numbers per node count on 6 development points, not a mechanism).
Findings only (docs/models/fabric-findings.md "Session 53: xa2a53"): nothing here is a model parameter. Run: PYTHONPATH=. python studies/xa2a53_regimes.py
"""

from __future__ import annotations

import numpy as np

from simcluster.reference.nccl import validate_published_nccl

FILE = "nccl-aws-p5-hyperpod-x2-x32-gpucomm"
G = 8                      # GPUs per node (ml.p5.48xlarge)
CHUNK = 512 * 1024         # NCCL_P2P_NET_CHUNKSIZE the run set (its env; aws-ofi-nccl's p5 platform default too)
P2P_CHANNELS = 16          # pow2Up of the model's collective channels on this machine (graphs()['coll_channels'] = 16)


def channels_per_peer(ranks: int) -> int:
    """NCCL 2.27.7 (the run's version) paths.cc ncclTopoGetNchannels for a net peer: 2, halved while 2 x ranks > 4 x p2p
    channels, at least the GPU's NICs by bandwidth (1 here); pow2Up. (2.30.4 differs: ceil(50 / 14) = 4, halved while
    channels x ceil(ranks / 8) > p2p channels.)"""
    c = 2
    while c * ranks > 4 * P2P_CHANNELS and c > 1:
        c //= 2
    return max(1, c)


def main() -> None:
    rows = [r for r in validate_published_nccl().rows if r.source == FILE and "alltoall" in r.configuration]
    by_nodes: dict[int, list] = {}
    for r in rows:
        nodes = int(r.configuration.split(", ")[1].split(" x ")[0])
        size = {"64MiB": 64, "128MiB": 128, "256MiB": 256, "512MiB": 512, "1GiB": 1024, "2GiB": 2048}[r.configuration.split()[1].rstrip(",")]
        by_nodes.setdefault(nodes, []).append((size * 2**20, r.measured, r.predicted))
    print("nodes ranks | a +- se (us) | a per remote peer (us) | r_meas / r_model | r_model GB/s | "
          "64 MiB: time meas / model (us), channels a peer, bytes a peer-channel | 64 MiB: line's miss, a / meas, "
          "model's miss | a from 64-512 MiB (us)")
    for nodes, pts in sorted(by_nodes.items()):
        n = nodes * G
        s = np.array([p[0] for p in pts], float)
        remote = s * (n - G) / n
        t_meas = s * (n - 1) / n / np.array([p[1] for p in pts])
        t_model = s * (n - 1) / n / np.array([p[2] for p in pts])
        (b, a), cov = np.polyfit(remote, t_meas, 1, cov=True)
        a_short = np.polyfit(remote[s <= 512 * 2**20], t_meas[s <= 512 * 2**20], 1)[1]
        at64 = (a + b * remote[0] - t_meas[0]) / t_meas[0], a / t_meas[0], (t_meas[0] - t_model[0]) / t_meas[0]
        r_model = pts[-1][2] * (n - G) / (n - 1)
        per_peer_channel = 64 * 2**20 / n / channels_per_peer(n)
        print(f"{nodes:5d} {n:5d} | {f'{a * 1e6:.0f} +- {cov[1, 1] ** 0.5 * 1e6:.0f}':>12s} | {a * 1e6 / (n - G):22.1f} | "
              f"{1 / b / r_model:16.2f} | {r_model / 1e9:12.1f} | "
              f"{t_meas[0] * 1e6:.0f} / {t_model[0] * 1e6:.0f}, {channels_per_peer(n)}, {per_peer_channel / 1024:.0f} KiB "
              f"({per_peer_channel / CHUNK:.2f} chunks) | {at64[0]:+.1%}, {at64[1]:.0%}, {at64[2]:.0%} | {a_short * 1e6:.0f}")


if __name__ == "__main__":
    import study_args  # an unknown argument refused before the study runs
    study_args.check()
    main()
