"""The schema layer: every document simcluster reads (scenario, model cards, DLIO workloads, published tables, bundle
and results-store manifests, plan catalogues, tool output once parsed) is declared once, as pydantic v2 models, with
its types, units, ranges, finiteness and cross-field rules; `check` validates a parsed document against its schema
and turns the first violation into one line: `FILE:LINE: KEY: why, got VALUE`.

    RECORD = Record({"step_times_s": ListOf(Seconds(), min_len=1), "image": Count()}, optional={...})
    RECORD.check(doc, where="stdout.txt:3", error=TraceFormatError)
    strict.load_yaml(path, ScenarioError, schema=documents.SCENARIO)       # the readers' entry points

The models are strict (no "1" for a number, no true for a count), refuse NaN and infinity everywhere, and allow
keys they do not declare (the component readers behind them refuse unknown keys where a typo matters, and a tool's
output carries more than the model reads). The document is checked, not converted: readers get the parsed document
back unchanged. pydantic (a compiled validator, ~10 MB) is imported here only; docs/architecture.md says why this
layer is pydantic and not a hand-grown one.
"""

from __future__ import annotations

import math
import re
from typing import Annotated, Any, Optional

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    create_model,
    model_validator,
)

from simcluster.errors import SimclusterError
from simcluster.strict import short


def _finite_tree(doc) -> str | None:
    """The dotted key of the first NaN or infinite number anywhere in doc (None: every number is finite)."""
    stack = [("", doc)]
    while stack:
        key, value = stack.pop()
        if isinstance(value, dict):
            stack.extend((f"{key}.{k}" if key else str(k), v) for k, v in value.items())
        elif isinstance(value, (list, tuple)):
            stack.extend((f"{key}[{i}]", v) for i, v in enumerate(value))
        elif isinstance(value, float) and not math.isfinite(value):
            return key or "the document"
    return None


class Document(BaseModel):
    """The base of every declared document: strict types, no NaN or infinity anywhere in it (declared or not),
    undeclared keys allowed (and left to the reader)."""

    model_config = ConfigDict(strict=True, extra="allow", allow_inf_nan=False, frozen=True)

    @model_validator(mode="before")
    @classmethod
    def _every_number_finite(cls, value):
        bad = _finite_tree(value) if isinstance(value, dict) else None
        if bad is not None:
            raise ValueError(f"{bad}: not a finite number")
        return value

    @classmethod
    def validate(cls, value, key: str = ""):   # noqa: D102 - the old Record API: the value if it fits
        check(cls, value, key or "the document")
        return value

    @classmethod
    def check(cls, doc, where: str, error: type[SimclusterError] = SimclusterError, lines: dict | None = None):
        return check(cls, doc, where, error, lines)


def check(schema: type[Document], doc, where: str, error: type[SimclusterError] = SimclusterError,
          lines: dict[str, int] | None = None):
    """doc if it fits `schema`; else `error`, one line: 'WHERE[:LINE]: KEY: why, got VALUE' (LINE from `lines`, the
    dotted-key -> line index strict.load_yaml gives, when the key or one above it is in it)."""
    if not isinstance(doc, dict):
        raise error(f"expected a mapping (an object of keys), got {short(doc)}", where=where)
    try:
        schema.model_validate(doc)
    except ValidationError as exc:
        key, why = explain(exc)
        raise error(f"{key or 'the document'}: {why}", where=_located(where, key, lines)) from None
    return doc


class Refusal(ValueError):
    """A document that does not fit its declaration: the dotted key, why (one line), a hint (or None)."""

    def __init__(self, key: str, why: str, hint: str | None = None):
        super().__init__(f"{key}: {why}" if key else why)
        self.key, self.why, self.hint = key, why, hint


def read(schema: type[Document], doc, context: dict | None = None):
    """The declared model of `doc` (its fields typed, declared defaults in place), or Refusal naming the first key
    that does not fit; `context` gives the vocabularies a declaration's Choice fields take from their owner."""
    if not isinstance(doc, dict):
        raise Refusal("", f"expected a mapping, got {type(doc).__name__}")
    try:
        return schema.model_validate(doc, context=context)
    except ValidationError as exc:
        first = _first(exc)
        key, why = explain(exc)
        hint = getattr((first.get("ctx") or {}).get("error"), "hint", None)    # a Parsed field's parser's hint
        if first["type"] == "extra_forbidden":
            names = _declared_names(schema, first["loc"][:-1])
            hint = f"expected one of: {', '.join(sorted(names))}" if names else None
        raise Refusal(key, why, hint) from None


