"""The error hierarchy. Every user-facing error renders as one line naming where and what; the command line exits
with EXIT_USAGE after printing it (simcluster/cli.py)."""

from __future__ import annotations

EXIT_USAGE = 2       # a SimclusterError: bad input or usage, printed as one line
EXIT_PARTIAL = 3     # something was skipped (named on stderr); the rest was done
EXIT_CANNOT_RUN = 4  # predict training: a configuration that does not fit in GPU memory (its times are for reference only)


class SimclusterError(Exception):
    """Base of every error simcluster raises for bad input; the CLI prints it as one line."""

    def __init__(self, message: str, *, where: str | None = None, hint: str | None = None):
        self.message, self.where, self.hint = message, where, hint
        super().__init__(self.one_line())

    def one_line(self) -> str:
        text = f"{self.where}: {self.message}" if self.where else self.message
        if self.hint:
            text += f" ({self.hint})"
        return " ".join(text.split())


class UnitError(SimclusterError):
    """A quantity string that does not parse, or has the wrong dimension."""


class ScenarioError(SimclusterError):
    """A scenario file that is not valid: unknown key, bad value, missing model card."""


class TraceFormatError(SimclusterError):
    """A trace file that is not the tool output it claims to be, or is empty or truncated."""


class CalibrationError(SimclusterError):
    """A fit that cannot be made from the data given (too few points, no convergence)."""


class ModelCardError(SimclusterError):
    """A model card that is missing, malformed, or of the wrong kind."""


class AnswerError(SimclusterError):
    """An answer that would carry a NaN, an infinity or a negative time, size, rate or cost: the inputs named are
    outside what the model can answer (simcluster.output refuses it before it is printed or written)."""
