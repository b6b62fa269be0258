"""torchtitan's published selective-AC rows (64 x A100, FSDP2; calibration/published/llm-torchtitan-fsdp2-a100.yaml,
runs 0, 1, 4, 5, 6) predicted with the selective checkpointing of llm/eager_ac.py (issue 44, session sac; not a test).

    python validation/llm_sac_torchtitan.py

The file kept these rows in runs_not_compared when this script first read them (7943865); since issue 44 session pool
they are held-out rows of the error-band table (reference/llm_specs.TORCHTITAN_AC maps the printed labels). It reads them
as a check of the two policies' expressions: 'selective layer' = recompute full with recompute_every 2, 'selective
op' = recompute op; everything else as validate --published predicts the file's rows (framework torchtitan-fsdp2,
its machine). The full and no-AC rows are printed beside them for scale. Error: predicted / measured - 1 of tokens per second (_compared; + = predicted fast).
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from simcluster.cards import load_collective  # noqa: E402
from simcluster.hardware.gpu import load_gpu  # noqa: E402
from simcluster.llm.predict import network_for, predict_llm  # noqa: E402
from simcluster.machine_models import build_cluster  # noqa: E402
from simcluster.published import read_published  # noqa: E402
from simcluster.reference.llm import _compared, framework_of, llm_usage, machine_for  # noqa: E402
from simcluster.reference.llm_specs import spec_of  # noqa: E402
from simcluster.script_args import check  # noqa: E402

FILE = ROOT / "calibration/published/llm-torchtitan-fsdp2-a100.yaml"


def main() -> int:
    ref = read_published(FILE, "published-llm-run")
    usage = llm_usage(ref)
    for i, run in enumerate(ref.runs):
        label = run["parallel"]["recompute"]   # 'selective layer' / 'selective op': reference/llm_specs.TORCHTITAN_AC's policies
        (model, par, batch), _, _ = spec_of(run, usage.assumptions)
        machine = machine_for(usage, run["gpus"])
        intra = load_collective(machine.card)[0]
        net = network_for(machine, intra, build_cluster(machine, intra) if machine.domains > 1 else None)
        result = predict_llm(model, par, batch, load_gpu(machine.gpu_card)[0], net, run["gpus"], "megatron", trace=False,
                             framework=framework_of(ref, run))
        metric, measured, predicted, error = _compared(ref, run, model, batch, result)
        print(f"run {i} {run['model']['name']:12s} {label:16s} {metric} measured {measured:8.1f} predicted {predicted:8.1f} "
              f"error {100 * error:+6.1f}%  memory {result.memory_per_gpu_GiB['total']:5.1f} GiB")
    return 0


if __name__ == "__main__":
    check()   # takes no argument: anything else is one line, before it runs
    sys.exit(main())
