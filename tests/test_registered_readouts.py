"""The registered sets' read-outs reproduce their committed readout.txt: the one-GPU sets' (cold read D, session 34) every
judged line as it was read once, only the "(model now ... ms)" column, today's model beside the registered step, may
move; the eager host-bound sets' (eager_fsdphost, pphost, hostsingle: they share heldout/registration's rule helpers,
bias_line, pooled_log_sd, mem_error; cold review B 44 item 10) byte for byte; moegemm's its registered part only (the
measured lines and the registered 'before' figures: its 'after' and verdict are priced by today's model, finalB48 item 3),
with its 'after' on the rows it registered; moerouter's byte for byte since mendB1."""

import re

import pytest
from conftest import ROOT, load_script

MODEL_NOW = re.compile(r" +\(model now +[0-9.]+ ms\)")
READOUTS = [("validation/llm_compile2.py", "h200x1-llm-compile2-2026-11-29"),
            ("validation/llm_lease3.py", "h200x1-llm-lease3-2026-11-29"),
            ("validation/llm_compile4.py", "h200x1-llm-compile4-2026-11-29"),
            ("validation/llm_eager5.py", "h200x1-llm-eager5-2026-11-29"),
            ("validation/llm_eager5.py", "h200x1-llm-eager5-lease2-2026-11-29"),
            ("validation/llm_ophost.py", "h200x1-llm-ophost2-2026-11-29"),
            ("validation/pphost.py", "h200x2-pphost-2026-11-30"),   # these print no model-now column: byte for byte
            ("validation/hostsingle.py", "h200x2-hostsingle-2026-11-30"),
            ("validation/eager_fsdphost.py", "h200x2-eager-fsdphost-2026-11-30"),
            ("validation/eager_fsdphost.py", "h200x2-eager-fsdphost-lease2-2026-11-30"),
            ("validation/eager_fsdphost.py", "h200x2-eager-fsdphost-lease3-2026-11-30"),
            ("validation/opcheck.py", "h200x2-opcheck-2026-11-30"),   # rule C through opcheck.compare (review B45, 13)
            ("validation/opsplit.py", "h200x2-opsplit-2026-11-30"),
            ("validation/ppblock.py", "h200x2-ppblock-2026-11-30"),   # session 45's: rule K's set word (review B45, 4)
            ("validation/ppfree.py", "h200x2-ppfree-2026-11-30"),
            ("validation/zero2.py", "h200x2-zero2-2026-11-30"),   # session 46's
            ("validation/compilefsdp.py", "h200x2-compilefsdp-2026-11-30"),   # session 46's
            ("validation/ppboth.py", "h200x2-ppboth-2026-11-30"),   # session 46's
            ("validation/zero2b.py", "h200x2-zero2b-2026-11-30"),   # session 46's: skipped until its readout.txt is here
            ("validation/compileac.py", "h200x2-compileac-2026-11-30"),   # session 46's: likewise
            ("validation/zero2c.py", "h200x2-zero2c-2026-11-30"),   # session 47's: skipped until its readout.txt is here
            ("validation/zero2d.py", "h200x2-zero2d-2026-11-30"),   # session 47's: likewise
            ("validation/repeats47.py", "h200x2-repeats47-2026-11-30"),   # session 47's: likewise
            ("validation/tp4.py", "h200x4-tp4-2026-11-30"),   # session 48's 4-GPU set: likewise, byte for byte
            ("validation/tp4b.py", "h200x4-tp4b-2026-11-30"),   # session 48's second 4-GPU set: likewise, byte for byte
            ("validation/moegemm.py", "h200x4-moegemm-2026-11-30"),   # session 48's: registered_part compared (finalB48 item 3)
            ("validation/compck.py", "h200x2-compck-2026-11-30"),   # session 48's: likewise
            ("validation/zero2e.py", "h200x2-zero2e-2026-11-30"),   # session 48's: likewise
            ("validation/zero2f.py", "h200x2-zero2f-2026-11-30"),   # session 48's: likewise
            ("validation/zero2g.py", "h200x2-zero2g-2026-11-30"),   # session 48's: likewise
            ("validation/compck2.py", "h200x2-compck2-2026-11-30"),   # session 48's: likewise
            ("validation/moerouter.py", "h200x1-moerouter-2026-12-01"),   # session 49's: measured lines + registered part
            ("validation/hb49.py", "h200x1-hb49-2026-12-01"),   # session 49's one-GPU set: byte for byte
            ("validation/x2set49.py", "h200x2-x2set49-2026-12-01"),   # session 49's: byte for byte
            ("validation/mem49.py", "h200x2-mem49-2026-12-01"),   # session 49's: byte for byte
            ("validation/moelab49.py", "h200x2-moelab49-2026-12-01"),   # session 49's: registered columns, byte for byte
            ("validation/moelab49b.py", "h200x2-moelab49b-2026-12-01"),   # likewise
            ("validation/mcrouter50.py", "h200x1-mcrouter50-2026-12-01"),   # session 50's: measured figures only, byte for byte
            ("validation/mcperm50.py", "h200x1-mcperm50-2026-12-01"),   # session 50's: measured figures only, byte for byte
            ("validation/lab1x51.py", "h200x1-lab1x51-2026-12-01"),   # session 51's one-GPU set: byte for byte
            ("validation/lab1x52.py", "h200x1-lab1x52-2026-12-01"),   # session 52's one-GPU sets: byte for byte
            ("validation/lseq52.py", "h200x1-lseq52-2026-12-01"),
            ("validation/moonrouter52.py", "h200x1-moonrouter52-2026-12-01"),   # session 52's: measured figures only, byte for byte
            ("validation/moeker50.py", "h200x1-moeker50-2026-12-01"),   # session 50's: byte for byte (its 'after' is the
            #   table adopt50 ships, which its rebuild of session 49's table gives again: heldout/registration.moe_rows_then)
            ("validation/moe54.py", "h200x1-moe54-2026-12-01"),   # session 54's one-GPU sets: their registered prices,
            ("validation/moe54c.py", "h200x1-moe54c-2026-12-01"),   # no model-now column: byte for byte
            ("validation/band55.py", "rule-band55-2026-12-01"),   # session 55's rule: from runs/error_bands.json, byte for byte
            ("validation/hfdev55.py", "h200x1-hfdev55-2026-12-01"),   # session 55's one-GPU HF trainer set: registered prices
            ("validation/hfhook55.py", "h200x1-hfhook55-2026-12-01"),   # session 55's HF hook term's held-out set: likewise
            ("validation/hfhook55.py", "h200x1-hfhook55r-2026-12-01")]   # its repeat on a second lease (noise): likewise


