"""Eager FSDP2 host-bound at 2 GPUs: its noise floor computed as TP's (issue 44, session 43, engineer fsdpfloor; a
diagnostic, not a test, no model input; nothing is fitted on the processes).

studies/tp_lease_noise.py computes TP 2's floor, studies/sacop_lease_noise.py SAC's through the same
tp_lease_noise.numbers. This study puts every 2-rank FSDP2 llm-step process under calibration/h200x2-* whose shape today's
model prices host-bound (llm/host_bound.py: the regime `FSDP+host-bound`; the fsdphost and fsdphost-lease2 sets, the
hostbound-noise set and the regime's table rows' sets among them) through it: the unit is the natural log of each
process's median step, the lease is its device call (tp_lease_noise.call_of: bundle, or bundle/runs2 | profiled, and
the TP study's same-lease folders), today's model is heldout/eager_regimes.regime_predict (mode fsdp, H200, the product's
host fits: llm/eager.fit_modes' pooled FSDP2 term, session 43 fsdphost2). It prints
  1. every process: shape, call, median, today's model, its error (+ = predicted slower) and host share;
  2. the pooled process sd (one shape's processes inside one call), the lease term beyond it, the floor (a model exactly
     on each shape's mean, scored on one process: empirical and normal) against issue 44's 8%;
  3. the model's lease biases, their mean (each call once) with its standard error, and the model beside the floor on
     the same processes (those whose shape ran more than once), on every process and on the table's sets' processes;
  4. the regime's rows in the error-band table (simcluster/trust/error_bands.json): rows, sets, today's mean |error|;
  5. sensitivity: the same numbers on subsets of the processes (without the profiled calls, without a set).
trust/noise.py recorded part 2-3's numbers until session 48 (FLOOR_VERDICTS' FloorCheck of this study is the record now).
    python studies/fsdp_lease_noise.py
"""

from __future__ import annotations

import json
import math
import statistics
import sys
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from simcluster.heldout.eager_regimes import regime_predict  # noqa: E402
from simcluster.llm.host_bound import is_host_bound  # noqa: E402

CAL = ROOT / "calibration"
REGIME = "llm | PyTorch eager | FSDP+host-bound | bf16"
SHAPE_KEYS = ("layers", "hidden", "ffn", "heads", "kv_heads", "vocab")


