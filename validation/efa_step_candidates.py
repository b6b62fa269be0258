"""Score the EFA per-step candidates registered in session 29 (docs/models/fabric-findings.md) on published runs.

Each candidate sets the NIC card key `step_operations` (k: a Simple / LL128 network step costs k one-way latencies) on
the three EFA cards; nothing else changes. The repository's models/, scenarios/ and calibration/published/
are copied to a temporary folder per candidate (their relative links kept) and the copy's EFA cards are edited there,
so the shipped cards are never touched. For every candidate it prints the mean |busbw error| of each EFA system with
the scenario's own cards and held out (`--held-out-systems`: eta and t0 fitted on the
other EFA systems), and the count of all systems within 10% held out.

    python validation/efa_step_candidates.py [SYSTEM ...]     # default: every EFA system
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path

import yaml

from simcluster.reference.nccl_held_out import held_out_systems
from simcluster.script_args import check

ROOT = Path(__file__).resolve().parent.parent
EFA_CARDS = ("efa-100g", "efa-400g", "efa-multirail-400g")
CANDIDATES = {"A  k=1 (shipped)": 1.0, "B  k=2 (control message + write)": 2.0,
              "C  k=1.15 (plugin's completion overhead)": 1.15, "D  k=3 (bracket, not eligible)": 3.0}


def _copy_with_k(folder: Path, k: float) -> Path:
    for part in ("models", "scenarios", "calibration/published"):
        shutil.copytree(ROOT / part, folder / part)
    for card in EFA_CARDS:
        path = folder / "models" / "nic" / f"{card}.yaml"
        doc = yaml.safe_load(path.read_text())
        doc["params"]["step_operations"] = k
        path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return folder / "calibration" / "published"


def score(k: float) -> tuple[dict[str, float], dict[str, float], int, int]:
    """(shipped-card mean |error| % per EFA system, held-out mean |error| % per EFA system, systems within 10% held
    out, systems) for one k."""
    with tempfile.TemporaryDirectory() as tmp:
        results = held_out_systems(_copy_with_k(Path(tmp), k))
    efa = [r for r in results if r.family == "EFA"]
    shipped = {r.system.removeprefix("nccl-"): r.shipped_pct for r in efa}
    held = {r.system.removeprefix("nccl-"): r.held_out_pct for r in efa}
    return shipped, held, sum(r.held_out_pct <= 10.0 for r in results), len(results)


def main(argv: list[str]) -> None:
    check(words=None, usage="[SYSTEM ...]", argv=argv)
    scores = {name: score(k) for name, k in CANDIDATES.items()}
    systems = argv or sorted(next(iter(scores.values()))[1])
    print("# EFA per-step candidates (session 29 registration): mean |busbw error| %, shipped cards / held out")
    print(f"{'system':40s}" + "".join(f"{name.split()[0] + ' ' + name.split()[1]:>17s}" for name in CANDIDATES))
    for system in systems:
        cells = "".join(f"{s[0][system]:7.1f} /{s[1][system]:6.1f}  " for s in scores.values())
        print(f"{system[:40]:40s}{cells}")
    print("systems within 10% held out: " + ", ".join(f"{n.split()[0]} {s[2]} of {s[3]}" for n, s in scores.items()))


if __name__ == "__main__":
    main(sys.argv[1:])
