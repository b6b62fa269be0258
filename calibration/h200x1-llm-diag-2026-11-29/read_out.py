"""Read-out of the issue-44 development diagnostic (device_run.sh's diag.tgz, unpacked into this folder). Development
only: nothing here is a prediction judged against a held-out set.

    python calibration/h200x1-llm-diag-2026-11-29/read_out.py [FOLDER]

(a) mem/<preset>-{eager,compile}.json (memdiag.py): per shape, the measured markers and peaks beside the model's
    breakdown (memory.memory_per_gpu, eager and compiled framework); per-block forward growth against the model's
    layer_activation_bytes; blocks 0 and L/2's saved tensors by kind; the largest groups alive at the peak.
(b) host/MODE-L<n>.json: host fits per mode (host.fit_host over the layer counts with the model's kernels per layer:
    single, ckpt as eager.fit_modes does them; op with ParallelSpec(recompute="op")), measured kernels and CPU ops per
    layer (profile slope) against the model's kernels; repeat/0.3b-op-<i>.json: each launch's median step and host
    issue time, and the spread max / min - 1.
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

from simcluster.heldout.eager import model_of  # noqa: E402
from simcluster.llm import eager, host, memory  # noqa: E402
from simcluster.llm.spec import BatchSpec, ParallelSpec  # noqa: E402
from simcluster.runner.llm_step import PRESETS  # noqa: E402

GiB, MiB = 2 ** 30, 2 ** 20
CAPACITY = 141e9


def _load(path: Path) -> dict | None:
    try:
        text = path.read_text()
        return json.loads(text[text.index("{"):])
    except (OSError, ValueError) as exc:
        print(f"{path}: unreadable ({type(exc).__name__}: {str(exc)[:80]})")
        return None


def model_memory(preset: str, seq: int, micro: int, compiled: bool) -> tuple[object, float]:
    m = model_of({"model": PRESETS[preset]}, seq)
    par, batch = ParallelSpec(), BatchSpec(micro, micro)
    fw = eager.torch_framework(par, None, compiled)
    return memory.memory_per_gpu(m, par, batch, CAPACITY, fw), memory.layer_activation_bytes(m, par, batch, fw)


def memory_part(folder: Path) -> None:
    for preset in ("1b", "0.3b"):
        docs = {arm: _load(folder / f"mem/{preset}-{arm}.json") for arm in ("eager", "compile")
                if (folder / f"mem/{preset}-{arm}.json").exists()}
        docs = {k: v for k, v in docs.items() if v}
        if not docs:
            continue
        print(f"\n== (a) {preset}: allocated memory, eager vs compiled (GiB; model: memory.memory_per_gpu) ==")
        for arm, d in docs.items():
            mk, h = d["markers_bytes"], d.get("history", {})
            mb, layer = model_memory(d["preset"], d["seq"], d["micro_batch"], d["compile"])
            deltas = d["block_forward_delta_bytes"]
            print(f"[{arm}] {preset} {d['seq']}:{d['micro_batch']} torch {d['torch']}")
            print("  measured: " + ", ".join(f"{k} {v / GiB:.2f}" for k, v in mk.items()))
            if h:
                print(f"  history step: peak {h['peak_bytes'] / GiB:.2f} (max_memory_allocated {d['max_memory_allocated_bytes'] / GiB:.2f}) "
                      f"at entry {h['peak_entry']} of {h['entries']}; start {h['start_bytes'] / GiB:.2f}")
            print("  model:    " + ", ".join(f"{k} {getattr(mb, k) / GiB:.2f}" for k in
                                             ("parameters", "gradients", "optimizer", "activations", "logits", "weight_copies", "overhead")))
            print(f"  per block forward growth: median {statistics.median(deltas) / MiB:.1f} MiB (first {deltas[0] / MiB:.1f}, "
                  f"last {deltas[-1] / MiB:.1f}); model layer activations {layer / MiB:.1f} MiB")
            for block, s in d["saved"].items():
                kinds = ", ".join(f"{k} {v / MiB:.1f}" for k, v in sorted(s["bytes_by_kind"].items(), key=lambda kv: -kv[1]))
                print(f"  block {block} saved ({s['nodes']} autograd nodes, MiB): {kinds}" + (f"; errors {s['errors'][:2]}" if s["errors"] else ""))
                for t in sorted(s["tensors"], key=lambda t: -t["storage_bytes"])[:12]:
                    print(f"      {t['storage_bytes'] / MiB:8.1f} MiB {t['kind']:17s} {t['dtype']:8s} {t['shape']} {t['node']}.{t['attr']}")
            if h:
                print("  alive at the peak, largest groups:")
                for g in h["groups"][:15]:
                    print(f"      {g['bytes'] / GiB:7.3f} GiB x{g['count']:<4d} {g['what'][:150]}")
        if len(docs) == 2:
            e, c = docs["eager"]["markers_bytes"], docs["compile"]["markers_bytes"]
            print("  compiled - eager: " + ", ".join(f"{k} {(c[k] - e[k]) / GiB:+.2f}" for k in e if k in c))


def _points(folder: Path, mode: str, key) -> list[tuple[int, float]]:
    out = []
    for path in sorted((folder / "host").glob(f"{mode}-L*.json")):
        d = _load(path)
        if d and d["shapes"] and d["shapes"][0].get("status") == "ok":
            v = key(d["shapes"][0])
            if v is not None:
                out.append((d["model"]["layers"], v))
    return out


def host_part(folder: Path) -> None:
    print("\n== (b) host cost per kernel, hidden 128 (host.fit_host with the model's kernels per layer) ==")
    pars = {"single": ParallelSpec(), "ckpt": ParallelSpec(recompute="full"), "op": ParallelSpec(recompute="op")}
    for mode, par in pars.items():
        pts = _points(folder, mode, lambda s: s["median_step_s"])
        if len({p[0] for p in pts}) < 2:
            print(f"{mode}: fewer than two layer counts")
            continue
        paths = sorted((folder / "host").glob(f"{mode}-L*.json"))
        d = _load(paths[0])
        tiny, s0 = model_of(d, d["shapes"][0]["seq"]), d["shapes"][0]
        k = host.layer_kernels(tiny, par, BatchSpec(s0["micro_batch"], s0["micro_batch"]), eager.torch_framework(par))
        ends = (min(p[0] for p in pts), max(p[0] for p in pts))   # fitted on the fewest and most layers, the rest checks
        fit_pts = [p for p in pts if p[0] in ends]
        c, a = host.fit_host(fit_pts, k)
        line = f"{mode}: {c * 1e6:.1f} us per kernel + {a * 1e3:.2f} ms per step (model kernels per layer {k}; layers {[p[0] for p in fit_pts]})"
        rest = [p for p in pts if p not in fit_pts]
        for n, t in rest:   # the op L8 point, not fitted: predicted from the end points' fit
            line += f"; L{n} measured {t * 1e3:.1f} ms vs fit {(a + c * k * n) * 1e3:.1f} ms"
        print(line)
        for what, key in (("kernels", lambda s: s.get("profile", {}).get("kernel_per_step")),
                          ("CPU ops", lambda s: s.get("profile", {}).get("cpu_ops_per_step"))):
            kp = _points(folder, mode, key)
            if len({p[0] for p in kp}) >= 2:
                slope = np.polyfit([p[0] for p in kp], [p[1] for p in kp], 1)[0]
                print(f"    {what} per layer measured {slope:.1f}" + (f" (model {k}, {100 * (slope / k - 1):+.1f}%)" if what == "kernels" else ""))
    print("\n== (b) launch-to-launch spread, 0.3b 2048:16 op (registered run 367.2 ms, profiled look 344.2 ms) ==")
    steps = []
    for path in sorted((folder / "repeat").glob("0.3b-op-*.json")):
        d = _load(path)
        if d and d["shapes"] and d["shapes"][0].get("status") == "ok":
            s = d["shapes"][0]
            steps.append(s["median_step_s"])
            iss = s["host_issue_s"]
            print(f"{path.stem}: step {s['median_step_s'] * 1e3:.1f} ms (min {min(s['step_times_s']) * 1e3:.1f}, max "
                  f"{max(s['step_times_s']) * 1e3:.1f}); host issue median {statistics.median(iss) * 1e3:.1f} ms "
                  f"({min(iss) * 1e3:.1f}-{max(iss) * 1e3:.1f})")
    if len(steps) >= 2:
        print(f"spread max / min - 1: {100 * (max(steps) / min(steps) - 1):.1f}% over {len(steps)} launches")


def main(argv: list[str]) -> int:
    folder = Path(argv[0]) if argv else Path(__file__).resolve().parent
    if not (folder / "status.txt").exists():
        print(f"{folder}: no status.txt (unpack diag.tgz here first: tar xzf FILES_AT/diag.tgz -C {folder} --strip-components 1)")
        return 2
    print((folder / "status.txt").read_text().rstrip())
    memory_part(folder)
    host_part(folder)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