def tp_study():
    import importlib.util

    spec = importlib.util.spec_from_file_location("tp_lease_noise", ROOT / "studies" / "tp_lease_noise.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@cache
def predict(preset: str, seq: int, mb: int) -> tuple[float, float]:
    """Today's model for one FSDP2 2-GPU shape: step (ms) and host share."""
    p = regime_predict(preset, mb, "fsdp", "h200", seq=seq)
    return p["step_ms"], p["host_share"] or 0.0


LEFT_OUT = {"socket": "NCCL's socket transport: another network (the table files them under FSDP, GPU-bound)",
            "accumulated": "several accumulated micro-batches a step: another step than the single one the floor is built from",
            "compiled": "compiled or checkpointed: another regime (FSDP+compile[+host-bound]), whose noise is not this one's"}


def left_out_why(path: Path, doc: dict) -> str:
    """Which LEFT_OUT reason keeps a 2-rank llm-step process of the mode out of the floor's population ('' : none)."""
    if "socket" in path.relative_to(CAL).parts[0]:
        return "socket"
    if (doc.get("grad_accum") or {}).get("micro_batches", 1) != 1:
        return "accumulated"
    return "compiled" if doc.get("compile") or doc.get("ac_mode") not in (None, "none") else ""


def documents(mode: str = "fsdp", left_out: dict | None = None) -> list[tuple[Path, dict]]:
    """Every 2-rank llm-step document of runner `mode` (fsdp; pp: studies/pp_host_noise.py) over NVLink whose model is its
    preset's (a process at hidden 128 tagged with a preset, fsdp2-timeline's fsdp-h128-L22, is a host probe, not the
    shape). Left out, each with its LEFT_OUT reason (counted into `left_out` where given): the -socket bundles (NCCL's
    socket transport, NCCL_P2P_DISABLE=1, their READMEs: another network than the NVLink card regime_predict prices); a
    step of several accumulated micro-batches (`grad_accum`, runner/llm_accum.py: session 45's nosync set, session 46's
    zero2 set), another step than the single micro-batch whose repeat spread the floor measures; a compiled or
    checkpointed step (session 46's compilefsdp set: `compile`, `ac_mode`), another regime (FSDP+compile[+host-bound])
    whose noise would be mixed into this one's (its 0.5b pair, 43% apart, is 2-rank FSDP2 noise of that regime)."""
    from simcluster.runner.llm_decoder import PRESETS

    out = []
    for path in sorted(CAL.glob("h200x2-*/**/*")):
        if path.name in ("run.json", "manifest.json") or not (path.suffix == ".json" or path.name == "stdout.txt"):
            continue
        try:
            doc = json.loads(path.read_text())
        except (ValueError, UnicodeDecodeError):
            continue
        if not (isinstance(doc, dict) and doc.get("tool") == "llm-step" and doc.get("mode") == mode
                and doc.get("world_size") == 2):
            continue
        m = doc["model"]
        preset = PRESETS.get(m.get("preset") or "")
        if not (preset and all(m.get(k) == v for k, v in preset.items() if k in SHAPE_KEYS)):
            continue
        why = left_out_why(path, doc)
        if why and left_out is not None:
            left_out[why] = left_out.get(why, 0) + 1
        if not why:
            out.append((path, doc))
    return out


def processes() -> list[dict]:
    """One row per timed shape of each FSDP2 process whose shape today's model prices host-bound, in
    tp_lease_noise.numbers' form."""
    call_of = tp_study().call_of
    rows = []
    for path, doc in documents():
        preset = doc["model"]["preset"]
        for s in doc.get("shapes", []):
            if s.get("status") != "ok" or not s.get("step_times_s"):
                continue
            pred, share = predict(preset, s["seq"], s["micro_batch"])
            if not is_host_bound(share):
                continue
            ms = s["median_step_s"] * 1e3
            rows.append({"path": str(path.relative_to(CAL)), "call": call_of(path), "preset": preset,
                         "key": (preset, s["seq"], s["micro_batch"]), "seq": s["seq"], "mb": s["micro_batch"], "ms": ms,
                         "steps": s["step_times_s"], "pred": pred, "err": pred / ms - 1, "host_share": share})
    return rows


def table_sets() -> tuple[str, ...]:
    """The sets of the regime's rows at 2 GPUs in the error-band table (studies/eager_lab_modes.py lists them)."""
    from simcluster.trust.table import load_table

    return tuple(sorted({r.source for r in load_table().regimes[REGIME].rows if r.scale == 2}))


def table_rows(population: bool = True) -> tuple[int, int, float]:
    """The regime's rows in the error-band table at 2 GPUs: rows, sets, today's mean |error| (%) (as eager_lab_modes);
    population: only the sets whose processes the floor is built from (processes(): the nosync and zero2 sets'
    accumulated steps are not), the model's error on the floor's own population (session 43's trust/noise.FSDP2_HOST_BOUND.rows)."""
    from simcluster.trust.table import load_table

    calls = {r["call"] for r in processes()} if population else None
    rows = [r for r in load_table().regimes[REGIME].rows if r.scale == 2 and (calls is None or r.source in calls)]
    errs = [r.today_error for r in rows]
    return len(rows), len({r.source for r in rows}), 100 * statistics.mean(map(abs, errs))


def regime_numbers(rows: list[dict] | None = None) -> dict:
    """tp_lease_noise.numbers over the regime's processes, the table's sets as its `table` part."""
    return tp_study().numbers(processes() if rows is None else rows, table_sets())


def show(name: str, n: dict) -> None:
    total = math.sqrt(n["process_sd"] ** 2 + n["lease_sd"] ** 2)
    lines = [f"\n{name}",
             f"  process sd {n['process_sd']:.3f} ({n['process_dof']} dof); across leases {n['across_sd']:.3f} ({n['across_dof']} "
             f"dof, {n['shared_shapes']} shapes), process noise alone {n['noise_alone_sd']:.3f}, lease term {n['lease_sd']:.3f}",
             f"  floor: a model exactly on each shape's mean scores {n['floor_empirical']:.1%} on one process "
             f"({n['floor_processes']} processes); normal with sd {total:.3f}: {n['floor_normal']:.1%}; target 8%"]
    for part, what in (("preset", "every process"), ("table", "the table's sets' processes")):
        p = n[part]
        lines += [f"  {what}: {p['rows']} processes, {p['calls']} calls; lease bias by call:",
                  *(f"    {c:50} {math.expm1(b):+6.1%}" for c, b in sorted(p["biases"].items())),
                  f"    mean lease bias, each call once: {math.expm1(p['bias_mean']):+.1%} = log {p['bias_mean']:+.3f}, se "
                  f"{p['bias_se']:.3f} ({p['bias_mean'] / p['bias_se']:+.1f} se); model mean |err| {p['model_same']:.1%} "
                  f"vs floor {p['floor_same']:.1%} on the {p['same_rows']} of {p['rows']} whose shape ran more than once"]
    print("\n".join(lines))


def listing(rows: list[dict]) -> list[str]:
    """Part 1's lines: every process, by shape and call."""
    return ["1. every 2-rank FSDP2 process of a shape today's model prices host-bound (ms; err: + = predicted slower)",
            *(f"  {r['preset']:5} {r['seq']:5}x{r['mb']:<3} {r['ms']:7.1f} {r['pred']:7.1f} {r['err']:+6.1%} "
              f"share {r['host_share']:.2f}  {r['path']}" for r in sorted(rows, key=lambda r: (r["key"], r["call"])))]


def main() -> int:
    rows = processes()
    if not rows:   # a copy without the bundles
        sys.exit("no 2-rank FSDP2 host-bound llm-step process under calibration/h200x2-*")
    print("\n".join(listing(rows)))
    left: dict[str, int] = {}
    documents(left_out=left)
    print(f"  left out: {sum(left.values())} processes of a preset shape (each before the host-bound test): "
          + "; ".join(f"{n} {why} ({LEFT_OUT[why]})" for why, n in sorted(left.items())))
    n = regime_numbers(rows)
    show("2-3. the regime's processes (FSDP+host-bound at 2 GPUs)", n)
    mean_all = statistics.mean(abs(r["err"]) for r in rows)
    print(f"  today's model over all {len(rows)} processes: mean |err| {mean_all:.1%}")
    t_rows, t_sets, t_mean = table_rows(population=False)
    print(f"\n4. the error-band table's {REGIME} rows at 2 GPUs: {t_rows} rows from {t_sets} sets "
          f"({', '.join(table_sets())}), today's mean |error| {t_mean:.1f}%")
    p_rows, p_sets, p_mean = table_rows()
    print(f"  of these, the floor's own population (the sets whose single micro-batch processes part 2 reads): {p_rows} rows "
          f"from {p_sets} sets, today's mean |error| {p_mean:.1f}% (session 43's trust/noise.FSDP2_HOST_BOUND, removed in session 48; against the floor above)")
    print("\n5. sensitivity: the same numbers on subsets of the processes")
    for name, pick in SUBSETS:
        m = regime_numbers([r for r in rows if pick(r)])
        p = m["preset"]
        print(f"  {name:52} {len([r for r in rows if pick(r)]):2} processes: process sd {m['process_sd']:.3f} "
              f"({m['process_dof']} dof), lease term {m['lease_sd']:.3f}, floor {m['floor_empirical']:.1%} / "
              f"{m['floor_normal']:.1%}; model {p['model_same']:.1%} vs floor {p['floor_same']:.1%} on the same "
              f"{p['same_rows']}; bias {math.expm1(p['bias_mean']):+.1%} (se {p['bias_se']:.3f})")
    return 0


SUBSETS = (("without the profiled calls (llm-profile, fsdp2-timeline)",
            lambda r: "llm-profile" not in r["call"] and "fsdp2-timeline" not in r["call"]),
           ("without host-diagnose", lambda r: "host-diagnose" not in r["call"]),
           ("without fsdphost-lease2", lambda r: "fsdphost-lease2" not in r["call"]),
           ("without both fsdphost sets", lambda r: "fsdphost" not in r["call"]),
           ("session 43's sets and hostbound-noise only", lambda r: "11-30" in r["call"] or "hostbound-noise" in r["call"]))


if __name__ == "__main__":
    import study_args  # an unknown argument refused before the study runs
    study_args.check()
    sys.exit(main())
