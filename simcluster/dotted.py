"""Dotted keys into a scenario document: 'jobs[0].parallel.tp', 'machine.nic.card'. Sweeps set them per point
(sweep/spec.py) and what-if variants per variant (scenario.py, `variants: {label: {set: {...}}}`)."""

from __future__ import annotations

import re

_STEP = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)((?:\[\d+\])*)")


def parse_key(key: str) -> list[str | int]:
    """'jobs[0].parallel.tp' -> ['jobs', 0, 'parallel', 'tp']; anything else is a ValueError."""
    out: list[str | int] = []
    for part in key.split("."):
        m = _STEP.fullmatch(part)
        if not m:
            raise ValueError(f"{key!r} is not a dotted key (write e.g. machine.nodes or jobs[0].parallel.tp)")
        out.append(m.group(1))
        out.extend(int(i) for i in re.findall(r"\[(\d+)\]", m.group(2)))
    return out


def set_key(doc: dict, key: str, value) -> dict:
    """A copy of `doc` with the dotted `key` set to `value` (only the path to it is copied)."""
    steps = parse_key(key)

    def put(node, i):
        step = steps[i]
        if isinstance(step, int):
            if not isinstance(node, list) or step >= len(node):
                raise ValueError(f"{key}: no item [{step}] there")
            out = list(node)
        else:
            if node is None:
                node = {}
            if not isinstance(node, dict):
                raise ValueError(f"{key}: '{step}' is inside a value that is not a mapping")
            out = dict(node)
        if i == len(steps) - 1:
            out[step] = value
        else:
            out[step] = put(node[step] if (isinstance(step, int) or step in node) else None, i + 1)
        return out

    return put(doc, 0)
