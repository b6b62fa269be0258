"""Every MoE row `simcluster validate --published llm` compares, one line each: its configuration as the recipe sets it
and the model reads it, against its error (issue 44, session 45 moe). Read-only: no model change, not a test, nothing
fitted. Columns:

- GPUs, tp / pp / vp / ep (etp: expert TP), E experts, k top-k, dispatcher, fp8, recompute, a2a (Megatron's
  overlap_moe_expert_parallel_comm), shx (moe_shared_expert_overlap), gr (CUDA graphs over router / preprocess, as
  studies/moe_gap.graphs_of reads it), m micro-batches a step;
- M_e: rows each local expert's GEMMs get per micro-batch, balanced (`ep T k / E`, T the tokens a GPU routes);
- EPn: nodes the EP group spans (1 = NVLink only), from comm.groups;
- comp / EP / bub / oth: the predicted step's compute, exposed EP, pipeline bubble and other (host) in % of the step;
- miss/pass: (measured - predicted) step / MoE layer passes (one micro-batch's forward + backward of one MoE layer on one
  GPU), ms; miss/comp: that over the pass's modelled compute (studies/moe_gap.pass_parts);
- error: + = predicted faster than measured; held: the file's held-out flag for the row.
Then, the figures session 45 reads for one systematic cause (docs/models/llm-findings.md, session 45 moe):
1. the rows grouped by each configuration column (error and miss/comp per value);
2. the miss per pass over each candidate's natural scale (compute, expert GEMMs, EP time, routed bytes T k h, local
   experts, tokens): a cause whose size follows one scale has a small spread (coefficient of variation) over it;
2b. the held-out source (Moonlight 16B, recorded after the first print): its miss over compute against 2's range;
3. the two twin pairs that differ only in Megatron's EP overlap (skills rows 0 / 1: HybridEP; 3 / 4: alltoall): the
   measured step saving against the model's;
4. the skills profile's own split of rows 0 / 1 (GPU-active union 22.821 / 21.221 s, communication hidden 0.11% /
   36.55%): with the same compute C and communication X in both steps, C + 0.9989 X = 22.821 and C + 0.6345 X = 21.221
   give C and X, against the model's compute and raw EP time of row 0;
5. a sensitivity (not adopted): the A2A overlap rows if the overlap hid only the fraction of EP time the one profiled
   overlap step shows hidden (skills SKILL.md's Nsight of row 1: communication hidden by compute 36.55%; row 0: 0.11%).
    python studies/moe_rows_session45.py > studies/moe_rows_session45.txt
"""

from __future__ import annotations

import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import moe_gap  # noqa: E402
import moe_rows  # noqa: E402

from simcluster.errors import SimclusterError  # noqa: E402
from simcluster.llm import comm  # noqa: E402
from simcluster.published import read_published  # noqa: E402
from simcluster.reference.llm import llm_usage  # noqa: E402
from simcluster.reference.llm_specs import spec_of  # noqa: E402

PROFILED_HIDDEN = 0.3655   # skills row 1's Nsight rank-0 reading: share of communication time hidden by compute
PROFILED = {"union_s": (22.821, 21.221), "hidden": (0.0011, PROFILED_HIDDEN)}   # skills rows 0 / 1 (file notes)

# the source recorded after this table's first print (b30dfa5c) and predicted once (validation/moe-predicted-once.txt):
# held out for the session's observations, so its rows are printed in the table and tested against the observations
# (section 2b) but enter no grouping or scale fit (review A45 item 1)
HELD_OUT_SOURCES = ("llm-megatron-bridge-skills-moonlight16b-h100-bf16",)
# every published file with an MoE row the validation compares (H100 and B200); rows it does not compare are skipped
FILES = tuple(stem for stem, _ in moe_rows.MOE_ROWS + moe_rows.NEW_ROWS) + (
    "llm-megatron-bridge-25.11-dgx-b200", "llm-nemo-25.02-dgx-b200-fp8") + HELD_OUT_SOURCES


