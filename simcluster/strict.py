"""The one strict reader: every YAML document simcluster reads (scenarios, model cards, DLIO workloads) and every
JSON document (tool output, bundle manifests, results stores) comes through here, and so does every field it takes
from them.

A file that cannot be read, is not UTF-8 text (a binary file), is larger than MAX_FILE_BYTES, nests deeper than
MAX_DEPTH, or expands (through YAML aliases) to more than MAX_NODES nodes is refused with one line naming the file
and, where there is one, the line. Anchors and aliases are allowed; a 'billion laughs' document is not: the
expanded size is counted on the composed node graph (shared nodes counted once per use, memoised), without
expanding it. Fields are read with `field`, which turns a unit or type mistake into one line naming the key.
"""

from __future__ import annotations

import copy
import json
import math
import os
import re
from pathlib import Path

import yaml

from simcluster.errors import SimclusterError, UnitError

MAX_FILE_BYTES = 16 * 2**20
MAX_DEPTH = 64
MAX_NODES = 200_000


def read_text(path: str | Path, error: type[SimclusterError] = SimclusterError, what: str = "file") -> str:
    """A text file's contents, or one line saying why not (missing, a folder, binary, not UTF-8, too large)."""
    path = Path(path)
    try:
        size = path.stat().st_size
        if size > MAX_FILE_BYTES:
            raise error(f"the {what} is {size / 2**20:.0f} MiB; at most {MAX_FILE_BYTES // 2**20} MiB is read", where=str(path))
        data = path.read_bytes()
    except OSError as exc:
        raise error(f"cannot read the {what}: {exc.strerror or exc}", where=str(path)[:300]) from None
    except ValueError as exc:    # a NUL byte in the path
        raise error(f"cannot read the {what}: {exc}", where=repr(str(path))[:300]) from None
    if b"\x00" in data:
        raise error(f"not a text file (a NUL byte at offset {data.index(0)}): expected a {what}", where=str(path))
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise error(f"not UTF-8 text (byte 0x{data[exc.start]:02x} at offset {exc.start}): expected a {what}",
                    where=str(path)) from None


def _check_shape(root: yaml.Node, where: str, error: type[SimclusterError]) -> None:
    """Refuse a node graph deeper than MAX_DEPTH or larger than MAX_NODES once aliases are expanded."""
    size: dict[int, int] = {}
    depth: dict[int, int] = {}
    stack: list[tuple[yaml.Node, bool, int]] = [(root, False, 1)]
    while stack:
        node, done, level = stack.pop()
        if level > MAX_DEPTH:
            raise error(f"nested more than {MAX_DEPTH} levels deep", where=f"{where}:{node.start_mark.line + 1}")
        key = id(node)
        children = _children(node)
        if done:
            size[key] = 1 + sum(size[id(c)] for c in children)
            depth[key] = 1 + max((depth[id(c)] for c in children), default=0)
            if size[key] > MAX_NODES:
                raise error(f"the document expands to more than {MAX_NODES:,} values (YAML aliases?)",
                            where=f"{where}:{node.start_mark.line + 1}")
            continue
        if key in size:
            continue
        stack.append((node, True, level))
        stack.extend((c, False, level + 1) for c in children if id(c) not in size)


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.MappingNode):
        return [n for pair in node.value for n in pair]
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    return []


def line_index(node, prefix: str = "", out: dict[str, int] | None = None) -> dict[str, int]:
    """Dotted key -> 1-based line, from the composed node tree (each shared node walked once)."""
    out = {} if out is None else out
    stack = [(node, prefix)]
    seen: set[int] = set()
    while stack:
        node, prefix = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, yaml.MappingNode):
            for k, v in node.value:
                dotted = f"{prefix}.{k.value}" if prefix else str(k.value)
                out.setdefault(dotted, k.start_mark.line + 1)
                stack.append((v, dotted))
        elif isinstance(node, yaml.SequenceNode):
            for i, item in enumerate(node.value):
                dotted = f"{prefix}[{i}]"
                out.setdefault(dotted, item.start_mark.line + 1)
                stack.append((item, dotted))
    return out


class StrictLoader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):   # libyaml's parser where PyYAML has it: ~10x faster
    """SafeLoader without YAML 1.1's base-60 numbers: `3:1` (a ratio) and `1:30` stay strings instead of becoming
    181 and 90, so a field that expects a number refuses them by name, and a ratio field can read them."""


StrictLoader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag not in ("tag:yaml.org,2002:int", "tag:yaml.org,2002:float")]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()}
StrictLoader.add_implicit_resolver("tag:yaml.org,2002:int", re.compile(r"""^(?:[-+]?0b[0-1_]+
    |[-+]?0[0-7_]+
    |[-+]?(?:0|[1-9][0-9_]*)
    |[-+]?0x[0-9a-fA-F_]+)$""", re.X), list("-+0123456789"))
StrictLoader.add_implicit_resolver("tag:yaml.org,2002:float", re.compile(r"""^(?:[-+]?(?:[0-9][0-9_]*)\.[0-9_]*(?:[eE][-+][0-9]+)?
    |\.[0-9][0-9_]*(?:[eE][-+][0-9]+)?
    |[-+]?\.(?:inf|Inf|INF)
    |\.(?:nan|NaN|NAN))$""", re.X), list("-+0123456789."))


