"""Build the error-band table from the held-out validation sets, and check its bands held out.

Sources (each a `simcluster validate` of its own): published LLM runs (`--published llm`), published multi-node
collectives (`--published nccl`), and one-node collectives on each lent machine predicted from a kind card fitted on
the other machines plus the machine's probe (`--held-out-machines`; the probe op's own probe sizes are left out, they
were fitted on); MLPerf Storage submissions, DDP sessions, eager-PyTorch lab bundles (the
one-GPU compile and checkpointing sets against their registered predictions), the registered Megatron-Core
local-spec MoE lab sets and the host stack's qperf-sizes bundles (simcluster/heldout/). Only held-out rows enter.

Coverage, held out: for every row, the band an answer would get is rebuilt from the other sources' rows (leave one
source out) by the answers' own rule (band.trust_of): the regime's band where it still has enough rows, else the
family's pooled band widened to the regime's remaining own rows; the row counts as covered when its rho falls inside.
"""

from __future__ import annotations

import functools
import re
import statistics
import subprocess
from dataclasses import dataclass
from pathlib import Path

from simcluster.trust.regime import DDP_REGIME, collective_regime, gpu_model, nvlink_link, transport_regime
from simcluster.trust.table import Residual, Table

DEFAULT_MACHINES = "calibration/h200x2-*"
CALIBRATION = Path(__file__).resolve().parent.parent.parent / "calibration"


def smi_gpu(folder: Path) -> str:
    """The GPU the first nvidia-smi.txt under a folder names ('NVIDIA H200, 580.159.04, ...' -> H200); '' when none."""
    for smi in sorted(folder.rglob("nvidia-smi.txt")) if folder.is_dir() else ():
        for line in smi.read_text(errors="replace").splitlines()[:8]:
            if line.startswith("NVIDIA ") and gpu_model(line.split(",")[0]):
                return gpu_model(line.split(",")[0])
    return ""


def bundle_gpu(bundle) -> str:
    """The GPU model a lab bundle ran on: the one its folder's (or, for a sub-folder, its nearest parent's below
    calibration/) first word names (h200x2-m4-2026-11-23/graph -> H200), else the one its nvidia-smi.txt names (smi_gpu);
    '' when neither does. `bundle`: an absolute path, a path starting calibration/ (from the repository root, wherever
    the process runs) or a folder name under calibration/. Folders above calibration/ are not read (a checkout at
    /srv/a100-box/... names no GPU); tests/test_trust_gpu.py checks that every bundle's name and nvidia-smi.txt agree."""
    path = Path(bundle)
    if not path.is_absolute():
        path = (CALIBRATION.parent if path.parts[:1] == ("calibration",) else CALIBRATION) / path
    parts = path.parts
    below = parts[len(parts) - parts[::-1].index("calibration"):] if "calibration" in parts else parts[-1:]
    named = next((gpu_model(part.split("-")[0]) for part in reversed(below) if gpu_model(part.split("-")[0])), "")
    return named or smi_gpu(path)


def reference_residuals(validation, family: str | None) -> list[Residual]:
    """Held-out rows of a ReferenceValidation (results.py) with a regime and a prediction; `family` None: a
    collective's, from its link (the regime key's last field)."""
    from simcluster.llm.scaleout import FITTED_ON

    out = []
    for r in validation.rows:
        rho = r.time_ratio
        if r.source in FITTED_ON:          # the stragglers term's spread was fitted on this source's scaling
            continue
        if r.held_out and r.regime and rho is not None and r.scale is not None:
            one_node = r.regime.rsplit("| ", 1)[-1].startswith("nvlink")
            fam = family or ("collective one node" if one_node else "collective across nodes")
            row = f"{r.source} runs[{r.run}] {r.configuration}" if r.source_group else f"runs[{r.run}] {r.configuration}"
            out.append(Residual(fam, r.regime, r.source_group or r.source, row, r.scale, rho, r.gpu))   # one group, one source
    return out


def machine_residuals(held) -> list[Residual]:
    """The one-node collective rows of `validate --held-out-machines` (machine_validation.HeldOutMachines)."""
    from simcluster.fit.machine import PROBE_MAX_BYTES, PROBE_OPS

    out = []
    for m in held.machines:
        for op in m.ops:
            for row in op.rows:
                if op.op in PROBE_OPS and row.size_bytes < PROBE_MAX_BYTES:
                    continue                                   # the probe's own sizes: fitted on
                if row.measured_s <= 0 or row.predicted_s <= 0:
                    continue
                regime = collective_regime(op.op, "nvlink-card", row.size_bytes, nvlink_link(*Path(m.bundle).parts), op.ranks)
                out.append(Residual(regime.family, regime.key, f"machine {m.machine}", f"{m.bundle} {op.op} {row.size_bytes} B",
                                    regime.scale, row.measured_s / row.predicted_s, bundle_gpu(m.bundle)))
    return out


