"""Issue 44, session 52 (helper lseq52): whole eager training steps at 23K-57K tokens a sequence on one H200, registered
before the runs. Item 4 of the issue asks for attention time and memory at long sequences validated on measurements;
the lab's one earlier whole-step check there is session 39's cudnnstep set (single / DDP / FSDP2 at 16K-64K, no
checkpointing, one lease). This set (calibration/h200x1-lseq52-2026-12-01, llm-step --mode single on GPU 0, micro-batch 1,
torch's default SDPA) sweeps one preset along the sequence (0.5b at 23552 / 39936 / 57344), runs the 57344 shape again
with every block checkpointed, and adds 1b at 39936 checkpointed (no-checkpointing is predicted over the card's memory)
and 3b at 12288 plain: six rows, two processes each, step time and peak memory against today's model (no model change).

    python validation/lseq52.py --register calibration/BUNDLE/registered.yaml   # before the device call
    python validation/lseq52.py [calibration/BUNDLE]                            # after: read-out and verdicts

Rows are registered in heldout/eager_hostsingle's form (regime, ac_mode, processes, predicted.product: the product's
step with the CLI's default host folder heldout/eager.MODE_HOST, as hb49 / lab1x51's op rows), so the lead lists the
bundle there after the run. Rule C's band (the regime these rows join, as trust/build.eager_residuals keys them) is
read from the committed trust table at registration and stored in registered.yaml, so the read-out does not drift when
the table is rebuilt with these rows in it.
"""

from __future__ import annotations

import math
import re
import statistics
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from simcluster.errors import SimclusterError  # noqa: E402
from simcluster.heldout.registration import (  # noqa: E402
    mem_error,
    memory_verdict,
    noise_verdict,
    print_verdicts,
    read_run_set,
    registering_commit,
    set_main,
    write_registration,
)

BUNDLE = ROOT / "calibration" / "h200x1-lseq52-2026-12-01"
# (name, preset, seq, llm-step --ac-mode); micro-batch 1 everywhere; runs/NAME-rK.json, K = 1..PROCESSES (device_run.sh)
SHAPES = (("s23-0.5b", "0.5b", 23552, "none"), ("s40-0.5b", "0.5b", 39936, "none"), ("s57-0.5b", "0.5b", 57344, "none"),
          ("s57c-0.5b", "0.5b", 57344, "full"), ("s40c-1b", "1b", 39936, "full"), ("s12-3b", "3b", 12288, "none"))
SWEEP = ("s23-0.5b", "s40-0.5b", "s57-0.5b")   # one preset, one mode, along the sequence: rule A's trend
MICRO_BATCH, PROCESSES = 1, 2
JUDGE = {"target_pct": 8.0, "mem_pct": 10.0, "trend_pct_per_doubling": 1.0, "cover_fraction": 0.8, "long_seq": 16384}
RULES = {
    "measured": "each process's median step (llm-step --mode single on GPU 0, --warmup 2 --steps 4 --profile 0, micro-batch "
                "1, torch's default SDPA); a row's measured step the mean of its processes' (heldout/eager_hostsingle's "
                "reader, the error bands' once listed)",
    "N": "pooled sd of the log of each process's median step over the processes of one shape, its dof, and the mean "
         "|error| that process noise alone gives a model exactly on each shape's mean, sqrt(2/pi) sd: ABOVE the target "
         "(target_pct) or below it",
    "A": "error = registered product step / a row's measured step - 1 (+: the model slow); the mean |error| over the rows "
         "that ran <= target_pct -> 'MET', else 'NOT MET'; the trend along the sequence: the least-squares slope b of the "
         "sweep rows' errors (percentage points) on log2(seq) (SWEEP: 0.5b, no checkpointing, 23552 / 39936 / 57344): "
         "GROWS if |b| >= trend_pct_per_doubling and b has the sign of the sweep's mean error (|error| grows with s), "
         "SHRINKS if |b| >= it with the other sign, FLAT otherwise (fewer than 2 sweep rows: NO DATA); the six rows' "
         "signs in sequence order beside it (0: |error| < 0.05%)",
    "P": "every process's peak memory (max_memory_allocated_bytes) within mem_pct of the registered range "
         "[steady_mem_GiB, peak_mem_GiB] (0 inside it) -> 'memory met', else 'memory not met'; each row's error printed",
    "C": "per regime the rows join when wired (trust/build.eager_residuals of heldout/eager_hostsingle's rows: full "
         "checkpointing pooled with none, the host-bound flag from the registered share): the band an answer of that "
         "regime takes today (registered.yaml `borrowed_band`: the trust table committed at registered_at_commit, its 80% "
         "conformal bounds of measured / predicted, its rows, sources and how many of its rows ran at >= long_seq tokens a "
         "sequence, trust/regime.LONG_SEQUENCE); BORROWS the short-sequence band if fewer than half of its rows ran at "
         ">= long_seq, else OWN; the band covers k of n new rows (measured / registered step within the bounds); "
         "'SPLIT PROPOSED' if it BORROWS and covers fewer than cover_fraction of the new rows, else 'NO SPLIT NEEDED "
         "on these rows' (a proposal, not implemented)",
}


