"""Session 52 (issue 44, moonrouter52): Megatron-Core 24bad8e6's unfused router in Moonlight 16B's recipe configuration
on one H200: its GPU kernel time against the router seconds the product prices, its kernel count against moe52's CPU
op count, its host time against its GPU time (calibration/h200x1-moonrouter52-2026-12-01/README.md)

    PYTHONPATH=. python validation/moonrouter52.py --register calibration/h200x1-moonrouter52-2026-12-01/registered.yaml
    PYTHONPATH=. python validation/moonrouter52.py [BUNDLE]     # the read-out, once runs/ is unpacked in the bundle

Prediction (registered): the router seconds the product prices for the Moonlight rows' layer (moonlight-ep8 at the
2,048 tokens all six rows route, heldout/moerouter.layer_keys): the adopted table's router seconds plus the H200 card's
GEMM price, netted as heldout/moerouter.rows_of nets them (validation/mcrouter50.predicted, imported): forward r3 + gf,
forward + backward r3 + r4 + gf + gb. The CPU op count: moe52's `recipe` line at 24bad8e6 in
studies/moe52_router_count.txt. The model's host price of the ungraphed router's forward (printed beside H): the router
GEMM's modelled call at the framework's moe_sync_kernel_s plus llm/moe_graphs.ROUTER_CALLS x HOST_CALL_S.
Measured: studies/moonrouter52_device.py's impl `mcore-recipe` (kernels, events and host clocks); the other impls printed.
Rules (one RULE line each), fixed before the run:
  R  ratio = Megatron's (mcore-recipe) forward + backward kernel seconds / the predicted: HOLDS within 1 +- BAND; UNDER
     below; OVER above; UNDECIDED if Megatron did not run, the profiler saw no kernels, the run was stopped, or the
     carried tarball's sha256 (runs/mcore-tarball.txt) is not the registered one.
  K  Megatron's kernel count (forward; forward + backward) against moe52's CPU op count: HOLDS if both within
     +- COUNT_BAND; DIFFERS otherwise; UNDECIDED as R.
  H  ratio = Megatron's host seconds per forward call / its forward kernel seconds: HOST-BOUND if above 1 (the host
     issues the router slower than the GPU runs it; before the dispatcher's sync the GPU waits on it); GPU-BOUND if
     at most 1; UNDECIDED as R.
  L  the torch chain on this lease / moeker50's kernels record of the layer (forward + backward): REPEATS within
     1 +- LEASE_BAND, else DRIFTS (then R mixes the lease with the implementation).
Consequences (printed, fixed before the run): CONSEQUENCE below; nothing is priced on this branch."""

from __future__ import annotations

import hashlib
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from simcluster.errors import SimclusterError  # noqa: E402
from simcluster.heldout import moerouter  # noqa: E402
from simcluster.heldout.registration import read_run_set, registering_commit, set_main, write_registration  # noqa: E402
from simcluster.llm import moe_graphs, moe_router_term  # noqa: E402
from simcluster.llm.framework import FRAMEWORKS  # noqa: E402
from simcluster.strict import load_json  # noqa: E402
from validation.mcrouter50 import band_word, moeker50_kernels, predicted, us  # noqa: E402

BUNDLE = ROOT / "calibration" / "h200x1-moonrouter52-2026-12-01"
TRACE = "moonrouter52.json"          # under the bundle's runs/
PRODUCER = "studies/moonrouter52_device.py"
TARBALL_SUM = "mcore-tarball.txt"   # under runs/: device_run.sh's sha256sum of the carried tarball
LAYER = "moonlight-ep8"
IMPL = "mcore-recipe"                # the configuration the rules judge
IMPLS = ("torch", "mcore-recipe", "mcore-recipe-nogroups", "mcore-mcrouter50")
MOONLIGHT = ROOT / "calibration" / "published" / "llm-megatron-bridge-skills-moonlight16b-h100-bf16.yaml"
COUNTS = ROOT / "studies" / "moe52_router_count.txt"
MCORE = {"repo": "NVIDIA/Megatron-LM", "commit": "24bad8e677d22625d86ef2a54c9506b6e4992c93", "path": "megatron/core",
         "tarball": ".device/mcore-24bad8e6.tar.gz",
         "sha256": "6ea7a24b3c9ae1585cd953b58ae95843bc40ddbf1aaf1aea662f8cd69df990e8"}
