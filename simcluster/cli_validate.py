"""`simcluster validate`: predicted against measured, one command with its modes: a trace, log or bundle, the published
runs (`--published`, `--families`), the held-out machines, systems (`--held-out-systems`) and the flow model against ns-3
(`--packet-level`), and the error-band table built from every held-out set (`--error-bands`). Each checks which options
go together, calls the comparison (simcluster/validation.py, machine_validation.py, reference/, packet/, trust/build.py)
and prints; exit status as simcluster/cli.py's (errors.EXIT_PARTIAL: something was skipped, named on stderr).
"""

from __future__ import annotations

import json
import sys

from simcluster import output
from simcluster.errors import EXIT_PARTIAL, SimclusterError


def cmd_validate(args) -> int:
    from simcluster.reference.families import FamilyValidation
    from simcluster.report.validation import plot, render
    from simcluster.validation import validate_path

    if args.families:   # before any work (the other modes refuse --published llm themselves)
        FamilyValidation.check(args.published)
    if args.error_bands:
        return cmd_error_bands(args)
    if args.table or args.docs:
        raise SimclusterError("--table and --docs go with --error-bands")
    if args.packet_level:
        return _validate_packet_level(args)
    if args.held_out_systems:
        return _validate_held_out_systems(args)
    if args.held_out_machines:
        from simcluster.machine_validation import validate_held_out_machines

        given = [flag for flag, value in (("--card", args.card), ("--scenario", args.scenario), ("--op", args.op),
                                          ("--published", args.published), ("--decisions", args.decisions)) if value]
        if given:
            raise SimclusterError(f"--held-out-machines fits its own kind card per machine; {given[0]} does not apply")

        result = validate_held_out_machines(args.trace)
    elif len(args.trace) > 1:
        raise SimclusterError("validate takes one trace, log or bundle", hint="--held-out-machines takes several bundles")
    else:
        result = validate_path(args.trace[0] if args.trace else None, args.card, args.scenario, args.op,
                               args.published, args.decisions)
    result = FamilyValidation(result) if args.families else result   # issue 44's five published families
    doc = output.check(result.to_json(), " ".join(args.trace) or args.published or args.decisions or "validate")
    if args.plot:
        plot(result, args.plot)
    sys.stdout.write(json.dumps(doc, indent=1) + "\n" if args.json else render(result))
    for line in result.skipped:
        print(f"simcluster: skipped {line}", file=sys.stderr)
    return EXIT_PARTIAL if result.skipped else 0


def cmd_error_bands(args) -> int:
    from simcluster.files import write_document
    from simcluster.trust import report
    from simcluster.trust.build import build_table, held_out_coverage, regime_summary
    from simcluster.trust.table import TABLE, Table

    given = [flag for flag, value in (("--card", args.card), ("--scenario", args.scenario), ("--op", args.op),
                                      ("--published", args.published), ("--decisions", args.decisions),
                                      ("--held-out-machines", args.held_out_machines), ("--plot", args.plot)) if value]
    if given or len(args.trace) > 1:
        raise SimclusterError(f"--error-bands runs every held-out set itself; {given[0] if given else 'a second path'} does not apply",
                              hint="give at most one folder of published runs (default calibration/published)")
    built = build_table(args.trace[0] if args.trace else None)
    doc = built.to_json()
    write_document(args.table or TABLE, output.dumps(doc, "the error-band table", indent=1) + "\n")
    # the pages from the table as written (rounded), as a reader of the shipped file renders them (review C54 item 12)
    table = Table.from_json(json.loads(json.dumps(doc)), str(args.table or TABLE))
    for path, text in (report.documents(args.docs, table) if args.docs else {}).items():
        write_document(path, text)
    if args.json:
        print(output.dumps({"table": str(args.table or TABLE), "coverage": [c.to_json() for c in held_out_coverage(table)],
                            "regimes": regime_summary(table)}, "the error-band table", indent=1))
    else:
        print(f"error-band table: {args.table or TABLE} ({len(table.residuals)} held-out rows, {len(table.regimes)} regimes)")
        print("\n".join(report.coverage_lines(table)))
    return 0


def _validate_held_out_systems(args) -> int:
    """validate --published nccl --held-out-systems: each published system's inter-node terms fitted on the others."""
    from simcluster.reference.nccl_held_out import excluded_systems, held_out_systems, sources, text

    given = [flag for flag, value in (("--card", args.card), ("--scenario", args.scenario), ("--op", args.op),
                                      ("--decisions", args.decisions), ("--plot", args.plot),
                                      ("--held-out-machines", args.held_out_machines)) if value]
    if args.published != "nccl" or given or len(args.trace) > 1:
        raise SimclusterError(f"--held-out-systems goes with --published nccl alone{f'; {given[0]} does not apply' if given else ''}",
                              hint="simcluster validate --published nccl --held-out-systems [FOLDER]")
    results = held_out_systems(args.trace[0] if args.trace else None)
    excluded = excluded_systems(args.trace[0] if args.trace else None)
    if args.json:
        print(json.dumps({"systems": [r.to_json() for r in results], "sources": [g.to_json() for g in sources(results)],
                          "excluded": [{"system": name, "excluded_why": why} for name, why in excluded]}, indent=1))
    else:
        sys.stdout.write(text(results, excluded))
    return 0


def _validate_packet_level(args) -> int:
    """validate --packet-level SCENARIO: the flow model against ns-3 (simcluster/packet/)."""
    from simcluster.packet.compare import ns3_available, validate_scenario

    given = [flag for flag, value in (("a trace", args.trace), ("--card", args.card), ("--scenario", args.scenario), ("--op", args.op),
                                      ("--published", args.published), ("--decisions", args.decisions), ("--plot", args.plot),
                                      ("--held-out-machines", args.held_out_machines)) if value]
    if given:
        raise SimclusterError(f"--packet-level runs the scenario's own traffic; {given[0]} does not apply")
    ok, why = ns3_available()
    if not ok:
        raise SimclusterError(why)
    result = validate_scenario(args.packet_level, progress=lambda r: print(
        f"simcluster: {r.fabric} {r.pattern} {r.flow_bytes / 2**20:.3g} MiB: {r.error_pct:+.1f}%", file=sys.stderr))
    doc = output.check(result.to_json(), args.packet_level)
    sys.stdout.write(json.dumps(doc, indent=1) + "\n" if args.json else result.text())
    for line in result.skipped:
        print(f"simcluster: skipped {line}", file=sys.stderr)
    return EXIT_PARTIAL if result.skipped else 0