def moe_runs(stem: str) -> list[int]:
    """Indices of the runs of <stem> whose model has experts and which the validation compares; each MoE row it cannot
    predict is named on one line (a row a later model change breaks is not dropped silently)."""
    ref = read_published(moe_rows.PUBLISHED / f"{stem}.yaml", "published-llm-run")
    usage, out = llm_usage(ref), []
    for i, run in enumerate(ref.runs):
        try:
            spec, _, _ = spec_of(run, usage.assumptions)
            if spec is None or not spec[0].moe:
                continue
            moe_rows.predict_row(stem, i)
        except SimclusterError as e:   # LlmConfigError is one; the validation prints the same reason for the row
            print(f"# skipped {stem[4:]} row {i}: {str(e).splitlines()[0].split(' (')[0][:110]}")
            continue
        out.append(i)
    return out


def line(stem: str, i: int) -> dict:
    row = moe_rows.predict_row(stem, i)
    model, par, batch, res = row.model, row.par, row.batch, row.result
    dp = row.gpus // (par.tp * par.pp * par.cp)
    m = batch.micro_batches(dp)
    tokens = batch.micro_batch * model.seq // (par.tp // par.etp) // par.cp
    rows_per_expert = par.ep * tokens * model.top_k / model.experts
    ep_nodes = comm.groups(par, row.net).ep.nodes
    step = res.step_time_s
    meas = row.measured_step_s
    passes = m * model.moe_layers / par.pp
    parts = moe_gap.pass_parts(row)
    bd = res.breakdown
    share = {k: 100 * bd.get(key, 0.0) / step for k, key in (("compute", "compute"), ("ep", "exposed_ep_comm"),
                                                               ("bubble", "pipeline_bubble"), ("other", "other"))}
    gr = moe_gap.graphs_of(stem, i, row) if stem in dict(moe_rows.MOE_ROWS + moe_rows.NEW_ROWS) else "?"
    return dict(row=row, parts=parts, passes=passes, step=step, meas=meas, stem=stem, i=i, gpus=row.gpus, tp=par.tp,
                pp=par.pp, vp=par.virtual_stages, ep=par.ep, etp=par.etp,
                E=model.experts, k=model.top_k, disp=par.moe_dispatcher, fp8=batch.precision != "bf16",
                rc=par.recompute, a2a=par.moe_a2a_overlap, shx=par.moe_shared_expert_overlap, gr=gr, m=m,
                M_e=rows_per_expert, ep_nodes=ep_nodes, share=share, miss_pass=(meas - step) / passes,
                miss_comp=(meas - step) / passes / parts["compute"], error=row.error, held=row.held_out,
                )


def yn(b: bool) -> str:
    return "y" if b else "n"


