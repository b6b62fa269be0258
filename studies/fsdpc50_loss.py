"""Session 50 fsdpc50 (issue 44): why the compiled FSDP2 step WITHOUT checkpointing reads 5-11% slow (x2set49, mem49)
while the same step with full checkpointing is priced within 2-5% -- from what the runs recorded (no profiler trace was
taken: --profile 0; per process the median step, each rank's host issue per step, dynamo's graph counts, the peak).
DEVELOPMENT: these rows chose the candidate framework.compiled_nock_loss (OFF); its held-out check is
calibration/h200x2-fsdpc50-2026-12-01 (validation/fsdpc50.py).

  1. every compiled FSDP2 process without checkpointing (x2set49's 1b 3040:2, mem49's 1b 3104:4 and 2b 3104:2):
     measured step, the slowest rank's host issue per step, the shipped step and its error, the step with the
     free-phase term off (x2set49's rule CN's other column), the candidate's (the loss Inductor's, as at recompute
     full), and what the candidate removes in ms against the shipped miss in ms.
  2. the checkpointed compiled FSDP2 processes (compilefsdp, compileac, repeats47, compck, compck2, x2set49's C row):
     the shipped step's error, which already prices the loss as Inductor's (compiled.loss_in_last_graph); the
     candidate moves none of them.
  3. the other mechanisms the task named, each read off the records: dynamo's graph breaks with and without
     checkpointing (a break around FSDP2's hooks that only the step without checkpointing takes would show as more
     breaks); the host (issue per step against the step: a host-bound step would let the free-phase term's
     assumptions matter); FSDP2's reshard policy as the documents record it.
  4. the peak (mem49's residual, the 1b row's -2.0 GiB): every compiled FSDP2 row's rank-0 peak (the mean of its
     processes; the timed steps' where recorded) against the shipped model and the candidate
     framework.compiled_loss_donated (OFF; llm/memory.py DONATED_LOSS_LOGIT_BYTES, FSDP2_ROOT_START_BYTES,
     HEAD_GRAD_START_BYTES; the step without checkpointing only), and the residual beside -2TV+2R+2W (-2 B a logit,
     2 B a root parameter, 2 B a head parameter: the candidate's move where the loss is the peak; -2TV+4R to 2H bytes
     on tied models) and beside mem49's -2TV+2R (both validation/fsdpc50.peak_forms). DEVELOPMENT for that candidate too: two of the three rows without
     checkpointing solved for its two coefficients (the 1b rows share R), and the head term (2W) added after cold read
     B50 on the same rows: all three rows are development for it, none a check; its check is the registered, not yet
     run calibration/h200x2-fsdpc50-2026-12-01.

    PYTHONPATH=. python studies/fsdpc50_loss.py > studies/fsdpc50_loss.txt
"""

from __future__ import annotations

import json
import statistics
import sys
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "validation"))

NOCK = ("h200x2-x2set49-2026-12-01", "h200x2-mem49-2026-12-01")
CKPT = ("h200x2-compilefsdp-2026-11-30", "h200x2-compileac-2026-11-30", "h200x2-repeats47-2026-11-30",
        "h200x2-compck-2026-11-30", "h200x2-compck2-2026-11-30", "h200x2-x2set49-2026-12-01")


def documents(folder: str, ckpt: bool) -> list[tuple[str, dict]]:
    """(stem, document) of each compiled --mode fsdp process in calibration/FOLDER/runs with (ckpt) or without full
    checkpointing, in name order."""
    out = []
    for path in sorted((ROOT / "calibration" / folder / "runs").glob("*.json")):
        doc = json.loads(path.read_text())
        s = (doc.get("shapes") or [{}])[0]
        if doc.get("mode") == "fsdp" and doc.get("compile") and s.get("status") == "ok" and ("fsdpnock" not in path.stem) == ckpt:
            out.append((path.stem, doc))
    return out


def price(preset: str, seq: int, mb: int, ckpt: bool, what: str = "step_ms", **flags) -> float:
    """x2set49.compiled's `what` (the product's compiled FSDP2 row: step_ms, peak_mem_GiB), `flags` set on the framework."""
    import x2set49

    from simcluster.llm import eager

    with eager.torch_framework_as(lambda fw: replace(fw, **flags)):
        return x2set49.compiled(preset, seq, mb, ckpt)[what]


def key(doc: dict) -> tuple[str, int, int]:
    s = doc["shapes"][0]
    return doc["model"]["preset"], s["seq"], s["micro_batch"]


