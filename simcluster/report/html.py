"""A planning report as one HTML file that opens from disk (figures inlined as base64 PNG), plus each figure as
PNG and SVG beside it: scaling curves (throughput and efficiency against GPU count), the Pareto front of time to
train against cost, step-time breakdown stacks, and the top configurations as a table.

`build(rows, title, ...)` returns documents {name: text or bytes}; the CLI writes them through files.py.
Efficiency of a series (same GPU card, NIC card and other swept hardware) at G GPUs is its best throughput per GPU
at G over its best throughput per GPU at the smallest G it has (1.0 = linear scaling); for a collective sweep the
plotted quantity is the bus bandwidth at its largest size (already per rank), against its value at the smallest G.
"""

from __future__ import annotations

import base64
import html
import io
import math

from simcluster.sweep.store import configuration_key

THROUGHPUT = (("jobs[0].tokens_per_s", "tokens/s"), ("jobs[0].samples_per_s", "samples/s"))
NOT_ADDITIVE = {"communication_total_s"}        # training breakdown: the part of it that is exposed is already a term
SHORT = {"jobs[0].parallel.tp": "tp", "jobs[0].parallel.pp": "pp", "jobs[0].parallel.dp": "dp", "jobs[0].parallel.zero": "zero",
         "jobs[0].parallel.virtual_stages": "v", "jobs[0].micro_batch": "mb", "jobs[0].parallel.cp": "cp",
         "jobs[0].parallel.sequence_parallel": "sp="}
COUNT_KEYS = {"machine.nodes", "machine.gpus_per_node"}


def throughput_key(rows) -> tuple[str | None, str]:
    """The column a report ranks and plots by: tokens/s, samples/s, or (collective sweeps) the bus bandwidth of the
    largest size every point has."""
    for key, unit in THROUGHPUT:
        if any(r.get(key) for r in rows):
            return key, unit
    rows_with = [{k for k in r if k.startswith("jobs[0].rows[") and k.endswith("].busbw_Bps")} for r in rows]
    common = set.intersection(*rows_with) if rows_with else set()
    if common:
        key = max(common, key=lambda k: int(k[len("jobs[0].rows["):-len("].busbw_Bps")]))
        size = rows[0].get(key.replace("busbw_Bps", "size_B"))
        return key, f"bus bandwidth B/s at {size:.4g} B" if size else "bus bandwidth B/s"
    return None, ""


def aggregate(key: str | None) -> bool:
    """Whether the throughput adds up over GPUs (tokens/s, samples/s), so efficiency divides by the GPU count;
    a bus bandwidth is already per rank."""
    return key in dict(THROUGHPUT)


def duration(seconds: float) -> str:
    """A time to train as people say it: hours under two days, days above."""
    return f"{seconds / 3600:.3g} hours" if seconds < 2 * 86400 else f"{seconds / 86400:.3g} days"


def energy(kwh: float) -> str:
    return f"{kwh:,.3g} kWh" if kwh < 1000 else f"{kwh / 1000:,.3g} MWh"


def label(row: dict) -> str:
    parts = [str(row.get("machine.gpu_card") or ""), str(row.get("machine.nic_card") or ""), f"{row.get('machine.gpus')} GPUs"]
    for k, v in sorted(row.items()):
        if not k.startswith("param."):
            continue
        key = k[len("param."):]
        if key in SHORT:
            parts.append(f"{SHORT[key]}{v}")
        elif key not in COUNT_KEYS and not key.endswith(".card"):
            parts.append(f"{key.rsplit('.', 1)[-1]}={v}")
    return " ".join(p for p in parts if p)


def series_key(row: dict) -> str:
    """The hardware a scaling curve holds fixed: cards and every swept key that is not a count or a parallel split."""
    keys = [str(row.get("machine.gpu_card") or "-"), str(row.get("machine.nic_card") or "-")]
    for k, v in sorted(row.items()):
        key = k[len("param."):] if k.startswith("param.") else None
        if key and key not in COUNT_KEYS and key not in SHORT and not key.endswith(".card"):
            keys.append(f"{key.rsplit('.', 1)[-1]}={v}")
    return " ".join(keys)


