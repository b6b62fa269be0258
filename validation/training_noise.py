"""Run-to-run noise of DDP steps, and held-out predictions across three sessions on 4 x H200 machines.

    python validation/training_noise.py

Sessions: "collect" (calibration/h200x4-collect-2026-11-22, 4 models, 2 and 4 GPUs, NVLink and socket),
"noise" (calibration/h200x4-noise-2026-11-22/rep1..3, three fresh machines, 3 models) and "interleaved"
(calibration/h200x4-ddp-interleaved-2026-11-22: three 1-GPU / 2-GPU pairs of fresh processes per model) and
"1-2-4" (calibration/h200x4-ddp-124-2026-11-22: two 1 -> 2 -> 4 GPU sequences of fresh processes per model)
and "paired" (calibration/h200x4-ddp-paired-2026-11-22: three repeats; the 2- and 4-GPU processes alternate
blocks of plain and DDP steps, so the 1-GPU step is timed in the same processes as the step it predicts).
1. noise, predicted with the DDP card fitted on the collect session's 2-GPU runs (the first card);
2. the card in models/training/ddp-h200x4.yaml (fitted on the noise session's 2-GPU runs) on the
   interleaved pairs (each 2-GPU step from the 1-GPU run just before it), on the 1-2-4 sequences (each
   2- and 4-GPU step from the sequence's 1-GPU run) and on every collect run.
Every prediction uses the 1-GPU trace of its own session; none of the predicted runs was fitted. The rows the
error-band table takes (the shipped card on every session it never saw) are simcluster.heldout.ddp's.
3. the paired session: each step predicted from every rank's plain steps (the slowest rank paces a host-bound
   step), the DDP card refitted leaving one repeat, or one model, out;
4. another machine (calibration/h200x2-ddp-paired-2026-11-22, 2 x H200, NVLink and socket, two repeats), predicted
   with the DDP card fitted on the whole paired session.
"""

from __future__ import annotations

import statistics
from pathlib import Path

from simcluster.cards import load_collective, load_ddp
from simcluster.collectives.model import predict
from simcluster.files import scratch_folder, write_documents
from simcluster.fit.bundle import calibrate_bundle
from simcluster.fit.training import Observation, fit_ddp, predict_all
from simcluster.heldout import ddp as heldout_ddp
from simcluster.script_args import check
from simcluster.training import workload as W

ROOT = Path(__file__).resolve().parent.parent
CAL = ROOT / "calibration"



def _step(w, n, card, ddp) -> float:
    return heldout_ddp.step_s(w, n, card, ddp)


def _row(label: str, t1: float | None, measured: float, pred: float) -> float:
    err = (pred / measured - 1) * 100
    one = f"{t1 * 1e3:9.2f}" if t1 else f"{'':>9}"
    print(f"{label:>26} {one} {measured * 1e3:9.2f} {pred * 1e3:9.2f} {err:+6.1f}%")
    return err


def _summary(errors: list[float], indent: str = f"{'':>26}") -> None:
    print(f"{indent} mean |error| {statistics.mean(map(abs, errors)):.1f}%, max {max(map(abs, errors)):.1f}%")


def _header(title: str) -> None:
    print(f"\n{title}\n{'run':>26} {'1-GPU ms':>9} {'measured':>9} {'predicted':>9} {'error':>7}")


def noise_with_first_card(nv) -> None:
    cards = scratch_folder("training-noise")
    write_documents(cards, calibrate_bundle(CAL / "h200x4-collect-2026-11-22").documents)
    first, _ = load_ddp(cards / "ddp.yaml")
    _header("1. noise session, DDP card fitted on the collect session")
    by_model: dict[str, list] = {}
    for rep in sorted((CAL / "h200x4-noise-2026-11-22").glob("rep*")):
        for run in sorted((rep / "ddp-step").iterdir()):
            records = W.read_runs(run / "stdout.txt")
            one = next(r for r in records if r["world_size"] == 1)
            two = next(r for r in records if r["world_size"] == 2)
            w = W.from_record(one, W.profile_gpu_s(run, one["model"], one["image"], one["batch_per_gpu"]))
            err = _row(f"{w.model} {rep.name}", w.step_s, two["median_step_s"], _step(w, 2, nv, first))
            by_model.setdefault(w.model, []).append((w.step_s, two["median_step_s"], err))
    for model, rows in by_model.items():
        ones, twos = [r[0] for r in rows], [r[1] for r in rows]
        print(f"{model:>26}   run-to-run spread: 1 GPU {(max(ones) - min(ones)) / statistics.mean(ones) * 100:.1f}%, "
              f"2 GPUs {(max(twos) - min(twos)) / statistics.mean(twos) * 100:.1f}%; mean |error| "
              f"{statistics.mean(abs(r[2]) for r in rows):.1f}%")


