"""One fuzz case's command run through the CLI in-process and judged: its outcome ('ok', 'error', 'partial',
'cannot-run', or a finding: 'traceback', 'timeout', 'memory', 'bad-error', 'bad-exit', 'bad-number'), within
CASE_SECONDS of CPU time; the collective card fit memoised across cases (deterministic, so the answer is a fresh fit's)."""

from __future__ import annotations

import contextlib
import io
import json
import math
import re
import signal
import time

CASE_SECONDS = 20


class CaseTimeout(BaseException):
    """Raised by the alarm: a BaseException, so no `except Exception` on the way swallows it."""


def _alarm(signum, frame):
    raise CaseTimeout()


def _bad_numbers(doc, key: str = "") -> list[str]:
    """Where a JSON document holds NaN/inf, or a negative time, size or bandwidth."""
    if isinstance(doc, dict):
        return [b for k, v in doc.items() for b in _bad_numbers(v, str(k))]
    if isinstance(doc, list):
        return [b for v in doc for b in _bad_numbers(v, key)]
    if isinstance(doc, (int, float)) and not isinstance(doc, bool):
        if not math.isfinite(doc):
            return [f"{key}={doc}"]
        if doc < 0 and re.search(r"(_s|_Bps|_B|_bytes|_us|_GiB|_per_s)$", key):
            return [f"{key}={doc}"]
    return []


_FITS: dict = {}


def _memoised_fits() -> None:
    """The collective card fit (a few seconds of least squares) served from memory for inputs it has fitted
    before: a bundle case mutates one file, and the bundle's unchanged nccl-tests logs would be fitted again in
    every case. The key is the parsed input itself (repr of the traces, tunings and model), so a mutated log is
    fitted afresh; the fit is deterministic, so the answer is the one a fresh fit gives."""
    import copy

    from simcluster.fit import collective

    if getattr(collective.fit_card, "memoised", False):
        return
    fit_card = collective.fit_card

    def memoised(traces, tunings=None, model=None):
        key = repr((traces, tunings, model))
        if key not in _FITS:
            if len(_FITS) > 64:
                _FITS.clear()
            try:
                _FITS[key] = ("ok", fit_card(traces, tunings, model))
            except Exception as exc:  # noqa: BLE001 - the same refusal, raised again each time
                _FITS[key] = ("raise", exc)
        kind, value = _FITS[key]
        if kind == "raise":
            raise copy.copy(value)
        return copy.deepcopy(value)

    memoised.memoised = True
    collective.fit_card = memoised


def run_case(argv: list[str]) -> tuple[str, str]:
    """(outcome, detail): outcome 'ok', 'error', 'partial', or a failure kind."""
    from simcluster.cli import main

    out, err = io.StringIO(), io.StringIO()
    old = signal.signal(signal.SIGPROF, _alarm)
    signal.setitimer(signal.ITIMER_PROF, CASE_SECONDS)   # CPU seconds: a loaded machine's wall clock would time out anything
    start = time.process_time()
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(argv)
    except CaseTimeout:
        return "timeout", f"> {CASE_SECONDS} s"
    except MemoryError:
        return "memory", "MemoryError"
    except KeyboardInterrupt:   # the run itself is being stopped (bench/fuzz.py prints what it has)
        raise
    except BaseException as exc:  # noqa: BLE001 - any escape is the finding
        return "traceback", f"{type(exc).__name__}: {str(exc)[:200]}"
    finally:
        signal.setitimer(signal.ITIMER_PROF, 0)
        signal.signal(signal.SIGPROF, old)
    wall = time.process_time() - start
    if wall > CASE_SECONDS:    # the alarm was caught on the way and the command went on
        return "timeout", f"{wall:.1f} s"
    stderr = err.getvalue()
    if code == 2:  # one error line, last; before it only the inputs skipped on the way, one line each
        lines = [line for line in stderr.splitlines() if line.strip()]
        if not lines or not lines[-1].startswith("simcluster: error:") or \
                any(not line.startswith("simcluster: skipped") for line in lines[:-1]):
            return "bad-error", stderr[:300] or "(nothing on stderr)"
        return "error", lines[-1][:200]
    if code not in (0, 3, 4):   # 4: predict training's answer for a configuration that does not fit in memory
        return "bad-exit", f"exit {code}"
    text = out.getvalue()
    if "--json" in argv:
        try:
            bad = _bad_numbers(json.loads(text))
        except ValueError:
            bad = []
        if bad:
            return "bad-number", ", ".join(bad[:3])
    if "--json" not in argv and re.search(r"(?<![\w.])[-+]?(nan|inf)\b(?![\w.-])", text, re.I):
        return "bad-number", "nan or inf printed"
    return {0: "ok", 3: "partial", 4: "cannot-run"}[code], f"{wall:.2f} s"