def main() -> None:
    rows = [line(stem, i) for stem in FILES for i in moe_runs(stem)]
    print("# every MoE row the validation compares; + = predicted faster; shares in % of the predicted step")
    print(f"{'source':34s} {'i':>2s} {'GPUs':>4s} {'tp':>2s} {'pp':>2s} {'vp':>2s} {'ep':>3s} {'etp':>3s} {'E':>3s} {'k':>2s} "
          f"{'disp':8s} {'fp8':3s} {'rc':9s} {'a2a':3s} {'shx':3s} {'gr':2s} {'m':>4s} {'M_e':>6s} {'EPn':>3s} "
          f"{'comp':>4s} {'EP':>3s} {'bub':>3s} {'oth':>3s} {'miss/pass':>9s} {'miss/comp':>9s} {'error':>7s} held")
    for r in rows:
        s = r["share"]
        print(f"{r['stem'][4:38]:34s} {r['i']:2d} {r['gpus']:4d} {r['tp']:2d} {r['pp']:2d} {r['vp']:2d} {r['ep']:3d} "
              f"{r['etp']:3d} {r['E']:3d} {r['k']:2d} {r['disp']:8s} {yn(r['fp8']):3s} {r['rc'][:9]:9s} {yn(r['a2a']):3s} "
              f"{yn(r['shx']):3s} {r['gr']:2s} {r['m']:4d} {r['M_e']:6.0f} {r['ep_nodes']:3d} {s['compute']:4.0f} {s['ep']:3.0f} "
              f"{s['bubble']:3.0f} {s['other']:3.0f} {1e3 * r['miss_pass']:9.2f} {r['miss_comp']:9.2f} "
              f"{100 * r['error']:+6.1f}% {'yes' if r['held'] else 'no'}")
    errs = [abs(r["error"]) for r in rows]
    print(f"\n{len(rows)} rows: mean |error| {100 * sum(errs) / len(errs):.1f}%, {sum(e <= 0.10 for e in errs)} within 10%, "
          f"{sum(r['error'] > 0 for r in rows)} predicted fast; held out {sum(r['held'] for r in rows)}")
    outliers = moe_gap.OUTLIERS
    print("\n# grouped by configuration (the two release outliers, the same presets printed 1.8-2.0x faster in another "
          "release, left out: " + ", ".join(f"{s[4:]} {i}" for s, i in sorted(outliers)) + ")")
    keys = {"card": lambda r: "B200" if "b200" in r["stem"] and "h100" not in r["stem"] else "H100",
            "dispatcher": lambda r: r["disp"], "fp8": lambda r: yn(r["fp8"]), "a2a overlap": lambda r: yn(r["a2a"]),
            "graphs": lambda r: r["gr"], "EP nodes": lambda r: r["ep_nodes"], "pp > 1": lambda r: yn(r["pp"] > 1),
            "tp > 1": lambda r: yn(r["tp"] > 1),
            "M_e": lambda r: "<1024" if r["M_e"] < 1024 else "1024-4095" if r["M_e"] < 4096 else ">=4096",
            "E": lambda r: r["E"], "top-k": lambda r: r["k"], "recompute": lambda r: r["rc"]}
    kept = [r for r in rows if (r["stem"], r["i"]) not in outliers and r["stem"] not in HELD_OUT_SOURCES]
    for name, key in keys.items():
        groups = defaultdict(list)
        for r in kept:
            groups[key(r)].append(r)
        cells = []
        for value, rs in sorted(groups.items(), key=lambda kv: str(kv[0])):
            e = [100 * r["error"] for r in rs]
            mc = sorted(r["miss_comp"] for r in rs)
            cells.append(f"{value}: {len(rs)} rows, error {min(e):+.0f}..{max(e):+.0f}% (mean {sum(e) / len(e):+.1f}%), "
                         f"miss/comp median {mc[len(mc) // 2]:.2f}")
        print(f"{name:12s} " + " | ".join(cells))
    h100 = [r for r in kept if r["stem"] != "llm-nemo-25.02-dgx-b200-fp8"]
    scales(h100)
    held_out_test(rows, h100)
    twins(rows)
    profile_split(rows)
    overlap_sensitivity(rows)


def scales(rows: list[dict]) -> None:
    """The miss per pass over each candidate's scale; a small spread = a term of that scale could carry it."""
    def t(r):   # tokens a GPU routes per micro-batch
        return r["row"].batch.micro_batch * r["row"].model.seq // (r["tp"] // r["etp"])
    by = {"the pass's modelled compute (s)": lambda r: r["parts"]["compute"],
          "its expert GEMMs (s)": lambda r: r["parts"]["experts"],
          "its raw EP time (s)": lambda r: r["parts"]["ep_raw"],
          "routed elements T k h": lambda r: t(r) * r["k"] * r["row"].model.hidden,
          "local experts E / ep": lambda r: r["E"] // r["ep"],
          "tokens T": t}
    print(f"\n# the miss per pass over each candidate's scale ({len(rows)} H100 rows, outliers out); cv = std / mean")
    for name, f in by.items():
        v = [r["miss_pass"] / f(r) for r in rows]
        mean = sum(v) / len(v)
        sd = (sum((x - mean) ** 2 for x in v) / len(v)) ** 0.5
        print(f"  miss / {name:32s} cv {sd / mean:4.2f}  range {min(v):.3g}..{max(v):.3g}")


