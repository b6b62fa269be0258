"""Every file kind simcluster reads, declared once (simcluster.schema, pydantic v2): the reader's entry point checks
the parsed document against its declaration (strict.load_yaml / load_json(..., schema=...)) before it takes a field,
so a wrong type, a unit that does not parse, a count past its bound, a NaN anywhere or a broken cross-field rule is
one line FILE:LINE: KEY: why, whatever reader it reaches.

    kind                 declaration          entry point
    scenario             SCENARIO             scenario._read
    model card (any)     CARD                 card_document.load_yaml (collective, nic, nvme, gpu, aggregation, nvls, ddp, ...)
    DLIO workload        DLIO_WORKLOAD        storage/dlio_workload.load
    published table      PUBLISHED            published.read_published (nccl, llm, reliability runs)
    ... its chooser      CHOOSER              reference/nccl.chooser_algorithm (simcluster.chooser of a published nccl file)
    bundle manifest      BUNDLE_MANIFEST      fit/bundle_files.read_manifest
    results store        STORE_MANIFEST       sweep/store.read_manifest
    hardware catalogue   CATALOGUE            cost.load_catalogue
    tool output          next to its parser   traces/llm_step.DOCUMENT, training/workload.RECORD (ddp-step),
                                              training/workload PROFILE_SUMMARY, traces/fio.JOB, traces/dlio.SUMMARY

The declarations hold what every reader behind them relies on (the structure, the numbers' types and ranges, the
bounds that keep a run's size finite); the component readers (scenario_reader, cards' params readers) still read
each field into its typed value and refuse unknown keys with the same one-line form.
"""

from __future__ import annotations

import re
from typing import Annotated, Any

from pydantic import AfterValidator, Field, ValidationInfo, model_validator

from simcluster import output, units
from simcluster.schema import Count, Document, Hinted, ListOf, Map, MapOf, Nullable, Number, OneOf, Parsed, Quantity, Record, Section, Text
from simcluster.strict import short

MAX_GPUS = 131_072          # GPUs in one machine: 8x the largest published training run; the fabric model is O(GPUs)
MAX_NODES = 131_072
MAX_GPUS_PER_NODE = 1_024
MAX_JOBS = 1_000
MAX_VARIANTS = 10_000


def _not_negative(value):
    """The output layer's rule on the way in (a card is what simcluster writes, read back; a published table holds
    measurements): no negative time, size, rate or count under a unit-suffixed key (output.NON_NEGATIVE)."""
    bad = output.problems(value) if isinstance(value, dict) else []
    if bad:
        key, number = bad[0].split(" = ", 1)
        raise ValueError(f"{key}: " + ("not a finite number" if number.lstrip("-") in ("inf", "nan") else
                                       f"expected a quantity >= 0, got {number}"))
    return value


class Job(Document):
    kind: Text(64)


class Scenario(Document):
    name: Text(200)
    description: Text(20_000) = None
    seed: Count(0, 2**63 - 1) = None
    machine: Map                # declared in machine_document.py, read by scenario._machine
    jobs: ListOf(Job, min_len=1, max_len=MAX_JOBS)
    variants: Nullable(ListOf(Map, max_len=MAX_VARIANTS) | MapOf(Any, MAX_VARIANTS)) = None
    sweep: Map = None

    @model_validator(mode="before")
    @classmethod
    def _not_a_workload(cls, value):
        if isinstance(value, dict) and {"workflow", "dataset", "reader"} <= set(value):
            raise ValueError(": this is a DLIO workload config, not a scenario; use it with: simcluster storage "
                             "max-accelerators --workload FILE --nvme CARD")
        return _not_negative(value)     # no negative time, size, rate or count under a unit-suffixed key


SCENARIO = Scenario

CARD_KINDS = ("collective", "nic", "nvme", "gpu", "aggregation", "nvls", "ddp", "training", "host-cpu", "op-profile",
              "collective-kind", "collective-machine")


class Card(Document):
    kind: Text(64)
    name: Text(300) = None
    description: Text(50_000) = None
    params: Map = None
    fit: Nullable(Map) = None
    provenance: Nullable(Map) = None

    @model_validator(mode="before")
    @classmethod
    def _quantities(cls, value):
        return _not_negative(value)


CARD = Card


