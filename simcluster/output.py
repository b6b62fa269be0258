"""The output layer's one check: every number simcluster prints or writes (JSON on stdout, cards, results rows,
the documents a text report is rendered from) is finite, and every time, size, rate, count or cost is >= 0.

A model that produced NaN or infinity from extreme inputs is refused here with one line naming the key and the
input (`what`), instead of printing 'nan' or writing `.nan` into a card. `dumps` is json.dumps after the check
(allow_nan=False, so nothing slips past it).
"""

from __future__ import annotations

import json
import math
import re

from simcluster.errors import AnswerError

# keys whose values are quantities that cannot be negative: times, sizes, rates, counts, money, energy
NON_NEGATIVE = re.compile(r"(_s|_Bps|_GBps|_Gbps|_MBps|_tflops|_TFLOPS|_B|_bytes|_us|_ms|_ns|_GiB|_MiB|_GB|_per_s|_per_step_s|_usd|_USD|_hours|_days|_J|_W|_Wh|"
                          r"_kWh|_flops|_FLOPS)$|^(nodes|gpus|ranks|cores|count|samples|steps|points)$")


def _path(trail: tuple) -> str:
    out = ""
    for key in trail:
        out = f"{out}[{key}]" if isinstance(key, int) else (f"{out}.{key}" if out else str(key))
    return out


def problems(doc, limit: int = 1) -> list[str]:
    """Up to `limit` 'key = value' of the numbers in `doc` that are not finite, or negative under a quantity key (a
    number's dotted path is spelled out only when it is reported)."""
    found: list[str] = []
    stack = [((), "", doc)]
    while stack and len(found) < limit:
        trail, key, value = stack.pop()
        if isinstance(value, dict):
            stack.extend((trail + (k,), str(k), v) for k, v in reversed(list(value.items())))
        elif isinstance(value, (list, tuple)):
            stack.extend((trail + (i,), key, v) for i, v in reversed(list(enumerate(value))))
        elif isinstance(value, float) and not math.isfinite(value):
            found.append(f"{_path(trail) or 'the value'} = {value}")
        elif isinstance(value, (int, float)) and not isinstance(value, bool) and value < 0 and NON_NEGATIVE.search(key):
            found.append(f"{_path(trail)} = {value:g}")
    return found


def check(doc, what: str):
    """doc, after checking that every number in it can be printed (problems() is empty); else AnswerError naming
    the first bad key and `what` (the input or command that produced it)."""
    bad = problems(doc)
    if bad:
        raise AnswerError(f"the answer would hold {bad[0]}: the inputs are outside what the model can answer",
                          where=what, hint="check the input's counts, sizes and rates")
    return doc


def dumps(doc, what: str, **kwargs) -> str:
    """json.dumps of a checked document."""
    return json.dumps(check(doc, what), allow_nan=False, **kwargs)
