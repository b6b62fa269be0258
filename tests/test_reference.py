"""`simcluster validate --published nccl|llm` and `--decisions` (simcluster/reference/): predictions beside the
published runs and NCCL's logged decisions, held out or not as the reference itself says, one-line errors."""

import json
import re
import shutil
from pathlib import Path

import pytest
import yaml

from simcluster.cli import main
from simcluster.errors import SimclusterError
from simcluster.published import read_published
from simcluster.reference.decisions import validate_decisions
from simcluster.reference.llm import validate_published_llm
from simcluster.reference.nccl import validate_published_nccl

ROOT = Path(__file__).resolve().parents[1]
PUBLISHED = ROOT / "calibration" / "published"
# session 18: systems added as a held-out set and predicted once at 72f38d4 (no bound on their error here; the table
# is in docs/models/collectives-findings.md); source name -> rows compared
HELD_OUT_SET = {"a100-hdr-x2-nccltests100": 1, "a100-hdr-x3-nccltests119": 6, "a100-ib-x2-nccl1048": 1,
                "aws-p4d-x2-x4-nccl527-unverified": 3, "h100-ib-x2-x4-nccltests309": 2, "h100-roce-x2-x4-nccl1031": 2,
                "h100-roce-x5-nccl1368": 2}
# session 19: held-out set, scenarios written from each source before any prediction, predicted once at main 4492d46
# (model of a35dc28; the table is in docs/models/fabric-findings.md); source name -> rows compared, and the files whose
# source leaves the NIC count or rate unstated (recorded, not predicted)
SESSION19_SET = {"azure-ndmv4-a100-x2-mscclpp": 6, "gcp-a3ultra-h200-x2-skypilot": 16, "gcp-a4-b200-x2-dranet": 8,
                 "h100-roce-x2-nccl2409": 1, "h100-ib-x2-nccltests290": 16}
# session 19, alltoall model (collectives/alltoall.py): the one multi-node NCCL alltoall row found with a stated system,
# read while the model was written, so not held out (review); the Azure alltoall rows (runs 4, 5) were seen before the
# model and are not held out any more either: the alltoall model has no held-out check
ALLTOALL_SET = {"aws-p5en-x2-alltoall-worklog-unverified": 1}
# session 28: 2-32 x p5.48xlarge on SageMaker HyperPod (all_reduce, all_gather, alltoall), scenario and the ofi tuner's
# chooser written from the source before the first prediction (34.4% mean over 100 rows, 24 within 10%: fabric-findings.md)
SESSION28_SET = {"aws-p5-hyperpod-x2-x32-gpucomm": 100}
SESSION29_SET = {"aws-p4d-x2-pcluster-efa": 1, "h100-ib-x2-nebius-skypilot": 10, "h100-ib-x2-together-skypilot": 5}
# session 30: 2 x p4d.24xlarge over EFA from SkyPilot's aws_efa example (HyperPod, VM, VM with one EFA interface) and
# 16 x p5en from awsome-distributed-training's topology-aware README, found
# after the session-29 registration, predicted once at 5eb5fe9 (fabric-findings.md, session 30)
SESSION30_SET = {"aws-p4d-x2-hyperpod-skypilot-efa": 6, "aws-p4d-x2-vm-skypilot-efa": 6, "aws-p4d-x2-vm-skypilot-1efa": 6,
                 "aws-p5en-x16-topology-aware": 1}
# session 31: the second cluster of nccl-tests#309 (2 / 4 / 8 x 8 H100, 8 x 400G IB) and GB200 NVL72 at 2 / 20 racks over IB
# (coreweave/nccl-tests README), 2 x 8 H200 over IB on CoreWeave (SkyPilot), 2 x 8 B200 on Lambda and on GCP A4 (dstack),
# predicted once at c2517b5
SESSION31_SET = {"h100-ib-x2-x8-nccltests309-second": 24, "gb200-nvl72-multirack-coreweave": 6, "gb200-nvl72-2racks-coreweave": 6,
                 "h200-ib-x2-coreweave-skypilot": 5, "b200-ib-x2-lambda-dstack": 6,
                 "gcp-a4-b200-x2-dstack": 8}
# session 31, helper gb200racks: the 20-rack GB200 rows' input corrected after seeing them (NCCL_NVLS_ENABLE=0 in the job script that posted them)
# and (cold read B) the 2-rack rows re-predicted at the 128 ranks their printed busbw / algbw gives, split into their own file
SESSION31_RACKS_DEVELOPMENT = {"gb200-nvl72-multirack-coreweave": range(0, 6), "gb200-nvl72-2racks-coreweave": range(0, 6)}
# session 31, helper gb200racks: GB200 NVL4 / NVL8 partitions on three racks over IB, NVLS off (NVIDIA/nccl#1801), predicted once at 1546157
SESSION31_RACKS_SET = {"gb200-nvl4-x3-nccl1801": 2, "gb200-nvl8-x3-nccl1801": 2}
# session 34 (engineer gb200): 2 x 8 B200 and 2 x 8 H100 over IB on CoreWeave, one busbw at 8 GiB each from
# coreweave/nccl-tests commit 3b06be7's message; scenarios committed before the one prediction (model at b8cb85c)
SESSION34_SET = {"b200-ib-x2-coreweave-commit": 1, "h100-ib-x2-coreweave-commit": 1}
# session 35 (helper fab): one Azure ND GB200 v6 VM (4 GB200 of an NVL72 tray), NCCL_ALGO=Ring, 8 rows from 64 MiB;
# file committed (56399a4) before the one prediction, 5.3% (+2.7..+8.3%)
SESSION35_SET = {"azure-gb200-x1-aibenchguide": 8}
SESSION40_SET = {"oci-gb200-x2-mnnvl-oke": 10,   # session 40: recorded at d4e5870d, predicted once (2 x GB200.4, MNNVL)
                 "crusoe-a100-ib-x2-dstack": 6, "nebius-h100-ib-x2-dstack-unverified": 8,   # recorded at 36b07d9c, predicted once
                 "aws-p5-x2-eks-awsome2023": 6}   # recorded at e9dd3626, predicted once (NCCL 2.18.5; an outlier by the 1.5x flag)
SESSION40_NOT_PREDICTED = ("oci-gb200v3-x32-2racks-oke",   # session 40: NICs of the run not stated
                           "h100-ib-x8-sharp-collnetchain-coreweave")   # CollNetChain forced over IB SHARP
SESSION41_SET = {"aws-p5-x2-eks-keitaw2024": 9,   # session 41: recorded at 491a9dd1, predicted once (2 x p5, NCCL 2.22.3)
                 "b200-ib-x64-together-scaling": 18}   # recorded at 491a9dd1 (one-node cells to notes at 3bffbf7b), predicted once
SESSION41_NOT_PREDICTED = ("aws-gb300-x2-mnnvl-aicr1256",)
# session 42 (treereg): the Tree rows looked at while NCCL's tree-kernel ceiling was developed (session 41), development
# since it was adopted (collectives/tree_kernel.py)
SESSION42_DEVELOPMENT = {"aws-p4d-x2-hyperpod-skypilot-efa": range(0, 6), "aws-p4d-x2-vm-skypilot-efa": range(0, 6),
                         "aws-p4d-x2-vm-skypilot-1efa": range(0, 6), "gb200-nvl4-x3-nccl1801": (1,),
                         "gb200-nvl8-x3-nccl1801": (1,), "b200-ib-x64-together-scaling": range(6, 12)}
SESSION42_HELD_OUT_SET_DEVELOPMENT = {"aws-p4d-x2-x4-nccl527-unverified": (0, 1, 2), "aws-p4de-24xlarge-x2": range(6, 12),
                                     "h100-roce-x5-nccl1368": (1,)}   # the same, in the session-18 set; nccl#527's rows 1-2 since
