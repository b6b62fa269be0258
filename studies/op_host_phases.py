"""The op-policy checkpointing host term: which term is next (issue 44, session 45, engineer opsplit; a diagnostic, not
a test, no model input). Everything read here is development for validation/opsplit.py's candidate
(FrameworkSpec.free_phase_host) and its registered set, calibration/h200x2-opsplit-2026-11-30.

It prints
  1. per op / ckpt / single profile (llm-step documents with a profiled step, one GPU, no --compile): profiler CPU ops
     and launched kernels (kernels, memcpys, memsets) per step, and the model's kernels per layer (llm/host.layer_kernels)
     -- does the host work per layer move with shape (per op) or the launches (per kernel)?
  2. per phase: the hidden-128 op / ckpt / single probes of the 2 x H200 leases with thread clocks (runs/host: main
     thread = forward + optimizer, pt_autograd_0 = backward; the L32 run less the L2 run, per layer), and the ophost
     probe's issue times (calibration/h200x1-llm-ophost-2026-11-29: forward / backward per step);
  3. the 12 op processes of the opcheck and hostsingle sets: the measured step, host issue, the main thread's CPU less
     the step's synchronisation (step - issue: the forward's and optimizer's host where the step is host-bound) and the
     autograd thread's, beside the model's forward / backward issue (the product's host folder and the lease's own);
     the product's, the lease's own and the candidate's errors, and a forced forward share of op's host (0.43);
  4. the means of part 3 (mean |error|, mean error) per model.
    python studies/op_host_phases.py
"""

from __future__ import annotations

import json
import statistics
import sys
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

CAL = ROOT / "calibration"
SETS = (("h200x2-opcheck-2026-11-30", (("ophb-0.5b", "0.5b", 1472, 2), ("op-1b", "1b", 2240, 2))),
        ("h200x2-hostsingle-2026-11-30", (("op-1b", "1b", 1856, 4), ("ophb-0.8b", "0.8b", 1216, 2))))
OPHOST = CAL / "h200x1-llm-ophost-2026-11-29" / "runs"
SHARE = 0.43   # part 3's forced forward share of op's per-layer host (the host-bound processes' thread clocks, about)


def profiles() -> None:
    from simcluster.heldout.eager import model_of
    from simcluster.llm import eager_ac, host
    from simcluster.llm.framework import TORCH_AMP
    from simcluster.llm.spec import BatchSpec

    print("1. profiled steps: CPU ops and launched kernels per step (one GPU, no compile), the model's kernels per layer")
    seen = set()
    for path in sorted(CAL.rglob("*.json")):
        try:
            doc = json.loads(path.read_text())
        except (ValueError, UnicodeDecodeError):
            continue
        if not isinstance(doc, dict) or doc.get("tool") != "llm-step" or doc.get("mode") != "single" or doc.get("compile"):
            continue
        ac, m = eager_ac.document_mode(doc), doc["model"]
        for s in doc["shapes"]:
            p = s.get("profile")
            if not p or ac not in ("none", "full", "op"):
                continue
            kernels = int(p["kernel_per_step"] + p["gpu_memcpy_per_step"] + p["gpu_memset_per_step"])
            key = (ac, m["layers"], m["hidden"], s["seq"], s["micro_batch"], kernels, int(p["cpu_ops_per_step"]))
            if key in seen:
                continue
            seen.add(key)
            spec = model_of({"model": m}, s["seq"])
            per = host.layer_kernels(spec, eager_ac.parallel_of(ac), BatchSpec(s["micro_batch"], s["micro_batch"]), TORCH_AMP)
            print(f"  {ac:4} L{m['layers']:<3} h{m['hidden']:<5} {s['seq']}:{s['micro_batch']:<3} CPU ops {key[6]:6d}  "
                  f"kernels {kernels:5d}  model {per} a layer   {path.relative_to(CAL).parts[0]}")
    print("  per layer (op): CPU ops (39313 - 2623) / 30 at hidden 128 and (34433 - 29541) / 4 between 3b and 0.3b; "
          "kernels (4556 - 316) / 30 at hidden 128")


def thread_ms(path: Path) -> tuple[float, float]:
    """(main thread, autograd thread) CPU ms per timed step of an llm-step document's first shape."""
    s = json.loads(path.read_text())["shapes"][0]
    n, th = len(s["step_times_s"]), s.get("thread_cpu_s") or {}
    return th.get("python3", 0.0) / n * 1e3, th.get("pt_autograd_0", 0.0) / n * 1e3


