"""DDP steps the shipped DDP card (models/training/ddp-h200x4.yaml, fitted on the noise session's 2-GPU runs,
calibration/h200x4-noise-2026-11-22) never saw, predicted from each run's own 1-GPU step and a collective card:

  interleaved  calibration/h200x4-ddp-interleaved-2026-11-22: each 2-GPU step from the 1-GPU process just before it
  1-2-4        calibration/h200x4-ddp-124-2026-11-22: each 2- and 4-GPU step from its sequence's 1-GPU run
  collect      calibration/h200x4-collect-2026-11-22: 2 and 4 GPUs over NVLink and over NCCL's socket transport, with
               the collective cards of the bundle's own nccl-tests (calibrated into a scratch folder)
  paired       calibration/h200x4-ddp-paired-2026-11-22: each step from every rank's plain steps in the same processes
  2xH200       calibration/h200x2-ddp-paired-2026-11-22: another machine, NVLink and socket, all_reduce cards fitted on its
               own torch.distributed sweeps

Each row: (session, its bundle, label, ranks, transport, measured step s, predicted step s). The session is the unit a
held-out check leaves out together (one machine, one day); its bundle (a folder under calibration/) names the GPU it ran
on (trust/build.bundle_gpu)."""

from __future__ import annotations

import functools
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
CAL = ROOT / "calibration"
DDP_CARD = ROOT / "models" / "training" / "ddp-h200x4.yaml"
NVLINK_CARD = ROOT / "models" / "collective" / "h200x4-collect-nvlink.yaml"
INTERLEAVED = CAL / "h200x4-ddp-interleaved-2026-11-22"
SEQUENCES = CAL / "h200x4-ddp-124-2026-11-22"
COLLECT = CAL / "h200x4-collect-2026-11-22"
PAIRED = CAL / "h200x4-ddp-paired-2026-11-22"
X2 = CAL / "h200x2-ddp-paired-2026-11-22"


def step_s(workload, ranks: int, card, ddp) -> float:
    """The DDP step of `workload` (its 1-GPU step) on `ranks` GPUs, all_reduce from a collective card."""
    from simcluster.collectives.model import predict
    from simcluster.training.step import simulate_step

    return simulate_step(workload, ranks, lambda s: predict(card, "all_reduce", s, ranks).time_s, ddp).step_s


def _row(session: str, bundle: Path, label: str, ranks: int, transport: str, measured: float, predicted: float,
         one_gpu: float | None) -> dict:
    return {"session": session, "bundle": bundle.name, "label": label, "ranks": ranks, "transport": transport,
            "measured_s": measured, "predicted_s": predicted, "one_gpu_s": one_gpu}


def interleaved(ddp, nv) -> list[dict]:
    from simcluster.training import workload as W

    out = []
    for path in sorted(INTERLEAVED.glob("interleaved-*.jsonl")):
        records = W.read_runs(path)
        for one, two in zip(records[0::2], records[1::2], strict=True):
            w = W.from_record(one, where=str(path))
            out.append(_row("interleaved", INTERLEAVED, f"{path.stem} {w.model} x2", 2, "nvlink", two["median_step_s"], step_s(w, 2, nv, ddp), w.step_s))
    return out


def sequences(ddp, nv) -> list[dict]:
    from simcluster.training import workload as W

    out = []
    for path in sorted(SEQUENCES.glob("interleaved-*.jsonl")):
        one = None
        for r in W.read_runs(path):
            if r["world_size"] == 1:
                one = W.from_record(r, where=str(path))
            elif one is not None:
                n = r["world_size"]
                out.append(_row("1-2-4", SEQUENCES, f"{path.stem} {one.model} x{n}", n, "nvlink", r["median_step_s"], step_s(one, n, nv, ddp), one.step_s))
    return out


@functools.cache
def collect_cards():
    """The collect bundle's own NVLink and socket collective cards (its nccl-tests), calibrated into a scratch folder."""
    from simcluster.cards import load_collective
    from simcluster.files import scratch_folder, write_documents
    from simcluster.fit.bundle import calibrate_bundle

    cards = scratch_folder("heldout-ddp")
    write_documents(cards, calibrate_bundle(COLLECT).documents)
    return load_collective(cards / "collective-nccl-tests.yaml")[0], load_collective(cards / "collective-nccl-tests-socket.yaml")[0]


