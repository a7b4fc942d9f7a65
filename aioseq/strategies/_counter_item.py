"""A counter's counter item: `CounterItem` is where it is and the limits a write must keep
(every strategy); `TrackedCounterItem` adds the item as last seen, told to this writer's side
of its queue (`Turn`, handed to it; the optimistic and transactional strategies: their
writes are conditional on the value last seen).
"""

from __future__ import annotations

from typing import Any

from aioseq._items import number
from aioseq._limits import WRITES_ATTRIBUTE
from aioseq._retry import Verdict
from aioseq.contracts import Store
from aioseq.errors import AioseqError, CounterValueInvalid, NumberingMismatch, NumberOutOfRange
from aioseq.numbering import Numbering, check_recorded, decode_recorded
from aioseq.strategies._recent_writes import CounterState, CounterWrite, new_token, turns_of
from aioseq.strategies._turn import Turn, TurnHeld

__all__ = ["CounterItem", "TrackedCounterItem"]


class CounterItem:
    """Counter ``key``'s counter item in ``store``'s table.

    Parameters:
        store: where the counter item lives.
        key: the counter key.
        numbering: the numbering every write records and requires.
        max_value: the highest number a write may take.
    """

    __slots__ = ("key", "max_value", "numbering", "store")

    def __init__(self, store: Store, key: str, numbering: Numbering, max_value: int) -> None:
        self.store = store
        self.key = key
        self.numbering = numbering
        self.max_value = max_value

    @property
    def primary_key(self) -> dict[str, Any]:
        """The counter item's primary key, as AttributeValues."""
        return self.store.counter_item_key(self.key)

    async def read(self) -> dict[str, Any] | None:
        """One strongly consistent ``GetItem`` of the counter item (1 RCU; one attempt: run
        it under the retry engine); ``None`` if it does not exist."""
        response = await self.store.send_once(
            "get_item",
            TableName=self.store.table.name,
            Key=self.primary_key,
            ConsistentRead=True,
        )
        item: dict[str, Any] | None = response.get("Item")
        return item

    def check_number(self, n: int) -> int:
        """``n`` if it is at most `max_value` (and 38 digits).

        Raises:
            NumberOutOfRange: it is not.
        """
        if n > self.max_value:
            raise NumberOutOfRange(n, f"{n} is above max_value {self.max_value}")
        number(n)
        return n


class TrackedCounterItem(CounterItem):
    """Counter ``key``'s counter item as last seen, told to this writer's side of its queue.

    A conditional write on the value last seen is always safe: if another writer moved the
    counter, the condition fails and its ``ALL_OLD`` item (passed to `saw()`) corrects
    the guess, with no second read.

    Parameters: as `CounterItem`, and
        turn: this writer's side of the counter's queue (its owner gives up and leaves it).
    """

    __slots__ = ("_known", "_seen", "_turn")

    def __init__(
        self, store: Store, key: str, numbering: Numbering, max_value: int, turn: Turn
    ) -> None:
        super().__init__(store, key, numbering, max_value)
        # The item as last seen (read, written, or returned by a failed condition); _known is
        # False until the first read and after a failure that returned nothing.
        self._seen: dict[str, Any] | None = None
        self._known = False
        self._turn = turn

    async def read(self) -> dict[str, Any] | None:
        """As `CounterItem.read()`; its round trip is timed for the queue's pace."""
        return await self._turn.timed(super().read())

    async def last_seen(self) -> CounterState:
        """The counter item as last seen, read only when nothing has been seen yet.

        Raises:
            CounterValueInvalid: the counter item's value is not a whole number.
        """
        if not self._known:
            item = await self.read()
            check_recorded(item, self.key, self.numbering)  # (a Region scope record, say)
            self.saw(item)
        return CounterState.of(self._seen, key=self.key, table=self.store.table)

    async def ready(self, size: int, *, predict: bool = True) -> CounterState:
        """The counter item to build the next conditional write of ``size`` numbers from: as
        last seen (read when unknown), or as this writer's place in the counter's queue
        predicts it (`Turn.ready()`; the queue is joined first when this writer lost a
        race). The write may take at most `Turn.limit()` numbers. ``predict=False``: never a
        prediction (a ``PutItem`` writes the whole item, ring of recent writes included,
        which only the item itself holds); refused, or past `max_value`, a prediction is
        replaced by a read of the item after the writer's pause.

        Raises:
            CounterValueInvalid: the counter item's value is not a whole number.
            TurnHeld: writers ahead of this one have not written yet: wait, then call again.
        """
        state = await self.last_seen()
        try:
            return await self._turn.ready(
                state, size, self._saw_state, predict=predict, max_value=self.max_value
            )
        except TurnHeld as held:
            if held.read_first:  # a prediction refused: wait, read the item, write from it
                self._known = False
            raise
        except AioseqError as exc:
            if exc.maybe_applied:  # an enqueue whose answer was lost: read what it did
                self._known = False
            raise

    async def leave(self) -> None:
        """Take this writer's entries, if any, out of the counter's queue and wait until they
        are out (its close), from the queue as last seen: see `Turn.leave()`. No error
        raised."""
        await self._turn.leave(turns_of(self._seen) if self._known else None)

    def _saw_state(self, item: dict[str, Any]) -> CounterState:
        self.saw(item)
        return CounterState.of(item, key=self.key, table=self.store.table)

    def lost_race(self) -> Verdict:
        """The retry engine's verdict on a write that lost the race on the counter item (its
        failed condition's ``ALL_OLD`` already passed to `saw()`)."""
        if not self._known:
            return self._turn.lost_race(None)
        try:
            state = CounterState.of(self._seen, key=self.key, table=self.store.table)
        except CounterValueInvalid:
            return Verdict.RETRY  # the next attempt reads it and raises
        return self._turn.lost_race(state)

    def committed(self, write: CounterWrite, secs: float) -> None:
        """``write`` was applied, its answer back after ``secs`` seconds: remember the counter
        item it left, and that its turn is used."""
        self.saw(write.after(self.store.table))
        self._turn.committed(write.before, secs)

    def saw(self, item: dict[str, Any] | None, *, known: bool = True) -> None:
        """Remember the counter item as it is now (``known=False``: forget it)."""
        self._seen, self._known = item, known
        writes = (item or {}).get(WRITES_ATTRIBUTE, {}).get("N")
        if known and writes is not None and writes.isdigit():
            self._turn.observed(int(writes))

    def new_write(
        self, before: CounterState, n: int, kind: str, *, replace_kind: bool = False
    ) -> CounterWrite:
        """A conditional write that takes the ``n`` numbers after ``before``, with a fresh
        token, recording `numbering` (its condition requires the numbering ``before``
        holds, so a numbering changed since fails it) and ``kind``, what the counter is (a
        [`CounterKind`][aioseq.layout.CounterKind]'s text: where none is recorded, or with
        ``replace_kind`` always).

        Raises:
            NumberingMismatch: ``before`` recorded another numbering (nothing is sent).
            NumberOutOfRange: they pass `max_value` (or 38 digits).
        """
        text = self.numbering.encode()
        if before.numbering is not None and before.numbering != text:
            raise NumberingMismatch(self.key, decode_recorded(before.numbering), self.numbering)
        new = self.check_number(before.value + n)
        return CounterWrite(
            before,
            new,
            new_token(),
            text,
            queued=self._turn.enabled,
            kind=kind,
            replace_kind=replace_kind,
        )
