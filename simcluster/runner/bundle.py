"""`simcluster collect` end to end: with a lab, the network namespaces brought up (their ground truth in the options)
and taken down after; the plan's steps (plans.py) run into the bundle (collect.py); the fio test files and DLIO
datasets removed from it (scratch data, not traces)."""

from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path

from simcluster.runner import collect, netlab, plans


def collect_bundle(out: str, tools: list[str], options: plans.Options, progress=None,
                   lab: tuple | None = None) -> tuple[dict, int]:
    """(the manifest, the exit code) of a bundle collected into `out`; `lab`: (rate, delay, offloads) of netlab.up."""
    if lab is not None:
        gt = netlab.up(*lab).ground_truth
        options = dataclasses.replace(options, qperf_host=options.qperf_host or gt.get("server"),
                                      server_netns=gt.get("server_netns"), client_netns=gt.get("client_netns"),
                                      ground_truth=gt)
    steps = plans.plan(tools, options, Path(out))
    try:
        manifest, code = collect.collect(out, steps, tools, dataclasses.asdict(options), progress)
    finally:
        if lab is not None:
            netlab.down()
    for scratch in ("fio/data", "dlio/data"):   # test files and datasets, not traces
        if (Path(out) / scratch).is_dir() and not (scratch == "fio/data" and options.fio_dir):
            shutil.rmtree(Path(out) / scratch)
    return manifest, code
