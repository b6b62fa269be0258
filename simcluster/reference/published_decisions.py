"""NCCL_DEBUG=INFO logs other people posted, against the decision model (collectives/nccl_tuner.py): part of
`simcluster validate --decisions FOLDER`.

Each folder calibration/published/nccl-decisions-<system>/ holds the log lines as posted (traces/nccl_info.py reads
them) and source.yaml: the citation, the system as the post states it (null = not stated), which log ran which
collective, and the NCCL_ALGO / NCCL_PROTO that force a choice (a forced choice is not a decision to check; the post's
system.env must agree with it, and the log's own NVLS line with system.nvls, else a one-line error). Every
fact a log states becomes a row: the model's answer for the communicator the log and the post describe, agree or
disagree, or not compared with the reason (a topology input the post does not give, a forced choice). The model
follows NCCL 2.28; a log of another or an unstated NCCL version says so on every row and is counted apart.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from simcluster import documents
from simcluster.collectives.nccl_constants import ALGORITHMS, PROTOCOLS, TUNED_OPS
from simcluster.errors import SimclusterError
from simcluster.published import flag, one_of, text
from simcluster.results import DecisionFact, PublishedDecisionLog
from simcluster.strict import field, known_keys, load_yaml, short

KIND = "published-nccl-decisions"
MODEL_VERSION = "2.28"
ESTIMATE_TOLERANCE = 0.005          # NCCL prints its estimate to 1e-6 us; the model reproduces a right one to ~1e-5
SOURCE_KEYS = {"kind", "citation", "system", "logs", "notes", "simcluster"}
SYSTEM_KEYS = {"gpu", "arch", "gpus_per_node", "nodes", "nvlink_links", "nics_per_node", "nic_rate", "cpu_vendor", "nvls",
               "nccl", "env"}
LOG_KEYS = {"file", "where", "op"}
BLOCK_KEYS = {"held_out", "why", "forced", "note"}
FORCED_NAMES = {"algorithm": ALGORITHMS, "protocol": PROTOCOLS}     # NCCL_ALGO / NCCL_PROTO, each from its own list
FORCING_ENV = {"NCCL_ALGO": "algorithm", "NCCL_PROTO": "protocol"}
# how an older NCCL's rules differ from 2.28.3's (NCCL's git history, src/graph/tuning.cc between the release tags;
# facts, not code): a log of one of these versions is compared with 2.28's rules and counted apart
_NVLS_OLD = "NVLS / NVLS-tree bandwidth min(intra, inter; inter/2 above 2 nodes) x 5/6 (2.28: x NVLS efficiency)"
VERSION_RULES = {
    "2.17": "LL step latencies 0.52 (tree) / 0.47 (ring) us, tree Simple 0 / 28 us, ring Simple network step 9.6 us, "
            "ring LL128 x 0.7 at one GPU per node, no NVLS tree",
    "2.18": "tree Simple base 0 us, ring LL128 x 0.7 at one GPU per node, " + _NVLS_OLD,
    "2.19": "tree Simple base / step 0 / 28 us (2.28: 8.4 / 4 over NVLink, 14 over the network), ring LL128 x 0.7 at "
            "one GPU per node, " + _NVLS_OLD,
    "2.23": "PAT added (busbw x 0.85 in 2.23, 0.75 later), " + _NVLS_OLD,
}
VERSION_RULES.update({v: VERSION_RULES["2.19"] for v in ("2.20", "2.21", "2.22")})
VERSION_RULES.update({v: _NVLS_OLD for v in ("2.24", "2.25", "2.26", "2.27")})


def version_note(version: str) -> str:
    """'' for a log with the model's rules, else what differs (or that the version is not stated)."""
    if version.startswith(MODEL_VERSION + "."):
        return ""
    if not version:
        return "NCCL version not stated: compared with 2.28's rules"
    return f"NCCL {version}: " + VERSION_RULES.get(".".join(version.split(".")[:2]), "rules not compared with 2.28's")


def is_source(path: Path) -> bool:
    return path.name == "source.yaml" and path.parent.name.startswith("nccl-decisions-")


def _optional(system: dict, key: str, where: str, parse):
    """system[key] parsed, None when the post does not state it (null or absent)."""
    return None if system.get(key) is None else field(system, key, where, parse)


