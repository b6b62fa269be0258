"""Issue 44, session 44: the single-GPU eager regimes that miss the 8% lab target (single+host-bound, single+sac-op,
single+sac-op+host-bound): lease / process noise or a model term? A registered 1-GPU set on the 2 x H200 machine
(calibration/h200x2-hostsingle-2026-11-30, GPU 0 only: CUDA_VISIBLE_DEVICES=0, llm-step --mode single): four shapes new
to calibration/, each in three separate processes, and this lease's own hidden-128 host probe (single and op at 2 and 32
layers, the diagnostic folder's shapes), beside the model's error and peak memory.

    python validation/hostsingle.py --register calibration/BUNDLE/registered.yaml   # before the device call
    python validation/hostsingle.py [calibration/BUNDLE]                            # after: read-out and verdicts

Before this set (error-band table of session 43, studies/eager_lab_modes.py): single+host-bound 19.6% mean |error| over
7 rows (bias +16.9%, predicted slow), single+sac-op 8.3% over 10, single+sac-op+host-bound 22.8% on 1 row. Development
read (this session, docs/models/llm-findings.md "Session 44"): 4 of the 7 host-bound rows (eager5 and its second lease)
were read against a 'today' step that took the compile set's single host fit (31.4 us + 8.14 ms per step) in place of
the registered diagnostic lease's (29.1 us + 0.81 ms); and the measured host issue time of one shape differs 10-24%
between processes and leases (pphost's 1.1b 768:1: 73.3 and 57.8 ms in two processes on one lease).

Registered per shape: today's model's step, host share and memory range with the host fits the one-GPU sets are
predicted with (heldout/eager_registered.FLAG_HOSTS' diagnostic folder: single, op), judged; beside it the product's
step (the CLI's default host folder, heldout/eager.MODE_HOST, whose single host term is the mean of the 2 x H200
leases' own fits since this session: its leases.yaml; no op runs there, so op takes single's), judged by rule R; and the
rules below. No fitting of the model on these processes without saying they are development.
"""

from __future__ import annotations

import math
import statistics
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from simcluster.errors import SimclusterError  # noqa: E402
from simcluster.heldout.registration import (  # noqa: E402
    bias_line,
    mem_error,
    memory_verdict,
    noise_verdict,
    print_verdicts,
    read_run_set,
    registering_commit,
    set_main,
    write_registration,
)

BUNDLE = ROOT / "calibration" / "h200x2-hostsingle-2026-11-30"
REGIME = "llm | PyTorch eager | {} | bf16"
# (name, preset, seq, micro-batch, llm-step --ac-mode): runs/NAME-rK.json, K = 1..PROCESSES (device_run.sh)
SHAPES = (("hb-1.1b", "1.1b", 1344, 1, "none"), ("hb-0.3b", "0.3b", 2624, 2, "none"),
          ("op-1b", "1b", 1856, 4, "op"), ("ophb-0.8b", "0.8b", 1216, 2, "op"))
PROCESSES = 3
HOST_PROBE = ("single-L2", "single-L32", "op-L2", "op-L32")   # runs/host/NAME.json (hidden 128, 128:1)
JUDGE = {"target_pct": 8.0, "mem_pct": 10.0, "bias_band": 0.05, "host_ratio": 1.15}
RULES = {
    "N": "pooled sd of the log of each process's median step over the processes of one shape (shapes with >= 2), its "
         "dof, and the mean |error| that process noise alone gives a model exactly on each shape's mean, sqrt(2/pi) sd: "
         "ABOVE the target (target_pct) or below it",
    "B": "per regime (the registered host flag and ac mode: single+host-bound, single+sac-op, single+sac-op+host-bound), "
         "per process error = predicted (registered) / measured - 1 and its log; the lease bias b = the mean log error, "
         "se = sd / sqrt(n); SLOW if b > bias_band and b - 2 se > 0; FAST if b < -bias_band and b + 2 se < 0; NONE if "
         "|b| + 2 se <= bias_band; else UNDECIDED (fewer than 3 processes: NO DATA)",
    "M": "per regime, mean |error| over its processes <= target_pct -> 'within the target on this lease', else 'not within'",
    "P": "every process's peak memory (max_memory_allocated_bytes) within mem_pct of the registered range "
         "[steady_mem_GiB, peak_mem_GiB] (0 inside it) -> 'memory met', else 'memory not met'",
    "H": "this lease's host cost per kernel of single and of op (llm/eager.fit_modes over runs/host, 2 layer counts each) "
         "over the registered fit's (registered_host): above host_ratio 'SLOWER than the fit lease', below 1 / host_ratio "
         "'FASTER', else 'LIKE' (with the per-step term)",
    "O": "per regime, the model with this lease's own host fits (runs/host in place of the registered folder): mean "
         "|error| within target_pct or not, and its lease bias",
    "R": "per regime, the product's step (predicted.product: the CLI's default host folder, whose single host term is the "
         "mean of the 2 x H200 leases' own fits since session 44, leases.yaml): B's lease bias word and M's mean |error| "
         "within target_pct or not, on the same processes",
    "D": "per regime: NOISE if N is ABOVE the target (the regime's floor is then to be computed as TP's, "
         "studies/tp_lease_noise.py, and marked in trust/noise.py if it exceeds the target); else, B SLOW or FAST: "
         "'LEASE (the host fit's lease)' if O is within the target and H is not LIKE for the regime's mode (the "
         "registered host fit came from a lease unlike this one: a calibration term, the lease spread), 'MODEL (another "
         "term)' otherwise; MET if M is within and B is NONE; else UNDECIDED",
    "measured": "each process's median step (llm-step, --mode single on GPU 0, 5 warm-up and 20 timed steps)",
}