def registration_rows() -> list[dict]:
    from simcluster.heldout.eager import MODE_HOST
    from simcluster.llm.host_bound import is_host_bound
    from validation.hostsingle import predict
    from validation.opcheck import trust_regime

    rows = []
    for name, preset, seq, ac in SHAPES:
        p = predict(preset, seq, MICRO_BATCH, ac, MODE_HOST, memory=True)
        flag = is_host_bound(p["host_share"])
        rows.append({"name": name, "regime": trust_regime(ac, flag), "mode": "single", "preset": preset, "seq": seq,
                     "micro_batch": MICRO_BATCH, "compile": False, "ac_mode": ac, "microbatches": 1,
                     "processes": PROCESSES, "predicted": {"product": p | {"host_bound": flag}}})
    return rows


def seq_of(label: str) -> int | None:
    """The sequence length a trust residual's row label names ('... seq 2048 mb 2 ...'), None if none."""
    m = re.search(r"\bseq (\d+)\b", label)
    return int(m.group(1)) if m else None


def table_at(commit: str):
    """The trust table (simcluster/trust/error_bands.json) as committed at `commit` (git show), so that a fresh
    --register at the registering commit reproduces the band whatever the table holds later; one line if unreadable."""
    import json
    import subprocess

    from simcluster.trust.table import TABLE, Table

    rel = TABLE.relative_to(ROOT).as_posix()
    done = subprocess.run(["git", "show", f"{commit}:{rel}"], cwd=ROOT, capture_output=True, text=True)
    try:
        return Table.from_json(json.loads(done.stdout), f"{commit[:10]}:{rel}")
    except ValueError:
        raise SimclusterError(f"{rel} at {commit[:10]}: not readable by git show ({done.stderr.strip()[:120]})") from None


def band_of(regime: str, long_seq: int, table) -> dict:
    """The trust table's band of `regime`: bounds of measured / predicted (trust/table's 80% conformal), rows, sources,
    the rows at >= long_seq tokens a sequence and their sources, the longest sequence its rows name."""
    rr = table.regimes.get(regime)
    if rr is None:
        return {"rows": 0}
    seqs = [seq_of(r.row) for r in rr.rows]
    long_rows = [r for r, s in zip(rr.rows, seqs, strict=True) if s is not None and s >= long_seq]
    lo, hi = rr.bounds()
    return {"rows": len(rr.rows), "sources": len(rr.sources), "bounds": [round(lo, 6), round(hi, 6)],
            "mean_abs_error_pct": round(100 * statistics.mean(abs(r.today_error) for r in rr.rows), 2),
            "max_seq": max((s for s in seqs if s is not None), default=None), "long_rows": len(long_rows),
            "long_sources": sorted({r.source for r in long_rows})}


