"""The command line: thin wrappers that parse arguments, call the library and print (the parser: cli_args.py;
`validate` and its modes: cli_validate.py).

Every SimclusterError is printed as one line, `simcluster: error: ...`, with exit status 2. Exit 3: something was
skipped (named on stderr). Exit 4 (`predict training`): a configuration that does not fit in GPU memory; its JSON has
`"status": "does_not_fit"` and its text prints no step time as if it could run. The statuses: errors.EXIT_*.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from simcluster import __version__, output
from simcluster.cli_validate import cmd_validate
from simcluster.errors import EXIT_CANNOT_RUN, EXIT_PARTIAL, EXIT_USAGE, SimclusterError


def cmd_parse(args) -> int:
    from simcluster.traces import nccl_tests

    trace = nccl_tests.parse(args.trace, op=args.op)
    doc = output.check(trace.as_json(), args.trace)
    if args.json:
        print(json.dumps(doc, indent=1))
    else:
        print(f"{trace.path}: {trace.tool} {trace.tool_version or ''} NCCL {trace.nccl_version or '?'}, "
              f"{trace.op}, {trace.nranks} ranks on {trace.nodes} node(s), {len(trace.rows)} sizes")
        for warning in trace.warnings:
            print(f"warning: {warning}")
    return 0


def cmd_calibrate(args) -> int:
    from simcluster.card_document import dump_card
    from simcluster.files import write_documents
    from simcluster.fit.calibrate import calibrate, nothing_fitted

    result = calibrate(args.traces, args.output, args.name, args.kind, args.kind_card, args.collective_card, args.op_profile,
                       args.scenario, args.variant, args.op, args.transport, args.line_rate, args.nccl_log, args.model)
    for line in result.problems:
        print(f"simcluster: skipped: {line}", file=sys.stderr)
    if result.card is not None:
        _write(args.output, dump_card(result.card))
        print(f"wrote {args.output}: {result.message}")
        return 0
    if not result.documents:
        raise nothing_fitted(args.traces, result.problems)
    for path in write_documents(args.output, result.documents):
        print(f"wrote {path}")
    return EXIT_PARTIAL if result.problems else 0


def _write(path: str, text: str) -> None:
    """A single result file, written atomically through simcluster.files (a bundle's cards: write_documents)."""
    from simcluster.files import write_document

    write_document(path, text)


def cmd_predict_collective(args) -> int:
    from simcluster.predict_collective import sweep_from_card, sweep_from_scenario
    from simcluster.report.tables import nccl_tests_table

    if args.scenario:
        if args.card:
            raise SimclusterError("give --card (one node's card) or --scenario (its machine's cards), not both")
        if args.host_launched:
            raise SimclusterError("--host-launched applies to a --card (one node's nccl-tests timing), not to --scenario")
        if args.ranks or args.ranks_per_node:
            raise SimclusterError("--ranks and --ranks-per-node apply to a --card; with --scenario the ranks are the "
                                  "scenario machine's nodes x gpus_per_node")
        results = sweep_from_scenario(args.scenario, args.op, args.b, args.e, args.f, args.algorithm, args.variant)
    elif not args.card or args.ranks is None:
        raise SimclusterError("predict collective needs --card and --ranks, or --scenario")
    else:
        if args.algorithm or args.variant:
            raise SimclusterError(f"{'--algorithm' if args.algorithm else '--variant'} applies to --scenario, not to a --card")
        results = [sweep_from_card(args.card, args.op, args.ranks, args.ranks_per_node, args.b, args.e, args.f,
                                   args.host_launched)]
    docs = output.check([r.to_json() for r in results], args.scenario or args.card)
    if args.json:
        print(json.dumps(docs[0] if len(docs) == 1 else docs, indent=1))
        return 0
    for result in results:
        if result.variant:
            print(f"== variant {result.variant}")
        sys.stdout.write(nccl_tests_table(result.predictions, result.header_lines(__version__)))
        sys.stdout.write("".join(f"# {line}\n" for line in result.trust_lines()))
    return 0


def cmd_predict_training(args) -> int:
    from simcluster import files, strict
    from simcluster.build import run_file
    from simcluster.report.results import render
    from simcluster.results import LlmTrainingResult, TrainingResult

    if args.nodes is not None and not 1 <= args.nodes <= 131072:
        raise SimclusterError(f"--nodes {args.nodes}: expected 1 to 131072")
    runs = run_file(args.scenario, nodes=args.nodes, trace=bool(args.trace))
    found = [(r.variant, job) for r in runs for job in r.jobs if isinstance(job, (TrainingResult, LlmTrainingResult))]
    if not found:
        raise SimclusterError("the scenario has no 'kind: training' or 'kind: llm_training' job", where=args.scenario)
    traces = files.paths_per_label(args.trace, [label for label, _ in found]) if args.trace else []
    out = output.check([{**({"variant": label} if label else {}), **job.to_json()} for label, job in found], args.scenario)
    for path, (_, job) in zip(traces, found, strict=False):
        _write(path, output.dumps(job.prediction.timeline, args.scenario))
    cannot_run = EXIT_CANNOT_RUN if any(isinstance(job, LlmTrainingResult) and not job.prediction.fits for _, job in found) else 0
    if args.json:
        print(json.dumps(out[0] if len(out) == 1 else out, indent=1))
        return cannot_run
    doc = strict.load_yaml(args.scenario)   # its description only (already read and checked by run_file)
    print(f"scenario {runs[0].name}: {doc.get('description', '') if isinstance(doc, dict) else ''}".rstrip(": "))
    for label, job in found:
        if label:
            print(f"\n== variant {label}")
        sys.stdout.write(render(job))
    for path, (label, _) in zip(traces, found, strict=False):
        print(f"timeline{f' of {label}' if label else ''}: {path} (open in https://ui.perfetto.dev)")
    return cannot_run


def cmd_run(args) -> int:
    from simcluster.build import run_file
    from simcluster.report.results import scenario_text
    from simcluster.results import scenario_json
    from simcluster.scenario import load

    results = run_file(args.scenario)
    doc = output.check(scenario_json(results), args.scenario)
    skipped = [line for r in results for line in r.skipped]
    for line in skipped:
        print(f"simcluster: skipped {line}", file=sys.stderr)
    if args.json:
        print(json.dumps(doc, indent=1))
    else:
        sys.stdout.write(scenario_text(results, load(args.scenario).description))
    return EXIT_PARTIAL if skipped else 0


def cmd_storage(args) -> int:
    from simcluster.storage import questions

    s = questions.setup(args.workload, args.nvme, args.accelerator, args.io_size, args.depth, args.steps,
                        args.thread_rate, args.cores, args.network, args.page_cache, at_least=args.action == "max-accelerators")
    if args.action == "max-accelerators":
        out = output.check(questions.max_accelerators(s, args.drives, args.seed), args.workload)
        sys.stdout.write(json.dumps(out, indent=1) + "\n" if args.json else questions.max_accelerators_text(out))
        return 0
    out, run = questions.simulate(s, args.accelerators, args.drives, args.seed)
    out = output.check(out, args.workload)
    if args.plot_dir:
        from simcluster.storage.report import figures

        out["figures"] = figures(run, args.plot_dir, f"{s.workload.model}-{args.accelerators}acc")
    sys.stdout.write(json.dumps(out, indent=1) + "\n" if args.json else questions.simulate_text(out))
    return 0


def cmd_collect(args) -> int:
    from simcluster.cli_args import collect_options, csv_list
    from simcluster.runner.bundle import collect_bundle

    options = collect_options(args)

    def progress(entry):
        print(f"{entry['tool']:>18} {entry['run_id']:<24} {entry['status']:<8} {entry.get('wall_s', 0):7.1f} s",
              flush=True)

    lab = (args.lab_rate, args.lab_delay, args.lab_offloads) if args.lab else None
    manifest, code = collect_bundle(args.out, csv_list(args.tools) or ["qperf", "perf-stat", "fio"], options, progress, lab)
    bad = [r for r in manifest["runs"] if r["status"] != "ok"]
    print(f"bundle {args.out}: {len(manifest['runs']) - len(bad)} runs ok, {len(bad)} not ({manifest['status']})")
    for r in bad:
        print(f"  {r['tool']}/{r['run_id']}: {r['status']}: {(r.get('stderr_tail') or '').splitlines()[-1:]}")
    return code


def cmd_lab(args) -> int:
    from simcluster.runner import netlab

    if args.action == "down":
        netlab.down()
        print("lab removed")
        return 0
    lab = netlab.up(args.rate, args.delay)
    print(output.dumps(lab.ground_truth, "the lab's ground truth"))
    return 0


def cmd_sweep(args) -> int:
    from simcluster.sweep import run, spec

    summary = run.run(spec.read_sweep(args.scenario), args.output, workers=args.workers, scheduler=args.scheduler,
                      chunk=args.chunk, flush_rows=args.flush_rows, flush_s=args.flush_seconds)
    for line in summary.problems[:20]:
        print(f"simcluster: skipped {line}", file=sys.stderr)
    if len(summary.problems) > 20:
        print(f"simcluster: skipped {len(summary.problems) - 20} more points (status column in the results)", file=sys.stderr)
    if args.json:
        print(output.dumps(summary.to_json(), args.scenario, indent=1))
    else:
        print(f"{summary.points} points: {summary.already} already stored, {summary.ran} ran ({summary.ok} ok, "
              f"{summary.failed} failed), {summary.invalid} invalid; {summary.parts} part files in {summary.folder} "
              f"({summary.wall_s:.1f} s)")
        if summary.statuses:
            print("validation of the answers computed now: " + ", ".join(f"{n} {s}" for s, n in sorted(summary.statuses.items()))
                  + " (each row's 80% band: the jobs[i].<key>_band columns)")
    return EXIT_PARTIAL if summary.problems else 0


def cmd_plan(args) -> int:
    from simcluster.files import write_documents
    from simcluster.plan import search
    from simcluster.report import plan as plan_report

    result = search.run_plan(args.plan, args.output, workers=args.workers, scheduler=args.scheduler,
                             include_unvalidated=args.include_unvalidated)
    docs = plan_report.plan_documents(result, f"simcluster plan: {Path(args.plan).stem}")
    for line in result.summary.problems[:20]:
        print(f"simcluster: skipped {line}", file=sys.stderr)
    if args.json:
        print(docs["plan.json"], end="")
    else:
        s = result.summary
        print(f"{s.points} configurations ({sum(result.skipped.values())} candidates not run), {s.already} already stored, "
              f"{s.ran} ran in {s.wall_s:.1f} s")
        sys.stdout.write(plan_report.answer_text(result.answer))
    for path in write_documents(args.output, docs):
        if path.suffix in (".html", ".json"):   # with --json, stdout is the answer alone
            print(f"wrote {path}", file=sys.stderr if args.json else sys.stdout)
    return EXIT_PARTIAL if result.summary.problems else 0


def cmd_report(args) -> int:
    from simcluster.files import write_documents
    from simcluster.report.plan import store_report

    out = Path(args.output)
    docs = store_report(args.results, f"{out.stem}-figures", args.title)
    docs[out.name] = docs.pop("report.html")
    for path in write_documents(out.parent if str(out.parent) else ".", docs):
        if path.suffix == ".html":
            print(f"wrote {path}")
    return 0


COMMANDS = {"parse": cmd_parse, "calibrate": cmd_calibrate, "predict_collective": cmd_predict_collective,
            "predict_training": cmd_predict_training, "validate": cmd_validate, "collect": cmd_collect,
            "storage": cmd_storage, "lab": cmd_lab, "run": cmd_run, "sweep": cmd_sweep, "plan": cmd_plan,
            "report": cmd_report}


def build_parser() -> argparse.ArgumentParser:
    from simcluster.cli_args import build_parser as parser

    return parser(COMMANDS)


def main(argv: list[str] | None = None) -> int:
    from simcluster import engine

    if argv is None:
        from simcluster.files import exit_on_sigterm

        exit_on_sigterm()
    max_events = engine.MAX_EVENTS
    try:
        bad = next((a for a in (sys.argv[1:] if argv is None else argv) if "\x00" in str(a)), None)
        if bad is not None:   # no file or option can hold one; os calls would raise ValueError
            raise SimclusterError(f"argument {bad.split(chr(0))[0][:80]!r}... holds a NUL byte")
        args = build_parser().parse_args(argv)
        if getattr(args, "max_events", None) is not None:
            if not 1e5 <= args.max_events <= 1e12:
                raise SimclusterError(f"--max-events {args.max_events:g}: expected 1e5 to 1e12")
            engine.MAX_EVENTS = int(args.max_events)
        if args.command == "predict" and getattr(args, "f", 2) < 2:
            raise SimclusterError("-f must be >= 2")
        return args.func(args)
    except SimclusterError as exc:
        print(f"simcluster: error: {exc.one_line()}", file=sys.stderr)
        return EXIT_USAGE
    except BrokenPipeError:
        return 0
    finally:
        engine.MAX_EVENTS = max_events     # --max-events holds for this command only (main may be called again in-process)


if __name__ == "__main__":
    sys.exit(main())
