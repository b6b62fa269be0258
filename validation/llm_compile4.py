"""The compiled step's one-sided bias (issue 44, session 34, engineer cstep; not a test): the development read of every
earlier compiled row before and after the eager loss's measured bytes (framework.EAGER_LOSS), and the set
calibration/h200x1-llm-compile4-2026-11-29, registered before its run, in compile2's format and under compile2's rule
(validation/llm_compile2.py: the same prediction, registration and read-out; only the plan differs).

    python validation/llm_compile4.py --develop          # the 14 earlier compiled steps (compile, compile2, lease3) and
                                                         # the compile set's profiled GPU kernel time, before -> after
    python validation/llm_compile4.py --register [PATH]  # the predictions now -> a new registered.json (the set's by
                                                         # default; an existing one is refused, never overwritten)
    python validation/llm_compile4.py BUNDLE             # the read-out: BUNDLE/runs/<run>.json

'Before' is today's model with the loss bytes it had until session 34 (28 B a logit forward, 56 backward: BEFORE);
'after' is today's (22 / 26). Error = measured / predicted - 1 (negative: predicted slow), compile2's sign.
Plan: five compiled shapes (llm-step --compile) no earlier run measured in any mode, one launch each; no op shapes.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import llm_compile2  # noqa: E402  (compile2's prediction, registration and read-out, reused)

from simcluster.hardware.gpu import load_gpu  # noqa: E402
from simcluster.heldout.eager import model_of  # noqa: E402
from simcluster.heldout.eager_registered import launch_shapes  # noqa: E402
from simcluster.llm import eager  # noqa: E402
from simcluster.llm.comm import Network  # noqa: E402
from simcluster.llm.framework import EAGER_LOSS, EAGER_LOSS_UNTIL_34  # noqa: E402
from simcluster.llm.spec import BatchSpec, ParallelSpec  # noqa: E402
from simcluster.llm.work import build_work  # noqa: E402
from simcluster.runner.llm_decoder import PRESETS  # noqa: E402
from simcluster.strict import load_json  # noqa: E402

ROOT = llm_compile2.ROOT
SET = ROOT / "calibration/h200x1-llm-compile4-2026-11-29"
CAL = ROOT / "calibration"
BEFORE = EAGER_LOSS_UNTIL_34   # the eager loss as modelled until session 34
# preset, layers (None: the preset's), seq, micro-batch: short steps, 4096 tokens, hidden 1024 (the worst preset), one long
COMPILED = (("0.3b", None, 4096, 3), ("1b", None, 1024, 2), ("0.8b", None, 4096, 2), ("0.5b", None, 1024, 8),
            ("2b", None, 4096, 2))
OP: tuple = ()


def provenance() -> dict:
    return {"set": str(SET.relative_to(ROOT)), "eager_loss_bytes_per_logit": EAGER_LOSS,
            "host_folders": {"compile": str(llm_compile2.COMPILE_HOST.relative_to(ROOT))}}


def earlier_rows() -> list[dict]:
    """Every earlier compiled run on one H200 (the compile set's check/ documents, compile2's and lease3's runs/) and
    the compile set's eager arm: set, kind, preset, layers, seq, micro_batch, measured step (s), profiled kernel time
    per step (s; the compile set only, else None)."""
    rows = []
    for path in sorted((CAL / "h200x1-llm-compile-2026-11-29/check").glob("*/llm-step/*/stdout.txt")):
        doc = eager.read_document(path)
        shape = doc["shapes"][0]
        rows.append({"set": "compile", "kind": "compile" if path.parent.name.endswith("-compile") else "single",
                     "preset": doc["model"]["preset"], "layers": None, "seq": shape["seq"],
                     "micro_batch": shape["micro_batch"], "measured_s": shape["median_step_s"],
                     "kernel_s": shape.get("profile", {}).get("kernel_time_per_step_s")})
    for name in ("compile2", "lease3"):
        bundle = CAL / f"h200x1-llm-{name}-2026-11-29"
        for reg in load_json(bundle / "registered.json", what="registered predictions")["runs"]:
            if reg["kind"] != "compile":
                continue
            shapes = launch_shapes(bundle, reg)[0]
            rows += [{"set": name, "kind": "compile", "preset": reg["preset"], "layers": reg["layers"], "seq": reg["seq"],
                      "micro_batch": reg["micro_batch"], "measured_s": shapes[0]["median_step_s"], "kernel_s": None}]
    return rows


def gpu_seconds(row: dict, hosts: dict, gpu, fields: dict | None) -> float:
    """The model's GPU busy time of one step (the kernels: layers, embedding, head, casts, optimizer; no host time)."""
    cfg = PRESETS[row["preset"]] | ({"layers": row["layers"]} if row["layers"] else {})
    par = ParallelSpec()
    fw = llm_compile2.replace(eager.torch_framework(par, hosts, compiled=row["kind"] == "compile"), **(fields or {}))
    st = build_work(model_of({"model": cfg}, row["seq"]), par, BatchSpec(row["micro_batch"], row["micro_batch"]), gpu,
                    Network(None, 1), None, fw).stages[0]
    return st.forward[0].parts["compute"] + st.backward[0].parts["compute"] + st.optimizer_s - fw.host_step_s


def develop() -> int:
    hosts, gpu = llm_compile2.host_fits(), load_gpu(llm_compile2.CARD)[0]
    rows = earlier_rows()
    print("error = measured / predicted - 1; before: the eager loss at 28 / 56 B a logit, after: 22 / 26 (EAGER_LOSS)")
    errs: dict[str, list] = {}
    for r in (x for x in rows if x["kind"] == "compile"):
        spec = (r["kind"], r["preset"], r["layers"], r["seq"], r["micro_batch"], hosts, gpu)
        b, a = (llm_compile2.predict(*spec, fields)[0] for fields in (BEFORE, None))
        eb, ea = r["measured_s"] / b - 1, r["measured_s"] / a - 1
        errs.setdefault(r["set"], []).append((eb, ea))
        name = llm_compile2.run_name("compile", r["preset"], r["layers"], r["seq"], r["micro_batch"])
        print(f"{r['set']:9s} {name:22s} measured {1e3 * r['measured_s']:6.1f} ms  predicted {1e3 * b:6.1f} -> {1e3 * a:6.1f} ms"
              f"  error {100 * eb:+6.1f}% -> {100 * ea:+6.1f}%")
    llm_compile2.print_before_after(errs, "compiled steps", 9)
    print("the compile set's profiled step (one per run): GPU kernel time measured / modelled - 1, before -> after")
    for r in (x for x in rows if x["kernel_s"]):
        # the eager arm as session 34 read it: the generic eager block (session 35's runner block: llm_eagerbias.py)
        b, a = (gpu_seconds(r, hosts, gpu, {**(fields or {}), "autocast_block": False}) for fields in (BEFORE, None))
        name = llm_compile2.run_name(r["kind"], r["preset"], r["layers"], r["seq"], r["micro_batch"])
        print(f"  {name:24s} kernels {1e3 * r['kernel_s']:6.1f} ms  model {1e3 * b:6.1f} -> {1e3 * a:6.1f} ms  "
              f"{100 * (r['kernel_s'] / b - 1):+6.1f}% -> {100 * (r['kernel_s'] / a - 1):+6.1f}%")
    return 0


def main(argv: list[str]) -> int:
    return llm_compile2.run_main("llm_compile4", argv, SET, lambda out: llm_compile2.register(out, COMPILED, OP, provenance()),
                                 develop)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