def register(path: Path) -> None:
    from simcluster.heldout.eager import MODE_HOST
    from validation.opcheck import host_terms

    commit = registering_commit(ROOT)
    rows = registration_rows()
    table = table_at(commit)
    bands = {regime: band_of(regime, int(JUDGE["long_seq"]), table) for regime in dict.fromkeys(r["regime"] for r in rows)}
    doc = {"registered_at_commit": commit, "script": "validation/lseq52.py --register",
           "calibration": {"gpu_card": "models/gpu/h200-sxm-interleaved.yaml", "host": str(MODE_HOST.relative_to(ROOT)),
                           "attention": "framework torch: attention_kernel 'card' (torch 2.11's default SDPA on Hopper: "
                                        "cuDNN's fused attention, llm/attention_kernels.CudnnCard)"},
           "product_host": host_terms(MODE_HOST), "judge": JUDGE, "rules": RULES,
           "borrowed_band": {"source": "simcluster/trust/error_bands.json as committed at registered_at_commit (git show)",
                             "regimes": bands},
           "rows": rows}
    write_registration(path, "# Predictions registered before the runs (issue 44, session 52); never edited after them.\n"
                       + yaml.safe_dump(doc, sort_keys=False, width=120))
    for r in rows:
        p = r["predicted"]["product"]
        print(f"{r['name']:10} {r['preset']:4} {r['seq']}:{r['micro_batch']} ac {r['ac_mode']:4} {p['step_ms']:9.2f} ms  host "
              f"share {p['host_share']:.4f}  memory {p['steady_mem_GiB']:.2f}..{p['peak_mem_GiB']:.2f} GiB  {r['regime']}")
    for regime, b in bands.items():
        print(f"band today of {regime}: {b}")
    print(f"registered {len(rows)} shapes x {PROCESSES} processes in {path} (model at {commit[:10]})")


def new_rows(bundle: Path) -> list[dict]:
    """This set's held-out rows as the lead's wiring would give them (heldout/eager_hostsingle's reader)."""
    from simcluster.heldout import eager_hostsingle

    return eager_hostsingle.held_out_rows(bundle)


def slope(points: list[tuple[float, float]]) -> float:
    """Least-squares slope of y on x over `points` (two or more distinct x)."""
    mx, my = statistics.mean(x for x, _ in points), statistics.mean(y for _, y in points)
    return sum((x - mx) * (y - my) for x, y in points) / sum((x - mx) ** 2 for x, _ in points)


def rule_a(rows: list[dict], judge: dict) -> str:
    if not rows:
        return "NO DATA: no row ran"
    mean = statistics.mean(abs(r["error"]) for r in rows)
    word = "MET" if mean <= judge["target_pct"] / 100 else "NOT MET"
    sweep = sorted((r for r in rows if r["name"] in SWEEP), key=lambda r: r["seq"])
    if len(sweep) < 2:
        trend = f"trend NO DATA ({len(sweep)} sweep rows ran)"
    else:
        b = slope([(math.log2(r["seq"]), 100 * r["error"]) for r in sweep])
        sign = statistics.mean(r["error"] for r in sweep)
        t = ("FLAT" if abs(b) < judge["trend_pct_per_doubling"] else "GROWS" if (b > 0) == (sign > 0) else "SHRINKS")
        points = ", ".join(f"{r['seq']} {r['error']:+.1%}" for r in sweep)
        trend = (f"along s {t}: sweep 0.5b {points}, slope {b:+.2f} "
                 f"points per doubling (threshold {judge['trend_pct_per_doubling']:.1f})")
    signs = " ".join(f"{r['name']} {'0' if abs(r['error']) < 5e-4 else '+' if r['error'] > 0 else '-'}"
                     for r in sorted(rows, key=lambda r: (r["seq"], r["name"])))
    return (f"{word}: {mean:.1%} mean |error| over {len(rows)} rows (target {judge['target_pct']:.0f}%); {trend}; signs by "
            f"seq: {signs}")


