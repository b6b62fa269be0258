"""NCCL 2.28.3's constant tables (src/graph/tuning.cc, search.cc, topo.h; facts, not code) and the architecture
a GPU is indexed by in them. Read by the topology search (nccl_search.py) and the tuner (nccl_tuner.py)."""

from __future__ import annotations

from simcluster.errors import SimclusterError

ALGORITHMS = ("Tree", "Ring", "CollNetDirect", "CollNetChain", "NVLS", "NVLSTree", "PAT")
PROTOCOLS = ("LL", "LL128", "Simple")
TUNED_OPS = ("broadcast", "reduce", "all_gather", "reduce_scatter", "all_reduce")
ARCHS = ("volta", "ampere", "hopper", "blackwell")

# baseLatencies[algorithm][protocol], us
BASE_LAT_US = {"Tree": (6.8, 14.0, 8.4), "Ring": (6.6, 14.0, 8.4), "CollNetDirect": (0, 0, 0),
               "CollNetChain": (0, 0, 0), "NVLS": (0, 0, 0), "NVLSTree": (0, 0, 0), "PAT": (8.0, 8.0, 8.0)}
# hwLatencies[link][algorithm][protocol], us
HW_LAT_US = {
    "nvlink": {"Tree": (.6, 1.25, 4.0), "Ring": (.6, 1.9, 3.4), "CollNetDirect": (0, 0, 3.7), "CollNetChain": (0, 0, 2.8),
               "NVLS": (0, 0, 25), "NVLSTree": (0, 0, 25), "PAT": (0, 0, 4.0)},
    "pci": {"Tree": (1.0, 1.9, 4.0), "Ring": (1.0, 2.5, 5.7), "CollNetDirect": (0, 0, 3.7), "CollNetChain": (0, 0, 2.8),
            "NVLS": (0, 0, 0), "NVLSTree": (0, 0, 0), "PAT": (0, 0, 4.0)},
    "net": {"Tree": (5.0, 8.5, 14), "Ring": (2.7, 4.0, 14.0), "CollNetDirect": (0, 0, 31), "CollNetChain": (0, 0, 30),
            "NVLS": (0, 0, 18), "NVLSTree": (0, 0, 14), "PAT": (0, 0, 14)},
}
# [arch or CPU row][nodes index: 1 node, 2 nodes, more], GB/s. LL: one node -> the GPU's row; more -> the CPU's
LL_MAX_BW = {"volta": (39.0, 39.0, 20.4), "ampere": (87.7, 22.5, 19.0), "hopper": (141.0, 45.0, 35.0),
             "blackwell": (282.0, 90.0, 70.0)}
# across nodes NCCL takes the AMD row for an AMD (or mixed) host, the Intel row for every other (ARM included)
LL_MAX_BW_CPU = {"intel": (39.0, 39.0, 20.4), "amd": (87.7, 22.5, 19.0), "arm": (39.0, 39.0, 20.4)}
PER_CH_RING_LL128 = {"volta": (20.0,) * 3, "ampere": (20.0,) * 3, "hopper": (36.7,) * 3, "blackwell": (73.4,) * 3}
PER_CH_TREE_LL128 = {"volta": (20.0,) * 3, "ampere": (20.0,) * 3, "hopper": (36.7, 36.7, 29.0), "blackwell": (55.6, 31.67, 20.0)}
PER_CH_TREE = {"volta": (26.5, 18.5, 10.0), "ampere": (24.0, 23.6, 17.8), "hopper": (38.7, 41.4, 36.0),
               "blackwell": (70.0, 42.8, 24.0)}
PER_CH_NVLS_TREE = {"volta": (26.5, 18.5, 10.0), "ampere": (24.0, 23.6, 17.8), "hopper": (0.0, 57.7, 45.5),
                    "blackwell": (0.0, 96.0, 43.1)}
NVLS_EFFICIENCY = {"volta": 0.0, "ampere": 0.0, "hopper": 0.85, "blackwell": 0.74}
# tree all_reduce bandwidth correction by log2(bytes / 64), 64 B .. 256 MiB
TREE_CORRECTION = {
    "LL": (1.0, 1.0, 1.0, 1.0, .9, .8, .7, .7, .7, .7, .6, .5, .4, .4, .5, .6, .7, .8, .9, 1.0, 1.0, 1.0, 1.0),
    "LL128": (1.0, 1.0, 1.0, 1.0, 1.0, .9, .8, .8, .8, .7, .6, .6, .6, .6, .6, .6, .8, .9, .9, .9, .9, 1.0, 1.0),
    "Simple": (.9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5, .5, .5, .5, .6, .7, .8, .7, .7, .8, .9, .9),
}
# topology search speeds (GB/s per channel), search.cc
SPEEDS_INTRA = {"volta": (40.0, 30.0, 20.0, 18.0, 15.0, 12.0, 10.0, 9.0, 7.0, 6.0, 5.0, 4.0, 3.0),
                "hopper": (60.0, 50.0, 40.0, 30.0, 24.0, 20.0, 15.0, 12.0, 11.0, 6.0, 3.0),
                "blackwell": (90.0, 80.0, 70.0, 60.0, 50.0, 40.0, 30.0, 24.0, 20.0, 19.0, 18.0)}