# session 44 (nccl41): its scenario's 3 EFA interfaces (the thread's statement) were set after they had been compared
# session 44 (the lead at mnnvl's merge; the mend, cold review A44 item 1): OCI's rows prompted the NVLS pipeline fill
# (studied on them in session 42, adopted in session 44): held_out false, every row development
SESSION44_OCI_DEVELOPMENT = {"oci-gb200-x2-mnnvl-oke": range(10)}
EXCLUDED = {"h100-ib-x2-nccltests290"}   # session 44 (nccl41): simcluster.excluded_why, the source states a degraded run
# with no cause: its rows are predicted and printed, never compared
SESSION42_SET = {"b200-ib-x46-together-use3a": 12,   # session 42 (treereg): recorded at f2abae21 before any prediction, registered at 10037962
                 "b200-ib-x62-together-0511": 12}   # session 41: no GB300 card; two validator figures at 16 GiB
SESSION46_SET = {"snellius-h100-ib-x2-odissei": 24}   # session 46 (nccl41): recorded at 122c1a37, scenario 75aff00f, predicted once
SESSION47_SET = {"h100-roce-4x400g-x2-drobotics": 2,   # session 47 (net41): recorded at 24102487, scenario e91bb57b, predicted once
                 "oci-bm-gpu4-8-a100-x2-ocitutorials": 1,   # session 47 (net41): recorded at e3574ac9, scenario 13e8245d, predicted once
                 "oci-bm-gpu4-8-a100-x1-ocitutorials": 1}   # session 47 (mendA47, review A47 item 2): the same page's 1-node row
SESSION44_DEVELOPMENT = tuple(f"gb300-nvl72-w{n}-ncclbpf" for n in (8, 16, 32, 60))   # session 44 (mnnvl): a_ch from them
SESSION43_NOT_PREDICTED = tuple(f"gb300-nvl72-w{n}-ncclbpf" for n in (4, 8, 16, 32, 60))   # session 43 (nvl72): no GB300
# card; recorded at 15eef7be, compared once on the GB200 cards (abdafdf2) by studies/nvl72_domain_ladder.py only
SESSION19_NOT_PREDICTED = ("oci-h200-x2-argonne", "oci-a100-b48-x2-oke", "nebius-h200-x2-runai-unverified", "h100-x128-nccltests322")


def test_published_multi_node_validation_does_not_regress():
    """Mean |busbw error| per system at >= 64 MiB, bounded at today's value plus a margin (measured in comments). Most
    systems miss the issue's 10% target; docs/models/fabric.md says why."""
    # session 33 (the trees' pipeline fill): the tree / NVLS-tree systems' bounds tightened to their new errors;
    # nccl-tests#283 (248 nodes, one prose row) loosened 0.054 -> 0.223: 16 network stages of fill (fabric-findings.md).
    # session 33, fabmend: LL / LL128 NVLink stages forward line by line (NCCL's per-line flags), not a whole chunk:
    # the source-driven correction loosens the three A100 EFA tree systems (p4de 0.162 -> 0.254, p4d hyperpod
    # 0.233 -> 0.336, p4d VM 0.203 -> 0.301): their LL128 sizes had been lifted toward the measurement by a fill NCCL
    # does not have
    # session 42, treereg: NCCL's tree-kernel ceiling (collectives/tree_kernel.py, adopted on rows it had not seen)
    # tightens the A100 EFA tree systems (p4de 0.254 -> 0.159, p4d hyperpod 0.336 -> 0.232, p4d VM 0.301 -> 0.201,
    # p4d 1 EFA 0.123 -> 0.066) and the Together B200 file (0.327 -> 0.021)
    measured = {"aws-p5en-x4": 0.079, "h200-x248-nccltests283": 0.223, "h100-roce-x2-x4-nccl1221": 0.085,
                "voltagepark-h100-x4": 0.142, "aws-p5-48xlarge-x2": 0.072, "aws-p4de-24xlarge-x2": 0.137,   # p4de 0.159 before ncclsys (session 42)
                "aws-p6-b200-x4": 0.076, "oci-bm-gpu-h100-8x2": 0.008,
                "gb200-nvl72-coreweave": 0.375,   # session 19: one NVL72 rack as one NVLink domain (0.398 first); development since session 32
                "aws-p4d-x2-pcluster-efa": 0.060, "h100-ib-x2-nebius-skypilot": 0.024,
                "h100-ib-x2-together-skypilot": 0.024,   # session 29: found after the EFA candidates were registered, predicted once
                "aws-p4d-x2-hyperpod-skypilot-efa": 0.208, "aws-p4d-x2-vm-skypilot-efa": 0.178,   # s42 tree kernel (0.336 / 0.301); ncclsys (0.232 / 0.201)
                "aws-p4d-x2-vm-skypilot-1efa": 0.126, "aws-p5en-x16-topology-aware": 0.047,   # s30: at 5eb5fe9; 1efa 0.066 -> 0.126 (ncclsys: Simple only)
                "h100-ib-x2-x8-nccltests309-second": 0.070,
                "gb200-nvl72-multirack-coreweave": 0.248, "gb200-nvl72-2racks-coreweave": 0.332,   # development since session 31 (0.501 before s32)
                "h200-ib-x2-coreweave-skypilot": 0.034,
                "b200-ib-x2-lambda-dstack": 0.034, "gcp-a4-b200-x2-dstack": 0.040,   # session 31: predicted once at c2517b5
                "gb200-nvl4-x3-nccl1801": 0.013, "gb200-nvl8-x3-nccl1801": 0.018,   # session 31, helper gb200racks: predicted once at 1546157
                "b200-ib-x2-coreweave-commit": 0.044, "h100-ib-x2-coreweave-commit": 0.040,   # session 34: predicted once at b8cb85c
                "azure-gb200-x1-aibenchguide": 0.053,   # session 35: predicted once after 56399a4
                "oci-gb200-x2-mnnvl-oke": 0.158,   # session 40: predicted once at a99169ad (model of f876b766)
                "crusoe-a100-ib-x2-dstack": 0.020, "nebius-h100-ib-x2-dstack-unverified": 0.013,   # session 40: at bb033cee
                "aws-p5-x2-eks-awsome2023": 0.789,   # session 40: predicted once after e9dd3626 (2023 software, +40..+153% below 2 GiB)
                "aws-p5-x2-eks-keitaw2024": 0.074,   # session 41: predicted once after 491a9dd1 (NCCL 2.22.3; +20% at 64 MiB)
                "b200-ib-x64-together-scaling": 0.021,   # session 41: Tree forced +89..+97% (0.327); session 42: the tree kernel, -2..-5%
                "b200-ib-x46-together-use3a": 0.118,   # session 42: recorded at f2abae21, registered at 10037962, predicted once (Ring +11..+27%, Tree -1..-5%)
                "b200-ib-x62-together-0511": 0.024,   # session 42: the development cluster a day earlier, registered with it
                "snellius-h100-ib-x2-odissei": 0.037,   # session 46: predicted once at 90439f8a (all_reduce tree +13..+16% / -7.4%)
                "h100-roce-4x400g-x2-drobotics": 0.184,   # session 47: predicted once at 44e6511c (all_reduce -12.9%, alltoall +23.8%)
                "oci-bm-gpu4-8-a100-x2-ocitutorials": 0.112,   # session 47: predicted once at bda1c3c8 (all_reduce 10 GiB +11.2%)
                "oci-bm-gpu4-8-a100-x1-ocitutorials": 0.011}   # session 47 mendA47: predicted once (all_reduce 10 GiB on NVLink +1.1%)
    v = validate_published_nccl()
    summary = {k.removeprefix("nccl-"): s for k, s in v.summary().items()}
    assert {k for k, s in summary.items() if s["rows"]} == (set(measured) | set(HELD_OUT_SET) | set(SESSION19_SET) | set(ALLTOALL_SET)
                                                                   | set(SESSION28_SET) | set(SESSION29_SET) | set(SESSION30_SET)
                                                                   | set(SESSION31_SET) | set(SESSION31_RACKS_SET) | set(SESSION34_SET)
                                                                   | set(SESSION35_SET) | set(SESSION40_SET) | set(SESSION41_SET)
                                                                   | set(SESSION42_SET) | set(SESSION46_SET)
                                                                   | set(SESSION47_SET)) - EXCLUDED
    assert summary["gcp-a3mega-x2-unverified"]["rows"] == 0 and "not predicted" in summary["gcp-a3mega-x2-unverified"]["why"]
    for system, mean in measured.items():
        assert summary[system]["mean_abs_error_pct"] <= (mean + 0.01) * 100, system
    ring = next(r for r in v.rows if r.source == "nccl-aws-p5en-x4" and "allreduce:ring" in r.configuration)
    assert abs(ring.error) < 0.05     # the forced ring: network-bound, within 5%
    assert all(r.metric == "busbw_Bps" and r.measured > 1e9 for r in v.rows) and not v.skipped