def _system(system: dict, where: str) -> dict:
    """The source's system block, every value checked (a one-line error at the key otherwise)."""
    from simcluster.collectives.nccl_constants import ARCHITECTURES, CPU_VENDORS, GPU_ARCH_PREFIXES, arch_of
    from simcluster.strict import count, rate
    from simcluster.units import parse_bandwidth

    gpu, arch = field(system, "gpu", where, text), _optional(system, "arch", where, one_of(ARCHITECTURES))
    try:
        arch_of(gpu, arch)
    except SimclusterError as exc:
        raise SimclusterError(f"key 'gpu': {exc.message}", where=where, hint="a name starting with one of "
                              + ", ".join(p for p, _ in GPU_ARCH_PREFIXES) + ", or give system.arch") from None
    return {"gpu": gpu, "arch": arch,
            "gpus_per_node": field(system, "gpus_per_node", where, lambda v: count(v, 1024)),
            "nodes": field(system, "nodes", where, lambda v: count(v, 131072)),
            "nvlink_links": _optional(system, "nvlink_links", where, lambda v: count(v, 64)),
            "nics_per_node": _optional(system, "nics_per_node", where, lambda v: 0 if v == 0 else count(v, 64)),
            "nic_rate": _optional(system, "nic_rate", where, lambda v: (str(v), rate(parse_bandwidth(v)))),
            "cpu_vendor": _optional(system, "cpu_vendor", where, one_of(CPU_VENDORS)),
            "nvls": _optional(system, "nvls", where, flag), "nccl": _optional(system, "nccl", where, text)}


def _forced(usage: dict, where: str) -> dict:
    """simcluster.forced: the algorithm (one of NCCL's algorithms) and / or protocol (one of its protocols) that
    NCCL_ALGO / NCCL_PROTO pin; null or absent = not forced."""
    where = f"{where}: simcluster.forced"
    forced = known_keys(usage.get("forced") or {}, FORCED_NAMES, where)
    for key, names in FORCED_NAMES.items():
        if forced.get(key) is not None and forced[key] not in names:
            raise SimclusterError(f"key '{key}': {short(forced[key])} is not one of NCCL's {key} names", where=where,
                                  hint="one of " + ", ".join(names))
    return {k: v for k, v in forced.items() if v is not None}


def _pinned(var: str, value, where: str) -> str | None:
    """The one choice an NCCL_ALGO / NCCL_PROTO value pins (NCCL's name, case and '_' ignored: NVLS_TREE = NVLSTree);
    None for a value that pins nothing: a list ('Tree,Ring'), an exclusion ('^LL128') or per-collective ('allreduce:ring')."""
    text = str(value).strip()
    if not text or any(c in text for c in ",^:;"):
        return None
    names = FORCED_NAMES[FORCING_ENV[var]]
    pinned = {n.upper(): n for n in names}.get(text.upper().replace("_", ""))
    if pinned is None:
        raise SimclusterError(f"system.env: {var}={short(text)} names none of NCCL's {FORCING_ENV[var]} names", where=where,
                              hint="one of " + ", ".join(names))
    return pinned


def _check_env(env, forced: dict, where: str) -> None:
    """system.env (as the post states it) and simcluster.forced must agree: an NCCL_ALGO / NCCL_PROTO that pins one choice
    is that forced choice, and a forced choice needs the variable that pins it."""
    if env is None:
        env = {}
    if not isinstance(env, dict):
        raise SimclusterError(f"system.env must be a mapping of variable: value, got {short(env)}", where=where)
    for var, key in FORCING_ENV.items():
        pinned = _pinned(var, env[var], where) if env.get(var) is not None else None
        if pinned != forced.get(key):
            said = f"pins {var}={pinned}" if pinned else f"does not pin {var}"
            raise SimclusterError(f"system.env {said} but simcluster.forced.{key} is {forced.get(key) or 'not set'}",
                                  where=where, hint=f"set simcluster.forced.{key} to what the post's {var} pins (or state the "
                                                    "variable in system.env)")


def restricted_by(env) -> str:
    """The NCCL_ALGO / NCCL_PROTO values that narrow NCCL's choice without pinning one (a list, an exclusion, a
    per-collective value): a per-call choice made under them is not NCCL's free decision ('' when none). An empty
    value is unset, as NCCL reads it (NCCL_ALGO='' restricts nothing)."""
    if not isinstance(env, dict):
        return ""
    said = [f"{var}={short(str(env[var]))}" for var in FORCING_ENV
            if env.get(var) is not None and str(env[var]).strip() and _pinned(var, env[var], "") is None]
    return f"{' and '.join(said)} restricts the choice" if said else ""


