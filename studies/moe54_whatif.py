"""Session 54 moe54b (issue 44): what session 54's one-GPU MoE set (calibration/h200x1-moe54-2026-12-01, run and read
once) means for the model's MoE host price; findings only (docs/models/llm-findings.md, Session 54: moe54b). Nothing in
the model changes here and nothing is fitted into it. Every figure is DEVELOPMENT: the AWS rows' gap chose the set.

Part A, the six AWS Qwen3-30B-A3B rows (calibration/published/llm-awsome-megatron-bridge-qwen3-30b-p5-h100.yaml), from
the set's registration (P, G, the AWS steps) and its runs (events, kernels), via validation/moe54.read_out:
  where P loses: P = C + h (compute, moe_sync's host excess as priced, the exposed EP's GPU time in the forward segment
  hiding part of the host issue); h0 = the same host excess with no EP time in the segment (nothing on the device
  communicates) and with the term applied under A2A overlap too (where moe_sync.applies says 0);
  c' = the host seconds per modelled call at which the model's own calls of the pass, issued serially, take the
  measured events: events = N c' + R, N = the forward segment's calls (moe_sync.forward_segment, its two EP calls
  included) + the backward's calls + 1 (its EP call), R = the ungraphed router / preprocess calls at their own costs
  (llm/moe_graphs.with_ungraphed); against moe_sync's c = 147.2 us;
  what-if step: the row's predicted step + (events - P) x micro-batches x layers a stage (G's own definition, inverted;
  the pipeline bubble is not rescaled), error = measured / step - 1 (+ = predicted fast).
Part B, every MoE row of the judged files (heldout/registration.moe_rows_then: 70 development rows), the held-out MoE
rows outside AWS, then the AWS rows, per MoE layer pass on the row's own card: C (GPU compute price), h (moe_sync's host
excess as priced: the row's exposed EP in the segment; 0 under A2A overlap), H = N c + R (the model's own calls of the
pass at their costs, issued serially), H / C (> 1: host-bound by the model's own count), H' = N c' + R (c' the median
of Part A's). Two what-ifs, each moving the step by (T - C - h) x micro-batches x MoE layers a stage: at c', the floor
T = max(C + h, H'); floor at c, T = max(C + h, H) (the model's own c, no EP hiding and no A2A-overlap exemption). The
error is measured / step - 1 (+ = predicted fast).

    PYTHONPATH=. python studies/moe54_whatif.py          # both parts (~2 minutes: the published validation runs once)
    PYTHONPATH=. python studies/moe54_whatif.py --aws    # Part A alone (the test's)
"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "studies"))
sys.path.insert(0, str(ROOT / "validation"))

import moe54  # noqa: E402  (validation/moe54.py: the set's read-out)
from moe_rows import predict_row  # noqa: E402

from simcluster.hardware.gpu import load_gpu  # noqa: E402
from simcluster.llm import comm, compiled, layer_work, moe_compute, moe_host_floor, moe_sync, ops  # noqa: E402

AWS = moe54.STEM
MS = 1e3


def calls(gpu, fwd, bwd, dtype, fw) -> tuple[int, float]:
    """(N, R) of one layer pass: N the modelled calls issued at moe_sync's per-call cost (the forward segment with its
    two EP calls, the backward's calls and its EP call), R the host seconds of the ungraphed router / preprocess calls
    (llm/moe_host_floor.calls since session 54's moeterm54, the term's own count)."""
    n_f, n_b, r = moe_host_floor.calls(gpu, fwd, bwd, dtype, fw)
    return n_f + n_b, r


def host_no_ep(gpu, fwd, bwd, dtype, par, model, fw) -> float:
    """moe_sync's host excess of one layer pass with no EP time in the segment, applied whatever A2A overlap says."""
    f, b = moe_sync.sync_host_s(gpu, fwd, bwd, dtype, 0.0, 0.0, max(par.layer_split(model.layers)), fw.moe_sync_kernel_s, fw)
    return f + b


