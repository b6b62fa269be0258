"""Text for typed results (simcluster/results.py): what `simcluster run` prints for each job."""

from __future__ import annotations

from functools import singledispatch

from simcluster.report.tables import sweep_table, training_table
from simcluster.results import ConcurrentResult, LlmTrainingResult, QperfResult, ScenarioResult, SweepResult, TrainingResult


@singledispatch
def render(result) -> str:
    raise TypeError(f"no text rendering for {type(result).__name__}")


@render.register
def _(result: ScenarioResult) -> str:
    head = f"\n== variant {result.variant}\n" if result.variant else ""
    return head + "".join(render(job) for job in result.jobs)


@render.register
def _(result: SweepResult) -> str:
    job, m = result.job, result.measured
    text = (f"\n{job.op} on {job.ranks} ranks ({job.engine} engine, {result.description}), card {result.card_name} "
            f"({result.card_path})\n")
    text += sweep_table(result.predictions, {row.size_bytes: row.measured_s for row in m.rows} if m else None)
    if job.measured is not None:
        text += measured_line(result) + "\n"
    from simcluster.trust.band import sweep_trust_lines

    return text + "".join(f"# {line}\n" for line in sweep_trust_lines(result.predictions, result.machine_trust))



def measured_line(result: SweepResult) -> str:
    """Where the measured column comes from, its error over every measured size >= 1 KiB, in sample or not."""
    from simcluster.fit.validate import summary

    job, m = result.job, result.measured
    if m is None:
        return f"# measured: {job.measured} has no {job.op} at {job.ranks} ranks"
    stats = summary(m.rows)["sizes_ge_1024B"]
    return (f"# measured: {job.measured}, {'CUDA graphs' if m.cuda_graph else 'host-launched'}, median of {m.rounds} "
            f"round(s); over its {stats['sizes']} sizes >= 1 KiB mean |error| {stats['mean_abs_error_pct']:.2f}%, "
            f"max {stats['max_abs_error_pct']:.2f}%; {m.basis}")


@render.register
def _(result: ConcurrentResult) -> str:
    job = result.job
    lines = [f"\n{len(result.runs)} concurrent {job.op} jobs of {job.size_bytes / 2**20:.0f} MiB"]
    for r in result.runs:
        a, sh = r.alone, r.shared
        lines.append(f"  nodes {r.nodes[0]}..{r.nodes[-1]} ({len(r.nodes)}): alone {a.time_s * 1e3:.3f} ms, "
                     f"together {sh.time_s * 1e3:.3f} ms (x{sh.time_s / a.time_s:.2f}), {sh.algorithm}; network "
                     f"{r.network_alone_Bps / 1e9:.1f} -> {r.network_shared_Bps / 1e9:.1f} GB/s per node, "
                     f"ECMP collisions {r.ecmp_collisions}")
    return "\n".join(lines) + "\n"


@render.register
def _(result: QperfResult) -> str:
    from simcluster.hardware.qperf_model import qperf_text
    from simcluster.trust.band import qperf_trusts

    trusts = {t.regime.key: t for t in qperf_trusts(result.predicted).values()}
    return (f"\nqperf predicted from NIC card {result.nic_card}:\n" + qperf_text(result.predicted)
            + "".join(f"trust: {t.text()}\n" for t in trusts.values()))


@render.register
def _(result: TrainingResult) -> str:
    return training_table(result.prediction) + f"  trust            {result.trust.text()}\n"


