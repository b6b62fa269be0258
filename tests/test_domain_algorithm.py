"""One rule for an algorithm forced on one NVLink domain (collectives/domain.domain_algorithm), used by `predict
collective --algorithm` and by the published nccl validator (reference/nccl.py): a Ring on a domain without an NVLS card
is the domain's NVLink card; anything else is refused with one line (cold read, session 35, mendA)."""

import json
import shlex

import pytest
from conftest import ROOT

from simcluster.cli import main
from simcluster.collectives.domain import domain_algorithm
from simcluster.errors import SimclusterError
from simcluster.reference import nccl

SCENARIO = ROOT / "scenarios/published/azure-ndgb200v6-x1.yaml"
PUBLISHED = ROOT / "calibration/published/nccl-azure-gb200-x1-aibenchguide.yaml"
GiB = 2**30


def test_the_rule():
    assert domain_algorithm(None, nvls=False) is None and domain_algorithm(None, nvls=True) is None
    assert domain_algorithm("ring", nvls=False) is None
    for algorithm, nvls in (("ring", True), ("tree", False), ("nvls-tree", False), ("tree", True)):
        with pytest.raises(SimclusterError) as err:
            domain_algorithm(algorithm, nvls)
        assert f"algorithm {algorithm!r} forced on one NVLink domain" in str(err.value) and "\n" not in str(err.value)


def _header_command() -> list[str]:
    (line,) = [x for x in SCENARIO.read_text().splitlines() if "simcluster predict collective" in x]
    args = shlex.split(line.lstrip("# "))
    assert args[0] == "simcluster" and "--algorithm" in args
    return [str(ROOT / a) if a.startswith("scenarios/") else a for a in args[1:]]


def test_the_scenarios_header_command_runs_and_gives_the_validators_number(capsys):
    args = _header_command()
    assert main(args) == 0
    assert "the domain's NVLink card" in capsys.readouterr().out
    assert main([*args, "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    by_size = {row["size_bytes"]: row for row in doc["rows"]}
    rows = {r.run: r for r in nccl.system_rows(nccl.read_nccl_file(PUBLISHED))}
    assert rows[23].predicted == pytest.approx(by_size[8 * GiB]["busbw_Bps"], rel=1e-12)   # one rule, one number
    assert by_size[8 * GiB]["algorithm"] == "nvlink-card"


@pytest.mark.parametrize("algorithm", ["tree", "nvls-tree"])
def test_another_forced_algorithm_on_one_domain_is_still_refused(algorithm, capsys):
    """The reader's change (a692f3d) admits a forced Ring only: a forced Tree on the same domain is refused, by the
    command and by the validator."""
    args = [a if a != "ring" else algorithm for a in _header_command()]
    assert main(args) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and f"--algorithm {algorithm}: algorithm '{algorithm}' forced on one NVLink domain" in err
    cluster = nccl._cluster(SCENARIO, 1)
    with pytest.raises(SimclusterError, match="forced on one NVLink domain"):
        nccl._predict(cluster, "all_reduce", [8 * GiB], [algorithm], [])
    assert nccl._predict(cluster, "all_reduce", [8 * GiB], ["ring"], [])[0] == cluster.predict("all_reduce", 8 * GiB).busbw_Bps


def test_a_forced_ring_on_a_domain_with_an_nvls_card_is_refused():
    import dataclasses

    cluster = nccl._cluster(SCENARIO, 1)
    with_nvls = dataclasses.replace(cluster, nvls=({4: 400e9}, 20e-6))
    with pytest.raises(SimclusterError, match="with an NVLS card"):
        with_nvls.predict("all_reduce", GiB, "ring")


def test_the_files_why_says_the_reader_changed_after_its_first_run():
    why = nccl.read_nccl_file(PUBLISHED).usage["why"]
    assert "a692f3d" in why and "refused before printing any number" in why
