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

import itertools
import re
import string
from dataclasses import dataclass, field
from typing import Protocol

from aioseq._checks import check_count
from aioseq.config import MAX_DIGITS, MAX_NUMBER
from aioseq.errors import ConfigurationError, NumberOutOfRange

__all__ = ["PERIOD_LABEL", "IdFormat", "SupportsMaxValue", "zero_pad"]

#: What a period label looks like: ``2026``, ``2026-03``, ``2026-03-31`` (a series' labels,
#: [`Series.period_of()`][aioseq.Series.period_of]).
PERIOD_LABEL = re.compile(r"[0-9]{4}(?:-[0-9]{2}){0,2}")


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

    **Templates** put the number anywhere and may hold a series' period label:

        >>> invoice_id = IdFormat(template="INV-{period}-{number:06}")
        >>> invoice_id.format(42, period="2026")
        'INV-2026-000042'
        >>> invoice_id.parse_period("INV-2026-000042")
        ('2026', 42)

    A template is text with one ``{number}`` (``{number:0N}``: zero-padded to N digits) and at
    most one ``{period}`` (``{{`` and ``}}`` stand for braces). ``{period}`` and ``{number}``
    must have text between them, so that a reader can tell where one ends. A series
    ([`Series`][aioseq.Series]) takes only a format with ``{period}``: without it, the numbers
    of two periods would look alike.

    Attributes:
        prefix: text before the digits (may be empty); not with ``template``.
        width: digits after the prefix, 1..38, zero-padded; ``None``: no padding (any length).
            With ``template``, the template's (``{number:06}``: 6).
        template: the identifier's text with its ``{number}`` and ``{period}`` tokens
            (``None``: ``prefix`` then the digits).

    Raises:
        ConfigurationError: a bad prefix, width or template.
    """

    prefix: str = ""
    width: int | None = None
    template: str | None = None
    # (a template's parts and pattern, set by __post_init__)
    _parts: tuple[tuple[str, str], ...] = field(default=(), init=False, repr=False, compare=False)
    _pattern: re.Pattern[str] | None = field(default=None, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not isinstance(self.prefix, str):
            raise ConfigurationError(f"prefix must be a str, not {type(self.prefix).__name__}")
        if self.template is not None:
            parts, width = _parse_template(self.template)
            if self.prefix or self.width not in (None, width):
                raise ConfigurationError(
                    f"template {self.template!r} says its prefix and width itself: pass"
                    " template= alone"
                )
            object.__setattr__(self, "width", width)
            object.__setattr__(self, "_parts", parts)
            object.__setattr__(self, "_pattern", _template_pattern(parts, width))
        if self.width is not None:
            check_count(self.width, "width", maximum=MAX_DIGITS)

    @property
    def has_period(self) -> bool:
        """Whether identifiers of this format hold a period label (a ``{period}`` token)."""
        return any(kind == "period" for kind, _ in self._parts)

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

    def format(self, n: int, *, period: str | None = None) -> str:
        """The identifier of number ``n``: ``prefix`` + its digits (zero-padded to ``width``),
        or the template with its tokens filled in.

        Parameters:
            n: the number.
            period: the period label for a ``{period}`` token (``"2026"``, ``"2026-03"``,
                ``"2026-03-31"``); required with one, refused without.

        Raises:
            NumberOutOfRange: ``n`` is negative or does not fit ``width`` digits.
            ConfigurationError: ``n`` is not an ``int``; ``period`` missing, not a label, or
                given to a format without ``{period}``.
        """
        if self.width is not None:
            digits = zero_pad(n, self.width)
        elif _check_number(n) < 0 or n > MAX_NUMBER:
            raise NumberOutOfRange(n)
        else:
            digits = str(n)
        if period is not None and not self.has_period:
            raise ConfigurationError(f"{self!r} has no {{period}} token: pass no period")
        if self.template is None:
            return self.prefix + digits
        if self.has_period and not (isinstance(period, str) and PERIOD_LABEL.fullmatch(period)):
            raise ConfigurationError(
                f"{self!r} needs period= a period label such as '2026' or '2026-03', not {period!r}"
            )
        filled = {"number": digits, "period": period, "text": ""}
        return "".join(filled[kind] or text for kind, text in self._parts)

    def parse(self, text: str) -> int:
        """The number in an identifier made by [`format()`][aioseq.IdFormat.format]:
        ``parse("ORD-000042") == 42``.
        Strict: the prefix, then exactly ``width`` ASCII digits (with no width: 1 to 38
        digits, no leading zeros but for ``0`` itself).

        Raises:
            ConfigurationError: ``text`` is not an identifier of this format (also a
                ``ValueError``).
        """
        if self.template is not None:
            return self._match(text)[1]
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

    def parse_period(self, text: str) -> tuple[str, int]:
        """The period label and the number in an identifier of a format with ``{period}``:
        ``parse_period("INV-2026-000042") == ("2026", 42)``. As strict as
        [`parse()`][aioseq.IdFormat.parse].

        Raises:
            ConfigurationError: the format has no ``{period}``, or ``text`` is not one of its
                identifiers.
        """
        if not self.has_period:
            raise ConfigurationError(f"{self!r} has no {{period}} token")
        return self._match(text)

    def _match(self, text: object) -> tuple[str, int]:
        pattern = self._pattern
        found = pattern.fullmatch(text) if pattern and isinstance(text, str) else None
        if found is None:
            raise ConfigurationError(f"not an identifier of template {self.template!r}: {text!r}")
        return found.groupdict().get("period") or "", int(found.group("number"))


def _parse_template(template: object) -> tuple[tuple[tuple[str, str], ...], int | None]:
    """A template's parts (``("text", literal)``, ``("number", "")``, ``("period", "")``)
    and its width.

    Raises:
        ConfigurationError: not a template of one ``{number}``, at most one ``{period}``,
            with text between them.
    """
    if not isinstance(template, str):
        raise ConfigurationError(f"template must be a str, not {type(template).__name__}")
    parts: list[tuple[str, str]] = []
    width: int | None = None
    try:
        fields = list(string.Formatter().parse(template))
    except ValueError as exc:
        raise ConfigurationError(f"template {template!r}: {exc}") from None
    for literal, name, spec, conversion in fields:
        if literal:
            parts.append(("text", literal))
        if name is None:
            continue
        if name not in ("number", "period") or conversion or (name == "period" and spec):
            raise ConfigurationError(
                f"template {template!r}: {{{name}{'!' + conversion if conversion else ''}"
                f"{':' + spec if spec else ''}}} is not a token; the tokens are {{number}},"
                " {number:0N} (N digits, zero-padded) and {period}"
            )
        if spec:
            if not re.fullmatch(r"0[0-9]{1,2}", spec or ""):
                raise ConfigurationError(
                    f"template {template!r}: {{number:{spec}}}: write {{number:0N}} for N"
                    " zero-padded digits"
                )
            width = check_count(int(spec), "template width", maximum=MAX_DIGITS)
        if (name, "") in parts:
            raise ConfigurationError(f"template {template!r} has {{{name}}} twice")
        parts.append((name, ""))
    if ("number", "") not in parts:
        raise ConfigurationError(f"template {template!r} has no {{number}}")
    if any(a[0] != "text" and b[0] != "text" for a, b in itertools.pairwise(parts)):
        raise ConfigurationError(
            f"template {template!r}: put text between {{period}} and {{number}}, or a reader"
            " cannot tell where one ends"
        )
    return tuple(parts), width


def _template_pattern(parts: tuple[tuple[str, str], ...], width: int | None) -> re.Pattern[str]:
    number = f"[0-9]{{{width}}}" if width is not None else f"0|[1-9][0-9]{{0,{MAX_DIGITS - 1}}}"
    regex = {
        "number": f"(?P<number>{number})",
        "period": f"(?P<period>{PERIOD_LABEL.pattern})",
        "text": "",
    }
    return re.compile("".join(regex[kind] or re.escape(text) for kind, text in parts))
