"""Issue 44, session 41: the eager regimes whose bands were measured on an earlier model re-measured with today's model,
by a registered 1-2 x H200 set (calibration/h200x2-eager-today-2026-11-30).

    python validation/eager_today.py --register calibration/BUNDLE/registered.yaml   # before the device call
    python validation/eager_today.py [calibration/BUNDLE]                            # after: read-out and verdicts

Since session 41 an answer says when its band was measured on an earlier model (simcluster/trust/moved.py; flagged at
2%: single, single+compile, single+ckpt-every2, single+sac-op, single+host-bound, PP). ROWS: `simcluster.runner.llm_step`
on (preset, seq, micro-batch) shapes new to calibration/ (no bundle holds their seq): single (3 GPU-bound, 1 that the
model calls host-bound: single+host-bound), single + torch.compile per block (2), full checkpointing every 2 blocks (1),
torchtitan's op-level selective checkpointing (1, two processes), a 2-stage 1F1B pipeline over 2 ranks, 4 micro-batches
(2). Registered per row (heldout/eager_today.predict, the model as it shipped at
main b540476b, simcluster/llm untouched since): the step (ms), host share and host-bound flag, and the row's regime as
trust/regime.llm_regime names it (the host-bound flag included). Host fits: the shipped ones, no fitting here (one GPU:
heldout/eager_registered.FLAG_HOSTS; the pipeline: heldout/eager.MODE_HOST, llm/host_bound.DEFAULT_HOST).

Measured per row: the mean over its processes of rank 0's median step (heldout/eager_today.read_rows: a process that
did not run the registered configuration is left out).
RULE (fixed at registration, in registered.yaml), per regime: error = predicted / measured - 1; the mean |error| over
the regime's rows within the regime's current half-width: half the width of its 80% band as docs/accuracy.md prints it
at b540476b (half_width_pct; recorded per row in registered.yaml) -> "band re-measured: HOLDS", else "band re-measured: MISSES". No fitting after. A
regime missing a registered row: INCOMPLETE (its rows still reported and still taken into the band).
"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from simcluster.errors import SimclusterError  # noqa: E402
from simcluster.heldout.eager_today import PP_MODES, predict, read_rows, registered  # noqa: E402
from simcluster.heldout.registration import read_run_set, registering_commit, set_main, write_registration  # noqa: E402

BUNDLE = ROOT / "calibration" / "h200x2-eager-today-2026-11-30"
# (name, mode, preset, seq, micro_batch, compile, ac_mode, processes): names are device_run.sh's stems (NAME-rK.json);
# every seq appears in no calibration/ bundle (grep at registration)
ROWS = (
    ("single-0.5b", "single", "0.5b", 2816, 4, False, "none", 1),
    ("single-1.1b", "single", "1.1b", 1920, 2, False, "none", 1),
    ("single-0.8b", "single", "0.8b", 3328, 4, False, "none", 1),
    ("hostbound-0.8b", "single", "0.8b", 3328, 1, False, "none", 1),   # registered host-bound: single+host-bound
    ("compile-0.3b", "single", "0.3b", 3584, 4, True, "none", 1),
    ("compile-1b", "single", "1b", 1664, 2, True, "none", 1),
    ("every2-0.8b", "single", "0.8b", 2944, 2, False, "every:2", 1),
    ("op-2b", "single", "2b", 1408, 8, False, "op", 2),   # op's launch-to-launch spread (compile2): two processes
    ("pp-0.8b", "pp-1f1b", "0.8b", 1152, 4, False, "none", 1),
    ("pp-2b", "pp-1f1b", "2b", 1792, 1, False, "none", 1),
)
MICROBATCHES = 4   # the pipeline rows' micro-batches a step (llm-step --microbatches)
ACCURACY = ROOT / "docs" / "accuracy.md"


def half_width_pct(regime: str, accuracy: Path = ACCURACY) -> float:
    """The half-width (%) of the regime's 80% band as docs/accuracy.md's per-regime table prints it (its "80% band
    (time)" column, lo%..hi%: (hi - lo) / 2): the rule's threshold, read once at registration. A regime without a row
    there: one SimclusterError line naming the file."""
    import re

    cells = regime.split(" | ")
    for line in accuracy.read_text().splitlines():
        parts = [c.strip() for c in line.strip().strip("|").split("|")]
        if parts[:len(cells)] == cells:
            band = next((c for c in parts if re.fullmatch(r"[+-]?[0-9.]+%\.\.[+-]?[0-9.]+%", c)), None)
            if band:
                lo, hi = (float(x.rstrip("%")) for x in band.split(".."))
                return round((hi - lo) / 2, 2)
    raise SimclusterError(f"{accuracy}: no per-regime row with an 80% band for {regime!r}")


def regime_of(mode: str, compiled: bool, ac_mode: str, host_bound: bool) -> str:
    """The row's regime key as trust names it (trust/regime.llm_regime, eager_checkpointing)."""
    from simcluster.llm import eager_ac
    from simcluster.trust.regime import eager_checkpointing, llm_regime

    par = eager_ac.parallel_of(ac_mode)
    pp = mode in PP_MODES
    framework = "torch-compile" if compiled else "torch-amp"
    return llm_regime(framework, 1, 2 if pp else 1, 1, 0, False, "bf16", 2 if pp else 1,
                      eager_checkpointing(par.recompute, par.recompute_every, framework), host_bound).key


def short(regime: str) -> str:
    return regime.split(" | ")[2]


def registration_rows() -> list[dict]:
    rows = []
    for name, mode, preset, seq, mb, compiled, ac_mode, processes in ROWS:
        m = MICROBATCHES if mode in PP_MODES else 1
        pred = predict(preset, seq, mb, mode, compiled, ac_mode, m)
        regime = regime_of(mode, compiled, ac_mode, pred["host_bound"])
        rows.append({"name": name, "regime": regime, "mode": mode, "preset": preset, "seq": seq, "micro_batch": mb,
                     "compile": compiled, "ac_mode": ac_mode, "microbatches": m, "processes": processes,
                     "half_width_pct": half_width_pct(regime), "predicted": {"today": pred}})
    return rows


def register(path: Path) -> None:
    """registered.yaml: each row's prediction, regime and threshold, and the rule."""
    commit = registering_commit(ROOT)
    rows = registration_rows()
    doc = {"registered_at_commit": commit, "script": "validation/eager_today.py --register",
           "calibration": {"gpu_card": "models/gpu/h200-sxm-interleaved.yaml",
                           "collective_card": "models/collective/h200x2-primitives.yaml (the pipeline's sends)",
                           "host": {"single": "calibration/h200x1-llm-diag-2026-11-29/host (single, ckpt, op) and "
                                              "calibration/h200x1-llm-compile-2026-11-29/host (compile): "
                                              "heldout/eager_registered.FLAG_HOSTS",
                                    "h200": "calibration/h200x2-llm-host-2026-11-23"}},
           "rules": {"R": "per regime: error = predicted / measured - 1; mean |error| over the regime's rows <= the "
                          "row's half_width_pct (half the width of the regime's 80% band, docs/accuracy.md at b540476b: "
                          "(hi - lo) / 2 of its '80% band (time)') -> 'band re-measured: HOLDS', else 'band re-measured: "
                          "MISSES'; no fitting after",
                     "measured": "mean over a row's processes of rank 0's median step",
                     "incomplete": "a regime missing a registered row: INCOMPLETE (rows still reported)"},
           "rows": rows}
    write_registration(path, "# Predictions registered before the runs (issue 44, session 41); never edited after them.\n"
                       + yaml.safe_dump(doc, sort_keys=False, width=120))
    for r in rows:
        print(f"{r['name']:14} {short(r['regime']):20} {r['predicted']['today']['step_ms']:9.2f} ms  "
              f"host share {r['predicted']['today']['host_share']}")
    print(f"registered {len(rows)} rows in {path} (model at {commit[:10]})")


def read_out(bundle: Path) -> dict:
    """Each row's error and each regime's verdict."""
    read_run_set(bundle)   # registered.yaml and runs/ present
    rows, dropped = read_rows(bundle)
    want = {}
    for reg in registered(bundle):   # each row's regime and half_width_pct checked (one line naming the file)
        want.setdefault(reg["regime"], []).append(reg)
    verdicts = {}
    for regime, regs in want.items():
        got = [r for r in rows if r["regime"] == regime]
        errors = [r["predicted_s"] / r["measured_s"] - 1 for r in got]
        width = float(regs[0]["half_width_pct"])
        if not got:
            verdicts[regime] = f"NO ROWS: 0 of {len(regs)} ran"
            continue
        mean = statistics.mean(abs(e) for e in errors) * 100
        text = (f"band re-measured: {'HOLDS' if mean <= width else 'MISSES'} (mean |error| {mean:.1f}% over "
                f"{len(got)}, half-width {width:.2f}%)")
        verdicts[regime] = text if len(got) == len(regs) else f"INCOMPLETE: {len(got)} of {len(regs)} rows; {text}"
    return {"rows": rows, "dropped": dropped, "verdicts": verdicts}


def show(result: dict) -> None:
    for r in result["rows"]:
        print(f"{r['label']:48} measured {r['measured_s'] * 1e3:9.2f} ms ({r['processes']} proc)  registered "
              f"{r['predicted_s'] * 1e3:9.2f} ms  error {r['predicted_s'] / r['measured_s'] - 1:+.1%}")
    for line in result["dropped"]:
        print(f"left out: {line}")
    for regime, text in result["verdicts"].items():
        print(f"{short(regime)}: {text}")


def main(argv: list[str]) -> int:
    return set_main(argv, __doc__.splitlines()[0], BUNDLE, register, read_out, show)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
