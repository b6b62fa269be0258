import importlib.util
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
H200 = ROOT / "calibration" / "h200x2-nvlink-2026-11-22"
SEED002 = ROOT / "calibration" / "oci-bm-gpu-h100-8x2" / "nccl-tests" / "all_reduce.txt"
FIXTURES = Path(__file__).resolve().parent / "fixtures"
OPS = ("all_reduce", "all_gather", "reduce_scatter", "broadcast", "reduce", "sendrecv", "alltoall")


def published_llm_validation(paths):
    """The published LLM comparison of several files as one ReferenceValidation (rows, sources and skipped merged), the
    input the families read-out (reference/families.FamilyValidation) takes."""
    from simcluster.reference.llm import validate_published_llm
    from simcluster.results import ReferenceValidation

    parts = [validate_published_llm(path) for path in paths]
    return ReferenceValidation("published llm", 0.10, [r for p in parts for r in p.rows],
                               {k: v for p in parts for k, v in p.sources.items()}, [s for p in parts for s in p.skipped])


def load_script(relative: str):
    """A script outside the package (validation/, studies/) loaded as a module, by its path under the repository."""
    path = ROOT / relative
    spec = importlib.util.spec_from_file_location(path.stem, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def one_line_refusal(read, source: Path, edit, tmp_path: Path, error) -> str:
    """`read` of a copy of the YAML file `source` changed by `edit` (a function of the parsed document): the one-line
    `error` it raises, as text (the copy's path first)."""
    import yaml

    doc = yaml.safe_load(source.read_text())
    edit(doc)
    path = tmp_path / source.name
    path.write_text(yaml.safe_dump(doc))
    with pytest.raises(error) as info:
        read(path)
    text = str(info.value)
    assert text.startswith(str(path)) and "\n" not in text, text
    return text


def _documents(path: Path) -> list:
    """The JSON documents of one file: the whole text, else each line that parses (llm-step's stdout: log lines first)."""
    text = path.read_text(errors="replace")
    try:
        docs = json.loads(text)
        return docs if isinstance(docs, list) else [docs]
    except ValueError:
        pass
    out = []
    for line in text.splitlines():
        if line.startswith("{"):
            try:
                out.append(json.loads(line))
            except ValueError:
                continue
    return out


def probe_document(path: Path, shapes: list[dict], keys: tuple, pick, control_scale: float = 1.0, drop: int = 0,
                   backend: str = "flash", other=None, skip=(), fail=()) -> Path:
    """A registered SDPA probe's run document (a record a shape and role for `backend` and then for the other backend)
    written to `path`: the probe shapes' `backend` times are `pick(row, pass)`, the controls' their `before_*` times x
    control_scale (start and end), the other backend's `other(row, pass)` (default: the card's, card_*); the probe
    shapes at indices `skip` left out, at `fail` failed (the `backend` record an error); the last `drop` records left out
    (a run cut short)."""
    second = "default" if backend == "flash" else "flash"
    other = other or (lambda r, p: r[f"card_{p}_s"])
    recs, probe_i = [], -1
    for r in shapes:
        shape = {k: r[k] for k in keys}
        if r["role"] == "probe":
            probe_i += 1
            if probe_i in skip:
                continue
        for role in (("control-start", "control-end") if r["role"] == "control" else ("probe",)):
            if r["role"] == "control":
                mine = {p: r[f"before_{p}_s"] * control_scale for p in ("fwd", "bwd")}
            else:
                mine = {p: pick(r, p) for p in ("fwd", "bwd")}
            rec = {"role": role, "backend": backend, **shape, "fwd_s": mine["fwd"], "bwd_s": mine["bwd"]}
            if r["role"] == "probe" and probe_i in fail:
                rec = {k: v for k, v in rec.items() if not k.endswith("_s")} | {"error": "RuntimeError: no kernel"}
            recs.append(rec)
            recs.append({"role": role, "backend": second, **shape, "fwd_s": other(r, "fwd"), "bwd_s": other(r, "bwd")})
    path.write_text(json.dumps({"records": recs[: len(recs) - drop]}))
    return path


def fake_step_set(bundle: Path, registered: Path, medians: dict, shape_of=lambda name: {}) -> Path:
    """A registered step set's synthetic bundle (read-out tests): `registered` copied to bundle/registered.yaml and
    runs/NAME-rK.json, one llm-step document a process, whose one timed shape has rank 0's median step (`medians`: name
    -> [ms of process 1, 2, ...]) and shape_of(name)'s other keys."""
    import shutil

    (bundle / "runs").mkdir(parents=True)
    shutil.copy(registered, bundle / "registered.yaml")
    for name, meds in medians.items():
        for k, ms in enumerate(meds, 1):
            shape = {"status": "ok", "median_step_s": ms / 1e3, **shape_of(name)}
            (bundle / "runs" / f"{name}-r{k}.json").write_text(json.dumps({"shapes": [shape]}))
    return bundle


def measured_llm_shapes(*excluded: Path) -> set[tuple]:
    """(preset, layers, seq, micro-batch) of every llm-step document under calibration/, any mode, but those under the
    `excluded` folders: what a registered set's "never measured before" check compares its shapes with."""
    seen = set()
    for path in [*(ROOT / "calibration").rglob("*.json"), *(ROOT / "calibration").rglob("stdout.txt")]:
        if any(folder in path.parents for folder in excluded):
            continue
        for doc in _documents(path):
            if isinstance(doc, dict) and isinstance(doc.get("model"), dict) and isinstance(doc.get("shapes"), list):
                seen |= {(doc["model"].get("preset"), doc["model"].get("layers"), s["seq"], s["micro_batch"])
                         for s in doc["shapes"] if isinstance(s, dict) and "seq" in s}
    return seen


# diagnostic repeats and neighbours of registered shapes, made after those sets ran: a set's "new when it ran" check
# leaves them out. Session 37's noise and diagnose sets (run before that session's post sets), session 38's host
# diagnosis and host-bound noise sets (run after every registered set)
REPEATS_S37 = tuple(ROOT / "calibration" / name for name in ("h200x2-eager-diagnose-2026-11-29", "h200x2-llm-eager-noise-2026-11-29"))
REPEATS_S38 = tuple(ROOT / "calibration" / name for name in ("h200x2-eager-host-diagnose-2026-11-29", "h200x2-eager-hostbound-noise-2026-11-29"))
# session 39's registered pphost and cudnnstep sets (validation/eager_pp_host.py, eager_cudnn_steps.py): new shapes,
# run after every earlier set, so the earlier sets' "new when it ran" checks leave them out too
LATER_SETS_S39 = (ROOT / "calibration" / "h200x2-eager-pphost-2026-11-29",
                  ROOT / "calibration" / "h200x2-eager-cudnnstep-2026-11-29")
# session 40's registered fsdpstep set (validation/eager_fsdp_step.py): new shapes, run after every earlier set
LATER_SETS_S40 = (ROOT / "calibration" / "h200x2-eager-fsdpstep-2026-11-30",)
LATER_REPEATS = REPEATS_S37 + REPEATS_S38 + LATER_SETS_S39 + LATER_SETS_S40
# session 44's registered coupling set (validation/ppcouple.py): registered after every earlier set ran; its 0.3b 1792:1
# rows share a sequence length (not a preset) with session 41's eager-today set, whose check names every bundle's seqs
LATER_SETS_S44 = (ROOT / "calibration" / "h200x2-ppcouple-2026-11-30",)


STARTED = re.compile(r"started (\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ)")


def runs_started(bundle: Path) -> str | None:
    """When a bundle's device run started: the earliest `started` stamp (UTC, ISO) in its commit.txt files (runs/ or
    the bundle's own folder; calibration/device_lib.sh writes it); None where none was written (sets before session 38)."""
    stamps = [m.group(1) for path in bundle.rglob("commit.txt") for m in STARTED.finditer(path.read_text(errors="replace"))]
    return min(stamps, default=None)


def bundles_run_after(bundle: Path, calibration: Path = ROOT / "calibration", unstamped_first: bool = False) -> tuple[Path, ...]:
    """Every bundle under `calibration` whose device run started after `bundle`'s (runs_started): the repeats and later
    sets that `bundle`'s "new when it ran" check leaves out, found by the one rule instead of named by hand.
    unstamped_first: a bundle without a stamp ran before device_lib.sh wrote them (session 38), so before every stamped
    bundle (session 35's ac6a / ac6b / eager7 / eager8); else such a bundle is a ValueError."""
    own = runs_started(bundle)
    if own is None and unstamped_first:
        own = ""
    if own is None:
        raise ValueError(f"{bundle}: no `started` stamp in a commit.txt")
    return tuple(sorted(d for d in calibration.iterdir() if d.is_dir() and d != bundle and (runs_started(d) or "") > own))


def measured_llm_tokens(*excluded: Path) -> set[tuple]:
    """(preset, layers, tokens = seq x micro-batch) of every llm-step document under calibration/ but the `excluded`
    folders. A step's allocated peak follows its tokens, not how they split into seq and micro-batch (ac6a's 1.1b
    2048:8 and eager8's 1.1b 1024:16 peaked within bytes of each other), so a shape new by (seq, micro-batch) but not
    by tokens is new evidence for the step time only, not for memory: a future set's shapes must be new in both."""
    return {(preset, layers, seq * mb) for preset, layers, seq, mb in measured_llm_shapes(*excluded)}


def seqs_named_elsewhere(bundle: Path, seqs: set[int], exempt: dict[Path, set[int]] | None = None) -> list[tuple[Path, int]]:
    """(file, seq) for every file under calibration/ outside `bundle` (.json, .yaml, .sh, .txt, .md) that names one of
    `seqs` as a sequence length ('"seq": S', 'seq: S' or 'S:<micro-batch>'): a registered set's "its seqs are new to
    every bundle" check wants []. exempt: bundle folder -> the seqs it may name (a parallel set's own, said where used)."""
    out = []
    for path in (ROOT / "calibration").rglob("*"):
        if not path.is_file() or bundle in path.parents or path.suffix not in (".json", ".yaml", ".sh", ".txt", ".md"):
            continue
        allowed = set().union(*(v for k, v in (exempt or {}).items() if k in path.parents))
        text = path.read_text(errors="replace")
        out += [(path, s) for s in sorted(seqs - allowed) if re.search(rf'("seq": {s}\b|\bseq: {s}\b|\b{s}:\d)', text)]
    return out


def registered_tokens(runs: list[dict]) -> set[tuple]:
    """(preset, layers, tokens) of a registered set's runs, as measured_llm_tokens keys them."""
    return {(preset, layers, seq * mb) for preset, layers, seq, mb in registered_shapes(runs)}


def registered_shapes(runs: list[dict]) -> set[tuple]:
    """(preset, layers, seq, micro-batch) of a registered set's runs (registered.json), as measured_llm_shapes keys them."""
    from simcluster.runner.llm_decoder import PRESETS

    return {(r["preset"], PRESETS[r["preset"]]["layers"], r["seq"], r["micro_batch"]) for r in runs}


@pytest.fixture
def adopt50_table_file(tmp_path, monkeypatch):
    """llm/moe_router_term.TABLE_FILE pointed at adopt50's file as it was (rows keyed by PRODUCT_M, before session 51's
    moedev51 keyed them by the measured tokens: heldout/registration.rekeyed_then, before_moedev51's), for the
    registrations that recorded its sha256 (mcrouter50, mcperm50) to reproduce byte for byte."""
    from simcluster.heldout import moeker50, moerouter
    from simcluster.heldout.registration import rekeyed_then
    from simcluster.llm import moe_router_term

    shipped = moe_router_term.TABLE_FILE

    class AsShipped(type(shipped)):   # the old bytes, at the shipped file's name (the registrations record its path)
        def relative_to(self, *other):
            return shipped.relative_to(*other)

    path = AsShipped(tmp_path / "moe_router_table_adopt50.json")
    doc = moeker50.table_document()
    path.write_text(moerouter.table_text({**doc, "rows": [list(r) for r in rekeyed_then(doc["rows"])]}))
    monkeypatch.setattr(moe_router_term, "TABLE_FILE", path)
    return path


@pytest.fixture
def h200_log():
    return lambda op: H200 / "nccl-tests" / f"{op}.txt"


def _numbers_only(expected, where="expected"):
    """pytest.approx compares numbers; a label (str, bytes, None, bool) inside it is a test bug that a pytest
    release may stop tolerating (pytest 9.2 did, for `(float, 'LL')`): compare labels with == instead."""
    if isinstance(expected, (str, bytes, bool)) or expected is None:
        raise TypeError(f"pytest.approx given a non-number at {where}: {expected!r} (compare labels with ==)")
    if isinstance(expected, dict):
        for key, value in expected.items():
            _numbers_only(value, f"{where}[{key!r}]")
    elif isinstance(expected, (list, tuple)):
        for i, value in enumerate(expected):
            _numbers_only(value, f"{where}[{i}]")


_approx = pytest.approx


def _strict_approx(expected, *args, **kwargs):
    _numbers_only(expected)
    return _approx(expected, *args, **kwargs)


pytest.approx = _strict_approx     # every test module's `pytest.approx` goes through the check above


def fresh_register_equals(script, bundle: Path, tmp_path: Path, monkeypatch, commit_key: str = "registered_at_commit") -> dict:
    """A registered set's `--register` at its registering commit (the registration's `commit_key`) writes its
    registered.yaml byte for byte, and never over an existing one (exit 2); returns the registration."""
    reg = yaml.safe_load((bundle / "registered.yaml").read_text())
    monkeypatch.setenv("REGISTER_COMMIT", reg[commit_key])
    assert script.main(["--register", str(tmp_path / "again.yaml")]) == 0
    assert (tmp_path / "again.yaml").read_text() == (bundle / "registered.yaml").read_text()
    assert script.main(["--register", str(bundle / "registered.yaml")]) == 2   # never overwritten
    return reg


def registered_before_adopt2g(script, bundle: Path, tmp_path: Path, monkeypatch) -> dict:
    """fresh_register_equals for a set registered before session 48 adopt2g switched FSDP2's ZeRO-2 terms on (zero2 ..
    zero2g): its fresh --register runs the model as registered (heldout/registration.before_adopt2g, the four switches off)."""
    from simcluster.heldout.registration import before_adopt2g
    from simcluster.llm import eager

    with eager.torch_framework_as(before_adopt2g):
        return fresh_register_equals(script, bundle, tmp_path, monkeypatch)


def assert_adopted_zero2_scope(flag: str) -> None:
    """One of the four FSDP2 ZeRO-2 switches as session 48 adopt2g ships it (zero2g's rule D, ADOPTED): on for framework
    torch's zero 2 and the FSDP2 frameworks (torchtitan-fsdp2, inherited by torchtitan-fsdp2-card and kempnerforge-fsdp2), off
    everywhere else."""
    from simcluster.llm import eager, framework
    from simcluster.llm.spec import ParallelSpec

    on = {"torchtitan-fsdp2", "torchtitan-fsdp2-card", "kempnerforge-fsdp2", "kempnerforge-fsdp2-compile"}
    specs = [fw for fw in vars(framework).values() if isinstance(fw, framework.FrameworkSpec)]
    assert {fw.name for fw in specs if getattr(fw, flag)} == on, flag
    assert [getattr(eager.torch_framework(ParallelSpec(dp=2, zero=z)), flag) for z in (0, 2, 3)] == [
        False, True, False], flag


def fresh_register_matches(script, bundle: Path, tmp_path: Path, monkeypatch) -> tuple[dict, dict]:
    """A registered set's --register (validation/moegemm.py, moerouter.py), given the registered term-off figures
    (`predict` stubbed: no validate pass), writes the bundle's registered.yaml byte for byte (the commit line set from the
    file) and never over it; returns those figures (families, held-out MoE rows)."""
    reg = yaml.safe_load((bundle / "registered.yaml").read_text())
    fams, moe = script.registered_before(reg, bundle / "registered.yaml")
    monkeypatch.setattr(script, "predict", lambda table=None: (fams, moe))
    fresh_register_equals(script, bundle, tmp_path, monkeypatch, "commit")
    return fams, moe


def cpu_dry_run(device_script: str, *args: str) -> dict:
    """A device script's CPU dry run (`--device cpu --quick`, 2 repeats, 1 profiled, no warm-up, then `args`): its JSON
    document; the test skipped where torch is not installed (the project's venv has none; the device has it)."""
    pytest.importorskip("torch")
    out = subprocess.run([sys.executable, device_script, "--device", "cpu", "--quick", "--repeats", "2", "--prof-repeats", "1",
                          "--warmup", "0", *args], cwd=ROOT, capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


def wrong_bundles(tmp_path: Path, other_set: str, own_set: str) -> tuple[Path, Path, Path]:
    """Three bundles a registered set's read-out must refuse in one line: an empty folder, another set's registration
    (`set: other_set`) and the set's own without its keys (`set: own_set`), the last two with a runs/ folder."""
    empty, other, keyless = tmp_path / "empty", tmp_path / "other", tmp_path / "keyless"
    empty.mkdir()
    for folder, name in ((other, other_set), (keyless, own_set)):
        (folder / "runs").mkdir(parents=True)
        (folder / "registered.yaml").write_text(f"set: {name}\nrows: []\n")
    return empty, other, keyless



def refused_in_one_line(main, capsys, tmp_path: Path, cases) -> None:
    """A read-out's main on each (folder, words) of `cases` and on a file given as the bundle: exit 1, one stderr line
    holding the words (a file: "not a bundle folder"), no traceback (final read 54 item 8: one copy for moe54 / moe54c)."""
    for folder, said in cases:
        assert main([str(folder)]) == 1
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and said in err and "Traceback" not in err, err
    f = tmp_path / "file"
    f.write_text("x")
    assert main([str(f)]) == 1 and "not a bundle folder" in capsys.readouterr().err

def refuses_paths_a_keyless_row_and_a_foreign_registration(s, bundle: Path, tmp_path: Path, capsys, keys: tuple[str, ...],
                                                            keyless_match: str, foreign_set: str) -> None:
    """A registered set's read-out module `s` (main / read_out) refuses in one line each: a missing bundle, a file given
    as the bundle, its registered.yaml's rows[0] without predicted.<keys...> (`keyless_match`) and another set's
    registration (calibration/`foreign_set`'s registered.yaml) in a bundle with runs/."""
    from simcluster.errors import SimclusterError

    assert s.main([str(tmp_path / "nowhere")]) == 1
    assert s.main([str(bundle / "registered.yaml")]) == 1   # a file given as the bundle
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 2 and all("Traceback" not in e for e in err), err
    reg = yaml.safe_load((bundle / "registered.yaml").read_text())
    node = reg["rows"][0]["predicted"]
    for key in keys[:-1]:
        node = node[key]
    del node[keys[-1]]
    (bundle / "registered.yaml").write_text(yaml.safe_dump(reg))
    with pytest.raises(SimclusterError, match=keyless_match):
        s.read_out(bundle)
    foreign = tmp_path / "foreign"
    (foreign / "runs").mkdir(parents=True)
    (foreign / "registered.yaml").write_text((ROOT / "calibration" / foreign_set / "registered.yaml").read_text())
    with pytest.raises(SimclusterError, match="another set's registration"):
        s.read_out(foreign)


STUB_PYTHON3 = """#!/bin/sh
if [ "$1" = "-m" ] && [ "$2" = "simcluster.runner.llm_step" ]; then exec "{py}" "{stub}" "$@"; fi
exec "{py}" "$@"
"""


def single_stub_runner(test_module: str, warmup: str, steps: str) -> str:
    """The stub `llm_step --mode single` of a one-GPU set's dry run (stub_dry_run's `stub_runner`): it finds the
    registered row of its --preset / --shapes / --ac-mode in `test_module`'s registered(), checks the set's flags
    (GPU 0, no profiling, `warmup` / `steps`, no --compile), sleeps STUB_SLEEP s and prints run_doc at the registered
    step and peak (lab1x52's and lseq52's tests; env STUB_TESTS is the tests folder)."""
    return f"""import json, os, sys, time
sys.path.insert(0, os.environ["STUB_TESTS"])
from {test_module} import registered, run_doc
a = sys.argv[3:]
val = lambda k: a[a.index(k) + 1] if k in a else None
seq, mb = map(int, val("--shapes").split(":"))
row = next(r for r in registered()["rows"] if (r["preset"], r["seq"], r["micro_batch"], r["ac_mode"])
           == (val("--preset"), seq, mb, val("--ac-mode")))
assert val("--mode") == "single" and val("--profile") == "0" and os.environ["CUDA_VISIBLE_DEVICES"] == "0"
assert (val("--warmup"), val("--steps")) == ("{warmup}", "{steps}") and "--compile" not in a
time.sleep(float(os.environ.get("STUB_SLEEP", "0")))
p = row["predicted"]["product"]
print(json.dumps(run_doc(row, p["step_ms"] / 1e3, p["peak_mem_GiB"])))
"""


def stub_dry_run(tmp_path: Path, bundle: Path, stub_runner: str, env: dict[str, str],
                 budget: str | None = None) -> subprocess.CompletedProcess:
    """A one-GPU set's device_run.sh on this machine with a stub runner: `python3 -m simcluster.runner.llm_step` runs the
    Python text `stub_runner` (its argv as the runner's), any other python3 the real one; `env` added (OUT, W and
    MAIN_COMMIT set here; BUDGET_S where `budget` is given); the packed runs unpacked into tmp_path/<bundle name> beside a
    copy of the registration (lab1x51's and lseq52's dry runs)."""
    import os
    import shutil

    shim = tmp_path / "bin"
    shim.mkdir()
    (tmp_path / "stub.py").write_text(stub_runner)
    (shim / "python3").write_text(STUB_PYTHON3.format(py=sys.executable, stub=tmp_path / "stub.py"))
    (shim / "python3").chmod(0o755)
    (tmp_path / "out").mkdir()
    env = os.environ | {"PATH": f"{shim}:{os.environ['PATH']}", "OUT": str(tmp_path / "out"), "W": str(tmp_path / "w"),
                        "MAIN_COMMIT": "test"} | env | ({"BUDGET_S": budget} if budget is not None else {})
    done = subprocess.run(["bash", str(bundle / "device_run.sh")], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    copy = tmp_path / bundle.name
    copy.mkdir()
    shutil.copy(bundle / "registered.yaml", copy / "registered.yaml")
    subprocess.run(["tar", "xzf", str(tmp_path / "out" / "runs.tgz"), "-C", str(copy)], check=True)
    return done
