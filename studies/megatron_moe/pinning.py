"""Each rank's own physical cores on its GPU's NUMA node (the moe3 set's arm B; llm-findings.md session 30: one rank's
host issued its kernels 1.1-1.6x slower than the others', placement unrecorded). Linux /sys and nvidia-smi only, no
torch: device.py calls pin() before torch is imported, so every thread the process starts later (autograd's, NCCL's,
the CUDA driver's) inherits the set.

    python studies/megatron_moe/pinning.py [--brief] [LOCAL_WORLD]  # every local rank's plan: JSON, or a line each

The plan: local rank r drives GPU r (no CUDA_VISIBLE_DEVICES); its GPU's CPUs are the PCI device's local_cpulist
(the CPUs of the GPU's NUMA node) within the CPUs this process may use (a container's cpuset). Ranks whose GPUs share
those CPUs split its physical cores (hardware threads grouped by thread_siblings_list) into contiguous, disjoint
chunks in rank order; a rank gets one hardware thread (the lowest-numbered) of each core of its chunk, so no two of
its threads share a core and no other rank runs on its cores. Where the GPU's CPUs cannot be read (no sysfs entry, a
VM that reports none), every allowed CPU counts as the GPU's and `source` says so.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

SYS = Path("/sys")


def parse_cpulist(text: str) -> list[int]:
    """'0-3,8,10-11' -> [0, 1, 2, 3, 8, 10, 11] (the kernel's cpulist format)."""
    out: list[int] = []
    for part in text.strip().split(","):
        if not part:
            continue
        lo, _, hi = part.partition("-")
        out.extend(range(int(lo), int(hi or lo) + 1))
    return sorted(set(out))


def sysfs_bus_id(smi_bus_id: str) -> str:
    """nvidia-smi's PCI bus id ('00000000:18:00.0') as /sys/bus/pci/devices names it ('0000:18:00.0')."""
    domain, _, rest = smi_bus_id.strip().partition(":")
    return f"{int(domain, 16):04x}:{rest.lower()}"


def gpu_bus_ids() -> list[str]:
    """Every GPU's PCI bus id in nvidia-smi's index order ([] where nvidia-smi is absent)."""
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=pci.bus_id", "--format=csv,noheader"], capture_output=True,
                             text=True, timeout=30, check=True).stdout
    except (OSError, subprocess.SubprocessError):
        return []
    return [sysfs_bus_id(line) for line in out.splitlines() if line.strip()]


def _read(path: Path) -> str | None:
    try:
        return path.read_text().strip()
    except OSError:
        return None


def gpu_cpus(bus_id: str | None, allowed: list[int], sys_root: Path = SYS) -> tuple[list[int], int | None, str]:
    """(the GPU's CPUs within `allowed`, its NUMA node or None, where they were read from)."""
    dev = sys_root / "bus/pci/devices" / bus_id if bus_id else None
    text = _read(dev / "local_cpulist") if dev else None
    node = _read(dev / "numa_node") if dev else None
    numa = int(node) if node not in (None, "") and int(node) >= 0 else None
    local = [c for c in parse_cpulist(text) if c in allowed] if text else []
    if not local:
        return list(allowed), numa, "allowed CPUs (the GPU's local_cpulist unread or outside them)"
    return local, numa, f"{dev}/local_cpulist"


def physical_cores(cpus: list[int], sys_root: Path = SYS) -> list[list[int]]:
    """`cpus` grouped by physical core (the hardware threads of one core, from thread_siblings_list), ordered by their
    lowest CPU; a CPU whose siblings cannot be read is a core of its own."""
    cores: dict[tuple[int, ...], list[int]] = {}
    for c in cpus:
        text = _read(sys_root / f"devices/system/cpu/cpu{c}/topology/thread_siblings_list")
        key = tuple(parse_cpulist(text)) if text else (c,)
        cores.setdefault(key, []).append(c)
    return sorted(cores.values(), key=min)