class DlioWorkload(Document):
    workflow: Map = None
    dataset: Record(optional={"num_files_train": Count(1, 10**9), "num_samples_per_file": Count(1, 10**9),
                              "record_length": Number(1, 2**40, "B"), "record_length_stdev": Number(0, 2**40, "B"),
                              "record_length_resize": Number(0, 2**40, "B"), "format": Text(32),
                              "data_folder": Text(4096)}, name="Dataset")
    reader: Record(optional={"batch_size": Count(1, 2**20), "read_threads": Count(0, 4096),
                             "transfer_size": Number(1, 2**40, "B")}, name="Reader") = None
    train: Record(optional={"epochs": Count(1, 10**6), "computation_time": Number(0, 86400, "s")}, name="Train") = None


DLIO_WORKLOAD = DlioWorkload


EXCLUSION_QUOTE = re.compile(r"'[^']{12,}'|\"[^\"]{12,}\"")   # a quoted passage of the source


def _quotes_the_source(text: str) -> str:
    """`excluded_why` must quote the source's own statement that the run underperformed and say that no cause is given
    (the criterion, calibration/published/README.md)."""
    if not EXCLUSION_QUOTE.search(text or "") or "no cause" not in (text or "").lower():
        raise ValueError("excluded_why must quote the source's statement that its run fell below what the hardware "
                         "delivers ('...' of 12 characters or more), and say that no cause is given")
    return text


class PublishedUsage(Document):
    held_out: bool
    runs_not_held_out: Nullable(dict[int, Text(2000)]) = None      # run index -> why
    runs_not_compared: Nullable(dict[int, Text(2000)]) = None
    rows_not_held_out: Nullable(dict[str, Text(2000)]) = None      # row id -> why (files of rows, not runs)
    source_group: Nullable(Text(200)) = None                        # the source a band counts it as (published.Published)
    development_for: Nullable(dict[OneOf("held_out_systems"), Text(2000)]) = None   # check -> why its rows prompted it
    excluded_why: Nullable(Annotated[Text(2000), AfterValidator(_quotes_the_source)]) = None   # nccl: the criterion
    # (calibration/published/README.md): the source states the run itself fell below what its hardware delivers and gives
    # no cause; quoted ('...' of >= 12 characters): predicted and printed, never compared


class Published(Document):
    kind: OneOf("published-nccl-run", "published-llm-run", "published-reliability", "published-storage-run",
                "published-host-stack", "published-gpu-efficiency", "published-nccl-decisions")
    citation: Nullable(Map | ListOf(Map)) = None
    system: Map = None
    runs: ListOf(Map, max_len=100_000) = None
    simcluster: PublishedUsage = None

    @model_validator(mode="before")
    @classmethod
    def _quantities(cls, value):
        return _not_negative(value)

    @model_validator(mode="after")
    def _indexes_are_runs(self):
        usage, runs = self.simcluster, self.runs or []
        for key in ("runs_not_held_out", "runs_not_compared"):
            past = sorted(k for k in (getattr(usage, key, None) or {}) if not 0 <= k < len(runs))
            if past:
                raise ValueError(f"simcluster.{key}: run {past[0]} is not a run of the file (runs 0-{len(runs) - 1})")
        return self


PUBLISHED = Published


CHOOSER_PROTOCOLS = ("LL", "LL128", "Simple")   # NCCL's protocol names (nccl_constants.PROTOCOLS)


def split_choice(choice: str | None) -> tuple[str | None, str | None]:
    """(algorithm, protocol) of a chooser's entry: `ring` (protocol None: NCCL's for it) or `ring/LL128` (the chooser
    sets the pair, as AWS's region tuner does: nccl_ofi_regions.cpp zeroes the cost of one algorithm-protocol pair)."""
    if choice is None:
        return None, None
    algorithm, _, protocol = str(choice).partition("/")
    return algorithm, protocol or None


def _chooser_entry(entry: list, info: ValidationInfo) -> list:
    """[below_bytes, algorithm]: below_bytes a size in bytes (null: every larger size), algorithm one of the collective
    model's (null: the chooser leaves that size to NCCL), or ALGORITHM/PROTOCOL where the chooser's table names the
    protocol too (AWS's region tuner sets the cost of one algorithm-protocol pair: `ring/LL128`)."""
    if len(entry) != 2:
        raise ValueError("expected [below_bytes, algorithm]")
    below, algorithm = entry
    if below is not None and (isinstance(below, bool) or not isinstance(below, int) or not 1 <= below <= 2**62):
        raise ValueError(f"below_bytes {short(below)} is not a size in bytes")
    names = (info.context or {}).get("algorithm", ())
    name, protocol = split_choice(algorithm)
    if algorithm is not None and name not in names:
        raise Hinted(f"unknown algorithm {str(algorithm)[:20]!r}", f"one of {', '.join(names)}")
    if protocol is not None and protocol not in CHOOSER_PROTOCOLS:
        raise Hinted(f"unknown protocol {protocol[:20]!r} in {str(algorithm)[:30]!r}", f"one of {', '.join(CHOOSER_PROTOCOLS)}")
    return entry


