"""The moe3 lab set's tooling (issue 44, calibration/h200x2-megatron-moe3-2026-11-28), on a synthetic 2-GPU bundle:
the pinning plan from a fake /sys, the registration's run names / flags / arms, compare.py's two arms against the
registered step and the declared reading rule, rank_skew.py on two ranks' traces, and device_run.sh's flow with stub
nvidia-smi / pip / launcher (no GPU here)."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
LAB = ROOT / "studies" / "megatron_moe"
SET = ROOT / "calibration" / "h200x2-megatron-moe3-2026-11-28"
sys.path.insert(0, str(LAB))

import compare  # noqa: E402
import pinning  # noqa: E402
import rank_skew  # noqa: E402
import register  # noqa: E402


def fake_sys(root: Path, gpus: dict[str, tuple[int, str]], cpus: int, smt: int) -> Path:
    """A /sys with GPUs {bus: (numa node, local_cpulist)} and `cpus` CPUs, core c's siblings c, c + cpus/smt, ..."""
    for bus, (node, cpulist) in gpus.items():
        d = root / "bus/pci/devices" / bus
        d.mkdir(parents=True)
        (d / "numa_node").write_text(f"{node}\n")
        (d / "local_cpulist").write_text(cpulist + "\n")
    cores = cpus // smt
    for c in range(cpus):
        t = root / f"devices/system/cpu/cpu{c}/topology"
        t.mkdir(parents=True)
        t.joinpath("thread_siblings_list").write_text(",".join(str(c % cores + k * cores) for k in range(smt)) + "\n")
    return root


def test_cpulist_and_bus_id_formats():
    assert pinning.parse_cpulist("0-3,8,10-11\n") == [0, 1, 2, 3, 8, 10, 11]
    assert pinning._compact([0, 1, 2, 3, 8, 10, 11]) == "0-3,8,10-11"
    assert pinning.sysfs_bus_id("00000000:1B:00.0") == "0000:1b:00.0"


def test_pin_plan_gives_each_rank_physical_cores_of_its_gpus_node(tmp_path):
    # two sockets of 8 cores x 2 threads: node 0 = CPUs 0-7 and 16-23, node 1 = 8-15 and 24-31
    sys_root = fake_sys(tmp_path, {"0000:18:00.0": (0, "0-7,16-23"), "0000:9a:00.0": (1, "8-15,24-31")}, 32, 2)
    plan = pinning.plan(2, ["0000:18:00.0", "0000:9a:00.0"], list(range(32)), sys_root)
    assert [p["cpus"] for p in plan] == [list(range(8)), list(range(8, 16))]
    assert [p["gpu_numa_node"] for p in plan] == [0, 1] and all(p["siblings_left_out"] == 8 for p in plan)


def test_pin_plan_splits_a_shared_node_into_disjoint_cores(tmp_path):
    sys_root = fake_sys(tmp_path, {"0000:18:00.0": (0, "0-7,16-23"), "0000:19:00.0": (0, "0-7,16-23")}, 32, 2)
    plan = pinning.plan(2, ["0000:18:00.0", "0000:19:00.0"], list(range(32)), sys_root)
    assert [p["cpus"] for p in plan] == [[0, 1, 2, 3], [4, 5, 6, 7]]
    assert all(p["ranks_sharing"] == 2 for p in plan)
    # a container that may use only CPUs 2-5 of the node: each rank still gets its own cores within them
    small = pinning.plan(2, ["0000:18:00.0", "0000:19:00.0"], [2, 3, 4, 5], sys_root)
    assert [p["cpus"] for p in small] == [[2, 3], [4, 5]]


def test_pin_plan_without_gpu_locality_uses_the_allowed_cpus_and_says_so(tmp_path):
    sys_root = fake_sys(tmp_path, {}, 4, 1)
    plan = pinning.plan(2, [], [0, 1, 2, 3], sys_root)
    assert [p["cpus"] for p in plan] == [[0, 1], [2, 3]]
    assert all("allowed CPUs" in p["source"] for p in plan)
    with pytest.raises(ValueError, match="1 physical cores"):
        pinning.plan(2, [], [0], sys_root)


