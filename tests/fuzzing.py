"""Mutation fuzzing of every reader and command: the repository's own inputs (scenarios, cards, DLIO workloads,
nccl-tests and qperf logs, bundle files: ddp-step, fio, DLIO, gpu-micro, llm-step, perf-stat, profile summaries,
manifests; sweep and plan files, published tables, file names), mutated as a careless or hostile user would, run
through the CLI in-process.

A case passes when the command returns 0, 2 or 3 without raising (a MemoryError is the finding 'memory'); a 2 ends
stderr with one error line ('simcluster: error: ...'); nothing printed as JSON is NaN or infinite, and no time, size
or bandwidth in it is negative; it finishes within CASE_SECONDS of CPU time; and it writes nothing outside its case folder (the
finding 'escape'). tests/test_fuzz.py runs a few hundred seeded cases in CI; bench/fuzz.py runs as many as asked
and prints the tally.
"""

from __future__ import annotations

import contextlib
import io
import json
import math
import os
import random
import re
import shutil
import signal
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CASE_SECONDS = 20

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


from fuzzing_scenarios import GPU_SCENARIO, NIC_SCENARIO, NVLS_SCENARIO, SWITCH_SCENARIO, TRAINING_SCENARIO  # noqa: E402


class CaseTimeout(BaseException):
    """Raised by the alarm: a BaseException, so no `except Exception` on the way swallows it."""


def _alarm(signum, frame):
    raise CaseTimeout()


def _bad_numbers(doc, key: str = "") -> list[str]:
    """Where a JSON document holds NaN/inf, or a negative time, size or bandwidth."""
    if isinstance(doc, dict):
        return [b for k, v in doc.items() for b in _bad_numbers(v, str(k))]
    if isinstance(doc, list):
        return [b for v in doc for b in _bad_numbers(v, key)]
    if isinstance(doc, (int, float)) and not isinstance(doc, bool):
        if not math.isfinite(doc):
            return [f"{key}={doc}"]
        if doc < 0 and re.search(r"(_s|_Bps|_B|_bytes|_us|_GiB|_per_s)$", key):
            return [f"{key}={doc}"]
    return []


_FITS: dict = {}


def _memoised_fits() -> None:
    """The collective card fit (a few seconds of least squares) served from memory for inputs it has fitted
    before: a bundle case mutates one file, and the bundle's unchanged nccl-tests logs would be fitted again in
    every case. The key is the parsed input itself (repr of the traces, tunings and model), so a mutated log is
    fitted afresh; the fit is deterministic, so the answer is the one a fresh fit gives."""
    import copy

    from simcluster.fit import collective

    if getattr(collective.fit_card, "memoised", False):
        return
    fit_card = collective.fit_card

    def memoised(traces, tunings=None, model=None):
        key = repr((traces, tunings, model))
        if key not in _FITS:
            if len(_FITS) > 64:
                _FITS.clear()
            try:
                _FITS[key] = ("ok", fit_card(traces, tunings, model))
            except Exception as exc:  # noqa: BLE001 - the same refusal, raised again each time
                _FITS[key] = ("raise", exc)
        kind, value = _FITS[key]
        if kind == "raise":
            raise copy.copy(value)
        return copy.deepcopy(value)

    memoised.memoised = True
    collective.fit_card = memoised


def run_case(argv: list[str]) -> tuple[str, str]:
    """(outcome, detail): outcome 'ok', 'error', 'partial', or a failure kind."""
    from simcluster.cli import main

    out, err = io.StringIO(), io.StringIO()
    old = signal.signal(signal.SIGPROF, _alarm)
    signal.setitimer(signal.ITIMER_PROF, CASE_SECONDS)   # CPU seconds: a loaded machine's wall clock would time out anything
    start = time.process_time()
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(argv)
    except CaseTimeout:
        return "timeout", f"> {CASE_SECONDS} s"
    except MemoryError:
        return "memory", "MemoryError"
    except KeyboardInterrupt:   # the run itself is being stopped (bench/fuzz.py prints what it has)
        raise
    except BaseException as exc:  # noqa: BLE001 - any escape is the finding
        return "traceback", f"{type(exc).__name__}: {str(exc)[:200]}"
    finally:
        signal.setitimer(signal.ITIMER_PROF, 0)
        signal.signal(signal.SIGPROF, old)
    wall = time.process_time() - start
    if wall > CASE_SECONDS:    # the alarm was caught on the way and the command went on
        return "timeout", f"{wall:.1f} s"
    stderr = err.getvalue()
    if code == 2:  # one error line, last; before it only the inputs skipped on the way, one line each
        lines = [line for line in stderr.splitlines() if line.strip()]
        if not lines or not lines[-1].startswith("simcluster: error:") or \
                any(not line.startswith("simcluster: skipped") for line in lines[:-1]):
            return "bad-error", stderr[:300] or "(nothing on stderr)"
        return "error", lines[-1][:200]
    if code not in (0, 3, 4):   # 4: predict training's answer for a configuration that does not fit in memory
        return "bad-exit", f"exit {code}"
    text = out.getvalue()
    if "--json" in argv:
        try:
            bad = _bad_numbers(json.loads(text))
        except ValueError:
            bad = []
        if bad:
            return "bad-number", ", ".join(bad[:3])
    if "--json" not in argv and re.search(r"(?<![\w.])[-+]?(nan|inf)\b(?![\w.-])", text, re.I):
        return "bad-number", "nan or inf printed"
    return {0: "ok", 3: "partial", 4: "cannot-run"}[code], f"{wall:.2f} s"


