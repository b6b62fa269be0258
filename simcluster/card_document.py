"""A model card as a document: YAML of fitted parameters with units, valid range, fit error, provenance.

The base of every card reader (cards.py for the components, hardware/gpu.py, storage/nvme.py): the file read strictly,
its top-level keys checked, field getters whose unit and type mistakes are one-line ModelCardErrors at file:key, and the
one writer of a card's YAML. Quantities are unit strings in the file ("11.8us", "360GB/s", "1MiB"), SI floats in code.
"""

from __future__ import annotations

import datetime as _dt
from pathlib import Path

import yaml

from simcluster import __version__, documents, output, schema, strict
from simcluster.errors import ModelCardError

CARD_KEYS = {"kind", "name", "description", "machine", "params", "valid_range", "fit", "provenance"}


def load_yaml(path: str | Path, error=ModelCardError) -> dict:
    doc = strict.load_yaml(path, error, what="model card (YAML)", schema=documents.CARD)
    if not isinstance(doc, dict):
        raise error("expected a mapping at the top level", where=str(path))
    return doc


def get(doc: dict, key: str, where: str, parse=None):
    return strict.field(doc, key, where, parse, ModelCardError)


def declared_params(card: dict, where: str, declaration, **vocabulary):
    """A card's params read through their declaration (card_params.py): typed fields in SI units with the declared
    defaults; the first key that does not fit is one line FILE:LINE: params.KEY: why (`vocabulary`: the names or
    parsers of the model that owns a field, for its Choice / Parsed fields)."""
    return declared(get(card, "params", where), where, declaration, "params", **vocabulary)


def declared(doc, where: str, declaration, key: str = "params", **vocabulary):
    """`doc`, the part of a card at `key` (the card's file: `where`), read through its declaration (see above)."""
    try:
        return schema.read(declaration, doc, vocabulary)
    except schema.Refusal as exc:
        dotted = f"{key}.{exc.key}" if exc.key else key
        raise ModelCardError(f"{dotted}: {exc.why}", where=line_of(where, dotted), hint=exc.hint) from None


def line_of(path: str, key: str) -> str:
    """path:LINE of the key (or the nearest key above it) in the card's file; only on the error path."""
    try:
        _, lines = strict.load_yaml(path, ModelCardError, lines=True)
    except (ModelCardError, OSError, ValueError):
        return path
    while key and key not in lines:
        cut = max(key.rfind("."), key.rfind("["))
        key = key[:cut] if cut > 0 else ""
    return f"{path}:{lines[key]}" if key else path


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