def scaling(rows: list[dict], key: str) -> dict[str, list[tuple[int, float, float]]]:
    """series -> [(gpus, best throughput, efficiency)] by GPU count."""
    best: dict[str, dict[int, float]] = {}
    for r in rows:
        g, t = r.get("machine.gpus"), r.get(key)
        if g and t:
            s = best.setdefault(series_key(r), {})
            s[int(g)] = max(s.get(int(g), 0.0), float(t))
    out = {}
    for name, by_g in sorted(best.items()):
        counts = sorted(by_g)
        divide = aggregate(key)
        per = {g: by_g[g] / g if divide else by_g[g] for g in counts}
        out[name] = [(g, by_g[g], per[g] / per[counts[0]]) for g in counts]
    return out


def band(row: dict, key: str) -> tuple[float, float] | None:
    """A row's 80% band of `key` (the flattened `<key>_band`, JSON text [low, high]; trust/band.py), or None."""
    import json

    try:
        low, high = json.loads(row.get(f"{key}_band") or "null") or (None, None)
        return (float(low), float(high)) if low is not None and high is not None else None
    except (ValueError, TypeError):
        return None


def scaling_bands(rows: list[dict], key: str) -> dict[str, dict[int, tuple[float, float]]]:
    """series -> GPUs -> the 80% band of the best configuration's throughput there (as scaling() picks it)."""
    best: dict[str, dict[int, dict]] = {}
    for r in rows:
        g, t = r.get("machine.gpus"), r.get(key)
        if g and t:
            s = best.setdefault(series_key(r), {})
            if float(t) > float(s.get(int(g), {}).get(key) or 0.0):
                s[int(g)] = r
    return {name: {g: b for g, r in by_g.items() if (b := band(r, key))} for name, by_g in best.items()}


def pareto(rows: list[dict]) -> list[dict]:
    """The points no other point beats on both time to train and cost (ties kept once), by time."""
    pts = sorted((r for r in rows if r.get("cost.total") is not None and r.get("cost.time_to_train_s")),
                 key=lambda r: (r["cost.time_to_train_s"], r["cost.total"], configuration_key(r)))
    front, best_cost = [], math.inf
    for r in pts:
        if r["cost.total"] < best_cost:
            front.append(r)
            best_cost = r["cost.total"]
    return front


def _figures(rows, key, unit, within_s, top):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figs = {}
    curves = scaling(rows, key) if key else {}
    bands = scaling_bands(rows, key) if key else {}
    if curves:
        fig, (a, b) = plt.subplots(1, 2, figsize=(11, 4.2))
        for name, pts in curves.items():
            g = [p[0] for p in pts]
            line = a.plot(g, [p[1] for p in pts], marker="o", label=name)[0]
            b.plot(g, [p[2] for p in pts], marker="o", label=name)
            err = [(p[0], p[1], bands.get(name, {}).get(p[0])) for p in pts]
            err = [(x, y, e) for x, y, e in err if e]
            if err:         # the 80% band of each best configuration (trust/band.py)
                a.errorbar([x for x, _, _ in err], [y for _, y, _ in err], fmt="none", ecolor=line.get_color(), alpha=0.5,
                           capsize=3, yerr=[[max(0.0, y - e[0]) for _, y, e in err], [max(0.0, e[1] - y) for _, y, e in err]])
        for ax in (a, b):
            ax.set_xscale("log", base=2)
            ax.set_xlabel("GPUs")
            ax.grid(True, alpha=0.3)
        a.set_ylabel(f"best {unit}")
        a.set_title("Throughput (best configuration per GPU count)")
        b.set_ylabel("per-GPU throughput / at the smallest count" if aggregate(key) else "bus bandwidth / at the smallest count")
        b.set_title("Scaling efficiency")
        b.axhline(1.0, color="grey", lw=0.8)
        a.legend(fontsize=7)
        figs["scaling"] = fig
    priced = [r for r in rows if r.get("cost.total") is not None and r.get("cost.time_to_train_s")]
    if priced:
        fig, ax = plt.subplots(figsize=(7, 4.5))
        ax.scatter([r["cost.time_to_train_s"] / 86400 for r in priced], [r["cost.total"] for r in priced], s=12,
                   color="#999", label="configurations")
        front = pareto(priced)
        ax.plot([r["cost.time_to_train_s"] / 86400 for r in front], [r["cost.total"] for r in front], marker="o",
                color="C3", label="Pareto front")
        spans = [(r, band(r, "jobs[0].step_time_s")) for r in front]
        spans = [(r, b, r["cost.time_to_train_s"] / r["jobs[0].step_time_s"]) for r, b in spans if b and r.get("jobs[0].step_time_s")]
        if spans:           # time to train scales with the step time's 80% band
            x = [r["cost.time_to_train_s"] / 86400 for r, _, _ in spans]
            ax.errorbar(x, [r["cost.total"] for r, _, _ in spans], fmt="none", ecolor="C3", alpha=0.6, capsize=3,
                        label="80% band (time)", xerr=[[max(0.0, xi - b[0] * k / 86400) for xi, (_, b, k) in zip(x, spans, strict=True)],
                                                       [max(0.0, b[1] * k / 86400 - xi) for xi, (_, b, k) in zip(x, spans, strict=True)]])
        if within_s:
            ax.axvline(within_s / 86400, color="C0", ls="--", label="deadline")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("time to train (days)")
        ax.set_ylabel(f"cost ({priced[0].get('cost.currency', '')})")
        ax.set_title("Time to train vs cost")
        ax.grid(True, alpha=0.3, which="both")
        ax.legend(fontsize=8)
        figs["pareto"] = fig
    parts = sorted({k for r in top for k in r if k.startswith("jobs[0].breakdown.") and k.rsplit(".", 1)[-1] not in NOT_ADDITIVE
                    and isinstance(r[k], float)})
    if top and parts:
        fig, ax = plt.subplots(figsize=(10, 0.35 * len(top) + 1.6))
        left = [0.0] * len(top)
        for i, part in enumerate(parts):
            values = [float(r.get(part) or 0.0) for r in top]
            if not any(values):
                continue
            ax.barh(range(len(top)), values, left=left, label=part.rsplit(".", 1)[-1], color=f"C{i % 10}")
            left = [a + b for a, b in zip(left, values, strict=True)]
        ax.set_yticks(range(len(top)), [label(r) for r in top], fontsize=7)
        ax.invert_yaxis()
        ax.set_xlabel("seconds per step")
        ax.set_title("Step time breakdown (top configurations)")
        ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0))
        figs["breakdown"] = fig
    out = {}
    for name, fig in figs.items():
        fig.tight_layout()
        png, svg = io.BytesIO(), io.BytesIO()
        fig.savefig(png, format="png", dpi=110, bbox_inches="tight", metadata={"Software": None})
        fig.savefig(svg, format="svg", bbox_inches="tight", metadata={"Date": None, "Creator": None})
        plt.close(fig)
        out[name] = (png.getvalue(), svg.getvalue())
    return out


