"""Writing a registered predictions file (issue 44): once. A held-out set's predictions are registered (committed)
before its runs and read against them after; writing over an existing one would put today's model where the
registration was. `validation/*.py --register` writes through `write_registration`, which refuses a path that exists
with one line; a registration not yet run is redone by deleting its file first (`git rm`), in the open. Also the read-outs'
shared pieces: reading a set (read_run_set), the command line (set_main), the verdict lines, and the arithmetic of the
process-noise and memory-range rules (pooled_log_sd, mem_error)."""

from __future__ import annotations

from contextlib import contextmanager
from pathlib import Path

from simcluster.errors import SimclusterError
from simcluster.script_args import ArgumentParser


def refuse_existing(path: Path) -> Path:
    """`path` if nothing is there yet; else one line (a script calls it before predicting anything)."""
    path = Path(path)
    if path.exists():
        raise SimclusterError("a registered predictions file exists; registrations are never overwritten",
                              where=str(path), hint="delete it first if its set has not run, or register to a new path")
    return path


def write_registration(path: Path, text: str) -> None:
    """`text` into `path`, a new file; an existing one (registered, maybe already run) is refused, never overwritten."""
    path = refuse_existing(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("x", encoding="utf-8") as f:     # "x": fails, never truncates, if the file appeared meanwhile
        f.write(text)


def switched_off(fw, names):
    """`fw` (a FrameworkSpec) with its switches `names` off: the model a set registered before their adoption priced, so
    that registration stays reproducible (eager.torch_framework_as's wraps: before_adopt2g, eager_compilefsdp.before_adopt48)."""
    from dataclasses import replace

    return replace(fw, **dict.fromkeys(names, False))


def before_adopt2g(fw):
    """The framework as every set registered before session 48's adopt2g priced it (zero2 .. zero2g, nosync): the four
    switches llm/fsdp2_zero2.ADOPTED off, as they were until zero2g's rule D read ADOPTED (on for framework torch's zero 2
    and the FSDP2 frameworks since)."""
    from simcluster.llm.fsdp2_zero2 import ADOPTED

    return switched_off(fw, ADOPTED)


def before_mem49(fw):
    """The framework as every set registered before session 49's mem49 priced it (x2set49 and earlier): the compiled
    FSDP2 step without checkpointing with eager's loss bytes and an fp32 block input (framework.compiled_nock_memory off;
    llm/compiled.loss_memory_in_last_graph). Moves no checkpointed or eager row."""
    return switched_off(fw, ("compiled_nock_memory",))


@contextmanager
def _router_term_as(state: tuple):
    """llm/moe_router_term's state (table, H200 rate, labels, scope) set to `state` inside the block, the adopted one
    restored after, op_price's memo cleared both ways (before_adopt49 / before_adopt50 / before_moedev51); inside, the
    model as before session 51's moedev51: the router priced on all b s / c tokens (moe_router_term.router_tokens) and
    the dispatcher sync priced under capacity padding too (llm/moe_sync.PAD_NO_SYNC)."""
    from simcluster.llm import moe_router_term, op_price

    saved = moe_router_term.state()
    moe_router_term.set_state(state)
    op_price.forget()
    try:
        with moedev51_off():
            yield
    finally:
        moe_router_term.set_state(saved)
        op_price.forget()


@contextmanager
def moedev51_off():
    """Session 51's moedev51 source facts off inside the block (moedev51_facts with all three off), and session 52's
    moe52 and moonprice52 facts (moe52_facts, moonprice52_facts off: every set registered before moedev51 was registered
    before them too), restored after:
    the model every set registered before it priced (_router_term_as's handles; the read-outs that set the term's table
    themselves, validation/moeker50.py and moelab49b.py, price inside it)."""
    with moedev51_facts(router=False, pad=False, permute=False), moe52_facts(False), moonprice52_facts(False):
        yield


@contextmanager
def moedev51_facts(router: bool, pad: bool, permute: bool):
    """Each of session 51's moedev51 source facts on or off inside the block, one switch each (mendC51, cold review C51
    items 3 and 8): `router` the router on the rank's sequence shard (moe_router_term.router_tokens), `pad` no dispatcher
    sync under capacity padding (moe_sync.PAD_NO_SYNC), `permute` the expert-TP permute / unpermute on the rank's own
    rows (ops.PERMUTE_OWN_ROWS); restored after, op_price's memo cleared both ways (studies/moedev51_rows.py --steps)."""
    from simcluster.llm import moe_router_term, moe_sync, op_price, ops

    sp, was_pad, own = moe_router_term.set_sp_shard(router), moe_sync.PAD_NO_SYNC, ops.PERMUTE_OWN_ROWS
    moe_sync.PAD_NO_SYNC, ops.PERMUTE_OWN_ROWS = bool(pad), bool(permute)
    op_price.forget()
    try:
        yield
    finally:
        moe_router_term.set_sp_shard(sp)
        moe_sync.PAD_NO_SYNC, ops.PERMUTE_OWN_ROWS = was_pad, own
        op_price.forget()


@contextmanager
def moe52_facts(on: bool):
    """Session 52's fabric facts on or off inside the block (collectives/cluster.NICS_AS_WIRED): moe52's source fact, a
    NIC's PCIe share counted over the node's wired GPUs, not a group view's ranks per node (an EP alltoall across nodes
    with 2 of 8 ranks a node was priced at a quarter of each GPU's NIC; off also drops mendB52's in-network cap at a NIC
    slower than the switch's ports, collectives/in_network.py); restored after (studies/moedev51_rows.py --steps). A
    Cluster reads the switch when it is built (Cluster.nics_as_wired): build the machine inside the block."""
    from simcluster.collectives import cluster

    was = cluster.NICS_AS_WIRED
    cluster.NICS_AS_WIRED = bool(on)
    try:
        yield
    finally:
        cluster.NICS_AS_WIRED = was


@contextmanager
def moonprice52_facts(unfused: bool):
    """Session 52's moonprice52 fact on or off inside the block: `unfused` a recipe's moe_router_fusion false priced as
    Megatron-Core's unfused router from calibration/h200x1-moonrouter52-2026-12-01 (llm/moe_router_unfused.ON); restored
    after, op_price's memo cleared both ways (studies/moedev51_rows.py --steps; the sets registered before it)."""
    from simcluster.llm import moe_router_unfused, op_price

    was = moe_router_unfused.set_on(unfused)
    op_price.forget()
    try:
        yield
    finally:
        moe_router_unfused.set_on(was)
        op_price.forget()


def before_moedev51():
    """The model as it was between session 50's adopt50 and session 51's moedev51 (cpmoe50's Model Zoo predictions were
    printed with it; no read-out calls it: studies/moedev51_rows.py and tests/conftest's fixture do; mcrouter50's and
    mcperm50's read-outs read the table's columns, not its keys, so they do not move): the router on all b s / c tokens,
    not the rank's sequence shard, the dispatcher sync priced under capacity padding (llm/moe_sync.applies), and the
    adopted table keyed as it was then, each layer's row at the product's router M (runner/moerouter_grid.PRODUCT_M)
    rather than the tokens it was measured at (GRID's T'); a context."""
    from simcluster.llm import moe_router_term

    rows = moe_router_term.table()   # read (first use) before state() so that the rate is the table's
    _, rate, labels, scope = moe_router_term.state()
    return _router_term_as((tuple(rekeyed_then(rows)), rate, labels, scope))


def rekeyed_then(rows) -> list[tuple]:
    """The adopted router table's rows (GRID's order) keyed as adopt50's file was, before moedev51: each layer's row at
    the product's router M then (runner/moerouter_grid.PRODUCT_M), not the tokens it was measured at (before_moedev51;
    tests/conftest's adopt50_table_file, the one builder of that table)."""
    from simcluster.runner.moerouter_grid import GRID, PRODUCT_M

    return [(float(PRODUCT_M[g[0]]), *r[1:]) for g, r in zip(GRID, rows, strict=True)]


def before_adopt49():
    """The model as every set registered before session 49's adopt49 priced it (moegemm, moerouter: validation/moegemm.
    families_with runs inside it): the MoE router / permutation term off (a read-out may enable() its own table inside)
    and the published MoE rows labelled as their files say (llm/moe_router_term.development_why silent); a context."""
    from simcluster.llm.moe_router_term import ADOPTED

    return _router_term_as(((), 0.0, False, ADOPTED))


def before_adopt50():
    """The model as every set registered between session 49's adopt49 and session 50's adopt50 priced it (moeker50,
    publ50's Model Zoo predictions): the MoE router / permutation term on with session 49's table (heldout/moerouter.
    session49_table: the router columns from CUDA events around eager calls, launch gaps included), the adoption's labels
    and scope; a context. moelab49 / moelab49b price with moerouter's table by their own code (validation/moelab49.tables)
    and need no handle."""
    from simcluster.heldout import moerouter
    from simcluster.llm.moe_router_term import ADOPTED

    return _router_term_as((*moerouter.session49_table(), True, ADOPTED))


# The non-MoE published LLM files (sources) whose rows moegemm's (session 48) and moerouter's (session 49) registered
# family figures priced: an allow-list frozen once (final read 51 item 9), as llm/moe_router_term.JUDGED_FILES is for
# the MoE rows, so a file recorded later is left out with no edit here. Frozen in session 51 (mendF51) as every non-MoE
# source then but the three recorded after those registrations (session 51 publ51's FlagPerf and gpu-recipes files,
# which moved Megatron/NeMo 97 -> 101 and fp8 35 -> 38 there): llm-flagperf-llama3-8b-megatron-h100,
# llm-flagperf-llama3-70b-megatron-h100, llm-gcp-gpu-recipes-a3ultra-h200-nemo.
FILES_THEN = frozenset(f"llm-{name}" for name in (
    "aws-sagemaker-torchtitan-p5-h100-unverified", "awsome-torchtitan-p5-h100", "bloom176b-tr11",
    "dgxc-benchmarking-v24.11.1-llama31-h100", "dgxc-benchmarking-v24.11.1-nemotron4-gpt3-h100",
    "dgxc-benchmarking-v25.02-llama31-h100", "dgxc-benchmarking-v25.02-nemotron4-gpt3-h100",
    "dgxc-benchmarking-v25.04-llama31-h100", "dgxc-benchmarking-v25.04-nemotron4-h100", "fms-fsdp-a100",
    "fms-fsdp-a100-compile", "fms-fsdp-a100-feb2024", "fms-fsdp-h100", "fms-fsdp-h100-compile",
    "ibm-meta-float8-fsdp2-h100", "kempnerforge-h200-config-validation", "kempnerforge-h200-fsdp2",
    "korthikanti2022-table5", "llama3-405b-table4", "llmfoundry-mpt-a100-fsdp", "llmfoundry-mpt-h100-fsdp",
    "llmfoundry-mpt-h100-large-scale-fsdp", "megascale2024-table2", "megatron-bridge-25.11-dgx-b200",
    "megatron-bridge-25.11-dgx-h100-b200", "megatron-bridge-26.04.01-dgx-h100-fp8", "megatron-core-r080-h100-weak-scaling",
    "mtnlg530b-unverified", "narayanan2021-megatron-table1", "narayanan2021-megatron-table2",
    "nemo-24.03-long-sequence-h100", "nemo-24.07-dgx-h100-fp8", "nemo-25.02-dgx-b200-fp8", "nemo-25.04-long-sequence-b200",
    "nemotron4-340b-unverified", "torchtitan-fsdp2-a100", "torchtitan-llama31-h100"))


def rows_then(rows) -> list:
    """validate --published llm's rows as the files held when moegemm and moerouter registered priced them: the MoE
    rows of the 13 judged files (moe_rows_then), every other family's rows of FILES_THEN's files."""
    then = {id(r) for r in moe_rows_then(rows)}
    return [r for r in rows if (id(r) in then if r.family == "MoE" else r.source in FILES_THEN)]


def moe_rows_then(rows) -> list:
    """The published MoE rows (validate --published llm's, with an error) of the 13 files the router term's rule priced
    (llm/moe_router_term.JUDGED_FILES), the MoE files there were when moelab49b and moeker50 registered their published
    MoE figures: publ50's Model Zoo files, recorded after, are left out so that those registrations and read-outs
    reproduce (they priced 70 rows; the new files add 7)."""
    from simcluster.llm.moe_router_term import judged

    return [r for r in rows if r.family == "MoE" and r.error is not None and judged(r.source)]


def registering_commit(root: Path) -> str:
    """The commit a registration is made at: $REGISTER_COMMIT (a device copy's .git may lag), else `root`'s git HEAD."""
    import os
    import subprocess

    return os.environ.get("REGISTER_COMMIT") or subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True,
                                                                text=True).stdout.strip()


