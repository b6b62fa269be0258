"""Issue 44, session 44: the stage hosts' coupling in eager pipelines at 2 GPUs (PP+host-bound), judged on a registered
2 x H200 set (calibration/h200x2-ppcouple-2026-11-30): two host-bound shapes new to calibration/, each under
torch.distributed.pipelining's 1F1B and GPipe (2 stages, 4 micro-batches), each in two separate processes on one lease,
the lease's own hidden-128 single-mode host probe (runs/host: 2 and 32 layers) and the same decoder as a 2-stage 1F1B
pipeline (runs/probe: 4 and 32 layers; GPU work negligible, so its step is the two hosts), both before the rounds.

    python validation/ppcouple.py --register calibration/BUNDLE/registered.yaml   # before the device call
    python validation/ppcouple.py [calibration/BUNDLE]                            # after: read-out and verdicts

Why. The pphost set (calibration/h200x2-pphost-2026-11-30, read once) read D MODEL (the hosts' coupling): with the
lease's own single host fit the model priced the pipelines slow (+6.2%), its stages' hosts in series (a stage's host
started issuing a micro-batch only once its input had arrived), while both ranks' hosts issued for 0.90-1.00 of the
step. torch.distributed.pipelining over NCCL enqueues a stage's receive and the kernels behind it without waiting (the
stream waits: ProcessGroupNCCL's Work.wait without blocking wait), so the candidate lets each stage's host issue free
(simulate.free_host, framework.free_stage_hosts; docs/models/llm.md), not in the product. The pphost set's 11 processes
and the 11 earlier host-bound 2-stage processes (studies/pp_host_noise.py) are development for it; this set is held out.
Registered per row: `product`, the model at the registering commit (the hosts in series; the product's single host
term, the mean of four 2 x H200 leases' fits, 24.71 us per kernel; heldout/eager_regimes.registered_row: step, host
share, stage-0 memory) and `free`, the candidate (the same with the hosts free). The read-out computes both with the
lease's own single host fit (validation/pphost.own_lease for the product), the comparison the verdict rests on.
PROCESSES: `simcluster.runner.llm_step --mode pp` (torchrun, 2 ranks, 3 warm-up, 10 timed steps), one row per process,
the four rows in turn, two rounds; hidden-128 single-mode host runs (the product host folder's shapes 128:1, 512:1).
"""

from __future__ import annotations

import json
import math
import statistics
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "validation"))

import pphost  # noqa: E402  (validation/pphost.py: its rules' helpers, pooled leases, own-fit reader)

from simcluster.heldout.registration import print_verdicts, registering_commit, set_main, write_registration  # noqa: E402

BUNDLE = ROOT / "calibration" / "h200x2-ppcouple-2026-11-30"
SHAPES = (("0.3b", 1792, 1), ("1.1b", 896, 1))   # (preset, seq, micro_batch): new to calibration/, host share >= 0.85
SCHEDULES = pphost.SCHEDULES
MICROBATCHES, PROCESSES = 4, 2
HOST_LAYERS = (2, 32)   # runs/host/single-L<n>.json, before the rounds
# the pipeline probe: the host probe's hidden-128 decoder (GPU work negligible: the step is the two hosts) as a 2-stage
# 1F1B pipeline at two layer counts, one process each (runs/probe/pp-1f1b-L<n>.json), before the rounds; in series the
# hosts' critical path is about (m + 1) / m of the free one's (m = 4 micro-batches)
PROBE_LAYERS, PROBE_SEQ = (4, 32), 256
JUDGE = pphost.JUDGE   # target 8%, memory 10%, bias band 0.05
RULES = {
    "measured": pphost.RULES["measured"],
    "N": pphost.RULES["N"],
    "B": pphost.RULES["B"] + " (the registered `product`: the hosts in series)",
    "M": pphost.RULES["M"],
    "F": "the registered candidate `free` (the hosts free, the product's host term): its mean |error| and lease bias; NO "
         "WORSE if its mean |error| is within the product's + 1 point, else WORSE",
    "P": pphost.RULES["P"],
    "H": pphost.RULES["H"].replace("SINGLE_LEASES", "pooled_single_host's leases"),
    "O": "the candidate (hosts free) with this lease's own single-mode host fit (runs/host, before the rounds): mean "
         "|error| over the processes and its lease bias (B's test)",
    "S": "the product's model (hosts in series) with the same own fit: mean |error| and lease bias",
    "T": "the pipeline probe (runs/probe, one process per layer count): rank 0's median step against the hosts free and "
         "the hosts in series, each with this lease's own single host fit: FREE if the free model's mean |error| over the "
         "probe's processes is below the series model's, else SERIES; NO DATA without the probe or the own fit",
    "Q": "reported, not judged: the launch queue probe's depth (runs/queue/launch-queue.json) against the model's 1,000",
    "D": "NOISE if N is ABOVE the target; else O's mean |error| against S's: O below S -> the coupling HOLDS if O is within "
         "the target with lease bias NONE, else the coupling is BETTER with the residual the host level (O FAST: the "
         "pipelines' host cost per kernel above the single probe's; O SLOW: a blocking point the coupling misses; "
         "UNDECIDED: neither); O not below S -> WORSE (the coupling is not adopted); NO DATA without the own fit",
}


