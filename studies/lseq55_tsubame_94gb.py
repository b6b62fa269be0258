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

Revision 2 (mendA55, after cold review A55 items 9 and 10; as development as the rest): the card follows the project's
rule for derived cards (simcluster.fit.gpu.carry): no clock block and no attention-dropout rates (the first commit
carried the 80GB card's, whose memory_power is HBM3's), comm_overlap kept (every GH100 card carries it); printed as
studies/lseq55_tsubame_94gb_rev2.txt, which also prints each pair's r and each row's memory-bound share of the predicted
compute (the 80GB card's and the 94GB card's). The earlier prints are read back, not recomputed:
    python studies/lseq55_tsubame_94gb.py --read studies/lseq55_tsubame_94gb.txt studies/lseq55_tsubame_94gb_rev1.txt
prints each print's per-pair r (its 94GB column) and, for two prints, how far each row's 94GB error moved between them,
by layout (no CP, CP 2, CP 4) and length (studies/lseq55_tsubame_94gb_moves.txt holds it for the three prints).
"""

from __future__ import annotations

import re
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


def pair_lines(base: list[dict], card: list[dict], left_out: set[int]) -> None:
    """Each pair's r on both cards (pairs_of), the ones that decide marked."""
    r94 = {a["key"]: r for a, _, r in pairs_of(card, left_out)}
    print("# pair (tp,cp,pp,mb) gpus | r 80GB | r 94GB" + f" | on <= {DECIDING_GPUS} GPUs")
    for a, _, r in pairs_of(base, left_out):
        tp, cp, pp, mb, g = a["key"]
        print(f"# pair ({tp},{cp},{pp},{mb}) {g} | {r * 100:+.1f}% | {r94[a['key']] * 100:+.1f}% | "
              f"{'yes' if g <= DECIDING_GPUS else 'no'}")


ROW = re.compile(r"^\s*(\d+)\s+(\d+)\s+\((\d+),(\d+),(\d+),(\d+)\)\s+(\d+)\s+([\d.]+)\s+([\d.]+)\s+[+-][\d.]+%\s+([\d.]+)\s+"
                 r"([+-][\d.]+)%")


def read_print(path: Path) -> tuple[list[dict], set[int]]:
    """A committed print's rows as {i, seq, key, meas, pred (its 94GB column), err} and the 16K rows it left out."""
    try:
        lines = path.read_text().splitlines()
    except OSError as exc:
        raise SystemExit(f"error: {path}: cannot read a print of this study ({exc.strerror})") from None
    out, left = [], set()
    for line in lines:
        m = ROW.match(line)
        if m:
            i, seq, tp, cp, pp, mb, g = (int(x) for x in m.groups()[:7])
            out.append({"i": i, "seq": seq, "key": (tp, cp, pp, mb, g), "meas": float(m[8]), "pred": float(m[10]),
                        "err": float(m[11]) / 100})
            left |= {i} if "left out" in line else set()
    if not out:
        raise SystemExit(f"error: {path}: no row of this study's print in it")
    return out, left


def read_prints(paths: list[Path]) -> None:
    """--read: each print's per-pair r (94GB column, from its rounded TFLOP/s) and the moves between consecutive prints."""
    read = [(p, *read_print(p)) for p in paths]
    for path, rows_, left in read:
        deciding = [r for a, _, r in pairs_of(rows_, left) if a["key"][4] <= DECIDING_GPUS]
        pairs = "; ".join(f"({a['key'][0]},{a['key'][1]},{a['key'][2]},{a['key'][3]}) {a['key'][4]}: {r * 100:+.1f}%"
                          for a, _, r in pairs_of(rows_, left) if a["key"][4] <= DECIDING_GPUS)
        print(f"# {path.name}: r per pair on <= {DECIDING_GPUS} GPUs (94GB column): {pairs}; median "
              f"{statistics.median(deciding) * 100:+.1f}%")
    for (p0, r0, _), (p1, r1, _) in zip(read, read[1:], strict=False):
        moves: dict[tuple, list[float]] = {}
        for a, b in zip(r0, r1, strict=True):
            cls = ("no CP" if a["key"][1] == 1 else f"CP {a['key'][1]}", a["seq"])
            moves.setdefault(cls, []).append((b["err"] - a["err"]) * 100)
        every = [m for v in moves.values() for m in v]
        print(f"# {p0.name} -> {p1.name}: 94GB error moves {min(every):+.1f}..{max(every):+.1f} points; " + "; ".join(
            f"{c} at {seq}: {min(v):+.1f}..{max(v):+.1f}" for (c, seq), v in sorted(moves.items())))


def main(argv: list[str]) -> int:
    ap = ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--read", nargs="+", type=Path, help="committed prints of this study to read back (per-pair r, moves)")
    args = ap.parse_args(argv)
    if args.read:
        read_prints(args.read)
        return 0
    base, card = rows(), rows(gpu=CARD)
    left_out = repeated_16k(base)
    print("# SEEN rows (printed on the 80GB stand-in in session 54 before this card existed): development for "
          "models/gpu/h100-sxm5-94gb.yaml, not validation. TFLOP/s per GPU (Megatron's count), + = predicted fast; "
          "mem: the memory-bound share of the predicted compute, 80GB / 94GB")
    print(f"{'run':>3} {'seq':>6} {'(tp,cp,pp,mb)':<14} {'gpus':>4} {'meas':>7} {'80GB':>7} {'err':>7} {'94GB':>7} {'err':>7} fits"
          f"        mem")
    for a, b in zip(base, card, strict=True):
        tp, cp, pp, mb, g = a["key"]
        mark = "  (repeated value: left out)" if a["i"] in left_out else ""
        print(f"{a['i']:>3} {a['seq']:>6} {f'({tp},{cp},{pp},{mb})':<14} {g:>4} {a['meas']:>7.1f} {a['pred']:>7.1f} "
              f"{a['err'] * 100:>+6.1f}% {b['pred']:>7.1f} {b['err'] * 100:>+6.1f}% {a['fits']}/{b['fits']} "
              f"{a['membound'] * 100:4.1f}/{b['membound'] * 100:4.1f}%{mark}")
    s80, s94 = summary(base, left_out), summary(card, left_out)
    for seq in (8192, 16384):
        (n, m80, a80), (_, m94, a94) = s80[seq], s94[seq]
        share = [r["membound"] * 100 for r in base if r["seq"] == seq]
        print(f"# {seq}: {n} rows, mean error 80GB {m80 * 100:+.1f}% / 94GB {m94 * 100:+.1f}%; mean |error| "
              f"{a80 * 100:.1f}% / {a94 * 100:.1f}%; memory-bound share of predicted compute on the 80GB card "
              f"{min(share):.1f}..{max(share):.1f}% (every row)")
    pair_lines(base, card, left_out)
    (n, r80), (_, r94) = s80["r"], s94["r"]
    print(f"# r: median over the {n} pairs on <= {DECIDING_GPUS} GPUs, 80GB {r80 * 100:+.1f}% / 94GB {r94 * 100:+.1f}%")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