BAND = 0.30                          # R: Megatron within +-30% of the priced router seconds
COUNT_BAND = 3                       # K: kernels within +-3 of the CPU op count
LEASE_BAND = 0.10                    # L: the torch chain repeats moeker50's kernels within +-10%
PASSES = ("fwd", "fwdbwd")
RULE = {"R": f"HOLDS if Megatron 24bad8e6's router in the recipe's configuration ({IMPL}, {LAYER}, forward + backward kernel "
             f"seconds) / the product's priced router seconds lie within 1 +- {BAND}; UNDER below; OVER above; UNDECIDED if "
             "Megatron did not run, no kernels were seen, the run stopped or the carried tarball is not the registered one",
        "K": f"HOLDS if its kernel count (forward; forward + backward) lies within +- {COUNT_BAND} of moe52's CPU op count, both "
             "passes; DIFFERS otherwise; UNDECIDED as R",
        "H": "HOST-BOUND if its host seconds per forward call / its forward kernel seconds > 1; GPU-BOUND if <= 1; UNDECIDED as R",
        "L": f"the torch chain this lease / moeker50's kernels record of {LAYER} (forward + backward): REPEATS within 1 +- "
             f"{LEASE_BAND}, else DRIFTS"}
CONSEQUENCE = {
    "R": {"HOLDS": "the adopted router column prices the Moonlight recipe's unfused router's GPU time within 30%: the rows' "
                   "+29..+34% is not the router's GPU time",
          "UNDER": "Megatron's router takes less GPU time than priced: a later session may lower the Moonlight rows' router "
                   "column from this bundle's mcore-recipe kernels (netted as heldout/moerouter.rows_of nets them); not this branch",
          "OVER": "a later session may price the recipe's unfused router GPU time (fp32 router dtype, groups 1 / 1, seq_aux_loss) "
                  "from this bundle's mcore-recipe kernels, netted as heldout/moerouter.rows_of nets them, for the rows whose "
                  "recipe runs it (Moonlight); not this branch"},
    "K": {"HOLDS": "moe52's CPU leaf-op count stands as a proxy of the GPU kernel count at this version and configuration: a "
                   "later session may count other configurations' calls on the CPU",
          "DIFFERS": "the CPU op count is no proxy for this configuration's kernels (candidates, not established: the bf16 "
                     "casts around the fp32 router, the input's gradient, torch.compile's fused expert-bias update): a later "
                     "count of calls takes this bundle's GPU count"},
    "H": {"HOST-BOUND": "the unfused router is host-bound at Moonlight's shape: a later session may price its forward host "
                        "from this bundle's host clock (per call or per kernel) in place of llm/moe_graphs' ROUTER_CALLS x "
                        "HOST_CALL_S, for the recipes that do not fuse or graph the router; not this branch",
          "GPU-BOUND": "the router's host hides behind its own GPU time at this shape: its extra calls add no host time beyond "
                       "the GPU's, and moe_graphs' count does not need the unfused router's calls"},
}
UNDECIDED = "no verdict: nothing is confirmed or questioned by this run"


def cpu_ops(path: Path = COUNTS, label: str = "24bad8e6", config: str = "recipe") -> dict:
    """{pass: count} of moe52's `config` line under its `label` header in studies/moe52_router_count.txt."""
    try:
        block = path.read_text().split(f"# Megatron-Core {label} ", 1)[1].split("\n# ", 1)[0]
        m = re.search(rf"^{re.escape(config)}: fwd (\d+) fwdbwd (\d+)$", block, re.M)
        return {"fwd": int(m.group(1)), "fwdbwd": int(m.group(2))}
    except (OSError, IndexError, AttributeError):
        raise SimclusterError(f"{path}: no '{config}: fwd N fwdbwd N' line under '# Megatron-Core {label}' "
                              "(studies/moe52_router_count.py's output)") from None


def moonlight_tokens() -> list[int]:
    """The router tokens of every Moonlight row (heldout/moerouter.layer_keys, development rows included); one line if
    a row's layer is not GRID's moonlight-ep8."""
    from simcluster.runner.moerouter_grid import GRID

    grid = next(r for r in GRID if r[0] == LAYER)[1:]
    keys = moerouter.layer_keys(MOONLIGHT, held_out_only=False)
    if not keys or any(k[1][1:] != grid[1:] for k in keys):
        raise SimclusterError(f"{MOONLIGHT}: a Moonlight row whose MoE layer is not {LAYER} of runner/moerouter_grid.GRID")
    return sorted({k[1][0] for k in keys})


def model_host_fwd_s() -> float:
    """The model's host price of the ungraphed router's forward: the router GEMM's call at moe_sync_kernel_s plus
    moe_graphs' ROUTER_CALLS x HOST_CALL_S (the Moonlight rows' framework `megatron`, moe_graphs false)."""
    return FRAMEWORKS["megatron"].moe_sync_kernel_s + moe_graphs.ROUTER_CALLS * moe_graphs.HOST_CALL_S


