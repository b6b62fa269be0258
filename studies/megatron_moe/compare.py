"""Megatron-Core MoE decoder steps (studies/megatron_moe/device.py: forward + backward of one micro-batch, no optimizer) against
the LLM model's per-stage forward + backward (a comparison, not a test).

    python studies/megatron_moe/compare.py [JSON_OR_FOLDER ...]      # without arguments: the registered predictions

The model: framework megatron-local-spec (Megatron's local DotProductAttention materializes the scores; no TE; the MoE
layer issued from the host around the dispatcher's sync at the host seconds per kernel read from the session-25 traces,
framework.MoeHost),
the alltoall dispatcher (its four permutation copies with several local experts), per-expert GEMMs, QK-norm, bf16,
expert parallelism over the ranks inside one NVLink node (the 4-rank H200
card); the sum of one micro-batch's forward and backward on the stage (llm/work.py build_work: compute, exposed EP
dispatch and combine), not the data-parallel gradient reduction or the optimizer, which the runner does not run.
Error = predicted / measured - 1 on rank 0's median step.

A set run in arms (calibration/h200x2-megatron-moe3-2026-11-28: files megatron-moe-KIND-xN-NAME-armX.json) is also
printed per configuration with every arm against its one registered prediction, each arm's mean |error| and the ranks'
host-issue spread, and the reading rule declared in that folder's README.md before the run (verdict below).
Last, today's model's mean |error| over the measured runs (per arm; profiled megatron-moe-trace-* re-runs left out):
development numbers, the ones llm.md's "Today's model" table quotes. A path that is neither a run file nor a folder
holding megatron-moe*.json files is one line, exit 2.
"""

from __future__ import annotations

import re
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from simcluster.errors import SimclusterError  # noqa: E402

# the one pricing of the runner's step, with its cards (register.py and kernel_kinds.py import them from here)
from simcluster.heldout.moe_lab import GPU_CARDS, NVLINK, device_gpu  # noqa: E402, F401
from simcluster.heldout.moe_lab import step_s as predicted_s  # noqa: E402, F401
from simcluster.script_args import ArgumentParser  # noqa: E402

# the registered configurations (runner flags): a Qwen3-30B-A3B-like layer at EP 4 and at EP 1, a Mixtral-like one at EP 4
CONFIGS = {
    "qwen3-like-ep4": dict(layers=4, hidden=2048, heads=32, kv_heads=4, head_dim=128, experts=128, top_k=8, expert_ffn=768,
                           vocab=32768, seq=4096, micro_batch=1, ep=4),
    "qwen3-like-ep1": dict(layers=4, hidden=2048, heads=32, kv_heads=4, head_dim=128, experts=128, top_k=8, expert_ffn=768,
                           vocab=32768, seq=4096, micro_batch=1, ep=1),
    "mixtral-like-ep4": dict(layers=4, hidden=2048, heads=16, kv_heads=8, head_dim=128, experts=8, top_k=2, expert_ffn=5632,
                             vocab=32768, seq=4096, micro_batch=1, ep=4),
}


def documents(paths: list[str]) -> list[tuple[str, dict]]:
    """Each run file's document, read as the error-band table reads it (heldout/moe_lab.run_document): a run that wrote
    none, or was cut off, is {} with rank 0's why, so it prints as not measured."""
    from simcluster.heldout.moe_lab import run_document

    out = []
    for p in paths:
        path = Path(p)
        for f in ([path] if path.is_file() else sorted(path.glob("megatron-moe*.json"))):
            doc, why = run_document(f)
            out.append((f.name, doc if doc is not None else {"rank0": {"status": "not measured", "error": why}}))
    return out