def _first(exc: ValidationError) -> dict:
    """The problem to name: an unknown key before the others (a misspelt key is also a missing one)."""
    errors = exc.errors(include_url=False)
    return next((e for e in errors if e["type"] == "extra_forbidden"), errors[0])


def explain(exc: ValidationError) -> tuple[str, str]:
    """(dotted key, 'why, got VALUE') of a validation error's first problem, in the words the readers use."""
    first = _first(exc)
    key = _dotted(first["loc"])
    why = first["msg"].removeprefix("Value error, ").removeprefix("Assertion failed, ")
    why = _WORDS.get(first["type"], why)
    value = first.get("input")
    got = f", got {short(value)}" if not isinstance(value, (dict, list)) or first["type"] in _WORDS else ""
    if ", got " in why or (isinstance(value, str) and short(value) in why):   # the message names what it got already
        got = ""
    if first["type"] == "missing":
        parent, _, name = key.rpartition(".")
        return parent, f"missing key '{name}'"
    if first["type"] == "extra_forbidden":
        return key, f"unknown key '{first['loc'][-1]}'"
    named = _NAMED.match(why) if first["type"] == "value_error" and isinstance(value, dict) else None
    if named:   # a rule over a whole document or section (finiteness, a cross-field rule) naming the key it refuses
        return (f"{key}.{named[1]}" if key else named[1]), why[named.end():]
    if not key and ": " in why:
        key, why = why.split(": ", 1)
        return key, why
    return key, f"{why}{got}"


_NAMED = re.compile(r"([A-Za-z_][\w.\[\]]*): ")


def _declared_names(schema, loc) -> list[str]:
    """The keys declared at `loc` inside `schema` (for an unknown key's hint)."""
    model = schema
    for part in loc:
        if isinstance(part, int) or not (isinstance(model, type) and issubclass(model, BaseModel)):
            continue
        field = next((f for n, f in model.model_fields.items() if (f.alias or n) == part), None)
        model = _model_in(field.annotation) if field else None
    if isinstance(model, type) and issubclass(model, BaseModel):
        return [f.alias or n for n, f in model.model_fields.items()]
    return []


def _model_in(annotation):
    """The model class inside an annotation (Optional[M], list[M], Annotated[M, ...]), if any."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in getattr(annotation, "__args__", ()) or ():
        found = _model_in(arg)
        if found is not None:
            return found
    return None


_WORDS = {"string_type": "expected text", "int_type": "expected an integer", "float_type": "expected a number",
          "bool_type": "expected true or false", "dict_type": "expected a mapping", "model_type": "expected a mapping",
          "model_attributes_type": "expected a mapping", "list_type": "expected a list",
          "finite_number": "not a finite number"}     # pydantic's error types in the words the other readers use


def _dotted(loc) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        elif not str(part).startswith(("function-", "union[", "nullable[", "list[", "dict[", "constrained-", "tag:", "[key]")) and part not in (
                "int", "float", "str", "bool", "none", "list", "dict"):
            out += f".{part}" if out else str(part)
    return out


def _located(where: str, key: str, lines: dict[str, int] | None) -> str:
    """where:LINE of key, or of the nearest key above it that the index has."""
    while lines and key:
        if key in lines:
            return f"{where}:{lines[key]}"
        cut = max(key.rfind("."), key.rfind("["))
        key = key[:cut] if cut > 0 else ""
    return where


# ---- field types: a declaration reads as a type ----------------------------------------------------------------

def Number(low: float = -math.inf, high: float = math.inf, unit: str = "", integer: bool = False,   # noqa: N802
           above: bool = False):
    """A finite real number from `low` to `high` (`unit` named in the error); `integer` for a whole number;
    `above`: low itself refused (a time that must be > 0)."""
    kind = "an integer" if integer else "a number"
    unit_note = f" {unit}" if unit else ""
    span = f"{'> ' if above else 'from '}{_bound(low, integer)} to {_bound(high, integer)}{unit_note}"

    def in_range(value):
        if isinstance(value, bool) or not isinstance(value, (int, float)) or (integer and isinstance(value, float)):
            raise ValueError(f"expected {kind}")
        if not math.isfinite(value) or value < low or value > high or (above and value == low):
            raise ValueError(f"expected {kind} {span}")
        return value
    return Annotated[Any, AfterValidator(in_range), Field(description=f"{kind} {span}")]


def _bound(value: float, integer: bool) -> str:
    return f"{int(value):,}" if integer and math.isfinite(value) else f"{value:g}"


def Seconds(high: float = 86400.0):   # noqa: N802
    """A duration in seconds, > 0 and at most `high` (a day by default)."""
    return Number(0.0, high, "s", above=True)


def Count(low: int = 1, high: int = 2**31):   # noqa: N802
    return Number(low, high, integer=True)


def Text(max_len: int = 4096):   # noqa: N802
    return Annotated[str, Field(max_length=max_len)]


def ListOf(item, min_len: int = 0, max_len: int = 1_000_000):   # noqa: N802
    return Annotated[list[item], Field(min_length=min_len, max_length=max_len)]


def MapOf(value, max_len: int = 100_000):   # noqa: N802
    return Annotated[dict[str, value], Field(max_length=max_len)]


def Nullable(inner):   # noqa: N802
    return Optional[inner]   # noqa: UP045 - a runtime type expression


def OneOf(*names: str):   # noqa: N802
    """A text that is one of `names`."""
    def one_of(value: str) -> str:
        if value not in names:
            raise ValueError(f"expected one of {', '.join(names)}")
        return value
    return Annotated[str, AfterValidator(one_of)]


def Choice(vocabulary: str):   # noqa: N802
    """One of the names its owner gives at validation (schema.read(..., context={vocabulary: names})): a declaration
    in the base layer takes a model's vocabulary (collective algorithms, precisions) from the reader that owns it."""
    def one_of(value, info: ValidationInfo):
        names = (info.context or {}).get(vocabulary)
        if names is None:
            raise ValueError(f"the reader gave no {vocabulary} names to check against")
        if isinstance(value, bool) or value not in names:
            raise ValueError(f"expected one of {', '.join(map(str, names))}")
        return value
    return Annotated[Any, AfterValidator(one_of)]


