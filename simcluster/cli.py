"""The command line: thin wrappers that parse arguments, call the library and print.

Every SimclusterError is printed as one line, `simcluster: error: ...`, with exit status 2.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from simcluster import __version__
from simcluster.collectives.fabric import ALGORITHMS
from simcluster.errors import SimclusterError

EXIT_USAGE = 2
EXIT_PARTIAL = 3     # something was skipped (named on stderr); the rest was done


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # one line, no usage dump; the subcommand named, not the program twice
        command = self.prog.removeprefix("simcluster").strip()
        raise SimclusterError(f"{command}: {message}" if command else message, hint=f"see {self.prog} --help")


def cmd_parse(args) -> int:
    from simcluster.traces import nccl_tests

    trace = nccl_tests.parse(args.trace, op=args.op)
    if args.json:
        print(json.dumps(trace.as_json(), indent=1))
    else:
        print(f"{trace.path}: {trace.tool} {trace.tool_version or ''} NCCL {trace.nccl_version or '?'}, "
              f"{trace.op}, {trace.nranks} ranks on {trace.nodes} node(s), {len(trace.rows)} sizes")
        for warning in trace.warnings:
            print(f"warning: {warning}")
    return 0


def cmd_calibrate(args) -> int:
    from simcluster.cards import dump_card
    from simcluster.fit import cards

    if Path(args.traces[0]).is_dir():
        from simcluster.fit.bundle import calibrate_bundles

        not_dirs = [t for t in args.traces if not Path(t).is_dir()]
        if not_dirs:
            raise SimclusterError(f"{not_dirs[0]}: not a bundle folder", hint="pass bundle folders, or trace files, not both")
        from simcluster.files import write_documents

        result = calibrate_bundles(args.traces, args.collective_card, args.op_profile)
        for line in result.problems:
            print(f"simcluster: skipped: {line}", file=sys.stderr)
        if not result.documents:
            raise SimclusterError("no card could be fitted from the bundle(s)", where=", ".join(args.traces),
                                  hint="each skipped input is named above" if result.problems else "no traces of a known tool")
        for path in write_documents(args.output, result.documents):
            print(f"wrote {path}")
        return EXIT_PARTIAL if result.problems else 0
    if args.collective_card:
        raise SimclusterError("--collective-card applies to bundle folders only", hint="pass bundle folders")
    name = args.name or Path(args.output).stem
    from simcluster.traces.qperf import looks_like_qperf

    if looks_like_qperf(args.traces[0]):
        if len(args.traces) != 1:
            raise SimclusterError("a NIC card is fitted from one qperf output file", hint="give one file")
        card, message = cards.nic_card(args.traces[0], args.transport, args.line_rate, name)
    else:
        card, message = cards.collective_card(args.traces, args.op, args.nccl_log or [], args.op_profile, name, args.model)
    _write(args.output, dump_card(card))
    print(f"wrote {args.output}: {message}")
    return 0


def _write(path: str, text: str) -> None:
    """A single result file, written atomically through simcluster.files (a bundle's cards: write_documents)."""
    from simcluster.files import write_document

    write_document(path, text)


def cmd_predict_collective(args) -> int:
    from simcluster.predict_collective import sweep_from_card, sweep_from_scenario
    from simcluster.report.tables import nccl_tests_table

    if args.scenario:
        if args.host_launched:
            raise SimclusterError("--host-launched applies to a --card (one node's nccl-tests timing), not to --scenario")
        if args.ranks or args.ranks_per_node:
            raise SimclusterError("--ranks and --ranks-per-node apply to a --card; with --scenario the ranks are the "
                                  "scenario machine's nodes x gpus_per_node")
        result = sweep_from_scenario(args.scenario, args.op, args.b, args.e, args.f, args.algorithm)
    elif not args.card or args.ranks is None:
        raise SimclusterError("predict collective needs --card and --ranks, or --scenario")
    else:
        if args.algorithm:
            raise SimclusterError("--algorithm chooses a multi-node algorithm; it applies to --scenario")
        result = sweep_from_card(args.card, args.op, args.ranks, args.ranks_per_node, args.b, args.e, args.f,
                                 args.host_launched)
    sys.stdout.write(nccl_tests_table(result.predictions, result.header_lines(__version__)))
    return 0


def cmd_predict_training(args) -> int:
    from simcluster.build import run_file
    from simcluster.report.results import render
    from simcluster.results import LlmTrainingResult, TrainingResult
    from simcluster.scenario import load

    if args.nodes is not None and not 1 <= args.nodes <= 131072:
        raise SimclusterError(f"--nodes {args.nodes}: expected 1 to 131072")
    runs = run_file(args.scenario, nodes=args.nodes, trace=bool(args.trace))
    found = [(r.variant, job) for r in runs for job in r.jobs if isinstance(job, (TrainingResult, LlmTrainingResult))]
    if not found:
        raise SimclusterError("the scenario has no 'kind: training' or 'kind: llm_training' job", where=args.scenario)
    if args.trace:
        _write(args.trace, json.dumps(_timeline(found[0][1])))
    if args.json:
        out = [{**({"variant": label} if label else {}), **job.to_json()} for label, job in found]
        print(json.dumps(out[0] if len(out) == 1 else out, indent=1))
        return 0
    print(f"scenario {runs[0].name}: {load(args.scenario).description}".rstrip(": "))
    for label, job in found:
        if label:
            print(f"\n== variant {label}")
        sys.stdout.write(render(job))
    if args.trace:
        print(f"timeline: {args.trace} (open in https://ui.perfetto.dev)")
    return 0


def _timeline(job) -> dict:
    from simcluster.results import LlmTrainingResult
    from simcluster.training.predict import perfetto_trace

    return job.prediction.timeline if isinstance(job, LlmTrainingResult) else perfetto_trace(job.prediction)


def cmd_validate(args) -> int:
    from simcluster.report.validation import plot, render
    from simcluster.validation import validate_path

    result = validate_path(args.trace, args.card, args.scenario, args.op)
    if args.plot:
        plot(result, args.plot)
    sys.stdout.write(json.dumps(result.to_json(), indent=1) + "\n" if args.json else render(result))
    for line in result.skipped:
        print(f"simcluster: skipped {line}", file=sys.stderr)
    return EXIT_PARTIAL if result.skipped else 0


def cmd_run(args) -> int:
    from simcluster.build import run_file
    from simcluster.report.results import scenario_text
    from simcluster.results import scenario_json
    from simcluster.scenario import load

    results = run_file(args.scenario)
    skipped = [line for r in results for line in r.skipped]
    for line in skipped:
        print(f"simcluster: skipped {line}", file=sys.stderr)
    if args.json:
        print(json.dumps(scenario_json(results), indent=1))
    else:
        sys.stdout.write(scenario_text(results, load(args.scenario).description))
    return EXIT_PARTIAL if skipped else 0


def cmd_storage(args) -> int:
    from simcluster.storage import questions

    s = questions.setup(args.workload, args.nvme, args.accelerator, args.io_size, args.depth, args.steps,
                        args.thread_rate, args.cores)
    if args.action == "max-accelerators":
        out = questions.max_accelerators(s, args.drives, args.seed)
        sys.stdout.write(json.dumps(out, indent=1) + "\n" if args.json else questions.max_accelerators_text(out))
        return 0
    out, run = questions.simulate(s, args.accelerators, args.drives, args.seed)
    if args.plot_dir:
        from simcluster.storage.report import figures

        out["figures"] = figures(run, args.plot_dir, f"{s.workload.model}-{args.accelerators}acc")
    print(json.dumps(out, indent=1))
    return 0


def _csv(text: str | None) -> list[str]:
    return [x.strip() for x in (text or "").split(",") if x.strip()]


def cmd_collect(args) -> int:
    import dataclasses

    from simcluster.runner import collect, plans

    tools = _csv(args.tools) or ["qperf", "perf-stat", "fio"]
    gt = {}
    if args.lab:
        from simcluster.runner import netlab

        lab = netlab.up(args.lab_rate, args.lab_delay)
        gt = lab.ground_truth
    options = plans.Options(
        hosts=_csv(args.hosts), nccl_tests=args.nccl_tests, ops=tuple(_csv(args.ops) or ["all_reduce"]), gpus=args.gpus,
        min_size=args.b, max_size=args.e, nccl_iters=args.nccl_iters, nccl_warmup=args.nccl_warmup,
        nccl_repeat=args.nccl_repeat, nccl_graph=args.nccl_graph, nccl_tuning=args.nccl_tuning,
        nccl_register=args.nccl_register, qperf_host=args.qperf_host or (gt.get("server")),
        qperf_time=args.qperf_time, qperf_repeat=args.qperf_repeat,
        pin=args.lab or args.pin, server_netns=gt.get("server_netns"), client_netns=gt.get("client_netns"),
        fio_dir=args.fio_dir, fio_size=args.fio_size, fio_runtime=args.fio_runtime, dlio=args.dlio,
        dlio_workload=args.dlio_workload, dlio_accelerators=tuple(int(x) for x in _csv(args.dlio_accelerators) or [1]),
        dlio_overrides=tuple(args.dlio_override or ()), dlio_cold_cache=not args.dlio_warm_cache,
        ddp_models=tuple(_csv(args.ddp_models) or ["resnet18:32:128"]), ddp_paired=args.ddp_paired,
        gpu_micro_quick=args.gpu_micro_quick, llm_presets=tuple(_csv(args.llm_presets) or plans.Options.llm_presets),
        llm_shapes=args.llm_shapes, llm_modes=tuple(_csv(args.llm_modes) or ["single"]), llm_steps=args.llm_steps,
        timeout_s=args.timeout, ground_truth=gt)
    steps = plans.plan(tools, options, Path(args.out))

    def progress(entry):
        print(f"{entry['tool']:>18} {entry['run_id']:<24} {entry['status']:<8} {entry.get('wall_s', 0):7.1f} s",
              flush=True)

    try:
        manifest, code = collect.collect(args.out, steps, tools, dataclasses.asdict(options), progress)
    finally:
        if args.lab:
            from simcluster.runner import netlab

            netlab.down()
    for scratch in ("fio/data", "dlio/data"):  # test files and datasets, not traces
        if (Path(args.out) / scratch).is_dir() and not (scratch == "fio/data" and args.fio_dir):
            import shutil

            shutil.rmtree(Path(args.out) / scratch)
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
    print(json.dumps(lab.ground_truth))
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
        print(json.dumps(summary.to_json(), indent=1))
    else:
        print(f"{summary.points} points: {summary.already} already stored, {summary.ran} ran ({summary.ok} ok, "
              f"{summary.failed} failed), {summary.invalid} invalid; {summary.parts} part files in {summary.folder} "
              f"({summary.wall_s:.1f} s)")
    return EXIT_PARTIAL if summary.problems else 0


def cmd_plan(args) -> int:
    from simcluster.files import write_documents
    from simcluster.plan import search
    from simcluster.report import html

    result = search.run_plan(args.plan, args.output, workers=args.workers, scheduler=args.scheduler)
    docs = html.build(result.rows, f"simcluster plan: {Path(args.plan).stem}", "figures", result.answer,
                      result.answer["within_s"], notes=[f"{n} candidates not run: {reason}" for reason, n in
                                                        sorted(result.skipped.items())])
    docs["plan.json"] = json.dumps({"answer": result.answer, "skipped": result.skipped, "sweep": result.summary.to_json()},
                                   indent=1, sort_keys=True) + "\n"
    for line in result.summary.problems[:20]:
        print(f"simcluster: skipped {line}", file=sys.stderr)
    if args.json:
        print(docs["plan.json"], end="")
    else:
        s = result.summary
        print(f"{s.points} configurations ({sum(result.skipped.values())} candidates not run), {s.already} already stored, "
              f"{s.ran} ran in {s.wall_s:.1f} s")
        sys.stdout.write(search.answer_text(result.answer))
    for path in write_documents(args.output, docs):
        if path.suffix in (".html", ".json"):
            print(f"wrote {path}")
    return EXIT_PARTIAL if result.summary.problems else 0


def cmd_report(args) -> int:
    from simcluster.files import write_documents
    from simcluster.plan.search import store_report

    out = Path(args.output)
    docs = store_report(args.results, f"{out.stem}-figures", args.title)
    docs[out.name] = docs.pop("report.html")
    for path in write_documents(out.parent if str(out.parent) else ".", docs):
        if path.suffix == ".html":
            print(f"wrote {path}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="simcluster", description="Discrete-event simulator of AI training clusters, "
                     "calibrated from real traces.")
    parser.add_argument("--version", action="version", version=f"simcluster {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    p = sub.add_parser("parse", help="show what the nccl-tests parser reads from a log")
    p.add_argument("trace", help="an nccl-tests log (text or -J JSON)")
    p.add_argument("--op", help="the collective, when the log does not say")
    p.add_argument("--json", action="store_true", help="print every row the parser read, as JSON")
    p.set_defaults(func=cmd_parse)

    p = sub.add_parser("calibrate", help="fit a model card: collective (nccl-tests logs of one machine) or NIC (qperf)")
    p.add_argument("traces", nargs="+", metavar="TRACE",
                   help="nccl-tests logs of one machine, a qperf output, or a trace bundle folder from 'collect'")
    p.add_argument("--line-rate", help="NIC cards: the port speed, e.g. 100Gbps")
    p.add_argument("--transport", choices=("rdma", "tcp"), help="NIC cards: which qperf tests to fit")
    p.add_argument("-o", "--output", required=True, metavar="CARD.yaml",
                   help="the model card to write (a folder of cards for a bundle)")
    p.add_argument("--name", help="the card's name (default: the output file's stem)")
    p.add_argument("--op", help="the collective, when the logs do not say")
    p.add_argument("--collective-card", metavar="CARD", help="bundles: the collective card for the 2-GPU all_reduce "
                   "of the DDP fit (default: each bundle's own nccl-tests card)")
    p.add_argument("--nccl-log", metavar="LOG", action="append",
                   help="collective cards: an NCCL_DEBUG_SUBSYS=TUNING log of the same machine, one per rank count "
                   "(repeat the option); fits the NCCL-primitives model with NCCL's own protocol choice (else the "
                   "chunked ring model)")
    p.add_argument("--model", choices=("chunked-ring", "nccl-primitives"),
                   help="collective cards: the model to fit (default: nccl-primitives with --nccl-log, else chunked-ring; "
                   "nccl-primitives without a tuning log lets NCCL's decision model pick each size's protocol)")
    p.add_argument("--op-profile", metavar="PROFILE.yaml",
                   help="collective cards: a per-op profile measured on another machine of the same kind "
                   "(op-profile-*.yaml from 'simcluster calibrate BUNDLE'); the card predicts every op as its "
                   "all_reduce-fitted model times that profile, at the profile's rank count and launch mode")
    p.set_defaults(func=cmd_calibrate)

    p = sub.add_parser("predict", help="predict with a calibrated model")
    what = p.add_subparsers(dest="what", required=True, parser_class=_Parser)
    c = what.add_parser("collective", help="an nccl-tests-style sweep of one collective")
    c.add_argument("--card", help="a collective card (one node); or use --scenario")
    c.add_argument("--scenario", help="a scenario whose machine (cards, nodes, NICs, fabric) runs the collective")
    c.add_argument("--algorithm", choices=ALGORITHMS,
                   help="force a multi-node algorithm (default: the fastest, as NCCL's tuner)")
    c.add_argument("--op", required=True, help="all_reduce, all_gather, reduce_scatter, broadcast, reduce, sendrecv, "
                   "alltoall (nccl-tests' names also work)")
    c.add_argument("--ranks", type=int, help="GPUs taking part (with --card; a --scenario uses all its GPUs)")
    c.add_argument("--ranks-per-node", type=int, help="GPUs per node (default: --ranks, one node)")
    c.add_argument("-b", default="8", help="min size (nccl-tests suffixes: 8, 1K, 1M, 8G)")
    c.add_argument("-e", default="128M", help="max size")
    c.add_argument("-f", type=int, default=2, help="size factor")
    c.add_argument("--host-launched", action="store_true",
                   help="calls launched from the host, buffers unregistered (plain nccl-tests): the card's host launch "
                        "floor applies and p2p calls pipeline through NCCL's FIFO (default: CUDA graphs, nccl-tests -G)")
    c.set_defaults(func=cmd_predict_collective)
    t = what.add_parser("training", help="a data-parallel training job: step time, speedup, breakdown")
    t.add_argument("--scenario", required=True, help="a scenario YAML with a 'kind: training' job")
    t.add_argument("--json", action="store_true", help="print the result as JSON")
    t.add_argument("--nodes", type=int, help="override the machine's node count (what-if scaling)")
    t.add_argument("--trace", metavar="FILE.json", help="write a Chrome/Perfetto timeline of the step")
    t.set_defaults(func=cmd_predict_training)

    p = sub.add_parser("validate", help="predicted vs measured: an nccl-tests log (--card) or a qperf output (--scenario)")
    p.add_argument("trace", help="a measured nccl-tests log or qperf output, or a trace bundle folder (every "
                   "collective in it, a line each)")
    p.add_argument("--card", help="nccl-tests logs: the collective card to predict them with")
    p.add_argument("--scenario", help="qperf traces: a scenario with a 'kind: qperf' job")
    p.add_argument("--op", help="the collective, when the log does not say")
    p.add_argument("--json", action="store_true", help="print the rows and the summary as JSON")
    p.add_argument("--plot", metavar="FILE.png", help="draw measured and predicted busbw against size")
    p.set_defaults(func=cmd_validate)

    p = sub.add_parser("collect", help="run the real tools and write a trace bundle")
    p.add_argument("--out", required=True, metavar="DIR", help="the bundle folder to write (traces + manifest.json)")
    p.add_argument("--tools", help="comma-separated: nccl-tests, nccl-tests-socket, qperf, perf-stat, fio, dlio, ddp-step, "
                   "gpu-micro, llm-step (default: qperf,perf-stat,fio)")
    p.add_argument("--hosts", help="comma-separated hosts; the first runs the clients (mpirun hostfile, ssh qperf server)")
    p.add_argument("--nccl-tests", metavar="DIR", help="folder of nccl-tests *_perf binaries (else torch.distributed)")
    p.add_argument("--ops", help="collectives for nccl-tests (default all_reduce)")
    p.add_argument("--gpus", type=int, default=0, help="GPUs per host (default: all)")
    p.add_argument("-b", default="8", help="nccl-tests -b: smallest size (default %(default)s)")
    p.add_argument("-e", default="128M", help="nccl-tests -e: largest size (default %(default)s)")
    p.add_argument("--nccl-iters", type=int, default=20, help="nccl-tests -n: timed iterations per size")
    p.add_argument("--nccl-warmup", type=int, default=1, help="nccl-tests -w: warm-up iterations per size")
    p.add_argument("--nccl-graph", type=int, default=0, metavar="N", help="nccl-tests -G N: time the loop as a "
                   "CUDA graph replayed N times (no host launch cost in the time)")
    p.add_argument("--nccl-register", type=int, default=0, choices=(0, 1, 2), help="nccl-tests -R: 1 registers the "
                   "send and receive buffers (ncclCommRegister), 2 symmetric registration; CUDA graphs register "
                   "them anyway (at 2 x H200 it makes all_gather 13%% and alltoall 8%% faster)")
    p.add_argument("--nccl-repeat", type=int, default=1, help="rounds over all ops; calibration takes the median per size")
    p.add_argument("--nccl-tuning", action="store_true", help="one more run per op logging NCCL's algorithm, "
                   "protocol and channels per size (NCCL_DEBUG_SUBSYS=INIT,TUNING)")
    p.add_argument("--qperf-host", help="qperf server address (default: 127.0.0.1, or the second host)")
    p.add_argument("--qperf-time", type=int, default=5, help="qperf -t: seconds per test (default %(default)s)")
    p.add_argument("--qperf-repeat", type=int, default=3, help="qperf client runs; calibration takes the median")
    p.add_argument("--pin", action="store_true", help="pin the qperf client and a local server to CPU 0 "
                   "(no cross-CPU wakeups: steadier latency on small VMs; on with --lab)")
    p.add_argument("--lab", action="store_true", help="run qperf between two network namespaces shaped by tc (root)")
    p.add_argument("--lab-rate", default="400mbit", help="the lab's tc rate, tc units (default %(default)s)")
    p.add_argument("--lab-delay", help="one-way delay for the lab, e.g. 10ms (a userspace delay line)")
    p.add_argument("--fio-dir", help="folder on the disk to measure (default: inside the bundle)")
    p.add_argument("--fio-size", default="512M", help="fio --size: the test file (default %(default)s)")
    p.add_argument("--fio-runtime", type=int, default=5, help="fio --runtime: seconds per job (default %(default)s)")
    p.add_argument("--dlio", default="dlio_benchmark", help="the dlio_benchmark executable")
    p.add_argument("--dlio-workload", default="unet3d_h100", help="DLIO workload name (default %(default)s)")
    p.add_argument("--dlio-accelerators", default="1", help="comma-separated emulated accelerator counts")
    p.add_argument("--dlio-override", action="append", metavar="KEY=VALUE", help="hydra override, e.g. "
                   "++workload.dataset.num_files_train=16")
    p.add_argument("--dlio-warm-cache", action="store_true", help="keep the page cache between DLIO runs "
                   "(default: drop it so reads reach the disk; needs root)")
    p.add_argument("--ddp-models", help="MODEL:IMAGE:BATCH,... for ddp-step (default resnet18:32:128)")
    p.add_argument("--ddp-paired", type=int, default=0, metavar="BLOCKS",
                   help="ddp-step: the multi-GPU processes also time plain 1-GPU steps, alternating BLOCKS blocks "
                        "with the DDP steps (a 1-GPU baseline from the same processes; docs/models/training.md)")
    p.add_argument("--gpu-micro-quick", action="store_true", help="gpu-micro: small sizes only (a logic check)")
    p.add_argument("--llm-presets", help="llm-step model sizes, comma-separated: 0.3b, 0.5b, 1b, 3b, tiny (default: 0.3b,0.5b,1b,3b)")
    p.add_argument("--llm-shapes", default="1024:8,2048:4,4096:2,2048:1", help="llm-step SEQ:MICRO_BATCH,... (default %(default)s)")
    p.add_argument("--llm-modes", help="llm-step single, ddp, fsdp, tp; multi-GPU modes run under torchrun over --gpus (default single)")
    p.add_argument("--llm-steps", type=int, default=10, help="llm-step timed steps per shape (default %(default)s)")
    p.add_argument("--timeout", type=float, default=600.0, help="seconds per tool run")
    p.set_defaults(func=cmd_collect)

    p = sub.add_parser("storage", help="DLIO / MLPerf Storage workloads on NVMe drives")
    p.add_argument("action", choices=("max-accelerators", "simulate"),
                   help="max-accelerators: the most that keep AU above the threshold; simulate: one run")
    p.add_argument("--workload", required=True, help="a DLIO workload YAML (e.g. unet3d_h100.yaml)")
    p.add_argument("--accelerator", help="take the compute time published for this accelerator (a100, h100, v100)")
    p.add_argument("--nvme", required=True, metavar="CARD", help="an NVMe card (models/nvme/*.yaml)")
    p.add_argument("--drives", type=int, default=1, help="NVMe drives striped together (default %(default)s)")
    p.add_argument("--accelerators", type=int, default=1, help="simulate: emulated accelerators")
    p.add_argument("--steps", type=int, default=32, help="steps per accelerator to simulate (the first load counts, as in DLIO)")
    p.add_argument("--io-size", default="4MiB", help="bytes per read I/O (sequential readahead; Linux max_sectors_kb)")
    p.add_argument("--depth", type=int, default=2, help="reads in flight per loader thread")
    p.add_argument("--thread-rate", help="bytes/s one loader thread can take in, e.g. 400MB/s (default: no limit)")
    p.add_argument("--cores", type=float, help="host cores the loader threads share (default: unlimited)")
    p.add_argument("--seed", type=int, default=0, help="random seed: the same seed gives the same numbers")
    p.add_argument("--plot-dir", help="simulate: write the throughput and queue-depth figures here")
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.set_defaults(func=cmd_storage)

    p = sub.add_parser("lab", help="a two-namespace veth network lab shaped by tc (root)")
    p.add_argument("action", choices=("up", "down"), help="build the lab or remove it")
    p.add_argument("--rate", default="400mbit", help="tc rate on both veth ends (default %(default)s)")
    p.add_argument("--delay", help="one-way delay, e.g. 10ms (a userspace delay line between the namespaces)")
    p.set_defaults(func=cmd_lab)

    p = sub.add_parser("run", help="run a scenario")
    p.add_argument("scenario", help="a scenario YAML (scenarios/quickstart.yaml is the bundled default)")
    p.add_argument("--json", action="store_true", help="print the results as JSON")
    p.set_defaults(func=cmd_run)

    p = sub.add_parser("sweep", help="run every point of a scenario's sweep: section on Dask into a Parquet results folder")
    p.add_argument("scenario", help="a scenario YAML with a sweep: {keys: {DOTTED.KEY: [values]}, mode: product|list}")
    p.add_argument("-o", "--output", required=True, help="results folder (Parquet parts; a second run adds only missing points)")
    p.add_argument("--workers", type=int, default=2, help="local Dask worker processes (default %(default)s; 0 = in this process)")
    p.add_argument("--scheduler", help="address of a running Dask scheduler (tcp://HOST:PORT) instead of local workers")
    p.add_argument("--chunk", type=int, help="points per Dask task (default: about 8 tasks per worker, at most 100)")
    p.add_argument("--flush-rows", type=int, default=1000, help="write a part file every N rows (default %(default)s)")
    p.add_argument("--flush-seconds", type=float, default=10.0, help="... or every S seconds (default %(default)s)")
    p.add_argument("--json", action="store_true", help="print the summary as JSON")
    p.set_defaults(func=cmd_sweep)

    p = sub.add_parser("plan", help="search hardware and parallelism; cheapest configuration within a deadline; report")
    p.add_argument("plan", help="a plan YAML (scenario + sweep: + search: + plan: {catalogue, target}); see docs/planning.md")
    p.add_argument("-o", "--output", required=True, help="folder for results/, report.html, figures/ and plan.json")
    p.add_argument("--workers", type=int, default=2, help="local Dask worker processes (default %(default)s; 0 = in this process)")
    p.add_argument("--scheduler", help="address of a running Dask scheduler instead of local workers")
    p.add_argument("--json", action="store_true", help="print the answer as JSON")
    p.set_defaults(func=cmd_plan)

    p = sub.add_parser("report", help="an HTML report (and PNG/SVG figures) of a sweep or plan results folder")
    p.add_argument("results", help="a results folder written by simcluster sweep or plan")
    p.add_argument("-o", "--output", required=True, help="the HTML file; figures go to NAME-figures/ beside it")
    p.add_argument("--title", help="the report's title")
    p.set_defaults(func=cmd_report)
    return parser


def main(argv: list[str] | None = None) -> int:
    try:
        args = build_parser().parse_args(argv)
        if args.command == "predict" and getattr(args, "f", 2) < 2:
            raise SimclusterError("-f must be >= 2")
        return args.func(args)
    except SimclusterError as exc:
        print(f"simcluster: error: {exc.one_line()}", file=sys.stderr)
        return EXIT_USAGE
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    sys.exit(main())
