"""Sequence numbers as identifiers: ``ORD-000042``, and zero-padded string sort keys.

Zero padding makes text sort like the numbers it holds (``"000010" > "000009"``, while
``"10" < "9"``): string sort keys, S3 keys, file names and identifiers that people sort by eye
need it. A width is a promise about the counter's range: ``width=6`` holds 1..999,999. A number
that does not fit raises [`NumberOutOfRange`][aioseq.errors.NumberOutOfRange] before anything is
written (never a seventh digit that would sort ``ORD-1000000`` before ``ORD-200000``), so choose the
width for the counter's whole life; [`IdFormat.remaining()`][aioseq.IdFormat.remaining] tells how
much room is left.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from aioseq._checks import check_count
from aioseq.config import MAX_DIGITS, MAX_NUMBER
from aioseq.errors import ConfigurationError, NumberOutOfRange

__all__ = ["IdFormat", "SupportsMaxValue", "zero_pad"]


class SupportsMaxValue(Protocol):
    """A counter with a highest number (every strategy's ``max_value``)."""

    @property
    def max_value(self) -> int: ...


def _check_number(n: object) -> int:
    if not isinstance(n, int) or isinstance(n, bool):
        raise ConfigurationError(f"a sequence number must be an int, not {type(n).__name__}")
    return n


def zero_pad(n: int, width: int) -> str:
    """``n`` as exactly ``width`` decimal digits with zeros in front: ``zero_pad(42, 6)`` is
    ``"000042"``. This is how [`SortKeyCounter`][aioseq.SortKeyCounter] writes string sort keys
    (``zero_pad=``) and how [`IdFormat`][aioseq.IdFormat] pads.

    Parameters:
        n: a whole number, ``0 <= n <= 10**width - 1``.
        width: digits, 1..38 (DynamoDB's Number holds 38).

    Raises:
        NumberOutOfRange: ``n`` is negative or has more than ``width`` digits.
        ConfigurationError: ``n`` or ``width`` is not a valid ``int``.
    """
    check_count(width, "width", maximum=MAX_DIGITS)
    text = str(_check_number(n))
    if n < 0 or len(text) > width:
        raise NumberOutOfRange(n, f"{n} does not fit {width} zero-padded digits")
    return text.zfill(width)


@dataclass(frozen=True)
class IdFormat:
    """A prefixed, optionally zero-padded identifier for sequence numbers.

        >>> order_id = IdFormat(prefix="ORD-", width=6)
        >>> order_id.format(42)
        'ORD-000042'
        >>> order_id.parse("ORD-000042")
        42

    Identifiers of one format sort as their numbers do when ``width`` is set. Use it in the
    item a counter stores, e.g. ``orders.put(lambda n: {"pk": "orders", "sk": n, "order_id":
    order_id.format(n)})``: if ``n`` no longer fits, ``put`` raises ``NumberOutOfRange`` and
    nothing is written (the transactional counter stays gapless). For string sort keys use
    [`SortKeyCounter`][aioseq.SortKeyCounter]'s ``zero_pad=``, which pads the same way.

    Attributes:
        prefix: text before the digits (may be empty).
        width: digits after the prefix, 1..38, zero-padded; ``None``: no padding (any length).

    Raises:
        ConfigurationError: a bad prefix or width.
    """

    prefix: str = ""
    width: int | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.prefix, str):
            raise ConfigurationError(f"prefix must be a str, not {type(self.prefix).__name__}")
        if self.width is not None:
            check_count(self.width, "width", maximum=MAX_DIGITS)

    @property
    def max_number(self) -> int:
        """The largest number this format holds: ``10**width - 1`` (``MAX_NUMBER`` unpadded)."""
        return MAX_NUMBER if self.width is None else int(10**self.width) - 1

    def remaining(self, current: int) -> int:
        """How many more numbers fit after ``current`` (a counter's value, e.g. from
        ``await counter.current()``): ``max_number - current``, 0 when it has run out. Check
        it at start-up to be warned long before [`format()`][aioseq.IdFormat.format] starts to
        refuse."""
        return max(0, self.max_number - _check_number(current))

    def check_counter(self, counter: SupportsMaxValue | int) -> None:
        """Check up front that every number a counter can hand out fits this format.

        Give the counter ``max_value=id_format.max_number`` (every strategy takes it) and it
        stops where the format does: past it, ``NumberOutOfRange`` is raised and nothing is
        written, so no number is taken that cannot be formatted.

        Parameters:
            counter: a counter (anything with a ``max_value`` attribute), or its highest
                number as an ``int``.

        Raises:
            ConfigurationError: the counter can hand out numbers above
                [`max_number`][aioseq.IdFormat.max_number].
        """
        highest = counter if isinstance(counter, int) else counter.max_value
        if _check_number(highest) > self.max_number:
            raise ConfigurationError(
                f"the counter can reach {highest}, which does not fit {self!r}"
                f" (at most {self.max_number}); make it with max_value={self.max_number}"
            )

    def format(self, n: int) -> str:
        """The identifier of number ``n``: ``prefix`` + its digits (zero-padded to ``width``).

        Raises:
            NumberOutOfRange: ``n`` is negative or does not fit ``width`` digits.
            ConfigurationError: ``n`` is not an ``int``.
        """
        if self.width is not None:
            return self.prefix + zero_pad(n, self.width)
        if _check_number(n) < 0 or n > MAX_NUMBER:
            raise NumberOutOfRange(n)
        return f"{self.prefix}{n}"

    def parse(self, text: str) -> int:
        """The number in an identifier made by [`format()`][aioseq.IdFormat.format]:
        ``parse("ORD-000042") == 42``.
        Strict: the prefix, then exactly ``width`` ASCII digits (with no width: 1 to 38
        digits, no leading zeros but for ``0`` itself).

        Raises:
            ConfigurationError: ``text`` is not an identifier of this format (also a
                ``ValueError``).
        """
        if not isinstance(text, str) or not text.startswith(self.prefix):
            raise ConfigurationError(f"not an identifier with prefix {self.prefix!r}: {text!r}")
        digits = text[len(self.prefix) :]
        valid = digits.isascii() and digits.isdigit()
        if self.width is not None:
            valid = valid and len(digits) == self.width
        else:
            canonical = digits == "0" or not digits.startswith("0")
            valid = valid and canonical and len(digits) <= MAX_DIGITS
        if not valid:
            expected = f"{self.width} digits" if self.width is not None else "digits"
            raise ConfigurationError(f"not an identifier {self.prefix!r} + {expected}: {text!r}")
        return int(digits)
