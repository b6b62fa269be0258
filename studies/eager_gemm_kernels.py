"""Issue 44 (session 35, engineer gemm): every GEMM kernel of the eager 1-GPU profiled steps against the H200 card (not
a test; nothing fitted). The eager5 / lease2 traces (calibration/h200x1-llm-eager5*-2026-11-29/traces, torch.profiler,
one step each, no checkpointing) carry no input shapes, so each GEMM kernel is matched by position to the runner's
GEMM sequence (simcluster/runner/llm_step.py): forward per layer q, k, v, o, gate, up, down, then the head; backward the
head, then per layer (last first) down, up, gate, o, v, k, q, each MmBackward0 a weight gradient then a data gradient
(cuBLASLt's splitKreduce kernels join the GEMM before them). The match is checked: the kernel count must equal the
sequence's, else the trace is skipped with a line saying so.

    python studies/eager_gemm_kernels.py             # per role: measured, card, error, position in the step
    python studies/eager_gemm_kernels.py --kernels   # per kernel (long)

Shapes: forward (M, N, K) = (tokens, out, in); data gradient (tokens, in, out); weight gradient (out, in, tokens).
"""

from __future__ import annotations

import gzip
import json
import re
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from simcluster.hardware.gpu import load_gpu  # noqa: E402
from simcluster.runner.llm_decoder import PRESETS  # noqa: E402

CARD = ROOT / "models/gpu/h200-sxm-interleaved.yaml"
TRACES = sorted((ROOT / "calibration").glob("h200x1-llm-eager5*-2026-11-29/traces/*.json.gz"))
LAYER = ("q", "k", "v", "o", "gate", "up", "down")
BACK = ("down", "up", "gate", "o", "v", "k", "q")


def linears(cfg: dict) -> dict[str, tuple[int, int]]:
    """(out, in) features of each linear of a layer, and the head."""
    h, d = cfg["hidden"], cfg["hidden"] // cfg["heads"]
    kv = cfg["kv_heads"] * d
    return {"q": (h, h), "k": (kv, h), "v": (kv, h), "o": (h, h), "gate": (cfg["ffn"], h), "up": (cfg["ffn"], h),
            "down": (h, cfg["ffn"]), "head": (cfg["vocab"], h)}


def sequence(cfg: dict, tokens: int) -> list[tuple[str, str, int, tuple[int, int, int]]]:
    """(linear, pass, layer, (M, N, K)) of every GEMM of one eager step, in issue order."""
    lin, out = linears(cfg), []
    for layer in range(cfg["layers"]):
        for name in LAYER:
            o, i = lin[name]
            out.append((name, "fwd", layer, (tokens, o, i)))
    out.append(("head", "fwd", -1, (tokens, *lin["head"])))

    def back(name: str, layer: int) -> None:
        o, i = lin[name]
        out.extend([(name, "wgrad", layer, (o, i, tokens)), (name, "dgrad", layer, (tokens, i, o))])
    back("head", -1)
    for layer in reversed(range(cfg["layers"])):
        for name in BACK:
            back(name, layer)
    return out


def gemm_kernels(path: Path) -> list[tuple[str, float, float]]:
    """(kernel name, start s, duration s) of each GEMM in time order, a splitKreduce added to the GEMM before it."""
    events = json.load(gzip.open(path))["traceEvents"]
    ks = sorted((e for e in events if e.get("cat") == "kernel"), key=lambda e: e["ts"])
    out: list[list] = []
    for e in ks:
        if "splitKreduce" in e["name"]:
            out[-1][2] += e["dur"] * 1e-6
        elif "nvjet" in e["name"] or "gemm" in e["name"].lower() or "cutlass" in e["name"]:
            out.append([e["name"], e["ts"] * 1e-6, e["dur"] * 1e-6])
    return [tuple(x) for x in out]


def matched(path: Path, gpu) -> list[dict] | None:
    preset, seq, mb = re.search(r"eager-([\d.]+b)-(\d+)x(\d+)-", path.name).groups()
    cfg = PRESETS[preset]
    seqs, ks = sequence(cfg, int(seq) * int(mb)), gemm_kernels(path)
    if len(seqs) != len(ks):
        print(f"{path}: {len(ks)} GEMM kernels, the runner's sequence has {len(seqs)}: skipped")
        return None
    t0, t1 = ks[0][1], ks[-1][1]
    return [{"trace": f"{path.parent.parent.name[11:]} {preset} {seq}:{mb}", "linear": s[0], "pass": s[1], "layer": s[2],
             "mnk": s[3], "kernel": k[0], "meas": k[2], "card": gpu.gemm_time_s(*s[3]), "pos": (k[1] - t0) / (t1 - t0)}
            for s, k in zip(seqs, ks, strict=True)]


def main(argv: list[str]) -> int:
    gpu = load_gpu(CARD)[0]
    allrows = []
    for path in TRACES:
        rows = matched(path, gpu)
        if rows is None:
            continue
        allrows += rows
        if "--kernels" in argv:
            for r in rows:
                print(f"{r['trace']:24s} {r['linear']:5s} {r['pass']:5s} {r['layer']:3d} {str(r['mnk']):22s} "
                      f"{1e6 * r['meas']:8.1f} {1e6 * r['card']:8.1f} {100 * (r['meas'] / r['card'] - 1):+6.1f}% {r['kernel']}")
    print("measured / card - 1 per trace and role (median over layers; time-weighted total); negative: faster than the card")
    groups: dict[tuple, list] = {}
    for r in allrows:
        groups.setdefault((r["trace"], r["linear"], r["pass"]), []).append(r)
    trace = None
    for (tr, lin, ps), rs in groups.items():
        if tr != trace:
            trace = tr
            sub = [r for r in allrows if r["trace"] == tr]
            print(f"{tr}: all GEMMs {1e3 * sum(r['meas'] for r in sub):7.2f} ms measured / {1e3 * sum(r['card'] for r in sub):7.2f}"
                  f" card ({100 * (sum(r['meas'] for r in sub) / sum(r['card'] for r in sub) - 1):+5.1f}%)")
        med = statistics.median(r["meas"] for r in rs)
        first = [r["meas"] for r in rs if r["pos"] < 0.2]
        last = [r["meas"] for r in rs if r["pos"] > 0.8]
        drift = f"  first 20% / last 20% of the GEMMs {1e6 * statistics.median(first):7.1f} / {1e6 * statistics.median(last):7.1f} us" \
            if first and last else ""
        print(f"  {lin:5s} {ps:5s} {str(rs[0]['mnk']):22s} n {len(rs):3d} measured {1e6 * med:8.1f} us card "
              f"{1e6 * rs[0]['card']:8.1f} ({100 * (med / rs[0]['card'] - 1):+6.1f}%){drift}  {rs[0]['kernel'][11:45]}")
    return 0


if __name__ == "__main__":
    import study_args  # an unknown argument refused before the study runs
    study_args.check(options=("--kernels",))
    sys.exit(main(sys.argv[1:]))
