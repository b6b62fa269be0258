"""The host stack's cost per byte at message sizes its fit never saw, from sweeps its models never saw (the qperf-sizes
tool): per bundle and (transport, side), the registered read-out's rows (fit/host_stack_readout.bundle_rows): TCP both
sides predicted by the count model (fit/host_counts.py), the UDP sender by its count model (fit/udp_counts.py).

Held out twice over. Within a bundle, sizes a per-run fit read are not rows (TCP 1-4 KiB and the run's UDP 4 -> 16 KiB
train; the UDP sender's m <= 8 KiB). Across bundles, a transport's rows count only from the sweeps registered after
its count model was written (HELD_OUT_SWEEPS): the models were BUILT reading the others, so their errors there are
development, not validation. The TCP count model (session 32) read the 2-core VM bundles (calibration/lab-sizes-*,
loopback-sizes-*), the first and the second H200 sweeps (h200-transport-sizes-, -sizes2-2026-11-28); the UDP sender
count model (session 32, udp7) read those and the third (-sizes3-2026-11-29). HELD_OUT_SWEEPS names the admitted sweeps
(an allow-list, so a new bundle counts only once it is named here: a development bundle cannot slip in silently); a
later registered sweep is added by name when its Result is written.

Each sweep's rows are its registered read's (fit/host_stack_readout.REGISTERED_READ, default the count models' read-out): the fifth sweep
(-sizes5-2026-11-29, session 33, registered after the batching rules and the UDP receiver's count model, which read
the four before it) by fit/offload_readout.py (TCP with TSO/GRO, loopback's paged UDP sender, the UDP receiver of
every configuration) plus the lab UDP sender by fit/udp_counts.py (host_stack_readout's "udp sender" rows of its lab
configurations only, as its README's rule says; loopback's sender there is the batching rule's).

A source (the unit a held-out check leaves out together) is one sweep's configuration, one lab configuration run on
one day: a bundle, except that replicate bundles of one configuration in one call (CONFIGURATION-2, -3, ...: sizes6's
lab-sizes-all-noshaping and lab-sizes-all-noshaping-2, run back to back) are one source (source_of).

The lab's NIC cards (models/nic/local-lab-*-stack.yaml) are fitted by these read-outs' code (fit/stack_cards.py), each
on one bundle, so a card's answers equal its own bundle's rows (tests/test_stack_cards.py) and
the rows of its model on the other configurations are that model's error, refitted per configuration (71 rows in all):
  - local-lab-tcp-stack (the count model, fitted on sizes3 lab-sizes-none): sizes3's TCP rows of lab none, csum and
    csum unshaped (9; its own 3);
  - local-lab-tcp-gso-stack (the batching rule with the push ACK rule, `ack_rule: tso-push`, fitted on sizes6
    lab-sizes-all-noshaping): sizes6's TCP rows with TSO/GRO (12: two replicate bundles read with the push rule,
    fit/offload_readout.TSO_ACK_RULES; its own 6);
  - local-lab-udp-stack, send side (fit/udp_counts.py): udp4's and sizes5's lab UDP sender rows (22; its own 5: sizes5
    lab none); receive side (the receiver model, fit/udp_receiver_counts.py): sizes5's lab receiver rows (8; its own 4).
Rows of no card (20): loopback's (sizes3 TCP 3, udp4 UDP sender 3, sizes5 paged sender 3 and receiver 4: the loopback
sender's two skb regimes are no card's terms), sizes3's offloads-all TCP rows (3), read by the count model, which
the GSO card no longer uses, and sizes5's TCP rows with TSO/GRO (4: read with the fifth sweep's ACK count, gso_acks,
which the GSO card no longer uses since the push rule won the sixth sweep's held-out comparison) (tests/test_heldout.py
counts these groups)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent

# transport -> the sweeps (folders under calibration/) registered after that transport's count model: the only sources
HELD_OUT_SWEEPS: dict[str, tuple[str, ...]] = {
    "tcp": ("h200-transport-sizes3-2026-11-29",             # the first sweep registered after fit/host_counts.py
            "h200-transport-sizes5-2026-11-29",             # the first after the TSO/GRO rule (fit/offload_counts.py)
            "h200-transport-sizes6-2026-11-29"),            # the first after the push ACK rule (TSO/GRO, session 34)
    "udp": ("h200-transport-udp4-2026-11-29",               # the first after fit/udp_counts.py (UDP only: no TCP rows)
            "h200-transport-sizes5-2026-11-29"),            # the first after the paged sender and receiver rules
}


REPLICATE = re.compile(r"-([2-9]|[1-9][0-9]+)$")   # a bundle run again in the same call: CONFIGURATION-2, -3, ...


def source_of(bundle_name: str) -> str:
    """The source of a bundle (SWEEP/CONFIGURATION): SWEEP/CONFIGURATION with a replicate suffix folded, so that a
    configuration run again in the same sweep is the same source, never a second independent one."""
    sweep, _, configuration = bundle_name.rpartition("/")
    return f"{sweep}/{REPLICATE.sub('', configuration)}" if sweep else REPLICATE.sub("", configuration)


def held_out(transport: str, bundle_name: str) -> bool:
    """Whether a bundle (SWEEP/CONFIGURATION, its path under calibration/) is held out for a transport's count model:
    it lies in a sweep of HELD_OUT_SWEEPS[transport]."""
    return bundle_name.split("/")[0] in HELD_OUT_SWEEPS.get(transport, ())


def held_out_rows(calibration: str | Path | None = None) -> list[dict]:
    """{bundle, source (source_of), transport, side, m, measured, predicted} (core-seconds per byte) of every size above the fit's range, in
    the sweeps named by HELD_OUT_SWEEPS (under `calibration`, default the repository's calibration/; the bundles of
    each found by host_stack.sweep_bundles), for the costs the registered read-out judges (fit/host_stack_readout.JUDGED)
    and the transports each sweep is held out for. A CalibrationError when no named sweep is there."""
    from simcluster.errors import CalibrationError
    from simcluster.fit.host_stack import sweep_bundles

    base = Path(calibration) if calibration else ROOT / "calibration"
    sweeps = [base / name for name in dict.fromkeys(n for names in HELD_OUT_SWEEPS.values() for n in names)
              if (base / name).is_dir()]
    if not sweeps:
        raise CalibrationError("none of the held-out transport sweeps is here", where=str(base),
                               hint=", ".join(n for names in HELD_OUT_SWEEPS.values() for n in names))
    # the registered read-out's rows (sizes above every fit's inputs predicted), the judged costs only:
    # TCP both sides and the UDP sender (not the kernel's arbitrary per-process split of TCP, nor UDP's lossy receiver)
    return [{"bundle": name, "source": source_of(name), "transport": r.transport, "side": r.side, "m": r.m, "measured": r.median,
             "predicted": r.predicted}
            for bundle in sweep_bundles(sweeps) for name in [f"{bundle.parent.name}/{bundle.name}"]
            for r in registered_rows(bundle) if r.judged and r.median > 0 and r.predicted > 0
            and held_out(r.transport, name)]


def registered_rows(bundle: Path) -> list:
    """One bundle's rows (fit/host_stack_readout.Row) by the read-out its sweep registered (its REGISTERED_READ): the count
    models' (host_stack_readout.bundle_rows), or the batching rules' (offload_readout.bundle_rows) with, on a lab
    configuration, the UDP sender by udp_counts (host_stack_readout's "udp sender" rows). A rule that cannot be fitted
    gives no row (the read-outs print why)."""
    from simcluster.fit import host_stack_readout, offload_readout

    rows = host_stack_readout.bundle_rows(bundle)      # its judged flags follow the sweep's registration
    if host_stack_readout.registered_read(bundle) == host_stack_readout.COUNT_MODELS:
        return rows
    return offload_readout.bundle_rows(bundle, []) + [r for r in rows if r.judged]