def test_the_session29_sources_are_held_out_and_compared_row_by_row():
    """The files found in sessions 29 and 30 (after the EFA per-step candidates were registered): every published row is
    compared, each marked held out, and their scenarios build."""
    v = validate_published_nccl()
    for system, rows in (SESSION29_SET | SESSION30_SET | SESSION31_SET | SESSION31_RACKS_SET | SESSION34_SET | SESSION35_SET
                         | SESSION40_SET | SESSION41_SET | SESSION42_SET | SESSION46_SET | SESSION47_SET).items():
        compared = [r for r in v.rows if r.source == f"nccl-{system}"]
        development = (SESSION31_RACKS_DEVELOPMENT | SESSION42_DEVELOPMENT | SESSION44_OCI_DEVELOPMENT).get(system, ())
        assert len(compared) == rows and all(r.held_out == (r.run not in development) for r in compared), system


def test_the_20_rack_gb200_rows_run_without_nvls_as_their_job_script_says():
    """coreweave/nccl-tests 5ceab10 (the commit that posted the 20-rack rows) sets NCCL_NVLS_ENABLE=0: those rows are priced
    on NCCL's ring / tree across the racks (no NVLS tree); the 2-rack rows (NVLS on in their job script) keep the NVLS tree,
    at the 128 ranks their printed busbw / algbw gives (2 x 127 / 128). Both are development rows since their inputs were
    corrected after seeing them (session 31: helper gb200racks, cold read B)."""
    rows = validate_published_nccl().rows
    twenty = [r for r in rows if r.source == "nccl-gb200-nvl72-multirack-coreweave"]
    two = [r for r in rows if r.source == "nccl-gb200-nvl72-2racks-coreweave"]
    assert len(two) == len(twenty) == 6 and all("32 x 4" in r.configuration for r in two)
    assert all(r.detail.startswith("nvls-tree") and not r.held_out for r in two)
    assert all(not r.detail.startswith("nvls") and not r.held_out for r in twenty)
    assert max(abs(r.error) for r in twenty) < 2.3      # +28..+223% (was +153..+491% as an NVLS tree): still a miss


def test_held_out_is_read_from_each_reference():
    """Seed 002 and the AWS p5 / p5en rows were looked at while building the model: not held out; nccl#1221 is held
    out except its 2-node NVLS row; flipping the file's flag flips the rows."""
    v = validate_published_nccl()
    held = {(r.source, r.run): r.held_out for r in v.rows}
    assert not any(h for (s, _), h in held.items() if s in ("nccl-oci-bm-gpu-h100-8x2", "nccl-aws-p5-48xlarge-x2"))
    assert [held[("nccl-h100-roce-x2-x4-nccl1221", i)] for i in range(3)] == [True, False, True]
    assert v.summary()["nccl-h100-roce-x2-x4-nccl1221"]["held_out"] == "partly"
    assert [i for (src, i), h in held.items() if src == "nccl-aws-p6-b200-x4" and not h] == [6]   # the chooser came after
    assert read_published(PUBLISHED / "llm-llama3-405b-table4.yaml", "published-llm-run").held_out(0) is False


def test_the_held_out_set_parses_and_every_row_is_compared_as_held_out():
    """Structure only (no predicted number asserted): each file of the session-18 set parses, names a scenario that
    builds, yields one compared row per published run at >= 64 MiB or without a size, each marked held out as its file
    says; GB200 NVL72 (session 19) has its five rows, development since session 32 changed its NVLS card; a size-less row
    with a forced algorithm is priced at that algorithm."""
    v = validate_published_nccl()
    summary = {k.removeprefix("nccl-"): s for k, s in v.summary().items()}
    for system, rows in HELD_OUT_SET.items():
        ref = read_published(PUBLISHED / f"nccl-{system}.yaml", "published-nccl-run")
        assert ref.usage["held_out"] is True and "72f38d4" in ref.usage["why"] and ref.file("scenario").is_file(), system
        compared = [r for r in v.rows if r.source == f"nccl-{system}"]
        development = SESSION42_HELD_OUT_SET_DEVELOPMENT.get(system, ())
        assert len(compared) == rows == summary[system]["rows"], system
        assert all(r.held_out == (r.run not in development) for r in compared), system
        assert summary[system]["held_out"] == ("no" if len(development) == rows else "partly" if development else "yes")
    assert summary["gb200-nvl72-coreweave"]["rows"] == 5 and summary["gb200-nvl72-coreweave"]["held_out"] == "no"   # session 32
    forced = {r.run: r.detail for r in v.rows if r.source == "nccl-h100-roce-x5-nccl1368"}
    assert forced[0].startswith("ring/") and forced[1].startswith("tree/") and all("(peak)" in d for d in forced.values())
    nodes = [r.configuration.split(", ")[1] for r in v.rows if r.source == "nccl-aws-p4d-x2-x4-nccl527-unverified"]
    assert nodes == ["2 x 8 A100", "3 x 8 A100", "4 x 8 A100"] and not v.skipped


def test_the_session19_set_parses_and_every_row_is_compared_as_held_out():
    """Structure only (no predicted number asserted): each session-19 file parses, is held out with the commit it was first
    predicted at, names a scenario whose nodes, GPUs and NICs per node are the ones its source states, and yields one compared
    row per published run at >= 64 MiB, each held out; a file whose source leaves the NICs unstated has no scenario, says
    why and yields no row."""
    from simcluster.scenario import load_variants

    v = validate_published_nccl()
    summary = {k.removeprefix("nccl-"): s for k, s in v.summary().items()}
    for system, rows in SESSION19_SET.items():
        ref = read_published(PUBLISHED / f"nccl-{system}.yaml", "published-nccl-run")
        assert ref.usage["held_out"] is True and "4492d46" in ref.usage["why"], system
        machine = load_variants(ref.file("scenario"), ref.system["nodes"])[0][1].machine
        assert (machine.nodes, machine.gpus_per_node, machine.nic.per_node) == \
            (ref.system["nodes"], ref.system["gpus_per_node"], ref.system["nics_per_node"]), system
        at_64mib = [r for r in ref.runs if r["bytes"] >= 64 * 2**20]
        compared = [r for r in v.rows if r.source == f"nccl-{system}"]
        alltoall = [r.run for r in compared if r.configuration.startswith("alltoall")]
        assert len(compared) == len(at_64mib) == rows == (summary[system]["rows"] or rows * (system in EXCLUDED)), system
        assert all((r.error is None and "simcluster.excluded_why" in r.unavailable) == (system in EXCLUDED) for r in compared)
        assert [r.run for r in compared if not r.held_out] == alltoall, system      # only the alltoall rows, seen before the model
        assert summary[system]["held_out"] == ("excluded" if system in EXCLUDED else "partly" if alltoall else "yes")
    for system, rows in ALLTOALL_SET.items():
        compared = [r for r in v.rows if r.source == f"nccl-{system}"]
        assert len(compared) == rows and all(not r.held_out and r.detail == "alltoall/Simple" for r in compared), system
    for system in SESSION19_NOT_PREDICTED + SESSION40_NOT_PREDICTED + SESSION41_NOT_PREDICTED + SESSION43_NOT_PREDICTED:
        ref = read_published(PUBLISHED / f"nccl-{system}.yaml", "published-nccl-run")
        assert ref.file("scenario") is None and ref.usage["not_predicted"], system
        # held out, but for the GB300 ladder's 8-60 GPU files: development since session 44 (the NVLS channel ceiling)
        assert ref.usage["held_out"] is not (system in SESSION44_DEVELOPMENT), system
        assert summary[system]["rows"] == 0 and "not predicted" in summary[system]["why"], system
    forced = [r for r in v.rows if r.source == "nccl-h100-ib-x2-nccltests290" and "NCCL_ALGO=Ring" in r.configuration]
    assert len(forced) == 8 and all(r.detail.startswith("ring/") for r in forced) and not v.skipped


