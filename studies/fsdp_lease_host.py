"""The product's FSDP2 host term fitted over several 2 x H200 leases (issue 44, session 43, engineer fsdphost2): each
lease's own fit, their mean (what llm/eager.fit_modes ships: calibration/h200x2-llm-host-2026-11-23/leases.yaml) and
their spread, then how every eager FSDP row of the error bands moves, before (the 2026-11-23 lease's fit alone) and
after (the mean), and the fsdphost set's 9 step rows (development: they prompted it).
    python studies/fsdp_lease_host.py            # ~2-3 minutes (the eager held-out rows are priced twice)
A row's error = today's step / measured - 1 (trust's moved / rho - 1, as studies/eager_lab_modes.py reads them); its
regime can change with the term (the host-bound flag of a row whose registration recorded no host share is today's).
"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from simcluster.heldout.eager import MODE_HOST  # noqa: E402
from simcluster.llm import eager  # noqa: E402

FSDPHOST = ROOT / "calibration" / "h200x2-eager-fsdphost-2026-11-30"


def lease_table() -> tuple[list[tuple[str, float, float]], float, float]:
    """[(lease, us per kernel, ms per step)] of the fsdp mode, their mean per kernel (s) and its lease-to-lease sd
    relative to the mean."""
    fits = eager.lease_fits(MODE_HOST, "fsdp")
    cs = [f[0] for _, f in fits]
    rows = [(str(p.relative_to(ROOT / "calibration")), f[0] * 1e6, f[1] * 1e3) for p, f in fits]
    return rows, statistics.mean(cs), statistics.stdev(cs) / statistics.mean(cs)


def fsdp_rows() -> dict[tuple[str, str], tuple[str, float]]:
    """{(source, row): (regime, today's error)} of every llm eager band row whose regime is FSDP's."""
    from simcluster.trust.build import eager_held_out_rows, eager_residuals

    return {(r.source, r.row): (f"{r.regime.split(' | ')[2]} x{r.scale:.0f}", r.today_error)
            for r in eager_residuals(eager_held_out_rows()) if "FSDP" in r.regime}


def fsdphost_rows() -> list[tuple[str, float, float]]:
    """[(process, measured s, today's step s)] of the fsdphost set (development)."""
    from simcluster.heldout.eager_regimes import regime_predict

    sys.path.insert(0, str(ROOT / "validation"))
    from eager_fsdphost import PROCESSES, read_processes

    got, _ = read_processes(FSDPHOST)
    return [(stem, g["step_s"], regime_predict(PROCESSES[stem][0], PROCESSES[stem][2], "fsdp", "h200", seq=PROCESSES[stem][1])["step_ms"] / 1e3)
            for stem, g in got.items()]


def summary(rows: dict) -> dict[str, tuple[int, float, float]]:
    out = {}
    for regime in sorted({v[0] for v in rows.values()}):
        errs = [v[1] for v in rows.values() if v[0] == regime]
        out[regime] = (len(errs), 100 * statistics.mean(map(abs, errs)), 100 * statistics.mean(errs))
    return out


def main() -> int:
    leases, mean_c, rel_sd = lease_table()
    print("FSDP2 host fit per lease (hidden 128, fsdp-L2/8/32, llm/eager.fit_modes):")
    for name, c, a in leases:
        print(f"  {name:56} {c:6.2f} us/kernel {a:+6.2f} ms/step")
    print(f"  mean {mean_c * 1e6:.2f} us/kernel; lease-to-lease sd {rel_sd:.1%} of it ({len(leases)} leases)")
    with eager.leases_unread():
        before, dev_before = fsdp_rows(), fsdphost_rows()
    after, dev_after = fsdp_rows(), fsdphost_rows()
    print("\nEvery eager FSDP band row (today's error: before -> after; regime before -> after where it changes):")
    for key in sorted(set(before) | set(after)):
        b, a = before.get(key), after.get(key)
        regime = b[0] if not a or (b and a[0] == b[0]) else f"{b[0] if b else '-'} -> {a[0]}"
        print(f"  {regime:30} {key[0][:44]:44} {key[1][:40]:40} "
              f"{'' if b is None else f'{100 * b[1]:+6.1f}%'} -> {'' if a is None else f'{100 * a[1]:+6.1f}%'}")
    print("\nPer regime (rows, mean |error|, bias; 'same rows': the after regime's rows at the model before):")
    sb, sa = summary(before), summary(after)
    for regime in sorted(set(sb) | set(sa)):
        b, a = sb.get(regime, (0, 0.0, 0.0)), sa.get(regime, (0, 0.0, 0.0))
        same = summary({k: (regime, before[k][1]) for k, v in after.items() if v[0] == regime and k in before}).get(regime, (0, 0.0, 0.0))
        print(f"  {regime:20} before {b[0]:3} rows {b[1]:5.1f}% ({b[2]:+5.1f}%)   after {a[0]:3} rows {a[1]:5.1f}% ({a[2]:+5.1f}%)"
              f"   same rows before {same[1]:5.1f}% ({same[2]:+5.1f}%)")
    print("\nThe 6 rows FSDP+host-bound x2 held before (in-sample now: seen before the change):")
    six = [k for k, v in before.items() if v[0] == "FSDP+host-bound x2"]
    for name, side in (("before", before), ("after", after)):
        errs = [side[k][1] for k in six]
        print(f"  {name}: mean |error| {100 * statistics.mean(map(abs, errs)):.1f}%, bias {100 * statistics.mean(errs):+.1f}%")
    print("\nfsdphost set's 9 step rows (development: they prompted the change), error before -> after:")
    for (stem, meas, pb), (_, _, pa) in zip(dev_before, dev_after, strict=True):
        print(f"  {stem:18} measured {meas * 1e3:7.1f} ms  {pb / meas - 1:+6.1%} -> {pa / meas - 1:+6.1%}")
    for name, dev in (("before", dev_before), ("after", dev_after)):
        errs = [p / m - 1 for _, m, p in dev]
        print(f"  {name}: mean |error| {statistics.mean(map(abs, errs)):.1%}, bias {statistics.mean(errs):+.1%}")
    return 0


if __name__ == "__main__":
    import study_args  # an unknown argument refused before the study runs
    study_args.check()
    sys.exit(main())