def test_moe3_registration_declares_both_arms_and_the_runners_flags(capsys):
    reg = yaml.safe_load((SET / "registered.yaml").read_text())
    assert set(reg["runs"]) == set(register.SET3) and set(reg["arms"]) == {"A", "B"}
    for name, run in reg["runs"].items():
        assert run["flags"] == register.flags(register.SET3[name]) and 0.01 < run["predicted_step_s"] < 1.0
    assert reg["arms"]["B"]["env"] == "CUDA_MODULE_LOADING=EAGER" and "--pin" in reg["arms"]["B"]["device_flags"]
    assert "--pin" not in reg["arms"]["A"]["device_flags"] and "--warmup 3" in reg["arms"]["A"]["device_flags"]
    for m in register.SET3.values():   # EP 2 over 2 GPUs, experts split evenly
        assert m["ep"] == 2 and m["experts"] % 2 == 0
    register.main(["--flags", "e16-top4-ffn2048-ep2", "--arm", "B"])
    register.main(["--env", "A"])
    out = capsys.readouterr().out.splitlines()
    assert out[0].endswith("--ep 2 --pin --warmup 10 --steps 8 --profile 1") and out[1] == ""


def synthetic_doc(name: str, arm: str, step_s: float, issue_s: list[float]) -> dict:
    m = register.SET3[name]
    pinned = arm == "B"
    return {"tool": "megatron-moe", "format": 2, "world_size": 2, "device": "NVIDIA H200",
            "model": {k: m[k] for k in ("layers", "hidden", "heads", "kv_heads", "head_dim", "experts", "top_k", "expert_ffn",
                                        "vocab", "seq", "micro_batch")},
            "parallel": {"ep": 2, "tp": 1, "pp": 1, "dp": 2}, "median_step_s_per_rank": [step_s, step_s],
            "median_host_issue_s_per_rank": issue_s,
            "placement_per_rank": [{"cpus_allowed": list(range(32)), "gpu_pci": f"0000:1{i}:00.0"} for i in range(2)],
            "pin_per_rank": [{"cpus": list(range(8 * i, 8 * i + 8)), "cpus_after": f"{8 * i}-{8 * i + 7}",
                              "gpu_pci": f"0000:1{i}:00.0"} if pinned else None
                             for i in range(2)],
            "launch": {"warmup": 10 if pinned else 3, "steps": 8, "pin": pinned, "cuda_module_loading": "EAGER" if pinned else None},
            "rank0": {"status": "ok", "median_step_s": step_s, "host_issue_s": [issue_s[0]] * 8,
                      "profile": {"kernel_time_per_step_s": step_s * 0.8, "kernel_per_step": 1000}}}


def bundle(folder: Path, measured: dict[str, tuple[float, float]]) -> Path:
    """A 2-GPU moe3 bundle: registered.yaml and each run's JSON, measured = {name: (arm A step, arm B step)} as a
    multiple of the registered step."""
    folder.mkdir(exist_ok=True)
    (folder / "registered.yaml").write_text((SET / "registered.yaml").read_text())
    reg = compare.registered_predictions([str(folder)])
    for name, (a, b) in measured.items():
        for arm, k in (("A", a), ("B", b)):
            doc = synthetic_doc(name, arm, reg[name] * k, [reg[name] * k * 0.8, reg[name] * k * (0.96 if arm == "B" else 0.8 * 1.2)])
            (folder / f"megatron-moe-h200-x2-{name}-arm{arm}.json").write_text(json.dumps(doc))
    return folder