SPEEDS_INTER = {"volta": (48.0, 30.0, 28.0, 24.0, 20.0, 18.0, 15.0, 12.0, 10.0, 9.0, 7.0, 6.0, 5.0, 4.0, 3.0, 2.4, 1.2, .24, .12),
                "hopper": (48.0, 45.0, 42.0, 40.0, 30.0, 24.0, 22.0, 20.0, 17.5, 15.0, 12.0, 6.0, 3.0, 2.4, 1.2, .24, .12),
                "blackwell": (96.0, 48.0, 45.1, 42.0, 40.0, 30.0, 24.0, 22.0, 20.0, 17.5, 15.0, 12.0, 6.0, 3.0, 2.4, 1.2, .24, .12)}
NVLINK_GBPS_PER_LINK = {"volta": 20.0, "ampere": 20.0, "hopper": 20.6, "blackwell": 40.1}   # topo.h SMxx_NVLINK_BW
NVLINKS_PER_GPU = {"volta": 6, "ampere": 12, "hopper": 18, "blackwell": 18}                  # SXM parts
MAX_CHANNELS = 64
# LL128 across nodes where the NIC hangs off the CPU and the GPU reaches that CPU over NVLink-C2C (GB200 trays): the
# GPU-NIC path is PHB, and tuning.cc enables LL128 only up to PXN (v2.25.1-1 l.428, v2.26.2-1 l.429); from 2.27
# paths.cc retypes that path P2C ('update the GPU -> NIC path in the case of C2C + PHB', v2.27.3-1 l.669-681) and
# tuning.cc enables LL128 up to P2C under NCCL_LL128_C2C, default 1 (v2.27.3-1 l.211, l.460). v2.28.3-1 keeps it on:
# NCCL_LL128_C2C l.221, the C2C branch l.482-484 allows 'typeInter <= PATH_PXN', and 2.28 reordered the path enum
# (topo.h l.80 / l.83: P2C 6 < PXN 7, where 2.27 has PXN 6 < P2C 7), so 'up to PXN' includes P2C there
LL128_VIA_CPU_FROM = (2, 27)
NVLS_CHANNELS = {"hopper": 16, "blackwell": 32}
NVLS_CHANNELS_ONE_DOMAIN = {"blackwell": 24}   # nvls.cc NVLS_NCHANNELS_SM100_NVL: one node or one MNNVL clique
NVLS_ARITY = 32
DIRECT_ARITY = 7
THREADS = {"LL": 512, "LL128": 640, "Simple": 512}     # NCCL_{LL,LL128,SIMPLE}_MAX_NTHREADS
THREAD_THRESHOLD = {"LL": 8, "LL128": 8, "Simple": 64}
MAX_THREADS = 640
MIN_TRAFFIC_PER_CHANNEL = 16 << 10
# per network step (tuning.cc getNetOverhead): x86 Intel 1 us, x86 AMD 2 us, any other CPU 1 us
NET_OVERHEAD_US = {"intel": 1.0, "amd": 2.0, "arm": 1.0}
CPU_VENDORS = tuple(NET_OVERHEAD_US)


GPU_ARCH_PREFIXES = (("v100", "volta"), ("a100", "ampere"), ("a800", "ampere"), ("h100", "hopper"), ("h200", "hopper"),
                     ("h800", "hopper"), ("gh200", "hopper"), ("b100", "blackwell"), ("b200", "blackwell"),
                     ("gb200", "blackwell"), ("b300", "blackwell"))


ARCHITECTURES = tuple(dict.fromkeys(arch for _, arch in GPU_ARCH_PREFIXES))


def arch_of(gpu_name: str, card_arch: str | None = None) -> str:
    """The architecture NCCL's tables are indexed by: a GPU card's own `machine.arch`, else read from its name
    (models/gpu/*.yaml, 'h100-sxm')."""
    if card_arch is not None:
        if card_arch not in ARCHITECTURES:
            raise SimclusterError(f"machine.arch {str(card_arch)[:20]!r} of GPU card {gpu_name!r} is not an architecture "
                                  "NCCL's tables know", hint="one of " + ", ".join(ARCHITECTURES))
        return card_arch
    name = gpu_name.lower()
    for prefix, arch in GPU_ARCH_PREFIXES:
        if name.startswith(prefix):
            return arch
    raise SimclusterError(f"no NCCL architecture known for GPU {gpu_name!r}",
                          hint="name the GPU card after one of " + ", ".join(p for p, _ in GPU_ARCH_PREFIXES)
                          + ", or give it machine.arch")