def held_out_test(rows: list[dict], development: list[dict]) -> None:
    """The held-out source's miss per pass over its modelled compute against the development rows' range (the scale
    section 2 finds best): a scale that carries the miss puts the held-out rows inside that range."""
    dev = [r["miss_comp"] for r in development]
    held = [r for r in rows if r["stem"] in HELD_OUT_SOURCES]
    if not held:
        return
    mc = [r["miss_comp"] for r in held]
    mp = [1e3 * r["miss_pass"] for r in held]
    host = [r["share"]["other"] for r in held]
    print(f"\n# held-out test of the compute scale: {len(held)} rows of " + ", ".join(s[4:] for s in HELD_OUT_SOURCES)
          + " (recorded after the first print, predicted once)")
    print(f"  miss / the pass's modelled compute: {min(mc):.2f}..{max(mc):.2f} (miss/pass {min(mp):.1f}..{max(mp):.1f} ms) "
          f"against the development rows' {min(dev):.2f}..{max(dev):.2f}: {min(mc) / max(dev):.1f}-{max(mc) / max(dev):.1f}x "
          f"the top; predicted step {min(host):.0f}-{max(host):.0f}% other (host)")


def twins(rows: list[dict]) -> None:
    """The skills file's pairs that differ only in overlap_moe_expert_parallel_comm: measured and modelled savings."""
    skills = {r["i"]: r for r in rows if r["stem"] == "llm-megatron-bridge-skills-qwen3-30b-h100-bf16"}
    print("\n# EP overlap twins (skills file; the only change: overlap_moe_expert_parallel_comm), step s")
    for off, on, what in ((0, 1, "HybridEP, graphed"), (3, 4, "alltoall, ungraphed")):
        a, b = skills[off], skills[on]
        print(f"  rows {off} -> {on} ({what}): measured {a['meas']:.2f} -> {b['meas']:.2f} (saves {a['meas'] - b['meas']:.2f} s, "
              f"{100 * (1 - b['meas'] / a['meas']):.0f}%); model {a['step']:.2f} -> {b['step']:.2f} (saves "
              f"{a['step'] - b['step']:.2f} s, {100 * (1 - b['step'] / a['step']):.0f}%); model's raw EP "
              f"{a['passes'] * a['parts']['ep_raw']:.2f} s a step, exposed {b['passes'] * b['parts']['ep']:.2f} s with overlap")


def profile_split(rows: list[dict]) -> None:
    """Compute and communication of skills row 0 solved from its and row 1's profile (docstring item 4)."""
    (u0, u1), (h0, h1) = PROFILED["union_s"], PROFILED["hidden"]
    x = (u0 - u1) / ((1 - h0) - (1 - h1))
    c = u0 - (1 - h0) * x
    r0 = next(r for r in rows if r["stem"] == "llm-megatron-bridge-skills-qwen3-30b-h100-bf16" and r["i"] == 0)
    comp, ep = r0["row"].result.breakdown["compute"], r0["passes"] * r0["parts"]["ep_raw"]
    r1 = next(r for r in rows if r["stem"] == r0["stem"] and r["i"] == 1)
    hidden = ep - r1["passes"] * r1["parts"]["ep"]
    print(f"\n# skills rows 0 / 1 profile split: compute {c:.2f} s, communication {x:.2f} s a step; the model's row 0: compute "
          f"{comp:.2f} s ({100 * (comp / c - 1):+.0f}%), raw EP {ep:.2f} s ({100 * (ep / x - 1):+.0f}%); with overlap the "
          f"profile hides {h1 * x:.2f} s of it, the model {hidden:.2f} s")


def overlap_sensitivity(rows: list[dict]) -> None:
    """Each A2A overlap row's step if the overlap left (1 - PROFILED_HIDDEN) of the raw EP time exposed (first order:
    passes x the exposed change; PP stages' waits not re-run). Not adopted: one profile of one row."""
    print(f"\n# sensitivity, not adopted: A2A overlap rows with {100 * (1 - PROFILED_HIDDEN):.2f}% of the raw EP time "
          "exposed (skills row 1's profile), first order; error as measured step / predicted step - 1 (the tokens/s form)")
    for r in rows:
        if not r["a2a"]:
            continue
        p = r["parts"]
        add = r["passes"] * max(0.0, (1 - PROFILED_HIDDEN) * p["ep_raw"] - p["ep"])
        print(f"  {r['stem'][4:38]:34s} {r['i']}  {100 * (r['meas'] / r['step'] - 1):+6.1f}% -> {100 * (r['meas'] / (r['step'] + add) - 1):+6.1f}%"
              f"  (+{add:.2f} s on {r['step']:.2f} s)")


if __name__ == "__main__":
    import study_args  # an unknown argument refused before the study runs
    study_args.check()
    main()