def test_compare_prints_both_arms_against_the_registered_step_and_the_rule(tmp_path, capsys):
    # arm A measured 1.6x the registered step (-37.5%), arm B 1.05x (-4.8%): rule 1
    folder = bundle(tmp_path / "set", {name: (1.6, 1.05) for name in register.SET3})
    assert compare.main([str(folder)]) == 0
    out = capsys.readouterr().out
    assert sum(ln.startswith("    registered ") for ln in out.splitlines()) == 8 and "-37.5%" in out and "-4.8%" in out
    assert "arm A: mean |error| 37.5% over 4" in out and "arm B: mean |error| 4.8% over 4" in out
    assert "-> 1: launch hygiene explains" in out
    assert "rank 1 step" in out and "CPUs 8-15" in out and "unpinned (32 CPUs allowed)" in out
    assert "differs from arm" not in out
    # a B run whose pinning failed on a rank is not arm B; a rank pinned for another GPU than CUDA gave it is named
    bad = json.loads((folder / "megatron-moe-h200-x2-e16-top4-ffn2048-ep2-armB.json").read_text())
    bad["pin_per_rank"][1] = {"error": "OSError: [Errno 22] Invalid argument", "cpus": None}
    bad["pin_per_rank"][0]["gpu_pci"] = "0000:99:00.0"
    bad["launch"]["cuda_module_loading"] = None
    (folder / "megatron-moe-h200-x2-e16-top4-ffn2048-ep2-armB.json").write_text(json.dumps(bad))
    compare.main([str(folder)])
    out = capsys.readouterr().out
    assert "differs from arm B's declaration: cuda_module_loading None, declared 'EAGER'" in out
    assert "not counted as arm B" in out and "PINNED FOR 0000:99:00.0, RAN ON 0000:10:00.0" in out and "OSError" in out
    assert "arm B: mean |error| 4.8% over 3" in out and "on the 3 configurations measured in both arms" in out


def test_compare_names_runs_of_both_layouts():
    assert compare.run_key("megatron-moe-h200-x4-mixtral-like-ep2.json") == ("mixtral-like-ep2", None)
    assert compare.run_key("megatron-moe-h200-x2-e16-top4-ffn2048-ep2-armB.json") == ("e16-top4-ffn2048-ep2", "B")


@pytest.mark.parametrize(("a", "b", "n", "rule"), [
    (0.35, 0.05, 4, "1:"), (0.08, 0.02, 4, "2:"), (0.35, 0.20, 4, "3:"), (0.35, 0.30, 4, "4:"), (0.35, 0.40, 4, "4:"),
    (0.35, 0.05, 2, "incomplete")])
def test_reading_rule_first_match(a, b, n, rule):
    assert compare.verdict(a, b, n, 4).startswith(rule)


@pytest.mark.parametrize(("a", "b", "n", "rule"), [
    (0.08, 0.30, 4, "1:"), (0.30, 0.06, 4, "2:"), (0.30, 0.25, 4, "3:"), (0.05, 0.05, 2, "incomplete")])
def test_the_one_gpu_sets_rule_first_match(a, b, n, rule):
    assert compare.verdict_one_gpu(a, b, n, 4).startswith(rule)


def test_moe4_registers_moe3s_configurations_on_one_gpu_without_ep():
    assert list(register.SETS["moe4"][0]) == [n.replace("-ep2", "-ep1") for n in register.SET3]
    assert register.SETS["moe4"][1] == 1 and all(m["ep"] == 1 for m in register.SET4.values())
    assert {k: v for k, v in register.SET4["e16-top4-ffn2048-ep1"].items() if k != "ep"} == \
        {k: v for k, v in register.SET3["e16-top4-ffn2048-ep2"].items() if k != "ep"}