def _fmt(value) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


COLUMNS = (("machine.gpus", "GPUs"), ("jobs[0].step_time_s", "step s"), ("jobs[0].mfu", "MFU"),
           ("jobs[0].memory_per_gpu_GiB.total", "memory GiB"), ("cost.time_to_train_s", "days"),
           ("cost.total", "cost"), ("cost.energy_kWh", "energy MWh"), ("cost.per_hour", "per hour"),
           ("jobs[0].validation.status", "validation (80% band)"))


def _table(rows: list[dict], key: str | None, unit: str) -> str:
    head = ["#", "configuration"] + ([unit] if key else []) + [name for k, name in COLUMNS if any(r.get(k) is not None for r in rows)]
    cols = [k for k, _ in COLUMNS if any(r.get(k) is not None for r in rows)]
    lines = ["<table><thead><tr>" + "".join(f"<th>{html.escape(h)}</th>" for h in head) + "</tr></thead><tbody>"]
    for i, r in enumerate(rows, 1):
        cells = [str(i), html.escape(label(r))] + ([_fmt(r.get(key))] if key else [])
        for k in cols:
            v = r.get(k)
            if k == "cost.time_to_train_s" and v is not None:
                v = v / 86400
            if k == "cost.energy_kWh" and v is not None:
                v = v / 1000
            if k == "jobs[0].validation.status" and v is not None:
                rho = band(r, "jobs[0].step_time_s")
                step = r.get("jobs[0].step_time_s")
                if rho and step:
                    v = f"{v}, step {(rho[0] / step - 1) * 100:+.0f}%..{(rho[1] / step - 1) * 100:+.0f}%"
                elif r.get("jobs[0].validation.unvalidated_why"):   # the machine's rule (trust/band.machine_shape_why)
                    v = f"{v}, no band: {r['jobs[0].validation.unvalidated_why']}"
            cells.append(html.escape(_fmt(v)))
        lines.append("<tr>" + "".join(f"<td>{c}</td>" for c in cells) + "</tr>")
    lines.append("</tbody></table>")
    return "\n".join(lines)


