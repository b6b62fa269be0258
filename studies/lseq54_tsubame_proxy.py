"""Fujii's 4D-parallelism tables (Llama 3.1 8B on TSUBAME 4.0's H100 SXM5 94GB, 8K and 16K tokens) on a stand-in
machine: does the model's TFLOP/s grow from 8K to 16K as the measured does? (issue 44, session 54 lseq54; read-only,
no model change, not a test; docs/models/llm-findings.md "Session 54: lseq54").

calibration/published/llm-fujii-4d-tsubame4-h100-94gb.yaml records the tables with every row not compared: the project
has no card for the 94GB H100 SKU (its memory and power limit were not read), the 4-GPU node's NVLink and NIC are not
printed. Here each row is predicted once by validate's own path (reference/llm.predict_run) with the file's
runs_not_compared set aside, on the file's stand-in machine (the H100 SXM5 80GB card, the 4-GPU H200 NVLink card, four
400G InfiniBand NICs a node): a stand-in's numbers, not validation, and they never enter the family figures.

The question (lseq53: the NeMo 25.04 B200 rows are predicted fast at every length, more so as attention's share grows)
is asked as a ratio that a uniform card-level bias cancels: per pair of cells with the same (TP, CP, PP, micro batch)
and GPU count at 8192 and 16384 tokens, r = (predicted 16K / predicted 8K) / (measured 16K / measured 8K) - 1.
The rule was committed with the file before this ran (its simcluster.note): the median r over the pairs on <= 8 GPUs
decides (> +3%: the fast-with-length shape on H100 too; -3..+3%: absent; < -3%: the model slow with length); the 16K
cells that repeat another 16K cell's value (possible copy slips, the file's notes) are left out of every pair.
    python studies/lseq54_tsubame_proxy.py

A sensitivity written after that one print (not part of the rule): --nvlink-scale R predicts the rows again with the
stand-in NVLink card's bandwidth and chunks multiplied by R (as models/collective/a100-nvlink-derived.yaml derives its
card from the same H200 card; latencies kept), for a 4-GPU board slower than the NVSwitch-measured card -- a fully
connected 4-GPU H100 board gives each pair 6 of a GPU's 18 links, R = 1/3 for a two-rank ring -- and prints the pairs.
    python studies/lseq54_tsubame_proxy.py --nvlink-scale 0.3333
"""

from __future__ import annotations

import statistics
import sys
import tempfile
from dataclasses import replace
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "studies"))

from llm_heldout_breakdown import compute_split  # noqa: E402

from simcluster.published import read_published  # noqa: E402
from simcluster.reference.llm import llm_usage, predict_run  # noqa: E402
from simcluster.script_args import ArgumentParser  # noqa: E402

FILE = ROOT / "calibration" / "published" / "llm-fujii-4d-tsubame4-h100-94gb.yaml"
NVLINK = ROOT / "models" / "collective" / "h200x4-nvlink.yaml"   # the file's stand-in NVLink card
DECIDING_GPUS = 8          # the rule's pairs: one or two 4-GPU nodes
BAND = 0.03                # the rule's +-3%


def scaled_nvlink(scale: float, folder: Path) -> Path:
    """The stand-in NVLink card with its link bandwidth and every protocol's chunk multiplied by `scale` (module
    docstring), written into `folder`; its path."""
    card = yaml.safe_load(NVLINK.read_text())
    params = card["params"]
    assert params["link_bandwidth"] == "10TB/s", params["link_bandwidth"]
    params["link_bandwidth"] = f"{10 * scale:.4g}TB/s"
    for proto in params["protocols"].values():
        assert proto["chunk"].endswith(("KiB", "MiB")), proto["chunk"]
        kib = float(proto["chunk"][:-3]) * (1024 if proto["chunk"].endswith("MiB") else 1)
        proto["chunk"] = f"{kib * scale:.2f}KiB"
    card["name"] = f"h200x4-nvlink-x{scale:.4g}"
    path = folder / f"{card['name']}.yaml"
    path.write_text(yaml.safe_dump(card, sort_keys=False))
    return path


