"""What a trace bundle's manifest says about the host: CPU, cores, kernel, GPUs, driver, NCCL,
tool versions and the environment variables that shape results (NCCL_*, UCX_*, ...)."""

from __future__ import annotations

import os
import platform
import re
import shutil
import subprocess
from pathlib import Path

ENV_PREFIXES = ("NCCL_", "UCX_", "CUDA_VISIBLE_DEVICES", "OMPI_MCA_", "TORCH_NCCL_", "NVSHMEM_")
VERSION_ARGV = {"qperf": ["qperf", "--version"], "fio": ["fio", "--version"], "perf": ["perf", "--version"],
                "mpirun": ["mpirun", "--version"], "nvidia-smi": ["nvidia-smi", "--version"],
                "dlio_benchmark": None, "ssh": ["ssh", "-V"], "tc": ["tc", "-V"]}


def _first_line(argv: list[str]) -> str | None:
    if shutil.which(argv[0]) is None:
        return None
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return None
    text = (done.stdout or done.stderr).strip()
    return text.splitlines()[0] if text else None


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def gpus() -> list[dict]:
    if shutil.which("nvidia-smi") is None:
        return []
    try:
        done = subprocess.run(["nvidia-smi", "--query-gpu=index,name,driver_version,memory.total,pci.bus_id,uuid,serial",
                               "--format=csv,noheader"], capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired):
        return []
    out = []
    for line in done.stdout.splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) == 7:    # uuid and serial tell one physical machine from another (held-out machines)
            out.append(dict(zip(("index", "name", "driver", "memory", "pci", "uuid", "serial"), parts, strict=True)))
    return out


def nccl_version() -> str | None:
    """NCCL as torch links it (only asked where there are GPUs: importing torch takes seconds)."""
    code = "import torch; print('.'.join(map(str, torch.cuda.nccl.version())))"
    try:
        done = subprocess.run([os.environ.get("PYTHON", "python3"), "-c", code], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return None
    found = re.search(r"\d+\.\d+\.\d+", done.stdout)
    return found.group(0) if found else None


def block_devices() -> dict[str, dict]:
    """Readahead and largest I/O per block device: they set the I/O sizes a sequential reader issues."""
    out = {}
    for queue in sorted(Path("/sys/block").glob("*/queue")):
        try:
            out[queue.parent.name] = {k: int((queue / k).read_text()) for k in ("read_ahead_kb", "max_sectors_kb", "nr_requests")}
        except (OSError, ValueError):
            continue
    return out


def describe(tools: list[str]) -> dict:
    gpu = gpus()
    versions = {name: _first_line(argv) for name, argv in VERSION_ARGV.items() if argv}
    return {
        "hostname": platform.node(), "cpu_model": cpu_model(), "cores": os.cpu_count(),
        "kernel": platform.release(), "os": platform.platform(), "python": platform.python_version(),
        "gpus": gpu, "nccl": nccl_version() if gpu else None, "block_devices": block_devices(),
        "tool_versions": {k: v for k, v in versions.items() if v is not None},
        "environment": {k: v for k, v in sorted(os.environ.items()) if k.startswith(ENV_PREFIXES)},
    }
