"""GEMMs of one published configuration's layer against the GPU card (the open lead on the Nemotron-4 15B rows,
docs/models/llm-findings.md, session 24): is the compute the model prices for them right, and what does splitting a GEMM
into TP chunks (Transformer Engine's ring-exchange overlap) cost? gpu-micro's gemm-shapes section on one H100
(calibration/h100x1-gemm-shapes-2026-11-27), bf16 and fp8, back to back and interleaved, against the plain card
(back to back: the card the published rows use) and the interleaved card. Read-only, nothing fitted.

    python studies/gemm_shapes.py [BUNDLE]            # measured vs card, and each chunked GEMM vs its whole
    python studies/gemm_shapes.py --plan              # the card's times alone (registered before the run)
    python studies/gemm_shapes.py --shapes-arg        # the --gemm-shapes argument the device run passes
"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from simcluster.hardware.gpu import load_gpu  # noqa: E402
from simcluster.script_args import ArgumentParser  # noqa: E402
from simcluster.traces import gpu_micro  # noqa: E402

BUNDLE = ROOT / "calibration" / "h100x1-gemm-shapes-2026-11-27"
CARDS = {"back-to-back": ROOT / "models/gpu/h100-sxm.yaml", "interleaved": ROOT / "models/gpu/h100-sxm-interleaved.yaml"}
T, H, QKV, PROJ, FFN = 16384, 6144, 2048, 1536, 6144    # Nemotron-4 15B at TP 4 (ffn 24576 / 4), micro-batch 4 x 4096
TP = 4
# (role, M, N, K): each layer GEMM forward, data gradient and weight gradient; the ring-exchange chunks (M / tp) of the
# GEMMs TE overlaps with an all_gather (qkv and fc1 forward, out and fc2 data gradient); two GPT-3 175B TP 4 GEMMs for
# contrast (its published rows are within 5%)
SHAPES = ([(f"nem15-{g}-{role}", *shape) for g, n, k in (("qkv", QKV, H), ("out", H, PROJ), ("fc1", FFN, H), ("fc2", H, FFN))
           for role, shape in (("fwd", (T, n, k)), ("dgrad", (T, k, n)), ("wgrad", (n, k, T)))]
          + [("nem15-qkv-fwd-chunk", T // TP, QKV, H), ("nem15-fc1-fwd-chunk", T // TP, FFN, H),
             ("nem15-out-dgrad-chunk", T // TP, PROJ, H), ("nem15-fc2-dgrad-chunk", T // TP, FFN, H),
             ("gpt175-qkv-fwd", 2048, 9216, 12288), ("gpt175-fc1-fwd", 2048, 12288, 12288)])


def unique_shapes() -> list[tuple[str, int, int, int]]:
    seen, out = set(), []
    for role, m, n, k in SHAPES:
        if (m, n, k) not in seen:
            seen.add((m, n, k))
            out.append((role, m, n, k))
    return out


def main(argv: list[str]) -> int:
    ap = ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("bundle", nargs="?", default=str(BUNDLE))
    ap.add_argument("--plan", action="store_true")
    ap.add_argument("--shapes-arg", action="store_true")
    args = ap.parse_args(argv)
    if args.shapes_arg:
        print(",".join(f"{m}:{n}:{k}:{role}" for role, m, n, k in unique_shapes()))
        return 0
    cards = {c: load_gpu(p)[0] for c, p in CARDS.items()}
    if args.plan:
        print(f"{'role':<24} {'M':>6} {'N':>6} {'K':>6} " + " ".join(f"{c + ' ' + d:>22}" for c in cards for d in ("bf16", "fp8")))
        for role, m, n, k in unique_shapes():
            print(f"{role:<24} {m:>6} {n:>6} {k:>6} " + " ".join(f"{cards[c].gemm_time_s(m, n, k, dtype=d) * 1e3:>19.3f} ms"
                                                               for c in cards for d in ("bf16", "fp8")))
        return 0
    path = Path(args.bundle) / "gpu-micro" / "gpu-micro" / "stdout.txt"
    try:
        trace = gpu_micro.parse(path)
    except Exception as exc:  # noqa: BLE001 - one line, whatever the reader raised
        print(f"error: {path}: {exc}", file=sys.stderr)
        return 1
    roles = {(m, n, k): role for role, m, n, k in unique_shapes()}
    meas = {(s.m, s.n, s.k, s.dtype, s.condition): s.time_s for s in trace.gemm if (s.m, s.n, s.k) in roles}
    print(f"{'role':<24} {'dtype':<5} {'condition':<13} {'meas ms':>9} {'card ms':>9} {'err %':>7}")
    errs: dict[tuple[str, str], list[float]] = {}
    for (m, n, k, dtype, cond), t in sorted(meas.items(), key=lambda kv: (kv[0][4], kv[0][3], roles[kv[0][:3]])):
        pred = cards[cond].gemm_time_s(m, n, k, dtype=dtype)
        e = (pred / t - 1) * 100
        if not roles[(m, n, k)].endswith("chunk"):
            errs.setdefault((dtype, cond), []).append(e)
        print(f"{roles[(m, n, k)]:<24} {dtype:<5} {cond:<13} {t * 1e3:>9.3f} {pred * 1e3:>9.3f} {e:>+7.1f}")
    for (dtype, cond), e in sorted(errs.items()):
        print(f"{dtype} {cond}: Nemotron / GPT-3 layer GEMMs, card mean error {statistics.mean(e):+.1f}%, "
              f"mean |error| {statistics.mean(abs(x) for x in e):.1f}% over {len(e)}")
    print("chunked (TP ring exchange): tp chunks of M / tp against the whole GEMM, measured")
    for role, m, n, k in unique_shapes():
        if role.endswith("chunk"):
            for dtype in ("bf16", "fp8"):
                for cond in CARDS:
                    whole, part = meas.get((m * TP, n, k, dtype, cond)), meas.get((m, n, k, dtype, cond))
                    if whole and part:
                        print(f"  {role:<24} {dtype:<5} {cond:<13} {TP} x {part * 1e3:.3f} = {TP * part * 1e3:.3f} ms "
                              f"against {whole * 1e3:.3f} ms ({(TP * part / whole - 1) * 100:+.1f}%)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
