"""The command lines that read a file of each fuzz kind (tests/fuzzing_corpus.py): a case runs one of them on its
mutated file; {file}, {tmp}, {dir}, {bundle}, the card-under-test scenarios and the {n} / {op} / {size} / {rate}
flag values are filled in by tests/fuzzing.py."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def commands(kind: str, path: str) -> list[list[str]]:
    """The CLI calls that read a file of this kind."""
    workload = str(ROOT / "scenarios" / "workloads" / "unet3d_h100.yaml")
    nvme = str(ROOT / "models" / "nvme" / "micron-9400-pro-7.68tb.yaml")
    card = str(ROOT / "models" / "collective" / "h200x2-primitives.yaml")
    return {
        "scenario": [["run", path, "--json"], ["predict", "collective", "--scenario", path, "--op", "all_reduce",
                                                "-b", "1M", "-e", "16M", "-f", "4"],
                     ["predict", "training", "--scenario", path, "--json"]],
        "dlio": [["storage", "simulate", "--workload", path, "--nvme", nvme, "--steps", "4", "--accelerators", "2"]],
        "collective-card": [["predict", "collective", "--card", path, "--op", "all_reduce", "--ranks", "2", "-b", "1K",
                             "-e", "16M", "-f", "16"],
                            ["predict", "collective", "--card", path, "--op", "sendrecv", "--ranks", "2", "-b", "1K",
                             "-e", "1M", "-f", "32", "--host-launched"]],
        "nic-card": [["run", "{nic_scenario}", "--json"]],
        "gpu-card": [["run", "{gpu_scenario}", "--json"]],
        "switch-card": [["run", "{switch_scenario}", "--json"]],
        "nvswitch-card": [["run", "{nvls_scenario}", "--json"]],
        "training-card": [["run", "{training_scenario}", "--json"]],
        "op-profile": [["calibrate", str(ROOT / "calibration" / "h200x2-graph-2026-11-22" / "nccl-tests" / "all_reduce-r1" /
                                         "stdout.txt"), "--nccl-log", str(ROOT / "calibration" / "h200x2-rounds-2026-11-22" /
                                         "nccl-tests" / "all_reduce-tuning" / "stdout.txt"), "--op-profile", path,
                        "-o", "{tmp}/card.yaml"]],
        "flags": [["predict", "collective", "--card", card, "--op", "{op}", "--ranks", "{n}", "-b", "{size}", "-e", "{size}",
                   "-f", "{n}"],
                  ["predict", "collective", "--scenario", path, "--op", "{op}", "-b", "{size}", "-e", "{size}", "-f", "{n}"],
                  ["predict", "training", "--scenario", str(ROOT / "scenarios" / "seed000-resnet18-2servers.yaml"),
                   "--nodes", "{n}", "--json"],
                  ["storage", "max-accelerators", "--workload", workload, "--nvme", nvme, "--drives", "{n}", "--io-size",
                   "{size}", "--steps", "{n}", "--json"],
                  ["sweep", str(ROOT / "scenarios" / "plans" / "seed000-ddp.yaml"), "-o", "{tmp}/results", "--workers", "0",
                   "--chunk", "{n}", "--flush-rows", "{n}", "--flush-seconds", "{n}"],
                  ["--max-events", "{n}", "run", path, "--json"]],
        "storage-flags": [["storage", "simulate", "--workload", workload, "--nvme", nvme, "--steps", "{n}", "--io-size", "{size}",
                           "--thread-rate", "{rate}", "--depth", "{n}", "--accelerators", "{n}", "--json"]],
        "bundle": [["validate", "{bundle}", "--card", card, "--json"], ["calibrate", "{bundle}", "-o", "{tmp}/cards"],
                   ["validate", "--decisions", "{bundle}", "--json"]],
        "published-nccl": [["validate", "--published", "nccl", path, "--json"]],
        "published-llm": [["validate", "--published", "llm", path]],
        "published-decisions": [["validate", "--decisions", "{bundle}", "--json"], ["validate", "--decisions", "{bundle}"]],
        "nvme-card": [["storage", "simulate", "--workload", workload, "--nvme", path, "--steps", "4", "--json"]],
        "nccl-log": [["validate", path, "--card", card, "--json"], ["parse", path],
                     ["calibrate", path, "-o", "{tmp}/card.yaml"]],
        "qperf-log": [["calibrate", path, "--line-rate", "100Gbps", "-o", "{tmp}/nic.yaml"]],
        "nccl-tuning": [["calibrate", str(ROOT / "calibration" / "h200x2-graph-2026-11-22" / "nccl-tests" / "all_reduce-r1" /
                                          "stdout.txt"), "--nccl-log", path, "-o", "{tmp}/card.yaml"]],
        "ddp-log": [["calibrate", "{bundle}", "-o", "{tmp}/cards"]],
        "profile-summary": [["calibrate", "{bundle}", "-o", "{tmp}/cards"]],
        "fio-json": [["calibrate", "{bundle}", "-o", "{tmp}/cards"]],
        "dlio-json": [["calibrate", "{bundle}", "-o", "{tmp}/cards"]],
        "perf-stat": [["calibrate", "{bundle}", "-o", "{tmp}/cards"]],
        "gpu-micro": [["calibrate", "{bundle}", "-o", "{tmp}/cards"]],
        "llm-step": [["calibrate", "{bundle}", "-o", "{tmp}/cards"]],
        "sweep": [["sweep", path, "-o", "{tmp}/results", "--workers", "0", "--json"],
                  ["plan", path, "-o", "{tmp}/plan", "--workers", "0", "--json"]],
        "results-store": [["report", "{dir}", "-o", "{tmp}/report.html"], ["report", "{dir}", "-o", "{tmp}/report.html"]],
        "catalogue": [["plan", "{dir}/seed000-ddp.yaml", "-o", "{tmp}/plan", "--workers", "0", "--json"]],
        "plot-dir": [["storage", "simulate", "--workload", path, "--nvme", nvme, "--steps", "2", "--accelerators", "1",
                      "--plot-dir", "{tmp}/plots"]],
        "long-name": [["calibrate", path, "-o", "{tmp}/" + "c" * 300 + ".yaml"], ["parse", "{tmp}/" + "n" * 300 + ".txt"],
                      ["calibrate", path, "-o", "{tmp}/a\x00b.yaml"], ["run", "{tmp}/x\x00.yaml"]],
    }[kind]
