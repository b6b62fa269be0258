"""Issue 45: a fast mutation fuzz of every file kind's reader itself (no command, no model behind it): scenarios,
every card kind, DLIO workloads, published tables, bundle and results-store manifests, the plan catalogue and each
tool's output parser (tests/fuzzing_readers.reader_seeds), the repository's own files mutated (tests/fuzzing_corpus.mutate:
truncations, flipped bytes, NaN/Infinity/1e999, deep nesting, YAML bombs, NULs, duplicated lines, wrong types,
hostile names). Each reader either returns what every number of simcluster.output accepts, or refuses with one
SimclusterError line; nothing else escapes, and nothing is written. 1,500 cases in the default set (~15-20 s here),
6,000 more in the slow set; bench/fuzz.py CASES SEED READER_CASES is the long run (it never took a --readers flag)."""

import json
from collections import Counter

import pytest
from fuzzing_readers import reader_seeds, run_reader_cases
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from simcluster import documents
from simcluster.errors import SimclusterError

FINDINGS = {"traceback", "bad-error", "bad-number", "timeout", "memory", "escape"}


def test_every_file_kind_has_a_reader_under_fuzz():
    kinds = Counter(kind for _, kind, _ in reader_seeds())
    assert set(kinds) >= {"collective-card", "nic-card", "nvme-card", "gpu-card", "switch-card", "nvswitch-card",
                          "training-card", "op-profile", "dlio", "bundle-manifest", "results-store", "catalogue"}, kinds
    assert {k.split("/")[1] for k in kinds if k.startswith("scenario/")} == \
        {"collective_sweep", "qperf", "concurrent", "training", "llm_training"}, kinds      # every job kind's declaration
    assert {k.split("/")[1] for k in kinds if k.startswith("published/")} == {"nccl", "llm", "reliability"}
    assert {k.split("/")[1] for k in kinds if k.startswith("tool/")} >= {
        "ddp-step", "profile-summary", "fio", "dlio-summary", "qperf", "perf-stat", "nccl-tests", "nccl-tests-json",
        "nccl-tuning", "nccl-info", "gpu-micro", "llm-step"}, kinds


@pytest.mark.parametrize("seed,cases", [(45, 1500), pytest.param(46, 6000, marks=pytest.mark.slow)])
def test_mutated_files_are_read_or_refused_in_one_line(tmp_path, seed, cases):
    results = run_reader_cases(cases, tmp_path, seed=seed)
    found = [r for r in results if r[0] in FINDINGS]
    assert not found, "\n".join(f"{o}: {d} | {f}" for o, d, f, _ in found[:10])
    tally = Counter(r[0] for r in results)
    assert tally["read"] >= cases // 8 and tally["refused"] >= cases // 4, tally   # both paths taken


json_values = st.recursive(st.one_of(st.none(), st.booleans(), st.integers(min_value=-2**70, max_value=2**70),
                                     st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=6)),
                           lambda inner: st.one_of(st.lists(inner, max_size=3),
                                                   st.dictionaries(st.sampled_from(
                                                       ["name", "kind", "machine", "jobs", "nodes", "gpus_per_node", "runs",
                                                        "params", "simcluster", "held_out", "dataset", "record_length",
                                                        "points", "keys", "x"]), inner, max_size=4)),
                           max_leaves=20)
SCHEMAS = [documents.SCENARIO, documents.CARD, documents.DLIO_WORKLOAD, documents.PUBLISHED, documents.BUNDLE_MANIFEST,
           documents.STORE_MANIFEST, documents.CATALOGUE]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(SCHEMAS), json_values)
def test_any_document_fits_its_schema_or_is_one_line(schema, doc):
    try:
        checked = schema.check(doc, "file.yaml", SimclusterError, {"name": 3})
    except SimclusterError as exc:
        line = exc.one_line()
        assert "\n" not in line and line.startswith("file.yaml")
        return
    assert checked is doc                               # checked, not converted
    json.dumps(doc, allow_nan=False)                    # nothing non-finite got through
