"""Exactly once for the conditional writes of a counter item: each write leaves its token.

The optimistic and gapless strategies move a counter item with a conditional write:

    SET #value = :next   IF #value = :current

When such a write is applied and its answer is lost (a read timeout, a reset connection, a 5xx
sent after the write), its sender cannot know whether it took the numbers. It resends the same
write; if the counter moved, the resend fails its condition, and the counter may have moved by
the first attempt or by a rival. Guessing either way is wrong: "a rival" loses numbers (a hole
in a gapless sequence), "mine" hands out numbers twice.

So each write carries a fresh idempotency token (as Stripe's API keys its requests, and as
DynamoDB's own ``ClientRequestToken`` makes a transaction idempotent) and records it on the
counter item in the same write, in a ring of the last
[`RECENT_WRITES`][aioseq.config.RECENT_WRITES]:

    SET #value = :next, #writes = :w + 1, #tokens[w % 32] = :token
    IF  #value = :current AND #writes = :w

(the whole list on the first write). The resend asks for
``ReturnValuesOnConditionCheckFailure=ALL_OLD``, so its failure returns the counter item with
no second read: the write was applied if and only if slot ``w % 32`` holds its token. That is
decisive while fewer than 32 writes followed it (``aioseq_writes - w <= 32``); beyond that the
token has been overwritten and `CounterWrite.applied_in()` says it cannot tell (``None``),
which the strategies count as numbers that may be lost, never as numbers to hand out.

The ring costs nothing extra per write: the tokens ride in the write that moves the counter,
and 32 tokens of 16 characters keep the counter item under 1 KB (1 WCU per write; 2 in a
transaction).
"""

from __future__ import annotations

import contextlib
import logging
import secrets
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from aioseq._items import AttributeValue, Item, number, parse_counter
from aioseq._limits import COUNTER_ATTRIBUTE, NUMBERING_ATTRIBUTE, TURN_ATTRIBUTE
from aioseq.config import RECENT_WRITES, TOKENS_ATTRIBUTE, WRITES_ATTRIBUTE, TableSpec
from aioseq.errors import CounterValueInvalid
from aioseq.numbering import recorded_text
from aioseq.observe import Observer, WasteEvent, notify

__all__ = ["CounterState", "CounterWrite", "LostAnswers", "new_token", "turns_of"]

log = logging.getLogger("aioseq")

#: An empty slot of the ring (DynamoDB accepts empty strings outside keys).
_EMPTY = ""


def new_token() -> str:
    """A fresh idempotency token: 16 URL-safe characters (96 random bits)."""
    return secrets.token_urlsafe(12)


def turns_of(item: Mapping[str, AttributeValue] | None) -> tuple[str, ...]:
    """The queue of writers on a counter item (``aioseq_turn``, the next writer first; see
    `aioseq.strategies._turn`), empty when it has none. Reads nothing else of the item."""
    queue = (item or {}).get(TURN_ATTRIBUTE, {}).get("L")
    if not isinstance(queue, list):
        return ()
    return tuple(str(e["S"]) for e in queue if isinstance(e, dict) and "S" in e)


@dataclass(frozen=True)
class CounterState:
    """A counter item as last seen.

    Attributes:
        value: the counter's value (0 when there is no counter item).
        exists: whether the counter item exists.
        writes: its ``aioseq_writes``, or ``None`` when it has none (a counter item made by
            the atomic counter, or by aioseq before 0.2).
        tokens: its ring of [`RECENT_WRITES`][aioseq.config.RECENT_WRITES] tokens, or ``None`` when
            it has none of that length.
        numbering: its recorded numbering's text (``aioseq_numbering``, see
            [`aioseq.numbering`][aioseq.numbering]), or ``None`` when it has none.
        turns: the queue of writers waiting to write (``aioseq_turn``, entries
            ``"<token>:<size>:<lease_ms>"``, the next writer first; see
            `aioseq.strategies._turn`), empty when nobody waits.
        kind: what it says the counter is (``aioseq_counter``, a
            [`CounterKind`][aioseq.layout.CounterKind]'s text, as found), or ``None``.
    """

    value: int = 0
    exists: bool = False
    writes: int | None = None
    tokens: tuple[str, ...] | None = None
    numbering: str | None = None
    turns: tuple[str, ...] = ()
    kind: str | None = None

    @classmethod
    def of(
        cls, item: Mapping[str, AttributeValue] | None, *, key: str, table: TableSpec
    ) -> CounterState:
        """Read a counter item (AttributeValues, or ``None`` when it does not exist).

        Raises:
            CounterValueInvalid: its value, or its ``aioseq_writes``, is not a whole number
                from 0 to ``10**38 - 1``; its numbering is unreadable.
        """
        value = parse_counter(item, key, table.value_attribute)
        if not item:
            return cls()
        numbering = recorded_text(item, key)
        writes = None
        if WRITES_ATTRIBUTE in item:
            writes = parse_counter(item, key, WRITES_ATTRIBUTE)
        ring = item.get(TOKENS_ATTRIBUTE, {}).get("L")
        tokens = None
        if isinstance(ring, list) and len(ring) == RECENT_WRITES and all("S" in t for t in ring):
            tokens = tuple(str(t["S"]) for t in ring)
        kind = item.get(COUNTER_ATTRIBUTE, {}).get("S")
        return cls(value, True, writes, tokens, numbering, turns_of(item), kind)