def rule_c(bundle: Path, reg: dict, judge: dict) -> dict[str, str]:
    from simcluster.trust.build import eager_residuals

    out = {}
    try:
        bands = reg["borrowed_band"]["regimes"]
    except (KeyError, TypeError) as exc:
        raise SimclusterError(f"{bundle / 'registered.yaml'}: missing or bad key borrowed_band.regimes ({exc})") from None
    mine = eager_residuals(new_rows(bundle))
    for regime in dict.fromkeys(r.regime for r in mine):
        rs = [r for r in mine if r.regime == regime]
        b = bands.get(regime)
        short = regime.split(" | ")[2]
        if not b or not b.get("rows"):
            out[f"C {short}"] = f"JOINS {regime}: {len(rs)} rows; no band today (the regime has no row): OWN band to be built"
            continue
        lo, hi = map(float, b["bounds"])
        covered = sum(lo <= r.rho <= hi for r in rs)
        borrows = int(b["long_rows"]) < int(b["rows"]) / 2
        split = borrows and covered < judge["cover_fraction"] * len(rs)
        out[f"C {short}"] = (
            f"JOINS {regime}: {len(rs)} rows; {'BORROWS the short-sequence band' if borrows else 'OWN band'} ({b['rows']} "
            f"rows, {b['sources']} sources, {b['long_rows']} at >= {int(judge['long_seq'])} tokens: "
            f"{', '.join(b['long_sources']) or 'none'}; today's mean |error| {float(b['mean_abs_error_pct']):.1f}%); "
            f"band [{lo:.3f}, {hi:.3f}] of measured / predicted covers {covered} of {len(rs)} new rows; "
            + ("SPLIT PROPOSED" if split else "NO SPLIT NEEDED on these rows"))
    return out


def read_out(bundle: Path) -> dict:
    from validation.hostsingle import read_processes

    reg = read_run_set(bundle, {"script": "validation/lseq52.py --register"})
    try:
        judge = {k: float(reg["judge"][k]) for k in JUDGE}
    except (KeyError, TypeError, ValueError) as exc:
        raise SimclusterError(f"{bundle / 'registered.yaml'}: missing or bad key ({type(exc).__name__}: {exc})") from None
    procs, left = read_processes(bundle, reg, ("product",))
    for p in procs:
        pr = p["predicted"]["product"]
        p["error"] = float(pr["step_ms"]) / 1e3 / p["measured_s"] - 1
        p["mem_err"] = None if p["peak_GiB"] is None else mem_error(float(pr["steady_mem_GiB"]), float(pr["peak_mem_GiB"]),
                                                                    p["peak_GiB"])
    rows = []
    for r in reg["rows"]:
        ps = [p for p in procs if p["name"] == r["name"]]
        if ps:
            measured = statistics.mean(p["measured_s"] for p in ps)
            pred = float(r["predicted"]["product"]["step_ms"]) / 1e3
            mems = [p["mem_err"] for p in ps if p["mem_err"] is not None]
            rows.append({"name": r["name"], "preset": r["preset"], "seq": int(r["seq"]), "ac": r["ac_mode"],
                         "procs": [p["measured_s"] for p in ps], "measured_s": measured, "predicted_s": pred,
                         "error": pred / measured - 1, "peaks": [p["peak_GiB"] for p in ps],
                         "mem_err": max(mems, key=abs) if mems else None})
    verdicts = {"N": noise_verdict(procs, judge["target_pct"] / 100)[1], "A": rule_a(rows, judge),
                "P": memory_verdict([p["mem_err"] for p in procs if p["mem_err"] is not None], judge["mem_pct"])}
    verdicts |= rule_c(bundle, reg, judge) if rows else {"C": "NO DATA: no row ran"}
    return {"rows": rows, "left": left, "verdicts": verdicts}


def show(result: dict) -> None:
    for r in result["rows"]:
        peaks = " / ".join("-" if g is None else f"{g:.2f}" for g in r["peaks"])
        mem = "" if r["mem_err"] is None else f" ({r['mem_err']:+.1%})"
        print(f"{r['name']:10} {r['preset']:4} {r['seq']:6}:1 ac {r['ac']:4} processes "
              f"{' / '.join(f'{t * 1e3:.1f}' for t in r['procs'])} ms  predicted {r['predicted_s'] * 1e3:8.1f} ms "
              f"({r['error']:+.1%})  peak {peaks} GiB{mem}")
    print_verdicts(result["verdicts"], result["left"])


def main(argv: list[str]) -> int:
    return set_main(argv, __doc__.splitlines()[0], BUNDLE, register, read_out, show)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