def main(argv: list[str]) -> int:
    ap = ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("inputs", nargs="*")
    ap.add_argument("--gpu", choices=sorted(GPU_CARDS), default="H200")
    ap.add_argument("--ranks", type=int, default=4, help="GPUs of the registered predictions printed without inputs")
    args = ap.parse_args(argv)
    for p in args.inputs:   # a path that is no run file and no folder of them: one line naming it, not the defaults
        path = Path(p)
        if not (path.is_file() or (path.is_dir() and any(path.glob("megatron-moe*.json")))):
            print(f"compare.py: {p}: no megatron-moe*.json run file{'s in the folder' if path.is_dir() else ' there'} "
                  "(not a MoE lab set)", file=sys.stderr)
            return 2
    docs = documents(args.inputs)
    if not docs:
        if args.ranks not in NVLINK:
            print(f"compare.py: --ranks {args.ranks}: no NVLink card for the MoE lab step (known: "
                  f"{', '.join(map(str, NVLINK))} GPUs)", file=sys.stderr)
            return 2
        for name, m in CONFIGS.items():
            t, parts = predicted_s(m, args.ranks, args.gpu)
            print(f"{name:18s} {args.ranks} x {args.gpu}: predicted {t * 1e3:8.2f} ms  "
                  + ", ".join(f"{k} {v * 1e3:.2f}" for k, v in sorted(parts.items())))
        return 0
    groups: dict[Path, list[str]] = {}   # each folder (a file's own folder) is read against its own registration: runs of
    for p in args.inputs:                # two leases are never merged
        groups.setdefault(Path(p) if Path(p).is_dir() else Path(p).parent, []).append(p)
    for folder, paths in groups.items():
        if len(groups) > 1:
            print(f"== {folder}")
        try:
            report(documents(paths), paths)
        except SimclusterError as exc:   # a run on a GPU or rank count the model has no card for: one line
            print(f"compare.py: {folder}: {exc}", file=sys.stderr)
            return 2
    return 0


def report(docs: list[tuple[str, dict]], inputs: list[str]) -> None:
    """Every run of one folder (or of the files given) against the model and its registration; arms and the rule."""
    registered = registered_predictions(inputs)
    gpu_only = {name: run.get("gpu_only_s") for reg in registrations(inputs) for name, run in (reg.get("runs") or {}).items()
                if isinstance(run, dict)}
    declared = declared_arms(inputs)
    arms: dict[str, dict[str, dict]] = {}   # configuration -> arm -> its measured step and the ranks' host spread
    today: dict[str | None, list[float]] = {}   # arm (None: a set without arms) -> today's model's errors
    for fname, doc in docs:
        r0 = doc.get("rank0", {})
        name, arm = run_key(fname)
        if r0.get("status") != "ok":
            print(f"{fname}: not measured: {r0.get('error', 'no document')}")
            continue
        m = {**doc["model"], "ep": doc["parallel"]["ep"]}
        t, parts = predicted_s(m, doc["world_size"], device_gpu(doc.get("device", "")))
        meas = r0["median_step_s"]
        if not fname.startswith("megatron-moe-trace-"):   # a profiled re-run (moe's device_run_trace.sh) is no step row
            today.setdefault(arm, []).append(t / meas - 1)
        prof = r0.get("profile", {})
        busy = sum(prof.get(f"{c}_time_per_step_s", 0.0) for c in ("kernel", "gpu_memcpy", "gpu_memset"))
        print(f"{fname}: measured {meas * 1e3:.2f} ms (GPU busy {busy * 1e3:.2f} ms, {prof.get('kernel_per_step', 0):.0f} kernels, "
              f"host issue {min(r0['host_issue_s']) * 1e3:.2f} ms), predicted {t * 1e3:.2f} ms ({(t / meas - 1) * 100:+.1f}%); "
              + ", ".join(f"{k} {v * 1e3:.2f}" for k, v in sorted(parts.items())))
        reg = registered.get(name)
        if reg is not None:   # the held-out number: the prediction written before the run, not the model of today
            print(f"    registered {reg * 1e3:.2f} ms ({(reg / meas - 1) * 100:+.1f}%)")
        if gpu_only.get(name) and busy > 0:   # moe6 on: the registered step's GPU-only part (reported, not judged)
            print("    " + split_line(reg, gpu_only[name], meas, busy))
        if arm is not None:
            print("    " + ranks_line(doc))
            for problem in launch_problems(doc, declared.get(arm)):
                print(f"    the launch differs from arm {arm}'s declaration: {problem}")
            if arm == "B" and not all(p and p.get("cpus") for p in doc.get("pin_per_rank") or [None]):
                print("    arm B without every rank pinned (the README's rule): not counted as arm B")
                continue
            arms.setdefault(name, {})[arm] = dict(measured_s=meas, **host_spread(doc))
    if arms:
        print_arms(arms, registered, one_gpu=all(doc["world_size"] == 1 for _, doc in docs if doc.get("world_size")))
    for arm, errs in sorted(today.items(), key=lambda kv: kv[0] or ""):   # development: the registered numbers judge
        print(f"today's model{'' if arm is None else f', arm {arm}'}: mean |error| "
              f"{statistics.fmean(abs(e) for e in errs) * 100:.1f}% over {len(errs)} runs, mean error {statistics.fmean(errs) * 100:+.1f}%")


