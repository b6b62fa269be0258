"""Issue 44, session 48 (helper tp4b): 4-GPU TP x DP -- is it the lease's host? Host runs and steps on ONE lease. A
registered 4 x H200 set (calibration/h200x4-tp4b-2026-11-30): first the 2-D modes' own hidden-128 host runs on this
lease (tp+ddp and tp+fsdp on 4 ranks at 2 and 32 layers, the tpdp2 bundle's decoder: runs/host/), then two shapes new
to calibration (tp+fsdp and tp+ddp, --group 2: TP over pairs of ranks, FSDP2 or DDP across them), three processes a
shape, alternated A B | B A | A B (3 warm-up, 8 timed steps, --profile 0). Why: the tp4 set read the shipped model SLOW
on its lease (+18.5%) where four earlier 4-GPU TP x DP sets read it FAST (-16.1%); the steps are 82-95% host in the
model, and the product prices them with the 2-GPU host folder's tp fit.

    python validation/tp4b.py --register calibration/h200x4-tp4b-2026-11-30/registered.yaml   # before the call
    python validation/tp4b.py [calibration/h200x4-tp4b-2026-11-30]                            # after: the read-out

Registered per row: the shipped model's step, host share and rank-0 memory range (heldout/eager_regimes.registered_row,
`step_ms`). The lease-own column is a MAPPING fixed here before the run and computed at read-out from this set's own
host runs (heldout/eager_tp4.lease_own_predict: each 2-D mode's own fit from runs/host, the tpdp sets' rule V). Rules N,
B, P are validation/nosync.py's, M and F validation/repeats47.py's (as validation/tp4.py takes them), H and R below;
nothing is fitted on the step runs.
"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "validation"))

import nosync  # noqa: E402
import tp4  # noqa: E402

from simcluster.heldout.eager_tp4 import LEASE_HOST, lease_own_predict  # noqa: E402
from simcluster.heldout.registration import checkout_tree_hash, ran_tree_hash, set_main  # noqa: E402

BUNDLE = ROOT / "calibration" / "h200x4-tp4b-2026-11-30"
SCRIPT = "validation/tp4b.py --register"   # registered.yaml's `script`: the read-out refuses another set's file
PROCESSES = 3
MODES = tp4.MODES
HOST_LAYERS = (2, 32)   # the fewest layer counts a host fit takes (llm/eager.fit_modes: two); 2 and 32 reproduce the
# three-count fit of the earlier leases, 2 and 8 do not (studies/tpdp_host_split.txt, part 4)
# (preset, seq, micro_batch, mode, why): seqs from this helper's own list (288, 576, 864, 1056, 1568, 2016, 2464, 3040)
SHAPES = (("1b", 2016, 2, "tp+fsdp", "host-bound (predicted share 0.90): tp4's 1b tp+fsdp read 19.1% with the shipped model"),
          ("0.5b", 1568, 2, "tp+ddp", "host-bound (0.94): tp4's 0.5b tp+ddp read 36.6%, the largest miss"))
JUDGE = tp4.JUDGE
RULES = {
    **{k: tp4.RULES[k] for k in ("measured", "N", "B", "P", "M", "F")},
    "H": "reported, not judged: each 2-D mode's host fit from this lease's own host runs (runs/host: cost per kernel "
         "and per step, llm/eager.fit_modes) beside the product's (the 2-GPU host folder's tp fit, which a 2-D layout "
         "takes: eager.host_mode)",
    "R": "per mode with data, mean |error| over its processes of the shipped step (step_ms) and of the lease-own step "
         "(heldout/eager_tp4.lease_own_predict: the mode's own host fit from this set's runs/host, computed at read-out, "
         "the mapping fixed in this registration): lease-own <= target_pct and shipped above -> LEASE-HOST; shipped <= "
         "target_pct and lease-own above -> REJECT; else UNDECIDED (a mode without its host fit: NO DATA). The set's "
         "word: LEASE-HOST when every mode with data says it, REJECT likewise, else UNDECIDED. Consequence, fixed now: "
         "LEASE-HOST -> the 4-GPU TP x DP regime is a lease-host regime: the error-band answer's caveat names the lease "
         "host spread and the regime is carried with that caveat (the product's pricing unchanged: a user has no host "
         "runs of the lease they will get); REJECT -> the lease-host hypothesis is dropped for this regime; UNDECIDED -> "
         "the regime is carried as today, the hypothesis open",
    "D": tp4.RULES["D"].replace("R says the candidate's", "R says the lease-own column's"),
}


def rows() -> list[dict]:
    """Each shape as registered: the shipped prediction (flat, memory too); the lease-own column is not registered as a
    number (its host runs have not run): its mapping is (module docstring)."""
    from simcluster.heldout.eager_regimes import registered_row

    return [{"name": f"{p}-{s}x{mb}-{m}", "variant": m, "processes": PROCESSES, **registered_row(p, s, mb, m, memory=True)}
            for p, s, mb, m, _ in SHAPES]


def register(path: Path) -> None:
    notes = {"model": "two columns: step_ms the shipped model (heldout/eager_regimes.registered_row), registered now; "
                      "lease-own, heldout/eager_tp4.lease_own_predict: each 2-D mode's own host fit from this set's "
                      f"{LEASE_HOST} (tp+ddp / tp+fsdp at {' and '.join(map(str, HOST_LAYERS))} layers, run first in the "
                      "same call), computed at read-out by this mapping; nothing fitted on the step runs",
             "development": "the lease-own mapping is the tpdp sets' rule V (own_host), chosen before this session; tp4's "
                            "rows and the four earlier 4-GPU TP x DP sets are development for the hypothesis; none of "
                            "this set's shapes",
             "shapes": {f"{p}-{s}x{mb}-{m}": why for p, s, mb, m, why in SHAPES}}
    calibration = nosync.CALIBRATION | {"host": nosync.CALIBRATION["host"] | {"lease_own": f"BUNDLE/{LEASE_HOST}"}}
    tp4.register_set(path, SCRIPT, RULES, calibration, rows(), notes)


def host_line(bundle: Path) -> str:
    """Rule H's line."""
    from simcluster.heldout.eager import MODE_HOST
    from simcluster.llm import eager

    host = bundle / LEASE_HOST
    try:
        own = eager.fit_modes(host) if host.is_dir() else {}
    except ValueError as exc:   # a failed host run (lease_own_predict says it per mode in R)
        return f"NO DATA: {exc}"
    c, a, _ = eager.fit_modes(MODE_HOST)["tp"]
    parts = [f"{m} {own[m][0] * 1e6:.2f} us/kernel + {own[m][1] * 1e3:.2f} ms/step ({own[m][0] / c:.2f} x per kernel)"
             if m in own else f"{m} NO DATA" for m in MODES]
    return f"lease {'; '.join(parts)}; the product's tp fit {c * 1e6:.2f} us/kernel + {a * 1e3:.2f} ms/step ({MODE_HOST.name})"


