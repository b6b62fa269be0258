"""The fuzz corpus: the repository's own inputs as seeds (scenarios, cards, DLIO workloads, nccl-tests and qperf logs,
bundle files: ddp-step, fio, DLIO, gpu-micro, llm-step, perf-stat, profile summaries, manifests; sweep and plan files,
published tables, file names), each with its kind, and `mutate`: one change a careless or hostile user would make.
Used by tests/fuzzing.py (the command-line cases) and tests/fuzzing_readers.py (the reader cases)."""

from __future__ import annotations

import random
import re
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

HOSTILE = ["-1", "0", "-50us", "1e308", ".nan", ".inf", "-.inf", "9223372036854775807", "1e30", "abc", "[]", "{}",
           "null", "true", "'128'", "0.0", "-0.5", "1e-300", "2**63", "''"]
BOMB = "a: &a [x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]\nc: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b]\n" \
       "d: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c]\ne: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d]\nf: &f [*e, *e, *e, *e, *e, *e, *e]\n"


@dataclass(frozen=True)
class Seed:
    path: Path
    kind: str          # scenario, collective-card, nic-card, nvme-card, dlio, nccl-log, qperf-log, gpu-card, published-*
    bundle: Path | None = None     # a file inside a bundle: the whole bundle is copied (hard links) beside it


CAL = ROOT / "calibration"
BUNDLE_FILES = [   # (bundle, file inside it, kind): tool output as calibrate and validate read it from a bundle
    ("h200x4-collect-2026-11-22", "ddp-step/resnet18-32-b128/stdout.txt", "ddp-log"),
    ("h200x4-collect-2026-11-22", "ddp-step/resnet50-224-b64/profiler-traces/profile-summary.json", "profile-summary"),
    ("local-2026-11-22", "fio/randread-4k-qd16/stdout.txt", "fio-json"),
    ("local-2026-11-22", "dlio/unet3d_h100-1acc/output/summary.json", "dlio-json"),
    ("local-2026-11-22", "dlio/unet3d_h100-1acc/output/0_output.json", "dlio-json"),
    ("local-2026-11-22", "perf-stat/qperf-tcp_bw/perf.csv", "perf-stat"),
    ("h100x1-gpu-2026-11-23", "gpu-micro/gpu-micro/stdout.txt", "gpu-micro"),
    ("h100x1-gpu-2026-11-23", "llm-step/1b-single/stdout.txt", "llm-step"),
]


def seeds() -> list[Seed]:
    out = [Seed(p, "scenario") for p in sorted((ROOT / "scenarios").rglob("*.yaml")) if "workloads" not in p.parts]
    out += [Seed(p, "dlio") for p in sorted((ROOT / "scenarios" / "workloads").glob("*.yaml"))]
    for kind in ("collective", "nic", "nvme", "gpu", "switch", "nvswitch", "training"):
        out += [Seed(p, f"{kind}-card") for p in sorted((ROOT / "models" / kind).glob("*.yaml")) if "op-profile" not in p.name]
    out += [Seed(p, "op-profile") for p in sorted((ROOT / "models" / "collective").glob("op-profile-*.yaml"))]
    out += [Seed(ROOT / "calibration" / "h200x2-nvlink-2026-11-22" / "nccl-tests" / f"{op}", "nccl-log")
            for op in ("all_reduce.txt", "all_gather.txt", "sendrecv.txt", "all_reduce_J.json")]
    out += [Seed(ROOT / "calibration" / "h200x2-rounds-2026-11-22" / "nccl-tests" / "all_reduce-tuning" / "stdout.txt",
                 "nccl-tuning")]
    out += [Seed(p, "qperf-log") for p in sorted((ROOT / "calibration" / "local-2026-11-22" / "qperf").glob("*/stdout.txt"))][:2]
    out += [Seed(ROOT / "scenarios" / "workloads" / "unet3d_h100.yaml", "storage-flags"),
            Seed(ROOT / "scenarios" / "quickstart.yaml", "flags")]
    out += [Seed(ROOT / "calibration" / name / "manifest.json", "bundle") for name in ("h200x2-graph-2026-11-22",
                                                                                        "local-2026-11-22")]
    out += [Seed(ROOT / "calibration" / "published" / "nccl-aws-p5en-x4.yaml", "published-nccl"),
            Seed(ROOT / "calibration" / "published" / "llm-llama3-405b-table4.yaml", "published-llm")]
    posted = ROOT / "calibration" / "published" / "nccl-decisions-h100x8x3-nccl1453"
    out += [Seed(posted / "source.yaml", "published-decisions"), Seed(posted / "turn2.txt", "published-decisions")]
    out += [Seed(CAL / b / f, kind, CAL / b) for b, f, kind in BUNDLE_FILES]
    out += [Seed(ROOT / "scenarios" / "plans" / "seed000-ddp.yaml", "sweep")]   # (llama8b.yaml's 288 points take 45 s as they are)
    out += [Seed(ROOT / "scenarios" / "plans" / "catalogue-2026.yaml", "catalogue")]
    store = ROOT / "tests" / "fixtures" / "results-store"      # a 4-point collective sweep's results folder
    out += [Seed(store / "_sweep.json", "results-store")] + [Seed(p, "results-store") for p in sorted(store.glob("part-*.parquet"))]
    out += [Seed(ROOT / "scenarios" / "workloads" / "unet3d_h100.yaml", "plot-dir"),
            Seed(CAL / "h200x2-nvlink-2026-11-22" / "nccl-tests" / "all_reduce.txt", "long-name")]
    return [s for s in out if s.path.is_file()]