def _check_duplicates(root: yaml.Node, where: str, error: type[SimclusterError]) -> None:
    """Refuse a mapping that gives one key twice (YAML's last-one-wins would silently drop the first)."""
    stack, seen = [root], set()
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, yaml.MappingNode):
            first: dict = {}
            for k, _ in node.value:
                if isinstance(k, yaml.ScalarNode) and k.value != "<<":
                    if k.value in first:
                        raise error(f"key '{k.value}' given twice in one mapping (first at line {first[k.value]}); "
                                    "YAML would keep only the last", where=f"{where}:{k.start_mark.line + 1}")
                    first[k.value] = k.start_mark.line + 1
        stack.extend(_children(node))


_CACHE: dict[tuple, object] = {}
CACHE_ENTRIES = 512          # documents kept (a sweep re-reads the same cards for every point)


def load_yaml(path: str | Path, error: type[SimclusterError] = SimclusterError, what: str = "YAML file",
              lines: bool = False, schema=None):
    """The document of a YAML file (safe_load only), checked for size, depth and alias expansion; with
    `lines`, also its dotted-key -> line index. An empty document is None. A file read before and unchanged
    since (same path, size and mtime) is not parsed again: the caller gets a deep copy of the first reading.
    With `schema` (a schema.Document: simcluster/documents.py declares one per file kind), a document that is not
    empty is checked against it, a violation one line FILE:LINE: KEY: why."""
    if schema is not None:
        doc, index = load_yaml(path, error, what, lines=True)
        if doc is not None:
            schema.check(doc, str(path), error, index)
        return (doc, index) if lines else doc
    try:
        st = os.stat(path)
        key = (os.path.realpath(path), st.st_mtime_ns, st.st_size, st.st_ino, error, what, lines)
    except (OSError, TypeError, ValueError):
        key = None
    if key is not None and key in _CACHE:
        return copy.deepcopy(_CACHE[key])
    result = _load_yaml(path, error, what, lines)
    if key is not None:
        if len(_CACHE) >= CACHE_ENTRIES:
            _CACHE.pop(next(iter(_CACHE)))
        _CACHE[key] = copy.deepcopy(result)
    return result


def _load_yaml(path, error, what, lines):
    text = read_text(path, error, what)
    where = str(path)
    try:
        loader = StrictLoader(text)   # parsed once: the checks and the document read the same node graph
        try:
            root = loader.get_single_node()
            if root is not None:
                _check_shape(root, where, error)
                _check_duplicates(root, where, error)
            doc = loader.construct_document(root) if root is not None else None
        finally:
            loader.dispose()
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        raise error(f"not valid YAML ({getattr(exc, 'problem', None) or exc})",
                    where=f"{where}:{mark.line + 1}" if mark else where) from None
    except RecursionError:
        raise error(f"nested too deeply to read (more than {MAX_DEPTH} levels are refused)", where=where) from None
    if not lines:
        return doc
    return doc, (line_index(root) if root is not None else {})


MAX_JSON_INT_DIGITS = 20      # 2**64 has 20 digits: no count, size or time a tool writes is longer


def _refuse_constant(name: str):
    raise json.JSONDecodeError(f"{name} is not a measurement", name, 0)


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise json.JSONDecodeError(f"{text} is out of range (not a finite number)", text, 0)
    return value


def _bounded_int(text: str) -> int:
    if len(text.lstrip("-")) > MAX_JSON_INT_DIGITS:
        raise json.JSONDecodeError(f"an integer of {len(text)} digits is out of range", text[:30], 0)
    return int(text)


_DECODER = json.JSONDecoder(parse_constant=_refuse_constant, parse_float=_finite_float, parse_int=_bounded_int)


def _check_json_depth(doc, text: str, pos: int) -> None:
    stack = [(doc, 1)]
    while stack:
        node, level = stack.pop()
        if level > MAX_DEPTH:
            raise json.JSONDecodeError(f"nested more than {MAX_DEPTH} levels deep", text, pos)
        if isinstance(node, dict):
            stack.extend((v, level + 1) for v in node.values() if isinstance(v, (dict, list)))
        elif isinstance(node, list):
            stack.extend((v, level + 1) for v in node if isinstance(v, (dict, list)))


def decode_json(text: str, start: int = 0):
    """(document, end) of the JSON value at `start` (JSONDecoder.raw_decode), strictly: NaN, Infinity, a float that
    overflows, an integer of more than MAX_JSON_INT_DIGITS digits and nesting deeper than MAX_DEPTH are a
    json.JSONDecodeError (the one exception each reader turns into its one-line error), never a RecursionError,
    OverflowError or ValueError from further in."""
    try:
        doc, end = _DECODER.raw_decode(text, start)
    except RecursionError:
        raise json.JSONDecodeError(f"nested more than {MAX_DEPTH} levels deep", text, start) from None
    except json.JSONDecodeError as exc:
        if exc.doc is text:
            raise
        at = text.find(exc.doc, start) if exc.doc else -1     # a hook's refusal: its token, located in the text
        raise json.JSONDecodeError(exc.msg, text, at if at >= 0 else start) from None
    except ValueError as exc:      # int digits limit, a float parse_float refused in its own way
        raise json.JSONDecodeError(str(exc).split(";")[0][:80] or "not a number", text, start) from None
    _check_json_depth(doc, text, start)
    return doc, end


