"""A counter's numbering, recorded on its counter item and checked by every write to it.

Two deployments that use one counter key with different numberings (one allocator with
``stride=3, offset=2``, another with ``stride=1``) would hand out overlapping numbers without a
word. So the counter item remembers the [`Numbering`][aioseq.Numbering] its values are handed out
under, in the attribute ``aioseq_numbering`` (type S,
[`Numbering.encode()`][aioseq.Numbering.encode]'s text, such as ``"stride=3 offset=2"``), and every
object that writes it checks it in the same request:

- **What is recorded.** The numbering of the object that writes the counter item: a
  [`BlockAllocator`][aioseq.BlockAllocator] records its ``stride``, ``offset`` and ``max_value``
  (not the derived limit of the atomic counter under it); [`AtomicCounter`][aioseq.AtomicCounter],
  [`OptimisticCounter`][aioseq.OptimisticCounter] and
  [`TransactionalCounter`][aioseq.TransactionalCounter] hand out the counter's values themselves, so
  they record ``stride=1 offset=1`` and their ``max_value``. A ``max_value`` of ``10**38 - 1`` (the
  default: no limit of the counter's own) is recorded as none
  (`numbering_for()`).
- **When.** By the first write of the counter item, in that write: the atomic counter's ``ADD``
  sets ``aioseq_numbering = if_not_exists(aioseq_numbering, :numbering)``, the conditional
  writes of the optimistic and transactional strategies ``SET`` it. No extra request, ever.
- **The check.** The write's condition also requires ``attribute_not_exists(aioseq_numbering)
  OR aioseq_numbering = :numbering`` (string equality). When it fails, the counter item comes
  back (``ReturnValuesOnConditionCheckFailure=ALL_OLD``) and a stored numbering other than the
  object's raises [`NumberingMismatch`][aioseq.errors.NumberingMismatch]: nothing was written, no
  number taken. The optimistic and transactional strategies also check the counter item they last
  saw before they send a write, so a mismatch they know of costs no request.
- **Equal means equal.** Two numberings match only if all three fields are the same,
  ``max_value`` included. A rule such as "a lower ``max_value`` is fine" would be safe against
  overlaps, but it would make the answer depend on which deployment wrote first (the one with
  the lower limit first: the other is refused; the other first: both run); whole equality is
  symmetric, and it is one string comparison in the condition. Change a limit explicitly.
- **Counter items written before** ``aioseq_numbering`` **existed** have none: the first write
  of an object of this version records its own numbering (any numbering is accepted then, as
  nothing tells which one the older writers used). [`set_numbering()`][aioseq.admin.set_numbering]
  assumes such a
  counter was numbered ``stride=1 offset=1`` (its values were its numbers).
- **Changing a numbering** is an explicit operation,
  [`set_numbering()`][aioseq.admin.set_numbering].

The sort-key strategy has no counter item, so nothing to record it on.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from aioseq._checks import check_count, check_region
from aioseq._items import AttributeValue
from aioseq._limits import MAX_NUMBER, NUMBERING_ATTRIBUTE
from aioseq.errors import (
    ConfigurationError,
    CounterValueInvalid,
    NumberingMismatch,
    RegionNotListed,
)

# Numbering is public (as aioseq.Numbering); the functions below are aioseq's own (the
# strategies' and admin's): this module's docstring is their contract.
__all__ = ["Numbering", "RegionScope", "ScopeRecord"]

#: The most slots a Region scope has (a global table has one replica per Region).
MAX_SLOTS = 64


@dataclass(frozen=True)
class Numbering:
    """How a counter's values become numbers: value ``k`` (1, 2, 3, ...) is the number
    ``offset + (k - 1) * stride``, and no number passes ``max_value``. The default numbering
    hands out the values themselves (1, 2, 3, ...). Several deployments that share a key space
    give each counter its own ``offset`` in ``1..stride`` and never collide (MySQL's
    ``auto_increment_increment`` / ``auto_increment_offset``).

    A counter item records its numbering on its first write, in the
    [`NUMBERING_ATTRIBUTE`][aioseq.config.NUMBERING_ATTRIBUTE] attribute, as
    [`encode()`][aioseq.Numbering.encode] writes it; an object that asks for another numbering on
    the same counter is refused ([`NumberingMismatch`][aioseq.errors.NumberingMismatch]).

    Attributes:
        stride: the step between two numbers (1 .. 10**12).
        offset: the first number (0 .. ``MAX_NUMBER``).
        max_value: the highest number, or ``None`` for no limit of the counter's own
            (``MAX_NUMBER``).

    Raises:
        ConfigurationError: a value outside those ranges, or not an ``int``.
    """

    stride: int = 1
    offset: int = 1
    max_value: int | None = None

    def __post_init__(self) -> None:
        check_count(self.stride, "stride", maximum=10**12)
        if (
            not isinstance(self.offset, int)
            or isinstance(self.offset, bool)
            or not 0 <= self.offset <= MAX_NUMBER
        ):
            raise ConfigurationError(f"offset must be an int from 0 to 10**38 - 1: {self.offset!r}")
        if self.max_value is not None:
            check_count(self.max_value, "max_value")

    def number(self, value: int) -> int:
        """The number of counter value ``value`` (>= 1)."""
        return self.offset + (value - 1) * self.stride

    def numbers(self, value: int, n: int) -> range:
        """The numbers of the ``n`` counter values from ``value`` (>= 1) on, as a ``range``
        with step ``stride``."""
        first = self.number(value)
        return range(first, first + n * self.stride, self.stride)

    def count_up_to(self, highest: int) -> int:
        """How many of this numbering's numbers are ``<= highest``: the counter value whose
        number is the highest one not above it (0 when none is that low)."""
        if highest < self.offset:
            return 0
        return (highest - self.offset) // self.stride + 1

    def encode(self) -> str:
        """The attribute's text: ``"stride=S offset=O"``, then ``" max_value=M"`` if set."""
        text = f"stride={self.stride} offset={self.offset}"
        return text if self.max_value is None else f"{text} max_value={self.max_value}"

    @classmethod
    def decode(cls, text: str) -> Numbering:
        """The numbering [`encode()`][aioseq.Numbering.encode] wrote as ``text``.

        Raises:
            ConfigurationError: ``text`` is not what [`encode()`][aioseq.Numbering.encode] writes.
        """
        fields: dict[str, int] = {}
        for part in text.split(" ") if isinstance(text, str) else [""]:
            name, _, digits = part.partition("=")
            if name not in ("stride", "offset", "max_value") or not digits.isdigit():
                raise ConfigurationError(f"not a counter numbering: {text!r}")
            fields[name] = int(digits)
        if "stride" not in fields or "offset" not in fields:
            raise ConfigurationError(f"not a counter numbering: {text!r}")
        return cls(**fields)

    def __str__(self) -> str:
        return self.encode()