def lease_rule(procs: list[dict], bundle: Path, judge: dict) -> str:
    """Rule R over the processes (their shipped errors set by nosync.step_verdicts)."""
    target, lines, says = judge["target_pct"] / 100, [], []
    for mode in MODES:
        ps = [p for p in procs if p["row"]["mode"] == mode]
        if not ps:
            lines.append(f"{mode}: NO DATA (no process)")
            continue
        own = {}
        for p in ps:
            r = p["row"]
            if r["name"] not in own:
                own[r["name"]], why = lease_own_predict(bundle, r["preset"], int(r["seq"]), int(r["micro_batch"]), mode)
        if any(v is None for v in own.values()):
            lines.append(f"{mode}: NO DATA ({why})")
            continue
        shipped = statistics.mean(abs(p["error"]) for p in ps)
        lease = statistics.mean(abs(own[p["row"]["name"]]["step_ms"] / 1e3 / p["step_s"] - 1) for p in ps)
        say = "LEASE-HOST" if lease <= target < shipped else "REJECT" if shipped <= target < lease else "UNDECIDED"
        says.append(say)
        steps = ", ".join(f"{n} {v['step_ms']:.2f} ms" for n, v in own.items())
        lines.append(f"{mode}: {say}: shipped {shipped:.1%}, lease-own {lease:.1%} ({steps}) over {len(ps)} processes "
                     f"(target {target:.0%})")
    verdict = "NO DATA" if not says else says[0] if len(set(says)) == 1 and len(says) == len(MODES) else "UNDECIDED"
    return f"{verdict}: " + "; ".join(lines)


def tree_line(bundle: Path) -> str:
    """The code tree that ran (runs/commit.txt's tree_hash); the lease-own column is computed by the reading checkout's
    code, so whether that tree equals it goes to stderr (a later main's tree moves it; readout.txt stays reproducible)."""
    ran, now = ran_tree_hash(bundle), checkout_tree_hash(ROOT)
    if ran is None:
        print("tree: runs/commit.txt records no tree_hash: the lease-own column's code cannot be checked", file=sys.stderr)
        return "NOT RECORDED: runs/commit.txt has no tree_hash line"
    print(f"tree: this checkout's simcluster/ and validation/ {'EQUAL' if ran == now else f'DIFFER ({now})'} to the "
          f"tree that ran", file=sys.stderr)
    return f"ran {ran} (runs/commit.txt); the lease-own column is computed by the reading checkout's code (stderr: equal?)"


def read_out(bundle: Path) -> dict:
    """validation/tp4.py's read-out (its rules N, M, B, P, F and D over the same processes) with this set's H and R, and
    the tree that ran."""
    return tp4.read_out(bundle, lambda procs, b, judge: {"H": host_line(b), "R": lease_rule(procs, b, judge),
                                                         "tree": tree_line(b)}, SCRIPT)


def main(argv: list[str]) -> int:
    return set_main(argv, __doc__.splitlines()[0], BUNDLE, register, read_out, nosync.show)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
