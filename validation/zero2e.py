"""Issue 44, session 48 (helper zero2e): FSDP2 ZeRO-2 re-priced as one candidate (FrameworkSpec.zero2_fsdp2 with the
regather: llm/fsdp2_zero2.py), shipped and candidate columns on GPU-bound 1b / 3b shapes. A registered 2 x H200 set
(calibration/h200x2-zero2e-2026-11-30): two shapes new to calibration (1b 3936:2, 3b 3296:2), each run as zero2d's two
variants, FSDP2 with reshard_after_forward=False and 4 micro-batches a step reduce-scattered after every micro-batch: A
(regather) FSDP2's default reshard_after_backward=True, B (gathered) --reshard-after-backward false. 3 processes a
variant of the 3b shape and 2 of the 1b one, ABBA per shape.

    python validation/zero2e.py --register calibration/h200x2-zero2e-2026-11-30/registered.yaml   # before the call
    python validation/zero2e.py [calibration/h200x2-zero2e-2026-11-30]                            # after: the read-out

Registered per row: the product's step (step_ms: zero2_regather and zero2_fsdp2 off, the wait on, for both variants)
and the candidate's (step_ms_candidate: zero2_fsdp2 on, with the regather for A, without it for B: the runner's
gathered variant does not re-gather), the regather row's exposed alternative (step_ms_exposed: rule X), host share,
stage-0 memory. Rules N, M, B, P are validation/zero2.py's (imported;
M on the shipped column), R is zero2's rule A (zero2.adopt) on A / B with each column's own ratio, X the same on the
exposed alternative against the candidate (said, not deciding D), C the two columns' mean |error| over every process, D
the verdict with its consequence fixed here; nothing fitted on the runs after.
"""

from __future__ import annotations

import math
import statistics
import sys
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "validation"))

import nosync  # noqa: E402
import zero2  # noqa: E402
import zero2b  # noqa: E402
import zero2d  # noqa: E402

from simcluster.heldout.registration import set_main  # noqa: E402

BUNDLE = ROOT / "calibration" / "h200x2-zero2e-2026-11-30"
PROCESSES = {"1b": 2, "3b": 3}   # of each variant per shape: 10 processes, about 205 s (device_run.sh)
TIMED_STEPS = 3        # per process (device_run.sh --steps)
SEQS = (544, 800, 1312, 1760, 2400, 2880, 3296, 3936)   # this helper's seqs, each new to every bundle
# (preset, seq, micro_batch, why): the most regather per step among the GPU-bound (host share <= 0.06) shapes of the 1b and
# 3b presets at SEQS x micro-batch 1, 2 (--register prints them); the 1.1b / 3.1b presets are host-bound at SEQS but 3936:2
SHAPES = (("1b", 3296, 2, "GPU-bound (predicted host share 0.06), the shortest GPU-bound 1b seq (3296, 3936 at micro-batch 2): "
                          "the exposed alternative's regather the largest (+2.8%)"),
          ("3b", 2400, 2, "GPU-bound (predicted host share 0.06), the shortest GPU-bound 3b seq (2400..3936 at micro-batch 2): "
                          "the exposed alternative's regather the largest (+4.2%)"))