def phases() -> None:
    print("\n2. per phase, per layer (L32 less L2, / 30): main thread (forward + optimizer) and autograd thread (backward)")
    for name, _ in SETS:
        folder = CAL / name / "runs" / "host"
        for mode in ("single", "ckpt", "op"):
            if not (folder / f"{mode}-L32.json").is_file():
                continue
            (m32, a32), (m2, a2) = thread_ms(folder / f"{mode}-L32.json"), thread_ms(folder / f"{mode}-L2.json")
            f, b = (m32 - m2) / 30, (a32 - a2) / 30
            print(f"  {name[7:]:24} {mode:6} forward {f:5.2f} ms  backward {b:5.2f} ms  forward share {f / (f + b):.3f}")
    for path in sorted(OPHOST.glob("*.json")):
        op = next(m for m in json.loads(path.read_text())["modes"] if m["mode"] == "op")
        steps = op["per_step"]
        print(f"  ophost {path.stem:16} op forward issue {' '.join(f'{x * 1e3:4.0f}' for x in steps['fwd_issue_s'])} ms;"
              f" backward {' '.join(f'{x * 1e3:4.0f}' for x in steps['bwd_issue_s'])} ms")


def phase_model(preset: str, seq: int, mb: int, host: Path) -> tuple[float, float]:
    """The model's (forward, backward) host issue seconds of one op step with `host`'s fits."""
    from simcluster.hardware.gpu import load_gpu
    from simcluster.heldout.eager import model_of
    from simcluster.heldout.eager_registered import FLAG_CARD
    from simcluster.llm import eager, eager_ac
    from simcluster.llm.comm import Network
    from simcluster.llm.spec import BatchSpec
    from simcluster.llm.work import build_work
    from simcluster.runner.llm_decoder import PRESETS

    gpu, _ = load_gpu(ROOT / FLAG_CARD)
    par = eager_ac.parallel_of("op")
    fw = eager.torch_framework(par, eager.fit_modes(host))
    w = build_work(model_of({"model": PRESETS[preset]}, seq), par, BatchSpec(mb, mb), gpu, Network(None, 1), fw=fw)
    return w.stages[0].forward[0].issue_s, w.stages[0].backward[0].issue_s


def forced_share(fw):
    """op's per-phase host costs moved to a forward share SHARE of a layer's (the model's 37 + 7 / 95 + 14 kernels)."""
    if not fw.host_bwd_kernel_s:
        return fw
    n_f, n_b = 44, 109
    total = fw.host_kernel_s * n_f + fw.host_bwd_kernel_s * n_b
    return replace(fw, host_kernel_s=SHARE * total / n_f, host_bwd_kernel_s=(1 - SHARE) * total / n_b)


def processes() -> dict:
    from simcluster.heldout.eager import MODE_HOST
    from simcluster.llm import eager
    from validation.hostsingle import predict
    from validation.opsplit import both

    print("\n3. the development op processes (ms): measured step / issue, main thread CPU less (step - issue), autograd "
          "thread; the model's forward / backward issue (product, own lease); errors: product, own lease, candidate, "
          f"forced forward share {SHARE}")
    errs: dict[str, list[float]] = {}
    for name, shapes in SETS:
        own_host = CAL / name / "runs" / "host"
        for row, preset, seq, mb in shapes:
            (p, c), own = both(preset, seq, mb, "op", MODE_HOST), predict(preset, seq, mb, "op", own_host)["step_ms"]
            with eager.torch_framework_as(forced_share):
                forced = predict(preset, seq, mb, "op", MODE_HOST)["step_ms"]
            pf, pb = phase_model(preset, seq, mb, MODE_HOST)
            of, ob = phase_model(preset, seq, mb, own_host)
            print(f"  {name[7:17]} {row:9} {preset} {seq}:{mb}  model issue: product {pf * 1e3:.1f} / {pb * 1e3:.1f}, "
                  f"own {of * 1e3:.1f} / {ob * 1e3:.1f}")
            for r in (1, 2, 3):
                path = CAL / name / "runs" / f"{row}-r{r}.json"
                s = json.loads(path.read_text())["shapes"][0]
                step, issue = s["median_step_s"] * 1e3, statistics.median(s["host_issue_s"]) * 1e3
                main, grad = thread_ms(path)
                e = {"product": p["step_ms"] / step - 1, "own": own / step - 1, "candidate": c["step_ms"] / step - 1,
                     "forced": forced / step - 1}
                for k, v in e.items():
                    errs.setdefault(k, []).append(v)
                print(f"    r{r}: step {step:6.1f} issue {issue:6.1f}  main - sync {main - (step - issue):5.1f}  autograd "
                      f"{grad:5.1f}   " + "  ".join(f"{k} {v:+.1%}" for k, v in e.items()))
    return errs


def main() -> int:
    profiles()
    phases()
    errs = processes()
    print("\n4. over the 12 development op processes")
    for k, e in errs.items():
        print(f"  {k:9} mean |error| {statistics.mean(map(abs, e)):.1%}  mean error {statistics.mean(e):+.1%}")
    return 0


if __name__ == "__main__":
    import study_args  # an unknown argument refused before the study runs
    study_args.check()
    sys.exit(main())