def mcrouter50_measured() -> dict:
    """{pass: {us, kernels}} of mcrouter50's Megatron 0.14.0 (impl mcore, its configuration) on the layer: its bundle's runs
    (printed beside this run's mcore-mcrouter50, the same configuration at 24bad8e6: the version's share)."""
    from validation import mcrouter50

    rec = mcrouter50.read_trace(mcrouter50.BUNDLE / "runs" / mcrouter50.TRACE)["records"]
    return {p: {"us": round(1e6 * float(rec[(LAYER, p, "mcore", "kernels")]["time_s"]), 2),
                "kernels": float(rec[(LAYER, p, "mcore", "kernels")]["n_kernels"])} for p in PASSES}


def register(path: Path) -> None:
    import yaml

    tokens = moonlight_tokens()
    pred, ref = predicted()[LAYER], moeker50_kernels()[LAYER]
    doc = {"set": "moonrouter52", "issue": 44, "commit": registering_commit(ROOT), "card": str(moerouter.H200_CARD.relative_to(ROOT)),
           "trace": f"runs/{TRACE}", "megatron_core": MCORE, "layer": LAYER, "tokens": tokens,
           "table": str(moe_router_term.TABLE_FILE.relative_to(ROOT)),
           "table_sha256": hashlib.sha256(moe_router_term.TABLE_FILE.read_bytes()).hexdigest(),
           "band": BAND, "count_band": COUNT_BAND, "lease_band": LEASE_BAND, "rule": RULE, "consequence": CONSEQUENCE,
           "rows": {"predicted_us": us({LAYER: pred})[LAYER], "moeker50_kernels_us": us({LAYER: ref})[LAYER],
                    "cpu_ops": cpu_ops(), "model_host_fwd_us": round(1e6 * model_host_fwd_s(), 2),
                    "mcrouter50_mcore": mcrouter50_measured()}}
    write_registration(path, "# registered before the run (validation/moonrouter52.py --register): the priced router seconds of "
                       "the Moonlight rows' layer, moe52's CPU op count, the rules\n" + yaml.safe_dump(doc, sort_keys=False, width=140))


def read_trace(path: Path) -> dict:
    """{(pass, impl, clock): record} of the layer, the device record, quick and the Megatron note; one line if unreadable."""
    doc = load_json(path, what=f"{PRODUCER} output (the device call's runs/)")
    try:
        recs = {(r["pass"], r["impl"], r["clock"]): dict(r) for r in doc["records"] if r["layer"] == LAYER}
        out = {"records": recs, "device": dict(doc["device"]), "quick": bool(doc["quick"]), "mcore": str(doc["mcore"])}
    except (ValueError, KeyError, TypeError) as exc:
        raise SimclusterError(f"{path}: not a {PRODUCER} output ({type(exc).__name__}: {exc})") from None
    moerouter.check_h200(out, path)
    return out


def seconds(rec: dict, impl: str, pas: str, clock: str) -> float:
    return float((rec.get((pas, impl, clock)) or {}).get("time_s") or 0)


def kernels(rec: dict, impl: str, pas: str) -> float:
    return float((rec.get((pas, impl, "kernels")) or {}).get("n_kernels") or 0)


def tarball_check(bundle: Path, sha256: str) -> str:
    """"" if the device's runs/mcore-tarball.txt (device_run.sh's sha256sum of the carried tarball) names `sha256`,
    else why not."""
    try:
        got = (Path(bundle) / "runs" / TARBALL_SUM).read_text().split()
    except OSError:
        return f"runs/{TARBALL_SUM} missing: the carried Megatron-Core tree is not attested"
    return "" if got[:1] == [sha256] else f"the carried tarball's sha256 {(got or ['?'])[0][:16]}... is not the registered {sha256[:16]}..."


