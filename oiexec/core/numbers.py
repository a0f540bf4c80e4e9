"""The ranges of numbers flags and config keys accept, defined once for both parsers.

A number a user gives is a count, a size, a duration or a price, so it is finite: `inf` and
`nan` are not numbers here (`--max-cost nan` would compare false with every cost and never
stop the run; `--timeout inf` overflows the clock). Each range says whether 0 means something
(0 retries; 0 for a sandbox limit meaning "unlimited") or is refused (a window of 0 tokens),
and has a ceiling: whole numbers fit TOML's 64-bit integers, and durations stay below what
the operating system's timers take (about 292 years), so no value overflows where it is used.

The click flags (`oiexec.cli.options.NumberParam`) and the config keys
(`oiexec.config.number_keys`) both check through `NumberRange.check`, so a flag and a key
with the same meaning say the same.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

__all__ = [
    "COUNT",
    "COUNT_OR_ZERO",
    "MAX_INT",
    "MAX_SECONDS",
    "MILLISECONDS",
    "POSITIVE",
    "PRICE",
    "SECONDS",
    "SIZE",
    "NumberRange",
]

#: TOML's integers are 64-bit; Codex's keys are i64/u64.
MAX_INT = 2**63 - 1
#: One billion seconds (about 31 years): below every timer's limit (`threading.TIMEOUT_MAX`
#: is about 292 years), far above any run.
MAX_SECONDS = 1_000_000_000


@dataclass(frozen=True)
class NumberRange:
    """Finite numbers from `minimum` (excluded when `min_open`) to `maximum`; whole numbers
    only when `integer`."""

    integer: bool
    minimum: float
    maximum: float
    min_open: bool = False
    #: What the number counts, for messages ("seconds", "USD").
    unit: str = ""

    def describe(self) -> str:
        """`a whole number >= 1`, `a number of seconds > 0 and <= 1000000000`."""
        kind = "a whole number" if self.integer else "a finite number"
        if self.unit:
            kind += f" of {self.unit}"
        low = f"{'>' if self.min_open else '>='} {_show(self.minimum)}"
        if not self._shows_maximum():
            return f"{kind} {low}"
        return f"{kind} {low} and <= {_show(self.maximum)}"

    def _shows_maximum(self) -> bool:
        return self.maximum < MAX_INT

    def problem(self, value: object) -> str | None:
        """What is wrong with `value` in this range, in words; None when it is allowed."""
        if isinstance(value, bool) or not isinstance(value, int | float):
            return f"expected {self.describe()}"
        if self.integer and not isinstance(value, int):
            return f"expected {self.describe()}"
        # (A float is checked, never an int: an int beyond a float's range has no float.)
        if isinstance(value, float) and not math.isfinite(value):
            return f"expected {self.describe()}"
        if value > self.maximum:
            # A bound `describe` leaves out (the 64-bit ceiling) is named when it is hit.
            note = "" if self._shows_maximum() else f" and <= {_show(self.maximum)}"
            return f"expected {self.describe()}{note}"
        if value <= self.minimum if self.min_open else value < self.minimum:
            return f"expected {self.describe()}"
        return None

    def check(self, value: Any) -> Any:
        """`value` when allowed; a `ValueError` saying what is allowed otherwise."""
        problem = self.problem(value)
        if problem is not None:
            raise ValueError(problem)
        return value

    def parse(self, text: str) -> int | float:
        """A command-line word as a number in this range; `ValueError` (with the words a user
        reads) when it is not one. Only digits are numbers: `1e3` is a decimal, not an
        integer, and a word such as `inf`, `nan` or `infinity` is refused outright."""
        word = text.strip()
        try:
            value: int | float = int(word, 10) if self.integer else float(word)
        except ValueError:
            raise ValueError(f"{text!r} is not {self.describe()}") from None
        problem = self.problem(value)
        if problem is not None:
            raise ValueError(f"{text!r}: {problem}")
        return value


def _show(number: float) -> str:
    return str(int(number)) if float(number).is_integer() else f"{number:g}"


#: At least 1: turns, attempts, tokens, jobs, a context window.
COUNT = NumberRange(integer=True, minimum=1, maximum=MAX_INT)
#: 0 allowed: retries, bytes of project doc; sandbox limits (0 there is "unlimited").
COUNT_OR_ZERO = NumberRange(integer=True, minimum=0, maximum=MAX_INT)
#: A sandbox size limit in MiB (0: unlimited); its bytes must fit in 64 bits.
SIZE = NumberRange(integer=True, minimum=0, maximum=2**43 - 1, unit="MiB")
#: A duration in seconds: more than 0 (a zero timeout would fail everything at once).
SECONDS = NumberRange(integer=False, minimum=0, min_open=True, maximum=MAX_SECONDS, unit="seconds")
#: A duration in whole milliseconds, same ceiling.
MILLISECONDS = NumberRange(
    integer=True, minimum=0, min_open=True, maximum=MAX_SECONDS * 1000, unit="milliseconds"
)
#: A price per million tokens: free is fine, negative is not.
PRICE = NumberRange(integer=False, minimum=0, maximum=math.inf, unit="USD")
#: A positive amount (a cost budget).
POSITIVE = NumberRange(integer=False, minimum=0, min_open=True, maximum=math.inf, unit="USD")
