"""What `simcluster collect` runs for each tool: argv lists built from the options.

Tools: nccl-tests (binaries when found, else the built-in torch.distributed benchmark),
nccl-tests-socket (the same over NCCL's socket transport), qperf, perf-stat (around a qperf
transfer), fio, dlio, ddp-step. Across hosts: nccl-tests through mpirun with a hostfile (seed
002's command shape) and the qperf server over ssh. Local network labs: a server and client in
network namespaces (`ip netns exec`), see simcluster.runner.netlab.
"""

from __future__ import annotations

import glob
import ipaddress
import re
import shutil
import sys
from dataclasses import dataclass, field, replace
from pathlib import Path

from simcluster.errors import SimclusterError
from simcluster.files import os_error, safe_name
from simcluster.runner.collect import Step, confined_run_dir
from simcluster.units import UDP_MAX_PAYLOAD as UDP_MAX

TOOLS = ("nccl-tests", "nccl-tests-socket", "nccl-probe", "qperf", "qperf-sizes", "perf-stat", "fio", "dlio", "ddp-step", "ddp-step-socket", "gpu-micro",
         "llm-step")
PROBE_OPS = ("all_reduce", "all_gather")                     # what nccl-probe runs (fit/machine.py)
NCCL_OPS = ("all_reduce", "all_gather", "reduce_scatter", "broadcast", "reduce", "sendrecv", "alltoall")
SOCKET_ENV = {"NCCL_P2P_DISABLE": "1", "NCCL_SHM_DISABLE": "1"}
QPERF_PORT = 19765
PERF_EVENTS = "task-clock,context-switches,cpu-migrations,cycles,instructions"
FIO_JOBS = (("randread-4k-qd1", "randread", "4k", 1), ("randread-4k-qd4", "randread", "4k", 4),
            ("randread-4k-qd16", "randread", "4k", 16), ("randread-4k-qd64", "randread", "4k", 64),
            ("randread-128k-qd8", "randread", "128k", 8), ("read-1m-qd8", "read", "1m", 8))


HOST_LABEL = re.compile(r"[A-Za-z0-9_]([A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?")
SSH_USER = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._-]{0,31}")


def check_host(value: str, what: str = "--hosts") -> str:
    """`value` if it is a host name, an IPv4 or IPv6 address, optionally after `user@`; else a one-line error.
    Host names reach ssh, mpirun's hostfile and qperf's argv: nothing that reads as an option or a shell word."""
    user, at, name = value.rpartition("@") if isinstance(value, str) else ("", "", "")
    ok = not at or SSH_USER.fullmatch(user) is not None
    address, percent, zone = name.partition("%")
    try:
        ipaddress.ip_address(address)
        ok = ok and (not percent or HOST_LABEL.fullmatch(zone) is not None)
    except ValueError:
        ok = ok and not percent and 0 < len(name) <= 253 and all(HOST_LABEL.fullmatch(label) for label in name.split("."))
    if not ok:
        raise SimclusterError(f"{what} {value!r} is not a host name, IPv4 or IPv6 address (optionally user@host)",
                              hint="letters, digits, '.', '-', '_' and ':'; no leading '-', spaces or shell characters")
    return value


def _ddp_spec(spec: str) -> tuple[str, str, str]:
    """MODEL:IMAGE:BATCH of --ddp-models, each part checked (the run folder is named from them)."""
    try:
        model, image, batch = spec.split(":")
    except ValueError:
        raise SimclusterError(f"--ddp-model {spec!r}: expected MODEL:IMAGE:BATCH, e.g. resnet18:32:128") from None
    if not (image.isdigit() and batch.isdigit() and int(image) > 0 and int(batch) > 0):
        raise SimclusterError(f"--ddp-model {spec!r}: IMAGE and BATCH must be whole numbers > 0, e.g. resnet18:32:128")
    return safe_name(model, f"--ddp-model {spec!r}: model"), str(int(image)), str(int(batch))