def cases(count: int, seed: int = 0):
    """`count` (seed, argv-with-{file}, mutated bytes) cases, deterministic for a seed."""
    rng = random.Random(seed)
    pool = seeds()
    for _ in range(count):
        s = rng.choice(pool)
        if not s.path.is_file():  # removed since the corpus was listed (a card being edited elsewhere)
            continue
        data = mutate(s.path.read_text(errors="replace"), rng)
        argv = rng.choice(commands(s.kind, "{file}"))
        yield s, argv, data


def _link_or_copy(src, dst) -> None:
    try:
        os.link(src, dst)
    except OSError:  # another filesystem
        shutil.copy2(src, dst)


def _fill(arg: str, fills: dict) -> str:
    for key, value in fills.items():
        arg = arg.replace(key, value)
    return arg


def run_cases(count: int, folder: Path, seed: int = 0, verbose: bool = False) -> list[tuple[str, str, str, list[str], str]]:
    """Run the cases with each mutated file written into its own copy of the repository's layout under `folder`
    (models/, calibration/ linked), so the cards it names resolve; (outcome, detail, seed file, argv, kind) per case."""
    results = []
    _memoised_fits()
    for i, (s, argv, data) in enumerate(cases(count, seed)):
        case_dir = folder / f"case{i}"
        target = case_dir / s.path.relative_to(ROOT)   # where the original is, so its relative card paths resolve
        target.parent.mkdir(parents=True, exist_ok=True)
        for shared in ("models", "calibration", "scenarios/workloads", "scenarios/published"):
            link = case_dir / shared
            if not link.exists() and not target.is_relative_to(link):
                link.parent.mkdir(parents=True, exist_ok=True)
                link.symlink_to(ROOT / shared)
        if s.bundle is not None:   # the bundle as hard links, the mutated file a new file (never written through a link)
            shutil.copytree(s.bundle, case_dir / s.bundle.relative_to(ROOT), copy_function=_link_or_copy, dirs_exist_ok=True)
            target.unlink()
        target.write_bytes(data)
        if s.kind in ("sweep", "catalogue", "results-store"):   # the plan's catalogue and the other plans; the store's other files
            for child in s.path.parent.iterdir():
                if child.is_file() and child.name != s.path.name:
                    _link_or_copy(child, target.parent / child.name)
        if s.kind in ("bundle", "published-decisions"):  # the mutated file beside its folder's real files (hard links: a bundle refuses
            for child in s.path.parent.iterdir():  # a path that leads outside it, symbolic links included)
                if child.is_dir():
                    shutil.copytree(child, target.parent / child.name, copy_function=_link_or_copy)
                elif child.name != s.path.name:
                    _link_or_copy(child, target.parent / child.name)
        ddp = ROOT / "models" / "training" / "ddp-h200x4.yaml"
        fills = {"{file}": str(target), "{tmp}": str(case_dir), "{dir}": str(target.parent),
                 "{bundle}": str(case_dir / s.bundle.relative_to(ROOT)) if s.bundle else str(target.parent)}
        for name, template in (("nic", NIC_SCENARIO), ("gpu", GPU_SCENARIO), ("switch", SWITCH_SCENARIO),
                               ("nvls", NVLS_SCENARIO), ("training", TRAINING_SCENARIO)):
            if "{" + name + "_scenario}" in argv:
                path = case_dir / f"{name}-scenario.yaml"
                path.write_text(template.format(card=target, ddp=target if target.name.startswith("ddp") else ddp))
                fills["{" + name + "_scenario}"] = str(path)
        rng = random.Random(f"{seed}/{i}")
        fills.update({"{n}": rng.choice(["0", "1", "-3", "4", "1000000000", "nan", "1e308", "2", "abc"]),
                      "{op}": rng.choice(["all_reduce", "alltoall", "sendrecv", "ALL_GATHER", "nop", ""]),
                      "{size}": rng.choice(["0", "128", "4KiB", "4MiB", "1e30B", "abc", "64MiB"]),
                      "{rate}": rng.choice(["0", "1B/s", "nan", "400MB/s", "1e30GB/s", "10GB/s"])})
        args = [_fill(a, fills) for a in argv]
        outcome, detail = run_case(args)
        escaped = [p.name for p in folder.iterdir() if not p.name.startswith("case")] + \
            [p.name for p in Path("/tmp").glob("abs-escape*")]
        if escaped:   # a name from the input led a write out of the case's folder
            outcome, detail = "escape", f"wrote {escaped[0]} outside {case_dir}"
            for p in folder.iterdir():
                if not p.name.startswith("case"):
                    shutil.rmtree(p) if p.is_dir() else p.unlink()
        results.append((outcome, detail, str(s.path.relative_to(ROOT)), args, s.kind))
        if verbose:
            print(outcome, detail, " ".join(args), flush=True)
    return results

