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
from pathlib import Path

from simcluster.errors import CalibrationError, SimclusterError, TraceFormatError
from simcluster.files import OutputError, safe_name
from simcluster.fit.bundle_files import DATA_ERRORS, Bundle, bundle_provenance, bundle_source, logs_by_op


@dataclass(frozen=True)
class Calibration:
    """The cards of a calibration (file name under the output folder -> card YAML; with several bundles a
    name starts with its bundle's folder) and one line per input that was skipped, naming it and why."""

    documents: dict[str, str]
    problems: tuple[str, ...]


def _collective(b: Bundle, tool: str, op_profile: str | None = None) -> tuple[dict[str, dict], object]:
    """collective-<tool>.yaml (fit.cards.collective_document, the same builder as for log files) from the bundle's
    all_reduce rounds and its first all_reduce tuning log; op-profile-<tool>.yaml from the other ops; and the model
    as its card stores it (None: no card)."""
    from simcluster.card_document import dump_card
    from simcluster.cards import collective_params
    from simcluster.fit.cards import collective_document
    from simcluster.traces import nccl_tests, nccl_tuning

    logs = logs_by_op(b, tool)
    traces, paths = b.parsed(logs.pop("all_reduce", []), lambda p: nccl_tests.parse(p, op="all_reduce"))
    if not traces:
        return {}, None
    tunings, tuning_paths = b.parsed(logs_by_op(b, tool, "tuning").get("all_reduce", [])[:1], nccl_tuning.parse)
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


def _op_profile(b: Bundle, tool: str, params, traces: list, paths: list[Path],
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


def _ddp_runs(b: Bundle, params):
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


def _ddp_run(b: Bundle, run: dict, params):
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


def _nvme(b: Bundle) -> dict[str, dict]:
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


def _cards(b: Bundle, comm, op_profile: str | None, pool: list | None) -> dict[str, dict]:
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


def _gpu(b: Bundle) -> dict[str, dict]:
    """gpu-micro -> gpu-<card name>.yaml (simcluster.fit.gpu_card.bundle_cards)."""
    from simcluster.fit.gpu_card import bundle_cards

    return bundle_cards(b.path, b.ok_runs, b.manifest, b.problems)


def _comm_params(comm_card: str | Path | None):
    if comm_card is None:
        return None
    from simcluster.cards import load_collective

    if not Path(comm_card).is_file():
        raise SimclusterError(f"--collective-card {comm_card}: no such card file")
    return load_collective(comm_card)[0]


def _documents(cards: dict[str, dict], prefix: str = "") -> dict[str, str]:
    from simcluster.card_document import dump_card

    return {prefix + name: dump_card(card) for name, card in cards.items()}


def calibrate_bundle(bundle: str | Path, comm_card: str | Path | None = None, ddp_pool: list | None = None,
                     op_profile: str | None = None) -> Calibration:
    """One bundle's cards (not written) and one line per input that could not be used. `comm_card`: the
    collective card for the 2-GPU all_reduce of the DDP fit (default: the bundle's own nccl-tests card).
    `ddp_pool` collects the bundle's DDP observations for a fit across bundles (calibrate_bundles)."""
    b = Bundle(Path(bundle))
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
        b = Bundle(path)
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
