"""Identifiers (``ORD-000042``) and zero padding, with no server: aioseq.formatting's
``IdFormat`` and ``zero_pad`` (a counter bounded by a format: tests/integration/test_formatting.py).
"""

from __future__ import annotations

import random

import pytest

from aioseq import ConfigurationError, IdFormat, NumberOutOfRange, zero_pad


def test_format_and_parse_round_trip() -> None:
    order_id = IdFormat(prefix="ORD-", width=6)
    assert order_id.format(42) == "ORD-000042"
    assert order_id.format(999_999) == "ORD-999999"
    assert order_id.parse("ORD-000042") == 42
    for n in (0, 1, 9, 10, 123_456, 999_999):
        assert order_id.parse(order_id.format(n)) == n
    assert order_id.max_number == 999_999


def test_padded_identifiers_sort_like_their_numbers() -> None:
    order_id = IdFormat(prefix="ORD-", width=7)
    numbers = random.Random(7).sample(range(1, 10_000_000), 1000)
    assert sorted(numbers, key=order_id.format) == sorted(numbers)


def test_a_number_that_does_not_fit_the_width_is_refused() -> None:
    order_id = IdFormat(prefix="ORD-", width=6)
    with pytest.raises(NumberOutOfRange) as raised:
        order_id.format(1_000_000)
    assert raised.value.value == 1_000_000
    with pytest.raises(NumberOutOfRange):
        order_id.format(-1)
    with pytest.raises(NumberOutOfRange):
        zero_pad(100, 2)


def test_unpadded_format() -> None:
    invoice = IdFormat(prefix="INV-")
    assert invoice.format(42) == "INV-42"
    assert invoice.parse("INV-42") == 42
    assert invoice.parse("INV-0") == 0
    assert invoice.max_number == 10**38 - 1
    with pytest.raises(NumberOutOfRange):
        invoice.format(10**38)
    for bad in ("INV-042", "INV-", "INV-4a", "INV--4", "INV-" + "1" * 39):
        with pytest.raises(ConfigurationError):
            invoice.parse(bad)


@pytest.mark.parametrize(
    "text",
    ["ORD-42", "ORD-0000042", "ord-000042", "ORD-00004x", "ORD- 00042", "ORD-٠٠٠٠٤٢", "000042"],
)
def test_parse_is_strict(text: str) -> None:
    with pytest.raises(ConfigurationError) as raised:
        IdFormat(prefix="ORD-", width=6).parse(text)
    assert isinstance(raised.value, ValueError)


@pytest.mark.parametrize(
    "options",
    [{"width": 0}, {"width": 39}, {"width": True}, {"width": 6.0}, {"prefix": 7}],
)
def test_bad_formats_are_refused(options: dict[str, object]) -> None:
    with pytest.raises(ConfigurationError):
        IdFormat(**options)  # type: ignore[arg-type]


@pytest.mark.parametrize("n", [True, 4.0, "42", None])
def test_only_ints_are_formatted(n: object) -> None:
    with pytest.raises(ConfigurationError):
        IdFormat(width=6).format(n)  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError):
        zero_pad(n, 6)  # type: ignore[arg-type]


def test_remaining() -> None:
    order_id = IdFormat(prefix="ORD-", width=3)
    assert order_id.remaining(0) == 999
    assert order_id.remaining(990) == 9
    assert order_id.remaining(5000) == 0


# --- templates: the number anywhere, and a series' period --------------------------------------


@pytest.mark.parametrize(
    ("template", "n", "period", "text"),
    [
        ("INV-{period}-{number:06}", 42, "2026", "INV-2026-000042"),
        ("FV/{number}/{period}", 7, "2026-03", "FV/7/2026-03"),
        ("{period}-{number:02}", 4, "2026-03", "2026-03-04"),
        ("T{period}.{number}", 0, "2026-03-31", "T2026-03-31.0"),
        ("{{number}}{number}", 5, None, "{number}5"),
        ("{number:04} of {period}", 12, "2026-03-31", "0012 of 2026-03-31"),
    ],
)
def test_a_template_formats_and_parses_back(
    template: str, n: int, period: str | None, text: str
) -> None:
    id_format = IdFormat(template=template)
    assert id_format.format(n, period=period) == text
    assert id_format.parse(text) == n
    assert id_format.has_period == (period is not None)
    if period is not None:
        assert id_format.parse_period(text) == (period, n)


def test_a_templates_width_bounds_its_numbers() -> None:
    id_format = IdFormat(template="INV-{period}-{number:06}")
    assert (id_format.width, id_format.max_number) == (6, 999_999)
    with pytest.raises(NumberOutOfRange):
        id_format.format(1_000_000, period="2026")
    for text in ("INV-2026-00042", "INV-2026-0000042", "INV-26-000042", "INV-2026-13", "x"):
        with pytest.raises(ConfigurationError):
            id_format.parse_period(text)


@pytest.mark.parametrize(
    ("template", "match"),
    [
        ("{period}{number}", "put text between"),
        ("{number}{period}", "put text between"),
        ("INV-{number}-{number}", "twice"),
        ("INV-{period}", "no {number}"),
        ("INV-{year}-{number}", "{year} is not a token"),
        ("INV-{number:6}", "write {number:0N}"),
        ("INV-{number!r}", "is not a token"),
        ("INV-{number", "expected '}'"),
        ("INV-{number:039}", "from 1 to 38"),
    ],
)
def test_bad_templates_are_refused(template: str, match: str) -> None:
    with pytest.raises(ConfigurationError, match=match):
        IdFormat(template=template)


def test_a_period_goes_only_where_there_is_a_token_for_it() -> None:
    with pytest.raises(ConfigurationError, match="needs period="):
        IdFormat(template="INV-{period}-{number}").format(1)
    with pytest.raises(ConfigurationError, match="needs period="):
        IdFormat(template="INV-{period}-{number}").format(1, period="26")
    with pytest.raises(ConfigurationError, match=r"no \{period\} token"):
        IdFormat(prefix="INV-").format(1, period="2026")
    with pytest.raises(ConfigurationError, match=r"no \{period\} token"):
        IdFormat(prefix="INV-").parse_period("INV-1")
    with pytest.raises(ConfigurationError, match="says its prefix and width itself"):
        IdFormat(prefix="INV-", template="{period}-{number}")
