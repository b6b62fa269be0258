"""`simcluster collect`: run the real tools and write a trace bundle.

    DIR/manifest.json                 host, tool versions, environment, one entry per run
    DIR/<tool>/<run-id>/stdout.txt    raw output, as the tool printed it
    DIR/<tool>/<run-id>/stderr.txt
    DIR/<tool>/<run-id>/run.json      argv, environment overrides, exit code, start/end, CPU accounting

Every run is recorded, whether it worked or not: a tool that is missing, fails or times out is
an entry with its status and stderr, the files already written stay, the next tool runs, and the
exit code is EXIT_PARTIAL. The manifest is rewritten after every run, so an interrupted
collection keeps what it has. Commands are argv lists, never a shell string.
CPU accounting for every run: the children's user+system CPU seconds (getrusage) and the host's
busy and total jiffies from /proc/stat before and after.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import resource
import shutil
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from simcluster import strict
from simcluster.errors import EXIT_PARTIAL, SimclusterError
from simcluster.files import atomic_write, inside, lock, os_error, safe_name
from simcluster.runner import host

EXIT_OK = 0   # every step ran; EXIT_PARTIAL (errors.py): something was skipped, named in the manifest


@dataclass
class Step:
    """One tool invocation."""

    tool: str
    run_id: str
    argv: list[str]
    env: dict[str, str] = field(default_factory=dict)
    timeout_s: float = 600.0
    server_argv: list[str] | None = None   # started before the run and stopped after (qperf's server)
    ready_argv: list[str] | None = None    # polled until it exits 0 before the run (server up)
    meta: dict = field(default_factory=dict)  # what calibration needs to know (ground truth, options)
    stdout_name: str = "stdout.txt"


def proc_stat(cpus: list[int] | None = None) -> dict | None:
    """Host CPU jiffies from /proc/stat: busy (all but idle and iowait) and total; with `cpus`, the same per listed CPU
    (key "cpu<N>", with its softirq jiffies): a pinned run's cores, whichever process or thread the kernel charged."""
    try:
        with open("/proc/stat") as f:
            lines = {parts[0]: [int(x) for x in parts[1:]] for parts in (line.split() for line in f)
                     if parts and parts[0].startswith("cpu")}
    except (OSError, ValueError):
        return None

    def busy_total(fields: list[int]) -> dict[str, int]:
        idle = fields[3] + (fields[4] if len(fields) > 4 else 0)
        return {"busy": sum(fields) - idle, "total": sum(fields)}

    out = {**busy_total(lines["cpu"]), "hz": os.sysconf("SC_CLK_TCK")}
    for n in cpus or []:
        if f"cpu{n}" in lines:
            fields = lines[f"cpu{n}"]
            out[f"cpu{n}"] = {**busy_total(fields), "softirq": fields[6] if len(fields) > 6 else 0}
    return out


def drop_caches() -> bool:
    """Flush the page cache so a storage run reads from the device (root only; False otherwise)."""
    os.sync()
    try:
        with open("/proc/sys/vm/drop_caches", "w") as f:
            f.write("3\n")
        return True
    except OSError:
        return False


def _children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def _children_switches() -> int:
    """Context switches (voluntary + involuntary) of the reaped children: each is a sleep or a preemption."""
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_nvcsw + r.ru_nivcsw


def _now() -> str:
    return _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _start_server(step: Step, log):
    """Start the step's server (output to `log`) and wait until its readiness probe succeeds."""
    if not step.server_argv:
        return None
    proc = subprocess.Popen(step.server_argv, stdout=log, stderr=log, stdin=subprocess.DEVNULL)
    if step.ready_argv:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and proc.poll() is None:
            if subprocess.run(step.ready_argv, capture_output=True, timeout=10).returncode == 0:
                break
            time.sleep(0.2)
    return proc


def server_cpu_s(pid: int) -> float | None:
    """User + system CPU seconds of a server process and its reaped children (qperf forks one per test), from
    /proc/PID/stat; None where it cannot be read."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return sum(int(x) for x in fields[11:15]) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return None


def ksoftirqd_cpu_s() -> float | None:
    """CPU seconds of the kernel's softirq threads (ksoftirqd/N): receive work the kernel defers out of the process that
    raised it (bursts over the softirq budget), which neither process's own CPU time counts; None where unreadable."""
    total = 0.0
    try:
        for pid in os.listdir("/proc"):
            if pid.isdigit():
                try:
                    with open(f"/proc/{pid}/comm") as f:
                        if not f.read().startswith("ksoftirqd"):
                            continue
                except OSError:
                    continue
                total += server_cpu_s(int(pid)) or 0.0
    except OSError:
        return None
    return total


