"""The pure half of [`aioseq.admin`][aioseq.admin]: the values it returns, its argument checks and
its arithmetic (what a counter item says, which value a maximum calls for, whether a value fits a
numbering's limit). No I/O; [`aioseq.admin`][aioseq.admin] sends the requests.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from decimal import Decimal, InvalidOperation
from typing import Any, Literal

from aioseq._items import AttributeValue, number, parse_counter
from aioseq._limits import (
    COUNTER_ATTRIBUTE,
    MAX_NUMBER,
    NUMBERING_ATTRIBUTE,
    UPDATED_AT_ATTRIBUTE,
)
from aioseq.errors import (
    ConditionFailed,
    ConfigurationError,
    CounterValueInvalid,
    NumberOutOfRange,
)
from aioseq.layout import CounterKind
from aioseq.numbering import Numbering, recorded_text, refuse_scoped, renumbered_value

__all__ = [
    "NO_LIMIT",
    "NO_LIMIT_VALUES",
    "AuditTally",
    "CounterAudit",
    "CounterInfo",
    "Progress",
    "Repin",
    "ScanProgress",
    "ScanTally",
    "check_value",
    "check_within_limit",
    "counter_info",
    "now",
    "renumbering",
    "value_for_maximum",
    "whole_number",
]


@dataclass(frozen=True)
class CounterInfo:
    """One counter as its counter item holds it.

    Attributes:
        key: the counter key (the counter item's partition key value).
        value: the counter's value, a whole number from 0 to ``10**38 - 1`` (with the default
            numbering, the last number handed out).
        numbering: the [`Numbering`][aioseq.Numbering] recorded in ``aioseq_numbering``, or
            ``None`` when the counter item has none (the default numbering, or a counter made
            before numberings were recorded).
        updated_at: when an operator's write ([`set_counter()`][aioseq.admin.set_counter],
            [`ensure_at_least()`][aioseq.admin.ensure_at_least],
            [`set_numbering()`][aioseq.admin.set_numbering]) last moved it (``aioseq_updated_at``,
            timezone-aware UTC), or ``None`` if none did.
        kind: what the counter is, as its strategy recorded it (``aioseq_counter``), or
            ``None`` when no strategy has recorded it (a counter item written before aioseq
            recorded kinds, or only by operators' writes).
    """

    key: str
    value: int
    numbering: Numbering | None = None
    updated_at: datetime | None = None
    kind: CounterKind | None = None

    @property
    def headroom(self) -> int | None:
        """Numbers the counter can still hand out before the ``max_value`` its numbering records
        (``None``: it records none)."""
        numbering = self.numbering
        if numbering is None or numbering.max_value is None:
            return None
        return max(0, numbering.count_up_to(numbering.max_value) - self.value)


@dataclass(frozen=True)
class ScanProgress:
    """How far [`scan_maximum()`][aioseq.admin.scan_maximum] has got, reported after each page.

    Attributes:
        segments_done: segments scanned to their end.
        segments: segments in all (``TotalSegments``).
        pages: pages read so far, all segments together.
        items: items read so far.
        maximum: the highest value found so far (0 if none).
    """

    segments_done: int
    segments: int
    pages: int
    items: int
    maximum: int


Progress = Callable[[ScanProgress], None]


@dataclass
class ScanTally:
    """What [`scan_maximum()`][aioseq.admin.scan_maximum] has read so far, all segments together."""

    segments: int
    segments_done: int = 0
    pages: int = 0
    items: int = 0
    maximum: int = 0
    #: Items that hold the attribute, and those whose value there is a whole number.
    with_attribute: int = 0
    numbers: int = 0

    def add_page(
        self, items: Sequence[Mapping[str, AttributeValue]], attribute: str, *, last: bool
    ) -> ScanProgress:
        """Count one page of a segment (``last``: its final page); the progress after it."""
        for item in items:
            value = item.get(attribute)
            if value is None:
                continue
            self.with_attribute += 1
            found = whole_number(value)
            if found is not None:
                self.numbers += 1
                self.maximum = max(self.maximum, found)
        self.pages += 1
        self.items += len(items)
        if last:
            self.segments_done += 1
        return ScanProgress(self.segments_done, self.segments, self.pages, self.items, self.maximum)


def check_value(value: object, what: str = "value") -> int:
    """A counter value: an ``int`` (not ``bool``) from 0 to ``10**38 - 1``.

    Raises:
        ConfigurationError: anything else (a float, a str, a negative or too large int).
    """
    if not isinstance(value, int) or isinstance(value, bool):
        raise ConfigurationError(f"{what} must be an int, not {type(value).__name__}")
    if not 0 <= value <= MAX_NUMBER:
        raise ConfigurationError(f"{what} must be an int from 0 to 10**38 - 1, not {value}")
    return value


def now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="microseconds")


def parse_time(found: AttributeValue | None) -> datetime | None:
    """``aioseq_updated_at`` as a timezone-aware datetime; ``None`` if missing or not ours."""
    text = found.get("S") if found else None
    if not isinstance(text, str):
        return None
    try:
        parsed = datetime.fromisoformat(text)
    except ValueError:
        return None
    return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=timezone.utc)


def counter_info(item: Mapping[str, AttributeValue], *, key: str, attribute: str) -> CounterInfo:
    """The [`CounterInfo`][aioseq.CounterInfo] of a counter item (AttributeValues).

    Raises:
        CounterValueInvalid: its value is not a whole number from 0 to ``10**38 - 1``, or its
            ``aioseq_numbering`` or ``aioseq_counter`` is not one aioseq wrote.
        NumberingMismatch: it is a Region-scoped key's scope record (read without
            ``regions=``).
    """
    refuse_scoped(item, key)
    recorded = recorded_text(item, key)
    return CounterInfo(
        key=key,
        value=parse_counter(item, key, attribute),
        numbering=None if recorded is None else Numbering.decode(recorded),
        updated_at=parse_time(item.get(UPDATED_AT_ATTRIBUTE)),
        kind=counter_kind(item, key),
    )


def counter_kind(item: Mapping[str, AttributeValue], key: str) -> CounterKind | None:
    """What counter item ``item`` says its counter is (``aioseq_counter``), ``None`` if it
    says nothing.

    Raises:
        CounterValueInvalid: the attribute is not what a strategy writes.
    """
    found = item.get(COUNTER_ATTRIBUTE)
    if found is None:
        return None
    try:
        return CounterKind.decode(found.get("S") if set(found) == {"S"} else None)
    except ConfigurationError:
        raise CounterValueInvalid(
            key, COUNTER_ATTRIBUTE, found, expected="a counter kind such as 'atomic' (S)"
        ) from None


def value_for_maximum(maximum: int, numbering: Numbering | None) -> int:
    """The counter value after which every number handed out is above ``maximum``: the value
    of the highest number ``<= maximum`` under ``numbering`` (``maximum`` itself under the
    default numbering; 0 when no number is that low)."""
    return maximum if numbering is None else numbering.count_up_to(maximum)


def whole_number(found: AttributeValue | None) -> int | None:
    """The whole number in an ``N`` AttributeValue (an ``S`` of digits too: a zero-padded
    sort key); ``None`` for anything else (another type, a fraction, a negative number)."""
    if not found:
        return None
    if "N" in found:
        try:
            parsed = Decimal(found["N"])
        except InvalidOperation:
            return None
        if parsed.is_finite() and parsed >= 0 and parsed == parsed.to_integral_value():
            return int(parsed)
        return None
    text = found.get("S")
    return int(text) if isinstance(text, str) and text.isdigit() and text.isascii() else None


def check_within_limit(key: str, value: int, recorded: str) -> None:
    """Refuse ``value`` when its number passes the ``max_value`` of the numbering ``recorded``.

    Raises:
        NumberOutOfRange: it does (nothing is written).
    """
    numbering = Numbering.decode(recorded)
    if numbering.max_value is not None and value > 0:
        highest = numbering.number(value)
        if highest > numbering.max_value:
            raise NumberOutOfRange(
                highest,
                f"counter {key!r} is numbered {recorded!r}: value {value} is number {highest},"
                f" past its max_value; nothing was written",
            )


def renumbering(
    item: Mapping[str, AttributeValue] | None,
    *,
    key: str,
    numbering: Numbering,
    previous: Numbering | None,
    value_attribute: str,
    partition_key: str,
) -> tuple[Numbering | None, dict[str, Any]]:
    """The ``UpdateItem`` that changes counter ``key``'s numbering to ``numbering``, given
    ``item``, its counter item as read (``None`` if there is none): the numbering recorded
    before (``None`` if none) and the request's ``UpdateExpression``, ``ConditionExpression``
    and its names and values. The condition holds only if the counter item is still as read.

    Raises:
        ConfigurationError: the counter item records no numbering, has handed out numbers, and
            ``previous`` does not say under which numbering.
        CounterValueInvalid: its value or numbering is unreadable.
        NumberingMismatch: it is a Region-scoped key's scope record (read without
            ``regions=``).
    """
    refuse_scoped(item, key)
    old_text = recorded_text(item, key)
    value = parse_counter(item, key, value_attribute)
    if old_text is not None:
        old = Numbering.decode(old_text)
    elif previous is not None or value == 0:
        old = previous or Numbering()
    else:
        raise ConfigurationError(
            f"counter {key!r} records no numbering and is at value {value}: pass"
            " previous=Numbering(...), the numbering its numbers were handed out under"
        )
    names = {
        "#numbering": NUMBERING_ATTRIBUTE,
        "#value": value_attribute,
        "#updated": UPDATED_AT_ATTRIBUTE,
    }
    values: dict[str, AttributeValue] = {
        ":new": {"S": numbering.encode()},
        ":renumbered": number(renumbered_value(value, old, numbering)),
        ":now": {"S": now()},
    }
    if not item:
        condition = "attribute_not_exists(#pk)"
        names["#pk"] = partition_key
    else:
        values[":value"] = number(value)
        if old_text is None:
            condition = "#value = :value AND attribute_not_exists(#numbering)"
        else:
            condition = "#value = :value AND #numbering = :old"
            values[":old"] = {"S": old_text}
    params = {
        "UpdateExpression": "SET #numbering = :new, #value = :renumbered, #updated = :now",
        "ConditionExpression": condition,
        "ExpressionAttributeNames": names,
        "ExpressionAttributeValues": values,
    }
    return (old if old_text is not None else None), params


#: The condition that the counter item records no numbering with a ``max_value`` of its own:
#: a value can then be set without knowing that limit. Where one is recorded, the refusal's
#: ``ALL_OLD`` brings it, and the write is checked against it and sent again pinned to that
#: exact numbering (`_write_within_limit()`).
NO_LIMIT = "(attribute_not_exists(#numbering) OR NOT contains(#numbering, :limit_mark))"
NO_LIMIT_VALUES: dict[str, AttributeValue] = {":limit_mark": {"S": " max_value="}}


class Repin(ConditionFailed):
    """The write found a numbering with a ``max_value`` that the value fits: it is sent again
    at once, pinned to that numbering (a ``set_numbering`` in between refuses it again)."""


@dataclass(frozen=True)
class CounterAudit:
    """One counter checked against its items ([`audit_counter()`][aioseq.admin.audit_counter]).

    Attributes:
        key: the counter key.
        highest: the highest number the counter has handed out or reserved: its value as a
            number of its numbering (0 before the first; with no counter item, the highest
            number an item holds).
        items: items found that hold a number.
        missing: the numbers of the numbering, from its first up to ``highest``, that no item
            holds, as ranges (``range(first, last + stride, stride)``), in order.
        above: how many items hold a number above ``highest``: the counter stands below
            numbers already used (it was restored alone, or items were copied in).
        highest_item: the highest number an item holds (0 if none).
        off_numbering: how many items hold a number that is not one of the numbering's.
        duplicates: numbers more than one item holds (only where the number is an attribute).
        fix: the command that moves the counter past its items (``above``), else ``None``.
        kind: what the counter item says the counter is, if it says.
        unchecked: why its items were not checked, or ``None`` (they were): ``"no items"``
            (its strategy stores none: gaps are allowed, nothing to check), ``"elsewhere"``
            (its items are where its writer could not say), ``"unmarked"`` (no strategy
            recorded what it is: a counter item written before aioseq recorded kinds, or only
            by operators' writes). Not a finding: name the items' place to check them.
        invalid: why the counter item is unreadable (a finding), or ``None``.
    """

    key: str
    highest: int
    items: int
    missing: tuple[range, ...] = ()
    above: int = 0
    highest_item: int = 0
    off_numbering: int = 0
    duplicates: tuple[int, ...] = ()
    fix: str | None = None
    kind: CounterKind | None = None
    unchecked: Literal["no items", "elsewhere", "unmarked"] | None = None
    invalid: str | None = None

    @property
    def ok(self) -> bool:
        """No finding: every number up to ``highest`` has exactly one item, none above, and
        the counter item is readable (a counter whose items were not checked passes)."""
        return not (
            self.missing or self.above or self.off_numbering or self.duplicates or self.invalid
        )

    @property
    def missing_count(self) -> int:
        """How many numbers ``missing`` holds."""
        return sum(len(r) for r in self.missing)


class AuditTally:
    """The numbers a counter's items hold, checked against its numbering and its highest number.

    Parameters:
        numbering: the counter's numbering.
        highest: the counter's highest number (``None``: no counter item; the highest item's).
    """

    def __init__(self, numbering: Numbering, highest: int | None) -> None:
        self.numbering = numbering
        self.highest = highest
        self._values: list[int] = []  # counter values (k) of the items, as found
        self.off_numbering = 0

    def add(self, n: int) -> None:
        """An item holds number ``n``."""
        numbering = self.numbering
        if n < numbering.offset or (n - numbering.offset) % numbering.stride:
            self.off_numbering += 1
            return
        self._values.append((n - numbering.offset) // numbering.stride + 1)

    def done(self, key: str) -> CounterAudit:
        """The audit: missing numbers as ranges, items above the counter, duplicates."""
        numbering = self.numbering
        values = sorted(self._values)
        top = values[-1] if values else 0
        last = top if self.highest is None else numbering.count_up_to(self.highest)
        missing: list[range] = []
        duplicates: list[int] = []
        expected = 1
        previous = 0
        for k in values:
            if k == previous:
                if not duplicates or duplicates[-1] != numbering.number(k):
                    duplicates.append(numbering.number(k))
                continue
            previous = k
            if k <= last:
                if k > expected:
                    missing.append(self._numbers(expected, k - 1))
                expected = k + 1
        if expected <= last:
            missing.append(self._numbers(expected, last))
        above = sum(1 for k in values if k > last)
        return CounterAudit(
            key=key,
            highest=numbering.number(last) if last else 0,
            items=len(values) + self.off_numbering,
            missing=tuple(missing),
            above=above,
            highest_item=numbering.number(top) if top else 0,
            off_numbering=self.off_numbering,
            duplicates=tuple(duplicates),
        )

    def _numbers(self, first_k: int, last_k: int) -> range:
        stride = self.numbering.stride
        return range(self.numbering.number(first_k), self.numbering.number(last_k) + stride, stride)