VARIANTS = {"regather": "fsdp-zero2", "gathered": "fsdp-zero2"}   # zero2d's: A (FSDP2's default), B (no reshard after backward)
# zero2.py's judge with this set's floors: the two variants alternate on one lease, so a miss common to both cancels in
# their ratio, and the zero2d set's process sd was 0.004 (development): a 0.6% floor (1.5 x that sd) and 0.8% to decide
# in place of 2% and 2%, or no shape here would decide (the candidate's ratios +1.0% / +1.3%); column_pct: rule C's
JUDGE = zero2.JUDGE | {"adopt_min_pct": 0.8, "diff_floor_pct": 0.6, "column_pct": 0.5}
RULES = {k: zero2.RULES[k] for k in ("N", "M", "B", "P")} | {
    "measured": f"rank 0's median step of each process (2 warm-up, {TIMED_STEPS} timed steps of 4 micro-batches); a "
                "process the budget guard skipped or that failed is left out and said",
    "R": "validation/zero2.py's rule A on A / B per shape: measured r_m = exp(mean log step regather - mean log step "
         "gathered) against the candidate's ratio (the regather row's step_ms_candidate over the gathered row's: 'with') "
         "and the shipped one's (step_ms over step_ms: 'without', +0.0%), deciding only where the two differ by >= "
         "adopt_min_pct, the same limit and words (ADOPT / REJECT / UNDECIDED / NO DATA; 'not deciding' lines); UNDECIDED "
         "(NOISE) if N is ABOVE",
    "X": "the exposed alternative, said beside D, not changing it (suggested by the zero2d set's runs: development): every "
         "FSDP2 gather (all_gather of every block on the 2-rank NVLink card, plus its copy-out) exposed on the step, so the "
         "regather row's step_ms_exposed = the gathered row's step_ms_candidate + (micro-batches - 1) x that gather; "
         "zero2.adopt on A / B with step_ms_exposed ('with') and step_ms_candidate ('without') over the gathered row's "
         "step_ms_candidate: ADOPT (the gathers are exposed) / REJECT (the candidate's overlap holds) / UNDECIDED / NO DATA",
    "C": "each column's mean |error| (registered / measured - 1) over every process: CANDIDATE BETTER if the candidate's "
         "is lower by >= column_pct points, SHIPPED BETTER if higher by >= column_pct points, else TIE; NO DATA without a "
         "process",
    "D": "NOISE if N is ABOVE the target; else 'FSDP2 ZERO-2 ADOPTED' where R says ADOPT and C does not say SHIPPED "
         "BETTER, 'FSDP2 ZERO-2 REJECTED' where R says REJECT or C says SHIPPED BETTER, else 'FSDP2 ZERO-2 UNDECIDED'; "
         "followed by 'step within' / 'step not within' (M) and 'memory met' / 'memory not met' (P). Consequence fixed "
         "before the run: ADOPTED turns FrameworkSpec.zero2_fsdp2 and zero2_regather on for framework torch's zero 2 "
         "(llm/eager.py) and the FSDP2 frameworks (torchtitan-fsdp2, kempnerforge-fsdp2), with the pins that moves; "
         "REJECTED and UNDECIDED (NOISE included) leave the product unchanged (both off)",
}


def step_candidate(preset: str, seq: int, mb: int, mode: str, regather: bool, exposed: bool = False,
                   bf16_weights: bool = False) -> float:
    """The row's step (ms) under the candidate: FrameworkSpec.zero2_fsdp2 on, zero2_regather as the variant runs
    (zero2_exposed as `exposed`: validation/zero2f.py's candidate; zero2_bf16_weights as `bf16_weights`: zero2g's)."""
    from simcluster.heldout.eager_regimes import regime_predict
    from simcluster.llm import eager

    with eager.torch_framework_as(lambda fw: replace(fw, zero2_fsdp2=True, zero2_regather=regather, zero2_exposed=exposed,
                                                     zero2_bf16_weights=bf16_weights)):
        return regime_predict(preset, mb, mode, "h200", microbatches=nosync.MICROBATCHES, seq=seq)["step_ms"]


def gather_s(preset: str, seq: int) -> float:
    """Seconds of one FSDP2 gather of the preset (zero 2 on 2 ranks): every block's all_gather on the 2-rank NVLink card
    (hsdp.zero3_calls, alone) and its copy-out (fsdp2_zero2.copy_out_s): what the exposed alternative adds a re-gather."""
    from simcluster.cards import load_collective
    from simcluster.hardware.gpu import load_gpu
    from simcluster.heldout.eager import CARDS, H200, model_of
    from simcluster.heldout.eager_regimes import layout_of
    from simcluster.llm import comm, fsdp2_zero2, hsdp
    from simcluster.llm.eager import torch_framework
    from simcluster.llm.param_counts import stage_params
    from simcluster.runner.llm_step import PRESETS

    model, (par, gpus, _) = model_of({"model": PRESETS[preset]}, seq), layout_of("fsdp-zero2")
    net = comm.Network(load_collective(ROOT / CARDS[("nvlink", 2)])[0], gpus)
    params, fw = stage_params(model, par, 0), torch_framework(par)
    z = hsdp.zero3_calls(net, comm.groups(par, net), par, fw, params.dense, params.expert, model.layers)
    return z.gather_s + fsdp2_zero2.copy_out_s(load_gpu(ROOT / H200)[0], params.dense + params.expert, fw.param_bytes)