def without_checkpointing() -> list[tuple[float, float]]:
    from simcluster.runner.llm_decoder import PRESETS

    print("1. compiled FSDP2 WITHOUT checkpointing (DEVELOPMENT); error = predicted / measured - 1; ms")
    print(f"{'process':40} {'meas':>6} {'issue':>6}  {'shipped':>16} {'free off':>16} {'candidate':>16}  {'miss':>5} "
          f"{'loss':>5}  logits")
    errs = []
    for folder in NOCK:
        for stem, doc in documents(folder, False):
            p, seq, mb = key(doc)
            s = doc["shapes"][0]
            meas, issue = s["median_step_s"] * 1e3, max(s["host_issue_median_s_by_rank"]) * 1e3
            ship, cand = price(p, seq, mb, False), price(p, seq, mb, False, compiled_nock_loss=True)
            free_off = price(p, seq, mb, False, fsdp_free_phases=False)
            errs.append((ship / meas - 1, cand / meas - 1))
            cols = " ".join(f"{v:7.1f} ({v / meas - 1:+6.1%})" for v in (ship, free_off, cand))
            print(f"{folder.split('-')[1]} {stem:32} {meas:6.1f} {issue:6.1f}  {cols}  {ship - meas:5.1f} {ship - cand:5.1f}  "
                  f"{seq * mb * PRESETS[p]['vocab'] / 1e9:.2f}e9")
    for i, name in enumerate(("shipped", "candidate")):
        e = [x[i] for x in errs]
        print(f"  {name:9} mean |error| {statistics.mean(abs(v) for v in e):5.1%}  mean {statistics.mean(e):+5.1%}  "
              f"max |error| {max(abs(v) for v in e):5.1%}  over {len(e)} processes")
    print("  miss: shipped - measured; loss: shipped - candidate, the loss priced as eager's (22 + 26 B a logit, the "
          "up-cast's 6 + 6 inside, 2 + 3 kernels)\n  against Inductor's (4 + 4 B, 1 + 1 kernels): the candidate's whole "
          "move. The rows' logits in the last column.")
    return errs


def with_checkpointing() -> None:
    print("\n2. compiled FSDP2 WITH full checkpointing (the loss already Inductor's in the product): shipped error; "
          "the candidate moves none")
    errs, moved = [], 0
    for folder in CKPT:
        for stem, doc in documents(folder, True):
            p, seq, mb = key(doc)
            meas = doc["shapes"][0]["median_step_s"] * 1e3
            ship = price(p, seq, mb, True)
            moved += price(p, seq, mb, True, compiled_nock_loss=True) != ship
            errs.append(ship / meas - 1)
            print(f"  {folder.split('-')[1]:10} {stem:28} measured {meas:6.1f}  shipped {ship:6.1f} ({ship / meas - 1:+6.1%})")
    print(f"  {len(errs)} processes: mean |error| {statistics.mean(abs(e) for e in errs):5.1%}, mean "
          f"{statistics.mean(errs):+5.1%}; moved by the candidate: {moved}")


def other_mechanisms() -> None:
    print("\n3. the other mechanisms, from the records")
    breaks: dict[tuple[str, bool], set] = {}
    for folders, ckpt in ((CKPT, True), (NOCK, False)):
        for folder in folders:
            for _, doc in documents(folder, ckpt):
                d = doc["shapes"][0]["compile"]["dynamo"]
                breaks.setdefault((doc["model"]["preset"], ckpt), set()).add((d["unique_graphs"], d["graph_breaks"],
                                                                              doc["model"]["layers"]))
    for (preset, ckpt), seen in sorted(breaks.items()):
        print(f"  dynamo {preset:4} {'full checkpointing' if ckpt else 'no checkpointing  '}: (unique graphs, graph "
              f"breaks, layers) {sorted(seen)}")
    for folder in NOCK:
        for stem, doc in documents(folder, False):
            s = doc["shapes"][0]
            issue = max(s["host_issue_median_s_by_rank"])
            print(f"  host {stem:30} issue {issue * 1e3:6.1f} ms of a {s['median_step_s'] * 1e3:6.1f} ms step "
                  f"({issue / s['median_step_s']:.0%}); fsdp_reshard_after_backward {doc.get('fsdp_reshard_after_backward')}")


def peaks() -> None:
    from fsdpc50 import peak_forms  # the registered read-out's forms (rule PF), written once

    print("\n4. rank-0 peak (GiB), compiled FSDP2; error = predicted / measured - 1 (DEVELOPMENT for compiled_loss_donated)")
    for folders, ckpt in ((CKPT, True), (NOCK, False)):
        rows: dict[tuple, list[float]] = {}
        for folder in folders:
            for _, doc in documents(folder, ckpt):
                s = doc["shapes"][0]
                rows.setdefault((folder.split("-")[1],) + key(doc), []).append(
                    s.get("max_memory_allocated_timed_bytes") or s["max_memory_allocated_bytes"])
        for (name, p, seq, mb), got in rows.items():
            m = statistics.mean(got) / 2**30
            ship = price(p, seq, mb, ckpt, "peak_mem_GiB")
            cand = price(p, seq, mb, ckpt, "peak_mem_GiB", compiled_loss_donated=True)
            forms = peak_forms(p, seq, mb)
            print(f"  {name:11} {p:4} {seq}:{mb} {'ckpt' if ckpt else 'none'}  measured {m:6.2f}  shipped {ship:6.2f} "
                  f"({ship / m - 1:+5.1%})  candidate {cand:6.2f} ({cand / m - 1:+5.1%})  residual {m - ship:+6.3f}  "
                  + "  ".join(f"{k} {v:+6.3f}" for k, v in forms.items()))


if __name__ == "__main__":
    import study_args  # an unknown argument refused before the study runs
    study_args.check()
    without_checkpointing()
    with_checkpointing()
    other_mechanisms()
    peaks()
