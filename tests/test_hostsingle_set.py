"""Session 44's single-GPU host-bound / op set (calibration/h200x2-hostsingle-2026-11-30): the registration the file that ran
(its sha256) with its registered model a fresh --register, the device script against the read-out's processes, the shapes new to calibration/,
and synthetic runs through the rules N, B, M, P, H, O, R and D."""

from __future__ import annotations

import json
import math
import re
import shutil

import pytest
import yaml
from conftest import ROOT, load_script, measured_llm_tokens, seqs_named_elsewhere

from simcluster.errors import SimclusterError

BUNDLE = ROOT / "calibration" / "h200x2-hostsingle-2026-11-30"
HB49_RERUN = ROOT / "calibration/h200x1-hb49-2026-12-01"   # ran after this set; re-runs its op host-bound shape
DIAG_HOST = ROOT / "calibration" / "h200x1-llm-diag-2026-11-29" / "host"   # the registered host fits' lease


def script():
    return load_script("validation/hostsingle.py")


def doc(preset: str, seq: int, mb: int, ac: str, t: float, peak_gib: float | None) -> dict:
    shape = {"seq": seq, "micro_batch": mb, "status": "ok", "median_step_s": t, "step_times_s": [t] * 20}
    if peak_gib is not None:
        shape["max_memory_allocated_bytes"] = int(peak_gib * 2**30)
    return {"tool": "llm-step", "format": 1, "mode": "single", "world_size": 1, "model": {"preset": preset},
            "ac_mode": ac, "shapes": [shape]}


def host_runs(folder, factor: float, names: tuple[str, ...] | None = None) -> None:
    """The diagnostic lease's hidden-128 runs `names` (default this set's probe: single and op at 2 and 32 layers) with
    every step times `factor`: a host `factor` as slow per kernel and per step (also tests/test_opcheck_set.py's)."""
    folder.mkdir(parents=True, exist_ok=True)
    for name in names or script().HOST_PROBE:
        d = json.loads((DIAG_HOST / f"{name}.json").read_text())
        for s in d["shapes"]:
            s["median_step_s"] *= factor
        (folder / f"{name}.json").write_text(json.dumps(d))


def synthetic(tmp_path, offset: float, jitter: list[float], mem: float = 1.0, host: float | None = 1.0, base=None,
              src=BUNDLE, judged: str = "registered", which: str | None = None, probe: tuple[str, ...] | None = None):
    """A copy of `src`'s registration whose every process measures `base` (key -> step s; default the registered steps:
    predicted[which or judged]) times exp(-offset) (offset > 0: the model slow) times exp(jitter[i]) for the i-th
    process, its peak `mem` times predicted[judged]'s; runs/host/ the diagnostic lease's `probe` runs (host_runs) at
    `host` times its steps (None: no host runs). Also tests/test_opcheck_set.py's."""
    bundle = tmp_path / "set"
    (bundle / "runs").mkdir(parents=True)
    shutil.copy(src / "registered.yaml", bundle / "registered.yaml")
    i = 0
    for row in yaml.safe_load((src / "registered.yaml").read_text())["rows"]:
        key = (row["preset"], row["seq"], row["micro_batch"], row["ac_mode"])
        p, q = row["predicted"][judged], row["predicted"][which or judged]
        for k in range(1, row["processes"] + 1):
            t = (base[key] if base else q["step_ms"] / 1e3) * math.exp(-offset + jitter[i % len(jitter)])
            i += 1
            (bundle / "runs" / f"{row['name']}-r{k}.json").write_text("log line\n" + json.dumps(doc(*key, t, p["peak_mem_GiB"] * mem)))
    if host is not None:
        host_runs(bundle / "runs" / "host", host, probe)
    return bundle


