"""NVLS all_reduce inside one NVL72 NVLink domain at 4-72 GPUs: every published one-domain GB200 / GB300 row set, the
NVLS channels each NCCL version ran, and which carry law from 8 GPUs the 16-60 GPU ladder allows (issue 41, session 43,
engineer nvl72). Session 44 (helper mnnvl) adopted one figure from it: the NVLS kernel's per-channel ceiling above 8 GPUs
(collectives/nvls_domain.py, a_ch = 14.5 GB/s, the 16 / 32 / 60 GPU plateaus per channel; 14.8 since the session 44
mend, solved with the model's own fill, which applies above 8 GPUs only), so the GB300 files at 8-60
GPUs are development since then (w4, a ring, stays held out).

Rows: calibration/published nccl-*.yaml files whose scenario is one NVLink domain of a Blackwell NVL72 rack (GB200:
Azure's tray, OCI's 2 trays, CoreWeave's rack; GB300: datacrunch-research/nccl-eBPF's ladder, recorded in session 43
and predicted once before this study was written). The plateau is the row at 8 GiB (the CoreWeave rack's 4-8 GiB mean,
its largest sizes).

NVLS channels (NCCL code facts, src/transport/nvls.cc, read at each tag): NVLS_NCHANNELS_SM100 = 32 on Blackwell up to
2.26.x; from 2.27.3 NVLS_NCHANNELS_SM100_NVL = 24 when the communicator is one node or one MNNVL clique (32 across
cliques). The carry laws (studies/gb200_nvls_scaling.py, session 34) take the 8-GPU figure to n GPUs.

    python studies/nvl72_domain_ladder.py
"""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "studies"))

from gb200_nvls_scaling import CHIPS, bus_factor, carry  # noqa: E402

from simcluster.collectives.nccl_versions import stated_release  # noqa: E402
from simcluster.collectives.nvls_domain import nvls_channels as channels_for  # noqa: E402
from simcluster.published import read_published  # noqa: E402
from simcluster.reference import source_gpu  # noqa: E402
from simcluster.reference.nccl import system_rows  # noqa: E402

PUBLISHED = ROOT / "calibration" / "published"
ONE_DOMAIN = ("nccl-azure-gb200-x1-aibenchguide", "nccl-gb300-nvl72-w4-ncclbpf", "nccl-oci-gb200-x2-mnnvl-oke",
              "nccl-gb300-nvl72-w8-ncclbpf", "nccl-gb300-nvl72-w16-ncclbpf", "nccl-gb300-nvl72-w32-ncclbpf",
              "nccl-gb300-nvl72-w60-ncclbpf", "nccl-gb200-nvl72-coreweave")
RAN = {"nccl-azure-gb200-x1-aibenchguide": "Ring (forced)", "nccl-gb300-nvl72-w4-ncclbpf": "Ring (source)"}   # else NVLS
# GB300 has no card: its files are not predicted by validate --published nccl (scenario null); this study compares them on
# the GB200 NVLink / NVL72 NVLS cards as a proxy (the same NVLink 5 fabric), with the scenarios written before their one
# prediction (abdafdf2)
PROXY = {f"nccl-gb300-nvl72-w{n}-ncclbpf": f"../../scenarios/published/gb300-nvl72-w{n}-ncclbpf.yaml" for n in (4, 8, 16, 32, 60)}
PLATEAU_BYTES = 8 * 2**30
LADDER = (16, 32, 60)          # the GB300 ladder's counts above 8 GPUs


def nvls_channels(nccl: str, one_clique: bool = True) -> int:
    """NVLS channels NCCL runs on Blackwell (nvls.cc; collectives/nvls_domain.nvls_channels)."""
    return channels_for("blackwell", (stated_release(nccl) or ())[:2] or None, one_clique)


def read(name: str):
    """The published file, with its proxy scenario where it has none of its own (the GB300 files: PROXY)."""
    ref = read_published(PUBLISHED / f"{name}.yaml", "published-nccl-run")
    if ref.file("scenario") is None and name in PROXY:
        ref = dataclasses.replace(ref, usage={**ref.usage, "scenario": PROXY[name]})
    return ref


