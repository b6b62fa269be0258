"""Issue 44, session 39: the eager pipeline's hosts running ahead (a candidate, not adopted) and the host-bound flag
(llm/host_bound.py), checked by a registered 2 x H200 set (calibration/h200x2-eager-pphost-2026-11-29).

    python validation/eager_pp_host.py calibration/BUNDLE                              # the read-out and verdicts
    python validation/eager_pp_host.py --register PATH   # refused: the set has run, its registration is frozen

ROWS: 2-stage pipelines (1F1B and GPipe, 4 micro-batches) at one host-bound and one GPU-bound shape, and single / DDP /
FSDP2 rows on both sides of the host-bound flag, each (preset, tokens) new to calibration/; each row run in PROCESSES
separate processes (round-robin, device_run.sh). Registered per row (at 152d3112, before the runs): "today", the
candidate of 152d3112 (each stage's host issuing its tasks without waiting for a peer, steps free-running), with the
product host fits, its host share and flag; and "old", main a3c27932's arithmetic (the hosts waiting for their GPUs, one
iteration from t = 0). The candidate failed A2 and was taken back out (session 39): the product computes "old" again.
The device call also ran this lease's hidden-128 single-mode host runs (runs/host/): the variant "own" is a model with
eager.fit_modes(runs/host)'s single fit. This tree computes only the product's own-fit column ("own old"); the
candidate's own-fit column ("own today") is in the bundle README's Result, reproduced at commit 8cebb7bc.

Measured per row: the mean over its processes of rank 0's median step (ms); spread = max / min - 1 of those medians.
RULES (fixed at registration, in registered.yaml):
  A1 GPU-bound pipeline rows (flag false): today's model's mean |error| <= 8%.
  A2 host-bound pipeline rows (flag true), the own-fit variant: on every such row |error| <= the row's spread and
     < the old model's |error| with the same fit.   A3 (reported, not judged): the same rows with the product fits.
  B  the flag: the median spread of the rows flagged host-bound >= 3 x the median spread of the rows flagged GPU-bound,
     and >= 2%.
A verdict line per rule: MET / NOT MET; a rule with no row to judge says so (A2 without the candidate's own-fit column).
Printed: the registered `today` as "candidate" (its flag / share "c.flag" / "c.share", rule B's registered flag) and
`old` under heldout/eager_pphost.SHIPPED's name (the product's model).
"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from simcluster.errors import SimclusterError  # noqa: E402
from simcluster.heldout.eager_pphost import CANDIDATE, SHIPPED, process_medians  # noqa: E402
from simcluster.heldout.registration import read_run_set, set_main  # noqa: E402

BUNDLE = ROOT / "calibration" / "h200x2-eager-pphost-2026-11-29"
# (name, mode, preset, seq, micro-batch, micro-batches, processes): names are device_run.sh's file stems (NAME-rK.json)
ROWS = (
    ("pp-1f1b-1.1b", "pp-1f1b", "1.1b", 1280, 1, 4, 3),
    ("pp-gpipe-1.1b", "pp-gpipe", "1.1b", 1280, 1, 4, 2),
    ("pp-1f1b-2b", "pp-1f1b", "2b", 1280, 2, 4, 2),
    ("pp-gpipe-2b", "pp-gpipe", "2b", 1280, 2, 4, 2),
    ("single-1.1b", "single", "1.1b", 768, 1, 1, 2),
    ("single-0.8b", "single", "0.8b", 2560, 2, 1, 2),
    ("ddp-0.3b", "ddp", "0.3b", 1536, 1, 1, 2),
    ("fsdp-2b", "fsdp", "2b", 2560, 2, 1, 2),
)
TARGET_GPU_BOUND_PCT = 8.0     # A1
SPREAD_RATIO = 3.0             # B
SPREAD_FLOOR_PCT = 2.0         # B
HOST_LAYERS = (2, 8, 32)       # the hidden-128 single-mode host runs (runs/host/single-L<n>.json)


def predict(row: tuple, own_host: Path | None = None) -> dict:
    """One row's prediction on H200 by the product's model (product host fits, or `own_host`'s): step_ms, host_share,
    host_bound."""
    from simcluster.heldout.eager_regimes import regime_predict
    from simcluster.llm.host_bound import is_host_bound

    _, mode, preset, seq, mb, m, _ = row
    r = regime_predict(preset, mb, mode, "h200", own_host, m if m > 1 else None, seq)
    return {"step_ms": r["step_ms"], "host_share": r["host_share"], "host_bound": is_host_bound(r["host_share"]),
            "breakdown_ms": r["breakdown_ms"]}


def register(path: Path) -> None:
    """Frozen: the set was registered at 152d3112 and has run (runs/ in the bundle); its registered.yaml is the record.
    A new set registers through its own script (this one's `today` was the candidate, `SHIPPED` the product's model)."""
    raise SimclusterError(f"{BUNDLE.relative_to(ROOT)} was registered at 152d3112 and has run: its registration is "
                          f"frozen (not written to {path}); register a new set with its own script")


def read_out(bundle: Path, own: dict[str, dict] | None = None) -> dict:
    """Every row's measurement and errors and the rules' verdicts. `own`: name -> the own-fit predictions
    {SHIPPED[, CANDIDATE]} (None: computed from the bundle's runs/host, the product's model only: {SHIPPED})."""
    rows = read_run_set(bundle)["rows"]
    if own is None:
        own = own_fit_predictions(bundle, rows)
    out = []
    for i, r in enumerate(rows):
        meds = process_medians(bundle, r)
        mean = statistics.mean(meds)
        try:
            cand, shipped = r["predicted"][CANDIDATE], r["predicted"][SHIPPED]
        except (KeyError, TypeError) as exc:
            raise SimclusterError(f"{bundle / 'registered.yaml'}: rows[{i}]: no predicted.{CANDIDATE} and "
                                  f"predicted.{SHIPPED} ({type(exc).__name__}: {exc})") from None
        # the flag and share are the candidate's registered ones (rule B as registered; the same flag under SHIPPED)
        line = {"name": r["name"], "mode": r["mode"], "medians": meds, "mean": mean, "spread": max(meds) / min(meds) - 1,
                "flag": bool(cand["host_bound"]), "share": cand["host_share"],
                "err_today": cand["step_ms"] / mean - 1, "err_old": shipped["step_ms"] / mean - 1}
        for key in own.get(r["name"], {}):   # SHIPPED: the product's model; CANDIDATE: the candidate's (given only by a caller)
            line[f"err_own_{key}"] = own[r["name"]][key] / mean - 1
        out.append(line)
    return {"rows": out, "verdicts": verdicts(out)}


def own_fit_predictions(bundle: Path, rows: list[dict]) -> dict[str, dict]:
    """The own-fit variant of every pipeline and single row from runs/host: {"old": the product's step, ms} (the product
    computes main a3c27932's arithmetic, the registered "old"; the candidate's "today" is no longer in the tree)."""
    host = bundle / "runs" / "host"
    from simcluster.llm import eager

    try:
        fits = eager.fit_modes(host)
    except (OSError, ValueError) as exc:
        raise SimclusterError(f"{host}: the host runs do not fit ({exc})") from None
    if "single" not in fits:
        raise SimclusterError(f"{host}: no single-L<n>.json runs at two or more layer counts: no own-fit variant")
    out = {}
    for r in rows:
        if r["mode"].startswith("pp") or r["mode"] == "single":
            row = (r["name"], r["mode"], r["preset"], r["seq"], r["micro_batch"], r["microbatches"], r["processes"])
            out[r["name"]] = {SHIPPED: predict(row, host)["step_ms"]}
    return out


def verdicts(rows: list[dict]) -> dict[str, str]:
    pp_gpu = [r for r in rows if r["mode"].startswith("pp") and not r["flag"]]
    pp_host = [r for r in rows if r["mode"].startswith("pp") and r["flag"]]
    out = {}
    if pp_gpu:
        mean = 100 * statistics.mean(abs(r["err_today"]) for r in pp_gpu)
        out["A1"] = f"{'MET' if mean <= TARGET_GPU_BOUND_PCT else 'NOT MET'}: mean |error| {mean:.1f}% over {len(pp_gpu)} rows"
    else:
        out["A1"] = "no GPU-bound pipeline row"
    judged = [r for r in pp_host if "err_own_today" in r and "err_own_old" in r]
    if judged:
        ok = all(abs(r["err_own_today"]) <= r["spread"] and abs(r["err_own_today"]) < abs(r["err_own_old"]) for r in judged)
        out["A2"] = (f"{'MET' if ok else 'NOT MET'}: " + "; ".join(
            f"{r['name']} {r['err_own_today']:+.1%} (old {r['err_own_old']:+.1%}, spread {r['spread']:.1%})" for r in judged))
    elif pp_host:
        out["A2"] = (f"not judged here: {len(pp_host)} host-bound pipeline rows, but the candidate's own-fit column is not "
                     "in this tree (README's Result, reproduced at commit 8cebb7bc)")
    else:
        out["A2"] = "no host-bound pipeline row"
    hb = [r["spread"] for r in rows if r["flag"]]
    gb = [r["spread"] for r in rows if not r["flag"]]
    if hb and gb:
        h, g = statistics.median(hb), statistics.median(gb)
        ok = h >= SPREAD_RATIO * g and h >= SPREAD_FLOOR_PCT / 100
        out["B"] = f"{'MET' if ok else 'NOT MET'}: median spread host-bound {h:.1%} ({len(hb)} rows), GPU-bound {g:.1%} ({len(gb)} rows)"
    else:
        out["B"] = "the flag put every row on one side: nothing to compare"
    return out


def show(result: dict) -> None:
    print(f"{'row':16} {'c.flag':>6} {'c.share':>7} {'process medians (ms)':>28} {'spread':>7} {'candidate':>9} {SHIPPED:>7} "
          f"{'own cand':>8} {'own ' + SHIPPED:>8}")
    for r in result["rows"]:
        own = " ".join(f"{r[k]:+{w}.1%}" if k in r else f"{'-':>{w}}" for k, w in (("err_own_today", 8), ("err_own_old", 8)))
        print(f"{r['name']:16} {'host' if r['flag'] else 'gpu':>6} {r['share']:7.2f} {' / '.join(f'{x:.1f}' for x in r['medians']):>28} "
              f"{r['spread']:7.1%} {r['err_today']:+9.1%} {r['err_old']:+7.1%} {own}")
    print(f"candidate: the registered `{CANDIDATE}` (session 39's candidate, not adopted; c.flag / c.share its registered "
          f"host-bound flag and share, the same flag as `{SHIPPED}`'s); {SHIPPED}: the registered prediction, main a3c27932's "
          "arithmetic, within 0.8% of the shipped model on these rows (tests/test_eager_pphost_set.py); own cand: the "
          "candidate's own-fit column is in the bundle README's Result (reproduced at commit "
          f"8cebb7bc); own {SHIPPED} = the product's model with this lease's host fit")
    for rule, text in result["verdicts"].items():
        print(f"{rule}: {text}")


def main(argv: list[str]) -> int:
    return set_main(argv, __doc__.splitlines()[0], BUNDLE, register, read_out, show)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