def test_the_registration_is_the_file_that_ran_and_its_registered_model_a_fresh_register(tmp_path):
    """registered.yaml is byte for byte the file the device run hashed (runs/commit.txt's sha256); its `registered`
    predictions (the one-GPU sets' FLAG_HOSTS fits), host fits, judge and rules are what --register writes from this
    tree. Its `product` predictions (and product_host) are the product's at registration (e005011e), which later
    product changes move: the sha256 holds them, not a fresh register (cold review B item 9)."""
    import hashlib

    s = script()
    path = BUNDLE / "registered.yaml"
    ran = re.search(r"^([0-9a-f]{64})  calibration/h200x2-hostsingle-2026-11-30/registered.yaml$",
                    (BUNDLE / "runs" / "commit.txt").read_text(), re.M).group(1)
    assert hashlib.sha256(path.read_bytes()).hexdigest() == ran
    reg = yaml.safe_load(path.read_text())
    fresh_path = tmp_path / "registered.yaml"
    assert s.main(["--register", str(fresh_path)]) == 0
    fresh = yaml.safe_load(fresh_path.read_text())
    for key in ("script", "calibration", "registered_host", "judge", "rules"):
        assert reg[key] == fresh[key], key
    without_product = [{**r, "predicted": {k: v for k, v in r["predicted"].items() if k != "product"}} for r in reg["rows"]]
    assert without_product == [{**r, "predicted": {k: v for k, v in r["predicted"].items() if k != "product"}}
                               for r in fresh["rows"]]
    assert all(set(r["predicted"]) == {"registered", "product"} for r in reg["rows"])
    assert [(r["name"], r["preset"], r["seq"], r["micro_batch"], r["ac_mode"]) for r in reg["rows"]] == list(s.SHAPES)
    assert [r["regime"].split(" | ")[2] for r in reg["rows"]] == ["single+host-bound", "single+host-bound", "single+sac-op",
                                                                  "single+sac-op+host-bound"]
    assert s.main(["--register", str(fresh_path)]) == 2   # never over an existing registration


def test_the_device_script_runs_the_registered_processes_and_the_host_probe():
    text = (BUNDLE / "device_run.sh").read_text()
    runs = re.findall(r"^  guarded (\S+)-r\$r 60 \$one \$step --preset (\S+) --shapes (\d+):(\d+)(?: --ac-mode (\w+))?$", text, re.M)
    assert [(n, p, int(q), int(m), a or "none") for n, p, q, m, a in runs] == list(script().SHAPES)
    assert "for r in 1 2 3; do" in text and script().PROCESSES == 3
    probes = re.findall(r"guarded host/(\w+)-L\$layers 60 \$one \$probe --layers \$layers", text)
    assert probes == ["single", "op"] and text.count("for layers in 2 32; do") == 2
    assert [f"{m}-L{n}" for m in probes for n in (2, 32)] == list(script().HOST_PROBE)
    assert 'one="env CUDA_VISIBLE_DEVICES=0 python3 -m simcluster.runner.llm_step --mode single"' in text   # one GPU


def test_the_shapes_are_new_to_calibration_by_tokens_and_their_seqs_by_any_bundle():
    from simcluster.runner.llm_decoder import PRESETS

    earlier = measured_llm_tokens(BUNDLE, HB49_RERUN)   # hb49 (session 49) re-ran one of these shapes later, exactly
    seqs = {seq for _, _, seq, _, _ in script().SHAPES}
    for _, preset, seq, mb, _ in script().SHAPES:
        assert (preset, PRESETS[preset]["layers"], seq * mb) not in earlier, (preset, seq, mb)
    # no other bundle names these seqs (eager-today's test reads them so), but session 44's pphost set, registered in
    # parallel the same day, names 1344 for its 0.8b pipelines: another preset and mode (the token check above holds for
    # it), so that bundle may name 1344 and no other of these seqs
    assert 1344 in seqs
    # session 49's hb49 set re-runs ophb-0.8b (0.8b 1216:2 op) exactly on another lease: a shape on two leases by design
    assert seqs_named_elsewhere(BUNDLE, seqs, {ROOT / "calibration" / "h200x2-pphost-2026-11-30": {1344},
                                               ROOT / "calibration" / "h200x1-hb49-2026-12-01": {1216}}) == []


def test_the_products_single_host_term_is_the_mean_of_the_two_gpu_leases_own_fits():
    """Session 44: the product's single-mode host cost (heldout/eager.MODE_HOST's leases.yaml, as FSDP2's since session
    43) is the mean of every 2 x H200 lease's own hidden-128 single fit; the folder's own fit is the term before."""
    import statistics

    from simcluster.heldout.eager import MODE_HOST
    from simcluster.llm import eager

    fits = eager.lease_fits(MODE_HOST, "single")
    assert len(fits) == 4 and fits[0][0] == MODE_HOST.resolve()
    assert all(p.relative_to(ROOT / "calibration").parts[0].startswith("h200x2-") for p, _ in fits)   # one machine kind
    c, a, _ = eager.fit_modes(MODE_HOST)["single"]
    assert c == pytest.approx(statistics.mean(f[0] for _, f in fits)) and a == pytest.approx(statistics.mean(f[1] for _, f in fits))
    assert 24e-6 < c < 25.5e-6
    with eager.leases_unread():
        assert eager.fit_modes(MODE_HOST)["single"][0] == pytest.approx(21.04e-6, rel=1e-3)
    reg = yaml.safe_load((BUNDLE / "registered.yaml").read_text())
    assert reg["product_host"]["single"]["per_kernel_s"] == pytest.approx(c, rel=1e-4)   # rounded to 1e-9 s