def add_keys(row: dict, variant: str) -> None:
    """nosync.rows' extra: the process stem, FSDP2's two reshard flags the process runs, PROCESSES, the candidate, and
    the regather row's exposed alternative (rule X)."""
    shape = (row["preset"], row["seq"], row["micro_batch"], row["mode"])
    row["process"] = f"{row['preset']}-{row['seq']}x{row['micro_batch']}-{variant}"
    row["reshard_after_forward"] = False
    row["reshard_after_backward"] = variant == "regather"
    row["processes"] = PROCESSES[row["preset"]]
    row["predicted"]["step_ms_candidate"] = step_candidate(*shape, regather=variant == "regather")
    if variant == "regather":
        row["predicted"]["step_ms_exposed"] = round(step_candidate(*shape, regather=False) + (nosync.MICROBATCHES - 1)
                                                    * gather_s(row["preset"], row["seq"]) * 1e3, 2)


def columns(procs: list[dict], judge: dict) -> str:
    """Rule C: the shipped and candidate columns' mean |error| over every process, and the word."""
    if not procs:
        return "NO DATA"
    err = {k: statistics.mean(abs(float(p["row"]["predicted"][k]) / (p["step_s"] * 1e3) - 1) for p in procs)
           for k in ("step_ms", "step_ms_candidate")}
    gap = 100 * (err["step_ms_candidate"] - err["step_ms"])
    word = "CANDIDATE BETTER" if gap <= -judge["column_pct"] else "SHIPPED BETTER" if gap >= judge["column_pct"] else "TIE"
    return (f"{word}: mean |error| shipped {err['step_ms']:.1%}, candidate {err['step_ms_candidate']:.1%} over "
            f"{len(procs)} processes (decides at {judge['column_pct']:.1f} point)")


def read_out(bundle: Path) -> dict:
    """validation/zero2.py's read-out with rule R on each column's A / B ratio, then X and C, and D re-said from R and C."""
    out = zero2.read_out(bundle, rule="R", word="FSDP2 ZERO-2", term="the candidate",
                         keys=("step_ms_candidate", "step_ms"), variants=VARIANTS, base=("step_ms_candidate", "step_ms"))
    if any(not isinstance(r["predicted"].get("step_ms_exposed"), (int, float)) for r in out["regs"] if r["variant"] == "regather"):
        from simcluster.errors import SimclusterError
        raise SimclusterError(f"{bundle / 'registered.yaml'}: a regather row without predicted.step_ms_exposed (ms)")
    v = out["verdicts"]
    said, lines = zero2.adopt(out["procs"], out["regs"], out["judge"], out["sd"], "the exposed gathers",
                              ("step_ms_exposed", "step_ms_candidate"), tuple(VARIANTS), ("step_ms_candidate",) * 2)
    x = f"{'UNDECIDED (NOISE)' if v['D'].startswith('NOISE') else said} | " + " | ".join(lines)
    return decide(out, bundle, {"X": x})


def decide(out: dict, bundle: Path, said: dict, word: str = "FSDP2 ZERO-2") -> dict:
    """Rule C (columns, this set's judge: column_pct too) after rule R and the `said` rules, and D re-said from R and C
    as `word` ADOPTED / REJECTED / UNDECIDED (validation/zero2f.py's too)."""
    v = out["verdicts"]
    c = columns(out["procs"], nosync.read_registration(bundle, JUDGE)[0])
    if not v["D"].startswith("NOISE"):
        r = v["R"].split(" | ")[0]
        verdict = "REJECTED" if c.startswith("SHIPPED") or r == "REJECT" else "ADOPTED" if r == "ADOPT" else "UNDECIDED"
        v["D"] = f"{word} {verdict};" + v["D"].split(";", 1)[1]
    out["verdicts"] = {k: w for k, w in v.items() if k != "D"} | said | {"C": c, "D": v["D"]}
    return out