def synthetic_trace(path: Path, spacing_us: float, stall_us: float) -> None:
    """One rank's profiled step: six collectives (all_gather, two alltoalls, twice), 60 GEMM launches before each,
    `spacing_us` apart on the host; one aten::mm with `stall_us` of its own time."""
    ev, t, corr = [], 0.0, 0
    for j in range(6):
        for _ in range(60):
            corr += 1
            ev.append(dict(ph="X", cat="cpu_op", name="aten::mm", ts=t - 2, dur=9.0, tid=1, pid=1))
            ev.append(dict(ph="X", cat="cuda_runtime", name="cudaLaunchKernel", ts=t, dur=5.0, tid=1, pid=1, args={"correlation": corr}))
            ev.append(dict(ph="X", cat="kernel", name="nvjet_tst_128x64", ts=t + 10, dur=5.0, tid=7, pid=0, args={"correlation": corr}))
            t += spacing_us
        if j == 2 and stall_us:
            ev.append(dict(ph="X", cat="cpu_op", name="aten::mm", ts=t, dur=stall_us, tid=1, pid=1))
            t += stall_us
        corr += 1
        kind = "AllGather_RING_LL" if j % 3 == 0 else "SendRecv"
        ev.append(dict(ph="X", cat="cuda_runtime", name="cudaLaunchKernel", ts=t, dur=5.0, tid=1, pid=1, args={"correlation": corr}))
        ev.append(dict(ph="X", cat="kernel", name=f"ncclDevKernel_{kind}(x)", ts=t + 10, dur=50.0, tid=8, pid=0,
                       args={"correlation": corr, "Process Group Ranks": "[0, 1]",
                             **({"Out split size": "[4000, 4200]"} if kind == "SendRecv" else {})}))
        t += spacing_us
    for name in ("aten::empty", "aten::view", "aten::add_", "aten::mul"):
        ev.append(dict(ph="X", cat="cpu_op", name=name, ts=1.0, dur=3.0, tid=1, pid=1))
    with gzip.open(path, "wt") as f:
        json.dump({"traceEvents": ev}, f)


def test_rank_skew_reads_a_two_rank_set(tmp_path, capsys):
    name = "e16-top4-ffn2048-ep2"
    reg = compare.registered_predictions([str(bundle(tmp_path, {name: (1.5, 1.1)}))])
    assert name in reg
    paths = [tmp_path / f"trace-h200-x2-{name}-armA-rank{r}.json.gz" for r in (0, 1)]
    synthetic_trace(paths[0], 20.0, 0.0)
    synthetic_trace(paths[1], 30.0, 1500.0)   # rank 1 issues slower and stalls once in aten::mm
    assert rank_skew.main([str(p) for p in paths]) == 0
    out = capsys.readouterr().out
    assert "[6, 6] NCCL kernels per rank" in out and "count per rank: [0, 6]" in out
    assert "EP group [0, 1]" in out and "top-4 routing of 8192 tokens over 16 experts at EP 2" in out
    assert "rank 1 host stalls (> 1 ms own time): 1, 1.5 ms; in aten::mm 1" in out


STUB_LAUNCHER = '''#!{python}
import json, os, sys
argv = sys.argv[1:]
val = lambda k: int(argv[argv.index(k) + 1])
pin = "--pin" in argv
doc = {{"world_size": 2, "median_step_s_per_rank": [0.05, 0.05], "median_host_issue_s_per_rank": [0.04, 0.045],
       "launch": {{"warmup": val("--warmup"), "steps": val("--steps"), "pin": pin,
                  "cuda_module_loading": os.environ.get("CUDA_MODULE_LOADING")}},
       "pin_per_rank": [{{"cpus_after": "0-7"}} if pin else None] * 2, "threads_per_rank": [{{}}, {{}}],
       "rank0": {{"status": "ok"}}}}
print(json.dumps(doc))
'''


def run_device_script(tmp_path: Path, gpus: int, script: Path | None = None, **env_extra: str):
    """moe3's device_run.sh (or `script`, another set's) on a machine of `gpus` stub H200s (stub nvidia-smi, pip and
    launcher): ($OUT, the run)."""
    stubs = tmp_path / "bin"
    stubs.mkdir()
    names = "".join(f'echo "GPU {i}: NVIDIA H200"; ' for i in range(gpus))
    buses = "".join(f"echo 00000000:{18 + i}:00.0; " for i in range(gpus))
    (stubs / "nvidia-smi").write_text(f'#!/bin/sh\ncase "$*" in\n  -L) {names};;\n  *query-gpu*) {buses};;\n  *) echo topo;;\nesac\n')
    (stubs / "pip").write_text("#!/bin/sh\nexit 0\n")
    (stubs / "timeout").write_text(STUB_LAUNCHER.format(python=sys.executable))
    (stubs / "python3").symlink_to(sys.executable)
    for f in stubs.iterdir():
        f.chmod(0o755)
    out, work = tmp_path / "out", tmp_path / env_extra.get("MOE_SET", "moe3")
    out.mkdir()
    env = dict(os.environ, PATH=f"{stubs}:{os.environ['PATH']}", OUT=str(out), MOE3_WORK=str(work), **env_extra)
    return out, subprocess.run(["bash", str(script or SET / "device_run.sh")], cwd=ROOT, env=env, capture_output=True, text=True,
                               timeout=120)


