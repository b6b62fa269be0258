"""Held-out validation of the data-parallel step model on the real 4 x H200 bundle.

    python studies/training_validation.py [BUNDLE]

1. Leave one model out: fit the DDP overheads on the other models' 2-GPU NVLink runs, predict the
   left-out model's 2-GPU step from its 1-GPU trace and the nccl-tests card.
2. Fit on every 2-GPU NVLink run; predict the 4-GPU NVLink runs and the socket-transport runs
   (2 and 4 GPUs, with the socket collective card), none of which the fit saw.
Prints measured and predicted step times and the error of each.
"""

from __future__ import annotations

import statistics
from pathlib import Path

from simcluster.cards import load_collective
from simcluster.collectives.model import predict
from simcluster.files import scratch_folder, write_documents
from simcluster.fit.bundle import calibrate_bundle
from simcluster.fit.training import Observation, fit_ddp, overlap_slowdown, predict_all
from simcluster.script_args import ArgumentParser
from simcluster.training import workload as W

ROOT = Path(__file__).resolve().parent.parent



def main() -> None:
    parser = ArgumentParser()
    parser.add_argument("bundle", nargs="?", default=str(ROOT / "calibration/h200x4-collect-2026-11-22"))
    args = parser.parse_args()
    bundle = Path(args.bundle)
    cards = scratch_folder("training-validation")
    write_documents(cards, calibrate_bundle(bundle).documents)
    nv = load_collective(cards / "collective-nccl-tests.yaml")[0]
    so = load_collective(cards / "collective-nccl-tests-socket.yaml")[0]
    workloads, obs, profiles = {}, [], []
    for run in sorted((bundle / "ddp-step").iterdir()):
        records = W.read_runs(run / "stdout.txt")
        one = next(r for r in records if r["world_size"] == 1)
        gpu = W.profile_gpu_s(run, one["model"], one["image"], one["batch_per_gpu"])
        w = workloads[one["model"]] = W.from_record(one, gpu)
        profiles += W.overlap_samples(run, gpu)
        for r in records:
            n = r["world_size"]
            if n > 1:
                obs.append(Observation(f"{w.model} x{n} nvlink", w, n,
                                       lambda s, n=n: predict(nv, "all_reduce", s, n).time_s, r["median_step_s"]))
    for run in sorted((bundle / "ddp-step-socket").iterdir()):
        for r in W.read_runs(run / "stdout.txt"):
            n, w = r["world_size"], workloads[r["model"]]
            obs.append(Observation(f"{w.model} x{n} socket", w, n,
                                   lambda s, n=n: predict(so, "all_reduce", s, n).time_s, r["median_step_s"]))
    slowdown = overlap_slowdown(profiles)
    print(f"overlap slowdown from {len(profiles)} profiles: {slowdown:.3f}")
    two = [o for o in obs if o.ranks == 2 and "nvlink" in o.label]
    print("\n1. leave one model out, 2-GPU NVLink step (DDP overheads fitted on the other models)")
    print(f"{'run':>22} {'1-GPU ms':>8} {'measured':>9} {'predicted':>9} {'error':>7}")
    errors = []
    for held in two:
        params, _ = fit_ddp([o for o in two if o is not held], slowdown)
        p = predict_all([held], params)[0]
        errors.append(abs(p / held.measured_s - 1) * 100)
        print(f"{held.label:>22} {held.workload.step_s * 1e3:8.2f} {held.measured_s * 1e3:9.2f} {p * 1e3:9.2f} "
              f"{(p / held.measured_s - 1) * 100:+6.1f}%")
    print(f"   mean |error| {statistics.mean(errors):.1f}%, max {max(errors):.1f}%")
    params, fit = fit_ddp(two, slowdown)
    print(f"\n2. fitted on all 2-GPU NVLink runs (in-sample mean |error| {fit['mean_abs_error_pct']}%): "
          f"host {params.c_tensor_s * 1e6:.1f} us/tensor, GPU {params.g_tensor_s * 1e6:.1f} us/tensor")
    held = [o for o in obs if o not in two]
    errors = []
    for o, p in zip(held, predict_all(held, params), strict=True):
        errors.append(abs(p / o.measured_s - 1) * 100)
        print(f"{o.label:>22} {o.workload.step_s * 1e3:8.2f} {o.measured_s * 1e3:9.2f} {p * 1e3:9.2f} "
              f"{(p / o.measured_s - 1) * 100:+6.1f}%")
    print(f"   held out: mean |error| {statistics.mean(errors):.1f}%, max {max(errors):.1f}%")


if __name__ == "__main__":
    main()