def _print_rows(rows: list[dict]) -> list[float]:
    errors = [_row(r["label"].split(" ", 1)[-1] if r["session"] != "collect" else r["label"], r["one_gpu_s"], r["measured_s"],
                   r["predicted_s"]) for r in rows]
    _summary(errors)
    return errors


def interleaved(ddp, nv) -> list[float]:
    bundle = heldout_ddp.INTERLEAVED
    _header("2a. interleaved session, models/training/ddp-h200x4.yaml (fitted on the noise session)")
    errors = _print_rows(heldout_ddp.interleaved(ddp, nv))
    wrapped = [r["median_step_s"] * 1e3 for r in W.read_runs(bundle / "ddp-at-one-resnet18.jsonl")]
    print("resnet18 on 1 GPU wrapped in DDP: " + ", ".join(f"{t:.2f}" for t in wrapped) + " ms")
    concurrent = [r["median_step_s"] * 1e3 for p in sorted(bundle.glob("concurrent*.jsonl")) for r in W.read_runs(p)]
    print("resnet18, two independent 1-GPU processes at once: " + ", ".join(f"{t:.2f}" for t in concurrent) + " ms")
    return errors


def sequences(ddp, nv) -> list[float]:
    _header("2b. 1-2-4 session, models/training/ddp-h200x4.yaml")
    return _print_rows(heldout_ddp.sequences(ddp, nv))


def collect_session(ddp) -> list[float]:
    _header("2c. collect session, models/training/ddp-h200x4.yaml")
    return _print_rows(heldout_ddp.collect(ddp))


PAIRED = heldout_ddp.PAIRED
paired_observations = heldout_ddp.paired_observations


def paired(ddp, nv) -> tuple[list[float], list[float]]:
    """Errors (%) predicted from the plain steps of the same processes, and from the separate 1-GPU process."""
    _header("2d. paired session, models/training/ddp-h200x4.yaml; plain steps of the same processes "
            "(in brackets: from the separate 1-GPU process)")
    errors, separate = [], []
    for path in sorted(PAIRED.glob("rep*.jsonl")):
        single = {r["model"]: W.from_record(r, where=str(path)) for r in W.read_runs(path) if r["world_size"] == 1}
        for o in paired_observations(path, nv, every_rank=False):
            w, n = o.workload, o.ranks
            one = single[w.model]
            errors.append(_row(f"{w.model} x{n} {path.stem}", w.step_s, o.measured_s, _step(w, n, nv, ddp)))
            separate.append(_step(one, n, nv, ddp) / o.measured_s * 100 - 100)
            print(f"{'':>26} ({one.step_s * 1e3:7.2f} {'':>9} {'':>9} {separate[-1]:+6.1f}%)")
    print(f"{'':>26} mean |error| {statistics.mean(map(abs, errors)):.1f}%, max {max(map(abs, errors)):.1f}% "
          f"(separate 1-GPU process: {statistics.mean(map(abs, separate)):.1f}%, max {max(map(abs, separate)):.1f}%)")
    return errors, separate


def paired_cross_validation(ddp, nv, every_rank: bool = True) -> list[float]:
    print("\n3. paired session, leave one repeat out: DDP card refitted on the other two repeats; each step from "
          + ("every rank's plain steps (the slowest rank paces it)" if every_rank else "rank 0's plain steps"))
    reps = sorted(PAIRED.glob("rep*.jsonl"))
    errors = []
    for held in reps:
        params, fit = fit_ddp([o for p in reps if p != held for o in paired_observations(p, nv, every_rank)],
                              ddp.slowdown)
        test = paired_observations(held, nv, every_rank)
        errs = [(t / o.measured_s - 1) * 100 for o, t in zip(test, predict_all(test, params), strict=True)]
        errors += errs
        print(f"  held out {held.stem}: host {params.c_tensor_s * 1e6:.1f} us, GPU {params.g_tensor_s * 1e6:.1f} us per tensor "
              f"(in-sample {fit['mean_abs_error_pct']:.1f}%): " + ", ".join(
                  f"{o.label.split(' ', 1)[1]} {e:+.1f}%" for o, e in zip(test, errs, strict=True)))
    _summary(errors, " ")
    return errors


