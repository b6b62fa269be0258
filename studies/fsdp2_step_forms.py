"""Every FSDP2 (and tp+fsdp) llm-step shape under calibration/ against the step model kept (FSDP2's residual stream at
TORCH_AMP's 4 B, autocast's input casts, the generic eager copies) and the candidate eager.bf16_step (issue 44, session
40 fsdp2time; llm-findings.md): measured rank-0 median step, each form's error, the candidate's move. Development
reading, every row: the candidates were weighed on these rows, and the rows of registered sets (column `set`: R, a
bundle with a registered.yaml) are today's re-prediction, not the set's registered one (that judged an earlier model;
its reading is in the set's README). Profiled runs (`*-trace-*` files: the profiler slows their steps) are skipped.
Both forms take the product's host fits (calibration/h200x2-llm-host-2026-11-23), each refitted with its own kernel
count, as adoption would ship them; the 2-rank NVLink card for every group, as heldout/eager_regimes.regime_predict.

    python studies/fsdp2_step_forms.py   # the summary counts rows the kept model calls GPU-bound (host share < 0.5),
                                         # all of them and split by registered sets (R) / other bundles
"""

from __future__ import annotations

import json
import statistics
import sys
from contextlib import nullcontext
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "studies"))

from simcluster.cards import load_collective  # noqa: E402
from simcluster.hardware.gpu import load_gpu  # noqa: E402
from simcluster.heldout.eager import CARDS, H200, MODE_HOST, model_of  # noqa: E402
from simcluster.heldout.eager_regimes import layout_of  # noqa: E402
from simcluster.llm import eager  # noqa: E402
from simcluster.llm.comm import Network  # noqa: E402
from simcluster.llm.predict import predict_llm  # noqa: E402
from simcluster.llm.spec import BatchSpec  # noqa: E402
from simcluster.runner.llm_step import PRESETS  # noqa: E402

MODES = ("fsdp", "tp+fsdp")


def frameworks():
    """{form: (torch_framework for a ParallelSpec, its host fits)} for 'kept', 'candidate' (eager.bf16_step) and
    'copies' (candidate 2, eager.fsdp2_copy_step: FSDP2's own copy kernels priced too)."""
    out = {"kept": (eager.torch_framework, eager.fit_modes(MODE_HOST))}
    for form, wrap in (("candidate", eager.bf16_step), ("copies", eager.fsdp2_copy_step)):
        with eager.torch_framework_as(wrap):   # the fits read the form's kernels
            out[form] = (eager.torch_framework, eager.fit_modes(MODE_HOST))
    return out


def is_profiled_run(path: Path) -> bool:
    """A profiled process's run file: '-trace-' in its name (fsdpstep's fsdp-0.8b-trace-r1), a name starting 'trace-' or
    a file under a trace-call/ folder (fsdpnoise's second call)."""
    return "-trace-" in path.name or path.name.startswith("trace-") or "trace-call" in path.parts


def rows() -> list[dict]:
    gpu, _ = load_gpu(ROOT / H200)
    net_card, _ = load_collective(ROOT / CARDS[("nvlink", 2)])
    forms, out, seen = frameworks(), [], set()
    for path in sorted((ROOT / "calibration").rglob("*.json")):
        if is_profiled_run(path):   # a profiled process (--profile --trace): its steps carry the profiler's cost
            continue
        try:
            doc = json.loads(path.read_text())
        except (json.JSONDecodeError, UnicodeDecodeError):
            continue
        if not isinstance(doc, dict) or doc.get("tool") != "llm-step" or doc.get("mode") not in MODES \
                or "fp32 weights" not in str(doc.get("precision", "")):
            continue
        par, gpus, _ = layout_of(doc["mode"])
        if doc.get("world_size") != gpus:
            continue
        for shape in doc.get("shapes", []):
            if shape.get("status") != "ok":
                continue
            seq, mb, meas = shape["seq"], shape["micro_batch"], shape["median_step_s"] * 1e3
            m = doc["model"]
            preset = m.get("preset") if PRESETS.get(m.get("preset"), {}).get("hidden") == m["hidden"] else f"L{m['layers']}h{m['hidden']}"
            key = (doc["mode"], preset, seq, mb, round(meas, 1))
            if key in seen:
                continue
            seen.add(key)
            model, batch = model_of(doc, seq), BatchSpec(mb * par.dp, mb, "bf16")
            got = {}
            for form, (make, fits) in forms.items():
                r = predict_llm(model, par, batch, gpu, Network(net_card, gpus), gpus, trace=False, framework=make(par, fits))
                got[form] = (r.step_time_s * 1e3, r.host_share)
            bundle = path.relative_to(ROOT / "calibration").parts[0]
            out.append({"bundle": bundle, "registered": (ROOT / "calibration" / bundle / "registered.yaml").is_file(), "mode": doc["mode"], "preset": preset,
                        "seq": seq, "mb": mb, "measured": meas, "kept": got["kept"][0] / meas - 1,
                        "candidate": got["candidate"][0] / meas - 1,
                        "copies": got["copies"][0] / meas - 1, "move2": got["copies"][0] / got["kept"][0] - 1, "move": got["candidate"][0] / got["kept"][0] - 1,
                        "host_share": got["kept"][1] or 0.0})
    return out