@dataclass
class Options:
    hosts: list[str] = field(default_factory=list)        # first host runs the clients; others are peers
    nccl_tests: str | None = None                         # folder of *_perf binaries
    ops: tuple[str, ...] = ("all_reduce",)
    gpus: int = 0                                         # per host; 0 = all visible
    min_size: str = "8"
    max_size: str = "128M"
    nccl_iters: int = 20                                   # nccl-tests -n (timed iterations per size)
    nccl_warmup: int = 1                                   # nccl-tests -w
    nccl_graph: int = 0                                    # nccl-tests -G: replay the timed loop as a CUDA graph
    nccl_repeat: int = 1                                   # rounds over all ops (calibration takes the median)
    nccl_tuning: bool = False                              # one more run per op logging NCCL's choices
    nccl_register: int = 0                                 # nccl-tests -R: 1 registers the user buffers
    qperf_host: str | None = None                          # server address (default: localhost or hosts[1])
    qperf_time: int = 5
    qperf_repeat: int = 3                                  # client runs (the fit takes the median)
    pin: bool = False                                      # client and a local server pinned (taskset) to pin_cpus
    pin_cpus: tuple[int, int] = (0, 0)                     # (client CPU, server CPU); the same CPU by default
    qperf_tests: tuple[str, ...] = ("tcp_bw", "tcp_lat")
    qperf_sizes: tuple[str, ...] = ("64", "256", "1K", "4K", "16K", "64K", "256K", "1M")  # qperf-sizes: -m values
    qperf_size_tests: tuple[str, ...] = ("tcp_bw", "udp_bw", "rc_bw", "ud_bw")   # qperf-sizes: which of its tests run
    server_netns: str | None = None
    client_netns: str | None = None
    fio_dir: str | None = None
    fio_size: str = "512M"
    fio_runtime: int = 5
    dlio: str = "dlio_benchmark"
    dlio_workload: str = "unet3d_h100"
    dlio_accelerators: tuple[int, ...] = (1,)
    dlio_overrides: tuple[str, ...] = ()
    dlio_cold_cache: bool = True                          # drop the page cache before each run
    ddp_models: tuple[str, ...] = ("resnet18:32:128",)
    ddp_paired: int = 0                                    # ddp_step --paired: blocks of plain / DDP steps per process
    gpu_micro_quick: bool = False                         # gpu-micro --quick (small sizes)
    gpu_micro_sections: str = ""                          # gpu-micro --sections (empty: its default set)
    llm_presets: tuple[str, ...] = ("0.3b", "0.5b", "1b", "3b")  # llm-step model sizes (runner/llm_step.py PRESETS)
    llm_shapes: str = "1024:8,2048:4,4096:2,2048:1"        # llm-step SEQ:MICRO_BATCH per process
    llm_modes: tuple[str, ...] = ("single",)               # llm-step single, ddp, fsdp, tp (torchrun over --gpus)
    llm_steps: int = 10                                    # llm-step timed steps per shape
    llm_clocks: bool = False                               # llm-step --clocks: SM clock and power during the timed steps
    llm_layers: tuple[int, ...] = ()                       # llm-step --layers per run (empty: the preset's own)
    llm_checkpointing: tuple[bool, ...] = (False,)         # llm-step runs without / with --activation-checkpointing
    llm_ac_modes: tuple[str, ...] = ()                     # llm-step --ac-mode per run (none, full, every:N, op); () = the above
    llm_compile: tuple[bool, ...] = (False,)               # llm-step runs without / with --compile (torch.compile per layer)
    timeout_s: float = 600.0
    ground_truth: dict = field(default_factory=dict)      # e.g. a netlab's rate and delay