@dataclass(frozen=True)
class CounterWrite:
    """One conditional write that moves a counter item from ``before`` to value ``new`` and
    records ``token`` in its ring of recent writes (and ``numbering``, if given, as the counter
    item's numbering: see [`aioseq.numbering`][aioseq.numbering]; and ``kind``, what the counter
    is, outside the condition).

    Attributes:
        before: the counter item the write expects (its condition).
        new: the counter's value after the write.
        token: the write's idempotency token (`new_token()`).
        numbering: the numbering text the write records, or ``None`` to leave it alone.
        kind: the [`CounterKind`][aioseq.layout.CounterKind] text the write records: on a
            counter item that has none (``if_not_exists``), or with ``replace_kind`` always;
            ``None`` to leave it alone.
    """

    before: CounterState
    new: int
    token: str
    numbering: str | None = None
    #: Whether the write keeps its place in the counter's queue (`aioseq.strategies._turn`):
    #: it requires the queue empty or headed by its entry, and removes that entry. ``False``
    #: for a writer that does not queue: it leaves the queue alone.
    queued: bool = True
    kind: str | None = None
    replace_kind: bool = False

    @property
    def numbers(self) -> range:
        """The numbers the write takes: ``before.value + 1 .. new``."""
        return range(self.before.value + 1, self.new + 1)

    @property
    def slot(self) -> int:
        """The ring slot this write's token goes to."""
        return (self.before.writes or 0) % RECENT_WRITES

    def _ring(self) -> AttributeValue:
        tokens = list(self.before.tokens or [_EMPTY] * RECENT_WRITES)
        tokens[self.slot] = self.token
        return {"L": [{"S": t} for t in tokens]}

    def condition(self, table: TableSpec, *, whole_queue: bool = False) -> dict[str, Any]:
        """``ConditionExpression`` with its names and values: the counter item is exactly as
        ``before`` (``attribute_not_exists(#pk)`` when it did not exist), its recorded
        numbering included (when this write records one), so that a numbering changed since
        ``before`` was seen fails it too, and its queue of writers (see
        `aioseq.strategies._turn`): empty (``attribute_not_exists(#turn[0])``), or headed by
        the entry ``before`` has first, which the write then removes; ``whole_queue``: the
        queue exactly as ``before`` (a ``PutItem`` replaces it whole); none for a write that
        is not `queued`.

        Resent after a lost answer: safe, as no writer can make it true again once it was
        applied: ``#writes`` only grows (every such write adds 1, and nothing of aioseq's
        lowers or removes it), and the counter item it creates is never deleted."""
        before = self.before
        if not before.exists:
            return {
                "ConditionExpression": "attribute_not_exists(#pk)",
                "ExpressionAttributeNames": {"#pk": table.partition_key},
                "ExpressionAttributeValues": {},
            }
        names = {"#value": table.value_attribute, "#writes": WRITES_ATTRIBUTE}
        values = {":current": number(before.value)}
        if before.writes is None:
            condition = "#value = :current AND attribute_not_exists(#writes)"
        else:
            condition = "#value = :current AND #writes = :writes"
            values[":writes"] = number(before.writes)
        if self.numbering is not None:
            names["#numbering"] = NUMBERING_ATTRIBUTE
            if before.numbering is None:
                condition += " AND attribute_not_exists(#numbering)"
            else:
                condition += " AND #numbering = :numbering_before"
                values[":numbering_before"] = {"S": before.numbering}
        if whole_queue or self.queued:  # (a writer that does not queue leaves it alone)
            names["#turn"] = TURN_ATTRIBUTE
            if not before.turns:
                condition += " AND attribute_not_exists(#turn[0])"
            elif whole_queue:
                condition += " AND #turn = :turns"
                values[":turns"] = {"L": [{"S": e} for e in before.turns]}
            else:
                condition += " AND #turn[0] = :turn"
                values[":turn"] = {"S": before.turns[0]}
        return {
            "ConditionExpression": condition,
            "ExpressionAttributeNames": names,
            "ExpressionAttributeValues": values,
        }

    def update(self, table: TableSpec) -> dict[str, Any]:
        """The parameters of an ``UpdateItem`` (or a transaction's ``Update``) that makes this
        write: ``UpdateExpression``, ``ConditionExpression`` and their names and values."""
        request = self.condition(table)
        names = request["ExpressionAttributeNames"]
        values = request["ExpressionAttributeValues"]
        names["#value"] = table.value_attribute
        names["#writes"] = WRITES_ATTRIBUTE
        names["#tokens"] = TOKENS_ATTRIBUTE
        values[":next"] = number(self.new)
        values[":writes_after"] = number((self.before.writes or 0) + 1)
        if self.before.tokens is None:
            ring = "#tokens = :tokens"
            values[":tokens"] = self._ring()
        else:
            ring = f"#tokens[{self.slot}] = :token"
            values[":token"] = {"S": self.token}
        if self.numbering is not None:
            names["#numbering"] = NUMBERING_ATTRIBUTE
            values[":numbering"] = {"S": self.numbering}
            ring += ", #numbering = :numbering"
        if self.kind is not None:  # (no condition on it: what the counter is, not its state)
            names["#kind"] = COUNTER_ATTRIBUTE
            values[":kind"] = {"S": self.kind}
            ring += (
                ", #kind = :kind" if self.replace_kind else ", #kind = if_not_exists(#kind, :kind)"
            )
        update = f"SET #value = :next, #writes = :writes_after, {ring}"
        if self.before.turns and self.queued:
            update += " REMOVE #turn[0]"  # the entry this write waited with is used
        request["UpdateExpression"] = update
        return request

    def after(self, table: TableSpec) -> Item:
        """The counter item's value, writes, ring, numbering, kind and queue (the entries after the
        one it used, as far as ``before`` knew them) after this write (a whole counter item for
        the ``PutItem`` form, with the key added)."""
        item: Item = {
            table.value_attribute: number(self.new),
            WRITES_ATTRIBUTE: number((self.before.writes or 0) + 1),
            TOKENS_ATTRIBUTE: self._ring(),
        }
        numbering = self.numbering if self.numbering is not None else self.before.numbering
        if numbering is not None:
            item[NUMBERING_ATTRIBUTE] = {"S": numbering}
        kind = self.before.kind if self.before.kind and not self.replace_kind else self.kind
        if kind is not None:
            item[COUNTER_ATTRIBUTE] = {"S": kind}
        remaining = self.before.turns[1:] if self.queued else self.before.turns
        if remaining:
            item[TURN_ATTRIBUTE] = {"L": [{"S": e} for e in remaining]}
        return item

    def applied_in(
        self, found: Mapping[str, AttributeValue] | None, *, key: str, table: TableSpec
    ) -> bool | None:
        """Whether this write was applied, judged from the counter item as ``found`` after a
        resend of it failed its condition (``ALL_OLD``).

        Returns:
            True: applied (its token is in its slot); False: not applied; None: cannot tell,
            because more than [`RECENT_WRITES`][aioseq.config.RECENT_WRITES] writes followed it, a
            writer outside aioseq removed the ring, or no counter item came back.

        Raises:
            CounterValueInvalid: the counter item's value or ``aioseq_writes`` is invalid.
        """
        if not found:
            return None  # deleted, or not returned: the failure tells nothing
        return self.applied_as_of(CounterState.of(found, key=key, table=table))

    def applied_as_of(self, state: CounterState) -> bool | None:
        """Whether this write was applied, judged from a counter item ``state`` as it was
        after the write was sent (returned by a failed condition, or the one a later write's
        condition matched): True, False, or None (cannot tell), as `applied_in()`."""
        mine = self.before.writes or 0  # this write is write number `mine`, from 0
        if state.writes is None or state.writes <= mine:
            return False  # no write of aioseq's since the one this write expected
        if state.tokens is None or state.writes - mine > RECENT_WRITES:
            return None
        return state.tokens[self.slot] == self.token