def read_run_set(bundle: Path, expect: dict | None = None) -> dict:
    """A registered set's registered.yaml (a mapping with `rows`) once its device call's runs/ is unpacked beside it;
    a missing or malformed file, a bundle path that is not a readable folder, one whose `expect` keys (e.g. {'set': 'moegemm'} or {'script': 'validation/tp4.py
    --register'}) differ (another set's registration), or no runs/, is one SimclusterError line naming the path."""
    import yaml

    path = Path(bundle) / "registered.yaml"
    try:
        reg = yaml.safe_load(path.read_text())
        reg["rows"]
    except FileNotFoundError:
        raise SimclusterError(f"{path}: missing (register before the runs)") from None
    except OSError as exc:      # a file given as the bundle (NotADirectoryError), registered.yaml a folder, no access
        raise SimclusterError(f"{bundle}: not a bundle folder ({type(exc).__name__}: {exc.strerror})") from None
    except (yaml.YAMLError, KeyError, TypeError) as exc:
        raise SimclusterError(f"{path}: not a registration ({type(exc).__name__}: {exc})") from None
    for key, want in (expect or {}).items():
        if reg.get(key) != want:
            raise SimclusterError(f"{path}: {key} {reg.get(key)!r}, expected {want!r} (another set's registration?)")
    if not (Path(bundle) / "runs").is_dir():
        raise SimclusterError(f"{Path(bundle) / 'runs'}: missing (unpack the device call's runs.tgz into {bundle})")
    return reg


