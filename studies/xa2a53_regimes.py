"""Session 53, xa2a53: the p5 EFA alltoall miss split into a fixed time per call and a rate (development rows only).

The HyperPod p5 file's alltoall rows (calibration/published/nccl-aws-p5-hyperpod-x2-x32-gpucomm.yaml, 2-32 nodes,
64 MiB-2 GiB; development for the held-out-systems check since session 43) against the shipped model
(`validate --published nccl`): per node count, a least-squares line T = a + S_remote / r_meas through the measured
times (S_remote = S (n - G) / n, a GPU's bytes that leave its node), set beside the model's per-GPU network rate r_model
(its busbw at 2 GiB x (n - G) / (n - 1)). Findings only (docs/models/fabric-findings.md "Session 53: xa2a53"): nothing
here is a model parameter. Run: PYTHONPATH=. python studies/xa2a53_regimes.py
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
    print("nodes ranks | fixed a (us) | a per remote peer (us) | r_meas / r_model | r_model GB/s | "
          "64 MiB: time meas / model (us), channels a peer, bytes a peer-channel")
    for nodes, pts in sorted(by_nodes.items()):
        n = nodes * G
        s = np.array([p[0] for p in pts], float)
        remote = s * (n - G) / n
        t_meas = s * (n - 1) / n / np.array([p[1] for p in pts])
        t_model = s * (n - 1) / n / np.array([p[2] for p in pts])
        b, a = np.polyfit(remote, t_meas, 1)
        r_model = pts[-1][2] * (n - G) / (n - 1)
        per_peer_channel = 64 * 2**20 / n / channels_per_peer(n)
        print(f"{nodes:5d} {n:5d} | {a * 1e6:12.0f} | {a * 1e6 / (n - G):22.1f} | {1 / b / r_model:16.2f} | {r_model / 1e9:12.1f} | "
              f"{t_meas[0] * 1e6:.0f} / {t_model[0] * 1e6:.0f}, {channels_per_peer(n)}, {per_peer_channel / 1024:.0f} KiB "
              f"({per_peer_channel / CHUNK:.2f} chunks)")


if __name__ == "__main__":
    import study_args  # an unknown argument refused before the study runs
    study_args.check()
    main()
