"""torch.compile in eager PyTorch on one H200 (issue 44; not a test): the registered rule of
calibration/h200x1-llm-compile-2026-11-29 (its README), in two readings.

    python validation/llm_compile.py --registered                      # the model's predictions now (placeholder host)
    python validation/llm_compile.py calibration/h200x1-llm-compile-2026-11-29    # a re-read with TODAY's model

The rule. Host cost: eager.fit_modes on the bundle's `host/` runs (the tiny preset, hidden 128, at 2, 8 and 32 layers,
single mode, eager and --compile, shape 128:1, 20 timed steps): `single` fits eager's seconds per kernel and per step,
`compile` the compiled block's (kernels counted by llm/compiled.py). Judged: the `check/<preset>/` runs (one shape per
process, eager and compiled, never fitted on), each predicted with eager.torch_framework(ParallelSpec(), fits,
compiled) on models/gpu/h200-sxm-interleaved.yaml. Statistic: the median timed step (llm-step's median_step_s); memory:
the timed steps' peak torch.cuda.max_memory_allocated (max_memory_allocated_timed_bytes) against the model's allocated
peak. Error: measured / predicted - 1 (+: predicted fast). Met: mean |step error| <= 8% over the compiled shapes AND
every compiled shape's memory within 10%; reported beside it: the compile speedup's error (measured eager / compiled
over predicted, - 1; mean |error| <= 8% is its own line), the eager arm's step error, and the kernels per layer
the host runs' profiled steps show against the model's count (eager and compiled: the fusion's own check). At least four judged
shapes must have run both arms, else the reading is 'incomplete'.
`--registered` prints the same table from the model as it stands, with PLACEHOLDER host costs (compile 10 us per
kernel and 0 per step: a guess, not a measurement; eager: session 27's single fit on this host, 33.3 us per kernel and
-2.06 ms per step, calibration/h200x1-llm-ckpt-host-2026-11-28), and writes predictions.json in the set's folder.
The registered read is the rule run at the run's own commit c0bd808, stored in the set's folder (readout-registered.txt
and .json, validation/llm_compile_registered_read.py): compiled memory 17.3% max, **not met**. Run today, this script
reads the same runs with today's model (the saved-set change since, llm/compiled.py), a development re-read: its
verdict line says so and prints the registered verdict beside it.
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from simcluster.errors import SimclusterError  # noqa: E402
from simcluster.hardware.gpu import load_gpu  # noqa: E402
from simcluster.heldout.eager import model_of  # noqa: E402
from simcluster.heldout.registration import refuse_existing, write_registration  # noqa: E402
from simcluster.llm import eager  # noqa: E402
from simcluster.llm.comm import Network  # noqa: E402
from simcluster.llm.memory import GiB  # noqa: E402
from simcluster.llm.predict import predict_llm  # noqa: E402
from simcluster.llm.spec import BatchSpec, ParallelSpec  # noqa: E402
from simcluster.runner.llm_decoder import PRESETS  # noqa: E402
from simcluster.script_args import check  # noqa: E402

CARD = ROOT / "models/gpu/h200-sxm-interleaved.yaml"
SET = ROOT / "calibration/h200x1-llm-compile-2026-11-29"
SHAPES = (("0.3b", 2048, 4), ("1b", 2048, 2), ("1.1b", 4096, 1), ("3b", 4096, 1), ("3.1b", 2048, 2))   # device_run.sh's order
PLACEHOLDER = {"single": (33.3e-6, -2.06e-3, 0), "compile": (10e-6, 0.0, 0)}
STEP_TARGET, MEMORY_TARGET, MIN_SHAPES = 8.0, 10.0, 4
REGISTERED_READ = "readout-registered.json"      # the rule's read at the run's commit (llm_compile_registered_read.py)


def predict(model_cfg: dict, seq: int, micro: int, compiled: bool, hosts: dict, gpu) -> tuple[float, float]:
    """(step seconds, allocated peak bytes) of one shape on one GPU."""
    par = ParallelSpec()
    r = predict_llm(model_of({"model": model_cfg}, seq), par, BatchSpec(micro, micro), gpu, Network(None, 1), 1,
                    trace=False, framework=eager.torch_framework(par, hosts, compiled))
    return r.step_time_s, r.memory_per_gpu_GiB["allocated"] * GiB


def check_runs(bundle: Path) -> list[dict]:
    """Every llm-step document under check/ (check/<preset>/llm-step/<run>/stdout.txt); a failed run is named and skipped."""
    out = []
    for path in sorted((bundle / "check").glob("*/llm-step/*/stdout.txt")):
        try:
            out.append(eager.read_document(path))
        except ValueError as exc:
            print(f"llm_compile: {exc} (the run failed; its stderr.txt says why)", file=sys.stderr)
    return out


def rows_from_runs(bundle: Path, hosts: dict, gpu) -> list[dict]:
    rows = []
    for doc in check_runs(bundle):
        for shape in doc["shapes"]:
            row = {"preset": doc["model"]["preset"], "seq": shape["seq"], "micro_batch": shape["micro_batch"],
                   "compiled": bool(doc.get("compile")), "status": shape.get("status")}
            if shape.get("status") == "ok":
                row["pred_s"], row["pred_bytes"] = predict(doc["model"], shape["seq"], shape["micro_batch"], row["compiled"], hosts, gpu)
                row["meas_s"] = shape["median_step_s"]
                row["meas_bytes"] = shape.get("max_memory_allocated_timed_bytes", shape.get("max_memory_allocated_bytes"))
                row["compile_s"] = shape.get("compile", {}).get("compile_s")
                row["kernels"] = shape.get("profile", {}).get("kernel_per_step")
            rows.append(row)
    return rows


def rows_registered(hosts: dict, gpu) -> list[dict]:
    rows = []
    for preset, seq, micro in SHAPES:
        for compiled in (False, True):
            step, peak = predict(PRESETS[preset], seq, micro, compiled, hosts, gpu)
            rows.append({"preset": preset, "seq": seq, "micro_batch": micro, "compiled": compiled, "status": "predicted",
                         "pred_s": step, "pred_bytes": peak})
    return rows


def report(rows: list[dict], verdict_label: str = "rule") -> dict:
    """Prints the table and the rule's verdict (its line starting with `verdict_label`); returns the summary."""
    print(f"{'preset':6s} {'shape':>8s} {'arm':8s} {'pred ms':>9s} {'meas ms':>9s} {'error':>7s} {'pred GiB':>9s} "
          f"{'meas GiB':>9s} {'mem err':>8s} {'compile s':>9s} {'kernels':>8s}")
    step_err: dict[bool, list[float]] = {False: [], True: []}
    mem_err: list[float] = []
    for r in rows:
        line = f"{r['preset']:6s} {r['seq']}:{r['micro_batch']:<3d} {'compiled' if r['compiled'] else 'eager':8s} "
        if "pred_s" not in r:
            print(line + f"{r['status']}")
            continue
        line += f"{r['pred_s'] * 1e3:9.1f} "
        if r.get("meas_s"):
            e = 100 * (r["meas_s"] / r["pred_s"] - 1)
            step_err[r["compiled"]].append(e)
            line += f"{r['meas_s'] * 1e3:9.1f} {e:+6.1f}% "
        else:
            line += f"{'-':>9s} {'-':>7s} "
        line += f"{r['pred_bytes'] / GiB:9.2f} "
        if r.get("meas_bytes"):
            m = 100 * (r["meas_bytes"] / r["pred_bytes"] - 1)
            if r["compiled"]:
                mem_err.append(m)
            line += f"{r['meas_bytes'] / GiB:9.2f} {m:+7.1f}% "
        comp = r.get("compile_s")
        line += f"{comp:9.1f} " if comp is not None else f"{'':9s} "
        print(line + (f"{r['kernels']:8.0f}" if r.get("kernels") else ""))
    ratio_err = []
    for r in (x for x in rows if x["compiled"] and x.get("meas_s")):
        twin = next((x for x in rows if not x["compiled"] and x.get("meas_s") and
                     (x["preset"], x["seq"], x["micro_batch"]) == (r["preset"], r["seq"], r["micro_batch"])), None)
        if twin:
            meas, pred = twin["meas_s"] / r["meas_s"], twin["pred_s"] / r["pred_s"]
            ratio_err.append(100 * (meas / pred - 1))
            print(f"speedup {r['preset']:6s} {r['seq']}:{r['micro_batch']}: measured {meas:.3f}x, predicted {pred:.3f}x, "
                  f"error {ratio_err[-1]:+.1f}%")
    out = {}
    for name, errs, target in (("compiled step", step_err[True], STEP_TARGET), ("eager step", step_err[False], STEP_TARGET),
                               ("speedup", ratio_err, STEP_TARGET)):
        if errs:
            out[name] = statistics.mean(map(abs, errs))
            print(f"{name:14s} mean |error| {out[name]:5.1f}%  max {max(map(abs, errs)):5.1f}%  ({len(errs)} shapes; "
                  f"target {target:.0f}%: {'met' if out[name] <= target else 'not met'})")
    if mem_err:
        out["compiled memory max"] = max(map(abs, mem_err))
        print(f"compiled memory max |error| {out['compiled memory max']:5.1f}% ({len(mem_err)} shapes; each within "
              f"{MEMORY_TARGET:.0f}%: {'met' if out['compiled memory max'] <= MEMORY_TARGET else 'not met'})")
    if step_err[True]:
        if len(ratio_err) < MIN_SHAPES:
            print(f"{verdict_label}: incomplete ({len(ratio_err)} shapes ran both arms; {MIN_SHAPES} needed)")
        else:
            met = out["compiled step"] <= STEP_TARGET and out.get("compiled memory max", 1e9) <= MEMORY_TARGET
            print(f"{verdict_label} (compiled step <= {STEP_TARGET:.0f}% mean and memory within {MEMORY_TARGET:.0f}%): "
                  f"{'met' if met else 'not met'}")
    return out