STYLE = ("body{font-family:sans-serif;margin:2em;max-width:1200px}table{border-collapse:collapse;font-size:13px}"
         "td,th{border:1px solid #ccc;padding:3px 6px;text-align:right}td:nth-child(2){text-align:left}"
         "img{max-width:100%}.note{color:#555}")


def build(rows: list[dict], title: str, figures_dir: str, answer: dict | None = None, within_s: float | None = None,
          top_n: int = 20, notes: list[str] | None = None) -> dict[str, str | bytes]:
    """Documents: 'report.html' and figures_dir/<figure>.png|svg."""
    ok = [r for r in rows if r.get("status") == "ok"]
    usable = [r for r in ok if r.get("jobs[0].fits") is not False]
    key, unit = throughput_key(usable)
    top = sorted(usable, key=lambda r: (-(r.get(key) or 0.0), configuration_key(r)) if key else configuration_key(r))[:top_n]
    figs = _figures(usable, key, unit, within_s, top[:12])
    docs: dict[str, str | bytes] = {}
    body = [f"<h1>{html.escape(title)}</h1>",
            f"<p>{len(rows)} points: {len(ok)} ran, {len(ok) - len(usable)} do not fit in GPU memory, "
            f"{sum(r.get('status') == 'invalid' for r in rows)} refused by the scenario reader, "
            f"{sum(r.get('status') == 'failed' for r in rows)} failed.</p>"]
    for line in notes or []:
        body.append(f"<p class='note'>{html.escape(line)}</p>")
    if answer:
        body.append("<h2>Answer</h2>" + _answer(answer))
    captions = {"scaling": "Scaling", "pareto": "Time to train vs cost", "breakdown": "Step time breakdown"}
    for name, (png, svg) in figs.items():
        docs[f"{figures_dir}/{name}.png"] = png
        docs[f"{figures_dir}/{name}.svg"] = svg
        body.append(f"<h2>{captions[name]}</h2><img alt='{name}' src='data:image/png;base64,{base64.b64encode(png).decode()}'>")
    body.append(f"<h2>Top configurations{' by ' + unit if unit else ''}</h2>" + _table(top, key, unit))
    docs["report.html"] = ("<!DOCTYPE html>\n<html><head><meta charset='utf-8'><title>" + html.escape(title) +
                           f"</title><style>{STYLE}</style></head><body>\n" + "\n".join(body) + "\n</body></html>\n")
    return docs


def _answer(a: dict) -> str:
    from simcluster.plan.trust import left_out, ranked_at

    out = []
    tokens = f"{a['tokens']:.3g} tokens" if a.get("tokens") else "the training job"
    days = a["within_s"] / 86400 if a.get("within_s") else None
    c = a.get("cheapest_within")
    if c:
        out.append(f"<p>Cheapest configuration that trains {tokens} within {duration(a['within_s'])}: <b>{html.escape(label(c))}</b>, "
                   f"{duration(c['cost.time_to_train_s'])}, {c['cost.total']:,.0f} {html.escape(str(c.get('cost.currency', '')))}, "
                   f"{energy(c.get('cost.energy_kWh', 0))} ({a['feasible']} of {a['points_priced']} configurations "
                   f"meet the deadline).</p>")
    elif days is not None:
        out.append(f"<p>No configuration trains {tokens} within {duration(a['within_s'])} ({a['points_priced']} priced).</p>")
    f = a.get("fastest")
    if f:
        out.append(f"<p>Fastest: {html.escape(label(f))}, {duration(f['cost.time_to_train_s'])}, "
                   f"{f['cost.total']:,.0f} {html.escape(str(f.get('cost.currency', '')))}.</p>")
    for row, name in ((c, "Cheapest"), (f, "Fastest")):
        status = (row or {}).get("jobs[0].validation.status")
        if status:
            outside, why = row.get("jobs[0].validation.outside"), row.get("jobs[0].validation.unvalidated_why")
            ranked = (f"no band: {why}; {ranked_at(row)}" if why   # trust/band.machine_shape_why, plan/trust.rho_high
                      else "ranked at the slow end of its 80% band")
            out.append(f"<p>{name}: {html.escape(status)}{' (' + html.escape(outside) + ')' if outside else ''}, regime "
                       f"{html.escape(str(row.get('jobs[0].validation.regime')))}; {html.escape(ranked)}.</p>")
    if a.get("excluded_unvalidated") or a.get("excluded_machine_unvalidated"):
        out.append(f"<p>Left out: {html.escape(left_out(a))}.</p>")
    return "\n".join(out)