def rows(nvlink: Path | None = None, gpu: Path | None = None) -> list[dict]:
    """Every row predicted once on the stand-in machine (its NVLink card `nvlink`, its GPU card `gpu` where given --
    session 55's studies/lseq55_tsubame_94gb.py passes the 94GB card): layout key, measured / predicted TFLOP/s,
    attention share, memory-bound share (of the predicted compute, llm_heldout_breakdown's classes)."""
    ref = read_published(FILE, "published-llm-run")
    usage_all = {k: v for k, v in ref.usage.items() if k != "runs_not_compared"}
    ref = replace(ref, usage=usage_all)
    usage = llm_usage(ref)
    usage = replace(usage, nvlink_card=nvlink) if nvlink else usage
    usage = replace(usage, gpu_card=gpu) if gpu else usage
    out = []
    for i, run in enumerate(ref.runs):
        p = predict_run(ref, usage, i, run)
        if isinstance(p, str):
            raise SystemExit(f"{FILE.name}: run {i} not predicted on the stand-in: {p}")
        r, par = p.result, p.par
        classes, _, compute = compute_split(p.model, par, p.batch, p.gpu, p.framework, r.critical_stage, r.micro_batches)
        out.append({"i": i, "seq": p.model.seq, "key": (par.tp, par.cp, par.pp, p.batch.micro_batch, run["gpus"]),
                    "meas": p.measured / 1e12, "pred": p.predicted / 1e12, "err": p.error,
                    "attn": classes["attn"] / compute, "membound": classes["membound"] / compute, "tp_exposed": r.breakdown["exposed_tp_comm"] / r.step_time_s,
                    "fits": r.fits})
    return out


def repeated_16k(table: list[dict]) -> set[int]:
    """Indices of the 16K cells whose value another 16K cell repeats exactly (all copies)."""
    values = [r["meas"] for r in table if r["seq"] == 16384]
    return {r["i"] for r in table if r["seq"] == 16384 and values.count(r["meas"]) > 1}


def pairs_of(table: list[dict], left_out: set[int]) -> list[tuple[dict, dict, float]]:
    """(8K row, 16K row, r) per pair of cells with the same layout and GPU count (module docstring)."""
    short = {r["key"]: r for r in table if r["seq"] == 8192}
    out = []
    for b in table:
        if b["seq"] == 16384 and b["key"] in short and b["i"] not in left_out:
            a = short[b["key"]]
            out.append((a, b, (b["pred"] / a["pred"]) / (b["meas"] / a["meas"]) - 1))
    return out


def sensitivity(scale: float) -> None:
    """The pairs again on the NVLink card scaled by `scale` (module docstring): r per pair beside the file's card's."""
    with tempfile.TemporaryDirectory() as folder:
        scaled = rows(scaled_nvlink(scale, Path(folder)))
    base = rows()
    left_out = repeated_16k(base)
    print(f"# sensitivity (after the one print, not the rule): NVLink card bandwidth and chunks x {scale:.4g}; r per pair "
          "on the file's card and on the scaled one, and the 8K / 16K errors on the scaled one")
    print(f"{'(tp,cp,pp,mb)':<14} {'gpus':>4} {'r card':>7} {'r scaled':>8} {'err 8K':>7} {'err 16K':>7}")
    deciding = []
    for (a, _, r), (sa, sb, sr) in zip(pairs_of(base, left_out), pairs_of(scaled, left_out), strict=True):
        tp, cp, pp, mb, g = a["key"]
        deciding += [sr] if g <= DECIDING_GPUS else []
        print(f"{f'({tp},{cp},{pp},{mb})':<14} {g:>4} {r * 100:>+6.1f}% {sr * 100:>+7.1f}% {sa['err'] * 100:>+6.1f}% "
              f"{sb['err'] * 100:>+6.1f}%")
    print(f"# scaled card: median r over the pairs on <= {DECIDING_GPUS} GPUs {statistics.median(deciding) * 100:+.1f}%")


