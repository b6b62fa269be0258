"""Card documents from fits: what `simcluster calibrate` writes for trace files given one by one. The library
returns the document; the CLI writes it (simcluster/files.py)."""

from __future__ import annotations

import datetime as _dt

from simcluster import __version__
from simcluster.errors import SimclusterError


def provenance(traces: list[dict]) -> dict:
    """Where a card comes from: the simcluster version, when, and each trace (path, sha256, tool, ...)."""
    return {"simcluster_version": __version__,
            "fitted_at": _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"), "traces": traces}


def nic_card(path: str, transport: str | None, line_rate: str | None, name: str) -> tuple[dict, str]:
    """A NIC card from one qperf output (bandwidth and latency tests of one transport) and the port speed."""
    from simcluster.cards import nic_params_yaml
    from simcluster.fit.nic import detect_transport, fit_nic
    from simcluster.traces import qperf
    from simcluster.units import parse_bandwidth

    if not line_rate:
        raise SimclusterError("--line-rate is required for a NIC card (the port speed, e.g. 100Gbps)")
    trace = qperf.parse(path)
    found = detect_transport(trace)
    transport = transport or (found[0] if len(found) == 1 else None)
    if transport is None or transport not in found:
        raise SimclusterError(f"choose the transport with --transport (the trace has: {', '.join(found) or 'none'})",
                              where=trace.path)
    params, info = fit_nic(trace, transport, parse_bandwidth(line_rate))
    card = {"kind": "nic", "name": name,
            "description": f"{transport.upper()} NIC fitted from qperf {info['bw_test']} and {info['lat_test']}.",
            "params": nic_params_yaml(params),
            "fit": {"measured": {info["bw_test"]: f"{info['bw_Bps'] * 8 / 1e9:.4g}Gbps",
                                 info["lat_test"]: f"{info['latency_s'] * 1e6:.4g}us"}, "notes": info["notes"]},
            "provenance": provenance([{"path": trace.path, "sha256": trace.sha256, "tool": "qperf",
                                       "commands": trace.commands}])}
    return card, (f"{transport} at {params.wire_limit_Bps * 8 / 1e9:.4g} Gb/s wire limit, latency "
                  f"{params.latency_s * 1e6:.3g} us, CPU {params.cpu_s_per_byte * 1e9 * 1e3:.3g} ms/GB")


def collective_card(paths: list[str], op: str | None, tuning_paths: list[str], op_profile: str | None,
                    name: str, model: str | None = None) -> tuple[dict, str]:
    """A collective card from nccl-tests logs of one machine: the NCCL-primitives model with NCCL's tuning
    table when tuning logs are given (or `model` nccl-primitives: NCCL's decision model instead of the table),
    else the chunked ring model; optionally carrying a per-op profile."""
    from simcluster.fit import collective as fit_collective
    from simcluster.fit.profile import with_profile
    from simcluster.fit.validate import summary, validate
    from simcluster.traces import nccl_tests, nccl_tuning
    from simcluster.traces.common import sha256_of

    traces = [nccl_tests.parse(path, op=op) for path in paths]
    tuning = [nccl_tuning.parse(log) for log in tuning_paths] or None
    extra = {"nccl_log": [{"path": log, "sha256": sha256_of(log)} for log in tuning_paths]} if tuning_paths else {}
    params, fit_summary = fit_collective.fit_card(traces, tuning, model)
    if op_profile:
        params = with_profile(params, op_profile)
        extra["op_profile"] = {"path": op_profile, "sha256": sha256_of(op_profile)}
    rows = [r for t in traces for r in validate(params, t)]
    card = {
        "kind": "collective", "name": name,
        "description": f"Intra-node collective model fitted from {len(traces)} nccl-tests log(s).",
        "machine": {"devices": sorted(set(d for t in traces for d in t.devices)),
                    "ranks_per_node": max(t.ranks_per_node for t in traces)},
        "params": params.to_params_yaml(),
        "valid_range": {"min_size": f"{min(r.size_bytes for t in traces for r in t.rows)}B",
                        "max_size": f"{max(r.size_bytes for t in traces for r in t.rows)}B",
                        "ranks": sorted({t.nranks for t in traces}), "ops": sorted({t.op for t in traces}), "nodes": 1},
        "fit": {**{k: v for k, v in fit_summary.items() if k != "residuals"},
                "in_sample_error": summary(rows), "residuals": fit_summary["residuals"]},
        "provenance": provenance([{"path": t.path, "sha256": t.sha256, "tool": t.tool, "tool_version": t.tool_version,
                                   "nccl_version": t.nccl_version, "op": t.op, "ranks": t.nranks, "sizes": len(t.rows),
                                   "cuda_graph_launches": t.cuda_graph_launches} for t in traces]) | extra}
    s = card["fit"]["in_sample_error"]["sizes_ge_1024B"]
    return card, (f"{len(rows)} rows, in-sample mean |error| {s['mean_abs_error_pct']}% "
                  f"(max {s['max_abs_error_pct']}%) over sizes >= 1 KiB")