def regime_of(ac_mode: str, host_bound: bool) -> str:
    return REGIME.format("single" + ("+sac-op" if ac_mode == "op" else "") + ("+host-bound" if host_bound else ""))


def registered_host() -> Path:
    """The host folder the one-GPU sets' steps are predicted with (heldout/eager_registered.FLAG_HOSTS' first: single,
    ckpt, op of the diagnostic lease)."""
    from simcluster.heldout.eager_registered import FLAG_HOSTS

    return ROOT / FLAG_HOSTS[0]


def predict(preset: str, seq: int, mb: int, ac_mode: str, host: Path, memory: bool = False) -> dict:
    """Today's model of one eager process on one H200 (the one-GPU sets' card) with `host`'s fits (llm/eager.fit_modes):
    step (ms), host share, and with `memory` the steady and job-peak allocated memory (GiB)."""
    from simcluster.hardware.gpu import load_gpu
    from simcluster.heldout.eager import model_of
    from simcluster.heldout.eager_registered import FLAG_CARD
    from simcluster.llm import eager, eager_ac
    from simcluster.llm.comm import Network
    from simcluster.llm.memory import GiB, stage_memories
    from simcluster.llm.predict import predict_llm
    from simcluster.llm.spec import BatchSpec
    from simcluster.runner.llm_step import PRESETS

    gpu, _ = load_gpu(ROOT / FLAG_CARD)
    par = eager_ac.parallel_of(ac_mode)
    fw = eager.torch_framework(par, eager.fit_modes(host))
    model, batch = model_of({"model": PRESETS[preset]}, seq), BatchSpec(mb, mb)
    r = predict_llm(model, par, batch, gpu, Network(None, 1), 1, trace=False, framework=fw)
    out = {"step_ms": round(r.step_time_s * 1e3, 2), "host_share": None if r.host_share is None else round(r.host_share, 4)}
    if memory:
        m = stage_memories(model, par, batch, gpu.hbm_capacity_bytes, fw)[0]
        out |= {"steady_mem_GiB": round(m.steady_allocated / GiB, 3), "peak_mem_GiB": round(m.allocated / GiB, 3)}
    return out


def host_fit(folder: Path) -> dict:
    """single's and op's host seconds per kernel and per step in `folder` (llm/eager.fit_modes)."""
    from simcluster.llm.eager import fit_modes

    fits = fit_modes(folder)
    return {m: {"per_kernel_s": round(fits[m][0], 9), "per_step_s": round(fits[m][1], 7)} for m in ("single", "op") if m in fits}


def registration_rows() -> list[dict]:
    from simcluster.heldout.eager import MODE_HOST
    from simcluster.llm.host_bound import is_host_bound

    rows = []
    for name, preset, seq, mb, ac in SHAPES:
        p = predict(preset, seq, mb, ac, registered_host(), memory=True)
        flag = is_host_bound(p["host_share"])
        product = predict(preset, seq, mb, ac, MODE_HOST)
        rows.append({"name": name, "regime": regime_of(ac, flag), "mode": "single", "preset": preset, "seq": seq,
                     "micro_batch": mb, "compile": False, "ac_mode": ac, "microbatches": 1, "processes": PROCESSES,
                     "predicted": {"registered": p | {"host_bound": flag}, "product": product}})
    return rows