def storage_residuals(rows: list[dict]) -> list[Residual]:
    """MLPerf Storage submissions (heldout/storage.py): the throughput at the published count, a rate (rho =
    predicted / measured); regime workload x the limit the simulated run names; each system (drive, host) a source."""
    return [Residual("storage", f"storage | {r['model']} | {r['limit']}", f"mlperf-storage {r['system']}",
                     f"{r['file']} runs[{r['index']}] {r['row']}", float(r["accelerators_measured"]),
                     r["MiB_per_s_at_measured_count"] / r["MiB_per_s_measured"]) for r in rows]


def ddp_residuals(rows: list[dict]) -> list[Residual]:
    """DDP steps of the sessions the shipped DDP card never saw (heldout/ddp.py); each session a source, its GPU its
    row's bundle's (bundle_gpu)."""
    return [Residual("ddp", DDP_REGIME, f"ddp session {r['session']}", f"{r['label']} {r['transport']}", float(r["ranks"]),
                     r["measured_s"] / r["predicted_s"], bundle_gpu(r["bundle"])) for r in rows]


def eager_residuals(rows: list[dict]) -> list[Residual]:
    """Eager-PyTorch llm-step shapes of the sealed and registered bundles (heldout/eager.py, heldout/eager_registered.py),
    regime by the runner's mode, torch.compile (framework torch-compile) and the checkpointing policy (recompute op,
    full every N > 1: eager_checkpointing) and whether the row's prediction is host-bound (`host_bound`, llm/host_bound.py,
    set by the row's reader; absent: not); each bundle a source, or the row's `source` where it names one (a registered
    set run again on another launch: heldout/eager_registered.SAME_REGISTRATION)."""
    from simcluster.trust.regime import eager_checkpointing, llm_regime

    out = []
    for r in rows:
        framework = r.get("framework", "torch-amp")
        ckpt = eager_checkpointing(r.get("recompute", "none"), r.get("recompute_every", 1), framework)
        regime = llm_regime(framework, r["tp"], r["pp"], r.get("cp", 1), r["zero"], False, "bf16", r["gpus"],
                            ckpt, r.get("host_bound", False))
        source = r.get("source", r["bundle"])
        label = f"{r['label']} {r['transport']}" + ("" if source == r["bundle"] else f" ({r['bundle']})")
        out.append(Residual(regime.family, regime.key, source, label, regime.scale, r["measured_s"] / r["predicted_s"],
                            bundle_gpu(r["bundle"]), *registered_move(r, source)))   # the registration's folder
    return out


COMMIT = re.compile(r"(?:registered_at_commit:|model at|\"commit\":)\s*\"?([0-9a-f]{7,40})")


def set_registered_at(folder: Path) -> str:
    """The commit a registered set's predictions were made at (8 hex digits), as a band row carries it
    (trust/moved.py): the one its registered.yaml names (`registered_at_commit:` or a header 'model at SHA'), else the
    first commit that added its registered file (registered.yaml / .json, or the compile set's readout-registered.json)
    by git; '' when none is found. (heldout/registration.registering_commit is another thing: the commit a registration
    is being made at now, HEAD.)"""
    files = [folder / n for n in ("registered.yaml", "registered.json", "readout-registered.json") if (folder / n).is_file()]
    for f in files:
        m = COMMIT.search(f.read_text(errors="replace")[:2000])
        if m:
            return m.group(1)[:8]
    for f in files:
        try:
            out = subprocess.run(["git", "log", "--diff-filter=A", "--format=%H", "--", f.name], cwd=folder,
                                 capture_output=True, text=True, timeout=30).stdout.split()
        except (OSError, subprocess.SubprocessError):
            out = []
        if out:
            return out[-1][:8]
    return ""


@functools.cache
def _registering_commit(folder: str) -> str:
    return set_registered_at(CALIBRATION / folder)


def registered_move(row: dict, folder: str) -> tuple[float | None, str]:
    """(today's prediction / the registered one, the registering commit) of a registered lab row that carries today's
    beside it (`today_s`, heldout/); (None, '') for a row predicted by today's model (trust/moved.py)."""
    if row.get("today_s") is None:
        return None, ""
    return row["today_s"] / row["predicted_s"], _registering_commit(folder)


