"""One-GPU selective checkpointing by op (`--ac-mode op`): model or noise? (issue 44, session 42, engineer sacop; not a
test). The set calibration/h200x1-eager-sacop-2026-11-30, registered before its run, in compile2's format (op shapes,
three launches each, validation/llm_compile2.py's prediction and registration); its own decision rule (README).

    python validation/llm_sacop.py --register [PATH]   # today's predictions -> a new registered.json (never overwritten)
    python validation/llm_sacop.py BUNDLE              # the read-out: BUNDLE/runs/<run>-<i>.json

Plan: three op shapes that earlier leases missed in opposite directions, now on ONE lease, three processes each,
interleaved: 3b 2048 x 4 (sac set, error -19.3% today), 0.8b 2048 x 4 and 3b 1024 x 4 (lease3 set, +22.8 / +19.7%).
If their errors agree on one lease, the regime's 10.3% scatter is between leases and processes (noise); if the sign
pattern survives on one lease, a shape-dependent term of the model is wrong (the 3b pair: the sequence scaling).
"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import llm_compile2  # noqa: E402  (compile2's prediction, registration and launch acceptance, reused)

from simcluster.errors import SimclusterError  # noqa: E402
from simcluster.heldout.eager_registered import MIN_LAUNCHES  # noqa: E402
from simcluster.heldout.registration import refuse_existing  # noqa: E402
from simcluster.script_args import check  # noqa: E402

ROOT = llm_compile2.ROOT
SET = ROOT / "calibration/h200x1-eager-sacop-2026-11-30"
# preset, layers (None: the preset's), seq, micro-batch; LONG and SHORT: one preset at two sequence lengths
OP = (("3b", None, 2048, 4), ("0.8b", None, 2048, 4), ("3b", None, 1024, 4))
LONG, SHORT = "op-3b-2048x4", "op-3b-1024x4"
AGREE_PTS, PATTERN_PTS, RATIO_TOL = 10.0, 20.0, 0.10   # the rule's thresholds (README), fixed before the run


def errors(bundle: Path, reg: list[dict]) -> tuple[dict[str, float], dict[str, float], list[str]]:
    """({run: error = registered / median-of-launches - 1}, {run: median ms}, lines to print); a shape with fewer than
    MIN_LAUNCHES accepted launches has no error."""
    errs, mids, lines = {}, {}, []
    for r in reg:
        launches = [s["median_step_s"] * 1e3 for s in llm_compile2.shapes_of(bundle, r)]
        pred = r["predicted_step_ms"]
        spread = f"{100 * (max(launches) / min(launches) - 1):.1f}%" if launches else "-"
        line = (f"{r['run']:16s} launches {' / '.join(f'{x:.1f}' for x in launches) or '-'} ms (spread {spread}), "
                f"registered {pred:.1f} ms")
        if len(launches) >= MIN_LAUNCHES:
            mids[r["run"]] = statistics.median(launches)
            errs[r["run"]] = pred / mids[r["run"]] - 1
            line += f", median {mids[r['run']]:.1f} ms, error {100 * errs[r['run']]:+.1f}%"
        lines.append(line)
    return errs, mids, lines


def verdict(errs: dict[str, float], mids: dict[str, float], reg: list[dict]) -> list[str]:
    """The rule (README): the shapes' error range on one lease decides noise / model; the 3b pair's step ratio the
    sequence scaling."""
    if len(errs) < len(reg):
        return [f"INCOMPLETE: {len(errs)} of {len(reg)} shapes have >= {MIN_LAUNCHES} launches (errors above, no verdict)"]
    pts = 100 * (max(errs.values()) - min(errs.values()))
    mean_abs = 100 * statistics.mean(abs(e) for e in errs.values())
    if pts <= AGREE_PTS:
        call = "NOISE: the shapes agree on one lease; the regime's scatter is between leases / processes"
    elif pts > PATTERN_PTS and errs[LONG] < min(v for k, v in errs.items() if k != LONG):
        call = "MODEL: the earlier sign pattern survives on one lease (3b 2048 x 4 predicted fast against the others)"
    else:
        call = "UNDECIDED: the shapes' errors differ by more than the noise bound but not in the earlier pattern"
    pred = {r["run"]: r["predicted_step_ms"] for r in reg}
    ratio_meas, ratio_pred = mids[LONG] / mids[SHORT], pred[LONG] / pred[SHORT]
    seq = ("sequence scaling WRONG" if abs(ratio_pred / ratio_meas - 1) > RATIO_TOL else "sequence scaling holds")
    return [f"error range {pts:.1f} points over {len(errs)} shapes, mean |error| {mean_abs:.1f}%: {call}",
            f"3b 2048 / 1024 step ratio: measured {ratio_meas:.3f}, registered {ratio_pred:.3f} "
            f"({100 * (ratio_pred / ratio_meas - 1):+.1f}%): {seq}"]


def read(bundle: Path) -> int:
    from simcluster.strict import load_json

    path = bundle / "registered.json" if (bundle / "registered.json").is_file() else SET / "registered.json"
    doc = load_json(path, what="registered sacop predictions")
    reg = doc.get("runs") if isinstance(doc, dict) else None
    if not isinstance(reg, list) or not all(isinstance(r, dict) and {"run", "kind", "predicted_step_ms"} <= r.keys() for r in reg):
        raise SimclusterError("expected runs: a list of {run, kind, preset, layers, seq, micro_batch, predicted_step_ms}",
                              where=f"{path}: runs")
    errs, mids, lines = errors(bundle, reg)
    print("error = registered / measured - 1 (+: the model is slow)")
    print("\n".join(lines + verdict(errs, mids, reg)))
    return 0


def main(argv: list[str]) -> int:
    check(options=("--register",), words=1, usage="BUNDLE | --register [PATH]", argv=argv)
    try:
        if argv[:1] == ["--register"] and len(argv) <= 2:
            llm_compile2.register(refuse_existing(Path(argv[1]) if len(argv) > 1 else SET / "registered.json"), (), OP,
                                  {"set": str(SET.relative_to(ROOT)),
                                   "decision": f"noise if error range <= {AGREE_PTS} points; model if > {PATTERN_PTS} "
                                               f"points with {LONG} lowest; {LONG}/{SHORT} ratio within {RATIO_TOL:.0%}"})
            return 0
        if len(argv) != 1 or not (Path(argv[0]) / "runs").is_dir():
            print("llm_sacop: expected BUNDLE with runs/<run>-<i>.json (runs.tgz, unpacked) or --register [PATH]",
                  file=sys.stderr)
            return 2
        return read(Path(argv[0]))
    except SimclusterError as exc:
        print(f"llm_sacop: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
