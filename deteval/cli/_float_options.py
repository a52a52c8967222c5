"""argparse ``type`` values of the parser's float flags (:mod:`deteval.cli.parser`)."""

from __future__ import annotations

import argparse
import math


class _FloatOption:
    """An argparse ``type`` for a float flag: a finite number, in a range when given.

    ``float()`` alone takes ``nan``, ``inf`` and ``1e999`` (infinity): such a value went on to
    a traceback (a JSON document cannot hold it) or a refusal far from the flag. Here it is a
    usage error naming the flag and what it takes (exit 2).

    Examples
    --------
    >>> _FloatOption(0, 1)("0.5"), _FloatOption()("-3")
    (0.5, -3.0)
    >>> _FloatOption(0, 1)("nan")
    Traceback (most recent call last):
    argparse.ArgumentTypeError: expected a number in [0, 1], found nan
    """

    is_float_option = True  # tests find every float flag of the parser by this mark

    def __init__(
        self,
        low: float | None = None,
        high: float | None = None,
        *,
        is_open: bool = False,
        hint: str = "",
    ) -> None:
        self.low, self.high, self.is_open = low, high, is_open
        if low is None:
            self.expected = "a finite number" + (f" ({hint})" if hint else "")
        else:
            brackets = "()" if is_open else "[]"
            self.expected = f"a number in {brackets[0]}{low:g}, {high:g}{brackets[1]}" + (
                f", {hint}" if hint else ""
            )
        self.__name__ = "number"

    def __call__(self, text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            value = math.nan
        is_in = math.isfinite(value)
        if is_in and self.low is not None and self.high is not None:
            is_in = self.low < value < self.high if self.is_open else self.low <= value <= self.high
        if not is_in:
            raise argparse.ArgumentTypeError(f"expected {self.expected}, found {text}")
        return value


#: a score cut: any finite number (scores are not limited to [0, 1])
_SCORE = _FloatOption(hint="a score")
#: a confidence level of bootstrap intervals
_LEVEL = _FloatOption(0, 1, is_open=True, hint="e.g. 0.95")
#: an IoU threshold
_IOU = _FloatOption(0, 1)
