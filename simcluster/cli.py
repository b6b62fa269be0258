"""The command line: thin wrappers that parse arguments, call the library and print.

Every SimclusterError is printed as one line, `simcluster: error: ...`, with exit status 2.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import sys
from pathlib import Path

from simcluster import __version__
from simcluster.cards import fitted_sha256
from simcluster.errors import SimclusterError

EXIT_USAGE = 2


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # one line, no usage dump
        raise SimclusterError(f"{self.prog}: {message}", hint="see --help")


def _trace(path: str, op: str | None):
    from simcluster.traces import nccl_tests

    return nccl_tests.parse(path, op=op)


def cmd_parse(args) -> int:
    trace = _trace(args.trace, args.op)
    if args.json:
        print(json.dumps(trace.as_json(), indent=1))
    else:
        print(f"{trace.path}: {trace.tool} {trace.tool_version or ''} NCCL {trace.nccl_version or '?'}, "
              f"{trace.op}, {trace.nranks} ranks on {trace.nodes} node(s), {len(trace.rows)} sizes")
        for warning in trace.warnings:
            print(f"warning: {warning}")
    return 0


def _is_qperf(path: str) -> bool:
    import re

    from simcluster.traces.common import read_text

    return re.search(r"^\s*(tcp|udp|rc|uc|ud|xrc)_[a-z_]+:\s*$", read_text(path), re.M) is not None


def _calibrate_nic(args) -> int:
    from simcluster.cards import dump_card, nic_params_yaml
    from simcluster.fit.nic import detect_transport, fit_nic
    from simcluster.traces import qperf
    from simcluster.units import parse_bandwidth

    if len(args.traces) != 1:
        raise SimclusterError("a NIC card is fitted from one qperf output file", hint="give one file")
    if not args.line_rate:
        raise SimclusterError("--line-rate is required for a NIC card (the port speed, e.g. 100Gbps)")
    trace = qperf.parse(args.traces[0])
    found = detect_transport(trace)
    transport = args.transport or (found[0] if len(found) == 1 else None)
    if transport is None or transport not in found:
        raise SimclusterError(f"choose the transport with --transport (the trace has: {', '.join(found) or 'none'})",
                              where=trace.path)
    params, info = fit_nic(trace, transport, parse_bandwidth(args.line_rate))
    card = {"kind": "nic", "name": args.name or Path(args.output).stem,
            "description": f"{transport.upper()} NIC fitted from qperf {info['bw_test']} and {info['lat_test']}.",
            "params": nic_params_yaml(params),
            "fit": {"measured": {info["bw_test"]: f"{info['bw_Bps'] * 8 / 1e9:.4g}Gbps",
                                 info["lat_test"]: f"{info['latency_s'] * 1e6:.4g}us"}, "notes": info["notes"]},
            "provenance": _provenance([{"path": trace.path, "sha256": trace.sha256, "tool": "qperf",
                                        "commands": trace.commands}])}
    Path(args.output).parent.mkdir(parents=True, exist_ok=True)
    Path(args.output).write_text(dump_card(card))
    print(f"wrote {args.output}: {transport} at {params.wire_limit_Bps * 8 / 1e9:.4g} Gb/s wire limit, "
          f"latency {params.latency_s * 1e6:.3g} us, CPU {params.cpu_s_per_byte * 1e9 * 1e3:.3g} ms/GB")
    return 0


def _provenance(traces: list[dict]) -> dict:
    return {"simcluster_version": __version__,
            "fitted_at": _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"), "traces": traces}


def cmd_calibrate(args) -> int:
    if Path(args.traces[0]).is_dir():
        from simcluster.fit.bundle import calibrate_bundles

        not_dirs = [t for t in args.traces if not Path(t).is_dir()]
        if not_dirs:
            raise SimclusterError(f"{not_dirs[0]}: not a bundle folder", hint="pass bundle folders, or trace files, not both")
        from simcluster.files import write_documents
        from simcluster.runner.collect import EXIT_PARTIAL

        result = calibrate_bundles(args.traces, args.collective_card, args.op_profile)
        for line in result.problems:
            print(f"simcluster: skipped: {line}", file=sys.stderr)
        if not result.documents:
            raise SimclusterError("no card could be fitted from the bundle(s)", where=", ".join(args.traces),
                                  hint="each skipped input is named above" if result.problems else "no traces of a known tool")
        for path in write_documents(args.output, result.documents):
            print(f"wrote {path}")
        return EXIT_PARTIAL if result.problems else 0
    if args.collective_card:
        raise SimclusterError("--collective-card applies to bundle folders only", hint="pass bundle folders")
    if _is_qperf(args.traces[0]):
        return _calibrate_nic(args)
    from simcluster.cards import collective_params_yaml, dump_card
    from simcluster.fit import collective as fit_collective
    from simcluster.fit.profile import with_profile
    from simcluster.fit.validate import summary, validate
    from simcluster.traces.common import sha256_of

    traces = [_trace(path, args.op) for path in args.traces]
    tuning, extra = None, {}
    if args.nccl_log:
        from simcluster.traces import nccl_tuning

        tuning = [nccl_tuning.parse(log) for log in args.nccl_log]
        extra = {"nccl_log": [{"path": log, "sha256": sha256_of(log)} for log in args.nccl_log]}
    params, fit_summary = fit_collective.fit_card(traces, tuning)
    if args.op_profile:
        params = with_profile(params, args.op_profile)
        extra["op_profile"] = {"path": args.op_profile, "sha256": sha256_of(args.op_profile)}
    rows = [r for t in traces for r in validate(params, t)]
    card = {
        "kind": "collective",
        "name": args.name or Path(args.output).stem,
        "description": f"Intra-node collective model fitted from {len(traces)} nccl-tests log(s).",
        "machine": {"devices": sorted(set(d for t in traces for d in t.devices)),
                    "ranks_per_node": max(t.ranks_per_node for t in traces)},
        "params": collective_params_yaml(params),
        "valid_range": {"min_size": f"{min(r.size_bytes for t in traces for r in t.rows)}B",
                        "max_size": f"{max(r.size_bytes for t in traces for r in t.rows)}B",
                        "ranks": sorted({t.nranks for t in traces}), "ops": sorted({t.op for t in traces}),
                        "nodes": 1},
        "fit": {**{k: v for k, v in fit_summary.items() if k != "residuals"},
                "in_sample_error": summary(rows), "residuals": fit_summary["residuals"]},
        "provenance": _provenance([{"path": t.path, "sha256": t.sha256, "tool": t.tool,
                                    "tool_version": t.tool_version, "nccl_version": t.nccl_version,
                                    "op": t.op, "ranks": t.nranks, "sizes": len(t.rows),
                                    "cuda_graph_launches": t.cuda_graph_launches} for t in traces]) | extra,
    }
    from simcluster.files import write_document

    write_document(args.output, dump_card(card))
    s = card["fit"]["in_sample_error"]["sizes_ge_1024B"]
    print(f"wrote {args.output}: {len(rows)} rows, in-sample mean |error| {s['mean_abs_error_pct']}% "
          f"(max {s['max_abs_error_pct']}%) over sizes >= 1 KiB")
    return 0


def cmd_predict_collective(args) -> int:
    from simcluster.build import sizes
    from simcluster.cards import load_collective
    from simcluster.collectives.model import predict
    from simcluster.collectives.schedule import canonical_op
    from simcluster.report.tables import nccl_tests_table
    from simcluster.units import parse_size_arg

    if args.scenario:
        if args.host_launched:
            raise SimclusterError("--host-launched applies to a --card (one node's nccl-tests timing), not to --scenario")
        if args.ranks or args.ranks_per_node:
            raise SimclusterError("--ranks and --ranks-per-node apply to a --card; with --scenario the ranks are the "
                                  "scenario machine's nodes x gpus_per_node")
        return _predict_collective_scenario(args)
    if not args.card or not args.ranks:
        raise SimclusterError("predict collective needs --card and --ranks, or --scenario")
    params, card = load_collective(args.card)
    op = canonical_op(args.op)
    per_node = args.ranks_per_node or args.ranks
    if per_node < args.ranks:
        raise SimclusterError(f"--ranks {args.ranks} over --ranks-per-node {per_node} spans several nodes; "
                              f"card {args.card} models one node's NVLink domain",
                              hint="multi-node fabrics are not modelled yet")
    hosted = args.host_launched
    preds = [predict(params, op, s, args.ranks, host_launch=hosted)
             for s in sizes(parse_size_arg(args.b), parse_size_arg(args.e), args.f)]
    header = [f"simcluster {__version__} prediction: {op}, {args.ranks} ranks, card {card.get('name')} ({args.card})"]
    floor_us = getattr(params, "host_floor_s", 0) * 1e6
    if floor_us:
        timing = "host-launched" if hosted else "GPU time, as nccl-tests -G measures it (--host-launched: plain nccl-tests)"
        header.append(f"note: {timing}; a host-launched call takes at least {floor_us:.1f} us on the calibrated host "
                      "(bimodal: docs/models/collectives.md)")
    header += [f"note: {n}" for n in _card_notes(params, card, op, args.ranks, host_launch=hosted)]
    header.append(f"Collective test starting: {op}_perf")
    header.append("Using devices")
    device = (card.get("machine", {}).get("devices") or ["simulated GPU"])[0]
    header += [f" Rank {r:2d} Group  0 Pid      0 on {'node' + str(r // per_node):>10s} device {r % per_node:2d} "
               f"[0000:00:00] {device}" for r in range(args.ranks)]
    sys.stdout.write(nccl_tests_table(preds, header))
    return 0


def _card_notes(params, card: dict, op: str, ranks: int, host_launch: bool, trace_path: str = "") -> list[str]:
    """What a collective card says about predicting `op` at `ranks`: rank counts it never saw, a missing
    NCCL tuning table, a per-op profile applied or not, and (validate) a log the card or its profile was
    learned from."""
    from simcluster.collectives import primitives
    from simcluster.collectives.profile import matching
    from simcluster.traces.common import sha256_of

    notes = []
    ranks_seen = card.get("valid_range", {}).get("ranks", [])
    if ranks_seen and ranks not in ranks_seen:
        notes.append(f"the card was fitted at ranks {ranks_seen}; {ranks} ranks is an extrapolation")
    if isinstance(params, primitives.PrimitiveParams) and op in primitives.P2P_OPS and not host_launch:
        notes.append("p2p buffers registered, as under CUDA-graph capture (NCCL_GRAPH_REGISTER=1): a Simple call is "
                     "one direct copy; unregistered host-launched calls pipeline through NCCL's FIFO")
    if isinstance(params, primitives.PrimitiveParams) and params.tuner and op not in primitives.P2P_OPS \
            and not primitives.tuner_table(params, ranks):
        notes.append(f"the card has NCCL's tuning table for ranks {sorted(params.tuner)} only; at {ranks} "
                     "ranks the protocol is the model's own choice (calibrate with --nccl-log of that rank count)")
    if host_launch and isinstance(params, primitives.PrimitiveParams) and not params.host_floor_s:
        notes.append("the card has no host launch floor (fitted on CUDA-graph timings only): host-launched calls are "
                     "predicted as GPU time, too fast wherever the host's launch cost dominates")
    profiles = getattr(params, "profiles", ())
    used = matching(profiles, ranks, host_launch)
    for p in profiles:
        state = "applied" if p is used else f"not applied ({p.ranks} ranks, {p.launch})"
        notes.append(f"per-op profile measured on {p.source or 'a reference machine'}: {state}")
    from simcluster.fit.validate import profile_measured_on

    if profile_measured_on(params, ranks, host_launch, trace_path):
        notes.append("this log is part of the profile's own measurement: the errors below are in sample")
    if trace_path and Path(trace_path).is_file() and sha256_of(trace_path) in fitted_sha256(card):
        notes.append("the card was fitted on this log: the errors below are in sample")
    return notes


def _predict_collective_scenario(args) -> int:
    from simcluster import scenario as scenario_mod
    from simcluster.build import build_cluster, sizes
    from simcluster.cards import load_collective
    from simcluster.collectives.fabric import predict_fabric, ring_flows
    from simcluster.collectives.model import predict
    from simcluster.collectives.schedule import canonical_op
    from simcluster.report.tables import nccl_tests_table
    from simcluster.units import parse_size_arg

    sc = scenario_mod.load(args.scenario)
    m = sc.machine
    op = canonical_op(args.op)
    params, card = load_collective(m.card)
    span = sizes(parse_size_arg(args.b), parse_size_arg(args.e), args.f)
    ranks = m.nodes * m.gpus_per_node
    if m.nodes > 1:
        cluster = build_cluster(m, params)
        flows = ring_flows(cluster)
        preds = [predict_fabric(cluster, op, s, args.algorithm, flows) for s in span]
        algos = sorted({p.algorithm for p in preds})
        how = (f"{m.nodes} nodes x {m.gpus_per_node} GPUs, {m.nic.per_node} NICs/node ({m.nic.card.name}), "
               f"{m.fabric.kind}, algorithm {'/'.join(algos)}; network {flows.node_rate_Bps / 1e9:.1f} GB/s per node, "
               f"ECMP collisions {flows.ecmp_collisions}")
    else:
        preds = [predict(params, op, s, ranks) for s in span]
        how = f"1 node x {m.gpus_per_node} GPUs"
    header = [f"simcluster {__version__} prediction: {op}, {ranks} ranks, scenario {sc.name} ({args.scenario})", how,
              f"Collective test starting: {op}_perf", "Using devices"]
    device = (card.get("machine", {}).get("devices") or ["simulated GPU"])[0]
    header += [f" Rank {r:2d} Group  0 Pid      0 on {'node' + str(r // m.gpus_per_node):>10s} device "
               f"{r % m.gpus_per_node:2d} [0000:00:00] {device}" for r in range(ranks)]
    sys.stdout.write(nccl_tests_table(preds, header))
    return 0


def cmd_predict_training(args) -> int:
    from simcluster.report.tables import training_table
    from simcluster.scenario import TrainingJob, load_variants
    from simcluster.training.predict import perfetto_trace, predict_training

    variants = load_variants(args.scenario, nodes=args.nodes)
    results = []
    for label, sc in variants:
        jobs = [j for j in sc.jobs if isinstance(j, TrainingJob)]
        if not jobs:
            raise SimclusterError("the scenario has no 'kind: training' job", where=args.scenario)
        results += [(label, sc, predict_training(sc.machine, j)) for j in jobs]
    if args.trace:
        from simcluster.files import write_document

        write_document(args.trace, json.dumps(perfetto_trace(results[0][2])))
    if args.json:
        out = [{**({"variant": label} if label else {}), **p.as_json()} for label, _, p in results]
        print(json.dumps(out[0] if len(out) == 1 else out, indent=1))
        return 0
    print(f"scenario {variants[0][1].name}: {variants[0][1].description}".rstrip(": "))
    for label, _, p in results:
        if label:
            print(f"\n== variant {label}")
        sys.stdout.write(training_table(p))
    if args.trace:
        print(f"timeline: {args.trace} (open in https://ui.perfetto.dev)")
    return 0


def _validate_qperf(args) -> int:
    from simcluster.build import run_scenario
    from simcluster.scenario import load
    from simcluster.traces import qperf

    if not args.scenario:
        raise SimclusterError("validating a qperf trace needs --scenario (a scenario with a 'kind: qperf' job)")
    trace = qperf.parse(args.trace)
    preds = [r for r in run_scenario(load(args.scenario)) if "qperf" in r]
    if not preds:
        raise SimclusterError("the scenario has no 'kind: qperf' job", where=args.scenario)
    rows = []
    for test, predicted in preds[0]["qperf"].items():
        found = [t for t in trace.tests if t.name == test and t.error is None]
        if not found:
            continue
        measured = found[-1].get("bw" if test.endswith("_bw") else "latency")
        rows.append({"test": test, "measured": measured, "predicted": predicted, "error_pct": (predicted / measured - 1) * 100})
    if not rows:
        raise SimclusterError("no test of the scenario's qperf job is in the trace", where=args.trace)
    if args.json:
        print(json.dumps({"trace": args.trace, "scenario": args.scenario, "rows": rows}, indent=1))
        return 0
    for r in rows:
        unit, scale = ("MB/s", 1e-6) if r["test"].endswith("_bw") else ("us", 1e6)
        print(f"{r['test']:>8}  measured {r['measured'] * scale:9.2f} {unit}  predicted {r['predicted'] * scale:9.2f} {unit}  "
              f"error {r['error_pct']:+6.1f}%")
    return 0


def cmd_validate(args) -> int:
    if Path(args.trace).is_dir():
        return _validate_bundle(args)
    if _is_qperf(args.trace):
        return _validate_qperf(args)
    from simcluster.cards import load_collective
    from simcluster.fit.validate import summary, validate
    from simcluster.report.tables import validation_table

    if not args.card:
        raise SimclusterError("validating an nccl-tests log needs --card")
    params, card = load_collective(args.card)
    trace = _trace(args.trace, args.op)
    rows = validate(params, trace)
    stats = summary(rows)
    if args.plot:
        from simcluster.report.plots import validation_plot

        validation_plot(rows, f"{trace.op}, {trace.nranks} ranks: measured vs {card.get('name')}", args.plot)
    if args.json:
        print(json.dumps({"trace": trace.path, "card": args.card, "op": trace.op, "ranks": trace.nranks,
                          "summary": stats,
                          "rows": [{"size_B": r.size_bytes, "measured_us": r.measured_s * 1e6,
                                    "predicted_us": r.predicted_s * 1e6, "error_pct": r.error * 100,
                                    "protocol": r.protocol} for r in rows]}, indent=1))
        return 0
    print(f"# {trace.op}, {trace.nranks} ranks: {trace.path} vs card {card.get('name')} ({args.card})")
    for note in _card_notes(params, card, trace.op, trace.nranks, not trace.cuda_graph_launches, trace.path):
        print(f"# note: {note}")
    sys.stdout.write(validation_table(rows))
    for label, s in stats.items():
        print(f"# {label}: {s['sizes']} sizes, mean |error| {s['mean_abs_error_pct']}%, max {s['max_abs_error_pct']}%")
    return 0


def _validate_bundle(args) -> int:
    """Every collective of a trace bundle against one card: a line per op (median of its rounds), which ops the
    card was fitted on (in sample) and which it never saw (held out)."""
    from simcluster.cards import load_collective
    from simcluster.fit.bundle import timing_logs
    from simcluster.fit.validate import summary, validate_logs

    if not args.card:
        raise SimclusterError("validating a trace bundle needs --card")
    params, card = load_collective(args.card)
    logs = timing_logs(args.trace)
    if args.op:
        from simcluster.collectives.schedule import canonical_op

        logs = {op: paths for op, paths in logs.items() if op == canonical_op(args.op)}
        if not logs:
            raise SimclusterError(f"--op {args.op}: the bundle has no timing runs of it", where=args.trace)
    results, skipped = validate_logs(params, logs, fitted_sha256(card))
    scored = [(r, summary(r.rows), r.basis) for r in results]
    if args.plot and results:
        from simcluster.report.plots import bundle_validation_plot

        bundle_validation_plot([(f"{r.op}, {r.ranks} ranks, {'graph' if r.cuda_graph else 'host'}", r.rows)
                                for r in results], f"{Path(args.trace).name} vs {card.get('name')}", args.plot)
    if args.json:
        print(json.dumps({"bundle": args.trace, "card": args.card, "skipped": skipped, "ops": [
            {"op": r.op, "ranks": r.ranks, "cuda_graph": r.cuda_graph, "rounds": r.rounds,
             "in_sample": basis != "held out", "basis": basis, "summary": stats, "rows": [{"size_B": row.size_bytes, "measured_us": row.measured_s * 1e6,
                                         "predicted_us": row.predicted_s * 1e6, "error_pct": row.error * 100,
                                         "protocol": row.protocol} for row in r.rows]}
            for r, stats, basis in scored]}, indent=1))
    else:
        print(f"# bundle {args.trace} vs card {card.get('name')} ({args.card}); each op the median of its rounds")
        print(f"# {'op':>14}  {'ranks':>5}  {'timing':>6}  {'rounds':>6}  {'sizes':>5}  {'mean |error|':>12}  "
              f"{'max |error|':>11}  (sizes >= 1 KiB)")
        notes: list[str] = []
        for r, stats, basis in scored:
            s = stats["sizes_ge_1024B"]
            mean, worst = (f"{s[k]:.2f}%" if s[k] is not None else "-" for k in ("mean_abs_error_pct",
                                                                                 "max_abs_error_pct"))
            print(f"  {r.op:>14}  {r.ranks:>5}  {'graph' if r.cuda_graph else 'host':>6}  {r.rounds:>6}  "
                  f"{s['sizes']:>5}  {mean:>12}  {worst:>11}  {basis}")
            notes += [n for n in _card_notes(params, card, r.op, r.ranks, not r.cuda_graph) if n not in notes]
        for note in notes:
            print(f"# note: {note}")
    for line in skipped:
        print(f"simcluster: skipped {line}", file=sys.stderr)
    if not results:
        raise SimclusterError("no collective of the bundle could be validated", where=args.trace)
    return 3 if skipped else 0


def _job_json(r: dict) -> dict:
    if "concurrent" in r:
        return {"kind": "concurrent", "op": r["job"].op, "size_B": r["job"].size_bytes, "jobs": [
            {"nodes": j["nodes"], "time_alone_s": j["alone"].time_s, "time_shared_s": j["shared"].time_s,
             "slowdown": j["shared"].time_s / j["alone"].time_s, "algorithm": j["shared"].algorithm,
             "network_alone_Bps": j["network_alone_Bps"], "network_shared_Bps": j["network_shared_Bps"],
             "ecmp_collisions": j["ecmp_collisions"]} for j in r["concurrent"]]}
    if "qperf" in r:
        return {"kind": "qperf", "nic_card": r["nic_card"], "predicted": r["qperf"]}
    if "training" in r:
        return {"kind": "training", **r["training"].as_json()}
    out = {"op": r["job"].op, "ranks": r["job"].ranks, "engine": r["job"].engine, "card": r["card"],
           "rows": [{"size_B": p.size_bytes, "time_s": p.time_s, "algbw_Bps": p.algbw_Bps,
                     "busbw_Bps": p.busbw_Bps, "protocol": p.protocol} for p in r["predictions"]]}
    if "measured" in r:
        from simcluster.fit.validate import summary

        m = r["measured"]
        out["measured"] = None if m is None else {
            "source": str(r["job"].measured), "cuda_graph": m.cuda_graph, "rounds": m.rounds,
            "basis": m.basis, "summary": summary(m.rows),
            "rows": [{"size_B": row.size_bytes, "measured_s": row.measured_s, "predicted_s": row.predicted_s,
                      "error_pct": row.error * 100} for row in m.rows]}
    return out


def cmd_run(args) -> int:
    from simcluster.build import run_scenario
    from simcluster.report.tables import sweep_table, training_table
    from simcluster.scenario import load_variants

    variants = [(label, sc, run_scenario(sc)) for label, sc in load_variants(args.scenario)]
    first = variants[0][1]
    skipped = [line for _, _, results in variants for r in results for line in r.get("measured_skipped", [])]
    for line in skipped:
        print(f"simcluster: skipped {line}", file=sys.stderr)
    if args.json:
        print(json.dumps({"scenario": first.name, "seed": first.seed, "variants": [
            {"variant": label, "jobs": [_job_json(r) for r in results]} for label, _, results in variants]}
            if len(variants) > 1 or variants[0][0] else
            {"scenario": first.name, "seed": first.seed, "jobs": [_job_json(r) for r in variants[0][2]]}, indent=1))
        return 3 if skipped else 0
    print(f"scenario {first.name}: {first.description}".rstrip(": "))
    for label, _, results in variants:
        if label:
            print(f"\n== variant {label}")
        for r in results:
            if "concurrent" in r:
                job = r["job"]
                print(f"\n{len(r['concurrent'])} concurrent {job.op} jobs of {job.size_bytes / 2**20:.0f} MiB")
                for j in r["concurrent"]:
                    a, sh = j["alone"], j["shared"]
                    print(f"  nodes {j['nodes'][0]}..{j['nodes'][-1]} ({len(j['nodes'])}): alone {a.time_s * 1e3:.3f} ms, "
                          f"together {sh.time_s * 1e3:.3f} ms (x{sh.time_s / a.time_s:.2f}), {sh.algorithm}; network "
                          f"{j['network_alone_Bps'] / 1e9:.1f} -> {j['network_shared_Bps'] / 1e9:.1f} GB/s per node, "
                          f"ECMP collisions {j['ecmp_collisions']}")
                continue
            if "qperf" in r:
                from simcluster.hardware.qperf_model import qperf_text

                print(f"\nqperf predicted from NIC card {r['nic_card']}:")
                sys.stdout.write(qperf_text(r["qperf"]))
                continue
            if "training" in r:
                sys.stdout.write(training_table(r["training"]))
                continue
            job = r["job"]
            print(f"\n{job.op} on {job.ranks} ranks ({job.engine} engine), card {r['card_name']} ({r['card']})")
            measured = r.get("measured")
            sys.stdout.write(sweep_table(r["predictions"], {row.size_bytes: row.measured_s for row in measured.rows}
                                         if measured else None))
            if "measured" in r:
                print(_measured_line(r))
    return 3 if skipped else 0


def _measured_line(r: dict) -> str:
    """Where the measured column comes from, its error over every measured size >= 1 KiB, in sample or not."""
    from simcluster.fit.validate import summary

    job, m = r["job"], r["measured"]
    if m is None:
        return f"# measured: {job.measured} has no {job.op} at {job.ranks} ranks"
    stats = summary(m.rows)["sizes_ge_1024B"]
    return (f"# measured: {job.measured}, {'CUDA graphs' if m.cuda_graph else 'host-launched'}, median of {m.rounds} "
            f"round(s); over its {stats['sizes']} sizes >= 1 KiB mean |error| {stats['mean_abs_error_pct']:.2f}%, "
            f"max {stats['max_abs_error_pct']:.2f}%; {m.basis}")


def _storage_setup(args):
    import dataclasses

    from simcluster.cards import load_nvme
    from simcluster.storage import dlio_workload
    from simcluster.storage.loader import LoaderConfig
    from simcluster.units import parse_bandwidth, parse_size

    w = dlio_workload.load(args.workload)
    if args.accelerator:
        key = (w.model, args.accelerator.lower())
        if key not in dlio_workload.COMPUTE_TIME_S:
            known = sorted(f"{m}/{a}" for m, a in dlio_workload.COMPUTE_TIME_S)
            raise SimclusterError(f"--accelerator {args.accelerator}: no published compute time for {w.model}",
                                  hint=f"known: {', '.join(known)}")
        w = dataclasses.replace(w, computation_time_s=dlio_workload.COMPUTE_TIME_S[key])
    nvme, card = load_nvme(args.nvme)
    config = LoaderConfig(io_size=int(parse_size(args.io_size)), depth=args.depth, steps=args.steps,
                          thread_read_Bps=parse_bandwidth(args.thread_rate) if args.thread_rate else None,
                          cores=args.cores)
    return w, nvme, card, config


def cmd_storage(args) -> int:
    from simcluster.storage import loader
    from simcluster.storage.report import figures, qd_stats, throughput_stats

    w, nvme, card, config = _storage_setup(args)
    if args.action == "max-accelerators":
        best, tried = loader.max_accelerators(w, nvme, args.drives, config, seed=args.seed)
        out = {"workload": w.path, "nvme": card.get("name"), "drives": args.drives,
               "au_threshold_percent": w.au_threshold * 100,
               "accelerators": best.accelerators if best else 0,
               "throughput_MiB_per_s": best.throughput_MiB_per_s if best else 0.0,
               "au_percent": best.au_percent if best else 0.0,
               "tried": [{"accelerators": r.accelerators, "au_percent": round(r.au_percent, 2),
                          "throughput_MiB_per_s": round(r.throughput_MiB_per_s, 1)} for r in tried]}
        if args.json:
            print(json.dumps(out, indent=1))
            return 0
        print(f"{w.model} ({w.path}) on {args.drives} x {card.get('name')}: AU threshold {w.au_threshold:.0%}")
        for r in out["tried"]:
            print(f"  {r['accelerators']:5d} accelerators  AU {r['au_percent']:6.2f}%  {r['throughput_MiB_per_s']:9.1f} MiB/s")
        print(f"max accelerators: {out['accelerators']} at {out['throughput_MiB_per_s']:.1f} MiB/s, AU {out['au_percent']:.2f}%")
        return 0
    r = loader.simulate(w, nvme, args.accelerators, args.drives, config, seed=args.seed)
    out = {"accelerators": r.accelerators, "drives": r.drives, "steps": r.steps, "au_percent": r.au_percent,
           "throughput_samples_per_s": r.throughput_samples_per_s, "throughput_MiB_per_s": r.throughput_MiB_per_s,
           "storage_stall_per_step_s": r.stall_per_step_s, "queue_depth": qd_stats(r),
           "device_throughput": throughput_stats(r), "latency_s": r.logs[0].latency_percentiles()}
    if args.plot_dir:
        out["figures"] = figures(r, args.plot_dir, f"{w.model}-{args.accelerators}acc")
    print(json.dumps(out, indent=1))
    return 0


def _csv(text: str | None) -> list[str]:
    return [x.strip() for x in (text or "").split(",") if x.strip()]


def cmd_collect(args) -> int:
    import dataclasses

    from simcluster.runner import collect, plans

    tools = _csv(args.tools) or ["qperf", "perf-stat", "fio"]
    gt = {}
    if args.lab:
        from simcluster.runner import netlab

        lab = netlab.up(args.lab_rate, args.lab_delay)
        gt = lab.ground_truth
    options = plans.Options(
        hosts=_csv(args.hosts), nccl_tests=args.nccl_tests, ops=tuple(_csv(args.ops) or ["all_reduce"]), gpus=args.gpus,
        min_size=args.b, max_size=args.e, nccl_iters=args.nccl_iters, nccl_warmup=args.nccl_warmup,
        nccl_repeat=args.nccl_repeat, nccl_graph=args.nccl_graph, nccl_tuning=args.nccl_tuning,
        nccl_register=args.nccl_register, qperf_host=args.qperf_host or (gt.get("server")),
        qperf_time=args.qperf_time, qperf_repeat=args.qperf_repeat,
        pin=args.lab or args.pin, server_netns=gt.get("server_netns"), client_netns=gt.get("client_netns"),
        fio_dir=args.fio_dir, fio_size=args.fio_size, fio_runtime=args.fio_runtime, dlio=args.dlio,
        dlio_workload=args.dlio_workload, dlio_accelerators=tuple(int(x) for x in _csv(args.dlio_accelerators) or [1]),
        dlio_overrides=tuple(args.dlio_override or ()), dlio_cold_cache=not args.dlio_warm_cache,
        ddp_models=tuple(_csv(args.ddp_models) or ["resnet18:32:128"]), ddp_paired=args.ddp_paired,
        gpu_micro_quick=args.gpu_micro_quick, llm_presets=tuple(_csv(args.llm_presets) or plans.Options.llm_presets),
        llm_shapes=args.llm_shapes, llm_modes=tuple(_csv(args.llm_modes) or ["single"]), llm_steps=args.llm_steps,
        timeout_s=args.timeout, ground_truth=gt)
    steps = plans.plan(tools, options, Path(args.out))

    def progress(entry):
        print(f"{entry['tool']:>18} {entry['run_id']:<24} {entry['status']:<8} {entry.get('wall_s', 0):7.1f} s",
              flush=True)

    try:
        manifest, code = collect.collect(args.out, steps, tools, dataclasses.asdict(options), progress)
    finally:
        if args.lab:
            from simcluster.runner import netlab

            netlab.down()
    for scratch in ("fio/data", "dlio/data"):  # test files and datasets, not traces
        if (Path(args.out) / scratch).is_dir() and not (scratch == "fio/data" and args.fio_dir):
            import shutil

            shutil.rmtree(Path(args.out) / scratch)
    bad = [r for r in manifest["runs"] if r["status"] != "ok"]
    print(f"bundle {args.out}: {len(manifest['runs']) - len(bad)} runs ok, {len(bad)} not ({manifest['status']})")
    for r in bad:
        print(f"  {r['tool']}/{r['run_id']}: {r['status']}: {(r.get('stderr_tail') or '').splitlines()[-1:]}")
    return code


def cmd_lab(args) -> int:
    from simcluster.runner import netlab

    if args.action == "down":
        netlab.down()
        print("lab removed")
        return 0
    lab = netlab.up(args.rate, args.delay)
    print(json.dumps(lab.ground_truth))
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="simcluster", description="Discrete-event simulator of AI training clusters, "
                     "calibrated from real traces.")
    parser.add_argument("--version", action="version", version=f"simcluster {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    p = sub.add_parser("parse", help="show what the nccl-tests parser reads from a log")
    p.add_argument("trace", help="an nccl-tests log (text or -J JSON)")
    p.add_argument("--op", help="the collective, when the log does not say")
    p.add_argument("--json", action="store_true", help="print every row the parser read, as JSON")
    p.set_defaults(func=cmd_parse)

    p = sub.add_parser("calibrate", help="fit a model card: collective (nccl-tests logs of one machine) or NIC (qperf)")
    p.add_argument("traces", nargs="+", metavar="TRACE",
                   help="nccl-tests logs of one machine, a qperf output, or a trace bundle folder from 'collect'")
    p.add_argument("--line-rate", help="NIC cards: the port speed, e.g. 100Gbps")
    p.add_argument("--transport", choices=("rdma", "tcp"), help="NIC cards: which qperf tests to fit")
    p.add_argument("-o", "--output", required=True, metavar="CARD.yaml",
                   help="the model card to write (a folder of cards for a bundle)")
    p.add_argument("--name", help="the card's name (default: the output file's stem)")
    p.add_argument("--op", help="the collective, when the logs do not say")
    p.add_argument("--collective-card", metavar="CARD", help="bundles: the collective card for the 2-GPU all_reduce "
                   "of the DDP fit (default: each bundle's own nccl-tests card)")
    p.add_argument("--nccl-log", metavar="LOG", action="append",
                   help="collective cards: an NCCL_DEBUG_SUBSYS=TUNING log of the same machine, one per rank count "
                   "(repeat the option); fits the NCCL-primitives model with NCCL's own protocol choice (else the "
                   "chunked ring model)")
    p.add_argument("--op-profile", metavar="PROFILE.yaml",
                   help="collective cards: a per-op profile measured on another machine of the same kind "
                   "(op-profile-*.yaml from 'simcluster calibrate BUNDLE'); the card predicts every op as its "
                   "all_reduce-fitted model times that profile, at the profile's rank count and launch mode")
    p.set_defaults(func=cmd_calibrate)

    p = sub.add_parser("predict", help="predict with a calibrated model")
    what = p.add_subparsers(dest="what", required=True, parser_class=_Parser)
    c = what.add_parser("collective", help="an nccl-tests-style sweep of one collective")
    c.add_argument("--card", help="a collective card (one node); or use --scenario")
    c.add_argument("--scenario", help="a scenario whose machine (cards, nodes, NICs, fabric) runs the collective")
    c.add_argument("--algorithm", choices=("ring", "tree", "hierarchical", "in-network", "nvls-tree"),
                   help="force a multi-node algorithm (default: the fastest, as NCCL's tuner)")
    c.add_argument("--op", required=True, help="all_reduce, all_gather, reduce_scatter, broadcast, reduce, sendrecv, "
                   "alltoall (nccl-tests' names also work)")
    c.add_argument("--ranks", type=int, help="GPUs taking part (with --card; a --scenario uses all its GPUs)")
    c.add_argument("--ranks-per-node", type=int, help="GPUs per node (default: --ranks, one node)")
    c.add_argument("-b", default="8", help="min size (nccl-tests suffixes: 8, 1K, 1M, 8G)")
    c.add_argument("-e", default="128M", help="max size")
    c.add_argument("-f", type=int, default=2, help="size factor")
    c.add_argument("--host-launched", action="store_true",
                   help="calls launched from the host, buffers unregistered (plain nccl-tests): the card's host launch "
                        "floor applies and p2p calls pipeline through NCCL's FIFO (default: CUDA graphs, nccl-tests -G)")
    c.set_defaults(func=cmd_predict_collective)
    t = what.add_parser("training", help="a data-parallel training job: step time, speedup, breakdown")
    t.add_argument("--scenario", required=True, help="a scenario YAML with a 'kind: training' job")
    t.add_argument("--json", action="store_true", help="print the result as JSON")
    t.add_argument("--nodes", type=int, help="override the machine's node count (what-if scaling)")
    t.add_argument("--trace", metavar="FILE.json", help="write a Chrome/Perfetto timeline of the step")
    t.set_defaults(func=cmd_predict_training)

    p = sub.add_parser("validate", help="predicted vs measured: an nccl-tests log (--card) or a qperf output (--scenario)")
    p.add_argument("trace", help="a measured nccl-tests log or qperf output, or a trace bundle folder (every "
                   "collective in it, a line each)")
    p.add_argument("--card", help="nccl-tests logs: the collective card to predict them with")
    p.add_argument("--scenario", help="qperf traces: a scenario with a 'kind: qperf' job")
    p.add_argument("--op", help="the collective, when the log does not say")
    p.add_argument("--json", action="store_true", help="print the rows and the summary as JSON")
    p.add_argument("--plot", metavar="FILE.png", help="draw measured and predicted busbw against size")
    p.set_defaults(func=cmd_validate)

    p = sub.add_parser("collect", help="run the real tools and write a trace bundle")
    p.add_argument("--out", required=True, metavar="DIR", help="the bundle folder to write (traces + manifest.json)")
    p.add_argument("--tools", help="comma-separated: nccl-tests, nccl-tests-socket, qperf, perf-stat, fio, dlio, ddp-step, "
                   "gpu-micro, llm-step (default: qperf,perf-stat,fio)")
    p.add_argument("--hosts", help="comma-separated hosts; the first runs the clients (mpirun hostfile, ssh qperf server)")
    p.add_argument("--nccl-tests", metavar="DIR", help="folder of nccl-tests *_perf binaries (else torch.distributed)")
    p.add_argument("--ops", help="collectives for nccl-tests (default all_reduce)")
    p.add_argument("--gpus", type=int, default=0, help="GPUs per host (default: all)")
    p.add_argument("-b", default="8", help="nccl-tests -b: smallest size (default %(default)s)")
    p.add_argument("-e", default="128M", help="nccl-tests -e: largest size (default %(default)s)")
    p.add_argument("--nccl-iters", type=int, default=20, help="nccl-tests -n: timed iterations per size")
    p.add_argument("--nccl-warmup", type=int, default=1, help="nccl-tests -w: warm-up iterations per size")
    p.add_argument("--nccl-graph", type=int, default=0, metavar="N", help="nccl-tests -G N: time the loop as a "
                   "CUDA graph replayed N times (no host launch cost in the time)")
    p.add_argument("--nccl-register", type=int, default=0, choices=(0, 1, 2), help="nccl-tests -R: 1 registers the "
                   "send and receive buffers (ncclCommRegister), 2 symmetric registration; CUDA graphs register "
                   "them anyway (at 2 x H200 it makes all_gather 13%% and alltoall 8%% faster)")
    p.add_argument("--nccl-repeat", type=int, default=1, help="rounds over all ops; calibration takes the median per size")
    p.add_argument("--nccl-tuning", action="store_true", help="one more run per op logging NCCL's algorithm, "
                   "protocol and channels per size (NCCL_DEBUG_SUBSYS=INIT,TUNING)")
    p.add_argument("--qperf-host", help="qperf server address (default: 127.0.0.1, or the second host)")
    p.add_argument("--qperf-time", type=int, default=5, help="qperf -t: seconds per test (default %(default)s)")
    p.add_argument("--qperf-repeat", type=int, default=3, help="qperf client runs; calibration takes the median")
    p.add_argument("--pin", action="store_true", help="pin the qperf client and a local server to CPU 0 "
                   "(no cross-CPU wakeups: steadier latency on small VMs; on with --lab)")
    p.add_argument("--lab", action="store_true", help="run qperf between two network namespaces shaped by tc (root)")
    p.add_argument("--lab-rate", default="400mbit", help="the lab's tc rate, tc units (default %(default)s)")
    p.add_argument("--lab-delay", help="one-way delay for the lab, e.g. 10ms (a userspace delay line)")
    p.add_argument("--fio-dir", help="folder on the disk to measure (default: inside the bundle)")
    p.add_argument("--fio-size", default="512M", help="fio --size: the test file (default %(default)s)")
    p.add_argument("--fio-runtime", type=int, default=5, help="fio --runtime: seconds per job (default %(default)s)")
    p.add_argument("--dlio", default="dlio_benchmark", help="the dlio_benchmark executable")
    p.add_argument("--dlio-workload", default="unet3d_h100", help="DLIO workload name (default %(default)s)")
    p.add_argument("--dlio-accelerators", default="1", help="comma-separated emulated accelerator counts")
    p.add_argument("--dlio-override", action="append", metavar="KEY=VALUE", help="hydra override, e.g. "
                   "++workload.dataset.num_files_train=16")
    p.add_argument("--dlio-warm-cache", action="store_true", help="keep the page cache between DLIO runs "
                   "(default: drop it so reads reach the disk; needs root)")
    p.add_argument("--ddp-models", help="MODEL:IMAGE:BATCH,... for ddp-step (default resnet18:32:128)")
    p.add_argument("--ddp-paired", type=int, default=0, metavar="BLOCKS",
                   help="ddp-step: the multi-GPU processes also time plain 1-GPU steps, alternating BLOCKS blocks "
                        "with the DDP steps (a 1-GPU baseline from the same processes; docs/models/training.md)")
    p.add_argument("--gpu-micro-quick", action="store_true", help="gpu-micro: small sizes only (a logic check)")
    p.add_argument("--llm-presets", help="llm-step model sizes, comma-separated: 0.3b, 0.5b, 1b, 3b, tiny (default: 0.3b,0.5b,1b,3b)")
    p.add_argument("--llm-shapes", default="1024:8,2048:4,4096:2,2048:1", help="llm-step SEQ:MICRO_BATCH,... (default %(default)s)")
    p.add_argument("--llm-modes", help="llm-step single, ddp, fsdp, tp; multi-GPU modes run under torchrun over --gpus (default single)")
    p.add_argument("--llm-steps", type=int, default=10, help="llm-step timed steps per shape (default %(default)s)")
    p.add_argument("--timeout", type=float, default=600.0, help="seconds per tool run")
    p.set_defaults(func=cmd_collect)

    p = sub.add_parser("storage", help="DLIO / MLPerf Storage workloads on NVMe drives")
    p.add_argument("action", choices=("max-accelerators", "simulate"),
                   help="max-accelerators: the most that keep AU above the threshold; simulate: one run")
    p.add_argument("--workload", required=True, help="a DLIO workload YAML (e.g. unet3d_h100.yaml)")
    p.add_argument("--accelerator", help="take the compute time published for this accelerator (a100, h100, v100)")
    p.add_argument("--nvme", required=True, metavar="CARD", help="an NVMe card (models/nvme/*.yaml)")
    p.add_argument("--drives", type=int, default=1, help="NVMe drives striped together (default %(default)s)")
    p.add_argument("--accelerators", type=int, default=1, help="simulate: emulated accelerators")
    p.add_argument("--steps", type=int, default=32, help="steps per accelerator to simulate (the first load counts, as in DLIO)")
    p.add_argument("--io-size", default="4MiB", help="bytes per read I/O (sequential readahead; Linux max_sectors_kb)")
    p.add_argument("--depth", type=int, default=2, help="reads in flight per loader thread")
    p.add_argument("--thread-rate", help="bytes/s one loader thread can take in, e.g. 400MB/s (default: no limit)")
    p.add_argument("--cores", type=float, help="host cores the loader threads share (default: unlimited)")
    p.add_argument("--seed", type=int, default=0, help="random seed: the same seed gives the same numbers")
    p.add_argument("--plot-dir", help="simulate: write the throughput and queue-depth figures here")
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.set_defaults(func=cmd_storage)

    p = sub.add_parser("lab", help="a two-namespace veth network lab shaped by tc (root)")
    p.add_argument("action", choices=("up", "down"), help="build the lab or remove it")
    p.add_argument("--rate", default="400mbit", help="tc rate on both veth ends (default %(default)s)")
    p.add_argument("--delay", help="one-way delay, e.g. 10ms (a userspace delay line between the namespaces)")
    p.set_defaults(func=cmd_lab)

    p = sub.add_parser("run", help="run a scenario")
    p.add_argument("scenario", help="a scenario YAML (scenarios/quickstart.yaml is the bundled default)")
    p.add_argument("--json", action="store_true", help="print the results as JSON")
    p.set_defaults(func=cmd_run)
    return parser


def main(argv: list[str] | None = None) -> int:
    try:
        args = build_parser().parse_args(argv)
        if args.command == "predict" and getattr(args, "f", 2) < 2:
            raise SimclusterError("-f must be >= 2")
        return args.func(args)
    except SimclusterError as exc:
        print(f"simcluster: error: {exc.one_line()}", file=sys.stderr)
        return EXIT_USAGE
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    sys.exit(main())
