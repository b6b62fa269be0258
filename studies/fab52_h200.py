"""H200 against H100 across nodes (issue 41, session 52, helper fab52): every published nccl-tests row run on H200
(calibration/published/nccl-*.yaml whose system.gpu names H200 and that has a scenario), then every multi-node
all_reduce row run on H100 that the model prices with the NVLS tree (the rows NCCL's Hopper NVLS-tree figure,
perChMaxNVLSTreeBws = 57.7 GB/s per channel at 2 nodes, 45.5 beyond, was adopted against), one line per file x
collective x size: nodes, the NCCL version the file states, the transport / NIC statement, what the model runs
(algorithm / protocol, the channels NCCL's decision model gives the call), measured and predicted busbw, the error and
the limit that binds the prediction (its breakdown's `binding_limit`). Shipped cards (the held-out check's eta / t0 for
the 400G verbs family are the shipped 0.96 / 0: its H200 errors equal these).

Then the 2-node, >= 4 GiB NVLS-tree plateau by GPU: the mean measured busbw per file beside the model's ceiling
(8 heads x 57.7 GB/s = 461.6 GB/s busbw); the 2-node ring all_gather rows >= 1 GiB of both GPUs side by side (the A3
Ultra H200 rows against the p5 H100 rows of the same shape); and, for H200 NVLS-tree rows beyond 2 nodes, the model's
time split into the rest (the kernel term, latencies) and the pipeline fill (breakdown `pipeline_fill_s`). Descriptive only: nothing is
fitted or changed.

    python studies/fab52_h200.py          (its print: studies/fab52_h200.txt)
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "studies"))

from gb200x51_shape import predict_row, rows  # noqa: E402  (the per-row pricing of the GB200 study, reused)

from simcluster.collectives.nccl_constants import NVLS_ARITY, PER_CH_NVLS_TREE  # noqa: E402

HEADS = min(8, 8, NVLS_ARITY)   # NVLS-tree heads of 8 GPUs with 8 NICs a node (nccl_search: min(GPUs, NICs, arity))

PUBLISHED = ROOT / "calibration" / "published"
MIB = 2**20
GIB = 2**30


def files_of(gpu: str) -> list[tuple[Path, object]]:
    """(path, parsed file) of the published nccl files run on `gpu` (system.gpu's text) that name a scenario."""
    from simcluster.reference import nccl

    out = []
    for p in sorted(PUBLISHED.glob("nccl-*.yaml")):
        ref = nccl.read_nccl_file(p)
        if ref.file("scenario") is not None and gpu in str(ref.system.get("gpu") or ""):
            out.append((p, ref))
    return out


def _nic(ref) -> str:
    s = ref.system
    count = s.get("nics_per_node")
    rate = str(s.get("nic_rate") or "rate ?").split(" ")[0]
    kind = str(s.get("transport") or "?").split(" ")[0].split("(")[0].rstrip(",;")
    return f"{count if count is not None else '?'}x{rate} {kind}"[:22]


def print_rows(table: list[dict], ref) -> None:
    for r in table:
        print(f"{r['file'][:40]:40s} {r['op']:10s} {r['domains']:>4d} {r['nccl']:>7s} {_nic(ref):22s} "
              f"{r['size'] // MIB:>6d} MiB {r['algorithm'] + '/' + r['protocol']:17s} {r['channels']!s:>3s} "
              f"{r['measured'] / 1e9:6.1f} {r['predicted'] / 1e9:6.1f} {r['error'] * 100:+6.1f}%  "
              f"{'h' if r['held_out'] else '-'}  {r['binds'][:60]}")


def main() -> int:
    head = (f"{'file':40s} {'op':10s} {'nodes':>4s} {'nccl':>7s} {'NICs per node':22s} {'size':>10s} "
            f"{'alg/proto':17s} {'ch':>3s} {'meas':>6s} {'pred':>6s} {'err':>7s}  h  binding limit")
    print("# H200 published nccl rows as `simcluster validate --published nccl` prices them (shipped cards; + = predicted"
          " faster; busbw GB/s). h: held out (else development). ch: channels NCCL's decision model gives the call.")
    print(head)
    plateau: dict[str, list[tuple[str, float, float]]] = {}
    for path, ref in files_of("H200"):
        table = rows(path)
        print_rows(table, ref)
        _plateau(plateau.setdefault(_group("H200", ref), []), table, ref)
    print("\n# H100 multi-node all_reduce rows the model prices with the NVLS tree (where the Hopper NVLS-tree figure was"
          " adopted)")
    print(head)
    for path, ref in files_of("H100"):
        table = [r for r in rows(path) if r["op"] == "all_reduce" and r["domains"] > 1 and r["algorithm"] == "nvls-tree"]
        print_rows(table, ref)
        _plateau(plateau.setdefault(_group("H100", ref), []), table, ref)
    cap = HEADS * PER_CH_NVLS_TREE["hopper"][1]      # NCCL's Hopper figure at 2 nodes, per channel (GB/s) x the heads
    print(f"\n# 2 nodes, all_reduce >= 4 GiB, the model at the NVLS-tree kernel cap ({HEADS} heads x "
          f"{PER_CH_NVLS_TREE['hopper'][1]} GB/s = {cap:.1f} GB/s):"
          " mean measured and predicted busbw per file (GB/s), by GPU and transport; files the check leaves out of its"
          " scope (simcluster.excluded_why) not counted")
    for gpu, cells in plateau.items():
        for name, meas, pred in cells:
            print(f"  {gpu:12s}  {name[:44]:44s} measured {meas:6.1f}  predicted {pred:6.1f}  ({(pred / meas - 1) * 100:+5.1f}%)")
        if cells:
            m = sum(c[1] for c in cells) / len(cells)
            print(f"  {gpu:12s}  mean of {len(cells)} files{'':29s} measured {m:6.1f}  ({m / cap - 1:+.1%} over the cap)")
    print("\n# 2 nodes, ring all_gather >= 1 GiB, both GPUs (busbw GB/s; the model binds on the NVLink card's per-GPU rate)")
    for gpu in ("H100", "H200"):
        for path, _ in files_of(gpu):
            for r in rows(path):
                if r["op"] == "all_gather" and r["domains"] == 2 and r["size"] >= GIB:
                    print(f"  {gpu}  {r['file'][:40]:40s} {r['nccl'][:7]:>7s} {r['size'] // MIB:>5d} MiB  measured {r['measured'] / 1e9:6.1f}"
                          f"  predicted {r['predicted'] / 1e9:6.1f}  ({r['error'] * 100:+5.1f}%)")
    print("\n# H200 NVLS-tree rows beyond 2 nodes: the model's time = the rest (kernel term, latencies) + the pipeline fill (ms)")
    for path, ref in files_of("H200"):
        for r in rows(path):
            r["fill_s"] = (predict_row(ref, ref.runs[r["run"]])[1].breakdown or {}).get("pipeline_fill_s", 0.0)
            if r["algorithm"] == "nvls-tree" and r["domains"] > 2 and r["fill_s"]:
                rest = r["t_pred"] - r["fill_s"]
                print(f"  {r['file'][:40]:40s} {r['domains']:>4d} nodes {r['size'] // MIB:>6d} MiB  predicted {r['t_pred'] * 1e3:6.3f}"
                      f" = {rest * 1e3:6.3f} + fill {r['fill_s'] * 1e3:6.3f} ({r['fill_s'] / r['t_pred']:.0%}); measured {r['t_meas'] * 1e3:6.3f};"
                      f" without the fill busbw {r['predicted'] * r['t_pred'] / rest / 1e9:6.1f} vs measured {r['measured'] / 1e9:6.1f}")
    return 0


def _group(gpu: str, ref) -> str:
    """GPU and transport: EFA (the aws-ofi-nccl plugin) apart from the verbs transports (InfiniBand, RoCE)."""
    return f"{gpu} {'EFA' if 'EFA' in str(ref.system.get('transport') or '') else 'IB/RoCE'}"


def _plateau(out: list, table: list[dict], ref) -> None:
    """The file's 2-node all_reduce rows >= 4 GiB bound by the NVLS-tree kernel: (file, mean measured, mean predicted);
    nothing for a file the check leaves out of its scope."""
    if getattr(ref, "excluded_why", None):
        return
    cells = [r for r in table if r["op"] == "all_reduce" and r["domains"] == 2 and r["size"] >= 4 * GIB
             and "NVLS-tree kernel" in r["binds"]]
    if cells:
        out.append((cells[0]["file"], sum(r["measured"] for r in cells) / len(cells) / 1e9,
                    sum(r["predicted"] for r in cells) / len(cells) / 1e9))


if __name__ == "__main__":
    import study_args  # an unknown argument refused before the study runs
    study_args.check()
    raise SystemExit(main())
