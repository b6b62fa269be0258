"""The link-pool rule's held-out check (session 47, issue 41, helper net41): for each row of one published nccl file,
the band the trust layer gives the answer (`simcluster predict collective --json`: busbw_Bps_band, its regime, status
and band_from) and whether the measured busbw falls inside it.

The rows are held out of the bands only if the bands were built before the file was recorded. So the bands are read from
a named commit's simcluster/trust/error_bands.json (--bands-commit, default baaeea81: session 47's base, before net41's
files) or from a given file (--bands PATH), never silently from today's table; the first line says which. The figures the
docs quote are the once-printed ones (validation/net41-predicted-once.txt, validation/net41-oci-predicted-once.txt).

    PYTHONPATH=. python validation/net41_band_check.py calibration/published/nccl-h100-roce-4x400g-x2-drobotics.yaml
    PYTHONPATH=. python validation/net41_band_check.py FILE.yaml --bands simcluster/trust/error_bands.json
"""

from __future__ import annotations

import contextlib
import io
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import yaml

from simcluster.errors import SimclusterError
from simcluster.script_args import ArgumentParser

BASE = "baaeea81"   # session 47's base: the bands shipped before net41 recorded its files


def bands_file(commit: str | None, path: str | None, tmp: Path) -> tuple[Path, str]:
    """The band table to judge with, and the line that says which it is."""
    if path:
        file = Path(path)
        if not file.is_file():
            raise SimclusterError("no such file", where=path, hint="--bands takes an error_bands.json")
        return file, f"bands from {path} (given; held out only if built before the file was recorded)"
    show = subprocess.run(["git", "show", f"{commit}:simcluster/trust/error_bands.json"], capture_output=True, text=True,
                          cwd=Path(__file__).resolve().parents[1])
    if show.returncode:
        raise SimclusterError(f"cannot read simcluster/trust/error_bands.json at commit {commit}", where="--bands-commit")
    file = tmp / "error_bands.json"
    file.write_text(show.stdout)
    return file, f"bands from simcluster/trust/error_bands.json at commit {commit}"


def band_row(scenario: Path, op: str, size: int) -> dict:
    """The answer's row (busbw, band, validation) for one op and size, as a user gets it from the CLI."""
    from simcluster.cli import main

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        rc = main(["predict", "collective", "--scenario", str(scenario), "--op", op, "-b", str(size), "-e", str(size), "--json"])
    if rc:
        raise SimclusterError(f"predict collective failed for {op} at {size} B", where=str(scenario))
    doc = json.loads(out.getvalue())
    return {"link": doc["link"], **doc["rows"][0]}


def read_nccl(path: str) -> tuple[dict, Path]:
    file = Path(path)
    try:
        doc = yaml.safe_load(file.read_text())
    except (OSError, yaml.YAMLError) as exc:
        raise SimclusterError(f"cannot read it ({type(exc).__name__})", where=path) from None
    scenario = (doc.get("simcluster") or {}).get("scenario") if isinstance(doc, dict) else None
    if not scenario or not isinstance(doc.get("runs"), list):
        raise SimclusterError("expected a published nccl file with runs and simcluster.scenario", where=path)
    return doc, (file.parent / scenario).resolve()


def check(path: str, commit: str | None, bands: str | None) -> None:
    import simcluster.trust.table as table

    doc, scenario = read_nccl(path)
    with tempfile.TemporaryDirectory() as tmp:
        table.TABLE, which = bands_file(commit, bands, Path(tmp))   # read once per process by trust/table.load_table
        table.load_table.cache_clear()
        print(f"# {Path(path).name}: measured busbw against the band of the answer (trust layer, level 0.8); {which}")
        print(f"{'run':>3}  {'op':<11} {'size':>12}  {'measured':>9}  {'answer':>7}  {'band GB/s':>17}  in  regime / band_from")
        inside = n = 0
        for i, run in enumerate(doc["runs"]):
            if not isinstance(run, dict) or any(k not in run for k in ("op", "bytes", "busbw_GBps")):
                raise SimclusterError("expected op, bytes and busbw_GBps", where=f"{path}: runs[{i}]")
            if run["bytes"] is None or run["busbw_GBps"] is None:   # a row the source gives without its size or rate
                print(f"{i:>3}  {run['op']:<11} left out: {'size' if run['bytes'] is None else 'busbw'} not given")
                continue
            n += 1
            row = band_row(scenario, run["op"], int(run["bytes"]))
            lo, hi = (b / 1e9 for b in row["busbw_Bps_band"])
            meas = float(run["busbw_GBps"])
            ok = lo <= meas <= hi
            inside += ok
            v = row["validation"]
            print(f"{i:>3}  {run['op']:<11} {run['bytes']:>12}  {meas:>9.2f}  {row['busbw_Bps'] / 1e9:>7.1f}  "
                  f"{lo:>8.1f}-{hi:<8.1f}  {'yes' if ok else 'no ':<3} {v['status']}: {v['regime']}; "
                  f"{v.get('band_from', 'its own regime')} ({v['rows']} rows, {v['sources']} sources)")
    print(f"inside the band: {inside} of {n} ({100.0 * inside / max(n, 1):.0f}%; the bands' target coverage is ~80%)")


def main(argv: list[str] | None = None) -> int:
    p = ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("file", nargs="?", help="calibration/published/nccl-*.yaml")
    group = p.add_mutually_exclusive_group()
    group.add_argument("--bands-commit", default=BASE, help=f"judge with error_bands.json at this commit (default {BASE})")
    group.add_argument("--bands", help="judge with this error_bands.json instead")
    args = p.parse_args(argv)
    try:
        if not args.file:
            raise SimclusterError("expected a published nccl file", hint="net41_band_check.py calibration/published/nccl-X.yaml")
        check(args.file, args.bands_commit, args.bands)
    except SimclusterError as exc:
        print(f"net41_band_check: error: {exc.one_line()}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