def split_line(registered_s: float | None, gpu_only_s: float, measured_s: float, busy_s: float) -> str:
    """A run's miss split into GPU and host (registered from moe6 on; reported, not judged): the registered GPU-only part
    (the model with the MoE host issue at 0) against rank 0's profiled GPU busy time (kernels, copies and sets summed,
    NCCL kernels' waits included: kernel_kinds.py splits it by kind), and the registered host part (step - GPU-only)
    against the measured step's time beyond that busy time."""
    host = f"registered host part {(registered_s - gpu_only_s) * 1e3:.2f} ms, " if registered_s else ""
    return (f"GPU-only part registered {gpu_only_s * 1e3:.2f} ms vs GPU busy {busy_s * 1e3:.2f} ms "
            f"({(gpu_only_s / busy_s - 1) * 100:+.1f}%); {host}measured step beyond GPU busy {(measured_s - busy_s) * 1e3:.2f} ms")


def run_key(fname: str) -> tuple[str, str | None]:
    """('mixtral-like-ep2', None) from megatron-moe-h200-x4-mixtral-like-ep2.json; ('NAME', 'B') from
    megatron-moe-h200-x2-NAME-armB.json."""
    stem = re.sub(r"^megatron-moe-[a-z0-9]+-x\d+-", "", fname.removesuffix(".json"))
    m = re.search(r"-arm([A-Z])$", stem)
    return (stem[:m.start()], m.group(1)) if m else (stem, None)


def issue_medians(doc: dict) -> list:
    """Each rank's median (unprofiled) host issue of a step: device.py's host_issue_median_s_by_rank (format 3), the
    format-2 bundles' median_host_issue_s_per_rank (moe .. moe6) where it is absent."""
    got = doc.get("host_issue_median_s_by_rank")
    return list(got if got is not None else doc.get("median_host_issue_s_per_rank") or [])


def host_spread(doc: dict) -> dict:
    """The ranks' median (unprofiled) host issue of a step: the slowest over the fastest."""
    issue = [x for x in issue_medians(doc) if x]
    return {"host_spread": max(issue) / min(issue) if len(issue) > 1 else None}