def rows_plan() -> list[dict]:
    """Each registered row (device_run.sh's stem NAME-rK.json), as validation/pphost.py's rows."""
    return [{"name": f"{mode}-{p}", "mode": mode, "preset": p, "seq": s, "micro_batch": mb, "microbatches": MICROBATCHES,
             "processes": PROCESSES} for p, s, mb in SHAPES for mode in SCHEDULES]


def row_predicted(row: dict) -> dict:
    """A pipeline row's registered `product` (heldout/eager_regimes.registered_row with memory) and `free` (the
    candidate: step and host share) predictions (validation/ppblock.py too)."""
    from simcluster.heldout.eager_regimes import regime_predict, registered_row

    reg = registered_row(row["preset"], row["seq"], row["micro_batch"], row["mode"], memory=True,
                         microbatches=row["microbatches"], free_hosts=False)   # the product at registration: in series
    free = regime_predict(row["preset"], row["micro_batch"], row["mode"], "h200", microbatches=row["microbatches"],
                          seq=row["seq"], free_hosts=True)
    return {"product": reg["predicted"], "free": {"step_ms": free["step_ms"], "host_share": free["host_share"]}}


def predicted() -> list[dict]:
    return [row | {"predicted": row_predicted(row)} for row in rows_plan()]


def probe_step(layers: int, own: Path | None = None, free: bool = False) -> float:
    """The pipeline probe's step (ms) at `layers`: the product's host term or `own` folder's fit, the hosts in series or
    free."""
    from simcluster.heldout.eager_regimes import regime_predict

    return regime_predict("tiny", 1, "pp-1f1b", "h200", own, MICROBATCHES, PROBE_SEQ, free_hosts=free,
                          layers=layers)["step_ms"]


def probe_plan() -> list[dict]:
    """The pipeline probe's registered rows (device_run.sh's probe/pp-1f1b-L<n>.json)."""
    return [{"name": f"pp-1f1b-L{n}", "layers": n, "seq": PROBE_SEQ,
             "predicted": {"product": {"step_ms": probe_step(n)}, "free": {"step_ms": probe_step(n, free=True)}}}
            for n in PROBE_LAYERS]


def probe_read(bundle: Path, reg: dict, own: Path, v: dict, left: list[str]) -> list[dict]:
    """Rule T: each probe process that ran its registered configuration (rank 0's median step, s) with the free and the
    series model's step (s) under `own`'s single host fit."""
    from simcluster.heldout.eager import _document

    out = []
    for r in reg.get("probe") or []:
        path = bundle / "runs" / "probe" / f"{r['name']}.json"
        doc, why = _document(path.read_text(errors="replace")) if path.is_file() else (None, "did not run")
        shape = ((doc or {}).get("shapes") or [{}])[0]
        model = (doc or {}).get("model") or {}
        if not why and (model.get("layers") != r["layers"] or model.get("hidden") != 128 or shape.get("seq") != r["seq"]
                        or (doc.get("pipeline") or {}).get("schedule") != "Schedule1F1B" or not shape.get("median_step_s")):
            why = "not the registered configuration or no timed step"
        if why:
            left.append(f"probe {path.name}: {why}")
            continue
        out.append({"row": r, "measured_s": shape["median_step_s"], "free_s": probe_step(r["layers"], own, free=True) / 1e3,
                    "series_s": probe_step(r["layers"], own) / 1e3})
    if not out or "O" not in v or v["O"].startswith("NO DATA"):
        v["T"] = "NO DATA: no probe process or no own host fit"
        return out
    free = statistics.mean(abs(q["free_s"] / q["measured_s"] - 1) for q in out)
    series = statistics.mean(abs(q["series_s"] / q["measured_s"] - 1) for q in out)
    v["T"] = (f"{'FREE' if free < series else 'SERIES'}: the probe's mean |error| with this lease's own host fit, hosts "
              f"free {free:.1%} (mean error {statistics.mean(q['free_s'] / q['measured_s'] - 1 for q in out):+.1%}), "
              f"in series {series:.1%}, over {len(out)} processes")
    return out


