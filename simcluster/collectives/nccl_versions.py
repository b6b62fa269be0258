"""NCCL's tuner tables by release: which constant tables and pricing rules of src/graph/tuning.cc a stated NCCL ran
(facts, not code). The model prices NCCL's choice of algorithm, protocol and channels with NCCL 2.28.3's tables
(nccl_constants.py) for every run, whatever NCCL it states: that is the default (`machine.nccl_tables: "2.28.3"`).
The release-keyed tables are an opt-in (`machine.nccl_tables: stated`, `NcclRelease.tuner`): a run is then priced with
the tables of the NCCL it states (nccl_tuner.tuning_table / algo_time_s read `NcclTopology.nccl`). Opt-in only
because it is an incomplete emulation of an older NCCL (the topology search and the NVLS-tree kernel cap stay 2.28.3's)
and on the two sources it moved (Lambda B200 x 2 and the CoreWeave 20 racks, both NCCL 2.26.2) it made the answer
worse (docs/models/fabric.md, "NCCL's tables by release").

Read at every release tag of github.com/NVIDIA/nccl from v2.23.4-1 to v2.30.7-1 (session 51, tuner51); the tables change
only at the releases below, each entry what differs from the release before it (tag, file src/graph/tuning.cc, line):
  2.23.4  the oldest keyed: Hopper's rows as 2.28.3's; no Blackwell row (compute capability >= 9.0 takes Hopper's,
          l.146); NVLS busbw min(bwIntra, bwInter), NVLS tree min(bwIntra, bwInter, /2 above 2 nodes) with no per-channel
          cap (l.182-183), NVLS algbw = busbw x 5/6 (l.224); PAT busbw x 0.85 (l.193)
  2.24.3  PAT x 0.75 (l.256)
  2.25.1  the Blackwell rows, every per-channel cap 2 x Hopper's: tree 77.4 / 82.8 / 72.0, tree LL128 73.4 / 73.4 / 58.0
          GB/s, ring LL128 73.4, llMaxBws 282 / 90 / 70 (l.155-174)
  2.27.3  NVLS all_gather / reduce_scatter busbw min(bwIntra (ppn-1)/ppn, 0.9 bwInter) (l.266-273)
  2.28.3  the model's default: NVLS efficiency 0.85 Hopper / 0.74 Blackwell and the per-channel NVLS-tree cap, NVLS algbw
          x n / nsteps (l.134, l.285-299); Blackwell tree 70.0 / 42.8 / 24.0, tree LL128 55.6 / 31.67 / 20.0 (l.185, l.191)
  2.28.7  Blackwell ring LL128 at 2 nodes 34.6 (l.179)
  2.28.9  network NVLS-tree Simple step 20.9 us (l.165); Blackwell NVLS-tree cap beyond 2 nodes 43.8 (l.197)
  2.29.2  Blackwell ring LL128 34.5 / 34.6 / 34.5 (l.179); the tree's size correction also on the NVLS tree's all_reduce
          on Blackwell with an x86 CPU, 24 sizes (l.580, l.595)
  2.29.7  Blackwell ring LL128 40.0 / 40.0 / 40.0 (l.180)
  2.30.3  Blackwell NVLS-tree cap beyond 2 nodes 80.0 (l.205); 2.30.4 and 2.30.7 (l.210) as 2.30.3
Not keyed: releases before 2.23 (their ring LL, ring LL128 at one GPU per node, tree Simple latency and network-step
rules differ as well: reference/published_decisions.VERSION_RULES) are priced with the default tables, as a run that
states no NCCL is; a release after the newest read (2.30.7) with the newest read's. The topology search
(nccl_search.py: speeds, channels) stays 2.28.3's for every release.
"""

from __future__ import annotations

import dataclasses
import re
from functools import lru_cache

from simcluster.collectives import nccl_constants as c
from simcluster.errors import SimclusterError

DEFAULT_RELEASE = (2, 28, 3)      # the tables every run is priced with by default; with the opt-in, a run that states
                                  # no NCCL (or one before OLDEST_KEYED)
TABLES_DEFAULT, TABLES_STATED = ".".join(map(str, DEFAULT_RELEASE)), "stated"   # machine.nccl_tables: the default, the opt-in
NCCL_TABLES = (TABLES_DEFAULT, TABLES_STATED)
OLDEST_KEYED = (2, 23, 4)
NEWEST_READ = (2, 30, 7)
_RELEASE = re.compile(r"\s*v?(\d+)\.(\d+)(?:\.(\d+))?(?:-\d+)?(?:\+\S*)?(?:\s|\(|$)")