def check(options: Options) -> None:
    """Every option value that reaches an argv as a host or names a folder of the bundle, checked at the edge."""
    for host in options.hosts:
        check_host(host)
    if options.qperf_host is not None:
        check_host(options.qperf_host, "--qperf-host")
    for op in options.ops:
        safe_name(op, "--ops value")
    safe_name(options.dlio_workload, "--dlio-workload")
    if any(n < 1 for n in options.dlio_accelerators):
        raise SimclusterError(f"--dlio-accelerators {list(options.dlio_accelerators)}: each count must be >= 1")
    for spec in options.ddp_models:
        _ddp_spec(spec)


def _netns(ns: str | None) -> list[str]:
    return ["ip", "netns", "exec", ns] if ns else []


def _gpu_count(options: Options) -> int:
    if options.gpus:
        return options.gpus
    return max(1, len(glob.glob("/dev/nvidia[0-9]*")))


def _hostfile(out: Path, hosts: list[str], slots: int) -> Path:
    path = out / "hostfile"
    out.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(f"{h} slots={slots}\n" for h in hosts))
    return path


def _nccl_argv(options: Options, out: Path, op: str, gpus: int, env: dict, timing: list[str]) -> tuple[list[str], dict]:
    """argv and env of one nccl-tests run (mpirun across hosts), or of the torch.distributed stand-in."""
    binary = Path(options.nccl_tests or "") / f"{op}_perf"
    sizes = ["-b", options.min_size, "-e", options.max_size, "-f", "2"]
    if not (options.nccl_tests and binary.is_file()):
        return [sys.executable, "-m", "simcluster.runner.torch_collectives", "--op", op, *sizes, "-g", str(gpus)], env
    if len(options.hosts) > 1:
        hostfile = _hostfile(out, options.hosts, gpus)
        env = {"NCCL_DEBUG": "INFO", **env}
        exports = [x for k in sorted(env) for x in ("-x", k)]
        return ["mpirun", "--allow-run-as-root", "-np", str(gpus * len(options.hosts)), "--hostfile",
                str(hostfile.resolve()), *exports, str(binary.resolve()), *sizes, *timing, "-g", "1"], env
    return [str(binary.resolve()), *sizes, *timing, "-g", str(gpus)], env


def nccl_probe_steps(options: Options, out: Path) -> list[Step]:
    """A machine's short probe (~30 s): all_reduce and all_gather, 8 B .. 1 MiB, 5 warm-up and 20 timed
    iterations, one round, in the launch mode the options choose (--nccl-graph N: CUDA graphs). Fitted with a kind
    card by `calibrate PROBE --kind-card KIND` (fit/machine.py)."""
    probe = replace(options, ops=PROBE_OPS, min_size="8", max_size="1M", nccl_iters=20, nccl_warmup=5, nccl_repeat=1,
                    nccl_tuning=False)
    return nccl_steps(probe, out, tool="nccl-probe")


def nccl_steps(options: Options, out: Path, socket: bool = False, tool: str = "") -> list[Step]:
    """Timed runs, `nccl_repeat` rounds over all ops (round k of op X is run_id X-rK; X alone when one
    round), then with `nccl_tuning` one short run per op whose log names NCCL's algorithm, protocol and
    channels for every size (NCCL_DEBUG_SUBSYS=INIT,TUNING; logging slows small calls, so it is not timed)."""
    tool = tool or ("nccl-tests-socket" if socket else "nccl-tests")
    base_env = dict(SOCKET_ENV) if socket else {}
    gpus = _gpu_count(options)
    binaries = bool(options.nccl_tests) and all((Path(options.nccl_tests) / f"{op}_perf").is_file() for op in options.ops)
    implementation = "nccl-tests" if binaries else "torch.distributed (nccl-tests binaries not found)"
    timing = ["-w", str(options.nccl_warmup), "-n", str(options.nccl_iters)] if binaries else []
    if binaries and options.nccl_graph:
        timing += ["-G", str(options.nccl_graph)]
    if binaries and options.nccl_register:
        timing += ["-R", str(options.nccl_register)]
    rounds = max(1, options.nccl_repeat)
    steps = []
    for k in range(rounds):
        for op in options.ops:
            argv, env = _nccl_argv(options, out, op, gpus, base_env, timing)
            run_id = op if rounds == 1 else f"{op}-r{k + 1}"
            steps.append(Step(tool, run_id, argv, env, options.timeout_s,
                              meta={"implementation": implementation, "op": op, "role": "timing", "round": k + 1,
                                    "cuda_graph_launches": options.nccl_graph if binaries else 0,
                                    "registered_buffers": options.nccl_register if binaries else 0}))
    if options.nccl_tuning and binaries:
        for op in options.ops:
            env = {**base_env, "NCCL_DEBUG": "INFO", "NCCL_DEBUG_SUBSYS": "INIT,TUNING"}
            argv, env = _nccl_argv(options, out, op, gpus, env, ["-w", "0", "-n", "1", "-c", "0"])
            steps.append(Step(tool, f"{op}-tuning", argv, env, options.timeout_s,
                              meta={"implementation": implementation, "op": op, "role": "tuning"}))
    return steps