def test_flipping_the_flag_in_the_file_flips_the_rows(tmp_path):
    doc = (PUBLISHED / "nccl-h200-x248-nccltests283.yaml").read_text()
    scenario = ROOT / "scenarios" / "published" / "nccltests283-h200-x248.yaml"
    path = tmp_path / "nccl-x.yaml"
    path.write_text(doc.replace("../../scenarios/published/nccltests283-h200-x248.yaml", str(scenario))
                    .replace("held_out: true", "held_out: false"))
    [row] = validate_published_nccl(path).rows
    assert row.held_out is False and row.predicted > 0


def _p6_copy(tmp_path, chooser=None):
    doc = yaml.safe_load((PUBLISHED / "nccl-aws-p6-b200-x4.yaml").read_text())
    doc["simcluster"]["scenario"] = str(ROOT / "scenarios" / "published" / "aws-p6-b200-x4.yaml")
    if chooser is not None:
        doc["simcluster"]["chooser"] = chooser
    path = tmp_path / "nccl-p6.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


def test_the_chooser_the_source_names_picks_the_algorithm_per_size(tmp_path):
    """P6-B200 ran AWS's ofi tuner plugin: its regions at 32 ranks put a ring at 64 MiB, the NVLS tree at 128-256 MiB
    and a ring from 512 MiB; a chooser given for another rank count leaves NCCL's own decision (NVLS tree at 64 MiB)."""
    rows = {r.run: r.detail for r in validate_published_nccl(PUBLISHED / "nccl-aws-p6-b200-x4.yaml").rows}
    assert rows[6].startswith("ring/") and rows[7].startswith("nvls-tree/") and rows[8].startswith("nvls-tree/")
    assert all(rows[i].startswith("ring/") for i in range(9, 15))
    other = {"source": "x", "ranks": 64, "algorithms": [[None, "ring"]]}
    rows = {r.run: r.detail for r in validate_published_nccl(_p6_copy(tmp_path, other)).rows}
    assert rows[6].startswith("nvls-tree/")


def test_a_chooser_by_rank_count_and_for_one_collective(tmp_path):
    """The HyperPod p5 file's ofi tuner table: per rank count (`by_ranks`), for all_reduce only (`op`), a null entry
    leaving the size to NCCL; 16 ranks (2 nodes, where the plugin falls back) and all_gather get NCCL's own choice."""
    rows = {r.run: r for r in validate_published_nccl(PUBLISHED / "nccl-aws-p5-hyperpod-x2-x32-gpucomm.yaml").rows}
    ar = {(r.configuration.split(",")[1].strip(), r.configuration.split()[1].rstrip(",")): r.detail
          for r in rows.values() if r.configuration.startswith("all_reduce")}
    assert ar[("32 x 8 H100", "64MiB")].startswith("tree/") and ar[("32 x 8 H100", "512MiB")].startswith("nvls-tree/")
    assert ar[("4 x 8 H100", "64MiB")].startswith("ring/") and ar[("16 x 8 H100", "4GiB")].startswith("nvls-tree/")
    assert ar[("2 x 8 H100", "64MiB")].startswith("nvls-tree/")          # NCCL's own choice at 2 nodes
    assert not any(r.detail.startswith("tree/") for r in rows.values() if r.configuration.startswith("all_gather"))
    gap = {"source": "x", "op": "all_reduce", "by_ranks": {32: [[None, None]]}}
    p6 = {r.run: r.detail for r in validate_published_nccl(_p6_copy(tmp_path, gap)).rows}
    assert p6[6].startswith("nvls-tree/")                                   # null: NCCL's decision model
    other_op = {"source": "x", "op": "all_gather", "ranks": 32, "algorithms": [[None, "ring"]]}
    p6 = {r.run: r.detail for r in validate_published_nccl(_p6_copy(tmp_path, other_op)).rows}
    assert p6[6].startswith("nvls-tree/")


def test_the_region_tuners_protocol_runs_with_its_algorithm(tmp_path):
    """AWS's region tuner sets the cost of one algorithm-protocol pair (nccl_ofi_regions.cpp,
    region_get_coll_info_internal_v3: collCostTable[algorithm][protocol] = 0.0), so a chooser entry `ring/LL128` runs
    LL128 where NCCL's own protocol for a forced ring would be Simple (session 43, engineer efa); `ring` alone keeps
    NCCL's; a protocol the algorithm cannot run here (NVLS tree, Simple only) is skipped as the tuner skips a pair NCCL
    marked ignored, NCCL's protocol for the algorithm runs and the row says so (session 43, mendC43)."""
    rows = {r.configuration: r.detail for r in validate_published_nccl(PUBLISHED / "nccl-aws-p5-hyperpod-x2-x32-gpucomm.yaml").rows}
    assert rows["all_reduce 1GiB, 4 x 8 H100"] == "ring/LL128"            # the ring LL128 region (NCCL alone: Simple)
    assert rows["all_reduce 8GiB, 4 x 8 H100"] == "ring/Simple"
    assert rows["all_reduce 256MiB, 16 x 8 H100"] == "tree/LL128"          # the tree LL128 region up to 288 MiB at 128 ranks
    plain = {"source": "x", "ranks": 32, "algorithms": [[None, "ring"]]}
    pair = {"source": "x", "ranks": 32, "algorithms": [[None, "ring/LL128"]]}
    ran = [{r.run: r.detail for r in validate_published_nccl(_p6_copy(tmp_path, c)).rows}[14] for c in (plain, pair)]
    assert ran == ["ring/Simple", "ring/LL128"]
    bad = {"source": "x", "ranks": 32, "algorithms": [[None, "nvls-tree/LL128"]]}
    checked = validate_published_nccl(_p6_copy(tmp_path, bad))
    assert not checked.skipped
    assert {r.run: r.detail for r in checked.rows}[14] == "nvls-tree/Simple (LL128 skipped: not runnable here, NCCL's)"


@pytest.mark.parametrize("chooser, match", [
    ({"source": "x", "by_ranks": {32: [[None, "ring"]]}, "ranks": 32}, "by_ranks: expected"),
    ({"source": "x", "by_ranks": {"abc": [[None, "ring"]]}}, "by_ranks.abc: expected a rank count"),   # not a rank count
    ({"source": "x", "ranks": 32, "algorithms": [[None, "pat-tree"]]}, "unknown algorithm"),
    ({"source": "x", "ranks": 32, "algorithms": [[None, "ring/LL64"]]}, "unknown protocol 'LL64'"),   # session 43
    ({"source": "x", "ranks": 32, "algorithms": [[1, "ring"]]}, "last entry must be"),
    ({"source": "x", "ranks": 32, "algorithms": "ring"}, "algorithms: expected a list"),
    ({"source": "x", "ranks": 32, "algorithms": [[5, "ring", 1], [None, "ring"]]}, "algorithms[0]: expected [below_bytes, algorithm]"),
    ({"source": "x", "ranks": 32, "algorithms": [[5, "ring"], [3, "tree"], [None, "ring"]]}, "below_bytes must increase"),
    ({"source": "x", "ranks": 32}, "algorithms: missing"),
    ({"source": "x", "op": "foo", "ranks": 32, "algorithms": [[None, "ring"]]}, "op: unknown collective 'foo'"),
    ({"source": "x", "ranks": 32, "algorithms": [[None, "ring"]], "tuner": 1}, "unknown key 'tuner'"),
])
def test_a_bad_chooser_is_refused_as_the_file_is_read_in_one_line_at_its_line(tmp_path, capsys, chooser, match):
    """The chooser is part of the file's read (reference.nccl.read_nccl_file), not checked when a prediction first asks
    for it: a bad one is the reader's one-line error, FILE:LINE: simcluster.chooser.KEY."""
    assert main(["validate", "--published", "nccl", str(_p6_copy(tmp_path, chooser))]) == 2
    err = capsys.readouterr().err
    assert match in err and "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert re.search(r"nccl-p6\.yaml:\d+: simcluster\.chooser", err), err


