"""NVLink SHARP (NVLS) all_reduce inside one NVLink domain larger than a board: an NVL72 rack's 9-72 GPUs behind its
NVLink switch trays (issue 41, session 44; docs/models/fabric.md, "NVLS inside one NVLink domain").

The NVLS card holds all_reduce algbw at some GPU counts (models/nvswitch/*.yaml); NCCL runs NVLS at every count of a
clique. Up to 8 GPUs (one board) the card's own rate prices the call, T = l_NVLS + S / algbw_card(n), as before
session 44. Above 8 GPUs three terms, each named by where it comes from:

    algbw_card(n)  = algbw_card(m) (1 + 1/H(m)) / (1 + 1/H(n))     m the card's largest count <= n, H = min(n, 32)
    algbw_NVLS(n)  = min(algbw_card(n), C x a_ch)   Blackwell only (where a_ch was fitted); elsewhere algbw_card(n)
    T              = l_NVLS + S / algbw_NVLS + 2 C H c(S) / algbw_NVLS

- The carry: the card's own law (a head GPU moves S (1 + 1/H) each way; models/nvswitch/gb200-nvl72-nvls-derived.yaml),
  from its nearest lower count; a count below the card's smallest has no NVLS rate (None: the NVLink card prices it).
- C (src/transport/nvls.cc, read at v2.25.1-1, v2.26.6-1, v2.27.3-1, v2.29.7-1): NVLS_NCHANNELS_SM100 = 32 on
  Blackwell up to 2.26; from 2.27 NVLS_NCHANNELS_SM100_NVL = 24 on one node or one MNNVL clique, 32 across cliques;
  NVLS_NCHANNELS_SM90 = 16 on Hopper. H: NCCL_MAX_NVLS_ARITY 32 (one head per GPU up to 32).
- a_ch = 14.8 GB/s of algbw per NVLS channel: a FIT, DEVELOPMENT, mechanism unknown. Solved with the model's own fill
  at the GB300 NVL72 ladder's 8 GiB points at 16 / 32 / 60 GPUs on 24 channels, a_ch = (S + 2 C H c) / (C (T - l)),
  T = S / algbw measured: 14.51 / 14.97 / 14.95 GB/s, mean 14.81 (calibration/published/nccl-gb300-nvl72-w{16,32,60}-
  ncclbpf.yaml, NCCL 2.29.7), below the card's law there (493-508 GB/s). A per-channel figure because the ladder's
  plateau is flat in n (645 / 680 / 689 GB/s busbw) while the card's law rises, and NCCL's tuner states NVLS bandwidth
  per channel (tuning.cc); the 8-GPU points contradict a per-channel kernel limit (the same one-node kernel on 24
  channels reaches 836 GB/s busbw, 19.9 GB/s of algbw per channel), so the ceiling is a fit of the 16-60 GPU plateau,
  not an identified mechanism (NCCL_NVLS_NCHANNELS 24 vs 32 on one rack would test it: docs/models/fabric-findings.md,
  session 44). The code applies it where it was fitted: a Blackwell domain above 8 GPUs (an NVL72-class MNNVL clique:
  no Blackwell board holds more than 8 GPUs); on another architecture above 8 GPUs the price is unmeasured and carries
  no ceiling (predict collective says so: unmeasured_note). 9-15 GPUs: an assumed step from 8 (nothing measured there).
- The fill: NCCL's one-domain NVLS kernel (src/device/all_reduce.h, RunWorkColl<..., NCCL_ALGO_NVLS, ...>, oneNode) runs
  each channel as three warp groups in a pipeline, scatter (the H heads' chunks into the NVLS buffers), reduce
  (multimem load-reduce of its own head's chunk and multicast store) and gather; a loop moves C H c bytes of the call,
  so the last loop leaves two loops after the first enters: fill = sum - max of three equal stages
  (collectives/pipeline_fill.fill_s). c(S): enqueue.cc calcCollChunking for NCCL_ALGO_NVLS (128 KiB
  NCCL_NVLS_CHUNKSIZE, 64 / 32 / 16 KiB while S < 64 / 8 / 2 x C H c), read at v2.25.1-1 and v2.29.7-1 (the same).
  Applied above 8 GPUs only: the 2-loop count was chosen from Blackwell rack intercepts, and no 8-GPU board row
  (Hopper or Blackwell) was used to test it (docs/models/fabric-findings.md, session 44 mend).
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from simcluster.collectives.nccl_constants import NVLS_ARITY, NVLS_CHANNELS, NVLS_CHANNELS_ONE_DOMAIN
from simcluster.collectives.pipeline_fill import NVLS_CHUNK_BYTES, fill_s, stream_chunk_bytes
from simcluster.collectives.tree_kernel import MODEL_NCCL

BOARD_GPUS = 8                    # an HGX board / two NVL72 trays: the NVLS cards' anchor (measured there)
CHANNEL_ALGBW_Bps = 14.8e9        # a_ch: a fit, development (the GB300 ladder at 16 / 32 / 60 GPUs, module docstring)
FITTED_ARCH = "blackwell"         # where a_ch was fitted: GB300 NVL72 one-clique domains (above 8 GPUs: NVL72-class)
FITTED_LABEL = "fitted ceiling above 8 GPUs (GB300 NVL72 16-60, development; mechanism unknown)"
ONE_CLIQUE_CHANNELS_FROM = (2, 27)   # nvls.cc: NVLS_NCHANNELS_SM100_NVL from v2.27.3-1
NVLS_STAGES = 3                   # scatter, reduce + multicast, gather (all_reduce.h, one node)
CHUNK_STEPS = ((64, 65536), (8, 32768), (2, 16384))   # enqueue.cc: chunk cut to the size while S < times x C H c
_A_CH: ContextVar[float] = ContextVar("nvls_channel_algbw_Bps", default=CHANNEL_ALGBW_Bps)   # a_ch in force


def channel_algbw_Bps() -> float:
    """a_ch in force: CHANNEL_ALGBW_Bps, or a study's counterfactual inside channel_algbw_as."""
    return _A_CH.get()