def _pin(options: Options, role: int) -> list[str]:
    """taskset for the client (role 0) or a local server (role 1), when pinning is on."""
    return ["taskset", "-c", str(options.pin_cpus[role])] if options.pin else []


def _qperf_server(options: Options) -> tuple[str, list[str]]:
    """(address the client uses, argv that starts the server)."""
    if len(options.hosts) > 1 and not options.server_netns:
        peer = options.hosts[1]
        return options.qperf_host or peer, ["ssh", "-o", "BatchMode=yes", "--", peer, "qperf"]
    return options.qperf_host or "127.0.0.1", [*_netns(options.server_netns), *_pin(options, 1), "qperf"]


def _qperf_ends(options: Options) -> tuple[str, list[str], list[str], list[str]]:
    """(server address, argv that starts the server, the client's argv prefix (namespace, pinning), the readiness probe's
    argv) of every qperf plan, after the one check of --qperf-size-tests."""
    unknown = sorted(set(options.qperf_size_tests) - {"tcp_bw", "udp_bw", *RDMA_SIZE_TESTS})
    if unknown or not options.qperf_size_tests:
        raise SimclusterError(f"--qperf-size-tests {','.join(unknown)}: expected one or more of tcp_bw, udp_bw, rc_bw, ud_bw")
    address, server = _qperf_server(options)
    client = [*_netns(options.client_netns), *_pin(options, 0)]
    return address, server, client, [*client, "qperf", "-t", "1", address, "conf"]


def qperf_steps(options: Options) -> list[Step]:
    address, server, client, ready = _qperf_ends(options)
    argv = [*client, "qperf", "-v", "-t", str(options.qperf_time), address, *options.qperf_tests]
    meta = {"server": address, "ground_truth": options.ground_truth, "tests": list(options.qperf_tests)}
    return [Step("qperf", f"qperf-{k + 1}", argv, {}, options.timeout_s, server, ready, meta)
            for k in range(max(1, options.qperf_repeat))]


RDMA_SIZE_TESTS = ("rc_bw", "ud_bw")


def _size_bytes(size: str) -> int:
    units = {"": 1, "K": 1024, "M": 1024**2}
    match = re.fullmatch(r"(\d+)([KM]?)", size)
    if not match or int(match.group(1)) < 1:
        raise SimclusterError(f"--qperf-sizes value {size!r}: expected a whole number of bytes, optionally with K or M (64, 4K, 1M)")
    return int(match.group(1)) * units[match.group(2)]