def queue_depth(bundle: Path) -> str:
    """Rule Q (reported, not judged): runs/queue/launch-queue.json's depth (simcluster/runner/launch_queue.py) against
    the model's llm/host.LAUNCH_QUEUE_KERNELS."""
    from simcluster.llm.host import LAUNCH_QUEUE_KERNELS

    path = bundle / "runs" / "queue" / "launch-queue.json"
    text = path.read_text(errors="replace") if path.is_file() else ""
    try:
        doc = json.loads(text[text.find("{"):]) if "{" in text else None
        depths = [r["depth"] for r in doc["repeats"]] if isinstance(doc, dict) and doc.get("tool") == "launch-queue" else None
    except (ValueError, KeyError, TypeError):
        depths = None
    if not depths:
        return "reported, not judged: NO DATA (runs/queue/launch-queue.json missing or not the probe's document)"
    return (f"reported, not judged: launches one stream queued before the host blocked, per repeat "
            f"{' / '.join('>= ' + str(doc['launches']) if d is None else str(d) for d in depths)} (the model's "
            f"LAUNCH_QUEUE_KERNELS {LAUNCH_QUEUE_KERNELS})")


def register(path: Path) -> None:
    commit = registering_commit(ROOT)
    rows = predicted()
    doc = {"registered_at_commit": commit, "script": "validation/ppcouple.py --register",
           "calibration": {"gpu_card": "models/gpu/h200-sxm-interleaved.yaml",
                           "collective_card": "models/collective/h200x2-primitives.yaml",
                           "host": {"h200": "calibration/h200x2-llm-host-2026-11-23"}},
           "judge": JUDGE, "rules": RULES, "pooled_single_host": pphost.pooled_single(), "probe": probe_plan(), "rows": rows}
    write_registration(path, "# Predictions registered before the runs (issue 44, session 44); never edited after them.\n"
                       + yaml.safe_dump(doc, sort_keys=False, width=120))
    for r in doc["probe"]:
        print(f"{r['name']:16} hidden-128 L{r['layers']} {r['seq']}:1 x{MICROBATCHES}  product (hosts in series) "
              f"{r['predicted']['product']['step_ms']:8.2f} ms  free {r['predicted']['free']['step_ms']:8.2f} ms")
    for r in rows:
        p, f = r["predicted"]["product"], r["predicted"]["free"]
        print(f"{r['name']:16} {r['seq']}:{r['micro_batch']} x{r['microbatches']}  product (hosts in series) {p['step_ms']:8.2f} ms "
              f"(host share {p['host_share']})  free {f['step_ms']:8.2f} ms  memory {p['steady_mem_GiB']:.2f}.."
              f"{p['peak_mem_GiB']:.2f} GiB")
    print(f"registered {len(rows)} rows in {path} (model at {commit[:10]})")


def own_steps(folder: Path, rows: list[dict], free: bool) -> dict | None:
    """Each row's step (s) with the single host fit of the runs in `folder` (two or more layer counts; else None), the
    hosts in series or, `free`, free."""
    from simcluster.heldout.eager_regimes import regime_predict
    from simcluster.llm.eager import fit_modes

    try:
        if not folder.is_dir() or fit_modes(folder).get("single") is None:
            return None
    except ValueError:
        return None
    return {r["name"]: regime_predict(r["preset"], int(r["micro_batch"]), r["mode"], "h200", folder, int(r["microbatches"]),
                                      int(r["seq"]), free_hosts=free)["step_ms"] / 1e3 for r in rows}


def rule_f(procs: list[dict], m: float | None, v: dict) -> None:
    """Rule F: the registered candidate `free` (its free_s) against the product's mean |error| `m` (validation/ppblock.py
    too)."""
    f = pphost._mean_abs(procs, "free_s")
    if f is None:
        v["F"] = "NO DATA: no process ran"
        return
    fb = math.expm1(statistics.mean(math.log(q["free_s"] / q["measured_s"]) for q in procs))
    v["F"] = (f"{'NO WORSE' if f <= m + 0.01 else 'WORSE'}: the candidate (hosts free) at the product's host term, mean "
              f"|error| {f:.1%} (product {m:.1%}), its lease bias {fb:+.1%}")