def register(path: Path) -> None:
    from simcluster.heldout.eager import MODE_HOST
    from simcluster.llm.eager import leases_unread

    commit = registering_commit(ROOT)
    with leases_unread(("ckpt", "op")):   # the product as registered: before session 44's pooled ckpt / op host terms
        rows, product_host = registration_rows(), host_fit(MODE_HOST)   # (hostproduct; its single term pooled already)
    doc = {"registered_at_commit": commit, "script": "validation/hostsingle.py --register",
           "calibration": {"gpu_card": "models/gpu/h200-sxm-interleaved.yaml",
                           "host": {"registered": str(registered_host().relative_to(ROOT)),
                                    "product": str(MODE_HOST.relative_to(ROOT))}},
           "registered_host": host_fit(registered_host()), "product_host": product_host, "judge": JUDGE,
           "rules": RULES, "rows": rows}
    write_registration(path, "# Predictions registered before the runs (issue 44, session 44); never edited after them.\n"
                       + yaml.safe_dump(doc, sort_keys=False, width=120))
    for r in rows:
        p, q = r["predicted"]["registered"], r["predicted"]["product"]
        print(f"{r['name']:10} {r['preset']} {r['seq']}:{r['micro_batch']} ac {r['ac_mode']:4}  {p['step_ms']:8.2f} ms  "
              f"host share {p['host_share']}  memory {p['steady_mem_GiB']:.2f}..{p['peak_mem_GiB']:.2f} GiB  "
              f"(product {q['step_ms']:.2f} ms)  {r['regime']}")
    print(f"registered {len(rows)} shapes x {PROCESSES} processes in {path} (model at {commit[:10]})")


def read_processes(bundle: Path, reg: dict, preds: tuple[str, ...] = ("registered", "product"),
                   label: str = "regime") -> tuple[list[dict], list[str]]:
    """Each process that ran its registered row (heldout/eager_regimes.process_runs, eager_today.read_process's
    configuration check): {name, `label` (the row's: its regime here, validation/opcheck.py's group), key, measured_s,
    peak_GiB, predicted (the row's, each of `preds` with a step_ms)}, and a line per process left out."""
    from simcluster.heldout.eager_regimes import process_runs
    from simcluster.heldout.eager_today import read_process

    out, left = [], []
    for i, row in enumerate(reg["rows"]):
        try:
            key, pred = (row["preset"], int(row["seq"]), int(row["micro_batch"]), row["ac_mode"]), row["predicted"]
            [float(pred[k]["step_ms"]) for k in preds]
            n, tag = int(row["processes"]), row[label]
        except (KeyError, TypeError, ValueError) as exc:
            raise SimclusterError(f"{bundle / 'registered.yaml'}: rows[{i}]: missing or bad key ({type(exc).__name__}: {exc})") from None
        runs = process_runs(bundle, row, True, left, read_process)
        if len(runs) < n:
            left.append(f"{row['name']}: {len(runs)} of {n} processes read")
        out += [{"name": row["name"], label: tag, "key": key, "measured_s": r["step_ms"] / 1e3,
                 "peak_GiB": r["mem_GiB"][0], "predicted": pred} for r in runs]
    return out, left