def part_a() -> float:
    """Part A's lines; returns the median c' (seconds a modelled call)."""
    res = moe54.read_out(moe54.BUNDLE)
    gpu = load_gpu(moe54.H200_CARD)[0]
    print("# Part A: AWS Qwen3-30B-A3B rows, one layer per micro-batch on the H200 card (ms); DEVELOPMENT (their gap chose the set)")
    print("row  pass       events  kernels  idle    P      C      h      h0     C+h0   events-(C+h0)  N   R     c' (us)")
    cps = []
    for r in res["rows"]:
        row = predict_row(AWS, r["row"])
        fwd, bwd = compiled.layer_ops(row.model, row.par, row.batch, row.framework)
        dt = row.batch.precision
        h0 = host_no_ep(gpu, fwd, bwd, dt, row.par, row.model, row.framework)
        n, rr = calls(gpu, fwd, bwd, dt, row.framework)
        cp = (r["events_s"] - rr) / n
        cps.append(cp)
        c = r["p_compute_s"]
        print(f"{r['row']:>3}  {r['pass']:<9} {MS * r['events_s']:6.2f}  {MS * r['kernels_s']:6.2f}  {MS * r['i_s']:5.2f}  "
              f"{MS * r['p_s']:5.2f}  {MS * c:5.2f}  {MS * r['p_host_s']:5.2f}  {MS * h0:5.2f}  {MS * (c + h0):5.2f}  "
              f"{MS * (r['events_s'] - c - h0):+8.2f}      {n:>3}  {MS * rr:4.2f}  {1e6 * cp:6.1f}")
    cmed = statistics.median(cps)
    print(f"# c' median {1e6 * cmed:.1f} us a modelled call (range {1e6 * min(cps):.1f}-{1e6 * max(cps):.1f}) against moe_sync's "
          f"c {1e6 * moe_sync_c():.1f} us: x{cmed / moe_sync_c():.2f}")
    print("row  measured   predicted  error    what-if step  error    (step + (events - P) x micro-batches x layers a stage)")
    errs = []
    for r in res["rows"]:
        meas, pred = r["aws_measured_step_s"], r["aws_predicted_step_s"]
        new = pred + r["d_s"] * r["micro_batches"] * r["layers_a_stage"]
        errs.append((meas / pred - 1, meas / new - 1))
        print(f"{r['row']:>3}  {meas:7.2f} s  {pred:7.2f} s  {100 * (meas / pred - 1):+6.1f}%  {new:8.2f} s    {100 * (meas / new - 1):+6.1f}%")
    print(f"# mean |error| {100 * statistics.mean(abs(a) for a, _ in errs):.1f}% -> {100 * statistics.mean(abs(b) for _, b in errs):.1f}% "
          f"(signed {100 * statistics.mean(a for a, _ in errs):+.1f}% -> {100 * statistics.mean(b for _, b in errs):+.1f}%)")
    return cmed


def moe_sync_c() -> float:
    return predict_row(AWS, 0).framework.moe_sync_kernel_s


