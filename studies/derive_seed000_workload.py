"""Derive the seed 000 workload card (ResNet-18 fine-tuned on CIFAR-10 upscaled to 224 x 224,
batch 128 per GPU) from two measured H200 cards, since the lab report gives no per-step trace.

    python studies/derive_seed000_workload.py > models/training/seed000-resnet18-224-b128.yaml

Assumptions (written into the card):
- GPU time per sample scales with forward FLOPs at 224 px from the measured ResNet-50 card:
  ResNet-18 1.82 GMAC vs ResNet-50 4.11 GMAC per image (torchvision model stats).
- Host issue time and gradient tensors are those of the measured ResNet-18 card (same graph).
- Phase shares and step-to-step spread (relative) are the measured ResNet-50 card's (a GPU-bound step).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from simcluster.card_document import dump_card
from simcluster.cards import load_training, training_card

ROOT = Path(__file__).resolve().parent.parent
R18_GMAC, R50_GMAC, BATCH = 1.82, 4.11, 128


def main() -> None:
    r50, _ = load_training(ROOT / "models/training/h200-resnet50-224-b64.yaml")
    r18, _ = load_training(ROOT / "models/training/h200-resnet18-32-b128.yaml")
    gpu = r50.gpu_s / r50.batch_per_gpu * BATCH * R18_GMAC / R50_GMAC
    step = max(gpu, r18.host_s) + r50.drain_s
    spread = tuple(step * t / r50.step_s for t in r50.step_samples_s)
    w = dataclasses.replace(r50, model="resnet18", image=224, batch_per_gpu=BATCH, step_s=step, host_s=r18.host_s,
                            gpu_s=gpu, grad_bytes=r18.grad_bytes, step_samples_s=spread)
    card = training_card(w, "Seed 000: ResNet-18 fine-tuned on CIFAR-10 at 224 px, batch 128 per GPU, on one "
                            "H200-class GPU (the report does not name the GPU). Derived, not measured.",
                         {"derived_from": ["models/training/h200-resnet50-224-b64.yaml",
                                           "models/training/h200-resnet18-32-b128.yaml"],
                          "script": "studies/derive_seed000_workload.py"},
                         [f"gpu = resnet50 gpu per sample x {BATCH} x {R18_GMAC}/{R50_GMAC} GMAC",
                          "host issue time and gradient tensors: measured resnet18 card",
                          "phase shares and relative step spread: measured resnet50 card"])
    card["name"] = "seed000-resnet18-224-b128"
    print(dump_card(card), end="")


if __name__ == "__main__":
    import study_args  # an unknown argument refused before the study runs
    study_args.check()
    main()
