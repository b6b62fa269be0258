"""Every recorded published LLM source that ran PyTorch FSDP (its title or software names FSDP) and has a row the model
compares is predicted under one of the FSDP trainers (trust/regime.FSDP_TRAINERS), so studies/fsdp_family.py and the
error bands' `PyTorch FSDP` regimes count its rows (issue 44, session 40 fsdprows)."""

from __future__ import annotations

import re

import yaml
from conftest import ROOT

from simcluster.trust.regime import FSDP_TRAINERS, framework_family

FSDP_TEXT = re.compile(r"\bFSDP|FullyShardedDataParallel|fully_shard\b", re.IGNORECASE)


def fsdp_sources() -> dict[str, tuple[set[str], bool]]:
    """file name -> (the frameworks its rows are predicted under, whether any row is compared), for the FSDP sources."""
    out = {}
    for path in sorted((ROOT / "calibration" / "published").glob("llm-*.yaml")):
        doc = yaml.safe_load(path.read_text())
        cite, system, sim = doc.get("citation") or {}, doc.get("system") or {}, doc.get("simcluster") or {}
        if not FSDP_TEXT.search(f"{cite.get('title', '')} {system.get('software', '')}"):
            continue
        skipped = {int(i) for i in (sim.get("runs_not_compared") or {})}
        compared = any(i not in skipped for i in range(len(doc.get("runs") or [])))
        frameworks = {sim.get("framework") or "megatron", *(sim.get("framework_by_model") or {}).values()}
        out[path.name] = (frameworks, compared)
    return out


def test_every_compared_fsdp_source_is_in_the_family():
    sources = fsdp_sources()
    # the sources the family held at session 40 (studies/fsdp_family.py), the February fms-fsdp table among them
    assert {"llm-fms-fsdp-a100.yaml", "llm-fms-fsdp-h100.yaml", "llm-fms-fsdp-a100-feb2024.yaml",
            "llm-torchtitan-fsdp2-a100.yaml", "llm-llmfoundry-mpt-h100-large-scale-fsdp.yaml"} <= set(sources)
    left_out = {name: sorted(fw) for name, (fw, compared) in sources.items()
                if compared and not all(f in FSDP_TRAINERS for f in fw)}
    assert not left_out, f"FSDP sources predicted outside the FSDP trainers: {left_out}"


def test_the_trainers_are_one_family():
    assert {framework_family(name) for name in FSDP_TRAINERS} == {"PyTorch FSDP"}
    assert framework_family("megatron") != "PyTorch FSDP"   # the check above can fail: megatron is not in the family