def _topology(system: dict, ranks: int, nodes: int):
    """The NcclTopology the post states, and why a multi-node fact cannot be checked ('' when it can)."""
    from simcluster.collectives.nccl_constants import NVLINK_GBPS_PER_LINK, arch_of
    from simcluster.collectives.nccl_search import NcclTopology

    arch = arch_of(system["gpu"], system["arch"])
    links = system["nvlink_links"]
    nvlink = links * NVLINK_GBPS_PER_LINK[arch] * 1e9 if links is not None else None
    nics, rate = system["nics_per_node"], system["nic_rate"]
    missing = ""
    if nodes > 1 and (not nics or rate is None):
        missing, nics, rate = "NIC count or rate not stated", 1, ("-", 1e9)
    topo = NcclTopology(arch, ranks // nodes, nodes, nvlink, int(nics or 0), rate[1] if rate else 0.0,
                        nvls=bool(system["nvls"]), cpu_vendor=system["cpu_vendor"] or "intel")
    return topo, missing


def _describe(topo, system: dict) -> str:
    nic = f", {topo.nics_per_node} x {system['nic_rate'][0]} NICs" if system["nic_rate"] else ""
    nic = ", NICs not stated" if topo.nodes > 1 and not nic else nic
    nvlink = f", {system['nvlink_links']} NVLinks" if system.get("nvlink_links") else ""
    nvls = {True: "on", False: "off", None: "off (not stated)"}[system.get("nvls")]
    cpu = f", CPU {system.get('cpu_vendor') or 'intel (not stated)'}" if topo.nodes > 1 else ""
    return f"{topo.nodes} x {topo.gpus_per_node} {system['gpu']} ({topo.arch}){nvlink}{nic}, NVLS {nvls}{cpu}"


def _fastest(call, where, forced: str, what: str, times: dict) -> str:
    """The choice (an algorithm or a protocol) NCCL would take under `forced`: the fastest the model can price."""
    priced = {k: t for k, t in times.items() if t is not None}
    if not priced:
        raise _unpriced(call, where, forced, what)
    return min(priced, key=priced.get)


def _unpriced(call, where: str, forced: str, free: str) -> SimclusterError:
    """Nothing to compare a call with: the model can run no {free} under what the source says was forced."""
    return SimclusterError(f"line {call.line}: {call.op} at {call.size} B with {forced} forced: the model can run no {free} "
                           "with it", where=where, hint="check simcluster.forced in source.yaml")


def _call_facts(call, topo, forced: dict, missing: str, where: str, restricted: str = "") -> list[DecisionFact]:
    from simcluster.collectives.nccl_tuner import algo_time_s, decide

    size = call.size
    head = f"{call.op} {size} B"
    logged = f"{call.algorithm}/{call.protocol}"
    if missing or restricted:
        return [DecisionFact(f"{head}: algorithm/protocol", call.line, logged, "-", "not compared", missing or restricted)]
    if forced.get("algorithm") and forced.get("protocol"):
        return [DecisionFact(f"{head}: algorithm/protocol", call.line, logged, "-", "not compared",
                             "NCCL_ALGO and NCCL_PROTO force both")]
    out = []
    if forced.get("protocol"):
        proto = forced["protocol"]
        algo = _fastest(call, where, f"NCCL_PROTO={proto}", "algorithm",
                        {a: algo_time_s(topo, call.op, a, proto, size) for a in ALGORITHMS})
        out.append(DecisionFact(f"{head}: algorithm ({proto} forced)", call.line, call.algorithm, algo,
                                "agree" if algo == call.algorithm else "disagree"))
    elif forced.get("algorithm"):
        proto = _fastest(call, where, f"NCCL_ALGO={forced['algorithm']}", "protocol",
                         {p: algo_time_s(topo, call.op, forced["algorithm"], p, size) for p in PROTOCOLS})
        out.append(DecisionFact(f"{head}: protocol ({forced['algorithm']} forced)", call.line, call.protocol, proto,
                                "agree" if proto == call.protocol else "disagree"))
    else:
        d = decide(topo, call.op, size)
        model = f"{d.algorithm}/{d.protocol}"
        out.append(DecisionFact(f"{head}: algorithm/protocol", call.line, logged, model,
                                "agree" if model == logged else "disagree"))
        if call.channels is not None:
            out.append(DecisionFact(f"{head}: channels", call.line, str(call.channels), str(d.channels),
                                    "agree" if d.channels == call.channels else "disagree"))
    if call.time_s is not None:
        t = algo_time_s(topo, call.op, call.algorithm, call.protocol, size)
        if t is None:
            out.append(DecisionFact(f"{head}: NCCL's estimate of {logged}", call.line, f"{call.time_s * 1e6:.3f} us",
                                    "cannot run", "disagree", logged_s=call.time_s))
        else:
            ok = abs(t / call.time_s - 1) <= ESTIMATE_TOLERANCE
            out.append(DecisionFact(f"{head}: NCCL's estimate of {logged}", call.line, f"{call.time_s * 1e6:.3f} us",
                                    f"{t * 1e6:.3f} us", "agree" if ok else "disagree", f"{(t / call.time_s - 1) * 100:+.1f}%",
                                    logged_s=call.time_s, model_s=t))
    return out