def plan(local_world: int, bus_ids: list[str], allowed: list[int], sys_root: Path = SYS) -> list[dict]:
    """Every local rank's CPU set and how it was chosen (rank r drives GPU r)."""
    per_rank = []
    for r in range(local_world):
        bus = bus_ids[r] if r < len(bus_ids) else None
        cpus, numa, source = gpu_cpus(bus, allowed, sys_root)
        per_rank.append(dict(gpu_pci=bus, gpu_numa_node=numa, gpu_cpus=cpus, source=source))
    out = []
    for r, rec in enumerate(per_rank):
        sharing = [q for q, other in enumerate(per_rank) if other["gpu_cpus"] == rec["gpu_cpus"]]
        cores = physical_cores(rec["gpu_cpus"], sys_root)
        k, n = sharing.index(r), len(sharing)
        if len(cores) < n:
            raise ValueError(f"pinning: {len(cores)} physical cores on GPU {r}'s CPUs {rec['gpu_cpus']} for {n} ranks")
        chunk = cores[k * len(cores) // n:(k + 1) * len(cores) // n]
        out.append(dict(rec, local_rank=r, ranks_sharing=n, gpu_cpus=_compact(rec["gpu_cpus"]),
                        physical_cores=len(chunk), cpus=[min(core) for core in chunk],
                        siblings_left_out=sum(len(core) - 1 for core in chunk)))
    return out


def _compact(cpus: list[int]) -> str:
    """[0, 1, 2, 3, 8] -> '0-3,8'."""
    runs: list[list[int]] = []
    for c in cpus:
        if runs and c == runs[-1][1] + 1:
            runs[-1][1] = c
        else:
            runs.append([c, c])
    return ",".join(f"{a}-{b}" if b > a else f"{a}" for a, b in runs)


def pin(local_rank: int, local_world: int) -> dict:
    """Bind this process (its calling thread; threads started later inherit it) to its rank's CPUs; the record (with
    'error' and cpus None where it could not: the run goes on unpinned)."""
    allowed = sorted(os.sched_getaffinity(0))
    try:
        rec = plan(local_world, gpu_bus_ids(), allowed)[local_rank]
        os.sched_setaffinity(0, rec["cpus"])
    except (ValueError, OSError, IndexError) as exc:   # recorded: the run goes on unpinned and its JSON says so
        return {"error": f"{type(exc).__name__}: {exc}"[:300], "cpus": None, "cpus_before": _compact(allowed)}
    return dict(rec, cpus_before=_compact(allowed), cpus_after=_compact(sorted(os.sched_getaffinity(0))))


def thread_affinity(pinned: list[int] | None) -> dict:
    """This process's threads now and how many may run outside `pinned` (NCCL and others may set their own)."""
    tids = os.listdir("/proc/self/task")
    outside = 0
    for tid in tids:
        try:
            cpus = os.sched_getaffinity(int(tid))
        except OSError:
            continue
        outside += bool(pinned) and not cpus <= set(pinned)
    return {"threads": len(tids), "outside_pin": outside if pinned else None}


def main(argv: list[str]) -> int:
    brief = "--brief" in argv
    argv = [a for a in argv if a != "--brief"]
    world = int(argv[0]) if argv else len(gpu_bus_ids()) or 1
    try:
        ranks = plan(world, gpu_bus_ids(), sorted(os.sched_getaffinity(0)))
    except ValueError as exc:
        print(exc)
        return 1
    if brief:
        for r in ranks:
            print(f"rank {r['local_rank']}: GPU {r['gpu_pci']} NUMA node {r['gpu_numa_node']}, its CPUs {r['gpu_cpus']} "
                  f"({r['source']}), shared by {r['ranks_sharing']} ranks -> {r['physical_cores']} physical cores, "
                  f"CPUs {_compact(r['cpus'])}")
        return 0
    json.dump(ranks, sys.stdout, indent=1)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