def test_derived_a100_and_b200_cards_scale_the_h200_card_by_nccls_nvlink_constants():
    """The derivation each card states: large-size rate = the measured H200 card's x (links x NCCL's per-link
    NVLink bandwidth) ratio; latency-bound small sizes unchanged; the B200 NVLS card = the H100 one x the ratio of
    NVLink bandwidth x NCCL's NVLS efficiency."""
    from simcluster.cards import load_collective, load_nvls
    from simcluster.collectives.model import predict
    from simcluster.collectives.nccl_constants import NVLINK_GBPS_PER_LINK as PER_LINK
    from simcluster.collectives.nccl_constants import NVLINKS_PER_GPU as LINKS
    from simcluster.collectives.nccl_constants import NVLS_EFFICIENCY as EFF

    def card(name):
        return load_collective(ROOT / "models" / "collective" / f"{name}.yaml")[0]

    h200 = card("h200x4-nvlink")
    for name, arch in (("a100-nvlink-derived", "ampere"), ("b200-nvlink-derived", "blackwell")):
        ratio = LINKS[arch] * PER_LINK[arch] / (LINKS["hopper"] * PER_LINK["hopper"])
        for ranks in (4, 8):   # the marginal rate: time per extra byte between 4 and 8 GiB, base latency out
            def per_byte(model, r=ranks):
                return predict(model, "all_reduce", 2**33, r).time_s - predict(model, "all_reduce", 2**32, r).time_s
            assert per_byte(h200) / per_byte(card(name)) == pytest.approx(ratio, rel=0.005), name
        assert predict(card(name), "all_reduce", 8, 8).time_s == pytest.approx(predict(h200, "all_reduce", 8, 8).time_s)
    h100, _, _ = load_nvls(ROOT / "models" / "nvswitch" / "h100-nvls.yaml")
    b200, _, _ = load_nvls(ROOT / "models" / "nvswitch" / "b200-nvls-derived.yaml")
    ratio = PER_LINK["blackwell"] * EFF["blackwell"] / (PER_LINK["hopper"] * EFF["hopper"])
    assert all(b200[g] == pytest.approx(h100[g] * ratio, rel=0.005) for g in h100)


def test_published_llm_rows_state_configuration_assumptions_and_why_not(capsys):
    """Two sources: Llama 3 405B (not held out: its interleaving count was chosen on it) and NeMo 24.07 (10 of 12
    rows comparable, 8 with dimensions from NeMo's recipes; rows 10-11 not held out: the fp8 casts were added after;
    rows 0, 2, 4, 6: the development rows of issue 22's split)."""
    v = validate_published_llm(PUBLISHED / "llm-llama3-405b-table4.yaml")
    # fixed clock, main_grad accumulation; session 25: ZeRO-2 reduce-scatters every micro-batch (rows 0, 1: +2.3 / -8.3 before)
    # and CP attention is timed at its causal share (row 2: -5.8 before); session 26: the stragglers term at 8-16K GPUs
    # (llm/scaleout.py: -6.6 / -18.6 / +19.6 before); session 39: the card's attention as cuDNN's schedule form
    # (llm/cudnn_schedule.py; -11.0 / -21.9 / +13.7 before: the CP 16 row's per-rank attention calls are few waves)
    assert [round(r.error * 100, 1) for r in v.rows] == pytest.approx([-11.2, -22.0, 19.1], abs=1.0)
    assert all(not r.held_out and "virtual_stages=2" in r.detail and "t8 p16" in r.configuration for r in v.rows)
    assert v.rows[0].metric == "flops_per_gpu_per_s" and v.rows[0].measured == 430e12
    nemo = validate_published_llm(PUBLISHED / "llm-nemo-24.07-dgx-h100-fp8.yaml")
    compared = [r for r in nemo.rows if r.error is not None]
    assert all(r.metric == "tokens_per_s" for r in compared) and len(compared) == 10
    # the fp8 casts came after seeing 10 and 11; 0, 2, 4, 6 are issue 22's development rows (the model changed on them),
    # 1, 3, 5, 9 its validation rows (diagnosed with the changes' sensitivities before the split): none held out
    assert not any(r.held_out for r in compared) and "development row" in compared[0].detail + nemo.sources[nemo.rows[0].source]
    assert {r.run: r.unavailable for r in nemo.rows if r.error is None} == {7: "model.vocab not given", 8: "model.vocab not given"}
    assert nemo.summary()["llm-nemo-24.07-dgx-h100-fp8"]["held_out"] == "no"
    assert "from NeMo-Framework-Launcher tag 24.07" in compared[0].detail and "ffn" in compared[0].detail


# issue 22's held-out set (session 18): the rows each file made comparable. After the split (development rows
# MegaScale 0-3, Megatron-Core 0/2/4/6/8, NeMo 0/2/4/6; validation rows MegaScale 8-11, Megatron-Core 1/3/5/7, NeMo
# 1/3/5/9, diagnosed with the changes' sensitivities before the split) only the sources no change touched stay held out
HELD_OUT_COMPARED = {"llm-megascale2024-table2": [], "llm-megatron-core-r080-h100-weak-scaling": [],
                     "llm-nemo-24.07-dgx-h100-fp8": [], "llm-bloom176b-tr11": [0],
                     "llm-mtnlg530b-unverified": [0, 1, 2], "llm-nemotron4-340b-unverified": [0]}
VALIDATION_ROWS = {"llm-megascale2024-table2": [8, 9, 10, 11], "llm-megatron-core-r080-h100-weak-scaling": [1, 3, 5, 7],
                   "llm-nemo-24.07-dgx-h100-fp8": [1, 3, 5, 9]}


@pytest.mark.slow
def test_the_held_out_set_parses_and_compares_the_rows_it_made_comparable():
    """Structure and flags only, no predicted number: each held-out row is compared (a prediction and a measurement
    on the source's own metric), says held out, and its file says which model it was predicted with; the rows the
    model cannot express say why."""
    for name, runs in HELD_OUT_COMPARED.items():
        v = validate_published_llm(PUBLISHED / f"{name}.yaml")
        assert not v.skipped, name
        held = {r.run: r for r in v.rows if r.error is not None and r.held_out}
        assert sorted(held) == runs, name
        assert all(r.predicted > 0 and r.measured > 0 and r.metric in ("tokens_per_s", "step_time_s", "flops_per_gpu_per_s")
                   for r in held.values()), name
        assert "72f38d4" in v.sources[name], name
        ref = read_published(PUBLISHED / f"{name}.yaml", "published-llm-run")
        assert all(ref.why(i).startswith("validation row") and not ref.held_out(i) for i in VALIDATION_ROWS.get(name, [])), name
    megascale = validate_published_llm(PUBLISHED / "llm-megascale2024-table2.yaml")
    assert [r.run for r in megascale.rows if "MegaScale's own model" in r.unavailable] == [4, 5, 6, 7, 12, 13, 14, 15]
    assert all("ffn=4h" in r.detail for r in megascale.rows if r.error is not None)
    titan = validate_published_llm(PUBLISHED / "llm-torchtitan-llama31-h100.yaml")
    assert len(titan.rows) == 18 and all(r.held_out and r.error is None and "500 W" in r.unavailable for r in titan.rows)


def test_filled_model_keys_never_replace_what_the_source_prints():
    from simcluster.reference.llm import filled_model

    used: list[str] = []
    assumed = {"ffn_per_hidden": 4, "models": {"X": {"layers": 7, "vocab": 100, "from": "a recipe"}}}
    model = filled_model({"name": "X", "layers": 5, "hidden": 64, "ffn": None, "vocab": None}, assumed, used)
    assert (model["layers"], model["vocab"], model["ffn"]) == (5, 100, 256)
    assert used == ["model vocab from a recipe", "ffn=4h"]
    assert filled_model({"name": "Y", "hidden": 64, "ffn": 100}, assumed, [])["ffn"] == 100


