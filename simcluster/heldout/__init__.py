"""Held-out sets measured in labs or published as whole-system results, predicted by the product's models and
compared, row by row, with what was measured (docs/models/trust.md, "Where the rows come from"):

  storage    MLPerf Storage v1.0 closed submissions (calibration/published/mlperf-storage-*.yaml)
  ddp        DDP steps on 2 and 4 x H200 in five sessions the DDP card was not fitted on
  eager      eager-PyTorch llm-step runs on 1, 2 and 4 GPUs (DDP, FSDP2, TP, TP x DP, pipelining), sealed bundles only
  moe_lab    Megatron-Core local-spec MoE steps on 1-4 H200s against the steps registered before each set ran
  eager_registered  the one-GPU compile / checkpointing sets against their registered predictions files
  transport  the host stack's cost per byte at message sizes its fit never saw (qperf-sizes bundles)

Each module returns plain rows (measured, predicted, what they are); `simcluster validate --error-bands` turns them
into the error-band table's residuals (trust/build.py). The thin scripts under validation/ print them, and write a
set's registered predictions once (registration.py)."""