def verdicts(tr: dict, reg_rows: dict, tarball: str = "") -> dict:
    rec, v = tr["records"], {}
    why = tarball or tr["device"].get("stopped") or ("" if not tr["mcore"].startswith("not run") else tr["mcore"])
    why = why or tr["device"].get("mcore_failed", {}).get(IMPL, "")
    complete = all(seconds(rec, IMPL, p, c) > 0 for p in PASSES for c in ("kernels", "host")) and \
        all(kernels(rec, IMPL, p) > 0 for p in PASSES)
    if why or not complete:
        v["R"] = v["K"] = v["H"] = f"UNDECIDED ({why or f'no kernels or host record of {IMPL}'})"
    else:
        mk, pred = seconds(rec, IMPL, "fwdbwd", "kernels"), float(reg_rows["predicted_us"]["fwdbwd"])
        r = 1e6 * mk / pred
        v["R"] = f"{band_word(r, BAND)} (Megatron {1e6 * mk:.1f} us / priced {pred:.1f} us = {r:.3f}; band 1 +- {BAND})"
        n = {p: kernels(rec, IMPL, p) for p in PASSES}
        d = {p: n[p] - int(reg_rows["cpu_ops"][p]) for p in PASSES}
        word = "HOLDS" if all(abs(x) <= COUNT_BAND for x in d.values()) else "DIFFERS"
        v["K"] = (f"{word} (kernels fwd {n['fwd']:.0f} / CPU ops {reg_rows['cpu_ops']['fwd']} ({d['fwd']:+.0f}); fwdbwd "
                  f"{n['fwdbwd']:.0f} / {reg_rows['cpu_ops']['fwdbwd']} ({d['fwdbwd']:+.0f}); band +- {COUNT_BAND})")
        hf, kf = seconds(rec, IMPL, "fwd", "host"), seconds(rec, IMPL, "fwd", "kernels")
        v["H"] = (f"{'HOST-BOUND' if hf / kf > 1 else 'GPU-BOUND'} (host {1e6 * hf:.1f} us / kernels {1e6 * kf:.1f} us a "
                  f"forward = {hf / kf:.2f})")
    to, ref = seconds(rec, "torch", "fwdbwd", "kernels"), float(reg_rows["moeker50_kernels_us"]["fwdbwd"])
    if to > 0:
        q = 1e6 * to / ref
        v["L"] = (f"{'REPEATS' if abs(q - 1) <= LEASE_BAND else 'DRIFTS'} (torch chain this lease {1e6 * to:.1f} us / "
                  f"moeker50 {ref:.1f} us = {q:.3f}; band 1 +- {LEASE_BAND})")
    else:
        v["L"] = "UNDECIDED (the torch chain's kernels record missing)"
    return v


def read_out(bundle: Path) -> dict:
    reg = read_run_set(bundle, {"set": "moonrouter52"})
    try:
        rows = reg["rows"]
        for key in ("predicted_us", "moeker50_kernels_us", "cpu_ops"):
            [float(rows[key][p]) for p in PASSES]
        float(rows["model_host_fwd_us"])
        sha = str(reg["megatron_core"]["sha256"])
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise SimclusterError(f"{Path(bundle) / 'registered.yaml'}: no readable {exc} (expected rows: predicted_us, "
                              "moeker50_kernels_us, cpu_ops with fwd / fwdbwd, model_host_fwd_us; megatron_core.sha256)") from None
    tr = read_trace(Path(bundle) / "runs" / TRACE)
    return {"tr": tr, "rows": rows, "verdicts": verdicts(tr, rows, tarball_check(bundle, sha))}


def show(res: dict) -> None:
    tr, rec, rows = res["tr"], res["tr"]["records"], res["rows"]
    print(f"# device {tr['device'].get('name')} torch {tr['device'].get('torch')}; megatron-core {tr['mcore']}; "
          f"torch.compile counters {tr['device'].get('dynamo', {})}")
    for impl in IMPLS:
        for p in PASSES:
            k, n = seconds(rec, impl, p, "kernels"), kernels(rec, impl, p)
            h = seconds(rec, impl, p, "host")
            gemm = float((rec.get((p, impl, "kernels")) or {}).get("gemm_s") or 0)
            print(f"# {LAYER} {impl} {p}: kernels {1e6 * k:.1f} us ({n:.0f} k, gemm {1e6 * gemm:.1f}); events "
                  f"{1e6 * seconds(rec, impl, p, 'events'):.1f} us; host {1e6 * h:.1f} us"
                  + (f" ({1e6 * h / n:.1f} us a kernel)" if n > 0 else ""))
    hf = seconds(rec, IMPL, "fwd", "host")
    if hf > 0:
        print(f"# printed, judging nothing: {IMPL} host a forward {1e6 * hf:.1f} us / the model's host price of the ungraphed "
              f"router's forward {float(rows['model_host_fwd_us']):.1f} us = {1e6 * hf / float(rows['model_host_fwd_us']):.2f}")
    for p, m in (rows.get("mcrouter50_mcore") or {}).items():
        k = seconds(rec, "mcore-mcrouter50", p, "kernels")
        print(f"# printed, judging nothing: mcrouter50's configuration {p}: 24bad8e6 here {1e6 * k:.1f} us "
              f"({kernels(rec, 'mcore-mcrouter50', p):.0f} k) against 0.14.0 in calibration/h200x1-mcrouter50-2026-12-01 "
              f"{float(m['us']):.1f} us ({float(m['kernels']):.0f} k)")
    for key in ("R", "K", "H", "L"):
        print(f"RULE {key}: {res['verdicts'][key]}")
    for key in ("R", "K", "H"):
        word = res["verdicts"][key].split()[0]
        print(f"consequence {key}: " + CONSEQUENCE[key].get(word, UNDECIDED))


def main(argv: list[str] | None = None) -> int:
    return set_main(sys.argv[1:] if argv is None else argv, __doc__.splitlines()[0], BUNDLE, register, read_out, show)


if __name__ == "__main__":
    sys.exit(main())
