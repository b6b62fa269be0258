"""Card documents from fits: what `simcluster calibrate` writes for trace files given one by one. The library
returns the document; the CLI writes it (simcluster/files.py)."""

from __future__ import annotations

from simcluster.card_document import provenance
from simcluster.errors import CalibrationError, SimclusterError


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
    """A collective card from nccl-tests log files of one machine (`simcluster calibrate LOG ...`): the document
    (collective_document) and a one-line summary of its in-sample error."""
    from simcluster.traces import nccl_tests, nccl_tuning

    traces = [nccl_tests.parse(path, op=op) for path in paths]
    for trace in traces:
        if not trace.complete:
            raise CalibrationError("the run was cut short (no '# Avg bus bandwidth' footer): a card is not fitted on a "
                                   "partial sweep", where=trace.path, hint="re-run nccl-tests to the end, or cut the log "
                                   "after a complete table and add its footer line")
    card, _ = collective_document(traces, [nccl_tuning.parse(log) for log in tuning_paths], name, model, op_profile)
    error = card["fit"]["in_sample_error"]
    s = error["sizes_ge_1024B"]
    return card, (f"{error['all_sizes']['sizes']} rows, in-sample mean |error| {s['mean_abs_error_pct']}% "
                  f"(max {s['max_abs_error_pct']}%) over sizes >= 1 KiB")


def card_document(name: str, description: str, params_yaml: dict, traces: list, fit: dict | None,
                  provenance_extra: dict) -> dict:
    """Every collective card's one shape: the fitted parameters (the model's to_params_yaml()), the machine and the
    valid range the traces span, the fit's summary, and provenance (each trace with its hash, plus `provenance_extra`).
    Used by log-file and bundle calibration, kind cards and machine cards alike."""
    ranks, ops = sorted({t.nranks for t in traces}), sorted({t.op for t in traces})
    card = {
        "kind": "collective", "name": name, "description": description,
        "machine": {"devices": sorted(set(d for t in traces for d in t.devices)),
                    "ranks_per_node": max(t.ranks_per_node for t in traces)},
        "params": params_yaml,
        "valid_range": {"min_size": f"{min(r.size_bytes for t in traces for r in t.rows)}B",
                        "max_size": f"{max(r.size_bytes for t in traces for r in t.rows)}B",
                        "ranks": ranks, "ops": ops, "nodes": 1},
        "provenance": provenance([{"path": t.path, "sha256": t.sha256, "tool": t.tool, "tool_version": t.tool_version,
                                   "nccl_version": t.nccl_version, "op": t.op, "ranks": t.nranks, "sizes": len(t.rows),
                                   "cuda_graph_launches": t.cuda_graph_launches} for t in traces]) | provenance_extra}
    if fit is not None:
        card["fit"] = fit
    return card


def collective_document(traces: list, tunings: list, name: str, model: str | None = None, op_profile: str | None = None,
                        source: dict | None = None) -> tuple[dict, object]:
    """The one builder of every collective card document, for log files and bundles alike: fit (fit/collective.py:
    the NCCL-primitives model with NCCL's tuning logs, or `model`; else the chunked ring), optionally carry a per-op
    profile, and describe the card. Generic over the model: its parameters are `params.to_params_yaml()`.
    `source` (a bundle: {"bundle", "host"}) goes into the provenance; nothing else depends on where the traces came
    from. Returns (card, the fitted model before the profile)."""
    from simcluster.fit import collective as fit_collective
    from simcluster.fit.profile import with_profile
    from simcluster.fit.validate import summary, validate
    from simcluster.traces.common import sha256_of

    fitted, fit_summary = fit_collective.fit_card(traces, tunings or None, model)
    params = with_profile(fitted, op_profile) if op_profile else fitted
    rows = [r for t in traces for r in validate(params, t)]
    yaml_params = params.to_params_yaml()
    ranks, ops = sorted({t.nranks for t in traces}), sorted({t.op for t in traces})
    extra = {"nccl_log": [{"path": t.path, "sha256": sha256_of(t.path)} for t in tunings]} if tunings else {}
    if op_profile:
        extra["op_profile"] = {"path": str(op_profile), "sha256": sha256_of(op_profile)}
    description = (f"Intra-node collective model ({yaml_params.get('model', 'chunked-ring')}, docs/models/collectives.md) "
                   f"fitted from {len(traces)} nccl-tests log(s) of {', '.join(ops)} at {', '.join(map(str, ranks))} "
                   "ranks" + (", protocols as NCCL's tuning log chose them" if tunings else "")
                   + (", carrying a per-op profile" if op_profile else "") + ".")
    fit = {**{k: v for k, v in fit_summary.items() if k != "residuals"},
           "in_sample_error": summary(rows), "residuals": fit_summary["residuals"]}
    card = card_document(name, description, yaml_params, traces, fit, extra | (source or {}))
    return card, fitted