SNMP = {("Tcp", "OutSegs"): "tcp_out_segs", ("Tcp", "InSegs"): "tcp_in_segs",
        ("Udp", "OutDatagrams"): "udp_out", ("Udp", "InDatagrams"): "udp_in",
        ("Udp", "RcvbufErrors"): "udp_rcvbuf_errors", ("Udp", "SndbufErrors"): "udp_sndbuf_errors",
        # /proc/net/netstat (issue 42, session 34): how the receiver's ACKs were sent and how its data arrived
        ("TcpExt", "DelayedACKs"): "tcp_delayed_acks", ("TcpExt", "DelayedACKLocked"): "tcp_delayed_ack_locked",
        ("TcpExt", "TCPHPHits"): "tcp_hp_hits", ("TcpExt", "TCPPureAcks"): "tcp_pure_acks",
        ("TcpExt", "TCPHPAcks"): "tcp_hp_acks", ("TcpExt", "TCPBacklogCoalesce"): "tcp_backlog_coalesce",
        ("TcpExt", "TCPAutoCorking"): "tcp_autocorking", ("TcpExt", "TCPOrigDataSent"): "tcp_orig_data_sent"}


def packet_counters(netns: str | None) -> dict[str, int] | None:
    """TCP segments and UDP datagrams in and out of a network namespace (/proc/net/snmp), and the TcpExt counters of
    SNMP (/proc/net/netstat: delayed ACKs, fast-path hits, pure ACKs, backlog coalescing, autocorking); the host's own
    when netns is None; for a run that counts its packets (meta count_packets); None where they cannot be read."""
    argv = (["ip", "netns", "exec", netns] if netns else []) + ["cat", "/proc/net/snmp", "/proc/net/netstat"]
    try:
        text = subprocess.run(argv, capture_output=True, text=True, timeout=10).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    lines = [line.split() for line in text.splitlines()]
    out = {}
    for names, values in zip(lines[::2], lines[1::2], strict=False):
        if names and values and names[0] == values[0]:
            for name, value in zip(names[1:], values[1:], strict=False):
                key = SNMP.get((names[0].rstrip(":"), name))
                if key and value.lstrip("-").isdigit():
                    out[key] = int(value)
    return out or None


def _stop_server(proc) -> None:
    if proc is None:
        return
    proc.terminate()
    try:
        proc.wait(timeout=5)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def confined_run_dir(bundle: Path, step: Step) -> Path:
    """bundle/<tool>/<run-id>: both plain names (run ids are built from option values) and inside the bundle."""
    run_dir = Path(bundle) / safe_name(step.tool, "tool") / safe_name(step.run_id, f"{step.tool} run id")
    if not inside(bundle, run_dir):
        raise SimclusterError(f"{step.tool} run {step.run_id!r} would be written outside the bundle", where=str(bundle))
    return run_dir