def test_device_run_flow_with_stubs(tmp_path):
    """device_run.sh on a machine with stub nvidia-smi, pip and launcher: every configuration in both arms, alternating,
    the flags and environment printed, each run's status line, and one tgz under $OUT."""
    out, res = run_device_script(tmp_path, 2, CUDA_MODULE_LOADING="EAGER")
    lines = res.stdout.splitlines()
    runs = [ln.split(":")[0] for ln in lines if "device.py" in ln]
    names = list(register.SET3)
    assert runs == [f"h200-x2-{n}-arm{a}" for i, n in enumerate(names) for a in (("A", "B") if i % 2 == 0 else ("B", "A"))]
    a_flags = [ln for ln in lines if "-armA: " in ln]
    b_flags = [ln for ln in lines if "-armB: " in ln]
    assert all("CUDA_MODULE_LOADING=EAGER device.py" in ln and "--pin --warmup 10" in ln for ln in b_flags)
    assert all(": device.py" in ln and "--pin" not in ln and "--warmup 3" in ln for ln in a_flags)   # A unsets EAGER
    assert sum(" rc 0 at " in ln for ln in lines) == 8
    assert sum("'cuda_module_loading': None" in ln for ln in lines) == 4 and sum("'cuda_module_loading': 'EAGER'" in ln for ln in lines) == 4
    with tarfile.open(out / "moe3.tgz") as tgz:
        members = tgz.getnames()
    assert sum(m.endswith("-armA.json") for m in members) == 4 and "moe3/host.txt" in members


def test_compare_reads_a_one_gpu_set_with_a_failed_run_against_its_own_rule(tmp_path, capsys):
    """moe4's path: one rank, EP 1, the registration in the folder (a repeat lease's sub-folder reads its parent's), a
    failed run's empty document skipped, and the one-GPU rule (verdict_one_gpu), not moe3's; two folders are read apart."""
    moe4 = ROOT / "calibration" / "h200x1-megatron-moe4-2026-11-28"
    folder = tmp_path / "set"
    folder.mkdir()
    (folder / "registered.yaml").write_text((moe4 / "registered.yaml").read_text())
    reg = compare.registered_predictions([str(folder)])
    for name, (a, b) in {"e16-top4-ffn2048-ep1": (1.05, 1.02), "e32-top6-ffn1408-ep1": (1.04, 1.03),
                         "e64-top8-ffn512-ep1": (0.97, 1.01)}.items():
        for arm, k in (("A", a), ("B", b)):
            doc = synthetic_doc(name.replace("-ep1", "-ep2"), arm, reg[name] * k, [reg[name] * k * 0.98])
            doc.update(world_size=1, parallel={"ep": 1, "tp": 1, "pp": 1, "dp": 1}, median_step_s_per_rank=[reg[name] * k],
                       placement_per_rank=doc["placement_per_rank"][:1], pin_per_rank=doc["pin_per_rank"][:1])
            (folder / f"megatron-moe-h200-x1-{name}-arm{arm}.json").write_text(json.dumps(doc))
    for arm in "AB":
        (folder / f"megatron-moe-h200-x1-switch-e8-top1-ffn8192-ep1-arm{arm}.json").write_text("")
    assert compare.main([str(folder)]) == 0
    out = capsys.readouterr().out
    assert "switch-e8-top1-ffn8192-ep1-armA.json: not measured" in out
    assert "-> 1: the local-spec host model holds" in out and "launch hygiene explains" not in out
    lease = folder / "lease2"
    lease.mkdir()
    for f in folder.glob("megatron-moe-*e16*.json"):
        (lease / f.name).write_text(f.read_text())
    assert compare.registered_predictions([str(lease)]) == reg      # the parent's registration
    compare.main([str(folder), str(lease)])
    out = capsys.readouterr().out
    assert f"== {folder}" in out and f"== {lease}" in out and "on the 1 configurations" not in out.split(f"== {lease}")[0]