def read_rule_registration(bundle: Path, name: str, check, expected: str) -> dict:
    """A rule's registered.yaml (calibration/rule-*, no runs/) of set `name`, `check(reg)` reading the keys its read-out
    needs; missing, not a folder, malformed or another set's: one SimclusterError line naming the path."""
    import yaml
    path = Path(bundle) / "registered.yaml"
    try:
        reg = yaml.safe_load(path.read_text())
        if reg.get("set") != name:
            raise SimclusterError(f"{path}: set {reg.get('set')!r}, expected {name!r} (another registration?)")
        check(reg)
    except FileNotFoundError:
        raise SimclusterError(f"{path}: missing (the rule's registration)") from None
    except OSError as exc:
        raise SimclusterError(f"{bundle}: not a registration folder ({type(exc).__name__}: {exc.strerror})") from None
    except (yaml.YAMLError, KeyError, TypeError, AttributeError, ValueError) as exc:
        raise SimclusterError(f"{path}: not the {name} registration ({type(exc).__name__}: {exc}; expected {expected})") from None
    return reg


def ran_tree_hash(bundle: Path) -> str | None:
    """The tree_hash runs/commit.txt recorded (calibration/device_lib.sh's last line: simcluster/ and validation/ as
    they ran), or None where the file or that line is missing."""
    path = Path(bundle) / "runs" / "commit.txt"
    lines = path.read_text().splitlines() if path.is_file() else []
    return lines[-1].split()[0] if lines and "(tree_hash:" in lines[-1] else None


