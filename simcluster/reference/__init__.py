"""Reference measurements the models are checked against, read once: the published runs in
calibration/published/ (`simcluster validate --published nccl|llm`) and NCCL's logged decisions in trace
bundles (`simcluster validate --decisions FOLDER`). Each comparison returns a typed result
(results.ReferenceValidation, results.DecisionValidation) that report/validation.py renders.

Whether a reference was held out (nothing fitted or chosen on it) is read from the reference itself: a published
file's `simcluster:` block (`held_out`, `why`, per-run exceptions in `runs_not_held_out`), a tuning log's sha256
against the decision model's provenance (reference/decisions.py).
"""


def source_gpu(ref) -> str:
    """The GPU model a published file's rows ran on (published.Published): the first its `system.gpu` text names
    (trust/regime.gpu_model: 'H100 (80 GB; DGX Cloud)' -> H100); '' when it names none."""
    from simcluster.trust.regime import gpu_model

    return gpu_model(str(ref.system.get("gpu") or ""))
