"""The card's fused attention (cuDNN's SDPA on Hopper: torch's default backend, Transformer Engine's fused attention)
as a schedule of work units on the SMs (issue 44, session 39, cudnnwave): llm/flash_schedule.py's schedule with this
kernel's Grid and constants. Adopted by the registered check calibration/h200x1-attention-cudnn-2026-11-30 (its README's
Result); priced in llm/attention_kernels.py (CudnnCard) for the 'card' kernel on the measured Hopper cards.

  units      forward: one per (query block of BLOCK_M rows, batch, head); backward: one per (key block of BLOCK_N rows,
             batch, head); causal tiles per unit as flash's (llm/flash_schedule.py)
  unit time  a + u * tiles
  kernel     greedy in-order list schedule on SMs x 1 unit an SM (one CTA a tile at one CTA an SM, or a persistent grid
             taking tiles in launch order: the data cannot tell them apart); the makespan
  backward   + 14 bytes a q element at the card's copy rate (FlashAttention-2's dot(dO, O) and dQ accumulator kernels);
             grouped K/V reduced in the kernel (no torch-side dK / dV sum)

Sourced: cuDNN's SDPA uses the FlashAttention-2 algorithm; bf16, causal, GQA, head sizes to 256 on Hopper (NVIDIA cuDNN
frontend docs, operations/Attention.html, read 2026-11-29). Not published (closed source), so CHOSEN by fit on
development records (studies/cudnn_wave.py: 103 default-backend shapes of calibration/h200x1-attention-backends-
2026-11-28, -gqa-, -wave- and -noncausal-2026-11-29): tile sizes, 1 unit an SM, launch order (heaviest-first fits worse
in every pass and head size), and u, a per pass and head size (the registration's numbers, below).

Valid: bf16 / fp16, head size 64 / 128, seq >= 2K (the fit's records; shorter calls keep the card's curve, which was
measured there), causal seq_q = seq_kv or non-causal; one H200 (132 SMs) measured; the H100 extrapolated (the kernel
time scaled by the two cards' long-sequence attention rates, llm/attention_kernels.py). Units: seconds, bytes/s.
"""

from __future__ import annotations

from simcluster.llm.flash_schedule import Grid

TILES = {("fwd", 64): (128, 64, 1), ("fwd", 128): (128, 64, 1), ("bwd", 64): (128, 128, 1), ("bwd", 128): (64, 128, 1)}
GRID = Grid("cudnn", TILES, order="launch", bwd_bytes=14.0, gqa_sum=False, split_kv=False)
# (pass, head_dim) -> (u: seconds a score tile, a: seconds a unit): registered before the probe
# (calibration/h200x1-attention-cudnn-2026-11-30/registered.yaml `consts`, fitted by studies/cudnn_wave.py)
CONSTS = {("fwd", 64): (5.76228e-07, 1.15346e-06), ("fwd", 128): (8.73225e-07, 5.46685e-08),
          ("bwd", 64): (3.13069e-06, 3.68514e-06), ("bwd", 128): (2.52679e-06, 1.5819e-07)}
FLOOR_SEQ = 2048    # tokens: the shortest call the form and the flash ratio fit were measured to take (never patched)
MIN_SEQ = FLOOR_SEQ  # below it the card's own curve (measured there) prices the call; read-outs refuse the form by
#                     moving this one, which leaves FLOOR_SEQ (and the flash ratio fit) alone
MIN_WAVES = 0       # forward waves of units below which the curve prices the call (0: none; the registered rule's
#                     partial adoption would set 2)