def row_line(r: dict) -> str:
    p = r["predicted"]
    exposed = f"  exposed {p['step_ms_exposed']:8.2f} ms" if "step_ms_exposed" in p else ""
    return (f"{r['name']:22} shipped {p['step_ms']:8.2f} ms  candidate {p['step_ms_candidate']:8.2f} ms{exposed}  host share "
            f"{p['host_share']}  memory {p['steady_mem_GiB']:.2f}..{p['peak_mem_GiB']:.2f} GiB")


def searched() -> list[str]:
    """A line per 1b and 3b shape of SEQS x micro-batch 1, 2: host share and each column's regather / gathered ratio (the
    choice of SHAPES: the GPU-bound ones, host share <= 0.06, with the largest exposed ratio; printed by --register)."""
    from simcluster.heldout.eager_regimes import regime_predict

    out = []
    for preset in ("1b", "3b"):
        for seq in SEQS:
            for mb in (1, 2):
                share = regime_predict(preset, mb, "fsdp-zero2", "h200", microbatches=nosync.MICROBATCHES, seq=seq)["host_share"]
                b = step_candidate(preset, seq, mb, "fsdp-zero2", regather=False)
                a = step_candidate(preset, seq, mb, "fsdp-zero2", regather=True)
                x = b + (nosync.MICROBATCHES - 1) * gather_s(preset, seq) * 1e3
                out.append(f"searched {preset} {seq}:{mb}: host share {share:.2f}, regather / gathered candidate "
                           f"{a / b - 1:+.1%}, exposed {x / b - 1:+.1%}")
    return out


def register(path: Path) -> None:
    import yaml

    nosync.register(path, "validation/zero2e.py --register", SHAPES, VARIANTS, JUDGE, RULES, add_keys, session=48,
                    line=row_line)
    rows = yaml.safe_load(path.read_text())["rows"]
    for preset, seq, mb, _ in SHAPES:
        a, b = (next(r["predicted"] for r in rows if (r["preset"], r["seq"], r["variant"]) == (preset, seq, v)) for v in VARIANTS)
        gap = math.log(a["step_ms_candidate"] / b["step_ms_candidate"])
        x = math.log(a["step_ms_exposed"] / a["step_ms_candidate"])
        deciding = {True: "deciding", False: "not deciding"}
        print(f"{preset} {seq}:{mb}: regather / gathered shipped {a['step_ms'] / b['step_ms'] - 1:+.1%}, candidate "
              f"{math.exp(gap) - 1:+.1%}, exposed {a['step_ms_exposed'] / b['step_ms_candidate'] - 1:+.1%}: rule R "
              f"{deciding[gap >= JUDGE['adopt_min_pct'] / 100]}, X {deciding[x >= JUDGE['adopt_min_pct'] / 100]}; "
              f"candidate / shipped: regather {a['step_ms_candidate'] / a['step_ms'] - 1:+.1%}, gathered "
              f"{b['step_ms_candidate'] / b['step_ms'] - 1:+.1%}")
        n, sd = PROCESSES[preset], zero2d.development(zero2d.BUNDLE)[0]
        for rule, g in (("R", gap), ("X", x)):
            limit, chance = zero2b.power(g, sd, n, JUDGE)
            print(f"power {rule} {preset} {seq}:{mb} (the zero2d set's process sd {sd:.4f}; development): {n} + {n} "
                  f"processes: limit {limit:.2%} against the gap {g:.2%}: ADOPT where the 'with' column is true with "
                  f"chance {chance:.0%}")
    for line in searched():
        print(line)


def main(argv: list[str]) -> int:
    return set_main(argv, __doc__.splitlines()[0], BUNDLE, register, read_out, zero2.show)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
