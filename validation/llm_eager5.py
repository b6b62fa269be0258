"""The eager step's shortfall on one GPU (issue 44, session 34, engineer eagerfix; not a test): the development read of
every eager single-GPU row before and after the two measured kernel rates (GpuSpec.upcast_time_s: torch's bf16 -> fp32
copies; framework.FUSED_ADAMW_BYTES: the fused AdamW's rate), and the set calibration/h200x1-llm-eager5-2026-11-29,
registered before its run, in compile2's format (kind "eager") and under compile2's compiled rule applied to eager.

    python validation/llm_eager5.py --develop          # the compile set's eager arm (step and profiled GPU kernel time)
                                                       # and the sac set's none arm, before -> after
    python validation/llm_eager5.py --register [PATH]  # the predictions now -> a new registered.json (never overwritten)
    python validation/llm_eager5.py BUNDLE             # the read-out: BUNDLE/runs/<run>.json

'Before' is today's model with the up-casts priced as any memory-bound kernel and AdamW at 28 B a parameter (BEFORE);
'after' is today's. Error = measured / predicted - 1 (negative: predicted slow), compile2's sign.
Plan: five eager shapes (llm-step, no --compile, no checkpointing) no earlier run measured in any mode, one launch each.
"""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import llm_compile2  # noqa: E402  (compile2's prediction, registration and read-out, reused)
import llm_compile4  # noqa: E402  (the earlier rows and the model's GPU busy time)

from simcluster.hardware.gpu import UPCAST_BPS_PER_SM, load_gpu  # noqa: E402
from simcluster.llm import eager, eager_ac  # noqa: E402
from simcluster.llm.framework import FUSED_ADAMW_BYTES  # noqa: E402
from simcluster.strict import load_json  # noqa: E402

ROOT = llm_compile2.ROOT
SET = ROOT / "calibration/h200x1-llm-eager5-2026-11-29"
SAC = ROOT / "calibration/h200x1-llm-sac-2026-11-29"
BEFORE_ADAM = {"adam_bytes": 28.0}   # the fused AdamW as modelled until this session
SESSION_34 = {"autocast_block": False}   # both arms as session 34 read them: the generic eager block (session 35's runner
                                         # block, llm/autocast_block.py: validation/llm_eagerbias.py --develop)
# preset, layers (None: the preset's), seq, micro-batch, in run order: two short (host-bound) steps, two 4096-token steps
# (the 3.1b one with a 152K vocabulary, last: the largest), one mid GPU-bound step
EAGER = (("1.1b", None, 1024, 2), ("0.8b", None, 1024, 4), ("0.5b", None, 4096, 4), ("2b", None, 1024, 8),
         ("3.1b", None, 4096, 1))


def provenance() -> dict:
    return {"set": str(SET.relative_to(ROOT)), "launches": 1, "upcast_Bps_per_sm": UPCAST_BPS_PER_SM,
            "fused_adamw_bytes": round(FUSED_ADAMW_BYTES, 3),
            "rule": "error = measured / predicted - 1; eager met: mean |step error| <= 8% over the eager shapes that ran "
                    "(at least 3) and every memory within 10%",
            "host_folders": {"single": str(llm_compile2.OP_HOST.relative_to(ROOT))}}


def sac_none_rows() -> list[dict]:
    """The sac set's eager runs without checkpointing (ac_mode none): set, kind, preset, layers, seq, micro_batch,
    measured step (s)."""
    rows = []
    for reg in load_json(SAC / "registered.json", what="registered sac predictions")["runs"]:
        if reg["ac_mode"] != "none":
            continue
        doc = load_json(SAC / "runs" / f"{reg['run']}.json", what="llm-step run document")
        shape = doc["shapes"][0]
        assert eager_ac.document_mode(doc) == "none"
        rows.append({"set": "sac", "kind": "single", "preset": reg["preset"], "layers": None, "seq": shape["seq"],
                     "micro_batch": shape["micro_batch"], "measured_s": shape["median_step_s"], "kernel_s": None})
    return rows


def _predict(r: dict, hosts: dict, gpu, before: bool) -> tuple[float, float | None]:
    """(step seconds, modelled GPU busy seconds or None) of one eager row, before or after."""
    card = replace(gpu, upcast_Bps_per_sm=float("inf")) if before else gpu   # before: up-casts at the memory-bound rate
    fields = {**SESSION_34, **(BEFORE_ADAM if before else {})}
    step = llm_compile2.predict("eager", r["preset"], r["layers"], r["seq"], r["micro_batch"], hosts, card, fields)[0]
    return step, llm_compile4.gpu_seconds({**r, "kind": "single"}, hosts, card, fields)


def develop() -> int:
    hosts = eager.fit_modes(llm_compile2.OP_HOST, SESSION_34) | {"compile": llm_compile2.host_fits()["compile"]}
    gpu = load_gpu(llm_compile2.CARD)[0]
    rows = [r for r in llm_compile4.earlier_rows() if r["kind"] == "single"] + sac_none_rows()
    print("error = measured / predicted - 1; before: up-casts at the memory-bound rate, AdamW 28 B a parameter; after: "
          f"up-casts at {gpu.sm_count} SMs x {gpu.upcast_Bps_per_sm / 1e9:.1f} GB/s, AdamW {FUSED_ADAMW_BYTES:.1f} B")
    errs: dict[str, list] = {}
    kernels = []
    for r in rows:
        (b, kb), (a, ka) = _predict(r, hosts, gpu, True), _predict(r, hosts, gpu, False)
        eb, ea = r["measured_s"] / b - 1, r["measured_s"] / a - 1
        errs.setdefault(r["set"], []).append((eb, ea))
        name = llm_compile2.run_name("eager", r["preset"], r["layers"], r["seq"], r["micro_batch"])
        print(f"{r['set']:8s} {name:22s} measured {1e3 * r['measured_s']:6.1f} ms  predicted {1e3 * b:6.1f} -> {1e3 * a:6.1f} ms"
              f"  error {100 * eb:+6.1f}% -> {100 * ea:+6.1f}%")
        if r["kernel_s"]:
            kernels.append((name, r["kernel_s"], kb, ka))
    llm_compile2.print_before_after(errs, "eager steps", 8)
    print("the compile set's eager arm, profiled step: GPU kernel time measured / modelled - 1, before -> after")
    for name, k, kb, ka in kernels:
        print(f"  {name:24s} kernels {1e3 * k:6.1f} ms  model {1e3 * kb:6.1f} -> {1e3 * ka:6.1f} ms  "
              f"{100 * (k / kb - 1):+6.1f}% -> {100 * (k / ka - 1):+6.1f}%")
    return 0


def main(argv: list[str]) -> int:
    return llm_compile2.run_main("llm_eager5", argv, SET, lambda out: llm_compile2.register(out, (), (), provenance(), eager=EAGER),
                                 develop)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
