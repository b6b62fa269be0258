"""A model card as a document: YAML of fitted parameters with units, valid range, fit error, provenance.

The base of every card reader (cards.py for the components, hardware/gpu.py, storage/nvme.py): the file read strictly,
its top-level keys checked, field getters whose unit and type mistakes are one-line ModelCardErrors at file:key, and the
one writer of a card's YAML. Quantities are unit strings in the file ("11.8us", "360GB/s", "1MiB"), SI floats in code.
"""

from __future__ import annotations

import datetime as _dt
from pathlib import Path

import yaml

from simcluster import __version__, documents, output, strict
from simcluster.errors import ModelCardError
from simcluster.units import parse_bandwidth, parse_size, parse_time

CARD_KEYS = {"kind", "name", "description", "machine", "params", "valid_range", "fit", "provenance"}


def load_yaml(path: str | Path, error=ModelCardError) -> dict:
    doc = strict.load_yaml(path, error, what="model card (YAML)", schema=documents.CARD)
    if not isinstance(doc, dict):
        raise error("expected a mapping at the top level", where=str(path))
    return doc


def get(doc: dict, key: str, where: str, parse=None):
    return strict.field(doc, key, where, parse, ModelCardError)


def params(card: dict, where: str, allowed: set[str]) -> dict:
    """A card's params, refusing a key the model does not read (a typo would otherwise be ignored)."""
    return strict.known_keys(get(card, "params", where), allowed, f"{where}: params", ModelCardError)


def positive_of(parse):
    return lambda v: strict.positive(parse(v))


def rate(v) -> float:
    return strict.rate(parse_bandwidth(v))


def seconds(v) -> float:
    return strict.positive(parse_time(v))


def size(v) -> float:
    return strict.positive(parse_size(v))


def share(v) -> float:
    value = float(v)
    if not 0 <= value <= 1:
        raise ValueError("expected a share from 0 to 1")
    return value


def fraction(v) -> float:
    value = float(v)
    if not 0 < value <= 1:
        raise ValueError("expected a fraction in (0, 1]")
    return value


def whole(v) -> int:
    if isinstance(v, bool) or int(v) != v or not 1 <= int(v) <= 2**20:
        raise ValueError("expected a whole number >= 1")
    return int(v)


def load_card(path: str | Path, kind: str | None = None) -> dict:
    """Read a card and check its top-level keys; `kind` asserts what it must be."""
    doc = load_yaml(path)
    unknown = set(doc) - CARD_KEYS
    if unknown:
        raise ModelCardError(f"unknown key '{sorted(unknown)[0]}'", where=str(path),
                             hint=f"known keys: {', '.join(sorted(CARD_KEYS))}")
    if kind and doc.get("kind") != kind:
        raise ModelCardError(f"is a {strict.short(doc.get('kind'))} card, expected a {kind!r} card", where=str(path))
    for section in ("machine", "valid_range", "provenance", "fit"):
        if section in doc and not isinstance(doc[section], dict):
            raise ModelCardError(f"'{section}': expected a mapping, got {type(doc[section]).__name__}", where=str(path))
    machine, valid, prov = doc.get("machine", {}), doc.get("valid_range", {}), doc.get("provenance", {})
    for name, value, kind_ in (("machine.devices", machine.get("devices", []), list),
                               ("valid_range.ranks", valid.get("ranks", []), list),
                               ("provenance.traces", prov.get("traces", []), list)):
        if not isinstance(value, kind_):
            raise ModelCardError(f"'{name}': expected a list, got {type(value).__name__}", where=str(path))
    try:
        [strict.count(r, 2**20) for r in valid.get("ranks", [])]
    except ValueError:
        raise ModelCardError("'valid_range.ranks': expected whole rank counts >= 1", where=str(path)) from None
    return doc


def nonnegative(value) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value < float("inf"):
        raise ValueError(f"expected a number >= 0, got {value!r}")
    return float(value)


def dump_card(card: dict) -> str:
    """The card's YAML, after simcluster.output's check (no .nan, .inf or negative quantity is written)."""
    output.check(card, f"the {card.get('kind', '') if isinstance(card, dict) else ''} card {card.get('name', '') if isinstance(card, dict) else ''}")
    return yaml.safe_dump(card, sort_keys=False, width=100)


def fitted_sha256(card: dict) -> set[str]:
    """The sha256 of every trace a card was fitted on (its provenance)."""
    return {t.get("sha256") for t in card.get("provenance", {}).get("traces", []) if isinstance(t, dict)}


def provenance(traces: list[dict]) -> dict:
    """Where a card comes from: the simcluster version, when, and each trace (path, sha256, tool, ...)."""
    return {"simcluster_version": __version__,
            "fitted_at": _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"), "traces": traces}