def collect(ddp) -> list[dict]:
    from simcluster.training import workload as W

    nv, so = collect_cards()
    workloads, out = {}, []
    for run in sorted((COLLECT / "ddp-step").iterdir()):
        records = W.read_runs(run / "stdout.txt")
        one = next(r for r in records if r["world_size"] == 1)
        w = workloads[one["model"]] = W.from_record(one, W.profile_gpu_s(run, one["model"], one["image"], one["batch_per_gpu"]))
        out += [_row("collect", COLLECT, f"{w.model} x{r['world_size']} nvlink", r["world_size"], "nvlink", r["median_step_s"],
                     step_s(w, r["world_size"], nv, ddp), w.step_s) for r in records if r["world_size"] > 1]
    for run in sorted((COLLECT / "ddp-step-socket").iterdir()):
        for r in W.read_runs(run / "stdout.txt"):
            w = workloads[r["model"]]
            out.append(_row("collect", COLLECT, f"{w.model} x{r['world_size']} socket", r["world_size"], "socket", r["median_step_s"],
                            step_s(w, r["world_size"], so, ddp), w.step_s))
    return out


def paired_observations(path: Path, nv, every_rank: bool = True) -> list:
    """The paired session's 2- and 4-GPU runs, each predicted from every rank's plain steps (the slowest rank paces the
    step) or, with every_rank=False, from rank 0's alone."""
    from simcluster.collectives.model import predict
    from simcluster.fit.training import Observation
    from simcluster.training import workload as W

    return [Observation(f"{path.stem} {r['model']} x{r['world_size']}", W.from_paired(r, str(path)), r["world_size"],
                        lambda s, n=r["world_size"]: predict(nv, "all_reduce", s, n).time_s, r["median_step_s"],
                        W.paired_ranks(r, str(path)) if every_rank else ())
            for r in W.read_runs(path) if r["world_size"] > 1]


def paired(ddp, nv) -> list[dict]:
    from simcluster.fit.training import predict_all

    out = []
    for path in sorted(PAIRED.glob("rep*.jsonl")):
        obs = paired_observations(path, nv)
        out += [_row("paired", PAIRED, o.label, o.ranks, "nvlink", o.measured_s, float(t), o.workload.step_s)
                for o, t in zip(obs, predict_all(obs, ddp), strict=True)]
    return out


@functools.cache
def x2_all_reduce_card(transport: str):
    """The 2 x H200 machine's all_reduce card over one transport, fitted on its own torch.distributed sweep."""
    from simcluster.fit.collective import fit_card
    from simcluster.traces import nccl_tests

    return fit_card([nccl_tests.parse(X2 / f"all_reduce-{transport}.txt")])[0]


def another_machine(ddp) -> list[dict]:
    from simcluster.collectives.model import predict
    from simcluster.fit.training import Observation, predict_all
    from simcluster.training import workload as W

    out = []
    for path in sorted(X2.glob("*-rep*.jsonl")):
        transport = path.stem.split("-")[0]
        comm = x2_all_reduce_card(transport)
        for r in W.read_runs(path):
            if r["world_size"] < 2:
                continue
            o = Observation(path.stem, W.from_paired(r, str(path)), 2, lambda s, c=comm: predict(c, "all_reduce", s, 2).time_s,
                            r["median_step_s"], W.paired_ranks(r, str(path)))
            out.append(_row("2xH200", X2, f"{r['model']} {path.stem}", 2, transport, o.measured_s, float(predict_all([o], ddp)[0]),
                            o.workload.step_s))
    return out


def held_out_rows() -> list[dict]:
    """Every held-out DDP step of the five sessions, predicted with the shipped DDP card."""
    from simcluster.cards import load_collective, load_ddp

    ddp, _ = load_ddp(DDP_CARD)
    nv, _ = load_collective(NVLINK_CARD)
    return interleaved(ddp, nv) + sequences(ddp, nv) + collect(ddp) + paired(ddp, nv) + another_machine(ddp)