def checkout_tree_hash(root: Path) -> str | None:
    """device_lib.sh's tree_hash of the checkout at `root` (sha256 over `sha256sum` lines of simcluster/ and
    validation/'s tracked or unignored files, sorted by path; a listed path that is no file, e.g. a tracked file
    deleted, left out in both), or None where git cannot list them. tests/test_device_lib.py ties the two together."""
    import hashlib
    import subprocess

    got = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard", "--", "simcluster",
                          "validation"], cwd=root, capture_output=True)
    if got.returncode:
        return None
    paths = sorted({p for p in got.stdout.split(b"\0") if p})
    lines = b"".join(hashlib.sha256((Path(root) / p.decode()).read_bytes()).hexdigest().encode() + b"  " + p + b"\n"
                     for p in paths if (Path(root) / p.decode()).is_file())
    return hashlib.sha256(lines).hexdigest()


def set_main(argv: list[str], description: str, bundle: Path, register, read_out, show) -> int:
    """A registered set's command line (validation/*.py): `--register PATH` writes the predictions (register(PATH),
    refusing an existing file; exit 2 on a SimclusterError), else read_out(BUNDLE) printed by show(result) (exit 1 on
    a SimclusterError); each error one line on stderr, a bad argument too (script_args.ArgumentParser, exit 2)."""
    import sys

    ap = ArgumentParser(description=description)
    ap.add_argument("bundle", nargs="?", type=Path, default=bundle)
    ap.add_argument("--register", type=Path, help="write the predictions to this registered.yaml (before the runs)")
    args = ap.parse_args(argv)
    try:
        if args.register:
            register(refuse_existing(args.register))   # before predicting anything
            return 0
        result = read_out(args.bundle)
    except SimclusterError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2 if args.register else 1
    show(result)
    return 0


