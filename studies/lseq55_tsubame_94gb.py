"""Fujii's 4D-parallelism tables (Llama 3.1 8B on TSUBAME 4.0, 8K and 16K tokens) on a card for their GPU, the H100
SXM5 94GB (models/gpu/h100-sxm5-94gb.yaml, made from public specs in session 55 lseq55), beside session 54's stand-in
(the H100 SXM5 80GB card). Issue 44, long-sequence family; read-only, not a test, no family figure moves: the file's
rows stay not compared (runs_not_compared), and they are SEEN -- session 54 printed every one of them on the 80GB card
(studies/lseq54_tsubame_proxy.txt) before this card existed, so whatever this prints is development for the card, never
held out (docs/models/llm-findings.md "Session 55: lseq55").

Each row is predicted once by validate's own path through studies/lseq54_tsubame_proxy.rows (the same stand-in
NVLink card, four 400G InfiniBand NICs a node, the same fills), once with the file's GPU card and once with the 94GB card;
nothing else differs. Printed: per row measured / predicted TFLOP/s and error on both cards, whether it fits; the mean
error per sequence length; session 54's ratio r = (predicted 16K / predicted 8K) / (measured 16K / measured 8K) - 1 per
pair and its median over the pairs on <= 8 GPUs (the 16K cells that repeat another cell left out, as session 54 did).

EXPECTATION, written before this ran (committed with the card): the 94GB card differs from the 80GB card only in HBM
(2.4 against 3.35 TB/s peak) and capacity, so only the memory-bound part of the predicted step slows, by 3.35 / 2.4 =
x1.40. At 8K (memory-bound ~10-15% of predicted compute on H100) the step lengthens ~4-6%: the 8K mean error goes from
+24.2% to about +17..+21%; at 16K, where attention's share is larger and the memory-bound share smaller, by ~3-5
points; so r's median moves down by about 0..2 points, from +4.2% to about +2.5..+4.5%. Rows that did not fit on the
80GB card may fit now (93.1 GiB). If the 8K mean stays above +15%, the card's HBM is not what separates the model from
TSUBAME's runs (the rest: the 4-GPU board's NVLink, TE 1.6 / 1.9 and cuDNN 8.9.7, the fork's z-loss and fp32
softmax, unknown global batch at 16K).
    python studies/lseq55_tsubame_94gb.py

The first print (studies/lseq55_tsubame_94gb.txt, on the card as committed at b36633ad) missed the r expectation
(+5.2%). Revision 1, made AFTER that print (so it is as development as the rows): the card's provenance.curves_from marked
it derived, and llm/attention_kernels.hopper_measured then priced its attention with the plain curve instead of the
cuDNN schedule form the 80GB card gets -- not the "every curve unchanged" the card says. hopper_measured now takes a card
derived from a measured H100 / H200 card on the same die (132 SMs) as Hopper-measured; printed again as
studies/lseq55_tsubame_94gb_rev1.txt. No published row outside this file has that card, so nothing else moves.
"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "studies"))

from lseq54_tsubame_proxy import DECIDING_GPUS, pairs_of, repeated_16k, rows  # noqa: E402

from simcluster.script_args import ArgumentParser  # noqa: E402

CARD = ROOT / "models" / "gpu" / "h100-sxm5-94gb.yaml"


def summary(table: list[dict], left_out: set[int]) -> dict:
    """Mean error per sequence length and the median r over the deciding pairs (module docstring)."""
    out = {}
    for seq in (8192, 16384):
        errs = [r["err"] for r in table if r["seq"] == seq and r["i"] not in left_out]
        out[seq] = (len(errs), statistics.mean(errs), statistics.mean(abs(e) for e in errs))
    deciding = [r for a, _, r in pairs_of(table, left_out) if a["key"][4] <= DECIDING_GPUS]
    out["r"] = (len(deciding), statistics.median(deciding))
    return out


def main(argv: list[str]) -> int:
    ArgumentParser(description=__doc__.split("\n\n")[0]).parse_args(argv)
    base, card = rows(), rows(gpu=CARD)
    left_out = repeated_16k(base)
    print("# SEEN rows (printed on the 80GB stand-in in session 54 before this card existed): development for "
          "models/gpu/h100-sxm5-94gb.yaml, not validation. TFLOP/s per GPU (Megatron's count), + = predicted fast")
    print(f"{'run':>3} {'seq':>6} {'(tp,cp,pp,mb)':<14} {'gpus':>4} {'meas':>7} {'80GB':>7} {'err':>7} {'94GB':>7} {'err':>7} fits")
    for a, b in zip(base, card, strict=True):
        tp, cp, pp, mb, g = a["key"]
        mark = "  (repeated value: left out)" if a["i"] in left_out else ""
        print(f"{a['i']:>3} {a['seq']:>6} {f'({tp},{cp},{pp},{mb})':<14} {g:>4} {a['meas']:>7.1f} {a['pred']:>7.1f} "
              f"{a['err'] * 100:>+6.1f}% {b['pred']:>7.1f} {b['err'] * 100:>+6.1f}% {a['fits']}/{b['fits']}{mark}")
    s80, s94 = summary(base, left_out), summary(card, left_out)
    for seq in (8192, 16384):
        (n, m80, a80), (_, m94, a94) = s80[seq], s94[seq]
        print(f"# {seq}: {n} rows, mean error 80GB {m80 * 100:+.1f}% / 94GB {m94 * 100:+.1f}%; mean |error| "
              f"{a80 * 100:.1f}% / {a94 * 100:.1f}%")
    (n, r80), (_, r94) = s80["r"], s94["r"]
    print(f"# r: median over the {n} pairs on <= {DECIDING_GPUS} GPUs, 80GB {r80 * 100:+.1f}% / 94GB {r94 * 100:+.1f}%")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