def kernels_per_layer(host_folder: Path) -> None:
    """The fusion's own check: GPU kernels per layer measured (the slope of the profiled step's kernel count over the
    host runs' 2, 8 and 32 layers) against the model's count (host.layer_kernels), eager and compiled."""
    import numpy as np

    from simcluster.llm import host
    for mode, compiled in (("single", False), ("compile", True)):
        points = []
        for path in eager._mode_documents(host_folder, mode):
            doc = eager.read_document(path)
            shape = doc["shapes"][0]
            if shape.get("status") == "ok" and shape.get("profile", {}).get("kernel_per_step"):
                points.append((doc["model"]["layers"], shape["profile"]["kernel_per_step"]))
                m, seq, mb = doc["model"], shape["seq"], shape["micro_batch"]
        if len({p[0] for p in points}) < 2:
            print(f"kernels per layer {mode}: fewer than two profiled layer counts")
            continue
        slope = np.polyfit([p[0] for p in points], [p[1] for p in points], 1)[0]
        tiny = model_of({"model": m}, seq)
        model = host.layer_kernels(tiny, ParallelSpec(), BatchSpec(mb, mb), eager.torch_framework(ParallelSpec(), None, compiled))
        print(f"kernels per layer {mode}: measured {slope:.1f}, model {model} ({100 * (slope / model - 1):+.1f}%)")


