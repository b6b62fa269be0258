"""What `simcluster plan` and `simcluster report` write from a plan's answer and a results folder: the HTML report
and its figures (report/html.py), plan.json, and the answer as text."""

from __future__ import annotations

from pathlib import Path

from simcluster import output
from simcluster.plan.search import answer, price, read_plan
from simcluster.plan.trust import VALIDATION, left_out, ranked_at
from simcluster.report import html
from simcluster.report.html import duration, energy, label
from simcluster.strict import loads_json
from simcluster.sweep import store


def plan_documents(result, title: str) -> dict[str, str]:
    """What `simcluster plan` writes: the HTML report and its figures, and plan.json (the answer, the candidates
    not run and the sweep's summary); file name -> text or bytes."""

    docs = html.build(result.rows, title, "figures", result.answer, result.answer["within_s"],
                      notes=[f"{n} candidates not run: {reason}" for reason, n in sorted(result.skipped.items())])
    doc = {"answer": result.answer, "skipped": result.skipped, "sweep": result.summary.to_json()}
    docs["plan.json"] = output.dumps(doc, title, indent=1, sort_keys=True) + "\n"
    return docs


def answer_text(a: dict) -> str:
    lines = []
    tokens = f"{a['tokens']:.3g} tokens" if a.get("tokens") else "the training job"
    c, f = a.get("cheapest_within"), a.get("fastest")
    if c:
        lines.append(f"cheapest within {duration(a['within_s'])} ({tokens}): {label(c)}: {duration(c['cost.time_to_train_s'])}"
                     f"{_slow_end(c)}, {c['cost.total']:,.0f} {c.get('cost.currency', '')}, {energy(c['cost.energy_kWh'])} "
                     f"({a['feasible']} of {a['points_priced']} configurations meet the deadline at the slow end of the band each is ranked by)")
    else:
        lines.append(f"no configuration trains {tokens} within {duration(a['within_s'])} ({a['points_priced']} priced)")
    if f:
        lines.append(f"fastest: {label(f)}: {duration(f['cost.time_to_train_s'])}{_slow_end(f)}, {f['cost.total']:,.0f} "
                     f"{f.get('cost.currency', '')}")
    for row, name in ((c, "cheapest"), (f, "fastest")):
        if row and row.get(VALIDATION + "status"):
            noisy = row.get(VALIDATION + "noise_limited.gpus") is not None   # trust/noise.py: its own band, unvalidated
            why = row.get(VALIDATION + "unvalidated_why")   # the machine's shape (trust/band.machine_shape_why): no band
            evidence = (f", no band: {why}; {ranked_at(row)}" if why else
                        f" on {int(row[VALIDATION + 'rows'])} held-out rows from {int(row[VALIDATION + 'sources'])} sources"
                        + (" (noise-limited: the machines' run-to-run noise, trust/noise.py)" if noisy else "")
                        if row.get(VALIDATION + "rows") and (row[VALIDATION + "status"] != "unvalidated" or noisy) else
                        " (no regime of its own: the family's pooled band)" if row[VALIDATION + "status"] == "unvalidated" else "")
            lines.append(f"  {name}: {row[VALIDATION + 'status']}"
                         + (f" ({row[VALIDATION + 'outside']})" if row.get(VALIDATION + "outside") else "")
                         + f"{evidence}, regime {row.get(VALIDATION + 'regime')}")
    if a.get("excluded_unvalidated") or a.get("excluded_machine_unvalidated"):
        lines.append(f"left out: {left_out(a)}; --include-unvalidated ranks them too")
    ranked = a.get("top_by_throughput") or []
    if len(ranked) > 1:
        lines.append(f"top {len(ranked)} by throughput (time to train, cost, memory per GPU):")
        lines += [f"  {i + 1:2d}. {label(r)}: {duration(r['cost.time_to_train_s'])}, {r['cost.total']:,.0f} "
                  f"{r.get('cost.currency', '')}"
                  + (f", {r['jobs[0].memory_per_gpu_GiB.total']:.1f} GiB" if r.get("jobs[0].memory_per_gpu_GiB.total") else "")
                  for i, r in enumerate(ranked)]
    for note in dict.fromkeys(text for row in (c, f) if row for text in _caveats(row)):
        lines.append(f"caveat: {note}")
    return "\n".join(lines) + "\n"


def _slow_end(row: dict) -> str:
    t = row.get("pessimistic.time_to_train_s")
    if not (t and row.get("pessimistic.rho", 1.0) > 1.0):
        return ""
    if row.get(VALIDATION + "unvalidated_why"):   # no band of its own: ranked by one not applied (plan/trust.rho_high)
        return f" (ranked as {duration(t)}, the slow end of a band not applied: below)"
    return f" (80% band's slow end {duration(t)})"


def _caveats(row: dict) -> list[str]:
    """The caveats stored with a row (llm/caveats.py), a JSON list in the flattened results."""
    try:
        found = loads_json(str(row.get("jobs[0].caveats") or "[]"))
    except ValueError:
        return []
    return [str(x) for x in found] if isinstance(found, list) else []


def store_report(folder: str | Path, figures_dir: str, title: str | None = None) -> dict:
    """Report documents for a results folder; priced when its sweep file had a plan: section."""
    folder = Path(folder)
    manifest = store.read_manifest(folder)
    rows = store.rows(folder)
    answer_doc, within, notes = None, None, []
    code = manifest.get("simcluster_code")
    if code:   # points stored by earlier code of simcluster stay in the folder but are not this run's answers
        stale = sum(1 for r in rows if r.get("simcluster_code") != code)
        rows = [r for r in rows if r.get("simcluster_code") == code]
        if stale:
            notes.append(f"{stale} stored points computed by other simcluster code left out (code {code} only)")
    broken = [r for r in rows if output.problems(r)]
    if broken:   # a hand-edited or foreign part file: its rows cannot be drawn or priced, the others still are
        rows = [r for r in rows if not output.problems(r)]
        notes.append(f"{len(broken)} stored points left out: a number that is not finite or is negative "
                     f"(first: {output.problems(broken[0])[0]})")
    source = manifest.get("plan_file") or manifest.get("scenario")
    if manifest.get("plan") and source and Path(source).is_file():
        _, plan = read_plan(source)
        rows = price(rows, plan)
        answer_doc, within = output.check(answer(rows, plan), str(folder)), plan.within_s
        notes.append(f"Prices and power: {plan.catalogue}")
    elif manifest.get("plan"):
        notes.append(f"not priced: the plan file {source} is not readable here")
    name = title or f"simcluster sweep: {manifest.get('name') or folder.name}"
    return html.build(rows, name, figures_dir, answer_doc, within, notes=notes)
