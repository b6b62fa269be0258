"""The registered reads of the H200 transport sweeps (issue 42), pinned as each README's Result states them and
reproduced from the current code: a change of a model, of the judged set or of the read-out shows here."""

import dataclasses
from pathlib import Path

from simcluster.fit import host_stack
from simcluster.fit import host_stack_readout as readout

CALIBRATION = Path(__file__).resolve().parent.parent / "calibration"


def _bundles(sweep: str) -> list[Path]:
    return host_stack.sweep_bundles([CALIBRATION / sweep])


def _verdict(rows) -> str:
    return " ".join(readout.report(rows).splitlines()[-1].split())


def test_udp4_registered_read_is_the_read_out_last_line():
    """udp4 (h200-transport-udp4-2026-11-29, README "Result"): UDP sender 13.8%, 7 of 15, by the current read-out."""
    text = readout.folder_report([CALIBRATION / "h200-transport-udp4-2026-11-29"])
    assert " ".join(text.splitlines()[-1].split()) == ("all mean |error| 13.8% within 10%: 7/15 error noise <= 5%: 0/15 "
                                                       "target not met")


def test_sizes3_registered_read_is_the_tcp_count_model_with_the_udp_sender_of_its_registration():
    """sizes3 was registered with TCP by the count model and the UDP sender by a + b / m (18.9%, 8 of 25); the UDP
    sender's count model came after, read sizes3, and the read-out now prints that development re-read instead."""
    bundles = _bundles("h200-transport-sizes3-2026-11-29")
    registered = [r for b in bundles for r in readout.bundle_rows(b) if r.transport == "tcp"]
    registered += [r for b in bundles for r in readout.a_plus_b_rows(b, b.name, {("udp", "sender")})]
    assert _verdict(registered) == "all mean |error| 18.9% within 10%: 8/25 error noise <= 5%: 0/25 target not met"
    now = readout.folder_report([CALIBRATION / "h200-transport-sizes3-2026-11-29"]).splitlines()[-1]
    assert " ".join(now.split()).startswith("all mean |error| 17.6% within 10%: 11/25")   # development (udp_counts read it)


def test_sizes2_registered_read_is_a_plus_b_on_every_judged_row():
    """sizes2 was registered with c(m) = a + b / m on <= 4 KiB for every cost, TCP 16 KiB judged: 115.1%, 1 of 25."""
    rows = [dataclasses.replace(r, judged=True) for b in _bundles("h200-transport-sizes2-2026-11-28")
            for r in readout.a_plus_b_rows(b, b.name, readout.JUDGED)]
    assert _verdict(rows) == "all mean |error| 115.1% within 10%: 1/25 error noise <= 5%: 0/25 target not met"