def ranks_line(doc: dict) -> str:
    """Per rank: median step, median host issue (ms), the CPUs it was pinned to (or its error), and whether the pinned
    GPU is the one CUDA gave it."""
    out = []
    pins = doc.get("pin_per_rank") or [None] * doc["world_size"]
    places = doc.get("placement_per_rank") or [{}] * doc["world_size"]
    for i, (step, issue) in enumerate(zip(doc["median_step_s_per_rank"], issue_medians(doc), strict=False)):
        pin, place = pins[i] or {}, places[i] or {}
        where = pin.get("cpus_after") or pin.get("error") or f"unpinned ({len(place.get('cpus_allowed', []))} CPUs allowed)"
        same_gpu = "" if not pin.get("gpu_pci") or pin["gpu_pci"] == place.get("gpu_pci") else f" PINNED FOR {pin['gpu_pci']}, RAN ON {place.get('gpu_pci')}"
        out.append(f"rank {i} step {step * 1e3:.2f} / host issue {issue * 1e3:.2f} ms, CPUs {where}{same_gpu}")
    return "; ".join(out) + f"; launch {doc.get('launch')}"


def declared_arms(paths: list[str]) -> dict[str, dict]:
    """The arms a folder's registered.yaml declares (register.py ARMS as registered), by letter."""
    return {arm: a for reg in registrations(paths) for arm, a in (reg.get("arms") or {}).items()}


def launch_problems(doc: dict, arm: dict | None) -> list[str]:
    """Where a run's recorded launch (device.py's 'launch') is not its arm's declared one: warm-up, steps, pinning,
    CUDA_MODULE_LOADING."""
    if not arm:
        return []
    words, launch = arm["device_flags"].split(), doc.get("launch") or {}
    want = {"warmup": int(words[words.index("--warmup") + 1]), "steps": int(words[words.index("--steps") + 1]),
            "pin": "--pin" in words,
            "cuda_module_loading": dict(e.split("=", 1) for e in arm["env"].split()).get("CUDA_MODULE_LOADING")}
    return [f"{k} {launch.get(k)!r}, declared {v!r}" for k, v in want.items() if launch.get(k) != v]


def verdict(mean_a: float, mean_b: float, measured: int, of: int) -> str:
    """The moe3 set's reading rule, as declared before the run (calibration/h200x2-megatron-moe3-2026-11-28/README.md),
    first match: arms' mean |error| over the configurations, fractions."""
    if measured < of - 1:
        return "incomplete: fewer than three configurations measured in both arms; no reading"
    if mean_b < 0.10 and mean_a > 0.20:
        return "1: launch hygiene explains the held-out miss; the lab's MoE launches pin by default (device.py --pin, eager loading, warm-up 10)"
    if mean_a <= 0.10:
        return "2: no miss as launched before (A within 10%): the 4-GPU miss does not reproduce on 2 GPUs; hygiene is not tested"
    if mean_a - mean_b >= 0.10:
        return "3: hygiene is a part (B at least 10 points better than A); B's remaining error is the hosts' issue level"
    return "4: not launch hygiene (B within 10 points of A, or worse): pinning is not made the default; the late rank is the host itself"


def verdict_one_gpu(mean_a: float, mean_b: float, measured: int, of: int) -> str:
    """The moe4 set's reading rule (one GPU, EP 1), as declared before the run (calibration/h200x1-megatron-moe4-2026-11-28/
    README.md), first match: arms' mean |error| over the configurations, fractions."""
    if measured < of - 1:
        return "incomplete: fewer than three configurations measured in both arms; no reading"
    if mean_a <= 0.10:
        return ("1: the local-spec host model holds where no rank waits for another (A within 10%): the multi-GPU misses "
                "are the ranks' skew, not the host constants")
    if mean_b <= 0.10:
        return "2: launch hygiene matters on one GPU too (A over 10%, B within 10%)"
    return "3: the single-rank host constants are off (both arms over 10%): the mean signed error says which way"