def plateau(name: str):
    """The published file (Published), its plateau busbw (B/s: the 8 GiB row, else the mean of its rows >= 4 GiB) and the
    model's busbw for the same rows (B/s; None where the file has no row at those sizes) and what the model priced
    (the NVLS card, or the NVLink card where the NVLS card has no rate at the domain's GPU count)."""
    ref = read(name)
    big = [i for i, r in enumerate(ref.runs) if int(r.get("bytes") or 0) == PLATEAU_BYTES]
    if len(big) != 1 or name.endswith("coreweave"):
        big = [i for i, r in enumerate(ref.runs) if int(r.get("bytes") or 0) >= 4 * 2**30]
    rows = {row.run: row for row in system_rows(ref)}
    measured = sum(float(ref.runs[i]["busbw_GBps"]) for i in big) / len(big) * 1e9
    predicted = sum(rows[i].predicted for i in big) / len(big) if all(i in rows for i in big) else None
    return ref, measured, predicted, rows[big[-1]].detail if big[-1] in rows else ""


def ladder() -> list[dict]:
    """One line per one-domain file: GPU, ranks, NCCL, NVLS channels, the plateau, per channel, the model's."""
    out = []
    for name in ONE_DOMAIN:
        ref, measured, predicted, priced = plateau(name)
        system = ref.system
        ranks = int(system["nodes"]) * int(system["gpus_per_node"])
        nccl = str(system["nccl"]).split()[0]
        out.append({"file": name, "gpu": source_gpu(ref), "ranks": ranks, "nccl": nccl,
                    "ran": RAN.get(name, "NVLS"), "channels": nvls_channels(nccl), "busbw": measured, "predicted": predicted,
                    "priced": priced})
    return out


def proxy_rows() -> dict:
    """The GB300 files' rows priced on their proxy scenarios (reference/nccl.system_rows), by file."""
    return {name: system_rows(read(name)) for name in PROXY}


def laws_at(anchor_busbw: float, counts=LADDER) -> dict[str, list[float]]:
    """busbw at `counts` GPUs from an 8-GPU busbw under each carry law (bytes, busbw constant, switch adder)."""
    a8 = anchor_busbw / bus_factor(8)
    return {law: [carry(law, a8, n, CHIPS["nvl72"], CHIPS["nvl72"]) * bus_factor(n) for n in counts]   # both on the rack
            for law in ("bytes", "busbw", "adder")}


def main() -> None:
    lines = ladder()
    print(f"{'file':34s} {'gpu':6s} {'ranks':>5s} {'nccl':7s} {'ran':13s} {'NVLS ch':>7s} {'busbw 8G':>9s} {'/ch':>6s} "
          f"{'model':>7s} {'error':>7s}  model priced")
    for r in lines:
        model = f"{r['predicted'] / 1e9:7.1f} {r['predicted'] / r['busbw'] - 1:+7.1%}" if r["predicted"] else f"{'-':>7s} {'-':>7s}"
        per = f"{r['busbw'] / r['channels'] / 1e9:6.1f}" if r["ran"] == "NVLS" else f"{'-':>6s}"
        print(f"{r['file']:34s} {r['gpu']:6s} {r['ranks']:5d} {r['nccl']:7s} {r['ran']:13s} {r['channels']:7d} "
              f"{r['busbw'] / 1e9:9.1f} {per} {model}  {r['priced']}")
    proxy = proxy_rows()
    print("\nGB300 rows on the GB200 cards (recorded 15eef7be, predicted once abdafdf2; not in validate --published nccl; "
          "w8-w60 development since session 44, w4 held out):")
    for name, rows in proxy.items():
        print(f"  {name:30s} " + "  ".join(f"{r.configuration.split(',')[0].split()[-1]} {r.error:+.1%} ({r.detail})" for r in rows))
    errors = [abs(r.error) for rows in proxy.values() for r in rows]
    within = sum(sum(abs(r.error) for r in rows) / len(rows) <= 0.10 for rows in proxy.values())
    print(f"  {len(errors)} rows, mean |error| {sum(errors) / len(errors):.1%}; {within} of {len(proxy)} GPU counts within 10%")
    w8 = next(r for r in lines if r["file"] == "nccl-gb300-nvl72-w8-ncclbpf")
    measured = {r["ranks"]: r["busbw"] for r in lines if r["file"].startswith("nccl-gb300") and r["ranks"] in LADDER}
    print(f"\ncarry laws from the GB300 8-GPU plateau ({w8['busbw'] / 1e9:.0f} GB/s busbw) to "
          f"{' / '.join(map(str, LADDER))} GPUs, against the ladder's "
          f"{' / '.join(f'{measured[n] / 1e9:.0f}' for n in LADDER)} GB/s:")
    for law, values in laws_at(w8["busbw"]).items():
        print(f"  {law:6s} " + "  ".join(f"{n}: {v / 1e9:6.0f} ({v / measured[n] - 1:+.0%})" for n, v in zip(LADDER, values, strict=True)))


if __name__ == "__main__":
    import study_args  # an unknown argument refused before the study runs
    study_args.check()
    main()
