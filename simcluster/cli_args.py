"""The arguments of every `simcluster` command (the parser alone; simcluster/cli.py runs the commands).
A usage mistake is one SimclusterError line, never argparse's usage dump."""

from __future__ import annotations

import argparse

from simcluster import __version__
from simcluster.collectives.fabric import ALGORITHMS
from simcluster.errors import SimclusterError


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # one line, no usage dump; the subcommand named, not the program twice
        command = self.prog.removeprefix("simcluster").strip()
        raise SimclusterError(f"{command}: {message}" if command else message, hint=f"see {self.prog} --help")


def _dask_arguments(p) -> None:
    p.add_argument("--workers", type=int, default=2, help="local Dask worker processes (default %(default)s; 0 = in this process)")
    p.add_argument("--scheduler", help="address of a running Dask scheduler (tcp://HOST:PORT) instead of local workers")


def build_parser(commands: dict) -> argparse.ArgumentParser:
    """Every command and option of `simcluster`; `commands` maps a command name to the function that runs it."""
    parser = _Parser(prog="simcluster", description="Discrete-event simulator of AI training clusters, "
                     "calibrated from real traces.")
    parser.add_argument("--version", action="version", version=f"simcluster {__version__}")
    parser.add_argument("--max-events", type=float, metavar="N", help="events one simulation may process before it is "
                        "refused (default 1e8: several minutes)")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    p = sub.add_parser("parse", help="show what the nccl-tests parser reads from a log")
    p.add_argument("trace", help="an nccl-tests log (text or -J JSON)")
    p.add_argument("--op", help="the collective, when the log does not say")
    p.add_argument("--json", action="store_true", help="print every row the parser read, as JSON")
    p.set_defaults(func=commands["parse"])

    p = sub.add_parser("calibrate", help="fit a model card: collective (nccl-tests logs of one machine) or NIC (qperf)")
    p.add_argument("traces", nargs="+", metavar="TRACE",
                   help="nccl-tests logs of one machine, a qperf output, or a trace bundle folder from 'collect'")
    p.add_argument("--line-rate", help="NIC cards: the port speed, e.g. 100Gbps")
    p.add_argument("--transport", choices=("rdma", "tcp"), help="NIC cards: which qperf tests to fit")
    p.add_argument("-o", "--output", required=True, metavar="CARD.yaml",
                   help="the model card to write (a folder of cards for a bundle)")
    p.add_argument("--name", help="the card's name (default: the output file's stem)")
    p.add_argument("--scenario", help="a multi-node nccl-tests log: the machine it ran on (NVLink card, NICs, fabric), held "
                   "fixed while the NIC's efficiency and latency are fitted -> a NIC card (docs/models/fabric.md)")
    p.add_argument("--variant", help="with --scenario: the what-if variant whose machine ran the log")
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
    p.add_argument("--kind", action="store_true", help="bundles of several machines of one kind -> a kind card "
                   "(collectives/machine.py)")
    p.add_argument("--kind-card", metavar="KIND.yaml", help="a probe bundle (collect --tools nccl-probe) -> a machine "
                   "card: the kind card plus this machine's terms")
    p.set_defaults(func=commands["calibrate"])

    p = sub.add_parser("predict", help="predict with a calibrated model")
    what = p.add_subparsers(dest="what", required=True, parser_class=_Parser)
    c = what.add_parser("collective", help="an nccl-tests-style sweep of one collective")
    c.add_argument("--card", help="a collective card (one node); or use --scenario")
    c.add_argument("--scenario", help="a scenario whose machine (cards, nodes, NICs, fabric) runs the collective; every what-if "
                   "variant of it is predicted, one table each (--variant picks one)")
    c.add_argument("--variant", help="with --scenario: only this what-if variant (its label under variants:)")
    c.add_argument("--json", action="store_true", help="print the sweep as JSON: per size time_s, algbw_Bps, busbw_Bps, each "
                   "with its 80%% band (time_s_band, ...), the algorithm, protocol, breakdown and the validation status")
    c.add_argument("--algorithm", choices=ALGORITHMS,
                   help="force a multi-node algorithm (default: the one NCCL's tuner picks from its own table, not always the fastest here)")
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
    c.set_defaults(func=commands["predict_collective"])
    t = what.add_parser("training", help="a training job: DDP (kind: training) or an LLM (kind: llm_training): step time, "
                        "breakdown, memory, days")
    t.add_argument("--scenario", required=True, help="a scenario YAML with a 'kind: training' or 'kind: llm_training' job")
    t.add_argument("--json", action="store_true", help="print the result as JSON")
    t.add_argument("--nodes", type=int, help="override the machine's node count (what-if scaling; an LLM job keeps tp, pp "
                   "and cp, takes dp from the GPUs and grows the global batch with dp)")
    t.add_argument("--trace", metavar="FILE.json", help="write a Chrome/Perfetto timeline of the step (one FILE-VARIANT.json "
                   "per variant when the scenario has several)")
    t.set_defaults(func=commands["predict_training"])

    p = sub.add_parser("validate", help="predicted vs measured: an nccl-tests log or bundle (--card), a qperf output "
                       "(--scenario), machines held out in turn (--held-out-machines), published runs (--published) or "
                       "NCCL's logged decisions (--decisions)")
    p.add_argument("trace", nargs="*", help="a measured nccl-tests log or qperf output, or a trace bundle folder (every "
                   "collective in it, a line each); with --held-out-machines, bundles of several machines; with "
                   "--published a folder or file of published runs (default calibration/published)")
    p.add_argument("--held-out-systems", action="store_true", help="with --published nccl: each published system held "
                   "out in turn, its NIC's payload efficiency and per-call start-up fitted on the other systems of its NIC "
                   "family (docs/models/fabric.md)")
    p.add_argument("--held-out-machines", action="store_true", help="each machine's bundles held out in turn: a kind "
                   "card fitted on the others plus the held-out machine's probe (sizes <= 1 MiB) predict its sweeps")
    p.add_argument("--published", choices=("nccl", "llm", "reliability"), help="published runs (calibration/published/nccl-*.yaml: "
                   "multi-node busbw on the fabric model; llm-*.yaml: training throughput on the LLM model; reliability-*.yaml: "
                   "interruptions per GPU-hour, each source's rate predicting the others' MTBF)")
    p.add_argument("--families", action="store_true", help="with --published llm: a line per issue-44 family (Megatron/NeMo, "
                   "FSDP/ZeRO, long-sequence, fp8, MoE; trust/regime.published_family), held out and development apart")
    p.add_argument("--decisions", metavar="FOLDER", help="NCCL's decisions logged in the tuning logs of every trace "
                   "bundle under FOLDER, and in every posted log (nccl-decisions-*/source.yaml, e.g. calibration/published), "
                   "against the decision model")
    p.add_argument("--error-bands", action="store_true", help="every held-out set (published LLM and NCCL runs, machines "
                   "held out in turn, MLPerf Storage submissions, DDP sessions, eager-PyTorch lab bundles, the host stack's "
                   "qperf-sizes bundles) -> the residuals per regime that give every answer its 80%% band: writes the table "
                   "(default: the one the package ships, simcluster/trust/error_bands.json) and prints each family's "
                   "coverage with its source left out")
    p.add_argument("--table", metavar="FILE.json", help="with --error-bands: write the table here instead")
    p.add_argument("--docs", metavar="REPO", help="with --error-bands: also rewrite REPO/docs/accuracy.md and REPO/README.md's "
                   "accuracy lines from the table")
    p.add_argument("--card", help="nccl-tests logs: the collective card to predict them with")
    p.add_argument("--scenario", help="predict the log on this scenario's machine and compare size by size: an nccl-tests log "
                   "(any node count: the fabric model across nodes, NCCL's algorithm; the machine's nodes x GPUs must match "
                   "the log's ranks) or a qperf output (the scenario's 'kind: qperf' job); prints measured, predicted and "
                   "the error per size")
    p.add_argument("--op", help="the collective, when the log does not say")
    p.add_argument("--json", action="store_true", help="print the rows and the summary as JSON")
    p.add_argument("--plot", metavar="FILE.png", help="draw measured and predicted busbw against size")
    p.add_argument("--packet-level", metavar="SCENARIO", help="the fabric's flow model against ns-3 (packet level) on the "
                   "scenario's fabric: ring, tree, alltoall and incast traffic per variant at 1 MiB and the full message per "
                   "flow (needs pip install -e '.[packet]'; minutes)")
    p.set_defaults(func=commands["validate"])

    p = sub.add_parser("collect", help="run the real tools and write a trace bundle")
    p.add_argument("--out", required=True, metavar="DIR", help="the bundle folder to write (traces + manifest.json)")
    p.add_argument("--tools", help="comma-separated: nccl-tests, nccl-tests-socket, nccl-probe, qperf, qperf-sizes, perf-stat, fio, dlio, ddp-step, "
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
    p.add_argument("--qperf-sizes", help="qperf-sizes tool: comma-separated message sizes (default 64,256,1K,4K,16K,64K,256K,1M)")
    p.add_argument("--qperf-size-tests", help="qperf-sizes tool: comma-separated tests (default tcp_bw,udp_bw,rc_bw,ud_bw; "
                   "udp_bw only up to 65507 B, rc_bw / ud_bw only with an RDMA device)")
    p.add_argument("--pin", action="store_true", help="pin the qperf client and a local server to CPU 0 "
                   "(no cross-CPU wakeups: steadier latency on small VMs; on with --lab)")
    p.add_argument("--pin-cpus", help="CLIENT,SERVER: pin the qperf client and a local server to these CPUs (implies "
                   "--pin; default 0,0: both on CPU 0)")
    p.add_argument("--lab", action="store_true", help="run qperf between two network namespaces shaped by tc (root)")
    p.add_argument("--lab-rate", default="400mbit", help="the lab's tc rate, tc units, or none: no shaping (default %(default)s)")
    p.add_argument("--lab-delay", help="one-way delay for the lab, e.g. 10ms (a userspace delay line)")
    p.add_argument("--lab-offloads", choices=("none", "csum", "all"), default="none",
                   help="veth offloads left on in the lab: none (software checksums, MTU frames), csum, all (and TSO/GSO/GRO)")
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
    p.add_argument("--gpu-micro-sections", default="", help="gpu-micro: its --sections, comma-separated (default: gpu-micro's own "
                   "default set; e.g. attention-backends)")
    p.add_argument("--llm-presets", help="llm-step model sizes, comma-separated: 0.3b, 0.5b, 0.8b, 1b, 1.1b, 2b, 3b, 3.1b, 8b, tiny (default: 0.3b,0.5b,1b,3b)")
    p.add_argument("--llm-shapes", default="1024:8,2048:4,4096:2,2048:1", help="llm-step SEQ:MICRO_BATCH,... (default %(default)s)")
    p.add_argument("--llm-modes", help="llm-step single, ddp, fsdp, tp, pp, tp+ddp, tp+fsdp, pp+ddp; multi-GPU modes run under "
                   "torchrun over --gpus (the two-dimensional ones over pairs of ranks; default single)")
    p.add_argument("--llm-steps", type=int, default=10, help="llm-step timed steps per shape (default %(default)s)")
    p.add_argument("--llm-clocks", action="store_true", help="llm-step: record the SM clock and board power (nvidia-smi, "
                   "every 20 ms) during each shape's timed steps")
    p.add_argument("--llm-layers", help="llm-step: comma-separated layer counts, one run per count and preset (run id "
                   "PRESET-L<n>-MODE; default: the preset's own), e.g. the hidden-128 host fit: --llm-presets tiny --llm-layers 2,8,32")
    p.add_argument("--llm-checkpointing", choices=("off", "on", "both"), default="off", help="llm-step: without (off), "
                   "with (on) or both without and with --activation-checkpointing (run ids end in -ckpt)")
    p.add_argument("--llm-ac-modes", help="llm-step: comma-separated --ac-mode values, one run each (none, full, every:N, "
                   "op; replaces --llm-checkpointing; run ids end in -ckpt, -ac-everyN, -ac-op)")
    p.add_argument("--llm-compile", choices=("off", "on", "both"), default="off", help="llm-step: without (off), with (on) "
                   "or both without and with --compile, torch.compile per decoder layer (run ids end in -compile)")
    p.add_argument("--timeout", type=float, default=600.0, help="seconds per tool run")
    p.set_defaults(func=commands["collect"])

    p = sub.add_parser("storage", help="DLIO / MLPerf Storage workloads on NVMe drives")
    p.add_argument("action", choices=("max-accelerators", "simulate"),
                   help="max-accelerators: the most that keep AU above the threshold; simulate: one run")
    p.add_argument("--workload", required=True, help="a DLIO workload YAML (e.g. unet3d_h100.yaml)")
    p.add_argument("--accelerator", help="take the compute time published for this accelerator (a100, h100, v100; b200 for unet3d)")
    p.add_argument("--nvme", required=True, metavar="CARD", help="an NVMe card (models/nvme/*.yaml)")
    p.add_argument("--drives", type=int, default=1, help="NVMe drives striped together (default %(default)s)")
    p.add_argument("--accelerators", type=int, default=1, help="simulate: emulated accelerators")
    p.add_argument("--steps", type=int, help="simulate: a fixed run of this many steps per accelerator (default: until the "
                   "steady-state AU settles); max-accelerators: the least steps per run, each going on until it settles")
    p.add_argument("--io-size", default="4MiB", help="bytes per read I/O (sequential readahead; Linux max_sectors_kb)")
    p.add_argument("--depth", type=int, default=2, help="reads in flight per loader thread")
    p.add_argument("--thread-rate", help="bytes/s one loader thread can take in, e.g. 400MB/s (default: no limit)")
    p.add_argument("--cores", type=float, help="host cores the loader threads share (default: unlimited)")
    p.add_argument("--network", help="remote storage: the host link every read crosses, e.g. 200Gb/s (default: local drives)")
    p.add_argument("--page-cache", help="host memory the page cache may hold of the dataset, e.g. 256GiB (default: none)")
    p.add_argument("--seed", type=int, default=0, help="random seed: the same seed gives the same numbers")
    p.add_argument("--plot-dir", help="simulate: write the throughput and queue-depth figures here")
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.set_defaults(func=commands["storage"])

    p = sub.add_parser("lab", help="a two-namespace veth network lab shaped by tc (root)")
    p.add_argument("action", choices=("up", "down"), help="build the lab or remove it")
    p.add_argument("--rate", default="400mbit", help="tc rate on both veth ends (default %(default)s)")
    p.add_argument("--delay", help="one-way delay, e.g. 10ms (a userspace delay line between the namespaces)")
    p.set_defaults(func=commands["lab"])

    p = sub.add_parser("run", help="run a scenario")
    p.add_argument("scenario", help="a scenario YAML (scenarios/quickstart.yaml is the bundled default)")
    p.add_argument("--json", action="store_true", help="print the results as JSON")
    p.set_defaults(func=commands["run"])

    p = sub.add_parser("sweep", help="run every point of a scenario's sweep: section on Dask into a Parquet results folder")
    p.add_argument("scenario", help="a scenario YAML with a sweep: {keys: {DOTTED.KEY: [values]}, mode: product|list}")
    p.add_argument("-o", "--output", required=True, help="results folder (Parquet parts; a second run adds only missing points)")
    _dask_arguments(p)
    p.add_argument("--chunk", type=int, help="points per Dask task (default: about 8 tasks per worker, at most 100)")
    p.add_argument("--flush-rows", type=int, default=1000, help="write a part file every N rows (default %(default)s)")
    p.add_argument("--flush-seconds", type=float, default=10.0, help="... or every S seconds (default %(default)s)")
    p.add_argument("--json", action="store_true", help="print the summary as JSON")
    p.set_defaults(func=commands["sweep"])

    p = sub.add_parser("plan", help="search hardware and parallelism; cheapest configuration within a deadline; report")
    p.add_argument("plan", help="a plan YAML (scenario + sweep: + search: + plan: {catalogue, target}); see docs/planning.md")
    p.add_argument("-o", "--output", required=True, help="folder for results/, report.html, figures/ and plan.json")
    _dask_arguments(p)
    p.add_argument("--json", action="store_true", help="print the answer as JSON")
    p.add_argument("--include-unvalidated", action="store_true", help="rank configurations whose regime was never validated "
                   "too (default: left out and counted; every configuration is judged at the slow end of its 80%% band)")
    p.set_defaults(func=commands["plan"])

    p = sub.add_parser("report", help="an HTML report (and PNG/SVG figures) of a sweep or plan results folder")
    p.add_argument("results", help="a results folder written by simcluster sweep or plan")
    p.add_argument("-o", "--output", required=True, help="the HTML file; figures go to NAME-figures/ beside it")
    p.add_argument("--title", help="the report's title")
    p.set_defaults(func=commands["report"])
    return parser

def csv_list(text: str | None) -> list[str]:
    return [x.strip() for x in (text or "").split(",") if x.strip()]


def _pin_cpus(text: str | None) -> tuple[int, int]:
    """--pin-cpus CLIENT,SERVER as two CPU numbers; (0, 0) without it."""
    if not text:
        return (0, 0)
    parts = csv_list(text)
    if len(parts) != 2 or not all(x.isdigit() for x in parts):
        raise SimclusterError(f"collect: --pin-cpus {text!r}: expected two CPU numbers, CLIENT,SERVER (e.g. 2,3)")
    return (int(parts[0]), int(parts[1]))


def _counts(text: str | None, flag: str) -> tuple[int, ...]:
    """A comma-separated list of positive counts; anything else is a one-line usage error naming the flag."""
    out = []
    for x in csv_list(text):
        if not x.isdigit() or int(x) < 1:
            raise SimclusterError(f"collect: {flag}: {x!r} is not a positive whole number", hint="e.g. 1,2,4")
        out.append(int(x))
    return tuple(out)


def collect_options(args):
    """`simcluster collect`'s options as the runner's plans.Options."""
    from simcluster.runner import plans

    return plans.Options(
        hosts=csv_list(args.hosts), nccl_tests=args.nccl_tests, ops=tuple(csv_list(args.ops) or ["all_reduce"]), gpus=args.gpus,
        min_size=args.b, max_size=args.e, nccl_iters=args.nccl_iters, nccl_warmup=args.nccl_warmup,
        nccl_repeat=args.nccl_repeat, nccl_graph=args.nccl_graph, nccl_tuning=args.nccl_tuning,
        nccl_register=args.nccl_register, qperf_host=args.qperf_host,
        qperf_time=args.qperf_time, qperf_repeat=args.qperf_repeat, qperf_sizes=tuple(csv_list(args.qperf_sizes) or plans.Options.qperf_sizes),
        qperf_size_tests=tuple(csv_list(args.qperf_size_tests) or plans.Options.qperf_size_tests),
        pin=args.lab or args.pin or bool(args.pin_cpus), pin_cpus=_pin_cpus(args.pin_cpus),
        fio_dir=args.fio_dir, fio_size=args.fio_size, fio_runtime=args.fio_runtime, dlio=args.dlio,
        dlio_workload=args.dlio_workload, dlio_accelerators=_counts(args.dlio_accelerators, "--dlio-accelerators") or (1,),
        dlio_overrides=tuple(args.dlio_override or ()), dlio_cold_cache=not args.dlio_warm_cache,
        ddp_models=tuple(csv_list(args.ddp_models) or ["resnet18:32:128"]), ddp_paired=args.ddp_paired,
        gpu_micro_quick=args.gpu_micro_quick, gpu_micro_sections=args.gpu_micro_sections,
        llm_presets=tuple(csv_list(args.llm_presets) or plans.Options.llm_presets),
        llm_shapes=args.llm_shapes, llm_modes=tuple(csv_list(args.llm_modes) or ["single"]), llm_steps=args.llm_steps, llm_clocks=args.llm_clocks,
        llm_layers=_counts(args.llm_layers, "--llm-layers"),
        llm_checkpointing={"off": (False,), "on": (True,), "both": (False, True)}[args.llm_checkpointing],
        llm_ac_modes=tuple(csv_list(args.llm_ac_modes) or ()),
        llm_compile={"off": (False,), "on": (True,), "both": (False, True)}[args.llm_compile],
        timeout_s=args.timeout)