def run_step(bundle: Path, step: Step) -> dict:
    """Run one step, write its folder, return its manifest entry."""
    run_dir = confined_run_dir(bundle, step)
    run_dir.mkdir(parents=True, exist_ok=True)
    entry = {"tool": step.tool, "run_id": step.run_id, "path": str(run_dir.relative_to(bundle)),
             "argv": step.argv, "env": step.env, "meta": step.meta}
    if shutil.which(step.argv[0]) is None and not Path(step.argv[0]).is_file():
        entry.update(status="missing", exit_code=None, stderr_tail=f"{step.argv[0]}: not found")
        (run_dir / "stderr.txt").write_text(entry["stderr_tail"] + "\n")
        atomic_write(run_dir / "run.json", json.dumps(entry, indent=1))
        return entry
    server = None
    if step.meta.get("drop_caches"):
        entry["page_cache_dropped"] = drop_caches()
    cores = sorted(set(step.meta.get("pin_cpus") or []))
    cpu0, stat0, start, t0 = _children_cpu(), proc_stat(cores), _now(), time.monotonic()
    switches0 = _children_switches()
    status, code = "ok", None
    with (open(run_dir / step.stdout_name, "w") as out, open(run_dir / "stderr.txt", "w") as err,
          open(run_dir / "server.stderr.txt", "w") as server_log):
        try:
            server = _start_server(step, server_log)
            client0, client_switches0 = _children_cpu(), _children_switches()
            spaces = step.meta.get("count_packets") or []
            counted = [packet_counters(ns) for ns in spaces]
            softirq0 = ksoftirqd_cpu_s() if spaces else None
            done = subprocess.run(step.argv, stdout=out, stderr=err, stdin=subprocess.DEVNULL,
                                  env={**os.environ, **step.env}, timeout=step.timeout_s, cwd=run_dir)
            code = done.returncode
            if server is not None:                 # the command's own CPU, without the server's and the readiness probes'
                entry["client_cpu_s"] = round(_children_cpu() - client0, 6)
                entry["client_switches"] = _children_switches() - client_switches0
            if softirq0 is not None and (softirq1 := ksoftirqd_cpu_s()) is not None:
                entry["ksoftirqd_cpu_s"] = round(softirq1 - softirq0, 6)
            if spaces:
                entry["packets"] = [{"netns": ns, "before": b, "after": packet_counters(ns)} for ns, b in zip(spaces, counted, strict=True)]
            status = "ok" if code == 0 else "failed"
        except subprocess.TimeoutExpired:
            status = "timeout"
        except OSError as exc:
            status = "failed"
            err.write(f"{exc}\n")
        finally:
            if server is not None:
                entry["server_cpu_s"] = server_cpu_s(server.pid)
            _stop_server(server)
    if not step.server_argv:
        (run_dir / "server.stderr.txt").unlink(missing_ok=True)
    if server is not None and "client_switches" in entry:   # the server and its reaped children, once it is reaped
        entry["server_switches"] = _children_switches() - switches0 - entry["client_switches"]
    elapsed, stat1 = time.monotonic() - t0, proc_stat(cores)
    entry.update(status=status, exit_code=code, start=start, end=_now(), wall_s=round(elapsed, 6),
                 child_cpu_s=round(_children_cpu() - cpu0, 6),
                 proc_stat={"before": stat0, "after": stat1})
    if status != "ok":
        tail = (run_dir / "stderr.txt").read_text(errors="replace").strip().splitlines()[-5:]
        entry["stderr_tail"] = "\n".join(tail) or f"{status} after {elapsed:.1f} s"
    atomic_write(run_dir / "run.json", json.dumps(entry, indent=1))
    return entry


@dataclass
class Bundle:
    out: Path
    manifest: dict

    def save(self) -> None:
        atomic_write(self.out / "manifest.json", json.dumps(self.manifest, indent=1))


def _previous_runs(path: Path) -> list[dict]:
    """The runs of an earlier collection into the same folder (kept, a rerun replaces its own entries)."""
    if not path.is_file():
        return []
    try:
        runs = strict.loads_json(path.read_text(errors="replace")).get("runs", [])
    except (OSError, ValueError, AttributeError):
        raise SimclusterError("the folder holds a manifest that is not a bundle's", where=str(path),
                              hint="collect into a new folder") from None
    if not isinstance(runs, list) or not all(isinstance(r, dict) and {"tool", "run_id"} <= r.keys() for r in runs):
        raise SimclusterError("the folder's manifest has runs without tool and run_id", where=str(path),
                              hint="collect into a new folder")
    return runs


def collect(out: str | Path, steps: list[Step], tools: list[str], options: dict, progress=None) -> tuple[dict, int]:
    """Run every step in order; the bundle's manifest and the exit code (EXIT_OK or EXIT_PARTIAL). The folder
    is locked while collecting (another simcluster process writing it is refused); an OSError (full disk,
    read-only) is one line, and the manifest saved after the last finished run stays."""
    out = Path(out)
    for step in steps:
        confined_run_dir(out, step)
    try:
        out.mkdir(parents=True, exist_ok=True)
        with lock(out):
            return _collect(out, steps, tools, options, progress)
    except OSError as exc:
        raise os_error(exc, Path(exc.filename) if exc.filename else out) from None


def _collect(out: Path, steps: list[Step], tools: list[str], options: dict, progress) -> tuple[dict, int]:
    previous = _previous_runs(out / "manifest.json")
    bundle = Bundle(out, {"format": "simcluster-bundle/1", "created": _now(), "tools": tools,
                          "options": options, "host": host.describe(tools), "runs": previous, "status": "running"})
    bundle.save()
    for step in steps:
        entry = run_step(out, step)
        bundle.manifest["runs"] = [r for r in bundle.manifest["runs"]
                                   if (r["tool"], r["run_id"]) != (step.tool, step.run_id)] + [entry]
        bundle.save()
        if progress:
            progress(entry)
    bad = [r for r in bundle.manifest["runs"] if r["status"] != "ok"]
    bundle.manifest["status"] = "partial" if bad else "complete"
    bundle.manifest["finished"] = _now()
    bundle.save()
    return bundle.manifest, EXIT_PARTIAL if bad else EXIT_OK
