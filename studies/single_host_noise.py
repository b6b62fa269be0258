"""Eager single-GPU host-bound steps (single+host-bound): their noise floor computed as TP's (issue 44, session 44,
engineer hostsingle; a diagnostic, not a test, no model input).

Every one-GPU eager llm-step process under calibration/ (h200x1-*, h200x2-*: --mode single, world size 1, no --compile,
no checkpointing, a preset, so not the hidden-128 host probes) through studies/tp_lease_noise.numbers: the unit is the
natural log of each process's median step, the lease its device call (tp_lease_noise.call_of), today's model
heldout/eager_registered.flag_hosts_predict (FLAG_HOSTS' host fits, the one-GPU sets' model). It prints
  1. every process: shape, call, median, the host's issue time (runner's host_issue_s, median) and the issue per
     launched kernel where the document profiled one, today's model and its error, its host share (hb: host-bound);
  2. the regime's own processes (the model's prediction host-bound): process sd, the lease term beyond it, the floor (a
     model exactly on each shape's mean, scored on one process: empirical and normal) against issue 44's 8%; the model's
     lease biases and the model beside the floor on the same processes;
  3. the same over every one-GPU eager process (the GPU-bound ones' spread for comparison);
  4. the single mode's host cost per kernel of every folder with hidden-128 single runs (llm/eager.fit_modes): the
     lease term of the host fit itself, and which machine kind ran it (each folder's own runs: the product folder's
     leases.yaml, whose mean is the product's single term since session 44, not read);
  5. the regime's rows in the error-band table as the table builder reads them now: rows, sources, mean |error|.
trust/noise.py recorded part 2 until session 48 (SINGLE_HOST_CHECKED; FLOOR_VERDICTS' FloorCheck of this study is the record now).
    python studies/single_host_noise.py
"""

from __future__ import annotations

import json
import math
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from simcluster.heldout import eager_registered as er  # noqa: E402
from simcluster.llm.host_bound import is_host_bound  # noqa: E402

CAL = ROOT / "calibration"
REGIME = "llm | PyTorch eager | single+host-bound | bf16"
# the calls of the regime's error-band rows (eager5's second lease is its own call, one source with eager5's registration)
TABLE_SETS = ("h200x1-llm-compile-2026-11-29", "h200x1-llm-eager5-2026-11-29", "h200x1-llm-eager5-lease2-2026-11-29",
              "h200x2-eager-pphost-2026-11-29", "h200x2-eager-today-2026-11-30", "h200x2-hostsingle-2026-11-30",
              "h200x1-hb49-2026-12-01",   # session 49's hb-0.8b row
              "h200x1-lab1x52-2026-12-01")   # session 52's three host-bound rows
# the table's rows from checkpointed steps (the ckpt host term re-filed them host-bound, session 44 hostproduct): not
# single processes, so not in this study's processes (cold review C item 1)
CKPT_TABLE_SETS = ("llm-eager-regimes-2026-11-28", "h200x2-opcheck-2026-11-30")   # opcheck's ckhb-0.5b (session 45)
GLOBS = ("h200x1-*/**/*.json", "h200x2-*/**/*.json", "h200x1-*/**/stdout.txt", "h200x2-*/**/stdout.txt")
sacop = None


def study(name: str):
    global sacop
    if sacop is None:
        import importlib.util

        spec = importlib.util.spec_from_file_location("sacop_lease_noise", ROOT / "studies" / "sacop_lease_noise.py")
        sacop = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(sacop)
    return sacop.study(name)


def _doc(path: Path) -> dict | None:
    text = path.read_text(errors="replace")
    start = text.find("{")
    try:
        doc = json.loads(text[start:]) if start >= 0 else None
    except ValueError:
        return None
    return doc if isinstance(doc, dict) and doc.get("tool") == "llm-step" else None


def processes() -> list[dict]:
    """One row per timed shape of each one-GPU eager single process, in tp_lease_noise.numbers' form."""
    tp = study("tp_lease_noise")
    rows, seen = [], set()
    for pattern in GLOBS:
        for path in sorted(CAL.glob(pattern)):
            doc = _doc(path) if path.name not in ("run.json", "manifest.json", "registered.json") else None
            if (doc is None or doc.get("mode") != "single" or doc.get("world_size", 1) != 1 or doc.get("compile")
                    or doc.get("ac_mode") not in (None, "none") or doc.get("activation_checkpointing")
                    or not (doc.get("model") or {}).get("preset") or doc["model"]["preset"] == "tiny"):
                continue
            m = doc["model"]
            for s in doc.get("shapes", []):
                if s.get("status") != "ok" or not s.get("median_step_s") or (path, s["seq"], s["micro_batch"]) in seen:
                    continue
                seen.add((path, s["seq"], s["micro_batch"]))
                p = er.flag_hosts_predict(m["preset"], m["layers"], s["seq"], s["micro_batch"], False, ("none", 1))
                ms, issue, prof = s["median_step_s"] * 1e3, s.get("host_issue_s"), s.get("profile") or {}
                launches = (prof.get("kernel_per_step") or 0) + (prof.get("gpu_memset_per_step") or 0)
                rows.append({"path": str(path.relative_to(CAL)), "call": tp.call_of(path), "preset": m["preset"],
                             "key": (m["preset"], m["layers"], s["seq"], s["micro_batch"]), "seq": s["seq"],
                             "mb": s["micro_batch"], "ms": ms, "pred": p.step_time_s * 1e3, "err": p.step_time_s * 1e3 / ms - 1,
                             "issue_ms": statistics.median(issue) * 1e3 if issue else None,
                             "us_per_launch": statistics.median(issue) * 1e6 / launches if issue and launches else None,
                             "host_share": p.host_share, "host_bound": is_host_bound(p.host_share)})
    return rows


