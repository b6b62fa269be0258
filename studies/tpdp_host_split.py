"""Session 48 (helper tp4, issue 44): why the model prices 4-GPU TP x DP fast -- the host cost split into the lease's and
the mode's. Development: every figure here reads the existing 4-GPU TP x DP sets (meshes, meshes-repeat, meshes2, tpdp,
tpdp2), whose errors chose heldout/eager_tp4's candidate; calibration/h200x4-tp4-2026-11-30 (registered before its run)
is the held-out check.

    python studies/tpdp_host_split.py      # prints studies/tpdp_host_split.txt

Part 1: the host-bound step of two shapes priced three ways per lease that ran the 2-D modes' hidden-128 host runs: the
product's (tp's fit on the 2-GPU host, eager.host_mode), the lease's own tp fit (2 ranks on the 4-GPU machine: the
machine / lease part) and the lease's fit of the 2-D mode itself (4 ranks: the mode's part over the lease's tp).
Part 2: today's shipped step and the candidate (eager_tp4.candidate_predict: tp+fsdp with the tpdp2 lease's own fit)
against every measured 4-GPU TP x DP step of those sets (the tiny preset left out; tpdp2's candidate is in-lease)."""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

SETS = ("meshes", "meshes-repeat", "meshes2", "tpdp", "tpdp2")
HOST_SETS = ("meshes2", "tpdp", "tpdp2")   # the sets with a host/ folder of tp, tp+ddp and tp+fsdp runs


def folder(name: str) -> Path:
    return ROOT / "calibration" / f"h200x4-llm-eager-{name}-2026-11-28"


def split() -> None:
    from simcluster.heldout.eager import MODE_HOST
    from simcluster.heldout.eager_regimes import regime_predict
    from simcluster.llm import eager

    base = eager.fit_modes(MODE_HOST)
    print("1. host-bound step (ms): shipped (2-GPU host's tp fit) | the lease's tp fit | the lease's fit of the mode")
    for name in HOST_SETS:
        own = eager.fit_modes(folder(name) / "host")
        for mode in ("tp+fsdp", "tp+ddp"):
            cells = []
            for preset, mb in (("0.3b", 8), ("1b", 4)):
                a = regime_predict(preset, mb, mode, "h200")["step_ms"]
                t = regime_predict(preset, mb, mode, "h200", fits=base | {"tp": own["tp"]})["step_ms"]
                o = regime_predict(preset, mb, mode, "h200", fits=base | {"tp": own[mode]})["step_ms"]
                cells.append(f"{preset} {a:6.1f} | {t:6.1f} ({t / a - 1:+.0%}) | {o:6.1f} ({o / t - 1:+.0%})")
            print(f"   {name:8} {mode:8} " + "   ".join(cells))


def errors() -> None:
    from simcluster.heldout.eager import _document
    from simcluster.heldout.eager_regimes import regime_predict
    from simcluster.heldout.eager_tp4 import candidate_predict

    rows: dict[tuple[str, str], list[tuple[float, float]]] = {}
    for name in SETS:
        for path in sorted(folder(name).glob("runs/tp+*.json")):
            doc, _ = _document(path.read_text())
            if doc is None or doc["model"].get("preset") == "tiny":
                continue
            for s in doc["shapes"]:
                if s.get("status") != "ok":
                    continue
                preset, measured = doc["model"]["preset"], s["median_step_s"] * 1e3
                a = regime_predict(preset, s["micro_batch"], doc["mode"], "h200", seq=s["seq"])["step_ms"]
                c = candidate_predict(preset, s["seq"], s["micro_batch"], doc["mode"])["step_ms"]
                rows.setdefault((name, doc["mode"]), []).append((a / measured - 1, c / measured - 1))
    print("2. set             mode     rows  shipped mean |error| (signed)  candidate mean |error| (signed)")

    def line(label: str, mode: str, v: list[tuple[float, float]]) -> None:
        print(f"   {label:15} {mode:8} {len(v):4}  {statistics.mean(abs(x) for x, _ in v):6.1%} "
              f"({statistics.mean(x for x, _ in v):+6.1%})          {statistics.mean(abs(y) for _, y in v):6.1%} "
              f"({statistics.mean(y for _, y in v):+6.1%})")
    for mode in ("tp+fsdp", "tp+ddp"):
        pooled = []
        for (name, m), v in rows.items():
            if m == mode:
                pooled += v
                line(name, m, v)
        line("all", mode, pooled)


if __name__ == "__main__":
    print("# printed by `python studies/tpdp_host_split.py` (session 48, helper tp4): 4-GPU TP x DP's host cost split into "
          "the lease's and the mode's; development (these sets' errors chose heldout/eager_tp4's candidate)")
    split()
    errors()
