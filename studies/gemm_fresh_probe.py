"""A fresh GEMM set for session 37's refit of the interleaved H200 card (issue 44; registered, cold read B).

gemmk's refit (a fixed time per call, the output write per wave, k_ramp 0) was judged on the card's held-out GEMMs and on
two device bundles, all of which had been read before the form was chosen: no untouched check was left. These 18 GEMMs
are new to every set the project holds (the cards' fit and held-out sets, eager-gemms, the timing probe): the
forward, data-gradient and weight-gradient products of linears with widths no earlier set used (2304, 6144, 384, 3072,
1792, 4864) at 3072-12288 tokens (18 distinct shapes), timed as the card's fit data were (gpu-micro's `torch.matmul` of randn bf16
operands, interleaved with copies: studies/eager_gemm_device.run's `nn` variant), back-to-back times kept too.

    python studies/gemm_fresh_probe.py --register REGISTERED.json   # here, before the run: both cards' times
    python studies/gemm_fresh_probe.py OUT.json                      # on the device (torch only)
    python studies/gemm_fresh_probe.py --read OUT.json REGISTERED.json
Rule (fixed with the registration): over the 18 interleaved times, H-fresh is met if the refit card's mean |error| is at
least 1 point under the session-36 card's, not met if it is above it, undecided between; the back-to-back times are
reported against both cards (the refit charges its per-call time to every call; cold read B's finding 5), not judged.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "studies"))

import eager_gemm_device as device  # noqa: E402 (studies/ on the path)

FRESH = [("fresh", 3072, "gate", 6144, 2304), ("fresh", 4608, "down", 2304, 6144), ("fresh", 12288, "k", 384, 2304),
         ("fresh", 12288, "qkv", 3072, 2304), ("0.8b-like", 6144, "gate", 4864, 1792), ("0.8b-like", 10240, "down", 1792, 4864)]
CARD = "models/gpu/h200-sxm-interleaved.yaml"
BEFORE = "adb80c28"   # main before session 37's refit (the session-36 card)


def cards() -> dict:
    """{'session36': GpuParams, 'refit': GpuParams} of the interleaved H200 card."""
    import yaml

    from simcluster.hardware.gpu import gpu_params, load_gpu

    old_text = subprocess.run(["git", "show", f"{BEFORE}:{CARD}"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    return {"session36": gpu_params(yaml.safe_load(old_text), f"{BEFORE}:{CARD}"), "refit": load_gpu(ROOT / CARD)[0]}


def planned() -> list[tuple[str, str, str, tuple[int, int, int]]]:
    return [(p, lin, ps, device.mnk(tokens, out, inp, ps)) for p, tokens, lin, out, inp in FRESH for ps in device.PASSES]


def register(path: str) -> int:
    gpus = cards()
    rows = [{"preset": p, "linear": lin, "pass": ps, "mnk": list(mnk),
             **{f"{name}_s": gpu.gemm_time_s(*mnk, "bf16") for name, gpu in gpus.items()}} for p, lin, ps, mnk in planned()]
    Path(path).write_text(json.dumps({"card": CARD, "session36_card_at": BEFORE, "rows": rows}, indent=1) + "\n")
    print(f"registered {len(rows)} GEMMs in {path}")
    return 0


def read(out_path: str, reg_path: str) -> int:
    try:
        measured = {(r["preset"], r["linear"], r["pass"]): r for r in json.loads(Path(out_path).read_text())["records"]}
        registered = json.loads(Path(reg_path).read_text())["rows"]
        keys = [(r["preset"], r["linear"], r["pass"]) for r in registered]
        bad = [k for k, r in measured.items() if not (r.get("time_s", 0) > 0 and r.get("b2b_s", 0) > 0)]
        bad += [(r["preset"], r["linear"], r["pass"]) for r in registered if not (r["session36_s"] > 0 and r["refit_s"] > 0)]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        print(f"{out_path} / {reg_path}: not this probe's documents ({type(exc).__name__}: {exc})", file=sys.stderr)
        return 1
    if keys != [(p, lin, ps) for p, lin, ps, _ in planned()]:
        print(f"{reg_path}: its rows are not the 18 planned GEMMs (planned()): no verdict", file=sys.stderr)
        return 1
    if bad:
        print(f"{out_path} / {reg_path}: a time missing or not > 0 at {bad[0]}: no verdict", file=sys.stderr)
        return 1
    errs = {"session36": [], "refit": []}
    b2b = {"session36": [], "refit": []}
    print(f"{'GEMM':>24} {'m x n x k':>20} {'interleaved us':>14} {'s36 card':>9} {'refit':>8} | {'b2b us':>7} {'s36':>7} {'refit':>7}")
    for r in registered:
        key = (r["preset"], r["linear"], r["pass"])
        if key not in measured:
            print(f"{key}: not measured (the run stopped before it): no verdict", file=sys.stderr)
            return 1
        m = measured[key]
        row = []
        for name in errs:
            errs[name].append(r[f"{name}_s"] / m["time_s"] - 1)
            b2b[name].append(r[f"{name}_s"] / m["b2b_s"] - 1)
            row.append((errs[name][-1], b2b[name][-1]))
        mnk = "x".join(str(v) for v in r["mnk"])
        print(f"{' '.join(key):>24} {mnk:>20} {m['time_s'] * 1e6:14.1f} {row[0][0]:+9.1%} {row[1][0]:+8.1%} | "
              f"{m['b2b_s'] * 1e6:7.1f} {row[0][1]:+7.1%} {row[1][1]:+7.1%}")
    old, new = (statistics.mean(abs(e) for e in errs[n]) * 100 for n in ("session36", "refit"))
    verdict = "met" if new <= old - 1 else "NOT met" if new > old else "undecided"
    print(f"\ninterleaved (+ = card slower): session-36 card mean |error| {old:.1f}%, refit {new:.1f}%: H-fresh {verdict}")
    print("back-to-back (reported, not judged): session-36 card "
          f"{statistics.mean(abs(e) for e in b2b['session36']) * 100:.1f}%, refit {statistics.mean(abs(e) for e in b2b['refit']) * 100:.1f}%")
    return 0


def main(argv: list[str]) -> int:
    if argv[:1] == ["--register"] and len(argv) == 2:
        return register(argv[1])
    if argv[:1] == ["--read"] and len(argv) == 3:
        return read(argv[1], argv[2])
    if len(argv) == 1 and not argv[0].startswith("-"):
        return device.run(argv[0], shapes=FRESH, variants=("nn",))
    print(__doc__)
    return 2


if __name__ == "__main__":
    import study_args  # an unknown argument refused before the study runs
    study_args.check(options=("--register", "--read"), words=2, usage="OUT.json | --register REGISTERED.json | --read OUT.json REGISTERED.json")
    sys.exit(main(sys.argv[1:]))