def loads_json(text: str):
    """The one JSON document in `text` (json.loads, strictly as decode_json says)."""
    if not isinstance(text, str):
        raise json.JSONDecodeError("not text", "", 0)
    begin = len(text) - len(text.lstrip())
    doc, end = decode_json(text, begin)
    if text[end:].strip():
        raise json.JSONDecodeError("Extra data", text, end)
    return doc


def load_json(path: str | Path, error: type[SimclusterError] = SimclusterError, what: str = "JSON file", schema=None):
    """The document of a JSON file, read as read_text and loads_json say; any refusal is one line naming the file
    and the line. With `schema` (a schema.Document), checked against it (load_yaml says how)."""
    text = read_text(path, error, what)
    try:
        doc = loads_json(text)
    except json.JSONDecodeError as exc:
        raise error(f"not valid JSON ({exc.msg}): expected a {what}", where=f"{path}:{exc.lineno}") from None
    if schema is not None:
        schema.check(doc, str(path), error, json_lines(text))
    return doc


class json_lines(dict):   # noqa: N801 - used as a function that returns an index
    """A dotted key -> line index of a JSON text, found lazily (only an error asks): the line of the first
    `"NAME":` of the key's last name; a key whose name is not in the text has none."""

    def __init__(self, text: str):
        super().__init__()
        self.text = text

    def __contains__(self, key) -> bool:
        return self.get(key) is not None

    def __getitem__(self, key):
        return self.get(key)

    def get(self, key, default=None):
        name = re.split(r"[.\[]", str(key))[-1]
        at = self.text.find(json.dumps(name) + ":") if name and not name.endswith("]") else -1
        return self.text.count("\n", 0, at) + 1 if at >= 0 else default


def short(value, limit: int = 60) -> str:
    """repr of a value for an error message, cut to `limit` characters."""
    text = repr(value)
    return text if len(text) <= limit else text[:limit - 3] + "..."


def field(doc, key: str, where: str, parse=None, error: type[SimclusterError] = SimclusterError):
    """doc[key], parsed; a missing key or a value `parse` refuses is one line naming `where` and the key."""
    if not isinstance(doc, dict):
        raise error(f"expected a mapping with key '{key}', got {type(doc).__name__}", where=where)
    if key not in doc:
        raise error(f"missing key '{key}'", where=where)
    if parse is None:
        return doc[key]
    try:
        return parse(doc[key])
    except UnitError as exc:
        raise error(f"key '{key}': {exc.one_line()}", where=where) from None
    except ValueError as exc:   # the parser's reason (a range, a unit) when it gives one
        why = str(exc).splitlines()[0] if str(exc) else ""
        raise error(f"key '{key}': {short(doc[key])} is not a valid value" + (f" ({why})" if why else ""), where=where) from None
    except (TypeError, AttributeError, ArithmeticError):
        raise error(f"key '{key}': {short(doc[key])} is not a valid value", where=where) from None


def known_keys(doc: dict, allowed, where: str, error: type[SimclusterError] = SimclusterError) -> dict:
    """doc, after checking it has no key outside `allowed`."""
    if not isinstance(doc, dict):
        raise error(f"expected a mapping, got {type(doc).__name__}", where=where)
    unknown = sorted(str(k) for k in doc if k not in allowed)
    if unknown:
        raise error(f"unknown key '{unknown[0]}'", where=where, hint=f"known keys: {', '.join(sorted(allowed))}")
    return doc


def positive(value: float, name: str = "value") -> float:
    """value if it is a finite number > 0 (for parse= of bandwidths, sizes, rates), else ValueError."""
    if not math.isfinite(value) or value <= 0:
        raise ValueError(f"{name} must be a finite number > 0")
    return value


MIN_RATE_Bps, MAX_RATE_Bps = 1e3, 1e15      # 8 kbit/s to 8 Pbit/s: any link, bus or device a card describes


def rate(value: float) -> float:
    """value if it is a bandwidth a card can mean (bytes/s), else ValueError (0 would divide, 1e-300 gives inf)."""
    if not MIN_RATE_Bps <= value <= MAX_RATE_Bps:
        raise ValueError(f"a bandwidth must be from {MIN_RATE_Bps:g} to {MAX_RATE_Bps:g} bytes/s")
    return value


def count(value, high: int = 2**20) -> int:
    """A whole number from 1 to `high` (channels, frames, SMs, GPUs per node), else ValueError."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or int(value) != value \
            or not 1 <= value <= high:
        raise ValueError(f"expected a whole number from 1 to {high}")
    return int(value)


def non_negative(value: float, name: str = "value") -> float:
    if not math.isfinite(value) or value < 0:
        raise ValueError(f"{name} must be a finite number >= 0")
    return value