def eager_held_out_rows() -> list[dict]:
    """Every held-out eager llm-step row the table takes (eager_residuals' input): the sealed and registered multi-GPU
    bundles, the registered one-GPU sets, session 39's pphost and long-sequence (cudnnstep, fsdpmem) sets."""
    from simcluster.heldout import eager_pphost, eager_regimes, eager_registered, step_sets

    return (eager_regimes.held_out_rows() + eager_registered.held_out_rows() + eager_pphost.held_out_rows()
            + step_sets.all_held_out_rows())


def moe_lab_residuals(rows: list[dict]) -> list[Residual]:
    """Megatron-Core local-spec MoE lab steps against their registered predictions (heldout/moe_lab.py), regime
    `llm | Megatron local spec | MoE | bf16` (family `llm local spec`); each registered set a source."""
    from simcluster.trust.regime import llm_regime

    out = []
    for r in rows:
        regime = llm_regime("megatron-local-spec", r["tp"], r["pp"], 1, 1, True, "bf16", r["gpus"])   # device.py: bf16
        out.append(Residual(regime.family, regime.key, r["source"], f"{r['run']}{' arm ' + r['arm'] if r['arm'] else ''} "
                            f"x{r['gpus']} ep {r['ep']}{' ' + r['lease'] if r.get('lease') else ''}", regime.scale,
                            r["measured_s"] / r["predicted_s"], bundle_gpu(r["source"]), *registered_move(r, r["source"])))
    return out


def transport_residuals(rows: list[dict]) -> list[Residual]:
    """The host stack's cost per byte above its fit's sizes, in the sweeps registered after its count model
    (heldout/transport.py), regime by transport kind; each sweep's configuration a source (heldout/transport.source_of:
    replicate bundles folded, the row then naming its bundle); and the published per-core RDMA costs
    (heldout/rdma_ops.py: the polled-verbs model's held-out point rows, regime by the row's transport, the publication a
    source). No scale axis (scale 0)."""
    return [Residual("transport", transport_regime(r["transport"]).key, r["source"], f"{r['side']} m={int(r['m'])} B"
                     + (f" ({r['bundle'].rpartition('/')[2]})" if r["bundle"] != r["source"] else ""), 0.0,
                     r["measured"] / r["predicted"]) for r in rows]


def build_table(published_folder: str | None = None, machines: list[str] | None = None, lab: bool = True) -> Table:
    """Every held-out set's residuals; `lab` False leaves out the lab and storage sets (heldout/)."""
    import glob

    from simcluster.machine_validation import validate_held_out_machines
    from simcluster.reference.llm import validate_published_llm
    from simcluster.reference.nccl import validate_published_nccl

    residuals = reference_residuals(validate_published_llm(published_folder), "llm")
    residuals += reference_residuals(validate_published_nccl(published_folder), None)
    paths = machines if machines is not None else sorted(glob.glob(DEFAULT_MACHINES))
    if paths:
        residuals += machine_residuals(validate_held_out_machines(paths))
    built_from = {"published": published_folder or "calibration/published", "machines": paths}
    if lab:
        from simcluster.heldout import ddp, eager, eager_pphost, eager_registered, moe_lab, rdma_ops, step_sets, storage, transport

        residuals += storage_residuals(storage.held_out_rows(published_folder))
        residuals += ddp_residuals(ddp.held_out_rows())
        residuals += eager_residuals(eager_held_out_rows())
        residuals += moe_lab_residuals(moe_lab.held_out_rows())
        residuals += transport_residuals(transport.held_out_rows() + rdma_ops.held_out_rows())
        built_from |= {"storage": "calibration/published/mlperf-storage-*.yaml", "ddp": "simcluster/heldout/ddp.py",
                       "llm eager": [*eager.SEALED, *eager.REGISTERED, *eager_registered.REGISTERED, eager_pphost.PPHOST_BUNDLE,
                                     *step_sets.STEP_SET_BUNDLES],
                       "llm local spec": list(moe_lab.REGISTERED),
                       "transport": sorted({f"calibration/{s}" for v in transport.HELD_OUT_SWEEPS.values() for s in v})
                       + [str(f.relative_to(rdma_ops.ROOT)) for f in (rdma_ops.rdma_published.FILE, rdma_ops.FILE, *rdma_ops.EXTRA)]}
    return Table(residuals, built_from)