def test_device_run_runs_moe4_on_one_gpu_with_moe_set(tmp_path):
    """The same script with MOE_SET=moe4 on a one-GPU machine: moe4's configurations in both arms, one rank each, and its
    own tgz; the top-1 configuration's device.py flags ask for top-1 (device.py turns on pre-softmax for it)."""
    out, res = run_device_script(tmp_path, 1, MOE_SET="moe4")
    runs = [ln.split(":")[0] for ln in res.stdout.splitlines() if "device.py" in ln]
    assert runs == [f"h200-x1-{n}-arm{a}" for i, n in enumerate(register.SET4) for a in (("A", "B") if i % 2 == 0 else ("B", "A"))]
    assert "gpus 1 (h200)" in res.stdout and (out / "moe4.tgz").is_file() and not (out / "moe3.tgz").exists()
    assert "--top-k 1 " in next(ln for ln in res.stdout.splitlines() if "switch-e8-top1" in ln and "device.py" in ln)


def test_device_py_turns_on_pre_softmax_for_top1_only():
    text = (ROOT / "studies" / "megatron_moe" / "device.py").read_text()
    assert "moe_router_pre_softmax=args.top_k == 1" in text


def test_format3_documents_write_the_issue_lists_once_and_read_as_format2():
    """device.py writes every rank's issue and step lists once, under host_issue.gather's *_by_rank keys (format 3);
    compare.py reads those, and the format-2 bundles' *_per_rank (moe .. moe6) where they are absent."""
    text = (LAB / "device.py").read_text()
    for old in ("host_issue_s_per_rank", "step_times_s_per_rank", "median_host_issue_s_per_rank"):
        assert f'"{old}":' not in text
    assert '"format": 3' in text and "**issue_fields" in text
    old = synthetic_doc(sorted(register.SET3)[0], "B", 0.05, [0.04, 0.045])
    new = {k: v for k, v in old.items() if k != "median_host_issue_s_per_rank"} | {"format": 3,
                                                                                   "host_issue_median_s_by_rank": [0.04, 0.045]}
    assert compare.ranks_line(new) == compare.ranks_line(old) and "host issue 45.00 ms" in compare.ranks_line(new)
    assert compare.host_spread(new) == compare.host_spread(old) == {"host_spread": pytest.approx(1.125)}
    assert compare.host_spread({"world_size": 1}) == {"host_spread": None}


@pytest.mark.parametrize("argv, what", [(["--set", "bogus"], "unknown set 'bogus'"),
                                        (["--names", "bogus"], "unknown set 'bogus'"),
                                        (["--arms", "bogus"], "unknown set 'bogus'"),
                                        (["--flags", "bogus"], "no configuration 'bogus'"),
                                        (["--flags", "e16-top4-ffn2048-ep2", "--arm", "Z"], "unknown arm 'Z'"),
                                        (["--env", "Z"], "unknown arm 'Z'"), (["--names"], "--names needs a value")])
def test_register_refuses_unknown_names_in_one_line(argv, what, capsys):
    """A mistyped set, configuration or arm (e.g. device_run.sh's MOELAB_SET) is one line on stderr, exit 2, no traceback."""
    with pytest.raises(SystemExit) as e:
        register.main(argv)
    err = capsys.readouterr().err
    assert e.value.code == 2 and err.count("\n") == 1 and err.startswith("register.py: ") and what in err