def paired_leave_one_model_out(ddp, nv) -> list[float]:
    """Every rank's plain steps; the DDP card refitted on the other two models' runs (all repeats)."""
    print("\n3b. paired session, leave one model out: DDP card refitted on the other two models, every rank's plain steps")
    runs = [o for p in sorted(PAIRED.glob("rep*.jsonl")) for o in paired_observations(p, nv)]
    errors = []
    for model in sorted({o.workload.model for o in runs}):
        params, _ = fit_ddp([o for o in runs if o.workload.model != model], ddp.slowdown)
        test = [o for o in runs if o.workload.model == model]
        errs = [(t / o.measured_s - 1) * 100 for o, t in zip(test, predict_all(test, params), strict=True)]
        errors += errs
        print(f"  held out {model}: host {params.c_tensor_s * 1e6:.1f} us, GPU {params.g_tensor_s * 1e6:.1f} us per tensor: "
              + ", ".join(f"{o.label.split(' ', 2)[0]} x{o.ranks} {e:+.1f}%" for o, e in zip(test, errs, strict=True)))
    _summary(errors, " ")
    return errors


X2 = heldout_ddp.X2
_x2_all_reduce_card = heldout_ddp.x2_all_reduce_card


def another_machine(ddp, nv, every_rank: bool = True) -> list[float]:
    """A 2 x H200 machine the card never saw (calibration/h200x2-ddp-paired-2026-11-22, two paired repeats over NVLink
    and over NCCL's socket transport): DDP card fitted on the 4 x H200 paired session; all_reduce from cards fitted
    on this machine's own torch.distributed all_reduce sweeps (one per transport)."""
    print("\n4. another machine (2 x H200), held out: DDP card fitted on the 4 x H200 paired session, each step from "
          + ("every rank's plain steps" if every_rank else "rank 0's plain steps"))
    card, fit = fit_ddp([o for p in sorted(PAIRED.glob("rep*.jsonl")) for o in paired_observations(p, nv)], ddp.slowdown)
    print(f"  card: host {card.c_tensor_s * 1e6:.1f} us, GPU {card.g_tensor_s * 1e6:.1f} us per tensor "
          f"(in-sample {fit['mean_abs_error_pct']:.1f}% on 18 runs)")
    _header("  predicted vs measured")
    errors = []
    for path in sorted(X2.glob("*-rep*.jsonl")):
        comm = _x2_all_reduce_card(path.stem.split("-")[0])
        for r in W.read_runs(path):
            if r["world_size"] < 2:
                continue
            o = Observation(path.stem, W.from_paired(r, str(path)), 2,
                            lambda s, c=comm: predict(c, "all_reduce", s, 2).time_s, r["median_step_s"],
                            W.paired_ranks(r, str(path)) if every_rank else ())
            errors.append(_row(f"{r['model']} {path.stem}", o.workload.step_s, o.measured_s, predict_all([o], card)[0]))
    _summary(errors)
    return errors


def main() -> None:
    nv, _ = load_collective(ROOT / "models/collective/h200x4-collect-nvlink.yaml")
    ddp, _ = load_ddp(ROOT / "models/training/ddp-h200x4.yaml")
    noise_with_first_card(nv)
    interleaved(ddp, nv)
    sequences(ddp, nv)
    collect_session(ddp)
    paired(ddp, nv)
    paired_cross_validation(ddp, nv, every_rank=False)
    paired_cross_validation(ddp, nv)
    paired_leave_one_model_out(ddp, nv)
    another_machine(ddp, nv, every_rank=False)
    another_machine(ddp, nv)


if __name__ == "__main__":
    check()   # takes no argument: anything else is one line, before the study runs
    main()