@contextmanager
def channel_algbw_as(a_ch: float) -> Iterator[None]:
    """a_ch priced as `a_ch` inside the block (math.inf: the ceiling removed; studies/nvls_ceiling_off.py), the fitted
    value outside it; the module's constant is never rebound."""
    token = _A_CH.set(a_ch)
    try:
        yield
    finally:
        _A_CH.reset(token)


def nvls_channels(arch: str, version: tuple[int, int] | None, one_clique: bool) -> int:
    """NVLS channels NCCL runs (nvls.cc): Blackwell 32, from 2.27 24 on one node / MNNVL clique; Hopper 16."""
    if arch in NVLS_CHANNELS_ONE_DOMAIN and one_clique and (version or MODEL_NCCL) >= ONE_CLIQUE_CHANNELS_FROM:
        return NVLS_CHANNELS_ONE_DOMAIN[arch]
    return NVLS_CHANNELS.get(arch, 0)


def nvls_heads(ranks: int) -> int:
    """NVLS heads of one clique: one per GPU up to NCCL_MAX_NVLS_ARITY."""
    return min(ranks, NVLS_ARITY)


def nvls_chunk_bytes(size: float, channels: int, heads: int) -> float:
    """The NVLS all_reduce's chunk (enqueue.cc calcCollChunking, NCCL_ALGO_NVLS, NCCL_NVLS_CHUNKSIZE unset)."""
    chunk, ops = NVLS_CHUNK_BYTES, channels * heads
    for times, smaller in CHUNK_STEPS:
        if size < times * ops * chunk and chunk > smaller:
            chunk = smaller
    return float(chunk)


def carried_algbw(table: dict[int, float], ranks: int) -> float | None:
    """The card's all_reduce algbw at `ranks` GPUs, carried by its heads law from its largest count <= ranks; None
    below its smallest count."""
    known = [m for m in table if m <= ranks]
    if not known:
        return None
    m = max(known)
    return table[m] * (1 + 1 / nvls_heads(m)) / (1 + 1 / nvls_heads(ranks))


def channel_ceiling_Bps(ranks: int, channels: int, arch: str) -> float:
    """The fitted NVLS ceiling C x a_ch (development, module docstring): only where it was fitted, a Blackwell domain
    above 8 GPUs; none elsewhere."""
    fitted = ranks > BOARD_GPUS and arch == FITTED_ARCH and channels > 0
    return channels * channel_algbw_Bps() if fitted else math.inf


def domain_nvls_rate(table: dict[int, float], ranks: int, channels: int, arch: str) -> tuple[float, str] | None:
    """(algbw B/s, what binds it) of NVLS on `ranks` GPUs of one domain; None where the card has no rate."""
    card = carried_algbw(table, ranks)
    if card is None:
        return None
    ceiling = channel_ceiling_Bps(ranks, channels, arch)
    if ceiling < card:
        return ceiling, f"{FITTED_LABEL}: {channels} channels x {channel_algbw_Bps() / 1e9:g} GB/s"
    carried = "" if ranks in table else f", carried from {max(m for m in table if m <= ranks)} GPUs"
    return card, f"NVLink SHARP (the NVLS card's all_reduce rate{carried})"


def domain_fill_s(size: float, ranks: int, channels: int, algbw: float) -> float:
    """The fill as domain_predict adds it: above 8 GPUs only (module docstring); 0 on a board."""
    return nvls_fill_s(size, channels, nvls_heads(ranks), algbw) if ranks > BOARD_GPUS else 0.0


def unmeasured_note(arch: str, ranks: int, table: dict[int, float], domains: int = 1) -> str | None:
    """What predict collective says about an NVLS price above 8 GPUs (none up to 8: the card's measured rates)."""
    if ranks <= BOARD_GPUS or carried_algbw(table, ranks) is None:
        return None
    carried = f"the NVLS card's law carried from {max(m for m in table if m <= ranks)} GPUs"
    tree = (" Across NVLink domains the NVLS tree's domain term takes the one-clique a_ch on NCCL's 32 channels: outside"
            " the fit's range.") if domains > 1 else ""
    step = " 9-15 GPUs: an assumed step from 8 (nothing measured between 8 and 16)." if ranks < 16 else ""
    if arch == FITTED_ARCH:
        return (f"NVLS on {ranks} GPUs of one NVLink domain: {carried}, under a per-channel ceiling fitted on GB300 NVL72 "
                f"rows at 16-60 GPUs (development; mechanism unknown), plus a pipeline fill of two loops.{step}{tree}")
    return (f"NVLS on {ranks} GPUs of one {arch} NVLink domain: unmeasured above 8 GPUs ({carried}, plus a pipeline fill "
            "of two loops; the fitted per-channel ceiling is Blackwell NVL72's only and is not applied). The band below "
            f"is from other regimes: treat it as extrapolated.{step}{tree}")


def nvls_fill_s(size: float, channels: int, heads: int, algbw: float) -> float:
    """Pipeline fill of the one-domain NVLS kernel: two of its three stages' per-loop times, a loop C H c bytes."""
    chunk = stream_chunk_bytes(nvls_chunk_bytes(size, channels, heads), size, channels * heads)
    return fill_s([channels * heads * chunk / algbw] * NVLS_STAGES)
