"""A scenario's `kind: llm_training` job on its machine: the GPU card and the collective cards read, the machine's
network built (its NVLink domains, and the fabric across them), and the LLM model (llm/predict.py) called with them."""

from __future__ import annotations

from simcluster.cards import load_collective
from simcluster.errors import ScenarioError
from simcluster.hardware.gpu import load_gpu
from simcluster.llm import comm
from simcluster.llm.predict import LlmResult, predict_llm
from simcluster.machine_models import build_cluster


def network_for(machine, intra=None, cluster=None) -> comm.Network:
    """The scenario machine's collective card (inside an NVLink domain: a node, or several nodes with
    machine.nvlink_domain) and fabric (across domains; `cluster` the scenario's own when build.py has one, else
    built here)."""
    intra = cluster.intra if cluster is not None else (intra or load_collective(machine.card)[0])
    if cluster is None and machine.domains > 1:
        cluster = build_cluster(machine, intra)
    return comm.Network(intra, machine.domain_gpus, cluster, aligned=not machine.nvlink_domain)


def predict_llm_job(machine, job, trace: bool = True, cluster=None, where: str | None = None) -> LlmResult:
    """A scenario's `kind: llm_training` job on its machine (machine.gpu_card names the GPU card); `where`: the
    scenario file, named by its errors."""
    if machine.gpu_card is None:
        raise ScenarioError("machine.gpu: an llm_training job needs a GPU card (machine.gpu.card)", where=where)
    gpu, _ = load_gpu(machine.gpu_card)
    if machine.gpu_clock == "duty" and gpu.clock is None:
        raise ScenarioError(f"machine.gpu.clock: 'duty' needs a GPU card with a clock: block; {machine.gpu_card} has none",
                            where=where, hint="use clock: fixed, or a measured card (models/gpu/h100-sxm*.yaml, h200-sxm*.yaml)")
    try:
        return predict_llm(job.model, job.parallel, job.batch, gpu, network_for(machine, cluster=cluster),
                           machine.gpus_per_node * machine.nodes, trace=trace, framework=job.framework_spec(),
                           clock_model=machine.gpu_clock, speed_spread=machine.gpu_speed_spread)
    except ScenarioError as exc:   # e.g. a group that does not tile the machine's NVLink domains (llm/comm.py)
        if exc.where:
            raise
        raise ScenarioError(exc.message, where=where, hint=exc.hint) from None