@dataclasses.dataclass(frozen=True)
class TunerTables:
    """One release's tables ([arch][1 node, 2 nodes, more] GB/s; latencies us) and its version-dependent rules."""

    release: tuple[int, int, int]
    hw_lat: dict = dataclasses.field(default_factory=lambda: c.HW_LAT_US)
    ll_max_bw: dict = dataclasses.field(default_factory=lambda: c.LL_MAX_BW)
    per_ch_ring_ll128: dict = dataclasses.field(default_factory=lambda: c.PER_CH_RING_LL128)
    per_ch_tree_ll128: dict = dataclasses.field(default_factory=lambda: c.PER_CH_TREE_LL128)
    per_ch_tree: dict = dataclasses.field(default_factory=lambda: c.PER_CH_TREE)
    per_ch_nvls_tree: dict | None = dataclasses.field(default_factory=lambda: c.PER_CH_NVLS_TREE)  # None: no cap
    nvls_efficiency: bool = True          # 2.28's NVLS busbw (efficiency, channels-1, x2 for all_reduce); else the 5/6 rule
    nvls_gather_rule: bool = True         # 2.27's all_gather / reduce_scatter NVLS busbw (only with the 5/6 rule)
    pat_factor: float = 0.75
    blackwell_row: bool = True            # False: a Blackwell GPU takes Hopper's row (no Blackwell index yet)
    nvls_tree_correction: bool = False    # the tree size correction on the NVLS tree (Blackwell, x86 CPU)

    @property
    def name(self) -> str:
        return ".".join(map(str, self.release))

    def arch_row(self, arch: str) -> str:
        return "hopper" if arch == "blackwell" and not self.blackwell_row else arch


def _with(table: dict, arch: str, row) -> dict:
    return {**table, arch: tuple(row)}


def _releases() -> tuple[TunerTables, ...]:
    bw = "blackwell"
    hopper_only = {k: {a: v for a, v in t.items() if a != bw} for k, t in
                   (("ll_max_bw", c.LL_MAX_BW), ("per_ch_ring_ll128", c.PER_CH_RING_LL128))}
    two_x_hopper = {"per_ch_tree": _with(c.PER_CH_TREE, bw, (77.4, 82.8, 72.0)),
                    "per_ch_tree_ll128": _with(c.PER_CH_TREE_LL128, bw, (73.4, 73.4, 58.0))}
    old_nvls = {"per_ch_nvls_tree": None, "nvls_efficiency": False}
    r2_23 = TunerTables((2, 23, 4), **hopper_only, **two_x_hopper, **old_nvls, nvls_gather_rule=False, pat_factor=0.85,
                        blackwell_row=False)
    r2_24 = dataclasses.replace(r2_23, release=(2, 24, 3), pat_factor=0.75)
    r2_25 = dataclasses.replace(r2_24, release=(2, 25, 1), ll_max_bw=c.LL_MAX_BW, per_ch_ring_ll128=c.PER_CH_RING_LL128,
                                blackwell_row=True)
    r2_27 = dataclasses.replace(r2_25, release=(2, 27, 3), nvls_gather_rule=True)
    r2_28_3 = TunerTables(DEFAULT_RELEASE)
    r2_28_7 = dataclasses.replace(r2_28_3, release=(2, 28, 7), per_ch_ring_ll128=_with(c.PER_CH_RING_LL128, bw, (73.4, 34.6, 73.4)))
    net = {**c.HW_LAT_US["net"], "NVLSTree": (0, 0, 20.9)}
    r2_28_9 = dataclasses.replace(r2_28_7, release=(2, 28, 9), hw_lat={**c.HW_LAT_US, "net": net},
                                  per_ch_nvls_tree=_with(c.PER_CH_NVLS_TREE, bw, (0.0, 96.0, 43.8)))
    r2_29_2 = dataclasses.replace(r2_28_9, release=(2, 29, 2), per_ch_ring_ll128=_with(c.PER_CH_RING_LL128, bw, (34.5, 34.6, 34.5)),
                                  nvls_tree_correction=True)
    r2_29_7 = dataclasses.replace(r2_29_2, release=(2, 29, 7), per_ch_ring_ll128=_with(c.PER_CH_RING_LL128, bw, (40.0,) * 3))
    r2_30_3 = dataclasses.replace(r2_29_7, release=(2, 30, 3), per_ch_nvls_tree=_with(c.PER_CH_NVLS_TREE, bw, (0.0, 96.0, 80.0)))
    return (r2_23, r2_24, r2_25, r2_27, r2_28_3, r2_28_7, r2_28_9, r2_29_2, r2_29_7, r2_30_3)