def _has_commit(bundle) -> bool:
    """Whether this checkout holds the commit a rule's registered.yaml names (a tarball or a shallow copy does not)."""
    import subprocess

    import yaml

    commit = yaml.safe_load((bundle / "registered.yaml").read_text())["commit"]
    return subprocess.run(["git", "cat-file", "-e", f"{commit}^{{commit}}"], cwd=ROOT, capture_output=True).returncode == 0


@pytest.mark.parametrize("script,folder", READOUTS, ids=[f for _, f in READOUTS])
def test_a_registered_read_out_prints_its_committed_readout(script, folder, capsys):
    bundle = ROOT / "calibration" / folder
    if not (bundle / "readout.txt").is_file():   # registered, not read yet: the only skip (cold review B46 item 7)
        pytest.skip(f"{folder}: registered, not read yet (no readout.txt)")
    if folder.startswith("rule-") and not _has_commit(bundle):   # a rule's read-out reads git history (cold review
        pytest.skip(f"{folder}: no git history (the rule reads when files entered main)")   # A55 item 6)
    assert (bundle / "runs").is_dir(), f"{folder}: readout.txt committed but no runs/ to print it from"
    assert load_script(script).main([str(bundle)]) == 0
    printed, committed = capsys.readouterr().out, (bundle / "readout.txt").read_text()
    # session 54 (rule54): the thin rule's reason gained a clause (sources outside the largest, trust/thin.MIN_OTHER_SOURCES);
    # a read made before it (lab1x51's 'today' verdict lines print the live rule) is compared without that clause
    printed = re.sub(r"; \d+ sources? outside the largest (?:source|set), \d+ needed", "", printed) \
        if "outside the largest source, 2 needed" not in committed else printed
    if folder.startswith(("h200x2-", "h200x4-tp4-", "h200x4-tp4b-", "h200x1-hb49-", "h200x1-mcrouter50-",
                             "h200x1-mcperm50-", "h200x1-lab1x51-", "h200x1-lab1x52-", "h200x1-lseq52-", "h200x1-moonrouter52-",
                             "h200x1-moe54-", "h200x1-moe54c-", "rule-band55-", "h200x1-hfdev55-",
                             "h200x1-hfhook55-", "h200x1-hfhook55r-")):
        assert "model now" not in committed and printed == committed
    elif folder.startswith("h200x4-moegemm-"):   # its 'after' (term on), loop and RULE figures are today's model
        part = load_script(script).registered_part   # (finalB48 item 3): the registered 'before' and measured lines
        assert part(printed) == part(committed) and len(part(committed).splitlines()) == 3 + 6 + 17
        # its 'after' prices the rows it registered (mendB1, cold review B50 item 6: publ50's Model Zoo rows, recorded
        # after the run, had entered 'after' and turned its RULE line ON): each family line's after count = its before
        counts = [m.groups() for m in re.finditer(r"before (\d+) rows.*\| after (\d+) rows", printed)]
        assert len(counts) == 6 and all(b == a for b, a in counts)
    elif folder.startswith("h200x1-moerouter-"):   # byte for byte since mendB1 (cold review B50 item 5): its families
        assert printed == committed   # priced on the 13 judged files' MoE rows, its 'after' session 49's table (README)
    else:
        assert MODEL_NOW.sub("", printed) == MODEL_NOW.sub("", committed)