def qperf_size_steps(options: Options) -> list[Step]:
    """One qperf -v bandwidth run per message size (-m) and repeat: tcp_bw, udp_bw where the size fits a datagram, and
    rc_bw / ud_bw waiting on completions (-cp0: a polling loop would read as 100% CPU, seed 004) when this host has an
    RDMA device. Each run's CPU is per process: the client's (getrusage) and the server's (/proc, run.json server_cpu_s),
    so other load on the host does not count (qperf's own send_cost / recv_cost are host-wide); and the TCP segments /
    UDP datagrams in and out of the client's and the server's network namespace (run.json packets; on loopback both
    are the host's, which other traffic also counts)."""
    address, server, client, ready = _qperf_ends(options)
    rdma = Path("/sys/class/infiniband").is_dir() and any(Path("/sys/class/infiniband").iterdir())
    steps = []
    for k in range(max(1, options.qperf_repeat)):
        for size in options.qperf_sizes:
            m = _size_bytes(size)
            tests = [t for t in ("tcp_bw", "udp_bw", *RDMA_SIZE_TESTS) if t in options.qperf_size_tests
                     and (t != "udp_bw" or m <= UDP_MAX) and (t not in RDMA_SIZE_TESTS or rdma)]
            for test in tests:
                argv = [*client, "qperf", "-v", "-t", str(options.qperf_time), "-m", str(m),
                        *(["-cp0"] if test in RDMA_SIZE_TESTS else []), address, test]
                meta = {"server": address, "ground_truth": options.ground_truth, "test": test, "msg_size": m,
                        "count_packets": [options.client_netns, options.server_netns],
                        "pin_cpus": list(options.pin_cpus) if options.pin else None}
                steps.append(Step("qperf-sizes", f"{test}-m{m}-{k + 1}", argv, {}, options.timeout_s, server, ready, meta))
    return steps


def perf_steps(options: Options) -> list[Step]:
    """perf stat around one qperf tcp_bw transfer; without perf, the same transfer with /proc/stat only."""
    address, server, client, ready = _qperf_ends(options)
    transfer = ["qperf", "-v", "-t", str(options.qperf_time), address, "tcp_bw"]
    meta = {"server": address, "transfer": transfer, "ground_truth": options.ground_truth}
    if shutil.which("perf") is None:
        meta["fallback"] = "perf not found: CPU from /proc/stat and getrusage"
        return [Step("perf-stat", "qperf-tcp_bw", [*client, *transfer], {}, options.timeout_s, server, ready, meta)]
    argv = [*client, "perf", "stat", "-x,", "-o", "perf.csv", "-e", PERF_EVENTS, "--", *transfer]
    return [Step("perf-stat", "qperf-tcp_bw", argv, {}, options.timeout_s, server, ready, meta)]


def fio_steps(options: Options, out: Path) -> list[Step]:
    folder = Path(options.fio_dir) if options.fio_dir else out / "fio" / "data"
    folder.mkdir(parents=True, exist_ok=True)
    target = str((folder / "simcluster-fio.dat").resolve())
    steps = []
    for name, rw, bs, qd in FIO_JOBS:
        argv = ["fio", f"--name={name}", f"--filename={target}", f"--size={options.fio_size}", f"--rw={rw}",
                f"--bs={bs}", f"--iodepth={qd}", "--ioengine=libaio", "--direct=1", f"--runtime={options.fio_runtime}",
                "--time_based", "--output-format=json"]
        steps.append(Step("fio", name, argv, {}, options.timeout_s, meta={"rw": rw, "bs": bs, "iodepth": qd,
                                                                         "file": target}))
    return steps