PROFILED = (("h200x2-eager-fsdpstep-2026-11-30/runs/traces/fsdp-0.8b-4096x3", "0.8b", 3, 4096),
            ("h200x2-llm-eager-noise-2026-11-29/profiled/fsdp-3b-2048x3", "3b", 3, 2048))


def profiled() -> None:
    """The profiled FSDP2 steps' memory-bound and copy classes (studies/eager_mode_classes), measured per rank against
    each form's (ms)."""
    import eager_mode_classes as classes

    for stem, preset, mb, seq in PROFILED:
        got = []
        for rank in (0, 1):
            path = ROOT / "calibration" / f"{stem}-rank{rank}.json.gz"
            if path.is_file():
                m = classes.measure(classes.load(path))
                got.append(f"rank {rank} {1e3 * m['memory']:.1f} + {1e3 * m['copies']:.1f}")
        forms = []
        for form, wrap in (("kept", None), ("candidate", eager.bf16_step), ("candidate 2", eager.fsdp2_copy_step)):
            with eager.torch_framework_as(wrap) if wrap else nullcontext():
                c = classes.model_classes("fsdp", preset, mb, 1, seq, 0)
            forms.append(f"{form} {1e3 * c['memory']:.1f} + {1e3 * c['copies']:.1f}")
        print(f"{stem.split('/')[-1]}: memory-bound + FSDP2 copies (ms): measured {', '.join(got)}; {', '.join(forms)}")


def summary(mode: str, got: list[dict], label: str) -> None:
    """Mean |error| and mean error of each form over the rows the kept model calls GPU-bound; the moves' ranges."""
    gpu_bound = [r for r in got if r["mode"] == mode and r["host_share"] < 0.5]
    if not gpu_bound:
        return
    k, c, c2 = (100 * statistics.mean(abs(r[f]) for r in gpu_bound) for f in ("kept", "candidate", "copies"))
    ks, cs, c2s = (100 * statistics.mean(r[f] for r in gpu_bound) for f in ("kept", "candidate", "copies"))
    moves, moves2 = [100 * r["move"] for r in gpu_bound], [100 * r["move2"] for r in gpu_bound]
    print(f"{mode}: {len(gpu_bound)} GPU-bound rows{label}: mean |error| kept {k:.1f}% (mean {ks:+.1f}%), candidate {c:.1f}% "
          f"(mean {cs:+.1f}%), candidate 2 {c2:.1f}% (mean {c2s:+.1f}%); moves {min(moves):+.1f}..{max(moves):+.1f}% "
          f"and {min(moves2):+.1f}..{max(moves2):+.1f}%")


def main() -> int:
    got = rows()
    print(f"{'bundle':40} {'set':3} {'mode':8} "
          f"{'preset':9} {'seq':>6} {'mb':>2} {'ms':>8} {'host':>5} {'kept':>7} {'cand':>7} {'move':>7} {'cand2':>7} {'move2':>7}")
    for r in got:
        print(f"{r['bundle'][:40]:40} {'R' if r['registered'] else '-':3} {r['mode']:8} {r['preset']:9} {r['seq']:6} {r['mb']:2} {r['measured']:8.1f} "
              f"{r['host_share']:5.2f} {r['kept']:+7.1%} {r['candidate']:+7.1%} {r['move']:+7.1%} "
              f"{r['copies']:+7.1%} {r['move2']:+7.1%}")
    print("Development, every row (module docstring); R rows: registered sets, today's re-prediction, not the registered one.")
    for mode in MODES:
        summary(mode, got, " (development)")
        summary(mode, [r for r in got if r["registered"]], " of registered sets (R; development here)")
        summary(mode, [r for r in got if not r["registered"]], " of other bundles")
    profiled()
    return 0


if __name__ == "__main__":
    sys.exit(main())