RELEASES = _releases()
DEFAULT_TABLES = RELEASES[[t.release for t in RELEASES].index(DEFAULT_RELEASE)]
# the first tag of each minor the tables were read at: a version stated without its patch takes that tag's tables
FIRST_TAG = {(2, 23): 4, (2, 24): 3, (2, 25): 1, (2, 26): 2, (2, 27): 3, (2, 28): 3, (2, 29): 2, (2, 30): 3}
# NCCL's test (ncclTopoGetAlgoTime, 2.29.2+): the NVLS-tree correction's table has one more size than the tree's
NVLS_TREE_CORRECTION_LAST = {"LL": 1.0, "LL128": 1.0, "Simple": 0.9}


def parse_release(text) -> tuple[int, ...] | None:
    """(major, minor) or (major, minor, patch) of a stated NCCL ('2.27.3+cuda12.9', 'v2.28.9-1', '2.26.2 (README)',
    '2.28'); None where none is stated (None, ''). A one-line error for text that is no NCCL version."""
    if text is None or (isinstance(text, str) and not text.strip()):
        return None
    if isinstance(text, bool) or not isinstance(text, str):
        raise SimclusterError(f"NCCL version {str(text)[:30]!r}: expected quoted text such as '2.28.9' (YAML reads 2.30 as 2.3)")
    m = _RELEASE.match(text)
    if m is None:
        raise SimclusterError(f"NCCL version {text[:30]!r} is malformed: expected MAJOR.MINOR[.PATCH] such as '2.28.9'")
    major, minor = int(m.group(1)), int(m.group(2))
    if major != 2:
        raise SimclusterError(f"NCCL version {text[:30]!r} is unknown: the tuner's tables are read for NCCL 2.x only")
    return (major, minor) if m.group(3) is None else (major, minor, int(m.group(3)))


def stated_release(text) -> tuple[int, ...] | None:
    """parse_release where a file or a machine states its NCCL as free text: None where the text names no NCCL 2.x
    release (the default tables then, as for a run that states none)."""
    try:
        return parse_release(text)
    except SimclusterError:
        return None


@lru_cache(maxsize=256)
def tables_for(version: tuple[int, ...] | None) -> TunerTables:
    """The tuner tables NCCL `version` ran ((major, minor[, patch]); None: the default, 2.28.3): the newest keyed release
    at or before it; a version before 2.23 the default (not keyed), one after 2.30.7 the newest read."""
    if version is None:
        return DEFAULT_TABLES
    if len(version) not in (2, 3) or version[0] != 2 or any(not isinstance(v, int) or v < 0 for v in version):
        raise SimclusterError(f"NCCL version {version!r} is unknown: expected (2, MINOR[, PATCH])")
    release = version if len(version) == 3 else (*version, FIRST_TAG.get(version[:2], 0))
    if release < OLDEST_KEYED:
        return DEFAULT_TABLES
    return [t for t in RELEASES if t.release <= min(release, NEWEST_READ)][-1]


@dataclasses.dataclass(frozen=True)
class NcclRelease:
    """The NCCL a machine runs, resolved once where the machine is built (machine_models.machine_nccl) and carried by
    its Cluster and NvlinkDomain: `stated` the release machine.nccl states ((major, minor[, patch]); None: none, the
    model's), `tables` machine.nccl_tables ('2.28.3', the default, or 'stated', the opt-in), and `tuner`, resolved here
    once, the release whose tuner tables price NCCL's choice (NcclTopology.nccl): `stated` with the opt-in, None
    (2.28.3's) by default. A `tables` that is neither is refused with one line."""

    stated: tuple[int, ...] | None = None
    tables: str = TABLES_DEFAULT
    tuner: tuple[int, ...] | None = dataclasses.field(init=False, default=None)

    def __post_init__(self):
        if self.tables not in NCCL_TABLES:
            raise SimclusterError(f"machine.nccl_tables {str(self.tables)[:30]!r}: expected one of {', '.join(NCCL_TABLES)}")
        object.__setattr__(self, "tuner", self.stated if self.tables == TABLES_STATED else None)

    @property
    def opted_in(self) -> str:
        """The name of the tables that price the choice where the machine opts in with a stated NCCL ('2.25.1') and they
        differ from the default's, else '' (a stated 2.28.3-2.28.6, or one before 2.23, runs the default's tables: its
        numbers are the plain machine's, so nothing is marked; cold review A52 item 4)."""
        if self.tuner is None:
            return ""
        tables = tables_for(self.tuner)
        return "" if tables is DEFAULT_TABLES else tables.name


MODEL_RELEASE = NcclRelease()       # a machine that states no NCCL, on the default tables