def _count_facts(count, topo, log, missing: str) -> DecisionFact:
    from simcluster.collectives.nccl_search import graphs

    if count.what != "coll channels" and not log.nvls_available:
        return DecisionFact(count.what, count.line, str(count.value), "-", "not compared",
                            "the log does not say NVLS is available: NVLS on or off is an input here, not a check")
    if missing:
        return DecisionFact(count.what, count.line, str(count.value), "-", "not compared", missing)
    g = graphs(topo)
    model = {"coll channels": g["coll_channels"], "nvls channels": g["nvls_channels"], "nvls heads": g["NVLS"].channels}[count.what]
    return DecisionFact(count.what, count.line, str(count.value), str(model), "agree" if model == count.value else "disagree")


def compare_source(path: str | Path) -> list[PublishedDecisionLog]:
    """Every log of one published source (its source.yaml), a row per fact."""
    from simcluster.traces import nccl_info

    path = Path(path)
    where = str(path)
    doc = known_keys(load_yaml(path, SimclusterError, "published NCCL log source", schema=documents.PUBLISHED), SOURCE_KEYS,
                     where)
    if field(doc, "kind", where) != KIND:
        raise SimclusterError(f"kind {str(doc['kind'])[:40]!r}, expected {KIND}", where=where)
    citation = field(doc, "citation", where)
    stated = known_keys(field(doc, "system", where), SYSTEM_KEYS, f"{where}: system")
    system = _system(stated, f"{where}: system")
    usage = known_keys(field(doc, "simcluster", where), BLOCK_KEYS, f"{where}: simcluster")
    held = field(usage, "held_out", f"{where}: simcluster")
    forced = _forced(usage, where)
    _check_env(stated.get("env"), forced, where)
    logs = field(doc, "logs", where)
    if not isinstance(held, bool) or not isinstance(citation, dict):
        raise SimclusterError("expected citation a mapping, simcluster.held_out true/false", where=where)
    if not isinstance(logs, list) or not logs:
        raise SimclusterError("logs must be a non-empty list of {file, where, op}", where=where)
    out = []
    for entry in logs:
        entry = known_keys(entry, LOG_KEYS, f"{where}: logs")
        name = field(entry, "file", f"{where}: logs", text)
        if Path(name).name != name:
            raise SimclusterError(f"logs: file {name[:60]!r} must be a file in the source's own folder", where=where)
        op = _optional(entry, "op", f"{where}: logs", one_of(TUNED_OPS))
        log = nccl_info.parse(path.parent / name, op)
        if log.nvls_line is not None and system["nvls"] is not None and log.nvls_line[1] != system["nvls"]:
            raise SimclusterError(f"system.nvls {str(system['nvls']).lower()} contradicts {name} line {log.nvls_line[0]} (NVLS "
                                  f"multicast {'' if log.nvls_line[1] else 'not '}available)", where=where)
        version = log.version or (system["nccl"] or "")
        same = version.startswith(MODEL_VERSION + ".")
        ranks = log.ranks or system["gpus_per_node"] * system["nodes"]
        nodes = log.nodes or system["nodes"]
        if ranks % nodes:
            raise SimclusterError(f"{ranks} ranks do not split evenly over {nodes} nodes", where=log.path)
        topo, missing = _topology(system, ranks, nodes)
        tag = "" if same else f"NCCL {version} rules" if version else "NCCL version unstated"
        restricted = restricted_by(stated.get("env"))
        facts = [f for call in log.calls for f in _call_facts(call, topo, forced, missing, log.path, restricted)]
        facts += [_count_facts(c, topo, log, missing) for c in log.counts]
        facts = [dataclasses.replace(f, note="; ".join(x for x in (f.note, tag) if x)) for f in facts]
        cite = f"{citation.get('url', '')} ({entry.get('where') or ''})".strip()
        label = f"{path.parent.name}/{Path(log.path).name}"
        out.append(PublishedDecisionLog(label, cite, _describe(topo, system), version, same, held, facts,
                                        version_note(version)))
    return out