@dataclass(frozen=True)
class RegionScope:
    """Region-scoped numbering: the Regions that take numbers, each with its own slot.

    Region ``regions[i]`` has slot ``i``: its counter items are its own (the counter key with
    ``"@<region>"`` appended; the sort-key strategy's collection likewise), and a counter's
    value ``k`` there is the number ``(i + 1) + (k - 1) * slots`` (a block allocator's own
    ``stride`` and ``offset`` apply within that: its stride is multiplied by ``slots``). No
    item is written from two Regions, so last writer wins has nothing to lose.

    ``slots`` may exceed the Regions listed, to leave room: a Region added later in a free
    slot changes no Region's numbers. The scope is recorded on the counter key's own counter
    item (``aioseq_numbering``, with the numbering shared out: a
    [`ScopeRecord`][aioseq.numbering.ScopeRecord]), created once; a store with another scope,
    or none, or another numbering, is refused there
    ([`NumberingMismatch`][aioseq.errors.NumberingMismatch]).

    Attributes:
        regions: the Regions, in slot order (1 .. ``slots``, no repeats).
        slots: the count of slots (``len(regions)`` .. 64; default ``len(regions)``).

    Raises:
        ConfigurationError: an empty or repeated Region, a bad Region name, or too few slots.
    """

    regions: tuple[str, ...]
    slots: int = 0

    def __post_init__(self) -> None:
        if isinstance(self.regions, str) or not isinstance(self.regions, Iterable):
            raise ConfigurationError(f"regions must be a list of Region names: {self.regions!r}")
        regions = tuple(check_region(r, "a Region in regions") for r in self.regions)
        if not regions or len(set(regions)) != len(regions):
            raise ConfigurationError(
                f"regions must name at least one Region, each once: {list(regions)}"
            )
        object.__setattr__(self, "regions", regions)
        if self.slots == 0 and not isinstance(self.slots, bool):
            object.__setattr__(self, "slots", len(regions))
        check_count(self.slots, "region_slots", maximum=MAX_SLOTS)
        if self.slots < len(regions):
            raise ConfigurationError(
                f"region_slots ({self.slots}) must be at least the Regions listed ({len(regions)})"
            )

    def slot(self, region: str) -> int:
        """The slot of ``region`` (0-based).

        Raises:
            RegionNotListed: ``region`` is not listed.
        """
        try:
            return self.regions.index(region)
        except ValueError:
            raise RegionNotListed(region, self.regions) from None

    def base(self, region: str, share: Numbering) -> Numbering:
        """The numbering whose ``region`` share is ``share`` (the inverse of
        [`share()`][aioseq.RegionScope.share]).

        Raises:
            RegionNotListed: ``region`` is not listed.
        """
        slot, stride = self.slot(region), share.stride // self.slots
        return Numbering(stride, share.offset - slot * stride, share.max_value)

    def share(self, region: str, numbering: Numbering) -> Numbering:
        """``numbering`` within ``region``'s residue class: stride ``numbering.stride * slots``,
        offset ``numbering.offset + slot * numbering.stride``, the same ``max_value``.

        >>> RegionScope(("us-east-1", "eu-west-1")).share("eu-west-1", Numbering())
        Numbering(stride=2, offset=2, max_value=None)

        Raises:
            RegionNotListed: ``region`` is not listed.
        """
        slot = self.slot(region)
        return Numbering(
            numbering.stride * self.slots,
            numbering.offset + slot * numbering.stride,
            numbering.max_value,
        )

    @staticmethod
    def key_in(key: str, region: str) -> str:
        """The counter key (or collection) ``key`` of ``region``: ``f"{key}@{region}"``."""
        return f"{key}@{region}"

    def encode(self) -> str:
        """The recorded text: ``"regions=us-east-1,eu-west-1 slots=2"``."""
        return f"regions={','.join(self.regions)} slots={self.slots}"

    @classmethod
    def decode(cls, text: str) -> RegionScope:
        """The scope [`encode()`][aioseq.RegionScope.encode] wrote as ``text``.

        Raises:
            ConfigurationError: ``text`` is not what ``encode()`` writes.
        """
        regions, _, slots = text.partition(" ") if isinstance(text, str) else ("", "", "")
        if not regions.startswith("regions=") or not slots.startswith("slots="):
            raise ConfigurationError(f"not a Region scope: {text!r}")
        digits = slots.removeprefix("slots=")
        if not digits.isdigit():
            raise ConfigurationError(f"not a Region scope: {text!r}")
        scope = cls(tuple(regions.removeprefix("regions=").split(",")), int(digits))
        if scope.encode() != text:
            raise ConfigurationError(f"not a Region scope: {text!r}")
        return scope

    def __str__(self) -> str:
        return self.encode()