def test_a_slow_registered_fit_that_this_leases_own_fit_explains_reads_lease(tmp_path):
    s = script()
    folder = tmp_path / "fast-host"
    host_runs(folder, 0.7)
    own = {(p, q, m, a): s.predict(p, q, m, a, folder)["step_ms"] / 1e3 for _, p, q, m, a in s.SHAPES}
    v = s.read_out(synthetic(tmp_path, 0.0, [0.02, -0.02, 0.0, 0.01], host=0.7, base=own))["verdicts"]
    assert "FASTER than the fit lease" in v["H"] and "x0.70" in v["H"], v["H"]
    assert v["B single+host-bound"].startswith("SLOW"), v
    assert v["O single+host-bound"].startswith("with this lease's own host fits within the target"), v
    assert v["D single+host-bound"].startswith("LEASE (the host fit's lease)"), v
    assert v["D single+sac-op+host-bound"].startswith("LEASE"), v


def test_a_bias_the_leases_own_fit_does_not_explain_reads_another_model_term(tmp_path):
    out = script().read_out(synthetic(tmp_path, 0.17, [0.02, -0.02, 0.01, -0.01, 0.0, 0.015]))
    v = out["verdicts"]
    assert v["B single+host-bound"].startswith("SLOW: lease bias +18.2%"), v
    assert "below the 8% target" in v["N"] and v["M single+host-bound"].startswith("not within"), v
    assert "single LIKE the fit lease" in v["H"] and "x1.00" in v["H"], v["H"]
    assert v["D single+host-bound"].startswith("MODEL (another term)") and v["P"].startswith("memory met"), v
    assert v["R single+sac-op"].startswith("product step ") and "lease bias" in v["R single+sac-op"], v
    assert len(out["rows"]) == 12 and not out["left"]


def test_loud_processes_read_noise_and_a_quiet_exact_lease_reads_met(tmp_path):
    loud = script().read_out(synthetic(tmp_path / "loud", 0.0, [0.3, -0.3, 0.0, 0.25]))["verdicts"]
    assert "ABOVE the 8% target" in loud["N"] and loud["D single+host-bound"].startswith("NOISE"), loud
    met = script().read_out(synthetic(tmp_path / "met", 0.0, [0.01, -0.01, 0.0, 0.005]))["verdicts"]
    assert met["B single+sac-op"].startswith("NONE") and met["D single+sac-op"].startswith("MET"), met
    none = script().read_out(synthetic(tmp_path / "nohost", 0.17, [0.0, 0.01], host=None))["verdicts"]
    assert "single: NO DATA" in none["H"] and none["D single+host-bound"].startswith("MODEL (another term)"), none


def test_memory_outside_the_registered_range_by_more_than_ten_percent_is_not_met(tmp_path):
    v = script().read_out(synthetic(tmp_path, 0.0, [0.0], mem=1.2))["verdicts"]
    assert v["P"].startswith("memory not met: max |error| 16.7%"), v["P"]


def test_missing_runs_bad_documents_and_a_bad_registration_are_one_line(tmp_path):
    s = script()
    bundle = synthetic(tmp_path, 0.17, [0.0, 0.01])
    (bundle / "runs" / "hb-1.1b-r3.json").unlink()
    (bundle / "runs" / "hb-0.3b-r3.json").write_text("Traceback ...")
    (bundle / "runs" / "op-1b-r3.json").write_text(json.dumps(doc("1b", 1792, 4, "none", 0.2, 20.0)))
    (bundle / "runs" / "host" / "op-L32.json").write_text("Traceback ...")
    out = s.read_out(bundle)
    left = " ".join(out["left"])
    assert "hb-1.1b: 2 of 3 processes read" in left and "hb-0.3b-r3.json: no llm-step document" in left, left
    assert "op-1b-r3.json: ran" in left and "registered" in left, left
    assert out["verdicts"]["H"].startswith("NO DATA: ") and "\n" not in out["verdicts"]["H"]
    reg = yaml.safe_load((bundle / "registered.yaml").read_text())
    del reg["rows"][0]["predicted"]["registered"]["step_ms"]
    (bundle / "registered.yaml").write_text(yaml.safe_dump(reg))
    with pytest.raises(SimclusterError, match=r"registered.yaml: rows\[0\]: missing or bad key"):
        s.read_out(bundle)
