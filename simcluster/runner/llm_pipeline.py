"""The llm-step runner's pipeline modes: torch.distributed.pipelining, one stage per rank (--mode pp: W stages over
the W ranks; --mode pp+ddp: a pipeline of --group stages in each group of that many consecutive ranks, each stage
replicated by DDP across the groups, llm_mesh.py).

Stage r of W holds the decoder layers [r L / W, (r + 1) L / W) (the first rank also the embedding, the last the final
norm and the LM head; a tied head gets its own copy of the embedding's weight, since a tie cannot cross ranks). Each
shape builds a PipelineStage and the schedule (Schedule1F1B or ScheduleGPipe; with --virtual-stages V, V chunks per rank
in ScheduleInterleaved1F1B, chunk c of rank r being stage c W + r of W V) over `microbatches` micro-batches of
the shape's SEQ x MICRO_BATCH; a step is schedule.step (the first rank feeds the tokens, the last computes the
cross-entropy of each micro-batch with the labels), all under one bf16 autocast, then the stage's AdamW step and
zero_grad(set_to_none=True). The stage boundary carries the fp32 residual stream. torch is passed in (imported by
llm_step.main only).
"""

from __future__ import annotations

import inspect


def chunk_layer_ranges(layers: int, chunks: int) -> list[tuple[int, int]]:
    """The decoder layers [lo, hi) of each pipeline chunk, model order: chunk i holds i L // n to (i + 1) L // n."""
    return [(i * layers // chunks, (i + 1) * layers // chunks) for i in range(chunks)]


def add_arguments(ap) -> None:
    """llm_step's pipeline options."""
    ap.add_argument("--schedule", choices=("1f1b", "gpipe", "interleaved"), default="1f1b", help="--mode pp: "
                    "torch.distributed.pipelining's Schedule1F1B, ScheduleGPipe or ScheduleInterleaved1F1B (--virtual-stages)")
    ap.add_argument("--virtual-stages", type=int, default=1, metavar="V", help="--schedule interleaved: chunks of layers per rank")
    ap.add_argument("--microbatches", type=int, default=4, help="--mode pp: micro-batches per step (each SEQ x MICRO_BATCH)")
    ap.add_argument("--timeline", action="store_true", help="--mode pp, one chunk per rank: record each rank's host timeline "
                    "(schedule calls, CUDA events around each chunk) on every other step (pp_timeline.py)")


class Pipeline:
    @classmethod
    def of(cls, torch, model, mode: str, rank: int, world: int, group: int, cfg: dict, device, schedule: str,
           microbatches: int, amp: bool, virtual: int = 1) -> Pipeline:
        """`mode` pp: every rank a stage (or `virtual` chunks); pp+ddp: stages over each group's ranks, DDP across the groups."""
        if mode == "pp":
            return cls(torch, model, rank, world, cfg, device, schedule, microbatches, amp, virtual=virtual)
        from simcluster.runner.llm_mesh import data_parallel, mesh

        grid = mesh(torch, mode, world, group, device)
        pipe = cls(torch, model, rank % group, group, cfg, device, schedule, microbatches, amp, grid["pp"].get_group())
        pipe.module = data_parallel(torch, pipe.stage, device, grid["dp"].get_group())
        pipe.replicas = world // group
        return pipe

    def __init__(self, torch, model, rank: int, world: int, cfg: dict, device, schedule: str, microbatches: int, amp: bool,
                 group=None, virtual: int = 1):
        """`rank` is the stage's index and `world` the stage count; `group` the pipeline's process group (None: every
        rank); `virtual` > 1 (schedule interleaved): that many chunks per rank, chunk c of rank r global stage c W + r."""
        if world < 2:
            raise SystemExit("--mode pp: launch with torchrun on two or more ranks")
        if cfg["layers"] < world * virtual:
            raise SystemExit(f"--mode pp: {cfg['layers']} layers for {world * virtual} stages"
                             + (f" ({world} ranks x {virtual} chunks)" if virtual > 1 else ""))
        if microbatches < 1:
            raise SystemExit("--microbatches: expected an integer >= 1")
        if (schedule == "interleaved") != (virtual > 1):
            raise SystemExit("--schedule interleaved goes with --virtual-stages 2 or more, and only it")
        self.torch, self.rank, self.world, self.cfg, self.device = torch, rank, world, cfg, device
        self.schedule_name, self.microbatches, self.amp, self.virtual = schedule, microbatches, amp, virtual
        n = world * virtual
        self.indices = [c * world + rank for c in range(virtual)]
        ranges = chunk_layer_ranges(cfg["layers"], n)
        self.layers = [ranges[i] for i in self.indices]
        self.chunks = [self._stage_module(model, i, n, lo, hi) for i, (lo, hi) in zip(self.indices, self.layers, strict=True)]
        self._free(model)
        self.stage = self.chunks[0] if virtual == 1 else torch.nn.ModuleList(self.chunks)
        self.module, self.group, self.replicas = self.stage, group, 1   # module: what runs (the stage, or DDP around it)
        self.scale_grads = None
        self.timeline = None   # --timeline (pp_timeline.Timeline): each rank's host timeline, every other step

    def _stage_module(self, model, index: int, stages: int, lo: int, hi: int):
        torch = self.torch
        nn, F = torch.nn, torch.nn.functional
        first, last = index == 0, index == stages - 1
        head = None
        if last:
            head = model.head
            if self.cfg["tied"]:   # the tie cannot span ranks: the last stage trains its own copy
                head = nn.Linear(self.cfg["hidden"], self.cfg["vocab"], bias=False, device=self.device)
                with torch.no_grad():
                    head.weight.copy_(model.embed.weight)
        vocab = self.cfg["vocab"]

        class Stage(nn.Module):
            def __init__(self):
                super().__init__()
                self.embed = model.embed if first else None
                self.layers = nn.ModuleList(model.layers[lo:hi])
                self.norm = model.norm if last else None
                self.head = head

            def forward(self, x):
                if self.embed is not None:
                    x = self.embed(x)
                cos, sin = model.rotary(x.shape[1], x.device, x.dtype)
                x = model.run_layers(self.layers, x, cos, sin)
                return self.head(self.norm(x)) if self.head is not None else x

        self.loss_fn = lambda logits, labels: F.cross_entropy(logits.float().view(-1, vocab), labels.reshape(-1))
        return Stage()

    def _free(self, model) -> None:
        """The other ranks' layers, embedding, norm and head: freed before the first shape."""
        first, last = self.rank == 0, self.rank == self.world - 1
        del model.layers
        if not first:
            del model.embed
        if not last or self.cfg["tied"]:   # a tied head shares the embedding's weight: the last stage trains its own copy
            del model.head
        if not last:
            del model.norm
        if self.device.type == "cuda":
            self.torch.cuda.empty_cache()

    def step_maker(self, opt):
        """A make_step for llm_step.run_shape: the step over the shape's whole batch (micro_batch x microbatches rows)."""
        torch = self.torch
        from torch.distributed.pipelining import PipelineStage, Schedule1F1B, ScheduleGPipe, ScheduleInterleaved1F1B

        def make(inputs, labels):
            n = self.world * self.virtual   # shapes inferred at the first step
            if self.virtual > 1:
                stages = [PipelineStage(c, i, n, self.device, group=self.group) for c, i in zip(self.chunks, self.indices, strict=True)]
                cls, arg = ScheduleInterleaved1F1B, stages
            else:
                cls = ScheduleGPipe if self.schedule_name == "gpipe" else Schedule1F1B
                arg = PipelineStage(self.module, self.rank, self.world, self.device, group=self.group)
                if self.timeline is not None:
                    self.timeline.install(arg)
            self.scale_grads = "scale_grads" in inspect.signature(cls.__init__).parameters
            schedule = cls(arg, self.microbatches, loss_fn=self.loss_fn)
            first, last = self.rank == 0, self.rank == self.world - 1

            def step():
                losses = []
                with torch.autocast(self.device.type, dtype=torch.bfloat16, enabled=self.amp):
                    if first:
                        schedule.step(inputs)
                    elif last:
                        schedule.step(target=labels, losses=losses)
                    else:
                        schedule.step()
                if self.timeline is not None:
                    self.timeline.mark("schedule")
                opt.step()
                opt.zero_grad(set_to_none=True)
                return torch.stack(losses).mean() if losses else torch.zeros((), device=self.device)

            return step if self.timeline is None else self.timeline.around(step)

        return make

    def gather(self, record: dict) -> list[dict]:
        """Every rank's peak memory and median step of a shape (rank order; collective: every rank calls it)."""
        import torch.distributed as dist

        mine = {k: record.get(k) for k in ("status", "median_step_s", "max_memory_allocated_bytes", "max_memory_reserved_bytes",
                                           "memory_allocated_steady_bytes")}
        mine.update(rank=dist.get_rank(), stage=self.rank,
                    layers=list(self.layers[0]) if self.virtual == 1 else [list(x) for x in self.layers])
        if self.timeline is not None:
            mine["timeline"] = self.timeline.dump()
        out: list = [None] * dist.get_world_size()
        dist.all_gather_object(out, mine)
        return out

    def describe(self) -> dict:
        return {"library": "torch.distributed.pipelining",
                "schedule": {"1f1b": "Schedule1F1B", "gpipe": "ScheduleGPipe", "interleaved": "ScheduleInterleaved1F1B"}[self.schedule_name],
                "stages": self.world, "virtual_stages": self.virtual, "replicas": self.replicas, "microbatches": self.microbatches,
                "scale_grads_default": self.scale_grads,
                "timeline": None if self.timeline is None else "every other step, each rank (pp_timeline.py)",
                "autocast": "one bf16 autocast around schedule.step" if self.amp else None,
                "tied_head": "own copy on the last stage" if self.cfg["tied"] else None}