def test_rule_b_line_names_too_few_processes_and_each_word():
    from simcluster.heldout.registration import bias_line

    assert bias_line([0.1, 0.2], 0.05) == (None, "NO DATA: 2 processes (3 needed)")
    assert bias_line([-0.2, -0.21, -0.19], 0.05) == ("FAST", "FAST: lease bias -18.1% (log -0.200, se 0.006, 3 processes; "
                                                              "band +-0.05)")
    assert bias_line([0.2, 0.21, 0.19], 0.05)[0] == "SLOW"
    assert bias_line([0.0, 0.01, -0.01], 0.05)[0] == "NONE"
    assert bias_line([0.05, 0.2, -0.1], 0.05)[0] == "UNDECIDED"


SESSION48 = [script for script, folder in READOUTS if folder.endswith("-2026-11-30") and script in (
    "validation/tp4.py", "validation/tp4b.py", "validation/moegemm.py", "validation/compck.py", "validation/compck2.py",
    "validation/zero2e.py", "validation/zero2f.py", "validation/zero2g.py")]


@pytest.mark.parametrize("script", SESSION48)
@pytest.mark.parametrize("bad", ["a file", "a missing folder"])
def test_a_bad_bundle_path_is_one_line_naming_it(script, bad, tmp_path, capsys):
    """Cold review finalB48 item 1: a file given as the bundle (NotADirectoryError) or a folder that is not there is one
    line on stderr naming the path and exit 1, never a traceback."""
    path = ROOT / "README.md" if bad == "a file" else tmp_path / "nowhere"
    assert load_script(script).main([str(path)]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("error: ") and str(path) in err and "Traceback" not in err


def test_files_then_names_published_files_that_exist():
    """registration.FILES_THEN (final read 51 item 9) is an allow-list frozen once: each name is a recorded published LLM
    file (a typo would drop its rows from moegemm's / moerouter's families silently); a file's MoE rows go through
    moe_rows_then whatever this list says."""
    from simcluster.heldout.registration import FILES_THEN

    published = ROOT / "calibration" / "published"
    assert len(FILES_THEN) == 37
    assert not [f for f in FILES_THEN if not (published / f"{f}.yaml").is_file()]


def test_a_rules_read_out_skips_without_its_commit(tmp_path):
    """Cold review A55 item 6: a rule's read-out (band55 reads when files entered main) is skipped, not failed, in a copy
    without the registering commit (a tarball, a shallow clone)."""
    (tmp_path / "registered.yaml").write_text("commit: " + "0" * 40 + "\n")
    assert not _has_commit(tmp_path)
    assert _has_commit(ROOT / "calibration" / "rule-band55-2026-12-01") or not (ROOT / ".git").exists()
