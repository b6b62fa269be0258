"""Eager PyTorch regimes of issue 44 (not a test): activation checkpointing on one GPU and torch.distributed.pipelining
(2 stages, GPipe and 1F1B) on two, predicted from the earlier calibration alone, registered before the runs.

    python validation/llm_eager_regimes.py --register calibration/BUNDLE/registered.yaml   # before collecting
    python validation/llm_eager_regimes.py calibration/BUNDLE                              # after: measured vs registered
    python validation/llm_eager_regimes.py --plan meshes ...                               # the 4-GPU layouts, likewise

PLAN is the set of runs (calibration/BUNDLE/device_run.sh makes them with simcluster.runner.llm_step): three
Llama-shaped presets (0.3b: 316M, 1b: 1.24B, 3.1b: 3.09B parameters) at seq 2048, each run
  single        one GPU, the runner's plain step
  single+ckpt   one GPU, --activation-checkpointing (torch.utils.checkpoint per decoder layer)
  pp-gpipe      --mode pp --schedule gpipe, 2 stages on 2 GPUs, 4 micro-batches of the same micro-batch
  pp-1f1b       --mode pp --schedule 1f1b, likewise
Each is predicted with eager.torch_framework of its layout on the interleaved GPU card of each GPU the lease may bring
(H100 or H200; the registration holds both, the comparison takes the run's own), the host cost of the single mode
(H200: calibration/h200x2-llm-host-2026-11-23 fitted per mode, as validation/llm_two_gpu.py; H100:
calibration/llm-host-2026-11-23, as validation/llm_single_gpu.py), and for the pipeline's sends the 2-rank NVLink
card (models/collective/h200x2-primitives.yaml). Nothing is fitted on these runs. Step time: the median of rank 0's
timed steps (the first stage ends a step last in both schedules); memory: torch.cuda.max_memory_allocated of each
rank against its stage's predicted peak; a mode's memory error is over every rank.
--plan pipeline (calibration/h200x4-llm-eager-pipeline-2026-11-28): pp4-1f1b, pp4-interleaved (2 chunks per rank) and
pp+ddp at the first set's presets with twice its micro-batch (0.3b x 8, 1b x 4, 3.1b x 2), registered after the
pipeline's receive buffers entered the memory model (session 29), before the runs.
--plan pipeline2 (calibration/h200x4-llm-eager-pipeline2-2026-11-28): the same three pipeline layouts at micro-batch
counts not run before (0.3b mb 4 and 3.1b mb 1 at 16 micro-batches, 0.5b mb 4 at 4), registered in session 30 after the
timelines of docs/models/llm-findings.md (session 30) were read, before the runs.
--plan tpdp --host FOLDER (calibration/h200x4-llm-eager-tpdp-2026-11-28): tp+ddp and tp+fsdp at the pipeline set's
presets, registered ON the device between the host runs of the 2-D modes and the steps, in one call (one lease): the
model's prediction (tp's fit, eager.host_mode) and the variant with the 2-D modes' own fits from FOLDER.
--plan two (calibration/h200x2-llm-eager-two-2026-11-29, session 36): ddp, fsdp, tp (2 ranks) and pp-gpipe / pp-1f1b (2
stages, 4 micro-batches) at 0.5b x 6, 2b x 1, 3b x 3 (seq 2048; (preset, tokens) no earlier run used), registered before
the one device call: the 1-GPU terms added since the 2-GPU sets (the autocast block, split-K, the fused AdamW's rate)
checked at two ranks, with the per-mode host fits of MODE_HOST (another lease), as the product prices them.
--plan twohost --host FOLDER (calibration/h200x2-llm-eager-twohost-2026-11-29, session 36): ddp, fsdp, tp over 2 ranks
at 0.8b x 5, 1b x 3, 3.1b x 5, registered ON the device between the lease's own hidden-128 host runs of those modes and
the steps, in one call: the model's prediction (MODE_HOST's fits) and the variant with each mode's own fit from FOLDER
(what a user's `framework.host` folder gives), to test whether the lease's own host fit carries host-bound TP / FSDP2.
--plan meshes (calibration/h200x4-llm-eager-meshes-2026-11-28) is the same three presets on one 4-GPU host:
  tp+ddp, tp+fsdp  DTensor TP inside pairs of ranks, DDP / FSDP2 across the pairs (runner --mode tp+ddp / tp+fsdp --group 2)
  pp4-1f1b, pp4-gpipe  4 stages, 8 micro-batches;  pp+ddp  2 stages (1F1B, 4 micro-batches) replicated by DDP over 2 pairs
with the host cost of the mode the layout issues its kernels like (eager.host_mode) and the 2-rank NVLink card for
every group (each is two ranks). Peak memory: each rank against its own stage's prediction.
Target (issue 44): step time <= 8% mean |error| per mode, peak memory within 10%. The plan and its prediction are
simcluster.heldout.eager's (regime_*): the error-band table's `llm eager` family takes these runs from there.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
from pathlib import Path

import yaml

from simcluster.errors import SimclusterError
from simcluster.heldout.eager import CARDS, H100, H200, MESH_HOST, MODE_HOST, SEQ, SIZES, SIZES2, SIZES3, SIZES4, SIZES5, SIZES6, SIZES7, pct
from simcluster.heldout.eager_regimes import (
    cp_modes,
    layout_of,
    mesh2_modes,
    mesh_modes,
    pipeline_modes,
    regime_documents,
    regime_mode_of,
    regime_modes,
    tpdp_modes,
    two_modes,
)
from simcluster.heldout.eager_regimes import regime_predict as predict
from simcluster.heldout.registration import refuse_existing, write_registration
from simcluster.llm.memory import GiB
from simcluster.script_args import ArgumentParser

ROOT = Path(__file__).resolve().parent.parent
TWOHOST_MODES = {k: v for k, v in two_modes().items() if not k.startswith("pp")}   # ddp, fsdp, tp over 2 ranks
# session 37's post sets, after the noise set (calibration/h200x2-llm-eager-noise-2026-11-29): the GPU-bound 2-GPU modes
# (TP left out: at the machine's noise) and cp, at (preset, tokens) new to calibration/ (tests/conftest.measured_llm_tokens)
POST_MODES = {k: v for k, v in two_modes().items() if k != "tp"}   # ddp, fsdp, pp-1f1b, pp-gpipe over 2 ranks
SIZES8 = (("1.1b", 5), ("0.8b", 1), ("2b", 3))   # one communication-bound shape (micro-batch 1), untied and tied embeddings
SIZES9 = (("1.1b", 1, None, 32768), ("2b", 1, None, 32768), ("0.8b", 2, None, 32768))
PLANS = {"regimes": (regime_modes(), SIZES), "meshes": (mesh_modes(), SIZES), "meshes2": (mesh2_modes(), SIZES2),
         "pipeline": (pipeline_modes(), SIZES3), "tpdp": (tpdp_modes(), SIZES3), "pipeline2": (pipeline_modes(), SIZES4),
         "two": (two_modes(), SIZES5), "twohost": (TWOHOST_MODES, SIZES6), "cp": (cp_modes(), SIZES7),
         "post": (POST_MODES, SIZES8), "postcp": (cp_modes(), SIZES9)}
OWN_HOST_PLANS = ("meshes2", "tpdp", "twohost")   # plans that register beside the model's a variant with a lease's own host fits
VARIANT = "predicted_own_host"   # meshes2 registers beside the model's a variant: the 2-D modes' own host fits (MESH_HOST)
CARD_2 = ROOT / CARDS[("nvlink", 2)]
H200_HOST = MODE_HOST
TARGET_STEP, TARGET_MEM = 8.0, 10.0


def register(path: Path, plan_name: str = "regimes", host: Path | None = None) -> None:
    """The plan's predictions into `path`; `host` (plan tpdp: the host runs the same device call made just before, on
    the same lease) takes MESH_HOST's place for the 2-D modes' own-fit variant."""
    modes, sizes = PLANS[plan_name]
    plan = [(size[0], size[1], size[2] if len(size) > 2 else None, size[3] if len(size) > 3 else SEQ, mode)
            for size in sizes for mode in modes]   # (preset, micro-batch, micro-batches or None, seq, mode)
    if plan_name == "twohost" and host is None:
        raise SimclusterError("--plan twohost: give --host FOLDER (the lease's own host runs, made just before)")
    own_host = (host or MESH_HOST) if plan_name in OWN_HOST_PLANS else None   # the registered variant's host runs
    if own_host is not None:   # a variant without its own fits would be the model's prediction under another label
        from simcluster.llm.eager import fit_modes

        wanted = set(TWOHOST_MODES) if plan_name == "twohost" else set(tpdp_modes())
        missing = sorted(wanted - set(fit_modes(own_host)))
        if missing:
            raise SimclusterError(f"{own_host}: no host runs of {', '.join(missing)} at two or more layer counts "
                                  "(MODE-L<n>.json): the own-fit variant cannot be registered")
    commit = os.environ.get("REGISTER_COMMIT") or subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True,
                                                                  text=True).stdout.strip()   # a device copy's .git may lag
    runs = []
    for preset, mb, m, seq, mode in plan:   # m: the plan's micro-batch count (pipeline2), else the layout's
        runs.append({"preset": preset, "mode": mode, "seq": seq, "micro_batch": mb, "gpus": layout_of(mode)[1],
                     "microbatches": m or layout_of(mode)[2],
                     "predicted": {g: predict(preset, mb, mode, g, microbatches=m, seq=seq) for g in ("h100", "h200")}})
        if own_host is not None and (mode in tpdp_modes() or plan_name == "twohost"):
            runs[-1][VARIANT] = {"h200": predict(preset, mb, mode, "h200", microbatches=m, own_host=own_host, seq=seq)}
    doc = {"registered_at_commit": commit, "script": "validation/llm_eager_regimes.py --register",
           "calibration": {"gpu_cards": {"h100": H100, "h200": H200}, "collective_card": str(CARD_2.relative_to(ROOT)),
                           "host": {"h200": str(H200_HOST.relative_to(ROOT)), "h100": "calibration/llm-host-2026-11-23"}
                           | ({VARIANT: _shown(own_host)} if own_host is not None else {})},
           "targets": {"step_mean_abs_pct": TARGET_STEP, "memory_abs_pct": TARGET_MEM}, "runs": runs}
    write_registration(path, "# Predictions registered before the runs (issue 44); never edited after them.\n"
                       + yaml.safe_dump(doc, sort_keys=False))
    print(f"registered {len(runs)} runs x 2 GPUs in {path} (model at {commit[:10]})")


def _shown(path: Path) -> str:
    """A path as registered: relative to the repository where it is inside it (a device call's folder is not)."""
    return str(path.resolve().relative_to(ROOT)) if path.resolve().is_relative_to(ROOT) else str(path)


def documents(bundle: Path) -> list[dict]:
    docs, failed = regime_documents(bundle)
    for path in failed:
        print(f"{path}: no llm-step document (the run failed; its .stderr.txt says why)")
    return docs


mode_of_doc = regime_mode_of


def mem_error(pred: dict, stage: int, measured_GiB: float) -> float:
    """A rank's peak against its stage's prediction (%). A registration that carries `steady_mem_GiB` (session 37's post
    sets on) predicts the job's peak as the range [steady, allocated]: DDP's first-steps bucket copy is in the peak in
    some processes, not in others (calibration/h200x2-eager-diagnose-2026-11-29), so a peak inside it is 0, one outside
    is the error against the nearer end; an older registration, against `stage_mem_GiB` alone."""
    if not isinstance(pred.get("stage_mem_GiB"), list):
        raise SimclusterError("no stage_mem_GiB list (each stage's predicted peak)")
    his, los = pred["stage_mem_GiB"], pred.get("steady_mem_GiB", pred["stage_mem_GiB"])
    for key, values in (("stage_mem_GiB", his), ("steady_mem_GiB", los)):
        if stage >= len(values):   # a hand-edited or truncated registration: a one-line error, not an IndexError
            raise SimclusterError(f"{key} has {len(values)} entries, no stage {stage}")
    hi, lo = his[stage], los[stage]
    if lo <= measured_GiB <= hi:
        return 0.0
    return pct(hi if measured_GiB > hi else lo, measured_GiB)


def _registered_mem(pred: dict) -> str:
    """The registered peak per stage; 'lo..hi' where the registration predicts a range (steady_mem_GiB)."""
    if "steady_mem_GiB" not in pred:
        return " / ".join(f"{p:.2f}" for p in pred["stage_mem_GiB"])
    return " / ".join(f"{lo:.2f}..{hi:.2f}" for lo, hi in zip(pred["steady_mem_GiB"], pred["stage_mem_GiB"], strict=False))


def compare(bundle: Path) -> int:
    reg_path = bundle / "registered.yaml"
    if not reg_path.is_file():
        print(f"error: {reg_path}: no registered predictions", file=sys.stderr)
        return 1
    reg = yaml.safe_load(reg_path.read_text())
    if not (bundle / "runs").is_dir() and not list(bundle.glob("*.json")):
        print(f"{bundle.name}: registered at {reg['registered_at_commit'][:10]}, not run (no runs/): no verdict")
        return 1
    modes = list(dict.fromkeys(r["mode"] for r in reg["runs"]))   # the plan the bundle registered, whatever --plan said
    registered = {(r["preset"], r["mode"], r["seq"], r["micro_batch"]): r for r in reg["runs"]}
    print(f"== {bundle.name}: measured vs predictions registered at {reg['registered_at_commit'][:10]}")
    print(f"{'model':>5} {'mode':>11} {'seq':>5} {'mb':>3} {'m':>2} {'meas ms':>9} {'reg ms':>9} {'err %':>7} {'now ms':>9} "
          f"{'meas GiB':>15} {'reg GiB':>15} {'err %':>13} {'now err %':>13}")
    errors: dict[str, dict[str, list[float]]] = {}
    for doc in documents(bundle):
        gpu_label = "h100" if "H100" in str(doc.get("device", {}).get("name", "")) else "h200"
        mode = mode_of_doc(doc)
        for shape in doc["shapes"]:
            key = (doc["model"].get("preset"), mode, shape["seq"], shape["micro_batch"])
            if key not in registered or registered[key]["microbatches"] != shape.get("microbatches", 1):
                print(f"{key} x {shape.get('microbatches', 1)} micro-batches: not registered, left out")
                continue
            pred = registered[key]["predicted"][gpu_label]
            head = f"{key[0]:>5} {mode:>11} {key[2]:>5} {key[3]:>3} {shape.get('microbatches', 1):>2}"
            if shape["status"] != "ok":
                print(f"{head} {shape['status']}: {shape.get('error', '')[:80]}")
                continue
            ranks = shape.get("ranks") or [{"max_memory_allocated_bytes": shape["max_memory_allocated_bytes"]}]
            meas_mem = [r["max_memory_allocated_bytes"] / GiB for r in ranks]
            stage = [r.get("stage", i) for i, r in enumerate(ranks)]   # each rank against its own stage's prediction
            now = predict(key[0], key[3], mode, gpu_label, microbatches=registered[key].get("microbatches"), seq=key[2])
            te = pct(pred["step_ms"], shape["median_step_s"] * 1e3)
            try:
                me = [mem_error(pred, s, m) for s, m in zip(stage, meas_mem, strict=True)]
            except SimclusterError as exc:
                print(f"error: {reg_path}: run {key}: {exc}", file=sys.stderr)
                return 1
            # the current model scored by the registration's own rule: an older registration (no steady_mem_GiB) against
            # the job peak alone, so the "now" column compares like with like; the range figure is a separate line
            now_peak = now if "steady_mem_GiB" in pred else {"stage_mem_GiB": now["stage_mem_GiB"]}
            now_me = [mem_error(now_peak, s, m) for s, m in zip(stage, meas_mem, strict=True)]
            acc = errors.setdefault(mode, {"time": [], "mem": [], "now_time": [], "now_mem": []})
            acc["ranged"] = acc.get("ranged", False) or "steady_mem_GiB" in pred   # the rule's label, per mode
            acc["time"].append(te)
            acc["mem"] += me
            acc["now_time"].append(pct(now["step_ms"], shape["median_step_s"] * 1e3))
            if VARIANT in registered[key]:
                acc.setdefault("variant", []).append(pct(registered[key][VARIANT][gpu_label]["step_ms"], shape["median_step_s"] * 1e3))
            acc["now_mem"] += now_me
            if "steady_mem_GiB" not in pred and "steady_mem_GiB" in now:   # the range rule on an older set: labelled apart
                acc.setdefault("now_mem_range", []).extend(mem_error(now, s, m) for s, m in zip(stage, meas_mem, strict=True))
            print(f"{head} {shape['median_step_s'] * 1e3:>9.1f} {pred['step_ms']:>9.1f} {te:>+7.1f} {now['step_ms']:>9.1f} "
                  f"{' / '.join(f'{m:.2f}' for m in meas_mem):>15} {_registered_mem(pred):>15} "
                  f"{' / '.join(f'{e:+.1f}' for e in me):>13} {' / '.join(f'{e:+.1f}' for e in now_me):>13}")
    print()
    incomplete = 0
    for mode in modes:
        wanted = sum(1 for r in reg["runs"] if r["mode"] == mode)
        judged = len(errors.get(mode, {}).get("time", []))
        if judged < wanted:   # a failed or missing run: the mode's verdict would rest on the runs that survived
            print(f"{mode:>11}: incomplete ({judged} of {wanted} registered runs judged): no verdict")
            incomplete += 1
            continue
        t, m = [abs(e) for e in errors[mode]["time"]], [abs(e) for e in errors[mode]["mem"]]
        print(f"{mode:>11}: step mean |error| {statistics.mean(t):.1f}% (max {max(t):.1f}%, {len(t)} runs; target {TARGET_STEP:.0f}%: "
              f"{'met' if statistics.mean(t) <= TARGET_STEP else 'NOT met'}); memory max |error| {max(m):.1f}% (mean {statistics.mean(m):.1f}%, "
              f"{len(m)} GPUs; target {TARGET_MEM:.0f}%: {'met' if max(m) <= TARGET_MEM else 'NOT met'})")
        if "variant" in errors[mode]:
            v = errors[mode]["variant"]
            where = reg["calibration"]["host"][VARIANT]   # a device path (tpdp registered on the device): the bundle's host/
            where = where if not where.startswith("/") else f"{bundle.name}/host, registered as {where}"
            print(f"{'':>11}  registered variant (the mode's own host fit, {where}): step mean "
                  f"{statistics.mean(abs(e) for e in v):.1f}% ({' / '.join(f'{e:+.1f}' for e in v)})")
        nt, nm = [abs(e) for e in errors[mode]["now_time"]], [abs(e) for e in errors[mode]["now_mem"]]
        rule = "the range [peak after the first steps, job peak]" if errors[mode].get("ranged") else "the job peak, the registration's rule"
        if (nt, nm) != (t, m):
            print(f"{'':>11}  current model (changed after the read: not held out): step mean {statistics.mean(nt):.1f}%, "
                  f"memory max {max(nm):.1f}% (mean {statistics.mean(nm):.1f}%; against {rule})")
        if "now_mem_range" in errors[mode]:   # the newer range rule applied to a set registered before it: not its verdict
            r = [abs(e) for e in errors[mode]["now_mem_range"]]
            print(f"{'':>11}  current model, memory by the range rule (declared after this set was registered: not "
                  f"its verdict): max {max(r):.1f}% (mean {statistics.mean(r):.1f}%)")
    return 1 if incomplete else 0


def main(argv: list[str]) -> int:
    ap = ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("bundle", nargs="?", metavar="BUNDLE", help="a bundle with registered.yaml and runs/*.json")
    ap.add_argument("--register", metavar="PATH", help="write the predictions of the plan to PATH (before the runs)")
    ap.add_argument("--plan", choices=sorted(PLANS), default="regimes", help="the layouts (module docstring)")
    ap.add_argument("--host", metavar="FOLDER", help="--plan tpdp / twohost: this lease's host runs (the variant's fits)")
    args = ap.parse_args(argv)
    if args.register:
        try:
            register(refuse_existing(Path(args.register)), args.plan, Path(args.host) if args.host else None)
        except SimclusterError as exc:
            print(f"llm_eager_regimes: {exc}", file=sys.stderr)
            return 2
        return 0
    if not args.bundle:
        ap.error("give a BUNDLE or --register PATH")
    bundle = Path(args.bundle) if Path(args.bundle).is_absolute() else ROOT / args.bundle
    if not bundle.is_dir():
        print(f"error: {args.bundle}: no such bundle", file=sys.stderr)
        return 1
    return compare(bundle)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