def own_fit_rules(bundle: Path, reg: dict, procs: list[dict], v: dict, target: float, band: float,
                  product_s: float | None = None) -> tuple[dict | None, dict | None, dict]:
    """Rules H, O and S (validation/ppblock.py too): this lease's single host fit (runs/host) against the registered
    pooled term, and each row's step (s) with it, the hosts free (O) and in series (S); returns (free steps, series
    steps, {rule: (bias word, mean |error|)}); `product_s`: H's product per kernel (pphost.own_lease)."""
    regs = reg["rows"]
    keys = {"candidate_single_host": reg["pooled_single_host"], "rows": regs}   # pphost.own_lease's registration keys
    series = pphost.own_lease(bundle, keys, procs, v, product_s)   # rule H; the product's model (the hosts in series)
    own = own_steps(bundle / "runs" / "host", regs, free=True) if series is not None else None
    words = {}
    for rule, steps, what in (("O", own, "the hosts free"), ("S", series, "the hosts in series")):
        if steps is None or not procs:
            v[rule] = v.get("O") if "O" in v else "NO DATA: no own host fit or no process"
            continue
        errs = [steps[q["row"]["name"]] / q["measured_s"] - 1 for q in procs]
        word = pphost._bias(v, rule, [1 + e for e in errs], band)
        mean = statistics.mean(map(abs, errs))
        words[rule] = (word, mean)
        v[rule] = (f"{what}, this lease's own single host fit: mean |error| {mean:.1%} "
                   f"({'within' if mean <= target else 'not within'} the target); {v[rule]}")
    return own, series, words


def read_out(bundle: Path) -> dict:
    reg, judge, regs = pphost._registered(bundle, "free", "pooled_single_host")
    got = pphost.read_set(bundle, regs, judge, "free")   # the processes, rules N, B, M
    procs, left, docs, v, above, m = (got[k] for k in ("procs", "left", "docs", "v", "above", "m"))
    target, band = got["target"], got["band"]
    rule_f(procs, m, v)
    v["P"] = pphost.rule_p(procs, judge)
    own, series, words = own_fit_rules(bundle, reg, procs, v, target, band)
    if above:
        v["D"] = "NOISE: process noise alone exceeds the target"
    elif "O" not in words or "S" not in words:
        v["D"] = "NO DATA: the own host fit or the processes are missing"
    elif words["O"][1] >= words["S"][1]:
        v["D"] = "WORSE: the hosts free price this lease no better than the hosts in series; the coupling is not adopted"
    elif words["O"][0] == "NONE" and words["O"][1] <= target:
        v["D"] = "HOLDS: the hosts free beat the hosts in series and price this lease within the target without a bias"
    else:
        rest = {"FAST": "the pipelines' host cost per kernel above the single probe's (a pipeline host term)",
                "SLOW": "a blocking point the coupling misses"}.get(words["O"][0], "neither fast nor slow")
        v["D"] = f"BETTER: the hosts free beat the hosts in series; the residual is the host level: {rest}"
    probe = probe_read(bundle, reg, bundle / "runs" / "host", v, left)
    v["Q"] = queue_depth(bundle)
    v["I"] = pphost.host_by_rank(docs)
    return {"procs": procs, "own": own or {}, "series": series or {}, "probe": probe, "left": left, "verdicts": v}


def show_processes(result: dict) -> None:
    """One line per process: measured, the product's and the candidate's errors, the own fit's both ways, memory
    (validation/ppblock.py too)."""
    for q in result["procs"]:
        r, meas = q["row"], q["measured_s"]
        own, ser = result["own"].get(r["name"]), result["series"].get(r["name"])
        print(f"{r['name']:16} {r['seq']}:{r['micro_batch']} x{r['microbatches']}  measured {meas * 1e3:7.1f} ms  product "
              f"{q['product_s'] / meas - 1:+6.1%}  free {q['free_s'] / meas - 1:+6.1%}"
              + ("" if own is None else f"  own fit: free {own / meas - 1:+6.1%} series {ser / meas - 1:+6.1%}")
              + f"  memory {q['mem_err']:+.1%}")


def show(result: dict) -> None:
    show_processes(result)
    for q in result["probe"]:
        meas = q["measured_s"]
        print(f"probe {q['row']['name']:10} measured {meas * 1e3:7.1f} ms  own fit: free {q['free_s'] / meas - 1:+6.1%} "
              f"series {q['series_s'] / meas - 1:+6.1%}")
    print_verdicts(result["verdicts"], result["left"])


def main(argv: list[str]) -> int:
    return set_main(argv, __doc__.splitlines()[0], BUNDLE, register, read_out, show)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