def main(argv: list[str]) -> int:
    check(options=("--registered",), words=1, usage="[BUNDLE] | --registered", argv=argv)
    gpu = load_gpu(CARD)[0]
    if argv[:1] == ["--registered"]:
        try:
            out = refuse_existing(SET / "predictions.json")
        except SimclusterError as exc:
            print(f"llm_compile: {exc}", file=sys.stderr)
            return 2
        print("PLACEHOLDER host costs (not measured for compile): compile 10.0 us/kernel + 0 ms/step; "
              "eager 33.3 us/kernel - 2.06 ms/step (session 27's single fit)")
        rows = rows_registered(PLACEHOLDER, gpu)
        report(rows)
        write_registration(out, json.dumps({"host_placeholder": {k: list(v[:2]) for k, v in PLACEHOLDER.items()},
                                            "card": CARD.name, "rows": rows}, indent=1) + "\n")
        return 0
    bundle = Path(argv[0]) if argv else SET
    missing = [d for d in ("host", "check") if not (bundle / d).is_dir()]
    if missing:
        print(f"llm_compile: {bundle}: expected the set's bundles host/ and check/<preset>/ (untar the run's "
              f"<name>.tgz there); missing {', '.join(missing)}/", file=sys.stderr)
        return 2
    try:
        registered = registered_verdict(bundle)
    except SimclusterError as exc:
        print(f"llm_compile: {exc}", file=sys.stderr)
        return 2
    hosts = eager.fit_modes(bundle / "host")
    for mode in ("single", "compile"):
        if mode not in hosts:
            print(f"llm_compile: {bundle}/host: no {mode} runs at two or more layer counts", file=sys.stderr)
            return 2
        c, a, n = hosts[mode]
        print(f"host fit {mode}: {c * 1e6:.1f} us/kernel {a * 1e3:+.2f} ms/step ({n} shapes)")
    kernels_per_layer(bundle / "host")
    report(rows_from_runs(bundle, hosts, gpu), "development re-read with today's model: rule")
    print(registered)
    return 0


def registered_verdict(bundle: Path) -> str:
    """The line naming the registered verdict: the stored registered read's (readout-registered.json), or that none is."""
    from simcluster.strict import load_json

    path = bundle / REGISTERED_READ
    if not path.is_file():
        return f"registered verdict: none stored ({path.name} absent; this re-read is not the registered read)"
    doc = load_json(path, what="registered compile read-out")
    if not isinstance(doc, dict) or doc.get("verdict") not in ("met", "not met", "incomplete"):
        raise SimclusterError("expected `verdict:` met, not met or incomplete", where=str(path))
    return (f"registered verdict (the rule read at the run's commit {doc.get('commit')}, {path.name}): {doc['verdict']}")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
