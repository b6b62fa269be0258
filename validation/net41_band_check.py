"""The link-pool rule's held-out check (session 47, issue 41, helper net41): for each row of one published multi-node
file, the band the trust layer gives the answer (`simcluster predict collective --json`: busbw_Bps_band, its regime,
status and band_from) and whether the measured busbw falls inside it. The bands are the shipped ones
(simcluster/trust/error_bands.json, built before the file was recorded), so the rows are held out of them.

    PYTHONPATH=. python validation/net41_band_check.py calibration/published/nccl-h100-roce-4x400g-x2-drobotics.yaml
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import yaml


def band_row(scenario: Path, op: str, size: int) -> dict:
    """The answer's row (busbw, band, validation) for one op and size, as a user gets it from the CLI."""
    out = subprocess.run([sys.executable, "-m", "simcluster", "predict", "collective", "--scenario", str(scenario),
                          "--op", op, "-b", str(size), "-e", str(size), "--json"],
                         check=True, capture_output=True, text=True).stdout
    doc = json.loads(out)
    return {"link": doc["link"], **doc["rows"][0]}


def main(path: str) -> int:
    file = Path(path)
    doc = yaml.safe_load(file.read_text())
    scenario = (file.parent / doc["simcluster"]["scenario"]).resolve()
    inside = 0
    print(f"# {file.name}: measured busbw against the band of the answer (trust layer, level 0.8)")
    print(f"{'run':>3}  {'op':<11} {'size':>12}  {'measured':>9}  {'answer':>7}  {'band GB/s':>17}  in  regime / band_from")
    for i, run in enumerate(doc["runs"]):
        row = band_row(scenario, run["op"], int(run["bytes"]))
        lo, hi = (b / 1e9 for b in row["busbw_Bps_band"])
        meas = float(run["busbw_GBps"])
        ok = lo <= meas <= hi
        inside += ok
        v = row["validation"]
        print(f"{i:>3}  {run['op']:<11} {run['bytes']:>12}  {meas:>9.2f}  {row['busbw_Bps'] / 1e9:>7.1f}  "
              f"{lo:>8.1f}-{hi:<8.1f}  {'yes' if ok else 'no ':<3} {v['status']}: {v['regime']}; "
              f"{v.get('band_from', 'its own regime')} ({v['rows']} rows, {v['sources']} sources)")
    n = len(doc["runs"])
    print(f"inside the band: {inside} of {n} ({100.0 * inside / n:.0f}%; the bands' target coverage is ~80%)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
