"""The config keys' numeric types: pydantic checks the type strictly first (a string is not a
number), then the range from `oiexec.core.numbers`, whose message `oiexec.config.problems`
shows with the key and its origin. Apart from the ranges so that the command line, which
checks the same ranges, does not import pydantic to show `--help`."""

from __future__ import annotations

from typing import Annotated

from pydantic import AfterValidator

from oiexec.core.numbers import COUNT, COUNT_OR_ZERO, MILLISECONDS, PRICE, SECONDS, SIZE

__all__ = [
    "CountKey",
    "CountOrZeroKey",
    "MillisecondsKey",
    "PriceKey",
    "SecondsKey",
    "SizeKey",
]

CountKey = Annotated[int, AfterValidator(COUNT.check)]
CountOrZeroKey = Annotated[int, AfterValidator(COUNT_OR_ZERO.check)]
SizeKey = Annotated[int, AfterValidator(SIZE.check)]
SecondsKey = Annotated[float, AfterValidator(SECONDS.check)]
MillisecondsKey = Annotated[int, AfterValidator(MILLISECONDS.check)]
PriceKey = Annotated[float, AfterValidator(PRICE.check)]
