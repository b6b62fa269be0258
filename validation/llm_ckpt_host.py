"""Activation checkpointing's host cost in eager PyTorch (issue 44, session 27; not a test): the `check` runs of a
bundle predicted from its own `host` runs, never fitted on.

    python validation/llm_ckpt_host.py calibration/h200x1-llm-ckpt-host-2026-11-28

The host bundle holds hidden-128 decoders (GPU work negligible) of 2, 8 and 32 layers, single mode, without and with
--activation-checkpointing; eager.fit_modes fits the host seconds per kernel and per step of `single` and `ckpt`. Each
check shape (presets 0.3b / 1b / 3.1b, seq 2048, micro-batch 1 / 2 / 4) is predicted with eager.torch_framework of its
layout on the H200 interleaved card: the plain runs with the single fit; the checkpointed runs with the ckpt fit
(this change) and with the single fit (the model before it). Step time: the run's median timed step.

Each process times its shapes in turn and profiles one step after each (llm_step --profile 1); every later shape of a
host-bound process ran 20-80% slower than the same host cost predicts from its first shape (tiny 8 layers: 18.2 ms at
128 tokens, then 23.8 at 512; 0.3b: 48.7 ms at micro-batch 1, then 82.1 at 2), which we read as the profiler's residue
on the host (not checked in torch's source). `--first-only` keeps each process's first shape, for the fit and the check
alike (a protocol chosen after seeing the runs; both are printed by default).
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from simcluster.hardware.gpu import load_gpu  # noqa: E402
from simcluster.llm import eager, eager_ac  # noqa: E402
from simcluster.llm.comm import Network  # noqa: E402
from simcluster.llm.predict import predict_llm  # noqa: E402
from simcluster.llm.spec import BatchSpec, TransformerSpec  # noqa: E402
from simcluster.script_args import check  # noqa: E402

CARD = ROOT / "models/gpu/h200-sxm-interleaved.yaml"


def first_only(folder: Path, out: Path) -> Path:
    """A copy of a collect bundle's llm-step documents keeping each process's first shape (MODE-L<n>.json layout)."""
    out.mkdir(parents=True, exist_ok=True)
    for path in sorted(folder.glob("llm-step/*/stdout.txt")):
        text = path.read_text()
        doc = json.loads(text[text.find("{"):])
        doc["shapes"] = doc["shapes"][:1]
        (out / "llm-step" / path.parent.name).mkdir(parents=True, exist_ok=True)
        (out / "llm-step" / path.parent.name / "stdout.txt").write_text(json.dumps(doc))
    return out


def check_runs(bundle: Path) -> list[dict]:
    out = []
    for path in sorted((bundle / "check" / "llm-step").glob("*/stdout.txt")):
        text = path.read_text()
        out.append(json.loads(text[text.find("{"):]))
    return out


def predict(doc: dict, shape: dict, hosts: dict, gpu) -> float:
    m = doc["model"]
    model = TransformerSpec(m["layers"], m["hidden"], m["ffn"], m["heads"], m["kv_heads"], m["vocab"], shape["seq"],
                            tied_embeddings=bool(m["tied"]))
    par = eager_ac.parallel_of(eager_ac.document_mode(doc))   # op / every:N runs set ac_mode, not only full
    batch = BatchSpec(shape["micro_batch"], shape["micro_batch"])
    return predict_llm(model, par, batch, gpu, Network(None, 1), 1, trace=False,
                       framework=eager.torch_framework(par, hosts)).step_time_s


def main(argv: list[str]) -> int:
    check(options=("--first-only",), words=1, usage="[BUNDLE] [--first-only]", argv=argv)
    args = [a for a in argv if a != "--first-only"]
    bundle = Path(args[0]) if args else ROOT / "calibration/h200x1-llm-ckpt-host-2026-11-28"
    missing = [d for d in ("host", "check") if not (bundle / d).is_dir()]
    if missing:
        print(f"llm_ckpt_host: {bundle}: expected a bundle with host/ and check/ llm-step runs; missing {', '.join(missing)}/",
              file=sys.stderr)
        return 2
    if "--first-only" not in argv:
        report(bundle, bundle / "host", None)
        print()
    import tempfile
    with tempfile.TemporaryDirectory() as tmp:
        print("first shape of each process only:")
        report(bundle, first_only(bundle / "host", Path(tmp) / "host"), 1)
    return 0


def report(bundle: Path, host_folder: Path, shapes: int | None) -> None:
    hosts = eager.fit_modes(host_folder)
    without = {k: v for k, v in hosts.items() if k != "ckpt"}
    for mode, (c, a, n) in hosts.items():
        print(f"host fit {mode}: {c * 1e6:.1f} us/kernel + {a * 1e3:.2f} ms/step ({n} shapes)")
    gpu = load_gpu(CARD)[0]
    errors: dict[str, list[float]] = {"single": [], "ckpt": [], "ckpt (single host fit)": []}
    print(f"{'run':22s} {'shape':>8s} {'measured ms':>12s} {'predicted ms':>13s} {'error':>7s} {'before':>7s}")
    for doc in check_runs(bundle):
        ac = eager_ac.document_mode(doc)
        ckpt = ac != "none"
        label = "single" if not ckpt else "ckpt" if ac == "full" else ac   # op / every:N: their own error rows
        name = f"{doc['model']['preset']}-{label.replace(':', '')}"
        for shape in doc["shapes"][:shapes]:
            if shape.get("status") != "ok":
                continue
            meas = shape["median_step_s"]
            pred = predict(doc, shape, hosts, gpu)
            err = 100 * (meas / pred - 1)          # + = predicted faster (the project's sign)
            line = f"{name:22s} {shape['seq']}:{shape['micro_batch']:<3d} {meas * 1e3:12.1f} {pred * 1e3:13.1f} {err:+6.1f}%"
            if ckpt:
                old = predict(doc, shape, without, gpu)
                errors["ckpt (single host fit)"].append(100 * (meas / old - 1))
                line += f" {100 * (meas / old - 1):+6.1f}%"
            errors.setdefault(label, []).append(err)
            print(line)
    for mode, errs in errors.items():
        if errs:
            print(f"{mode:24s} mean |error| {statistics.mean(map(abs, errs)):5.1f}%  max {max(map(abs, errs)):5.1f}%  "
                  f"({len(errs)} shapes; target 8%)")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