def verdict_pinned(errors: list[float], of: int) -> str:
    """The moe5 set's reading rule (one arm, B), as declared before the run (calibration/h200x2-megatron-moe5-2026-11-30/
    README.md), first match: the configurations' errors (registered / measured - 1), fractions."""
    if len(errors) < min(3, of):
        return "0: fewer than three configurations measured; no reading"
    mean_abs = statistics.fmean(abs(e) for e in errors)
    if mean_abs <= 0.15 and max(abs(e) for e in errors) <= 0.25:
        return "1: the local spec's kernel-by-kernel pricing holds on compute-bound layers (mean |error| <= 15%, each <= 25%)"
    if statistics.fmean(errors) < -0.15:
        return "2: still fast on compute-bound layers (mean error < -15%): read the traces' kinds (kernel_kinds.py) for where"
    return "3: the pricing does not hold (slow, or scattered past the bounds): the mend is not validated"


def print_arms(arms: dict[str, dict[str, dict]], registered: dict[str, float], one_gpu: bool = False) -> None:
    """Every configuration's arms against its one registered prediction, each arm's mean |error| and the verdict."""
    names = sorted({a for runs in arms.values() for a in runs})
    print("\nconfiguration                registered | " + " | ".join(f"arm {a}: measured, error, host spread" for a in names))
    errors: dict[str, list[float]] = {a: [] for a in names}
    for name, runs in arms.items():
        reg = registered.get(name)
        cells = []
        for a in names:
            r = runs.get(a)
            if r is None or reg is None:
                cells.append("not measured" if r is None else f"{r['measured_s'] * 1e3:.2f} ms, not registered")
                continue
            err = reg / r["measured_s"] - 1
            errors[a].append(err)
            spread = f"{r['host_spread']:.2f}x" if r["host_spread"] else "-"
            cells.append(f"{r['measured_s'] * 1e3:8.2f} ms {err * 100:+6.1f}% {spread}")
        print(f"{name:28s} {reg * 1e3 if reg else float('nan'):7.2f} ms | " + " | ".join(cells))
    for a in names:
        if errors[a]:
            print(f"arm {a}: mean |error| {statistics.fmean(abs(e) for e in errors[a]) * 100:.1f}% over {len(errors[a])}, "
                  f"mean error {statistics.fmean(errors[a]) * 100:+.1f}%")
    if names == ["B"]:   # a set run in the pinned arm only (moe5)
        print(f"reading rule (README, declared before the run), arm B: {verdict_pinned(errors['B'], len(registered))}")
    if {"A", "B"} <= set(names) and errors["A"] and errors["B"]:
        both = [n for n, runs in arms.items() if {"A", "B"} <= set(runs) and n in registered]
        mean = {a: statistics.fmean(abs(registered[n] / arms[n][a]["measured_s"] - 1) for n in both) if both else float("nan")
                for a in ("A", "B")}
        print(f"reading rule (README, declared before the run), on the {len(both)} configurations measured in both arms: "
              f"A {mean['A'] * 100:.1f}%, B {mean['B'] * 100:.1f}% -> "
              f"{(verdict_one_gpu if one_gpu else verdict)(mean['A'], mean['B'], len(both), len(registered))}")


def registration_folders(paths: list[str]) -> list[Path]:
    """The folder holding the registered.yaml (studies/megatron_moe/register.py) of each path (a folder, or a file's
    folder), or its parent where it has none: a repeat lease of a set (moe4's lease2/) is read against its parent's."""
    out = []
    for p in map(Path, paths):
        folder = p if p.is_dir() else p.parent
        found = next((f for f in (folder, folder.parent) if (f / "registered.yaml").is_file()), None)
        if found is not None and found not in out:
            out.append(found)
    return out


def registrations(paths: list[str]) -> list[dict]:
    """Each registration as written (its arms too)."""
    from simcluster.strict import load_yaml

    return [load_yaml(f / "registered.yaml", what="registered MoE lab set") for f in registration_folders(paths)]


def registered_predictions(paths: list[str]) -> dict[str, float]:
    """Each run's registered step (s), by run name, read as the error-band table reads it (heldout/moe_lab)."""
    from simcluster.heldout.moe_lab import registered_steps

    return {name: r["predicted_s"] for f in registration_folders(paths) for name, r in registered_steps(f).items()}


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