def pass_figures(row, cprime: float) -> dict:
    """One MoE layer pass of a published row on its card: C, h (as priced), H (the model's own calls, serial), H'."""
    model, par, batch, gpu, fw = row.model, row.par, row.batch, row.gpu, row.framework
    dt = batch.precision
    fwd, bwd = compiled.layer_ops(model, par, batch, fw)
    comp_f, comp_b = ops.ops_time_s(gpu, fwd, dt), ops.ops_time_s(gpu, bwd, dt)
    host = 0.0
    if moe_sync.applies(fw, par):
        lc = comm.layer_comm(model, par, batch, row.net, comm.groups(par, row.net), fw)
        split = moe_compute.moe_compute(gpu, fwd, bwd, dt, comp_f, comp_b)
        ep_f, ep_b = layer_work.exposed_ep(par, lc, gpu, fw, split)
        host = sum(moe_sync.sync_host_s(gpu, fwd, bwd, dt, ep_f, ep_b, max(par.layer_split(model.layers)), fw.moe_sync_kernel_s, fw))
    n, rr = calls(gpu, fwd, bwd, dt, fw)
    c = comp_f + comp_b
    big_h, big_h2 = n * fw.moe_sync_kernel_s + rr, n * cprime + rr
    return {"C": c, "h": host, "H": big_h, "H2": big_h2, "delta": max(0.0, big_h2 - c - host), "delta_c": max(0.0, big_h - c - host),
            "local": model.experts // par.ep}


def part_b(cprime: float) -> None:
    from simcluster.heldout.registration import moe_rows_then
    from simcluster.reference.llm import validate_published_llm

    rows = validate_published_llm().rows
    judged = [(r.source, r.run, "dev") for r in moe_rows_then(rows)]
    held = [(r.source, r.run, "held") for r in rows if r.family == "MoE" and r.held_out and r.error is not None and r.source != AWS]
    aws = [(AWS, i, "aws") for i in sorted(moe54.ROWS)]
    print(f"# Part B: MoE rows, one MoE layer pass on the row's card (ms); H = the model's own calls at c, H' at c' = {1e6 * cprime:.1f} us")
    print("set   file row                                                  h     E   EP  L  mb   C       h      H      H/C   H'     delta  "
          "error -> at c' / floor at c")
    moved = []
    for stem, i, kind in judged + held + aws:
        row = predict_row(stem, i)
        if row.framework.moe_host is not None:   # the local spec prices its host otherwise (layer_work._moe_host)
            continue
        f = pass_figures(row, cprime)
        m = row.batch.global_batch // (row.batch.micro_batch * row.par.dp)
        per = m * row.model.moe_layers / row.par.pp
        new, floor = row.result.step_time_s + f["delta"] * per, row.result.step_time_s + f["delta_c"] * per
        before, after, at_c = (row.measured_step_s / x - 1 for x in (row.result.step_time_s, new, floor))
        moved.append((kind, before, after, f["H"] > f["C"], at_c))
        print(f"{kind:<5} {stem[4:]:<48} {i:>2}  {row.model.hidden:>5} {row.model.experts:>3} {row.par.ep:>3} {f['local']:>3} "
              f"{row.batch.micro_batch:>2} {MS * f['C']:6.2f}  {MS * f['h']:5.2f}  {MS * f['H']:6.2f}  {f['H'] / f['C']:5.2f} "
              f"{MS * f['H2']:6.2f}  {MS * f['delta']:5.2f}  {100 * before:+6.1f}% -> {100 * after:+6.1f}% / {100 * at_c:+6.1f}%")
    for kind in ("dev", "held", "aws"):
        sel = [x for x in moved if x[0] == kind]
        if sel:
            mean = [100 * statistics.mean(abs(x[k]) for x in sel) for k in (1, 2, 4)]
            sign = [100 * statistics.mean(x[k] for x in sel) for k in (1, 2, 4)]
            print(f"# {kind}: {len(sel)} rows, host-bound by the model's own count (H > C) {sum(x[3] for x in sel)}; mean |error| "
                  f"{mean[0]:.1f}% (signed {sign[0]:+.1f}%) -> at c' {mean[1]:.1f}% ({sign[1]:+.1f}%), floor at c {mean[2]:.1f}% ({sign[2]:+.1f}%)")


HEADER = "# PYTHONPATH=. python studies/moe54_whatif.py   (session 54 moe54b: the model unchanged; development figures)"


def main(aws_only: bool = False) -> None:
    print(HEADER)
    cprime = part_a()
    if not aws_only:
        part_b(cprime)


if __name__ == "__main__":
    import study_args  # an unknown argument refused before the study runs
    main(aws_only="--aws" in study_args.check(options=("--aws",)))