class Hinted(ValueError):
    """A field's refusal with the hint its parser gave (schema.read passes it on to the Refusal)."""

    def __init__(self, message: str, hint: str | None = None):
        super().__init__(message)
        self.hint = hint


def Parsed(parser: str, of=Any):   # noqa: N802
    """A value its owner's parser reads (schema.read(..., context={parser: parse})): the parsed value, or the parser's
    reason (ValueError, SimclusterError) as the refusal; for a format that belongs to a model (a PCIe link 'gen5x16').
    `of`: the declared shape the parser gets (a Section: its typed fields), so the declaration describes the block and
    the model's parser only builds it and applies the model's own rules."""
    def parsed(value, info: ValidationInfo):
        parse = (info.context or {}).get(parser)
        if parse is None:
            raise ValueError(f"the reader gave no {parser} parser")
        try:
            return parse(value)
        except SimclusterError as exc:
            raise Hinted(exc.message, exc.hint) from None
        except (ValueError, TypeError, AttributeError) as exc:
            raise ValueError(str(exc).splitlines()[0] if str(exc) else f"not a valid {parser}") from None
    return Annotated[of, AfterValidator(parsed)]


Flag = Annotated[bool, Field(strict=True)]      # true or false, nothing else


class Section(Document):
    """A declared section whose every key is known: an undeclared key is refused (a typo would be ignored)."""

    model_config = ConfigDict(strict=True, extra="forbid", allow_inf_nan=False, frozen=True, populate_by_name=True)


def Quantity(parse, low: float = 0.0, high: float = math.inf, above: bool = True, what: str = "quantity",  # noqa: N802
             si: bool = False):
    """A number with its unit as text ("13.9us", "100Gbps", "16GiB"; a plain number is SI), parsed by
    `parse` (units.parse_time / parse_size / parse_bandwidth), in range once parsed; `si`: the field's value is the
    parsed number in SI units (a reader's typed field), else the text as written (a document checked, not converted)."""
    convert = si

    def in_range(value):
        if isinstance(value, bool):
            raise ValueError(f"expected a {what} with its unit")
        try:
            si = float(parse(value))
        except SimclusterError as exc:
            raise ValueError(exc.message) from None
        if not math.isfinite(si) or si < low or si > high or (above and si == low):
            raise ValueError(f"expected a {what} {'>' if above else 'from'} {low:g} to {high:g} (SI units)")
        return si if convert else value
    return Annotated[Any, AfterValidator(in_range)]


Map = MapOf(Any)      # a mapping whose keys the reader behind the schema checks


def Record(required: dict | None = None, optional: dict | None = None, name: str = "Record"):   # noqa: N802
    """A document declared as data: `required` keys (missing: refused) and `optional` ones (absent: fine; present:
    must fit; null only where the type is Nullable)."""
    declared = [(k, v, ...) for k, v in (required or {}).items()] + [(k, v, None) for k, v in (optional or {}).items()]
    fields = {f"f{i}": (v, Field(default, alias=k)) for i, (k, v, default) in enumerate(declared)}   # a key may be
    return create_model(name, __base__=Document, **fields)    # any text ('model', 'copy'): declared by its alias