class LostAnswers:
    """Resolves the writes of one counter whose answer was lost, by the token ring, and counts
    what became of them: one object per strategy object that writes a counter item (optimistic,
    transactional) or items with tokens (sort-key).

    Parameters:
        key: the counter key (for the log and the observer).
        table: the table's spec.
        observer: told of numbers that may be lost (``on_waste``), if given.
    """

    __slots__ = ("_given_up", "key", "observer", "recovered", "table", "unresolved")

    def __init__(self, key: str, table: TableSpec, observer: Observer | None) -> None:
        self.key = key
        self.table = table
        self.observer = observer
        #: Numbers of writes whose answer was lost and that turned out applied: handed out.
        self.recovered = 0
        #: Numbers of writes that may have been applied and whose outcome will not be known.
        self.unresolved = 0
        #: Writes given up on, maybe applied, until the counter item is seen again.
        self._given_up: list[tuple[CounterWrite, str]] = []

    def was_applied(
        self, write: CounterWrite, found: Mapping[str, AttributeValue] | None
    ) -> bool | None:
        """Whether ``write``, resent after an answer that may have been lost, had been applied
        after all, judged from the counter item ``found`` by its failed condition (``ALL_OLD``).
        When that can no longer be told, its numbers are counted as unresolved and ``None``
        (false) is returned: numbers possibly lost, never numbers handed out twice."""
        applied = write.applied_in(found, key=self.key, table=self.table)
        if applied:
            self.recovered += len(write.numbers)
        elif applied is None:
            self.lost(write, f"more than {RECENT_WRITES} writes followed it")
        return applied

    def found_applied(self, write: CounterWrite) -> None:
        """A write counted as unresolved turned out applied (its items were found stored):
        its numbers are handed out after all."""
        self.unresolved -= len(write.numbers)
        self.recovered += len(write.numbers)

    def recovered_writes(self, numbers: int) -> None:
        """Count ``numbers`` handed out from a write whose answer was lost and that was found
        applied by other means (the sort-key strategy's item tokens)."""
        self.recovered += numbers

    def gave_up(self, write: CounterWrite, why: str) -> None:
        """``write`` may have been applied and will not be resent (every caller of it left,
        or the retry policy ran out): the counter item as seen next tells (`seen()`), and its
        numbers are counted as unresolved only if it was, or may have been, applied."""
        self._given_up.append((write, why))

    def seen(
        self, found: Mapping[str, AttributeValue] | CounterState | None, *, last: bool = False
    ) -> None:
        """Judge the writes given up on by the counter item ``found`` as it was after them (one
        a failed condition returned, or a `CounterState` a later write's condition matched):
        count those that were or may have been applied (`lost()`), forget those that were
        not. ``found`` ``None`` tells nothing: they wait, unless ``last`` (the object is
        closing): then they are counted."""
        if not self._given_up or (found is None and not last):
            return
        given_up, self._given_up = self._given_up, []
        state: CounterState | None = None
        with contextlib.suppress(CounterValueInvalid):  # (then it cannot tell: counted)
            state = found if not isinstance(found, Mapping) else self._state(found)
        for write, why in given_up:
            if state is None or write.applied_as_of(state) is not False:
                self.lost(write, why)

    def _state(self, item: Mapping[str, AttributeValue]) -> CounterState:
        return CounterState.of(item, key=self.key, table=self.table)

    def lost(self, write: CounterWrite, why: str) -> None:
        """Count the numbers of a write that may have been applied and whose outcome will not
        be known (statistics, a warning, the observer's ``on_waste``): possibly taken, never
        handed out."""
        count = len(write.numbers)
        self.unresolved += count
        log.warning(
            "counter %r: a write of %d numbers whose answer was lost was not resolved (%s);"
            " they may be lost",
            self.key,
            count,
            why,
        )
        if self.observer is not None:
            notify(self.observer.on_waste, WasteEvent(self.key, count, "unresolved"))