def print_rows(result: dict, line) -> None:
    """A read-out's show: each read row as `line(row, own)` formats it (own: result['own'] at the row's key, None where
    the set has no own-host figure for it), then print_verdicts."""
    for row in result["rows"]:
        print(line(row, result["own"].get(row["key"])))
    print_verdicts(result["verdicts"], result["left"])


def print_verdicts(verdicts: dict, left: list[str] = ()) -> None:
    """A registered set's runs left out ('left out: why', one line each) and its verdicts, one 'RULE: text' line each
    (a read-out's show)."""
    for line in left:
        print(f"left out: {line}")
    for rule, text in verdicts.items():
        print(f"{rule}: {text}")


def pooled_log_sd(groups: list[list[float]]) -> tuple[float | None, int]:
    """The pooled sd of values (logs of steps) over groups (a registered set's shapes, each run in several processes)
    and its degrees of freedom; (None, 0) where no group has two values (rule N of validation/eager_fsdphost.py and
    validation/pphost.py)."""
    import math
    import statistics

    dof = sum(len(g) - 1 for g in groups if len(g) > 1)
    ss = sum(sum((x - statistics.mean(g)) ** 2 for x in g) for g in groups if len(g) > 1)
    return (math.sqrt(ss / dof) if dof else None), dof


def lease_bias(logs: list[float], band: float) -> tuple[str, float, float]:
    """(word, b, se) over per-process log errors (log predicted / measured): b their mean, se their sd / sqrt(n); word
    FAST if b < -band and b + 2 se < 0, SLOW if b > band and b - 2 se > 0, NONE if |b| + 2 se <= band, else UNDECIDED
    (rule B of the eager host-bound sets). Needs two or more logs."""
    import math
    import statistics

    b, se = statistics.mean(logs), statistics.stdev(logs) / math.sqrt(len(logs))
    word = ("FAST" if b < -band and b + 2 * se < 0 else "SLOW" if b > band and b - 2 * se > 0
            else "NONE" if abs(b) + 2 * se <= band else "UNDECIDED")
    return word, b, se


def bias_line(logs: list[float], band: float) -> tuple[str | None, str]:
    """Rule B's verdict line over per-process log errors: (word, 'WORD: lease bias +x% (log, se, n processes; band)')
    by lease_bias; (None, 'NO DATA: ...') under three processes. The text every eager host-bound set's read-out prints
    (validation/eager_fsdphost.py, pphost.py, hostsingle.py)."""
    import math

    if len(logs) < 3:
        return None, f"NO DATA: {len(logs)} processes (3 needed)"
    word, b, se = lease_bias(logs, band)
    return word, f"{word}: lease bias {math.expm1(b):+.1%} (log {b:+.3f}, se {se:.3f}, {len(logs)} processes; band +-{band:.2f})"


def mem_error(lo: float, hi: float, measured: float) -> float:
    """0 inside the registered range [lo, hi] (GiB), else the relative distance of the prediction's nearer end (rule P)."""
    return 0.0 if lo <= measured <= hi else (hi if measured > hi else lo) / measured - 1


def noise_verdict(procs: list[dict], target: float) -> tuple[bool | None, str]:
    """Rule N of the one-GPU host sets (validation/hostsingle.py, opcheck.py) over processes {key, measured_s}: (whether
    the mean |error| process noise alone gives, sqrt(2/pi) x the pooled sd of log steps within a key, is ABOVE
    `target` (a fraction); None without a key run twice, and the verdict line."""
    import math

    sd, dof = pooled_log_sd([[math.log(p["measured_s"]) for p in procs if p["key"] == k] for k in {p["key"] for p in procs}])
    if sd is None:
        return None, "NO DATA: no shape ran in two processes"
    alone = sd * math.sqrt(2 / math.pi)
    return alone > target, (f"process sd {sd:.3f} ({dof} dof): process noise alone gives {alone:.1%} mean |error|, "
                            f"{'ABOVE' if alone > target else 'below'} the {target:.0%} target")


def memory_verdict(errors: list[float], pct: float) -> str:
    """Rule P's line over the processes' memory errors (mem_error): met if every |error| <= pct percent."""
    if not errors:
        return "NO DATA: no process ran"
    worst = max(map(abs, errors))
    return (f"memory {'met' if worst <= pct / 100 else 'not met'}: max |error| {worst:.1%} over {len(errors)} processes "
            f"(within {pct:.0f}%)")