def test_decisions_agree_with_every_tuning_log_and_none_is_held_out():
    """930 of 930 logged (log, op, size) decisions, as tests/test_nccl_tuner.py counts them, through the command's
    library; every log here is in calibration/nccl-decision-model.yaml or says what one there says (the fifth machine's,
    session 25: the same decisions), so none is held out."""
    v = validate_decisions(ROOT / "calibration")
    t = v.totals()
    assert (t["logs"], t["decisions"], t["agree"], t["channels_agree"]) == (43, 930, 930, 930)
    assert t["held_out_decisions"] == 0 and not v.skipped
    assert all("(hopper), 1 node, NCCL 2.28.3, NVLS off" in s.configuration for s in v.sources)


def _bundle_with_log(tmp_path: Path, text: str) -> Path:
    bundle = tmp_path / "bundle"
    run = bundle / "nccl-tests" / "all_reduce-tuning"
    run.mkdir(parents=True)
    (run / "stdout.txt").write_text(text)
    manifest = {"host": {"gpus": [{"name": "NVIDIA H200"}]}, "runs": [
        {"tool": "nccl-tests", "run_id": "all_reduce-tuning", "status": "ok", "path": "nccl-tests/all_reduce-tuning",
         "meta": {"op": "all_reduce", "role": "tuning"}}]}
    (bundle / "manifest.json").write_text(json.dumps(manifest))
    return bundle


def test_held_out_means_other_content_not_other_bytes_and_a_disagreement_is_shown(tmp_path):
    log = ROOT / "calibration/h200x4-graph-2026-11-22/nccl-tests/all_reduce-tuning/stdout.txt"
    text = log.read_text() + "\n"                                        # other bytes, the same decisions: in sample
    [source] = validate_decisions(_bundle_with_log(tmp_path / "a", text)).sources
    assert not source.held_out and source.agree == source.decisions == 30
    changed = text.replace("AllReduce: 8 Bytes -> Algo RING", "AllReduce: 8 Bytes -> Algo TREE")   # every rank's line
    [source] = validate_decisions(_bundle_with_log(tmp_path / "b", changed)).sources
    assert source.held_out and source.agree == 29 and "logged TREE/LL" in source.misses[0]
    multi = text.replace("nNodes 1 ", "nNodes 2 ")
    [source] = validate_decisions(_bundle_with_log(tmp_path / "c", multi)).sources
    assert "multi-node" in source.unavailable