@dataclass(frozen=True)
class ScopeRecord:
    """What the own counter item of a Region-scoped counter key records (``aioseq_numbering``):
    its [`RegionScope`][aioseq.RegionScope] and the numbering the Regions share out (a block
    allocator's stride and offset; ``stride=1 offset=1`` for the strategies), so that every
    Region's counter objects agree on both.

    >>> ScopeRecord(RegionScope(("us-east-1", "eu-west-1")), Numbering()).encode()
    'regions=us-east-1,eu-west-1 slots=2 stride=1 offset=1'
    """

    scope: RegionScope
    numbering: Numbering

    def encode(self) -> str:
        """The recorded text: the scope's, then the numbering's."""
        return f"{self.scope.encode()} {self.numbering.encode()}"

    @classmethod
    def decode(cls, text: str) -> ScopeRecord:
        """The record [`encode()`][aioseq.numbering.ScopeRecord.encode] wrote as ``text``.

        Raises:
            ConfigurationError: ``text`` is not one.
        """
        parts = text.split(" ", 2) if isinstance(text, str) else []
        if len(parts) != 3:
            raise ConfigurationError(f"not a Region scope record: {text!r}")
        record = cls(RegionScope.decode(" ".join(parts[:2])), Numbering.decode(parts[2]))
        if record.encode() != text:
            raise ConfigurationError(f"not a Region scope record: {text!r}")
        return record

    def __str__(self) -> str:
        return self.encode()


#: The condition every write of a counter item adds (``AND``) to its own: no numbering
#: recorded yet, or the writer's. ``#numbering`` and ``:numbering`` come from
#: `guard_values()`.
GUARD = "(attribute_not_exists(#numbering) OR #numbering = :numbering)"


def numbering_for(*, stride: int = 1, offset: int = 1, max_value: int = MAX_NUMBER) -> Numbering:
    """The numbering an object records: ``max_value`` ``10**38 - 1`` (no limit of the
    counter's own) is recorded as none, so the default reads ``stride=1 offset=1``.

    Raises:
        ConfigurationError: a value out of [`Numbering`][aioseq.Numbering]'s ranges.
    """
    return Numbering(stride, offset, None if max_value == MAX_NUMBER else max_value)