def mutate(text: str, rng: random.Random) -> bytes:
    """One seeded mutation of a text file."""
    how = rng.choice(["truncate", "flip", "number", "number", "number", "drop-line", "non-utf8", "binary", "bomb",
                      "deep", "type", "empty", "huge-int", "deep-json", "nul", "dup-lines", "json-number", "json-type",
                      "escape-name"])
    data = text.encode()
    if how == "deep-json":   # nesting inside the first JSON object or list (or the whole text)
        depth = rng.choice([70, 1000, 100000])
        i = min((j for j in (text.find("{"), text.find("[")) if j >= 0), default=-1)
        deep = ('"deep": ' if i >= 0 and text[i] == "{" else "") + "[" * depth + "]" * depth + ","
        return (text[:i + 1] + deep + text[i + 1:] if i >= 0 else "[" * depth + "]" * depth).encode()
    if how == "nul":
        i = rng.randrange(len(data) + 1)
        return data[:i] + b"\x00" + data[i:]
    if how == "dup-lines":   # a line repeated (a log written twice, a record appended many times)
        lines = text.splitlines(keepends=True)
        if lines:
            i = rng.randrange(len(lines))
            lines[i:i + 1] = [lines[i]] * rng.choice([2, 50, 5000])
        return "".join(lines).encode()
    if how == "json-number":   # a JSON number replaced by a value no tool writes for a measurement
        numbers = list(re.finditer(r"(?<=[:\[,\s])-?\d+(\.\d+)?([eE][-+]?\d+)?(?=[,\]}\s])", text))
        if numbers:
            m = rng.choice(numbers)
            return (text[:m.start()] + rng.choice(["NaN", "Infinity", "-Infinity", "1e999", "-1", "0", "1e-320", "-0.0",
                                                   "1e300", "123456789012345678901234567890"]) + text[m.end():]).encode()
        return data
    if how == "json-type":   # a JSON value replaced by another type
        values = list(re.finditer(r'(?<=": )("[^"]*"|-?[\d.eE+-]+|true|false|null)', text))
        if values:
            m = rng.choice(values)
            return (text[:m.start()] + rng.choice(['null', '[]', '{}', '"x"', 'true', '[1, 2]', '{"a": 1}']) + text[m.end():]).encode()
        return data
    if how == "escape-name":   # a name that would lead out of a folder or is too long for a file name
        names = list(re.finditer(r"(?m)^(\s*(?:name|model|model_name):\s*)(\S.*)$", text))
        bad = rng.choice(["../../escaped", "/tmp/abs-escape", "a/b/c", "x" * 300, "..", "nul\\0", "con"])
        if names:
            m = rng.choice(names)
            return (text[:m.start(2)] + repr(bad) + text[m.end(2):]).encode()
        return data
    if how == "truncate":
        return data[:rng.randrange(max(1, len(data)))]
    if how == "flip":
        b = bytearray(data)
        for _ in range(rng.randint(1, 8)):
            i = rng.randrange(len(b))
            b[i] = rng.randrange(256)
        return bytes(b)
    if how == "number":
        numbers = list(re.finditer(r"(?<![\w.])\d+(\.\d+)?(?:[a-zA-Z/%]*)", text))
        if numbers:
            m = rng.choice(numbers)
            return (text[:m.start()] + rng.choice(HOSTILE) + text[m.end():]).encode()
        return data
    if how == "drop-line":
        lines = text.splitlines(keepends=True)
        if lines:
            del lines[rng.randrange(len(lines))]
        return "".join(lines).encode()
    if how == "non-utf8":
        i = rng.randrange(len(data) + 1)
        return data[:i] + b"\xff\xfe\xc3" + data[i:]
    if how == "binary":
        return bytes(rng.randrange(256) for _ in range(4096))
    if how == "bomb":
        return (BOMB + text).encode() if rng.random() < 0.5 else text.replace("kind:", "kind: *f\nx:", 1).encode() + \
            b"\n" + BOMB.encode()
    if how == "deep":
        depth = rng.choice([100, 1000, 50000])
        return (text + "\ndeep: " + "[" * depth + "]" * depth + "\n").encode()
    if how == "type":
        lines = text.splitlines()
        keyed = [i for i, line in enumerate(lines) if re.match(r"\s*[\w-]+:\s*\S", line)]
        if keyed:
            i = rng.choice(keyed)
            key = lines[i].split(":", 1)[0]
            lines[i] = f"{key}: {rng.choice(['[1, 2]', '{a: 1}', 'null', 'yes', '-3', '1e999'])}"
        return "\n".join(lines).encode()
    if how == "empty":
        return b""
    return re.sub(r"\b\d+\b", "99999999999999999999", text, count=3).encode()