def read_out(bundle: Path) -> dict:
    reg = read_run_set(bundle)
    try:
        judge = {k: float(reg["judge"][k]) for k in JUDGE}
        fit0 = {m: (float(v["per_kernel_s"]), float(v["per_step_s"])) for m, v in reg["registered_host"].items()}
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise SimclusterError(f"{bundle / 'registered.yaml'}: missing or bad key ({type(exc).__name__}: {exc})") from None
    procs, left = read_processes(bundle, reg)
    target, band, verdicts = judge["target_pct"] / 100, judge["bias_band"], {}
    for p in procs:
        reg_p = p["predicted"]["registered"]
        p["error"] = float(reg_p["step_ms"]) / 1e3 / p["measured_s"] - 1
        p["product_error"] = float(p["predicted"]["product"]["step_ms"]) / 1e3 / p["measured_s"] - 1
        p["mem_err"] = mem_error(float(reg_p["steady_mem_GiB"]), float(reg_p["peak_mem_GiB"]), p["peak_GiB"])
    above, verdicts["N"] = noise_verdict(procs, target)
    own, host_words = own_lease(bundle, fit0, judge, procs, verdicts)
    verdicts["P"] = memory_verdict([p["mem_err"] for p in procs], judge["mem_pct"])
    for regime in dict.fromkeys(r["regime"] for r in reg["rows"]):
        ps = [p for p in procs if p["regime"] == regime]
        short = regime.split(" | ")[2]
        if not ps:
            verdicts[f"D {short}"] = "NO DATA: no process ran"
            continue
        errs = [p["error"] for p in ps]
        mean = statistics.mean(map(abs, errs))
        within = mean <= target
        word, text = bias_line([math.log1p(e) for e in errs], band)
        verdicts[f"B {short}"] = text
        verdicts[f"M {short}"] = (f"{'within' if within else 'not within'} the target on this lease: mean |error| {mean:.1%} "
                                  f"over {len(ps)} processes, errors {min(errs):+.1%}..{max(errs):+.1%}")
        prod = statistics.mean(abs(p["product_error"]) for p in ps)
        verdicts[f"R {short}"] = (f"product step {'within' if prod <= target else 'not within'} the target: mean |error| "
                                  f"{prod:.1%}; {bias_line([math.log1p(p['product_error']) for p in ps], band)[1]}")
        own_errs = [own[p["key"]] / p["measured_s"] - 1 for p in ps if p["key"] in own]
        own_within = None
        if own_errs:
            own_within = statistics.mean(map(abs, own_errs)) <= target
            verdicts[f"O {short}"] = (f"with this lease's own host fits {'within' if own_within else 'not within'} the target: "
                                      f"mean |error| {statistics.mean(map(abs, own_errs)):.1%}, lease bias "
                                      f"{math.expm1(statistics.mean(map(math.log1p, own_errs))):+.1%}")
        unlike = host_words.get("op" if "sac-op" in regime else "single", "LIKE") != "LIKE"
        if above:
            d = "NOISE: process noise alone exceeds the target (its floor to be computed as TP's)"
        elif word in ("SLOW", "FAST") and above is False:
            d = ("LEASE (the host fit's lease): this lease's own host fit prices it within the target and the registered "
                 "fit came from a lease unlike it" if own_within and unlike else
                 "MODEL (another term): the miss repeats beyond the process noise and this lease's own host fit does not explain it")
        else:
            d = "MET: within the target without a lease bias" if within and word == "NONE" else "UNDECIDED"
        verdicts[f"D {short}"] = d
    return {"rows": procs, "left": left, "verdicts": verdicts, "own": own}


def own_lease(bundle: Path, fit0: dict, judge: dict, procs: list[dict], verdicts: dict) -> tuple[dict, dict]:
    """Rules H and O's prices: this lease's single and op host fits against the registered ones, and the model with
    them per shape. Returns ({key: step s with the own fits}, {mode: SLOWER / FASTER / LIKE})."""
    folder = bundle / "runs" / "host"
    try:
        fits = host_fit(folder) if folder.is_dir() else {}
    except ValueError as exc:   # a host run that is not an llm-step document: one line, the rules without it
        verdicts["H"] = f"NO DATA: {str(exc).splitlines()[0]}"
        return {}, {}
    words, parts = {}, []
    for mode, (c0, a0) in fit0.items():
        if mode not in fits:
            parts.append(f"{mode}: NO DATA (fewer than two layer counts ran)")
            continue
        c, a = fits[mode]["per_kernel_s"], fits[mode]["per_step_s"]
        ratio, lim = c / c0, judge["host_ratio"]
        words[mode] = "SLOWER" if ratio > lim else "FASTER" if ratio < 1 / lim else "LIKE"
        parts.append(f"{mode} {words[mode]}{'' if words[mode] == 'LIKE' else ' than'} the fit lease: {c * 1e6:.1f} us per kernel {a * 1e3:+.2f} ms per step "
                     f"against {c0 * 1e6:.1f} us {a0 * 1e3:+.2f} ms (x{ratio:.2f}, limit x{lim:.2f})")
    verdicts["H"] = "; ".join(parts)
    if set(fits) != set(fit0):
        return {}, words
    own = {p["key"]: predict(p["key"][0], p["key"][1], p["key"][2], p["key"][3], folder)["step_ms"] / 1e3 for p in procs}
    return own, words


def show(result: dict) -> None:
    for p in result["rows"]:
        preset, seq, mb, ac = p["key"]
        own = result["own"].get(p["key"])
        print(f"{p['name']:10} {preset} {seq}:{mb} ac {ac:4}  measured {p['measured_s'] * 1e3:8.1f} ms  registered "
              f"{float(p['predicted']['registered']['step_ms']):8.1f} ms  error {p['error']:+.1%}  product {p['product_error']:+.1%}"
              + ("" if own is None else f"  own host {own / p['measured_s'] - 1:+.1%}")
              + f"  peak {p['peak_GiB']:.2f} GiB ({p['mem_err']:+.1%})")
    print_verdicts(result["verdicts"], result["left"])


def main(argv: list[str]) -> int:
    return set_main(argv, __doc__.splitlines()[0], BUNDLE, register, read_out, show)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
