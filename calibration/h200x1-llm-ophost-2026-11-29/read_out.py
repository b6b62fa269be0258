"""Print the ophost probe's runs (runs/*.json under this folder, or the folder given): per shape and mode the step's
wall / issue / issuing-thread CPU time, the profiled step's ops, kernels, GPU busy and idle gaps, the policy's and GC's
time, the allocator's counters, the top CPU ops and CUDA runtime calls; then op - full per shape (extra host CPU time per
extra CPU op).   python calibration/h200x1-llm-ophost-2026-11-29/read_out.py [FOLDER]"""

from __future__ import annotations

import json
import pathlib
import sys


def ms(x):
    return "-" if x is None else f"{x * 1e3:.1f}"


def main() -> int:
    folder = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else pathlib.Path(__file__).parent) / "runs"
    paths = sorted(folder.glob("*.json"))
    if not paths:
        print(f"read_out: no runs/*.json under {folder.parent}")
        return 1
    for path in paths:
        try:
            doc = json.loads(path.read_text())
        except (OSError, ValueError) as exc:
            print(f"== {path.name}: unreadable ({exc}); see {path.stem}.stderr.txt")
            continue
        cfg = doc["model"]
        print(f"== {path.stem}: {doc['preset']} L{cfg['layers']} hidden {cfg['hidden']}, torch {doc['torch']}")
        by_mode = {}
        for m in doc["modes"]:
            if m["status"] != "ok":
                print(f"  {m['mode']}: {m['status']} {m.get('error', '')}")
                continue
            med, prof = m["median"], m.get("profiled_step", {})
            by_mode[m["mode"]] = (med, prof)
            ops = prof.get("cpu_ops") or 0
            print(f"  {m['mode']:4s} step {ms(med['wall_s'])} ms, issue {ms(med['issue_s'])} (fwd {ms(med['fwd_issue_s'])} "
                  f"bwd {ms(med['bwd_issue_s'])} opt {ms(med['opt_issue_s'])}), thread CPU {ms(med['thread_cpu_s'])} ms, "
                  f"process CPU {ms(med['process_cpu_s'])} ({med['process_cpu_s'] / med['issue_s']:.0%} of issue)")
            if prof:
                print(f"       profiled: {ops} CPU ops ({prof['aten_ops']} aten), {prof['kernels']} kernels, step "
                      f"{ms(prof['wall_s'])} ms issue {ms(prof['issue_s'])}; GPU busy {ms(prof['gpu_busy_union_s'])} ms, "
                      f"idle gaps {ms(prof['gpu_idle_gaps_s'])} (>50us {ms(prof['gpu_idle_gaps_over_50us_s'])}); "
                      f"process CPU per CPU op {med['process_cpu_s'] / max(ops, 1) * 1e6:.1f} us, per kernel "
                      f"{med['process_cpu_s'] / max(prof['kernels'], 1) * 1e6:.1f} us")
            pol, gcs, al = m["policy_per_step"], m["gc_per_step"], m["allocator_delta_per_step"]
            print(f"       policy {pol['calls']:.0f} calls {ms(pol['seconds'])} ms; GC {gcs['collections']:.1f} x "
                  f"{ms(gcs['seconds'])} ms; allocator/step: " + (", ".join(f"{k} {v:g}" for k, v in al.items() if v) or "all 0")
                  + "".join(f"; {k} absent" for k, v in al.items() if v is None))
            for row in prof.get("cpu_ops_top_self", [])[:6]:
                print(f"         self {ms(row['self_cpu_s']):>7s} ms {row['calls']:6d} x {row['op']}")
            for name, r in list(prof.get("cuda_runtime", {}).items())[:5]:
                print(f"         runtime {ms(r['time_s']):>7s} ms {r['calls']:6d} x {name} (max {ms(r['max_s'])} ms, "
                      f"{r['calls_over_100us']} over 100 us: {ms(r['time_over_100us_s'])} ms)")
        if "op" in by_mode and "full" in by_mode and by_mode["op"][1] and by_mode["full"][1]:
            (mo, po), (mf, pf) = by_mode["op"], by_mode["full"]
            dops, dk = po["cpu_ops"] - pf["cpu_ops"], po["kernels"] - pf["kernels"]
            dcpu = mo["process_cpu_s"] - mf["process_cpu_s"]
            print(f"  op - full: step {ms(mo['wall_s'] - mf['wall_s'])} ms, process CPU {ms(dcpu)} ms, CPU ops {dops:+d}, "
                  f"kernels {dk:+d}; extra CPU per extra CPU op {dcpu / dops * 1e6 if dops else float('nan'):.1f} us")
    return 0


if __name__ == "__main__":
    sys.exit(main())