def test_the_cli_prints_tables_and_si_json(capsys):
    assert main(["validate", "--published", "nccl", str(PUBLISHED / "nccl-aws-p5en-x4.yaml")]) == 0
    text = capsys.readouterr().out
    assert "busbw GB/s" in text and "held out: no" in text and "aws-p5en-x4" in text
    assert main(["validate", "--decisions", str(ROOT / "calibration" / "h200x2-rounds-2026-11-22"), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["totals"]["agree"] == doc["totals"]["decisions"] == 151
    assert main(["validate", "--published", "nccl", str(PUBLISHED / "nccl-aws-p5en-x4.yaml"), "--json"]) == 0
    row = json.loads(capsys.readouterr().out)["rows"][0]
    assert row["metric"] == "busbw_Bps" and 3e11 < row["measured"] < 4e11 and row["held_out"] is False


@pytest.mark.parametrize("argv, match", [
    (["validate", "--published", "nccl", "--card", "x.yaml"], "--card does not apply to --published"),
    (["validate", "--published", "nccl", "--decisions", "calibration"], "does not apply"),
    (["validate", "--published", "gpu"], "invalid choice"),
    (["validate", "--published", "nccl", "/nonexistent"], "no such file or folder"),
    (["validate", "--decisions", "/nonexistent"], "not a folder"),
    (["validate"], "needs a trace"),
])
def test_usage_mistakes_are_one_line(capsys, argv, match):
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert match in err and "\n" not in err


@pytest.mark.parametrize("edit, match", [
    (lambda d: d.pop("simcluster"), "missing key 'simcluster'"),
    (lambda d: d["simcluster"].update(held_out="yes"), "simcluster.held_out: expected true or false, got .yes."),
    (lambda d: d["simcluster"].update(fitted=True), "unknown key 'fitted'"),
    (lambda d: d.update(kind="published-llm-run"), "expected published-nccl-run"),
    (lambda d: d["simcluster"].update(runs_not_held_out=["0"]), "runs_not_held_out"),
    (lambda d: d["simcluster"].update(runs_not_compared={"a": "why"}), "runs_not_compared"),
])
def test_a_bad_reference_file_is_one_line(tmp_path, capsys, edit, match):
    doc = yaml.safe_load((PUBLISHED / "nccl-aws-p5en-x4.yaml").read_text())
    edit(doc)
    path = tmp_path / "nccl-bad.yaml"
    path.write_text(yaml.safe_dump(doc))
    with pytest.raises(SimclusterError, match=match):
        validate_published_nccl(path)
    assert main(["validate", "--published", "nccl", str(path)]) == 2
    assert "\n" not in capsys.readouterr().err.strip()


def test_a_row_that_cannot_be_predicted_is_named_and_the_exit_is_partial(tmp_path, capsys):
    folder = tmp_path / "published"
    folder.mkdir()
    doc = yaml.safe_load((PUBLISHED / "nccl-aws-p5en-x4.yaml").read_text())
    doc["simcluster"]["scenario"] = str(tmp_path / "missing-scenario.yaml")
    (folder / "nccl-a.yaml").write_text(yaml.safe_dump(doc))
    shutil.copy(PUBLISHED / "nccl-gcp-a3mega-x2-unverified.yaml", folder)
    assert main(["validate", "--published", "nccl", str(folder)]) == 3
    captured = capsys.readouterr()
    assert "simcluster: skipped" in captured.err and "missing-scenario" in captured.err
    assert "not predicted: system unidentified" in captured.out


def _llm_copy(tmp_path: Path, edit) -> Path:
    """BLOOM's file (one run) with its cards made absolute and `edit` applied to the loaded document."""
    doc = yaml.safe_load((PUBLISHED / "llm-bloom176b-tr11.yaml").read_text())
    machine = doc["simcluster"]["machine"]
    for key in ("gpu_card", "nic_card", "nvlink_card"):
        machine[key] = str((PUBLISHED / machine[key]).resolve())
    edit(doc)
    path = tmp_path / "llm-x.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


def _assumed(doc) -> dict:
    return doc["simcluster"]["assumptions"]


@pytest.mark.parametrize("edit, match", [
    (lambda d: _assumed(d).update(models=[1, 2]), "simcluster.assumptions: key 'models': expected a mapping"),
    (lambda d: d["simcluster"].update(assumptions=[1]), "simcluster.assumptions: expected a mapping"),
    (lambda d: _assumed(d).update(ffn_per_hidden=2.67), "simcluster.assumptions: key 'ffn_per_hidden': 2.67"),
    (lambda d: _assumed(d)["models"]["BLOOM 176B"].update(layerz=3), "models['BLOOM 176B']: unknown key 'layerz'"),
    (lambda d: _assumed(d)["models"]["BLOOM 176B"].update(tied_embeddings="no"), "key 'tied_embeddings': 'no'"),
    (lambda d: _assumed(d).update(recompute="some"), "simcluster.assumptions: key 'recompute': 'some'"),
    (lambda d: _assumed(d).update(micro_batch="x"), "simcluster.assumptions: key 'micro_batch': 'x'"),
    (lambda d: d["simcluster"]["machine"].update(nics_per_node=0), "simcluster.machine: key 'nics_per_node': 0"),
    (lambda d: d["simcluster"]["machine"].update(nics_per_node=2.5), "simcluster.machine: key 'nics_per_node': 2.5"),
    (lambda d: d["simcluster"]["machine"].update(nics_per_node=-2), "simcluster.machine: key 'nics_per_node': -2"),
    (lambda d: d["simcluster"]["machine"].update(nic_per_node=4), "simcluster.machine: unknown key 'nic_per_node'"),
    (lambda d: d["simcluster"]["machine"].pop("nic_card"), "simcluster.machine: missing key 'nic_card'"),
    (lambda d: d["simcluster"].update(runs_not_compared={1: "why"}), "runs_not_compared: run 1 is not a run of the file"),
    (lambda d: d["simcluster"].update(runs_not_held_out={-1: "why"}), "runs_not_held_out: run -1 is not a run of the file"),
    (lambda d: d["simcluster"].update(framework_by_model={"BLOOM 17B": "megatron"}),
     "simcluster.framework_by_model['BLOOM 17B']: no run's model.name is this name"),
    (lambda d: d["simcluster"].update(framework_by_model={"BLOOM 176B": "megatron-foo"}),
     "simcluster.framework_by_model['BLOOM 176B']: 'megatron-foo' is not one of megatron,"),
    (lambda d: d["simcluster"].update(framework="megatron-foo"),
     "simcluster: key 'framework': 'megatron-foo' is not a valid value: expected one of megatron,"),
    (lambda d: d["simcluster"].update(memory={"grad_buffer_bytes": 3, "from": "a recipe"}),
     "simcluster.memory: key 'grad_buffer_bytes': 3 is not a valid value: expected one of 2, 4"),
    (lambda d: d["simcluster"].update(memory={"grad_buffer_bytes": 2}), "simcluster.memory: missing key 'from'"),
    (lambda d: d["simcluster"].update(memory={"grad_bufer_bytes": 2, "from": "a recipe"}), "simcluster.memory: unknown key 'grad_bufer_bytes'"),
    (lambda d: d["simcluster"].update(memory_by_model={"BLOOM 17B": {"from": "a recipe"}}),
     "simcluster.memory_by_model['BLOOM 17B']: no run's model.name is this name"),
    (lambda d: d["simcluster"].update(recipe={"rope_fusion": "no", "from": "a recipe"}), "simcluster.recipe: key 'rope_fusion'"),
    (lambda d: d["simcluster"].update(recipe={"rope_fusion": False}), "simcluster.recipe: missing key 'from'"),
    (lambda d: d["simcluster"].update(recipe={"rope_fusoin": False, "from": "a recipe"}), "simcluster.recipe: unknown key 'rope_fusoin'"),
    (lambda d: d["simcluster"].update(recipe_by_model={"BLOOM 17B": {"from": "a recipe"}}),
     "simcluster.recipe_by_model['BLOOM 17B']: no run's model.name is this name"),
])
def test_a_bad_llm_block_is_one_line_naming_the_key(tmp_path, capsys, edit, match):
    """The reviewer's repros (session 18): each was a traceback or a silent substitution."""
    path = _llm_copy(tmp_path, edit)
    with pytest.raises(SimclusterError, match="llm-x.yaml") as err:
        validate_published_llm(path)
    assert match in err.value.one_line()
    assert main(["validate", "--published", "llm", str(path)]) == 2
    out = capsys.readouterr().err.strip()
    assert match in out and "\n" not in out and "Traceback" not in out


def test_the_llm_blocks_as_filed_still_give_the_same_row(tmp_path):
    """The unedited copy and one with the keys spelled out (nics_per_node 4 as filed, tied_embeddings true) give the
    row the file gives; nics_per_node changes the prediction (it is read, not ignored)."""
    [filed] = validate_published_llm(PUBLISHED / "llm-bloom176b-tr11.yaml").rows
    [copy] = validate_published_llm(_llm_copy(tmp_path, lambda d: None)).rows
    assert copy.predicted == filed.predicted and "ffn=4h" in copy.detail
    [two] = validate_published_llm(_llm_copy(tmp_path, lambda d: d["simcluster"]["machine"].update(nics_per_node=2))).rows
    assert two.predicted != filed.predicted


@pytest.mark.parametrize("edit, match", [
    (lambda d: d["runs"][0]["batch"].update(micro_batch="x"), "batch: key 'micro_batch': 'x'"),
    (lambda d: d["runs"][0]["parallel"].update(tp="4"), "parallel: key 'tp': '4'"),
    (lambda d: d["runs"][0]["parallel"].update(recompute="everything"), "parallel: key 'recompute': 'everything'"),
    (lambda d: d["runs"][0]["model"].update(layers=7.5), "model: key 'layers': 7.5"),
    (lambda d: d["runs"][0].update(gpus="many"), "key 'gpus': 'many'"),
    (lambda d: d["runs"][0]["parallel"].update(tp_comm_overlap="yes"),
     "parallel: key 'tp_comm_overlap': 'yes' is not a valid value: expected true or false"),
    (lambda d: (d["simcluster"].update(framework="megatron-2023-sync"), d["runs"][0]["parallel"].update(overlap_param_gather=True, zero=1)),
     "parallel.overlap_param_gather: framework megatron-2023-sync gathers the parameters after the optimizer step"),
])
def test_a_wrong_typed_run_value_names_its_key_and_the_exit_is_partial(tmp_path, capsys, edit, match):
    path = _llm_copy(tmp_path, edit)
    v = validate_published_llm(path)
    assert not v.rows and len(v.skipped) == 1
    assert v.skipped[0].startswith(f"{path}: runs[0]: ") and match in v.skipped[0], v.skipped
    assert main(["validate", "--published", "llm", str(path)]) == 3
    assert "Traceback" not in capsys.readouterr().err


def _nccl1368_copy(tmp_path: Path, edit) -> Path:
    doc = yaml.safe_load((PUBLISHED / "nccl-h100-roce-x5-nccl1368.yaml").read_text())
    doc["simcluster"]["scenario"] = str((PUBLISHED / doc["simcluster"]["scenario"]).resolve())
    edit(doc)
    path = tmp_path / "nccl-x.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


@pytest.mark.parametrize("algorithm", ["NCCL_ALGO=Tree", "NCCL_ALGO=ring (forced)", "NCCL_ALGO=PAT (forced)", "Ring", "nccl's choice", 3])
def test_an_unknown_forced_algorithm_is_refused_not_priced_as_nccls_choice(tmp_path, capsys, algorithm):
    path = _nccl1368_copy(tmp_path, lambda d: d["runs"][1].update(algorithm=algorithm))
    v = validate_published_nccl(path)
    assert not v.rows and len(v.skipped) == 1
    assert v.skipped[0].startswith(f"{path}: runs[1]: algorithm ") and "not a forced algorithm the reader knows" in v.skipped[0]
    assert main(["validate", "--published", "nccl", str(path)]) == 3
    assert "Traceback" not in capsys.readouterr().err


def test_a_peak_is_taken_over_the_range_the_source_ran(tmp_path):
    """nccl#1368 ran -e 1G and nccl-tests#100 -e 8G (each file's max_size, from its `tool` line): the model's peak is
    searched up to there; without max_size it is searched to 16 GiB and comes out higher on #1368 (the row as it read
    before the reading fix: Ring 194.2 GB/s at 16 GiB against 187.9 at 1 GiB)."""
    capped = {r.run: r for r in validate_published_nccl(PUBLISHED / "nccl-h100-roce-x5-nccl1368.yaml").rows}
    assert capped[0].detail == "ring/Simple at 1024 MiB (peak)" and capped[1].detail == "tree/Simple at 1024 MiB (peak)"
    [row] = validate_published_nccl(PUBLISHED / "nccl-a100-hdr-x2-nccltests100.yaml").rows
    assert row.detail.endswith("at 8192 MiB (peak)")

    def uncapped(d):
        for run in d["runs"]:
            run.pop("max_size")
    wide = {r.run: r for r in validate_published_nccl(_nccl1368_copy(tmp_path, uncapped)).rows}
    assert wide[0].detail == "ring/Simple at 16384 MiB (peak)" and wide[0].predicted > capped[0].predicted
    assert wide[1].predicted > capped[1].predicted


@pytest.mark.parametrize("edit, match", [
    (lambda d: d["runs"][0].update(max_size="big"), "runs[0]: key 'max_size': 'big' is not a size > 0"),
    (lambda d: d["runs"][0].update(max_size=0), "runs[0]: key 'max_size': 0 is not a size > 0"),
    (lambda d: d["runs"][0].update(size="1GiB", bytes=2**30), "runs[0]: max_size is for a row without a size"),
])
def test_a_bad_max_size_is_one_line_naming_the_run(tmp_path, edit, match):
    v = validate_published_nccl(_nccl1368_copy(tmp_path, edit))
    assert len(v.skipped) == 1 and match in v.skipped[0] and "nccl-x.yaml" in v.skipped[0]


def test_a_max_size_below_64_mib_is_shown_as_not_compared(tmp_path, capsys):
    path = _nccl1368_copy(tmp_path, lambda d: d["runs"][0].update(max_size="32M"))
    rows = validate_published_nccl(path).rows
    assert [r.run for r in rows] == [0, 1] and rows[0].predicted is None and rows[1].predicted is not None
    assert rows[0].unavailable == "max_size below 64 MiB (the comparison starts at 64 MiB)"
    main(["validate", "--published", "nccl", str(path)])
    assert "not compared: max_size below 64 MiB (the comparison starts at 64 MiB)" in capsys.readouterr().out


def test_nccls_own_choice_is_no_algorithm_or_a_default_text(tmp_path):
    own = {r.run: r.predicted for r in validate_published_nccl(_nccl1368_copy(tmp_path, lambda d: d["runs"][1].pop("algorithm"))).rows}
    said = validate_published_nccl(_nccl1368_copy(tmp_path, lambda d: d["runs"][1].update(algorithm="default (NCCL's choice)"))).rows
    assert {r.run: r.predicted for r in said} == own


# session 19: new published LLM files, held out, predicted first at main 4492d46 (model of a35dc28); the rows each makes
# comparable under the Session 19 rules (calibration/published/README.md)
SESSION19_COMPARED = {"llm-dgxc-benchmarking-v24.11.1-llama31-h100": list(range(34)),
                      "llm-dgxc-benchmarking-v25.02-llama31-h100": list(range(34)),
                      "llm-nemo-25.02-dgx-b200-fp8": [1, 2, 3, 6], "llm-megatron-bridge-25.11-dgx-h100-b200": [1, 2, 4, 5],   # 4, 5: Qwen3 MoE, session 20
                      "llm-megatron-bridge-26.04-26.06-dgx-h100-moe": [0, 1, 2, 3, 4],   # session 20: recorded 4f6ee63 / 0800cf6, predicted 076d618
                      "llm-megatron-bridge-25.11-dgx-b200": [0, 1],
                      # second batch: recorded at 712f766, predicted once at 7eb8492 (340B at v25.02 and one 15B column: v24.11.1's re-printed)
                      "llm-dgxc-benchmarking-v24.11.1-nemotron4-gpt3-h100": list(range(36)),
                      "llm-dgxc-benchmarking-v25.02-nemotron4-gpt3-h100": [*range(13), 14, 15, *range(26, 36)]}
# rows whose recipe settings (dispatcher, EP overlap) were added after their held-out prediction was seen (session 23)
SESSION23_NOT_HELD_OUT = {"llm-megatron-bridge-26.04-26.06-dgx-h100-moe": {0, 1, 2, 4}}
# the Nemotron-4 15B fp8 rows that motivated the fp8 LM head / router change (issue 44, llmpub session)
# and (session moe) the Qwen3 235B row whose recipe's moe_a2a_overlap was read after its prediction was seen;
# (mendB, s35) the 26.06 Qwen3 30B row whose inputs were corrected after its error was seen
ISSUE44_NOT_HELD_OUT = {"llm-dgxc-benchmarking-v24.11.1-nemotron4-gpt3-h100": set(range(8, 16)),
                        "llm-dgxc-benchmarking-v25.02-nemotron4-gpt3-h100": {8, 9, 10, 11, 12, 14, 15},
                        "llm-megatron-bridge-25.11-dgx-h100-b200": {5},      # row 4 stays held out (mendC, s35)
                        "llm-megatron-bridge-26.04-26.06-dgx-h100-moe": {3}}   # inputs corrected after its error (mendB)
# the FP8 series that prompted or were read as evidence for the FP8 amax all-reduce term (session 43 scaleout; the
# Llama 3.1 70B / 405B fp8 series marked by mendA43 after cold review A)
LLAMA_FP8 = {*range(16, 22), *range(28, 34)}
SESSION43_NOT_HELD_OUT = {"llm-dgxc-benchmarking-v24.11.1-nemotron4-gpt3-h100": {21, 22, 23, 24, 25, 31, 32, 33, 34, 35},
                          "llm-dgxc-benchmarking-v25.02-nemotron4-gpt3-h100": {31, 32, 33, 34, 35},
                          "llm-dgxc-benchmarking-v24.11.1-llama31-h100": LLAMA_FP8,
                          "llm-dgxc-benchmarking-v25.02-llama31-h100": LLAMA_FP8}
SESSION19_PREDICTED_AT = {"llm-megatron-bridge-26.04-26.06-dgx-h100-moe": ("4f6ee63", "076d618"),
                          "llm-dgxc-benchmarking-v24.11.1-nemotron4-gpt3-h100": ("712f766", "7eb8492"),
                          "llm-dgxc-benchmarking-v25.02-nemotron4-gpt3-h100": ("712f766", "7eb8492")}


@pytest.mark.slow
def test_session19_files_parse_are_held_out_and_compare_the_rows_they_made_comparable():
    """Structure and flags only, no predicted number: every row the file made comparable gets a prediction on the
    source's tokens per second, held out, with its fills' recipe named; the others say why not."""
    for name, runs in SESSION19_COMPARED.items():
        v = validate_published_llm(PUBLISHED / f"{name}.yaml")
        assert not v.skipped, name
        compared = {r.run: r for r in v.rows if r.error is not None}
        assert sorted(compared) == runs, name
        seen = SESSION23_NOT_HELD_OUT.get(name, set()) | ISSUE44_NOT_HELD_OUT.get(name, set()) | SESSION43_NOT_HELD_OUT.get(name, set())
        assert all(r.held_out == (r.run not in seen) and r.metric == "tokens_per_s" and r.predicted > 0 and r.measured > 0
                   for r in compared.values()), name
        assert all(r.unavailable for r in v.rows if r.error is None), name
        commits = SESSION19_PREDICTED_AT.get(name)
        assert all(c in v.sources[name] for c in commits) if commits else \
            "4492d46" in v.sources[name] and ("a35dc28" in v.sources[name] or "fbe069c" in v.sources[name]), name
        ref = read_published(PUBLISHED / f"{name}.yaml", "published-llm-run")
        assert ref.usage["assumptions"]["from"] and all(" from " in r.detail for r in compared.values()), name
    b200 = validate_published_llm(PUBLISHED / "llm-nemo-25.02-dgx-b200-fp8.yaml")
    assert any("experts" in r.detail for r in b200.rows if r.run == 6)     # Mixtral 8x7B: the MoE keys from its recipe


def test_a_block_scaled_precision_is_refused_not_read_as_bf16(tmp_path):
    src = PUBLISHED / "llm-nemo-25.02-dgx-b200-fp8.yaml"
    doc = yaml.safe_load(src.read_text())
    doc["runs"][1]["batch"]["precision"] = "MXFP8"
    doc["simcluster"]["machine"] = {k: str((src.parent / v).resolve()) for k, v in doc["simcluster"]["machine"].items()}
    bad = tmp_path / "llm-mx.yaml"
    bad.write_text(yaml.safe_dump(doc))
    v = validate_published_llm(bad)
    assert [r.run for r in v.rows if r.error is not None] == [2, 3, 6]
    assert len(v.skipped) == 1 and "runs[1]" in v.skipped[0] and "MXFP8" in v.skipped[0] and "precision" in v.skipped[0]