def dlio_steps(options: Options, out: Path) -> list[Step]:
    """Generate the dataset once, then one training run per accelerator count, each from a cold
    page cache (meta drop_caches) so the reads reach the disk; DLIO's traces via dftracer."""
    data = (out / "dlio" / "data").resolve()
    common = [f"workload={options.dlio_workload}", f"++workload.dataset.data_folder={data}",
              "++workload.workflow.checkpoint=False", *options.dlio_overrides]
    gen_dir = (out / "dlio" / "generate").resolve()
    steps = [Step("dlio", "generate", [options.dlio, *common, "++workload.workflow.generate_data=True",
                                       "++workload.workflow.train=False", f"hydra.run.dir={gen_dir}",
                                       f"++workload.output.folder={gen_dir}"], {}, options.timeout_s,
                  meta={"workload": options.dlio_workload, "role": "generate"})]
    env = {"DFTRACER_ENABLE": "1", "DFTRACER_INC_METADATA": "1"}
    for n in options.dlio_accelerators:
        run_id = f"{options.dlio_workload}-{n}acc"
        run_dir = (out / "dlio" / run_id).resolve()
        args = [options.dlio, *common, "++workload.workflow.generate_data=False", "++workload.workflow.train=True",
                f"hydra.run.dir={run_dir / 'output'}", f"++workload.output.folder={run_dir / 'output'}"]
        argv = ["mpirun", "--allow-run-as-root", "--oversubscribe", "-np", str(n), *args] if n > 1 else args
        steps.append(Step("dlio", run_id, argv, env, options.timeout_s,
                          meta={"workload": options.dlio_workload, "accelerators": n, "drop_caches": options.dlio_cold_cache,
                                "overrides": list(options.dlio_overrides), "output": str(run_dir / "output")}))
    return steps


def ddp_steps(options: Options, socket: bool = False) -> list[Step]:
    steps = []
    if options.ddp_paired < 0:
        raise SimclusterError(f"--ddp-paired {options.ddp_paired}: expected a number of blocks >= 0 (0: not paired)")
    gpus = _gpu_count(options)
    worlds = [str(w) for w in (1, 2, 4, 8) if w <= gpus and (w > 1 or not socket)]
    for spec in options.ddp_models:
        model, image, batch = _ddp_spec(spec)
        argv = [sys.executable, "-m", "simcluster.runner.ddp_step", "--model", model, "--image", image, "--batch", batch,
                "--world", *worlds, "--profile", "6", "--trace-dir", "profiler-traces"]
        if options.ddp_paired:
            argv += ["--paired", str(options.ddp_paired)]
        steps.append(Step("ddp-step-socket" if socket else "ddp-step", f"{model}-{image}-b{batch}", argv,
                          dict(SOCKET_ENV) if socket else {}, options.timeout_s,
                          meta={"model": model, "image": int(image), "batch": int(batch)}))
    return steps


def plan(tools: list[str], options: Options, out: Path) -> list[Step]:
    """The steps of a collection; every host and every value that names a run folder is checked first
    (check), and every run folder must stay inside `out`."""
    unknown = [t for t in tools if t not in TOOLS]
    if unknown:
        raise SimclusterError(f"--tools: unknown tool {unknown[0]!r}", hint=f"one of {', '.join(TOOLS)}")
    check(options)
    try:
        steps = _steps(tools, options, out)
    except OSError as exc:                        # the hostfile or fio's data folder cannot be made
        raise os_error(exc, Path(exc.filename) if exc.filename else out) from None
    for step in steps:
        confined_run_dir(out, step)
    return steps


def _steps(tools: list[str], options: Options, out: Path) -> list[Step]:
    steps: list[Step] = []
    for tool in tools:
        if tool == "nccl-tests":
            steps += nccl_steps(options, out)
        elif tool == "nccl-tests-socket":
            steps += nccl_steps(options, out, socket=True)
        elif tool == "nccl-probe":
            steps += nccl_probe_steps(options, out)
        elif tool == "qperf":
            steps += qperf_steps(options)
        elif tool == "qperf-sizes":
            steps += qperf_size_steps(options)
        elif tool == "perf-stat":
            steps += perf_steps(options)
        elif tool == "fio":
            steps += fio_steps(options, out)
        elif tool == "dlio":
            steps += dlio_steps(options, out)
        elif tool in ("ddp-step", "ddp-step-socket"):
            steps += ddp_steps(options, socket=tool == "ddp-step-socket")
        elif tool in ("gpu-micro", "llm-step"):
            from simcluster.runner import plans_gpu

            steps += plans_gpu.gpu_micro_steps(options) if tool == "gpu-micro" else plans_gpu.llm_steps(options, _gpu_count(options))
    return steps
