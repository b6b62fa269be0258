"""The host stack's cost per byte at message sizes its fit never saw (the qperf-sizes tool): per bundle and (transport,
side), the registered read-out's rows (fit/host_stack_readout.bundle_rows): TCP both sides predicted by the count model
(fit/host_counts.py, fitted on 1-4 KiB and the same run's UDP 4 -> 16 KiB train), the UDP sender by its count model
(fit/udp_counts.py, fitted on m <= 8 KiB and the same run's loopback); sizes a fit read are not held out. A bundle is one session (one lab
configuration, one day): the unit a held-out check leaves out together."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent


def bundles(folder: str | Path | None = None) -> list[Path]:
    """The qperf-sizes bundles under calibration/ (each a folder with a qperf-sizes/ sub-folder), and those one level
    down (a session's folder of configurations, e.g. calibration/h200-transport-sizes2-2026-11-28/lab-sizes-none)."""
    base = Path(folder) if folder else ROOT / "calibration"
    return sorted(p.parent for pattern in ("*/qperf-sizes", "*/*/qperf-sizes") for p in base.glob(pattern) if p.is_dir())


def _name(bundle: Path, folder: str | Path | None) -> str:
    """The bundle's path under the searched folder (its name where it lies directly in it): the unit left out."""
    return bundle.relative_to(Path(folder) if folder else ROOT / "calibration").as_posix()


def held_out_rows(folder: str | Path | None = None) -> list[dict]:
    """{bundle, transport, side, m, measured, predicted} (core-seconds per byte) of every size above the fit's range, for
    the costs the registered read-out judges (fit/host_stack_readout.JUDGED)."""
    from simcluster.fit.host_stack_readout import bundle_rows

    # the registered read-out's rows (sizes above every fit's inputs predicted), the judged costs only:
    # TCP both sides and the UDP sender (not the kernel's arbitrary per-process split of TCP, nor UDP's lossy receiver)
    return [{"bundle": _name(bundle, folder), "transport": r.transport, "side": r.side, "m": r.m, "measured": r.median,
             "predicted": r.predicted} for bundle in bundles(folder) for r in bundle_rows(bundle)
            if r.judged and r.median > 0 and r.predicted > 0]