def host_fits() -> list[tuple[str, str, float, float]]:
    """(folder, machine kind, single's host seconds per kernel, per step) of every folder under calibration/ with
    hidden-128 single runs at two or more layer counts (single-L<n>.json, or a host/ folder's llm-step/ runs)."""
    from simcluster.llm.eager import fit_modes, leases_unread

    out = []
    folders = {p.parent for p in CAL.glob("h200*/**/single-L*.json")} | {p for p in CAL.glob("h200*/**/host") if p.is_dir()}
    with leases_unread():   # each folder's own runs, not the product folder's pooled term (its leases.yaml)
        for folder in sorted(folders):
            fit = fit_modes(folder).get("single")
            if fit:
                out.append((str(folder.relative_to(CAL)), folder.relative_to(CAL).parts[0].split("-")[0], fit[0], fit[1]))
    return out


def regime_numbers(rows: list[dict] | None = None) -> dict:
    """tp_lease_noise.numbers over the regime's own processes (the model's prediction host-bound), TABLE_SETS its
    `table` part."""
    rows = processes() if rows is None else rows
    return study("tp_lease_noise").numbers([r for r in rows if r["host_bound"]], TABLE_SETS)


def table_rows() -> tuple[int, int, float, set[str]]:
    """The regime's held-out rows at 1 GPU as the table builder reads them now (trust/build.eager_residuals of
    eager_held_out_rows: today's moves recomputed, session 44's folder_fits): rows, sources, today's mean |error| (%),
    and the sets (bundles) they came from."""
    from simcluster.trust.build import eager_held_out_rows, eager_residuals

    pairs = [(row, r) for row, r in zip(eager_held_out_rows(), eager_residuals(eager_held_out_rows()), strict=True)
             if r.regime == REGIME and r.scale == 1]
    errs = [r.today_error for _, r in pairs]
    return (len(pairs), len({r.source for _, r in pairs}), 100 * statistics.mean(map(abs, errs)),
            {row["bundle"] for row, _ in pairs})


def main() -> int:
    rows = processes()
    print("1. every one-GPU eager single process (ms; issue: host_issue_s median, us per launched kernel where profiled;"
          " err: today's model (FLAG_HOSTS), + = predicted slower; hb: predicted host-bound)")
    for r in sorted(rows, key=lambda r: (not r["host_bound"], r["key"], r["call"])):
        issue = "" if r["issue_ms"] is None else f" issue {r['issue_ms']:6.1f}"
        per = "" if r["us_per_launch"] is None else f" ({r['us_per_launch']:.1f} us)"
        print(f"  {r['preset']:5} {r['seq']:5}x{r['mb']:<3} {r['ms']:7.1f}{issue}{per} model {r['pred']:7.1f} {r['err']:+6.1%} "
              f"share {r['host_share']:.2f}{' hb' if r['host_bound'] else '   '}  {r['path']}")
    show = sacop.show
    n = regime_numbers(rows)
    show("2. the regime's own processes (single+host-bound: the model's prediction host-bound)", n)
    tb = n["table"]
    print(f"  the band's sets' processes ({tb['rows']} in {tb['calls']} calls): mean lease bias {math.expm1(tb['bias_mean']):+.1%} "
          f"(se {tb['bias_se']:.3f}); model {tb['model_same']:.1%} vs floor {tb['floor_same']:.1%} on the {tb['same_rows']} "
          "whose shape ran more than once")
    show("3. every one-GPU eager single process", study("tp_lease_noise").numbers(rows, TABLE_SETS))
    fits = host_fits()
    print("\n4. the single mode's host fit of every folder with hidden-128 single runs (us per kernel, ms per step)")
    for folder, kind, c, a in fits:
        print(f"  {kind:7} {c * 1e6:6.2f} us {a * 1e3:+6.2f} ms  {folder}")
    logs = [math.log(c) for _, _, c, _ in fits]
    print(f"  {len(fits)} folders: mean {math.exp(statistics.mean(logs)) * 1e6:.1f} us (geometric), sd of the log "
          f"{statistics.stdev(logs):.3f}; by machine kind: " + ", ".join(
              f"{k} {math.exp(statistics.mean([math.log(c) for _, kk, c, _ in fits if kk == k])) * 1e6:.1f} us "
              f"({sum(kk == k for _, kk, _, _ in fits)})" for k in sorted({k for _, k, _, _ in fits})))
    rows_n, sources, mean, _ = table_rows()
    print(f"\n5. the error-band table's {REGIME} rows at 1 GPU (live): {rows_n} rows from {sources} sources, today's "
          f"mean |error| {mean:.1f}%")
    return 0


if __name__ == "__main__":
    import study_args  # an unknown argument refused before the study runs
    study_args.check()
    sys.exit(main())