def _chooser_table(table: list) -> list:
    belows = [below for below, _ in table]
    if belows[-1] is not None or None in belows[:-1]:
        raise ValueError("the last entry must be [null, algorithm] (every larger size), and only the last")
    if belows[:-1] != sorted(set(belows[:-1])):
        raise ValueError("below_bytes must increase from entry to entry")
    return table


def _rank_count(value) -> int:
    if isinstance(value, bool) or not str(value).isdigit() or not 1 <= int(value) <= MAX_GPUS:
        raise ValueError(f"expected a rank count from 1 to {MAX_GPUS:,}")
    return int(value)


ChooserTable = Annotated[ListOf(Annotated[list, AfterValidator(_chooser_entry)], min_len=1, max_len=1000),
                         AfterValidator(_chooser_table)]


class Chooser(Section):
    """A published nccl file's `simcluster.chooser`: the algorithm a chooser other than NCCL's ran (AWS's ofi tuner
    plugin), per size, from the chooser's own table (reference/nccl.chooser_algorithm reads it, giving the collective
    model's algorithm names and its collective-name parser)."""

    source: Text(20_000)
    op: Parsed("op") = None                       # the one collective the table is for (absent: every one)
    ranks: Count(1, MAX_GPUS) = None
    algorithms: ChooserTable = None               # at `ranks`
    by_ranks: Annotated[dict[Annotated[Any, AfterValidator(_rank_count)], ChooserTable],
                        Field(min_length=1, max_length=1000)] = None

    @model_validator(mode="after")
    def _one_form(self):
        if self.by_ranks is not None and (self.ranks is not None or self.algorithms is not None):
            raise ValueError("by_ranks: expected {RANKS: [[below_bytes, algorithm], ...]}, instead of ranks and algorithms")
        if self.by_ranks is None and (self.ranks is None or self.algorithms is None):
            raise ValueError(f"{'ranks' if self.ranks is None else 'algorithms'}: missing (give ranks and algorithms, or "
                             "by_ranks)")
        return self


CHOOSER = Chooser

_CPU = Nullable(Number(0, 10**7, "s"))
RUN = Record(   # a run of a bundle: the keys that make it one are the reader's (a foreign entry is skipped, not fatal)
    optional={"tool": Text(64), "run_id": Text(300), "status": Text(64), "path": Text(4096), "wall_s": _CPU,
              "child_cpu_s": _CPU, "client_cpu_s": _CPU, "server_cpu_s": _CPU, "ranks": Count(1, MAX_GPUS),
              "ranks_per_node": Count(1, MAX_GPUS_PER_NODE), "client_switches": Count(0, 2**62),
              "server_switches": Count(0, 2**62), "exit_code": Nullable(Number(-2**31, 2**31, integer=True)),
              "argv": ListOf(Text(100_000), max_len=10_000) | Text(100_000), "env": MapOf(Any), "meta": Map},
    name="Run")


class BundleManifest(Document):
    format: Text(64) = None
    runs: ListOf(RUN, max_len=100_000)
    tools: ListOf(Text(64), max_len=1000) = None
    host: Map = None
    options: Map = None

    @model_validator(mode="before")
    @classmethod
    def _quantities(cls, value):   # options.gpus, a run's seconds: what collect recorded, never negative
        return _not_negative(value)


BUNDLE_MANIFEST = BundleManifest


class StoreManifest(Document):
    name: Text(300) = None
    points: Count(0, 10**9) = None
    mode: Text(32) = None
    scenario: Text(4096) = None
    keys: MapOf(ListOf(Any, max_len=10**6)) = None


STORE_MANIFEST = StoreManifest


class Catalogue(Document):
    kind: Text(64) = None
    name: Text(300) = None


CATALOGUE = Catalogue

# a unit field's declaration, for the declarations above and the readers that want one
Time = Quantity(units.parse_time, 0.0, 86400.0 * 365, above=False, what="time")
Size = Quantity(units.parse_size, 0.0, 2.0**60, above=False, what="size")
Bandwidth = Quantity(units.parse_bandwidth, 1e3, 1e15, above=False, what="bandwidth")
