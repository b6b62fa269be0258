"""Session 48 (helper tp4, issue 44): why the model prices 4-GPU TP x DP fast -- the host cost split into the lease's and
the mode's. Development: every figure here reads the existing 4-GPU TP x DP sets (meshes, meshes-repeat, meshes2, tpdp,
tpdp2), whose errors chose heldout/eager_tp4's candidate; calibration/h200x4-tp4-2026-11-30 (registered before its run)
is the held-out check.

    python studies/tpdp_host_split.py      # prints studies/tpdp_host_split.txt

Part 1: the host-bound step of two shapes priced three ways per lease that ran the 2-D modes' hidden-128 host runs: the
product's (tp's fit on the 2-GPU host, eager.host_mode), the lease's own tp fit (2 ranks on the 4-GPU machine: the
machine / lease part) and the lease's fit of the 2-D mode itself (4 ranks: the mode's part over the lease's tp).
Part 2: today's shipped step and the candidate (eager_tp4.candidate_predict: tp+fsdp with the tpdp2 lease's own fit)
against every measured 4-GPU TP x DP step of those sets (the tiny preset left out; tpdp2's candidate is in-lease).
Part 3 (session 48, helper tp4b; development for calibration/h200x4-tp4b-2026-11-30's hypothesis): the host sets' steps
priced with their own host folder, the lease-own mapping that set registered (lease_own); part 4: that fit from two of
the three layer counts (layer_counts), which chose the set's host runs at 2 and 32 layers."""

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


def measured_steps(names=SETS):
    """(set, mode, preset, seq, micro-batch, measured step in ms) of every ok 4-GPU TP x DP step of the sets `names`
    (the tiny preset left out)."""
    from simcluster.heldout.eager import _document

    for name in names:
        for path in sorted(folder(name).glob("runs/tp+*.json")):
            doc, _ = _document(path.read_text())
            if doc is None or doc["model"].get("preset") == "tiny":
                continue
            for s in doc["shapes"]:
                if s.get("status") == "ok":
                    yield name, doc["mode"], doc["model"]["preset"], s["seq"], s["micro_batch"], s["median_step_s"] * 1e3


def table(rows: dict[tuple[str, str], list[tuple[float, ...]]], head: str) -> None:
    """Per mode, each set's and all sets' mean |error| (signed mean) of each column of `rows` ({(set, mode): [errors]})."""
    print(head)
    for mode in ("tp+fsdp", "tp+ddp"):
        pooled = []
        for (name, m), v in rows.items():
            if m == mode:
                pooled += v
                cols = "   ".join(f"{statistics.mean(abs(r[i]) for r in v):6.1%} ({statistics.mean(r[i] for r in v):+6.1%})"
                                  for i in range(len(v[0])))
                print(f"   {name:15} {mode:8} {len(v):4}  {cols}")
        cols = "   ".join(f"{statistics.mean(abs(r[i]) for r in pooled):6.1%} ({statistics.mean(r[i] for r in pooled):+6.1%})"
                          for i in range(len(pooled[0])))
        print(f"   {'all':15} {mode:8} {len(pooled):4}  {cols}")


def errors() -> None:
    from simcluster.heldout.eager_regimes import regime_predict
    from simcluster.heldout.eager_tp4 import candidate_predict

    rows: dict[tuple[str, str], list[tuple[float, float]]] = {}
    for name, mode, preset, seq, mb, measured in measured_steps():
        a = regime_predict(preset, mb, mode, "h200", seq=seq)["step_ms"]
        c = candidate_predict(preset, seq, mb, mode)["step_ms"]
        rows.setdefault((name, mode), []).append((a / measured - 1, c / measured - 1))
    table(rows, "2. set             mode     rows  shipped mean |error| (signed)  candidate mean |error| (signed)")


def lease_own() -> None:
    """Part 3 (session 48, helper tp4b): each host set's steps priced with its OWN host folder (heldout/eager_tp4's
    lease-own mapping, the tpdp sets' rule V: the 2-D mode's own fit) and with that folder's tp fit (the product's
    mapping at the lease's host speed). tpdp and tpdp2 ran host runs and steps in one call (the lease's own host);
    meshes2's host runs came from an earlier call (another lease)."""
    from simcluster.heldout.eager import MODE_HOST
    from simcluster.heldout.eager_regimes import regime_predict
    from simcluster.llm import eager

    base = eager.fit_modes(MODE_HOST)
    rows: dict[tuple[str, str], list[tuple[float, float, float]]] = {}
    for name, mode, preset, seq, mb, measured in measured_steps(HOST_SETS):
        host = folder(name) / "host"
        a = regime_predict(preset, mb, mode, "h200", seq=seq)["step_ms"]
        t = regime_predict(preset, mb, mode, "h200", seq=seq, fits=base | {"tp": eager.fit_modes(host)["tp"]})["step_ms"]
        o = regime_predict(preset, mb, mode, "h200", own_host=host, seq=seq)["step_ms"]
        rows.setdefault((name, mode), []).append((a / measured - 1, t / measured - 1, o / measured - 1))
    table(rows, "3. set             mode     rows  shipped               the lease's tp fit    lease-own (the mode's own fit)"
                "   [mean |error| (signed)]")


def layer_counts() -> None:
    """Part 4 (session 48, helper tp4b): the lease-own step of part 3 with each 2-D mode's fit from two of the three layer
    counts the host sets ran (a call's budget has room for two): which pair reproduces the three-count fit."""
    import shutil
    import tempfile

    from simcluster.heldout.eager_regimes import regime_predict

    print("4. lease-own mean |error| (signed) with the host fit from these layer counts (tp+fsdp | tp+ddp)")
    for name in HOST_SETS:
        cells = []
        for layers in ((2, 8, 32), (2, 8), (2, 32), (8, 32)):
            with tempfile.TemporaryDirectory() as tmp:
                for mode in ("tp+ddp", "tp+fsdp"):
                    for n in layers:
                        shutil.copy(folder(name) / "host" / f"{mode}-L{n}.json", tmp)
                errs: dict[str, list[float]] = {}
                for _, mode, preset, seq, mb, measured in measured_steps([name]):
                    o = regime_predict(preset, mb, mode, "h200", own_host=Path(tmp), seq=seq)["step_ms"]
                    errs.setdefault(mode, []).append(o / measured - 1)
            cells.append(f"{','.join(map(str, layers)):7} " + " | ".join(
                f"{statistics.mean(abs(e) for e in errs[m]):5.1%} ({statistics.mean(errs[m]):+6.1%})" for m in ("tp+fsdp", "tp+ddp")))
        print(f"   {name:8} " + "   ".join(cells))


if __name__ == "__main__":
    import study_args  # an unknown argument refused before the study runs
    study_args.check()
    print("# printed by `python studies/tpdp_host_split.py` (session 48, helper tp4): 4-GPU TP x DP's host cost split into "
          "the lease's and the mode's; development (these sets' errors chose heldout/eager_tp4's candidate)")
    split()
    errors()
    lease_own()
    layer_counts()
