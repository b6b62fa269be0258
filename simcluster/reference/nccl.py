"""Published multi-node nccl-tests runs (calibration/published/nccl-*.yaml) against the fabric model (issue 23):
`simcluster validate --published nccl [FOLDER | FILE]`.

Each file names its system's scenario (`simcluster.scenario`, built from the source's configuration, cards from
published port speeds). For every published row at >= 64 MiB the fabric model predicts busbw with the algorithm and
protocol NCCL's decision model picks for the topology (or the algorithm the source forced). A row whose size the
source does not give (Voltage Park) is compared with the model's peak busbw over 64 MiB..16 GiB, as the source calls
its figures peaks, the search capped at the run's `max_size` where the source states its range (nccl#1368: -e 1G);
nccl#1221's "4GiB-8GiB" with the mean over 4 and 8 GiB. NCCL's tree-kernel ceiling is keyed by the NCCL version
the scenario names, else the one the file states (system.nccl). Where the source says another chooser
than NCCL's ran (AWS's ofi tuner plugin), the file's `simcluster.chooser` gives that chooser's algorithm per size at
the run's rank count, from the chooser's own table (cited in the block), and that algorithm is priced. A file whose
source states its run was degraded in a way the model has no physical knob for names it in `simcluster.excluded_why`
(quoted): its rows are predicted and printed with that reason, never compared (no error, no band, no fit). Target: <= 10%
per system.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from simcluster import documents, schema
from simcluster.errors import SimclusterError
from simcluster.published import Published, published_files, read_published
from simcluster.reference import source_gpu
from simcluster.results import ReferenceRow, ReferenceValidation
from simcluster.strict import MAX_RATE_Bps, MIN_RATE_Bps, short

MIN_BYTES = 64 * 2**20
PEAK_SIZES = [2**k for k in range(26, 35)]
RANGE_SIZES = {"4GiB-8GiB": [4 * 2**30, 8 * 2**30]}
FORCED = {"NCCL_ALGO=allreduce:ring (forced)": "ring", "NCCL_ALGO=allreduce:nvlstree (forced)": "nvls-tree",
          "NCCL_ALGO=Ring (forced)": "ring", "NCCL_ALGO=Tree (forced)": "tree", "NCCL_ALGO=NVLSTree (forced)": "nvls-tree"}
TARGET = 0.10


def _cluster(scenario: Path, nodes: int):
    from simcluster.machine_models import build_cluster, build_domain
    from simcluster.scenario import load_variants

    machine = load_variants(scenario, nodes)[0][1].machine
    if machine.domains == 1 and (machine.nvlink_domain or machine.nic is None or machine.nodes == 1):   # no network: NCCL's one node
        return build_domain(machine)
    return build_cluster(machine)


def _stated_nccl(cluster, ref: Published, tables: str | None = None):
    """The cluster with the NCCL version its scenario names (machine.nccl), else the one the file states
    (system.nccl, the source's), for the tree-kernel ceiling (collectives/tree_kernel.py), LL128 over a CPU-attached
    NIC (cluster.no_ll128_via_cpu), on one NVLink domain the NVLS channels (collectives/nvls_domain.py) and, with the
    opt-in (`tables` 'stated', else the scenario's machine.nccl_tables), NCCL's tuner tables (nccl_versions.py);
    `tables` None: the scenario's own."""
    from simcluster.collectives.cluster import Cluster
    from simcluster.collectives.domain import NvlinkDomain
    from simcluster.collectives.nccl_versions import stated_release

    if not isinstance(cluster, (Cluster, NvlinkDomain)):
        return cluster
    nccl = cluster.nccl      # resolved once again only where this file changes it (a one-line refusal of a bad `tables`)
    if tables is not None:
        nccl = dataclasses.replace(nccl, tables=tables)
    stated = stated_release(ref.system.get("nccl"))
    if nccl.stated is None and stated is not None:
        nccl = dataclasses.replace(nccl, stated=stated)
    return cluster if nccl == cluster.nccl else dataclasses.replace(cluster, nccl=nccl)


@dataclasses.dataclass(frozen=True)
class Ran:
    """What the model ran for one published run, as data (system_runs); a row's `detail` is its text()."""

    algorithm: str                  # the fabric's ('ring', 'tree', 'nvls-tree', ...); one NVLink domain: 'nvls' or 'nvlink-card'
    protocol: str
    link: str = ""                  # the link the row's regime names: 'nvlink-<gpu>' in one domain, else across nodes ('rdma-ib')
    skipped: str = ""               # the chooser's protocol that cannot run there (fabric._choose), NCCL's; else ""
    peak_bytes: int | None = None   # a run without a size: the size of the model's peak

    def text(self) -> str:
        """ALGORITHM/PROTOCOL, the skipped protocol and the peak's size where there are."""
        return (f"{self.algorithm}/{self.protocol}" + (f" ({self.skipped} skipped: not runnable here, NCCL's)" if self.skipped else "")
                + (f" at {self.peak_bytes >> 20} MiB (peak)" if self.peak_bytes is not None else ""))


def _predict(cluster, op: str, sizes: list[int] | None, algorithms: list[str | None], peak: list[int]) -> tuple[float, Ran]:
    """Predicted busbw (B/s): the mean over `sizes` (each at its algorithm, None: NCCL's choice), or the peak over
    `peak` (sizes None; at algorithms[0] where the source forced one); and what ran (its link set by system_runs). On
    one NVLink domain a forced algorithm is resolved by collectives/domain.domain_algorithm, the rule predict collective
    --algorithm uses: a Ring without an NVLS card is the domain's NVLink card, anything else refused."""
    from simcluster.collectives.domain import NvlinkDomain
    from simcluster.collectives.fabric import predict_fabric
    from simcluster.collectives.ring_flows import ring_flows

    if isinstance(cluster, NvlinkDomain):
        def call(s, a, flows):   # the forced algorithm resolved by the domain (collectives/domain.domain_algorithm)
            return cluster.predict(op, s, a)
        flows = None
    else:
        def call(s, a, flows):
            algorithm, protocol = documents.split_choice(a)
            return predict_fabric(cluster, op, s, algorithm, flows, protocol)
        flows = ring_flows(cluster)
    if sizes is None:
        forced = algorithms[0] if algorithms else None
        best = max((call(s, forced, flows) for s in peak), key=lambda p: p.busbw_Bps)
        return best.busbw_Bps, _ran(best, peak=True)
    preds = [call(s, a, flows) for s, a in zip(sizes, algorithms, strict=True)]
    return sum(p.busbw_Bps for p in preds) / len(preds), _ran(preds[-1])


def _ran(p, peak: bool = False) -> Ran:
    """What prediction `p` ran: its algorithm (one domain's card: 'nvlink-card') and protocol; where the chooser's
    protocol cannot run there, that it was skipped (fabric._choose); `peak`: its size, the run's peak."""
    skipped = getattr(p, "breakdown", {}).get("chooser_protocol_skipped") or ""
    return Ran(getattr(p, "algorithm", "nvlink-card"), p.protocol, skipped=skipped, peak_bytes=p.size_bytes if peak else None)


def read_nccl_file(path: str | Path) -> Published:
    """A published nccl file (read_published), its `simcluster.chooser` read through documents.CHOOSER as the file is
    read (not when a prediction first asks for it): a refusal is one line FILE:LINE: simcluster.chooser.KEY."""
    ref = read_published(path, "published-nccl-run")
    _chooser(ref)
    return ref


def _chooser(ref: Published):
    """The file's `simcluster.chooser` read through documents.CHOOSER (None where it has none), with the collective
    model's algorithm names and collective parser; a refusal names the file and the chooser's line."""
    from simcluster.collectives.fabric import ALGORITHMS
    from simcluster.collectives.schedule import canonical_op

    chooser = ref.usage.get("chooser")
    if chooser is None:
        return None
    try:
        return schema.read(documents.CHOOSER, chooser, {"algorithm": ALGORITHMS, "op": canonical_op})
    except schema.Refusal as exc:
        lines = Path(ref.path).read_text(errors="replace").splitlines()
        line = next((i for i, text in enumerate(lines, 1) if text.strip().startswith("chooser:")), None)
        raise SimclusterError(f"simcluster.chooser{'.' + exc.key if exc.key else ''}: {exc.why}",
                              where=f"{ref.path}:{line}" if line else f"{ref.path}: simcluster.chooser", hint=exc.hint) from None


def chooser_algorithm(ref: Published, ranks: int, size: int, op: str | None = None) -> str | None:
    """The algorithm the file's `simcluster.chooser` (a chooser other than NCCL's, e.g. AWS's ofi tuner plugin) runs
    at `size` bytes on `ranks` ranks (for its `op` only, where it names one): its `algorithms` list
    [[below_bytes, algorithm], ..., [null, algorithm]] at its `ranks`, or `by_ranks: {RANKS: algorithms}` where the
    chooser's table differs by rank count (an algorithm null: the chooser leaves that size to NCCL); None where the
    file has no chooser or none for this rank count (NCCL's decision model then, as where the plugin leaves the choice
    to NCCL: AWS's region tuner at <= 2 nodes)."""
    from simcluster.collectives.schedule import canonical_op

    c = _chooser(ref)
    if c is None:
        return None
    if c.op is not None and op is not None and c.op != canonical_op(op):
        return None                         # the chooser's table is for another collective (NCCL chooses this one)
    table = c.by_ranks.get(ranks) if c.by_ranks is not None else c.algorithms if c.ranks == ranks else None
    if table is None:
        return None                         # none for this rank count: NCCL's decision model
    return next(algorithm for below, algorithm in table if below is None or size < below)   # null: left to NCCL


def _peak_sizes(run: dict) -> list[int]:
    """The sizes a row without a size takes its peak over: PEAK_SIZES, up to the run's `max_size` where the source
    states the range it ran (nccl-tests' -e); [] when that is below MIN_BYTES."""
    from simcluster.units import parse_size_arg

    value = run.get("max_size")
    if value is None:
        return PEAK_SIZES
    try:
        top = None if isinstance(value, bool) else parse_size_arg(value)
    except (SimclusterError, TypeError, ValueError, ArithmeticError):
        top = None
    if top is None or top <= 0:
        raise SimclusterError(f"key 'max_size': {short(value)} is not a size > 0", hint="write e.g. 1G or 1GiB")
    return [s for s in PEAK_SIZES if s <= top]


def _forced(run: dict) -> str | None:
    """The algorithm the source forced (NCCL_ALGO), None for NCCL's own choice (no `algorithm`, or a text starting
    "default"); any other text (a plain "Ring", an unknown NCCL_ALGO) is an error, never priced as NCCL's choice."""
    algorithm = run.get("algorithm")
    if algorithm is None or isinstance(algorithm, str) and algorithm.startswith("default"):
        return None
    if algorithm in FORCED:
        return FORCED[algorithm]
    raise SimclusterError(f"algorithm {short(algorithm)} is not a forced algorithm the reader knows, nor NCCL's own choice "
                          "(no algorithm, or a text starting 'default')", hint="one of " + ", ".join(map(repr, FORCED)))


def _sizes(run: dict) -> list[int] | None:
    """The sizes a row was measured at (None: not given, compare peaks); [] when below MIN_BYTES."""
    if run.get("max_size") is not None and (run.get("bytes") or run.get("size") is not None):
        raise SimclusterError("max_size is for a row without a size (a peak over the source's range)")
    if run.get("bytes"):
        sizes = [int(run["bytes"])]
    elif run.get("size") is None:
        return None
    elif str(run["size"]) in RANGE_SIZES:
        sizes = RANGE_SIZES[str(run["size"])]
    else:
        raise SimclusterError(f"size {run['size']!r} without bytes", hint="give 'bytes'")
    return sizes if min(sizes) >= MIN_BYTES else []


def _configuration(ref: Published, run: dict, nodes: int) -> str:
    gpu = str(ref.system.get("gpu", "")).split(" (")[0]
    text = f"{run['op']} {run.get('size') or 'size not given'}, {nodes} x {ref.system.get('gpus_per_node')} {gpu}"
    if run.get("algorithm"):
        text += f", {str(run['algorithm']).split(' (')[0]}"
    if run.get("nvls") is not None:
        text += f", nvls {run['nvls']}"
    return text


def run_nodes(ref: Published, run: dict) -> int:
    """A published run's node count: its `nodes`, else its `ranks` over the system's gpus_per_node, else the system's
    `nodes` (KeyError / TypeError / ValueError on a file without them: system_rows turns these into one line)."""
    return int(run.get("nodes") or (run["ranks"] // int(ref.system["gpus_per_node"]) if run.get("ranks") else ref.system["nodes"]))


def system_rows(ref: Published, tables: str | None = None) -> list[ReferenceRow]:
    """One row per published run at >= 64 MiB (or without a size) of one system; `tables`: NCCL's tuner tables
    (_stated_nccl; None: the scenario's machine.nccl_tables)."""
    return [row for row, _ in system_runs(ref, tables)]


def system_runs(ref: Published, tables: str | None = None) -> list[tuple[ReferenceRow, Ran | None]]:
    """system_rows' rows, each with what the model ran (None where it predicted nothing), as data."""
    from simcluster.collectives.domain import NvlinkDomain

    scenario = ref.file("scenario")
    if scenario is None:
        return []
    rows, clusters = [], {}
    try:
        per_node = int(ref.system["gpus_per_node"])
        if not 1 <= per_node <= 1024:
            raise ValueError
    except (KeyError, TypeError, ValueError, ArithmeticError):
        raise SimclusterError(f"system.gpus_per_node: expected a whole number from 1 to 1024, got "
                              f"{short(ref.system.get('gpus_per_node'))}", where=str(ref.path)) from None
    for i, run in enumerate(ref.runs):
        where = f"{ref.path}: runs[{i}]"
        try:
            sizes = _sizes(run)
            peak = _peak_sizes(run) if sizes is None else []
            if sizes == []:
                continue
            nodes = run_nodes(ref, run)
            if not peak and sizes is None:
                rows.append((ReferenceRow(ref.name, i, _configuration(ref, run, nodes), "busbw_Bps", None, None, None, ref.held_out(i),
                                          unavailable="max_size below 64 MiB (the comparison starts at 64 MiB)"), None))
                continue
            measured = float(run["busbw_GBps"]) * 1e9
            if not MIN_RATE_Bps <= measured <= MAX_RATE_Bps:   # 0 would divide below, 1e-300 make the error infinite
                raise SimclusterError(f"busbw_GBps {run['busbw_GBps']!r}: expected a measured bandwidth > 0", where=where)
            if nodes not in clusters:
                clusters[nodes] = _stated_nccl(_cluster(scenario, nodes), ref, tables)
            cluster = clusters[nodes] if run.get("nvls") is not False else dataclasses.replace(clusters[nodes], nvls=None)
            forced = _forced(run)
            algorithms = [forced] if sizes is None else [forced or chooser_algorithm(ref, nodes * per_node, s, run["op"]) for s in sizes]
            predicted, ran = _predict(cluster, run["op"], sizes, algorithms, peak)
            network, nvlink = _link(scenario, nodes)
            ran = dataclasses.replace(ran, link=nvlink if isinstance(cluster, NvlinkDomain) else network)
            regime = _regime(ran, run["op"], max(sizes or peak), nodes * per_node)
            chosen = ran.text() + (f"; NIC {ref.nics_assumed} assumed" if ref.nics_assumed and not isinstance(cluster, NvlinkDomain) else "")
        except SimclusterError as exc:
            raise SimclusterError(exc.message, where=exc.where or where, hint=exc.hint) from None
        except (KeyError, TypeError, ValueError, ArithmeticError) as exc:   # int(.inf): OverflowError
            raise SimclusterError(f"cannot read the run ({type(exc).__name__}: {exc})", where=where) from None
        if ref.excluded_why:   # predicted and shown, never compared: the source states a degradation the model cannot express
            rows.append((ReferenceRow(ref.name, i, _configuration(ref, run, nodes), "busbw_Bps", measured, None, None, ref.held_out(i),
                                      chosen, excluded=True, unavailable=f"out of the model's scope (simcluster.excluded_why; the model's {chosen}: "
                                      f"{predicted / 1e9:.4g} GB/s, {(predicted / measured - 1) * 100:+.1f}%): {ref.excluded_why}"), ran))
            continue
        rows.append((ReferenceRow(ref.name, i, _configuration(ref, run, nodes), "busbw_Bps", measured, predicted,
                                  predicted / measured - 1, ref.held_out(i), chosen, regime=regime.key, scale=regime.scale,
                                  gpu=source_gpu(ref), source_group=ref.shared_group), ran))
    return rows


def _link(scenario: Path, nodes: int) -> tuple[str, str]:
    """The machine's link across nodes and its NVLink's, as trust regimes name them (machine_models)."""
    from simcluster.machine_models import machine_nvlink_link, network_link
    from simcluster.scenario import load_variants

    machine = load_variants(scenario, nodes)[0][1].machine
    return network_link(machine), machine_nvlink_link(machine)


def _regime(ran: Ran, op: str, size: int, ranks: int):
    from simcluster.collectives.schedule import canonical_op
    from simcluster.trust.regime import collective_regime

    return collective_regime(canonical_op(op), ran.algorithm, size, ran.link, ranks)


def validate_published_nccl(path: str | Path | None = None, tables: str | None = None) -> ReferenceValidation:
    """Every nccl-*.yaml of a folder (default calibration/published), or one file, against the fabric model; `tables`
    'stated': every file priced with the tuner tables of the NCCL it states (the opt-in, nccl_versions.py)."""
    rows, sources, skipped = [], {}, []
    for file in published_files(path, "nccl-"):
        ref = read_nccl_file(file)
        if ref.file("scenario") is None:
            sources[ref.name] = "not predicted: " + str(ref.usage.get("not_predicted") or "no scenario")
            continue
        sources[ref.name] = ref.summary_why()
        try:
            rows += system_rows(ref, tables)
        except SimclusterError as exc:
            skipped.append(exc.one_line())
    return ReferenceValidation("published nccl", TARGET, rows, sources, skipped)