@render.register
def _(result: LlmTrainingResult) -> str:
    p = result.prediction
    mem = p.memory_per_gpu_GiB
    parts = {k: v for k, v in mem.items() if k not in ("allocated", "total", "capacity", "stage") and v}
    moe = p.groups.get("ep", {}).get("size", 1) > 1
    groups = ", ".join(f"{k} {g['size']} ({g['placement']})" for k, g in p.groups.items()
                       if g.get("size", 1) > 1 and (moe or k != "expert_dp"))
    lines = [f"\nLLM training: {p.parameters / 1e9:.1f}B parameters on {p.gpus:,} x {p.gpu} ({p.framework}), "
             f"{groups or 'one GPU'}, {p.micro_batches} micro-batches",
             f"  step time        {p.step_time_s:10.3f} s",
             f"  throughput       {p.tokens_per_s:10.4g} tokens/s, {p.tflops_per_gpu:.1f} TFLOP/s per GPU, "
             f"MFU {p.mfu:.1%} (of the dense bf16 peak, {p.flops_convention} FLOP count)",
             f"  trust            {p.trust.text()}" if p.regime is not None else "",
             f"  memory per GPU   {mem['total']:10.2f} GiB of {mem['capacity']:.2f} "
             f"({'fits' if p.fits else 'DOES NOT FIT'}; {mem.get('stage', '')} stage): "
             + ", ".join(f"{k} {v:.2f}" for k, v in parts.items())
             + (f"; {mem['total'] - mem['ddp_rebuild']:.2f} GiB after the first steps (ddp_rebuild: DDP's bucket rebuild, in "
                "the peak in some processes, not in others)" if mem.get("ddp_rebuild") else ""),
             ("  breakdown (s)    " if p.critical_stage is None or not p.groups.get("pp", {}).get("size", 1) > 1 else
              f"  breakdown (s)    (stage {p.critical_stage}, the one that sets the pipeline's pace) ")
             + ", ".join(f"{k} {v:.4g}" for k, v in p.breakdown.items() if v),
             f"  simulated with {p.events:,} events"]
    if p.clock:   # the step's own SM clock (llm/clock.py)
        c = p.clock
        lines.insert(-1, f"  SM clock         {c['sm_clock_MHz']:10.0f} MHz (card curves at {c['reference_clock_MHz']:.0f}), duty: "
                         f"compute {c['compute_duty']:.1%}, memory {c['memory_duty']:.1%}, idle {c['idle_duty']:.1%}; {c['power_W']:.0f} W")
    if result.goodput is not None:
        lines += goodput_lines(result.goodput) + days_band_line(result)
        if not p.fits:
            lines.append("  warning          the configuration does not fit in GPU memory (above): these days are for a run that "
                         "could not start")
    lines += [f"  caveat           {c}" for c in p.caveats]
    lines += [f"  note             {n}" for n in p.notes]
    if not p.fits:
        lines[1:3] = [f"  DOES NOT FIT     {mem['total']:.2f} GiB per GPU needed, {mem['capacity']:.2f} available: the step cannot run; "
                      f"if it fit it would take {p.step_time_s:.3f} s ({p.tokens_per_s:.4g} tokens/s)"]
    return "\n".join(line for line in lines if line) + "\n"


def goodput_lines(g) -> list[str]:
    """Interruptions, checkpoints and days to train (llm/goodput.py); the DES run with its standard error."""
    mode = "asynchronous: the copy to host blocks" if g.asynchronous else "synchronous"
    lines = [f"  interruptions    MTBF {g.mtbf_s / 3600:.3g} h ({g.failure_rate_per_gpu_hour:.3g}/GPU-hour from {g.rate_source}), "
             f"restart {g.restart_s:.4g} s",
             f"  checkpoints      {g.checkpoint_bytes / 1e12:.3g} TB to {g.storage}: blocks {g.checkpoint_s:.4g} s ({mode}), "
             f"durable {g.checkpoint_not_durable_s:.4g} s later, every {g.checkpoint_interval_s:.4g} s",
             f"  goodput          {g.goodput:.4f} (first order {g.goodput_first_order:.4f}"
             + (f", simulated {g.goodput_simulated:.4f} +- {g.goodput_simulated_se:.4f})" if g.goodput_simulated is not None else ")")]
    if g.interval_note:
        lines.append(f"  note             {g.interval_note}")
    if g.days_to_train is not None:
        s = g.simulated
        lines.append(f"  days to train    {g.days_to_train:.2f} for {g.train_tokens:.3g} tokens ({g.productive_s / 86400:.2f} days "
                     f"of steps, {g.expected_interruptions:.0f} interruptions expected); one simulated run (seed {s['seed']}): "
                     f"{s['days_to_train']:.2f} +- {s['days_to_train_se']:.2f} days (its standard error), {s['interruptions']} "
                     f"interruptions, {s['events']:,} events")
    return lines


def days_band_line(result: LlmTrainingResult) -> list[str]:
    band = result.days_to_train_band()
    return [f"  days, 80% band   {band[0]:.2f} to {band[1]:.2f} (the step time's band; checkpoints and restarts as predicted)"] if band else []


def scenario_text(results: list[ScenarioResult], description: str) -> str:
    return f"scenario {results[0].name}: {description}".rstrip(": ") + "\n" + "".join(render(r) for r in results)