def main(argv: list[str]) -> int:
    parser = ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nvlink-scale", type=float, default=None, help="the sensitivity (module docstring), e.g. 0.3333")
    args = parser.parse_args(argv)
    if args.nvlink_scale is not None:
        if not 0 < args.nvlink_scale <= 1:
            parser.error(f"--nvlink-scale: expected a factor in (0, 1], got {args.nvlink_scale}")
        sensitivity(args.nvlink_scale)
        return 0
    table = rows()
    left_out = repeated_16k(table)
    print("# every row on the stand-in (H100 SXM5 80GB card; not TSUBAME's 94GB part): TFLOP/s per GPU measured / predicted "
          "(Megatron's count), error (+ = predicted fast), attention's share of the predicted compute, exposed TP share of "
          "the step, fits in the card's memory")
    print(f"{'run':>3} {'seq':>6} {'(tp,cp,pp,mb)':<14} {'gpus':>4} {'meas':>7} {'pred':>7} {'error':>7} {'attn':>5} {'tp':>5} fits")
    for r in table:
        tp, cp, pp, mb, g = r["key"]
        mark = "  (repeated value: left out)" if r["i"] in left_out else ""
        print(f"{r['i']:>3} {r['seq']:>6} {f'({tp},{cp},{pp},{mb})':<14} {g:>4} {r['meas']:>7.1f} {r['pred']:>7.1f} "
              f"{r['err'] * 100:>+6.1f}% {r['attn'] * 100:>4.0f}% {r['tp_exposed'] * 100:>4.1f}% {r['fits']}{mark}")
    for seq in (8192, 16384):
        errs = [r["err"] for r in table if r["seq"] == seq and r["i"] not in left_out]
        print(f"# {seq}: {len(errs)} rows, mean error {statistics.mean(errs) * 100:+.1f}%, median "
              f"{statistics.median(errs) * 100:+.1f}%, mean |error| {statistics.mean(abs(e) for e in errs) * 100:.1f}%")
    print()
    print("# pairs (same layout and GPU count): measured and predicted 16K / 8K TFLOP/s ratios, r = predicted ratio / "
          "measured ratio - 1 (+ = the model gains more from the longer sequence than the runs did)")
    print(f"{'(tp,cp,pp,mb)':<14} {'gpus':>4} {'meas 8K':>8} {'meas 16K':>8} {'m ratio':>7} {'p ratio':>7} {'r':>7} "
          f"{'attn 8K':>7} {'attn 16K':>8}")
    rs, deciding = [], []
    for a, b, r in pairs_of(table, left_out):
        tp, cp, pp, mb, g = a["key"]
        m_ratio, p_ratio = b["meas"] / a["meas"], b["pred"] / a["pred"]
        rs.append(r)
        if g <= DECIDING_GPUS:
            deciding.append(r)
        print(f"{f'({tp},{cp},{pp},{mb})':<14} {g:>4} {a['meas']:>8.1f} {b['meas']:>8.1f} {m_ratio:>7.3f} {p_ratio:>7.3f} "
              f"{r * 100:>+6.1f}% {a['attn'] * 100:>6.0f}% {b['attn'] * 100:>7.0f}%")
    med, med_all = statistics.median(deciding), statistics.median(rs)
    print(f"# pairs on <= {DECIDING_GPUS} GPUs: {len(deciding)}, median r {med * 100:+.1f}% (range "
          f"{min(deciding) * 100:+.1f}..{max(deciding) * 100:+.1f}%); all pairs: {len(rs)}, median r {med_all * 100:+.1f}%")
    verdict = ("the fast-with-length shape present on H100" if med > BAND else
               "the model slow with length on H100" if med < -BAND else "shape absent on H100")
    print(f"RULE: median r over the pairs on <= {DECIDING_GPUS} GPUs = {med * 100:+.1f}% (band +-{BAND * 100:.0f}%): {verdict}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
