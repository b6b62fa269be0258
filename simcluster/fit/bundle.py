"""`simcluster calibrate BUNDLE -o DIR`: every trace in a bundle goes to its fit, one card per component.

  nccl-tests, nccl-tests-socket  -> collective-<tool>.yaml  (all_reduce fitted, median of its rounds; with
                                    an all_reduce tuning log the NCCL-primitives model; other ops are left
                                    for validation), and with other ops and the tuning log op-profile-<tool>.yaml
                                    (each op measured / that card's model: for other machines of the kind)
  qperf (+ perf-stat)            -> nic-<transport>.yaml     (latency, wire rate, CPU per byte)
  fio                            -> nvme-<name>.yaml          (service time, parallelism, bandwidth ceiling)
  ddp-step (+ profiles)          -> training-<model>.yaml per model, and ddp.yaml (DDP overheads fitted on
                                    the 2-GPU runs; 4-GPU and socket runs are left for validation)
  gpu-micro                      -> gpu-<card name>.yaml     (GPU card, simcluster.fit.gpu; llm-step runs are
                                    left for validation)
Each card names the traces it came from (path and sha256).
`simcluster calibrate B1 B2 ... -o DIR [--collective-card CARD]` does this per bundle (DIR/<bundle>/) and
fits one DDP card (DIR/ddp.yaml) on the 2-GPU steps of all of them (repeats of one machine type).

The library writes nothing: `calibrate_bundles` returns a `Calibration`, the cards as documents (file name
under -o -> YAML text) and one line per input it skipped; the CLI writes them (simcluster.files).
Every input is used or skipped on its own: a run that failed in collection, a trace that does not parse, a
manifest path that is absolute, holds '..' or resolves outside the bundle (never read, never recorded), a
model name that cannot name a file. Each skipped input is one problem line, and the cards whose inputs
are good are still made (one empty ddp-step log of four drops that run's card only; a bad perf.csv drops
the NIC card's perf note only).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from simcluster import documents, strict
from simcluster.errors import CalibrationError, SimclusterError, TraceFormatError
from simcluster.files import OutputError, inside, safe_name
from simcluster.traces.common import sha256_of

# what a trace's own content can raise on the way to a fit, beyond TraceFormatError: one input skipped
DATA_ERRORS = (SimclusterError, ValueError, KeyError, TypeError, IndexError, ZeroDivisionError, OSError)


@dataclass(frozen=True)
class Calibration:
    """The cards of a calibration (file name under the output folder -> card YAML; with several bundles a
    name starts with its bundle's folder) and one line per input that was skipped, naming it and why."""

    documents: dict[str, str]
    problems: tuple[str, ...]


def read_manifest(bundle: Path) -> dict:
    path = bundle / "manifest.json"
    if not path.is_file():
        raise TraceFormatError("not a trace bundle: no manifest.json", where=str(path),
                               hint="make one with 'simcluster collect --out DIR'")
    doc = strict.load_json(path, TraceFormatError, "bundle manifest", schema=documents.BUNDLE_MANIFEST)
    if not isinstance(doc, dict) or not isinstance(doc.get("runs"), list):
        raise TraceFormatError("manifest has no 'runs' list", where=str(path))
    return doc


def _is_run(run) -> bool:
    return isinstance(run, dict) and all(isinstance(run.get(k), str) for k in ("tool", "run_id", "status", "path"))


class _Bundle:
    """A bundle being calibrated: its manifest, its usable runs (each run folder checked to lie inside the
    bundle) and the problem lines of what was skipped."""

    def __init__(self, path: Path, manifest: dict | None = None):
        self.path = Path(path)
        self.manifest = read_manifest(self.path) if manifest is None else manifest
        self.problems: list[str] = []
        self.refused: dict[str, str] = {}           # tool -> first refused manifest path (timing_logs raises it)
        runs = self.manifest["runs"]
        if runs and not any(map(_is_run, runs)):
            raise TraceFormatError("no run has a tool, run_id, status and path: not a manifest written by simcluster collect",
                                   where=str(self.path / "manifest.json"))
        self.ok_runs = [r for n, r in enumerate(runs, 1) if self._usable(n, r)]

    def _usable(self, n: int, run) -> bool:
        if not _is_run(run):
            self.problems.append(f"{self.path / 'manifest.json'}: run {n}: no tool, run_id, status and path; skipped")
            return False
        if run["status"] != "ok":
            self.problems.append(f"{run['tool']}/{run['run_id']}: skipped ({run['status']})")
            return False
        rel = PurePosixPath(run["path"])
        if not run["path"] or rel.is_absolute() or ".." in rel.parts or not inside(self.path, self.path / rel):
            reason = (f"{run['tool']}/{run['run_id']}: manifest path {run['path']!r} is outside the bundle; "
                      "not read")
            self.problems.append(reason)
            self.refused.setdefault(run["tool"], reason)
            return False
        return True

    def runs(self, tool: str) -> list[dict]:
        return [r for r in self.ok_runs if r["tool"] == tool]

    def file(self, run: dict, name: str = "stdout.txt") -> Path:
        """A file of a run's folder; one that a symlink takes outside the bundle is refused."""
        path = self.path / run["path"] / name
        if not inside(self.path, path):
            raise TraceFormatError("the file leads outside the bundle (a symlink); not read", where=str(path))
        return path

    def skip(self, exc: Exception, what: str = "") -> None:
        """One problem line for an input that is not used."""
        text = exc.one_line() if isinstance(exc, SimclusterError) else f"{what}: {type(exc).__name__}: {exc}"
        self.problems.append(" ".join(text.split()))

    def parsed(self, items: list, parse) -> tuple[list, list]:
        """(parse(item) for each item that parses, those items); each that does not is a problem line."""
        good, used = [], []
        for item in items:
            try:
                good.append(parse(item))
                used.append(item)
            except DATA_ERRORS as exc:
                self.skip(exc, str(item))
        return good, used


def bundle_source(bundle: Path | list[Path], manifest: dict | None) -> dict:
    """Where a card's traces came from when they came from a bundle (or bundles, for a fit across repeats): the
    bundle and its host; merged into the card's provenance."""
    out: dict = {"bundle": [str(b) for b in bundle] if isinstance(bundle, list) else str(bundle)}
    if manifest is not None:
        host = manifest.get("host") if isinstance(manifest.get("host"), dict) else {}
        out["host"] = {k: host.get(k) for k in ("hostname", "cpu_model", "cores")}
    return out


def bundle_provenance(paths: list[Path], bundle: Path | list[Path], manifest: dict | None) -> dict:
    """Where a card came from (fit.cards.provenance), with the bundle (bundle_source)."""
    from simcluster.fit.cards import provenance

    return provenance([{"path": str(p), "sha256": sha256_of(p)} for p in paths]) | bundle_source(bundle, manifest)


def _logs_by_op(b: _Bundle, tool: str, role: str = "timing") -> dict[str, list[Path]]:
    """op -> the stdout of each of its runs of one role ("timing" rounds or NCCL "tuning" logs), in manifest
    order; older manifests without meta hold timing runs named by their op. A file outside the bundle is skipped."""
    logs: dict[str, list[Path]] = {}
    for run in b.runs(tool):
        meta = run.get("meta") if isinstance(run.get("meta"), dict) else {}
        if meta.get("role", "timing") == role:
            try:
                logs.setdefault(str(meta.get("op", run["run_id"])), []).append(b.file(run))
            except TraceFormatError as exc:
                b.skip(exc)
    return logs


def timing_logs(bundle: str | Path, tool: str = "nccl-tests") -> dict[str, list[Path]]:
    """op -> the stdout of each of its timing rounds in a trace bundle (tuning logs left out), in manifest order.
    A manifest path outside the bundle is an error here (nothing of such a bundle is validated)."""
    b = _Bundle(Path(bundle))
    logs = _logs_by_op(b, tool)
    if tool in b.refused:
        raise TraceFormatError(b.refused[tool], where=str(b.path / "manifest.json"))
    if not logs:
        raise TraceFormatError(f"the bundle has no {tool} timing runs that finished", where=str(b.path / "manifest.json"))
    return logs


def tuning_logs(bundle: str | Path, tool: str = "nccl-tests") -> tuple[dict[str, list[Path]], dict]:
    """op -> the NCCL tuning logs of a trace bundle (none: {}), and the bundle's manifest (its host's GPUs)."""
    b = _Bundle(Path(bundle))
    return _logs_by_op(b, tool, "tuning"), b.manifest


def _collective(b: _Bundle, tool: str, op_profile: str | None = None) -> tuple[dict[str, dict], object]:
    """collective-<tool>.yaml (fit.cards.collective_document, the same builder as for log files) from the bundle's
    all_reduce rounds and its first all_reduce tuning log; op-profile-<tool>.yaml from the other ops; and the model
    as its card stores it (None: no card)."""
    from simcluster.cards import collective_params, dump_card
    from simcluster.fit.cards import collective_document
    from simcluster.traces import nccl_tests, nccl_tuning

    logs = _logs_by_op(b, tool)
    traces, paths = b.parsed(logs.pop("all_reduce", []), lambda p: nccl_tests.parse(p, op="all_reduce"))
    if not traces:
        return {}, None
    tunings, tuning_paths = b.parsed(_logs_by_op(b, tool, "tuning").get("all_reduce", [])[:1], nccl_tuning.parse)
    card, params = collective_document(traces, tunings, f"{tool}-{traces[0].nranks}ranks", op_profile=op_profile,
                                       source=bundle_source(b.path, b.manifest))
    import yaml

    stored = collective_params(yaml.safe_load(dump_card(card)), f"collective-{tool}.yaml")
    cards = {f"collective-{tool}.yaml": card}
    others = [(path, op) for op, op_paths in logs.items() for path in op_paths]
    if others and tunings:
        try:
            cards[f"op-profile-{tool}.yaml"] = _op_profile(b, tool, params, traces, paths + tuning_paths, others,
                                                           card["machine"])
        except SimclusterError as exc:
            b.problems.append(f"{tool} op-profile: {exc.one_line()}")
    return cards, stored


def _op_profile(b: _Bundle, tool: str, params, traces: list, paths: list[Path],
                others: list[tuple[Path, str]], machine: dict) -> dict:
    """The op-profile card: every other op of the bundle measured against the card fitted on its all_reduce
    (`params`, from `traces` read at `paths`); `others` = (stdout path, op) per timing run."""
    from simcluster.collectives.profile import op_profiles_yaml
    from simcluster.fit.profile import learn
    from simcluster.traces import nccl_tests

    parsed, used = b.parsed(others, lambda item: nccl_tests.parse(item[0], op=item[1]))
    if not parsed:
        raise CalibrationError("no other op's timing log could be read")
    profiles = learn(params, traces + parsed, source=str(b.path))
    return {"kind": "op-profile", "name": f"op-profile-{tool}-{traces[0].nranks}ranks",
            "description": f"How each collective measured in bundle {b.path.name} departs from the NCCL-primitives "
                           f"model fitted on its all_reduce (collective-{tool}.yaml): measured / model per size. "
                           "Give it to another machine of the same kind: simcluster calibrate ... --op-profile FILE.",
            "machine": machine,
            "params": {"op_profiles": op_profiles_yaml(profiles)},
            "valid_range": {"ranks": sorted({p.ranks for p in profiles}), "nodes": 1,
                            "ops": sorted({op for p in profiles for op in p.ops})},
            "provenance": bundle_provenance(paths + [p for p, _ in used], b.path, b.manifest)}


def _ddp_runs(b: _Bundle, params):
    """Per 1-GPU ddp-step run: a training card, and the 2-GPU observations and profiles the DDP fit takes;
    `params` is the collective model that predicts the 2-GPU all_reduce (None: no observations). A 2-GPU
    record collected with --ddp-paired is predicted from its own processes' plain steps. A run that cannot
    be read is a problem line; the others still give their cards."""
    cards, obs, profiles, sources = {}, [], [], []
    for run in b.runs("ddp-step"):
        try:
            card, run_obs, run_profiles = _ddp_run(b, run, params)
        except DATA_ERRORS as exc:
            b.skip(exc, f"ddp-step/{run['run_id']}")
            continue
        if card is None:
            continue
        cards[f"training-{card['name']}.yaml"] = card
        obs += run_obs
        profiles += run_profiles
        sources.append(b.file(run))
    return cards, obs, profiles, sources


def _ddp_run(b: _Bundle, run: dict, params):
    """(training card or None, observations, overlap profiles) of one ddp-step run."""
    from simcluster.cards import training_card
    from simcluster.collectives.model import predict
    from simcluster.fit.training import Observation
    from simcluster.training import workload as W

    stdout = b.file(run)
    rdir = stdout.parent
    b.file(run, "profiler-traces/profile-summary.json")          # a summary outside the bundle is refused
    records = W.read_runs(stdout)
    single = [r for r in records if r["world_size"] == 1]
    if not single:
        return None, [], []
    one = single[0]
    gpu = W.profile_gpu_s(rdir, one["model"], one["image"], one["batch_per_gpu"])
    w = W.from_record(one, gpu, str(stdout))
    host = b.manifest.get("host") if isinstance(b.manifest.get("host"), dict) else {}
    gpus = host.get("gpus") if isinstance(host.get("gpus"), list) and host.get("gpus") else [{}]
    gpu_name = gpus[0].get("name", "GPU") if isinstance(gpus[0], dict) else "GPU"
    card = training_card(w, f"{w.model} at {w.image}px, batch {w.batch_per_gpu} per GPU, measured on 1 GPU ({gpu_name}).",
                         bundle_provenance([stdout], b.path, b.manifest))
    try:
        safe_name(f"training-{card['name']}.yaml", "the training card's file name")
    except OutputError as exc:
        raise TraceFormatError(f"model name {w.model!r} cannot name a card file; run not used", where=str(stdout)) from exc
    obs = []
    for r in records:
        if r["world_size"] == 2 and params is not None:
            paired = W.from_paired(r, str(stdout)) if r.get("plain") else w
            obs.append(Observation(f"{b.path.name} {w.model} x2", paired, 2,
                                   lambda s, p=params: predict(p, "all_reduce", s, 2).time_s, r["median_step_s"],
                                   W.paired_ranks(r, str(stdout))))
    return card, obs, W.overlap_samples(rdir, gpu)


def _ddp_card(obs: list, profiles: list, provenance: dict, name: str) -> dict[str, dict]:
    from simcluster.cards import ddp_card
    from simcluster.fit.training import fit_ddp, overlap_slowdown

    if len(obs) < 2:
        return {}
    slowdown = overlap_slowdown(profiles)
    ddp, fit = fit_ddp(obs, slowdown)
    fit["slowdown_from"] = f"{len(profiles)} multi-GPU profiles: median extra compute time / compute-comm overlap"
    fit["fitted_on"] = "2-GPU NVLink step times; 4-GPU and socket runs are held out"
    return {"ddp.yaml": ddp_card(ddp, fit, provenance, name)}


def _nvme(b: _Bundle) -> dict[str, dict]:
    """nvme-local.yaml from the fio runs that parse (each run is one job: queue depth and block size)."""
    runs = b.runs("fio")
    if not runs:
        return {}
    from simcluster.fit.nvme import fit_nvme, nvme_card
    from simcluster.traces import fio

    traces, _ = b.parsed(runs, lambda r: fio.parse(b.file(r)))
    if not traces:
        return {}
    params, info = fit_nvme([res for t in traces for res in t.results])
    return {"nvme-local.yaml": nvme_card(params, f"{b.path.name}-disk", f"Local disk fitted from fio in bundle {b.path.name}.",
                                         info, bundle_provenance([Path(t.path) for t in traces], b.path, b.manifest))}


def _cards(b: _Bundle, comm, op_profile: str | None, pool: list | None) -> dict[str, dict]:
    """Every card of one bundle; a tool whose fit fails is a problem line, the other tools' cards stay."""
    from simcluster.fit.bundle_nic import nic_cards

    cards: dict[str, dict] = {}
    own = None

    def nccl():
        nonlocal own
        found, own = _collective(b, "nccl-tests", op_profile)
        return found

    def training():
        found, obs, profiles, sources = _ddp_runs(b, comm if comm is not None else own)
        if pool is not None:
            pool.append((obs, profiles, sources))
        return found | _ddp_card(obs, profiles, bundle_provenance(sources, b.path, b.manifest), f"{b.path.name}-ddp")

    steps = [("nccl-tests", nccl), ("nccl-tests-socket", lambda: _collective(b, "nccl-tests-socket")[0]),
             ("qperf", lambda: nic_cards(b)), ("fio", lambda: _nvme(b)), ("ddp-step", training), ("gpu-micro", lambda: _gpu(b))]
    for name, step in steps:
        try:
            cards |= step()
        except SimclusterError as exc:
            b.problems.append(f"{name}: {exc.one_line()}")
    if b.runs("qperf-sizes"):
        b.problems.append("qperf-sizes: a message-size sweep is fitted across bundles, not here: python -m "
                          "simcluster.fit.host_stack BUNDLE [BUNDLE ...] (docs/models/nic-and-cpu.md)")
    return cards


def _gpu(b: _Bundle) -> dict[str, dict]:
    """gpu-micro -> gpu-<card name>.yaml (simcluster.fit.gpu.bundle_cards)."""
    from simcluster.fit.gpu import bundle_cards

    return bundle_cards(b.path, b.ok_runs, b.manifest, b.problems)


def _comm_params(comm_card: str | Path | None):
    if comm_card is None:
        return None
    from simcluster.cards import load_collective

    if not Path(comm_card).is_file():
        raise SimclusterError(f"--collective-card {comm_card}: no such card file")
    return load_collective(comm_card)[0]


def _documents(cards: dict[str, dict], prefix: str = "") -> dict[str, str]:
    from simcluster.cards import dump_card

    return {prefix + name: dump_card(card) for name, card in cards.items()}


def calibrate_bundle(bundle: str | Path, comm_card: str | Path | None = None, ddp_pool: list | None = None,
                     op_profile: str | None = None) -> Calibration:
    """One bundle's cards (not written) and one line per input that could not be used. `comm_card`: the
    collective card for the 2-GPU all_reduce of the DDP fit (default: the bundle's own nccl-tests card).
    `ddp_pool` collects the bundle's DDP observations for a fit across bundles (calibrate_bundles)."""
    b = _Bundle(Path(bundle))
    cards = _cards(b, _comm_params(comm_card), op_profile, ddp_pool)
    return Calibration(_documents(cards), tuple(b.problems))


def calibrate_bundles(bundles: list[str | Path], comm_card: str | Path | None = None,
                      op_profile: str | None = None) -> Calibration:
    """One bundle: calibrate_bundle. Several (repeats of one machine type): each bundle's cards under
    <bundle folder name>/, and one DDP card (ddp.yaml) fitted on the 2-GPU steps of all of them. `comm_card`:
    the collective card for the 2-GPU all_reduce (default: each bundle's own nccl-tests card). `op_profile`: an
    op-profile file (another machine of the kind) that the nccl-tests cards carry."""
    if len(bundles) == 1:
        return calibrate_bundle(bundles[0], comm_card, op_profile=op_profile)
    comm = _comm_params(comm_card)
    names = [safe_name(Path(x).resolve().name, "bundle folder") for x in bundles]
    if len(set(names)) < len(names):
        raise SimclusterError(f"two bundles share the folder name {next(n for n in names if names.count(n) > 1)!r}",
                              hint="their cards would go to one subfolder; rename one")
    documents, problems, pool = {}, [], []
    for path, name in zip(map(Path, bundles), names, strict=True):
        b = _Bundle(path)
        documents |= _documents(_cards(b, comm, op_profile, pool), f"{name}/")
        problems += [f"{name}: {line}" for line in b.problems]
    obs, profiles, sources = ([x for part in pool for x in part[i]] for i in range(3))
    provenance = {**bundle_provenance(sources, [Path(b) for b in bundles], None), "collective_card": str(comm_card) if comm_card else None}
    parents = {Path(b).resolve().parent for b in bundles}
    name = (parents.pop().name if len(parents) == 1 else Path(bundles[0]).name) + "-pooled-ddp"
    try:
        documents |= _documents(_ddp_card(obs, profiles, provenance, name))
    except SimclusterError as exc:
        problems.append(f"pooled ddp: {exc.one_line()}")
    return Calibration(documents, tuple(problems))
