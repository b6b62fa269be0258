"""Grok-1's dispatcher alltoall as the model prices it, row by row, before and after session 52's moe52 fact (issue 44).
Development only: prints, judging nothing.

Per row of the two dgxc-benchmarking Grok-1 files (v24.11.1, v25.02: 36 development rows): the layout, the EP group's
placement (ranks a node x nodes), one dispatch's bytes per GPU (the alltoall over EP; the expert-TP all_gather after it:
comm.dispatch_bytes), the alltoall's time, the per-GPU network rate it is priced on and the limit that binds it
(collectives/fabric.Alltoall's breakdown), one MoE layer's GPU ms by piece (experts' GEMMs, router, permutations, the rest =
attention block, norms), the step's compute and exposed EP seconds (Megatron-Core 0.10's alltoall dispatcher runs its
alltoalls on the compute stream, nothing overlaps them: exposed = all), and the error, with the fact off (as session 51
ended) and on (now): heldout/registration.moe52_facts, collectives/cluster.NICS_AS_WIRED.
What the source implies, for comparison: DGX H100, one 400 Gb/s compute NIC per GPU (dgxc-benchmarking v25.02 8f5cbb3
README.md L80, L91-92), so an EP rank sends through its own NIC (or, with PXN, its rail peer's): 48.65 GB/s per GPU on
the NIC card the files use (roce-400g: 400 Gb/s x 0.973 payload), whatever the group's ranks a node.
    PYTHONPATH=. python studies/moe52_grok.py > studies/moe52_grok.txt
+ = predicted fast (reference/llm's convention)."""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "studies"))


def alltoall_of(ref, usage, p) -> dict:
    """The row's EP group, one dispatch's bytes and its alltoall's price (time, per-GPU rate, binding limit)."""
    from simcluster.cards import load_collective
    from simcluster.collectives.fabric import predict_fabric
    from simcluster.llm import comm
    from simcluster.llm.predict import network_for
    from simcluster.machine_models import build_cluster
    from simcluster.reference.llm import machine_for

    machine = machine_for(usage, p.par.gpus)
    intra = load_collective(machine.card)[0]
    net = network_for(machine, intra, build_cluster(machine, intra) if machine.domains > 1 else None)
    ep = comm.groups(p.par, net).ep
    sent, gathered = comm.dispatch_bytes(p.model, p.par, p.batch)
    out = {"ranks": ep.ranks_per_node, "nodes": ep.nodes, "sent": sent, "gathered": gathered,
           "a2a_s": comm.ep_dispatch_s(p.model, p.par, net, ep, sent)}
    if ep.inside_node:
        out.update(rate=None, limit="NVLink (inside one node)")
    else:
        view = dataclasses.replace(net.cluster, gpus_per_node=ep.ranks_per_node, job_nodes=ep.nodes)
        bd = predict_fabric(view, "alltoall", max(1, int(sent)), None, ep.flows).breakdown
        out.update(rate=bd["network_Bps_per_gpu"], limit=bd["binding_limit"])
    return out


def grok_rows() -> list:
    """[(file stem, row, RunPrediction, alltoall_of)] of the two Grok-1 files under today's switches."""
    from simcluster.reference.llm import llm_usage, predict_run, published_files, read_published

    out = []
    for file in published_files(None, "llm-"):
        ref = read_published(file, "published-llm-run")
        if "grok1" not in ref.name:
            continue
        usage = llm_usage(ref)
        for i, run in enumerate(ref.runs):
            p = predict_run(ref, usage, i, run)
            out.append((ref.name, i, p, alltoall_of(ref, usage, p)))
    return out


def main() -> int:
    from moedev51_rows import layer_split

    from simcluster.heldout.registration import moe52_facts

    with moe52_facts(False):
        before = {(s, i): (p, a) for s, i, p, a in grok_rows()}
    now = grok_rows()
    print("Grok-1 (dgxc v24.11.1 / v25.02, 36 development rows): the EP alltoall as priced, fact off -> on (moe52)")
    print("EP: ranks a node x nodes; MB: one dispatch's alltoall bytes per GPU (+ the expert-TP all_gather's whole);")
    print("a2a ms: one alltoall; GB/s: the per-GPU network rate it is priced on; layer ms: one MoE layer fwd + bwd GPU;")
    print("step s: compute + exposed EP (all of it: no overlap at Megatron-Core 0.10) of the predicted step")
    for s, i, p, a in now:
        p0, a0 = before[(s, i)]
        par, bd0, bd = p.par, p0.result.breakdown, p.result.breakdown
        ls = layer_split(p)
        step_m = p.measured if p.metric == "step_time_s" else p.batch.global_batch * p.model.seq / p.measured
        rate = f"{a0['rate'] / 1e9:5.1f} -> {a['rate'] / 1e9:5.1f} GB/s" if a["rate"] else "     NVLink         "
        print(f"v{s.split('-v')[1].split('-grok')[0]:8s} {i:2d} {p.batch.precision:4s} {par.gpus:4d} GPUs t{par.tp} etp{par.etp} ep{par.ep} c{par.cp} p{par.pp}"
              f" | EP {a['ranks']}x{a['nodes']} {a['sent'] / 1e6:.1f} MB (+{a['gathered'] / 1e6:.0f}) a2a "
              f"{1e3 * a0['a2a_s']:.3f} -> {1e3 * a['a2a_s']:.3f} ms {rate}"
              f" | step {p0.result.step_time_s:.2f} -> {p.result.step_time_s:.2f} s (measured {step_m:.2f}):"
              f" compute {bd['compute']:.2f}, EP {bd0['exposed_ep_comm']:.2f} -> {bd['exposed_ep_comm']:.2f}"
              f" | {100 * p0.error:+.1f} -> {100 * p.error:+.1f}%")
        print(f"    layer ms: experts {ls['experts']:.2f} router {ls['router']:.2f} permute {ls['permute']:.2f} "
              f"rest {ls['rest']:.2f}; binding limit {a0['limit']} -> {a['limit']}")
    errs0 = [100 * p0.error for p0, _ in before.values()]
    errs = [100 * p.error for _, _, p, _ in now]
    mean = lambda v: sum(map(abs, v)) / len(v)   # noqa: E731
    print(f"36 rows: mean |error| {mean(errs0):.2f} -> {mean(errs):.2f}%, within 10% {sum(abs(e) <= 10 for e in errs0)} -> "
          f"{sum(abs(e) <= 10 for e in errs)}; signed {min(errs):+.1f}..{max(errs):+.1f}% now")
    return 0


if __name__ == "__main__":
    import study_args  # an unknown argument refused before the study runs
    study_args.check()
    raise SystemExit(main())