def guard_values(numbering: Numbering) -> tuple[dict[str, str], dict[str, AttributeValue]]:
    """The ``ExpressionAttributeNames`` and ``ExpressionAttributeValues``
    `GUARD` (and a ``SET #numbering = :numbering``) uses, for
    ``numbering``."""
    return {"#numbering": NUMBERING_ATTRIBUTE}, {":numbering": {"S": numbering.encode()}}


def recorded_text(item: Mapping[str, AttributeValue] | None, key: str) -> str | None:
    """The numbering text the counter item ``item`` holds (as
    [`Numbering.encode()`][aioseq.Numbering.encode] writes it, or, on the counter item of a
    Region-scoped key, [`RegionScope.encode()`][aioseq.RegionScope.encode]), or ``None`` when
    there is no counter item or it has none recorded.

    Raises:
        CounterValueInvalid: the attribute is not a string, or not in one of those forms
            (``"stride=3 offset=2"``, nothing else: the condition compares strings, so another
            spelling of the same numbering would not match it).
    """
    if not item or NUMBERING_ATTRIBUTE not in item:
        return None
    found = item[NUMBERING_ATTRIBUTE]
    text = found.get("S") if isinstance(found, Mapping) and set(found) == {"S"} else None
    if isinstance(text, str):
        try:
            decode_recorded(text)
            return text
        except ConfigurationError:
            pass
    raise CounterValueInvalid(
        key, NUMBERING_ATTRIBUTE, found, expected="a numbering such as 'stride=3 offset=2' (S)"
    )


def decode_recorded(text: str) -> Numbering | ScopeRecord:
    """The numbering or Region scope record ``text`` holds, exactly as ``encode()`` writes it.

    Raises:
        ConfigurationError: ``text`` is neither.
    """
    recorded: Numbering | ScopeRecord = (
        ScopeRecord.decode(text) if text.startswith("regions=") else Numbering.decode(text)
    )
    if recorded.encode() != text:
        raise ConfigurationError(f"not a counter numbering: {text!r}")
    return recorded


def check_recorded(
    item: Mapping[str, AttributeValue] | None, key: str, requested: Numbering | ScopeRecord
) -> None:
    """Refuse a counter item whose recorded numbering (or Region scope) is not ``requested``
    (none recorded passes: the next write records it).

    Raises:
        NumberingMismatch: another numbering or scope is recorded.
        CounterValueInvalid: the recorded numbering is unreadable (see
            `recorded_text()`).
    """
    text = recorded_text(item, key)
    if text is not None and text != requested.encode():
        raise NumberingMismatch(key, decode_recorded(text), requested)


class _Unscoped:
    """What a store without ``regions=`` asks for, as
    [`NumberingMismatch`][aioseq.errors.NumberingMismatch] names it."""

    def encode(self) -> str:
        return "no Region scope (a counter numbered without regions=)"


#: The Region scope (none) of a store without ``regions=``.
UNSCOPED = _Unscoped()


def refuse_scoped(item: Mapping[str, AttributeValue] | None, key: str) -> None:
    """Refuse to read or move counter ``key``'s counter item ``item`` when it is the key's
    Region scope record (a store without ``regions=`` reads the key's own counter item, which
    then holds no value: each Region's counter item holds one).

    Raises:
        NumberingMismatch: ``item`` records a Region scope; the message names it and the
            ``regions=`` (``--regions``) to pass.
        CounterValueInvalid: its recorded numbering is unreadable (see `recorded_text()`).
    """
    text = recorded_text(item, key)
    if text is not None and text.startswith("regions="):
        raise NumberingMismatch(key, ScopeRecord.decode(text), UNSCOPED)


def scope_kept(old: RegionScope, new: RegionScope) -> bool:
    """Whether ``new`` numbers every Region of ``old`` as ``old`` does: the same count of
    slots, each Region of ``old`` in its slot (Regions added in free slots only), so no
    Region's numbers change from one to the other."""
    return new.slots == old.slots and all(
        r in new.regions and new.slot(r) == old.slot(r) for r in old.regions
    )


def renumbered_value(value: int, old: Numbering, new: Numbering) -> int:
    """The counter value under ``new`` whose next number is the first one above every number
    ``old`` handed out up to counter value ``value`` (0: none handed out, and 0 stays 0).

    >>> renumbered_value(5, Numbering(3, 2), Numbering())  # 2 5 8 11 14, then 15
    14
    >>> renumbered_value(14, Numbering(), Numbering(3, 2))  # 1 .. 14, then 17
    5
    """
    return new.count_up_to(old.number(value)) if value > 0 else 0
