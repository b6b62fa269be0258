"""Every published collective residual the shipped error_bands.json carries refers to a run that is held out today
(cold read of session 42, treereg): a run that became development (`held_out: false`, or listed in the file's
`runs_not_held_out`, as treereg's 41 Tree rows did) must leave the table when the lead regenerates it
(`simcluster validate --error-bands`). Fails while the table predates a change of the published files' usage."""

import json
import re

from simcluster.published import PUBLISHED, read_published
from simcluster.trust.table import TABLE

ROW = re.compile(r"^(?:(?P<file>\S+) )?runs\[(?P<run>\d+)\] ")


def _published_collective_rows() -> list[dict]:
    rows = json.loads(TABLE.read_text())["rows"]
    return [r for r in rows if r["family"].startswith("collective") and not r["source"].startswith("machine ")]


def test_every_published_nccl_residual_is_a_held_out_run_today():
    rows = _published_collective_rows()
    assert len(rows) > 100                                      # the table still carries the published collectives
    files, stale = {}, []
    for r in rows:
        m = ROW.match(r["row"])
        assert m, f"row {r['row']!r} ({r['source']}): expected 'runs[i] ...' or '<file> runs[i] ...'"
        name = m["file"] or r["source"]                         # a source_group's rows name their file
        path = PUBLISHED / f"{name}.yaml"
        assert path.is_file(), f"{r['source']}: no published file {path.name}"
        if name not in files:
            files[name] = read_published(path, "published-nccl-run")
        run = int(m["run"])
        if not files[name].held_out(run):
            stale.append(f"{name} runs[{run}]: {files[name].why(run)[:80]}")
    assert not stale, f"{len(stale)} residuals of runs no longer held out (regenerate error_bands.json): " + "; ".join(stale[:5])