@dataclass(frozen=True)
class Coverage:
    family: str
    rows: int             # rows of the family
    checked: int          # rows whose regime still had a band with their source left out
    covered: int          # of those, inside the band
    median_half_width_pct: float | None
    median_half_width_validated_pct: float | None = None   # rows whose band read `validated` without their source
    by_source_pct: float | None = None    # each source weighing the same: the mean over sources of their rows' coverage
    sources: int = 0
    checked_validated: int = 0    # rows whose band read `validated` with their source left out (review C54 item 2)
    covered_validated: int = 0    # of those, inside the band

    @property
    def coverage_validated_pct(self) -> float | None:
        return 100 * self.covered_validated / self.checked_validated if self.checked_validated else None

    @property
    def coverage_pct(self) -> float | None:
        return 100 * self.covered / self.checked if self.checked else None

    def to_json(self) -> dict:
        return {"family": self.family, "rows": self.rows, "sources": self.sources, "checked_leave_one_source_out": self.checked,
                "covered": self.covered, "coverage_pct": self.coverage_pct, "coverage_by_source_pct": self.by_source_pct,
                "median_half_width_pct": self.median_half_width_pct,
                "median_half_width_validated_pct": self.median_half_width_validated_pct,
                "checked_validated": self.checked_validated, "coverage_validated_pct": self.coverage_validated_pct}


@dataclass(frozen=True)
class RowCheck:
    """One held-out row against the band trust_of gives it with its source left out."""
    row: Residual
    band: tuple[float, float]
    status: str            # the answer's status with the source left out: validated, extrapolated or unvalidated

    @property
    def validated(self) -> bool:
        """The band read `validated` (not extrapolated, which also has a band of its own: review C54 item 2)."""
        return self.status == "validated"

    @property
    def own_band(self) -> bool:
        """The band came from its regime's own rows (validated or extrapolated), not the family's pooled ones."""
        return self.status != "unvalidated"

    @property
    def covered(self) -> bool:
        return self.band[0] <= self.row.rho <= self.band[1]


def leave_one_source_out(table: Table, family: str | None = None) -> list[RowCheck]:
    """Each source left out in turn: the band trust_of would give each of its rows from the other sources' rows (the
    regime's own, or the family's pooled ones widened to the regime's remaining own rows where it has too few: the band
    an answer gets); rows whose regime gets no band are left out. `family`: that family's rows only."""
    from simcluster.trust.band import trust_of
    from simcluster.trust.regime import Regime

    rows = [r for r in table.residuals if family is None or r.family == family]
    out = []
    for source in sorted({r.source for r in rows}):
        rest = Table([r for r in rows if r.source != source])
        for row in (r for r in rows if r.source == source):
            trust = trust_of(Regime(row.family, row.regime, row.scale, gpu=row.gpu), rest)
            if trust.rho is not None:
                out.append(RowCheck(row, trust.rho, trust.status))
    return out


def source_coverage(table: Table, family: str) -> dict[str, list[RowCheck]]:
    """One family's rows checked with their source left out (leave_one_source_out), by source: the per-source numbers
    behind Coverage.by_source_pct (studies/onenode_by_source.py prints them from the shipped table)."""
    out: dict[str, list[RowCheck]] = {}
    for check in leave_one_source_out(table, family):
        out.setdefault(check.row.source, []).append(check)
    return out


def held_out_coverage(table: Table) -> list[Coverage]:
    """Per family: its rows checked with their source left out (leave_one_source_out), covered when rho falls inside."""
    checks: dict[str, list[RowCheck]] = {}
    for check in leave_one_source_out(table):
        checks.setdefault(check.row.family, []).append(check)
    out = []
    for family in sorted({r.family for r in table.residuals}):
        got = checks.get(family, [])
        widths = [(c.band[1] - c.band[0]) / 2 * 100 for c in got]
        validated = [w for w, c in zip(widths, got, strict=True) if c.validated]
        checked_validated = [c for c in got if c.validated]
        sources: dict[str, list[bool]] = {}
        for c in got:
            sources.setdefault(c.row.source, []).append(c.covered)
        out.append(Coverage(family, len(table.family_rows(family)), len(got), sum(c.covered for c in got),
                            statistics.median(widths) if got else None,
                            statistics.median(validated) if validated else None,
                            100 * statistics.fmean(sum(v) / len(v) for v in sources.values()) if sources else None,
                            len({r.source for r in table.family_rows(family)}),
                            len(checked_validated), sum(c.covered for c in checked_validated)))
    return out


def regime_summary(table: Table) -> list[dict]:
    """Per regime: rows, sources, GPUs range, the GPU models its rows ran on (rows each), band (as a time, %), mean
    |error| (%)."""
    out = []
    for key, g in table.regimes.items():
        lo, hi = g.bounds()
        out.append({"regime": key, "family": g.family, "rows": len(g.rows), "sources": len(g.sources),
                    "gpus": [int(g.scale_range[0]), int(g.scale_range[1])], "gpu_rows": g.gpus, "enough": g.enough,
                    "band_pct": [round((lo - 1) * 100, 1), round((hi - 1) * 100, 1)],
                    "mean_abs_error_pct": round(100 * g.mean_abs_error, 1),
                    "model_moves": g.moves.to_json((lo, hi)) if g.moves.registered else None})
    return out
