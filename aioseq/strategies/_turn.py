"""Fair group commit across processes: the counter item's queue of turns.

Writers in several processes that move one counter item with conditional writes (the
optimistic and transactional strategies, grouped or not) race on it: one write per value wins.
Left alone, the race is not fair. The winner learns the new value from its own success and
sends its next group at once; a loser learns it from its failed condition (``ALL_OLD``), later
by the time the server took to refuse it, so its next attempt arrives after the winner's next
and fails again. With backoff growing on every lost race, one process commits almost every
group while the others wait seconds (measured: 2,976 puts against 32 each for the three others
in 3 s; docs/group-commit.md).

So writers that meet on a counter queue on it, in the counter item itself, as a ticket lock
does (Mellor-Crummey and Scott, "Algorithms for scalable synchronization on shared-memory
multiprocessors", 1991), with each ticket saying how many numbers it will take, so that a writer
knows the value it will write from without reading it:

- ``aioseq_turn`` is a list of entries ``"<token>:<size>"``: a writer's fresh token and the
  count of numbers its next write takes;
- a writer that lost a race (its failed condition returned the counter item), or that met
  others in the queue lately (it writes without the queue again only after finding itself
  alone in it twice in a row), **enqueues**: one ``UpdateItem``, ``SET #turn =
  list_append(if_not_exists(#turn, :empty), :entry) IF attribute_exists(#pk)``,
  ``ReturnValues=ALL_NEW`` (1 WCU), which tells it the value and the entries ahead of it;
- the writer at the head writes at once; one at position p waits about p - 1/2 times the
  interval between writes it has seen on the counter (from the ``aioseq_writes`` values
  its enqueue and its failed writes return; `Verdict.YIELD`, a pause that does not grow)
  and then writes **from the predicted
  value**: the value it saw plus the sizes of the p entries ahead, and ``aioseq_writes`` plus
  p, with no read. Its write requires ``#turn[0] = :its_entry`` and removes it (``REMOVE
  #turn[0]``); it takes exactly the size it enqueued with (puts that arrived since wait for
  its next turn, as callers that arrive during a commit wait for the next one);
- a write sent too early (those ahead not done yet) or from a wrong prediction (a writer ahead
  took fewer numbers) fails its condition and returns the item (``ALL_OLD``): the writer
  predicts again from it, at once if it is now at the head, else after another pause;
- a writer outside the queue writes only when the queue is empty (``attribute_not_exists
  (#turn[0])``), so a lone writer pays nothing but that condition's few bytes;
- an entry at the head for longer than `TURN_TIMEOUT_SECS` (or 20 round trips, whichever is
  longer), as this writer measured it on its own clock, is stale (its writer crashed, was
  cancelled or closed): this writer removes it (one ``UpdateItem``, ``REMOVE #turn[0] IF
  #turn[0] = :stale``) and goes on; a lost writer delays the others, never stops them. A
  writer whose own entry was removed enqueues again.

The queue decides only who writes next; numbers still come from the conditional write on the
value and ``aioseq_writes``, so uniqueness, gaplessness and exactly once do not depend on it.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

from aioseq._protocols import Store
from aioseq._retry import Verdict
from aioseq._values import TURN_ATTRIBUTE, Item
from aioseq.config import RECENT_WRITES
from aioseq.errors import AioseqError, ConditionFailed, StoreError
from aioseq.strategies._recent_writes import CounterState, new_token, turns_of

__all__ = ["TURN_TIMEOUT_SECS", "Turn", "TurnHeld", "entry", "entry_size"]

log = logging.getLogger("aioseq")

#: The least time an entry may stay at the head before another writer removes it, in seconds.
TURN_TIMEOUT_SECS = 0.5

#: Round trips an entry may stay at the head before another writer removes it.
TURN_TIMEOUT_ROUND_TRIPS = 20

#: Enqueues in a row that find the writer alone before it writes without the queue again.
SOLITARY_ENQUEUES = 2

#: Pauses behind one head after which a writer's pauses double (up to that head's staleness).
LINGERING_WAITS = 4

#: The first guess of a write's round trip, before one was measured (seconds).
FIRST_ROUND_TRIP_SECS = 0.01


def entry(token: str, size: int) -> str:
    """A queue entry: a writer's token and the count of numbers its write takes."""
    return f"{token}:{size}"


def entry_size(queued: str) -> int:
    """The count of numbers a queue entry's write takes (0 for an entry aioseq did not
    write)."""
    _, _, size = queued.rpartition(":")
    return int(size) if size.isdigit() else 0


def predicted(state: CounterState, ahead: Sequence[str]) -> CounterState:
    """The counter item as it will be once the writes of the entries ``ahead`` are applied:
    the value moved by their sizes, ``aioseq_writes`` by their count, the ring of recent
    writes there (its slots' contents are not needed to write), the queue without them."""
    return replace(
        state,
        value=state.value + sum(entry_size(e) for e in ahead),
        writes=(state.writes or 0) + len(ahead),
        tokens=state.tokens or ("",) * RECENT_WRITES,
        turns=state.turns[len(ahead) :],
    )


class TurnHeld(AioseqError):
    """Writers ahead of this one in the counter's queue have not written yet: this writer
    waits (not raised to callers unless the retry policy runs out while waiting, as
    ``RetriesExhausted.last_error``)."""

    def __init__(self, key: str, position: int) -> None:
        super().__init__(f"counter {key!r}: {position} writers ahead in the counter's queue")
        self.position = position


class Turn:
    """One writer's side of the queue on counter ``key``'s counter item.

    Parameters:
        store: where the counter item lives.
        key: the counter key.
    """

    __slots__ = (
        "_alone",
        "_contended",
        "_head_since",
        "_interval",
        "_last_writes",
        "_mine",
        "_paused",
        "_position",
        "_round_trip",
        "_waits",
        "enabled",
        "key",
        "predicting",
        "store",
    )

    def __init__(self, store: Store, key: str) -> None:
        self.store = store
        self.key = key
        self._mine: str | None = None  # this writer's entry in the queue, while it has one
        self._contended = False  # lost a race, or wrote behind others: enqueue to write next
        self._alone = 0  # enqueues in a row that found nobody else in the queue
        self._paused = False  # waited since last told its position: write from the prediction
        self._position = 0  # entries ahead of this writer's, as last seen
        self._head_since: tuple[str, float] | None = None  # another's entry at the head, since
        self._round_trip = FIRST_ROUND_TRIP_SECS  # moving average of this writer's writes
        self._interval = FIRST_ROUND_TRIP_SECS  # moving average of the time between writes
        self._last_writes: tuple[int, float] | None = None  # aioseq_writes seen, and when
        self._waits = 0  # pauses while one entry stayed at the head
        #: Whether the last `ready()` returned a prediction (not the counter item as seen).
        self.predicting = False
        #: Whether this writer queues: only while at most one of its writes is on its way at
        #: a time (one `Turn` per writer; an object whose commits run concurrently, ungrouped
        #: with ``max_in_flight`` other than 1, writes past the queue and backs off instead).
        self.enabled = True

    @property
    def entry(self) -> str | None:
        """This writer's entry in the queue, or ``None``."""
        return self._mine

    def limit(self) -> int | None:
        """The most numbers this writer's next write may take: the size it enqueued with
        (those behind it predicted from it), or ``None`` outside the queue."""
        return entry_size(self._mine) if self._mine is not None else None

    def pause_secs(self) -> float:
        """How long a writer waits for the entries ahead of its own: the interval between
        writes it has seen on the counter (`observed()`) per entry, less half of one for the
        head, which is already writing (at least a quarter: a write sent a little early fails
        and costs a request, one sent late leaves the counter idle). Transactions overlap in
        flight, so that interval is shorter than the writer's own round trip, which it
        used before (measured, 4 processes on DynamoDB Local: half the writes sent too
        early, the same puts/s and p99). Past the fourth pause during which one entry stayed
        at the head (its writer may be slow, or gone), each pause doubles, up to the time
        left until that entry is stale: a vanished writer costs the writers behind it a
        score of attempts of their retry policy, not a hundred, and a slow one little."""
        pause = max(self._position - 0.5, 0.25) * self._interval
        if self._waits > LINGERING_WAITS and self._head_since is not None:
            left = self._stale_secs() - (time.monotonic() - self._head_since[1])
            pause = max(pause, min(pause * 2 ** min(self._waits - LINGERING_WAITS, 16), left))
        return pause

    def _stale_secs(self) -> float:
        return max(TURN_TIMEOUT_SECS, TURN_TIMEOUT_ROUND_TRIPS * self._round_trip)

    def observed(self, writes: int) -> None:
        """The counter item showed ``writes`` (``aioseq_writes``) just now: the time between
        writes on the counter, from the writes seen since the last observation (at most two
        of this writer's round trips each: a pause in the traffic is not a slow counter)."""
        now = time.monotonic()
        last = self._last_writes
        if last is not None and writes > last[0]:
            sample = min((now - last[1]) / (writes - last[0]), 2 * self._round_trip)
            self._interval += (sample - self._interval) / 8
        if last is None or writes != last[0]:
            self._last_writes = (writes, now)

    def sent(self, secs: float) -> None:
        """A write took ``secs`` seconds (its answer came back)."""
        self._round_trip += (secs - self._round_trip) / 8

    def committed(self, before: CounterState) -> None:
        """A write from ``before`` was applied: the entry it required is used."""
        if self._mine is not None and before.turns[:1] == (self._mine,):
            self._mine = None  # (still contended if it queued behind others)
        self._head_since = None

    def _stale(self, head: str) -> bool:
        """Whether another writer's entry ``head`` has been at the head for longer than a
        write should take."""
        now = time.monotonic()
        if self._head_since is None or self._head_since[0] != head:
            self._head_since = (head, now)
            self._waits = 0
            return False
        return now - self._head_since[1] > self._stale_secs()

    def lost_race(self, state: CounterState | None) -> Verdict:
        """The verdict on a write that lost the race on the counter, given the counter item
        its failed condition returned (``None``: nothing came back, back off as before).
        Called once or twice per failure by the retry engine: it is idempotent."""
        if state is None or not self.enabled:
            return Verdict.RETRY
        turns = state.turns
        if self._mine is not None and self._mine in turns:
            position = turns.index(self._mine)
            if len(turns) > position + 1:
                self._contended = True  # others wait behind it: enqueue after this write
            if position > 0:
                self._position, self._paused = position, True
                return Verdict.YIELD
            return Verdict.RETRY_NOW
        self._contended = True  # enqueue before the next write
        return Verdict.RETRY_NOW

    async def ready(
        self, state: CounterState, size: int, saw: Callable[[Item], CounterState]
    ) -> CounterState:
        """The counter item to write ``size`` numbers from, given ``state`` (the item as last
        seen): ``state`` itself for a lone writer or the head of the queue, the predicted
        item for a writer further back that has waited its turn. Enqueues this writer first
        when it must (one ``UpdateItem``) and removes a stale head (one ``UpdateItem``);
        ``saw`` is given the counter item either returned and gives back its state.

        Raises:
            TurnHeld: writers ahead of this one have not written yet (the engine waits).
        """
        self.predicting = False
        if not self.enabled:
            return state
        for _ in range(4):  # a stale head removed, this writer enqueued: at most 3 rounds
            turns = state.turns
            if not state.exists:  # a new counter: its first write creates it, no queue
                self._mine = None
                return state
            if self._mine is not None and self._mine not in turns:
                self._mine = None  # removed as stale by another writer: enqueue again
                self._contended = True
            if self._mine is None and not turns and not self._contended:
                return state  # a lone writer
            if turns and turns[0] != self._mine and self._stale(turns[0]):
                state = saw(await self._remove_head(turns[0]))
                continue
            if self._mine is None:
                state = saw(await self._enqueue(size))
                continue
            position = turns.index(self._mine)
            if position == 0:
                return state
            if self._paused:
                self._paused = False
                self._waits += 1  # (back to 0 when the head changes)
                self.predicting = True
                return predicted(state, turns[:position])
            self._position, self._paused = position, True
            raise TurnHeld(self.key, position)
        self._position = len(state.turns)
        raise TurnHeld(self.key, len(state.turns))

    async def _update(self, **params: Any) -> dict[str, Any]:
        """One ``UpdateItem`` of the counter item (1 WCU; one attempt: the caller runs under
        the retry engine)."""
        return await self.store.call(
            "update_item",
            TableName=self.store.table.name,
            Key=self.store.counter_item_key(self.key),
            **params,
        )

    async def _enqueue(self, size: int) -> Item:
        token = entry(new_token(), size)
        # Its own before the answer: an enqueue whose answer was lost is recognised on the
        # counter item's next read (`CounterItem.ready()` forgets the item it saw) instead
        # of being left as another's entry, which would hold everyone until found stale.
        self._mine = token
        try:
            response = await self._update(
                UpdateExpression="SET #turn = list_append(if_not_exists(#turn, :empty), :entry)",
                ConditionExpression="attribute_exists(#pk)",
                ExpressionAttributeNames={
                    "#turn": TURN_ATTRIBUTE,
                    "#pk": self.store.table.partition_key,
                },
                ExpressionAttributeValues={":empty": {"L": []}, ":entry": {"L": [{"S": token}]}},
                ReturnValues="ALL_NEW",
            )
        except ConditionFailed:  # the counter item is gone: the next write creates it
            self._mine, self._contended = None, False
            return {}
        except BaseException as exc:
            if not (isinstance(exc, AioseqError) and exc.maybe_applied):
                self._mine = None  # not applied: nothing of it is on the counter item
            raise
        attributes: Item = response.get("Attributes") or {}
        # Found alone in the queue twice in a row, the next write after this one tries
        # without it; once is not enough: others often enqueue just behind (measured: a lone
        # write sent then fails, a round trip lost and the writer at the back of the queue).
        self._alone = 0 if len(turns_of(attributes)) > 1 else self._alone + 1
        self._contended = self._alone < SOLITARY_ENQUEUES
        return attributes

    async def _remove(self, i: int, queued: str) -> tuple[bool, Item]:
        """``REMOVE #turn[i] IF #turn[i] = :entry`` (one ``UpdateItem``): whether ``queued``
        was removed, and the counter item after (``ALL_NEW``), or as it is when it was not
        there (``ALL_OLD``; empty if the item is gone)."""
        try:
            response = await self._update(
                UpdateExpression=f"REMOVE #turn[{i}]",
                ConditionExpression=f"#turn[{i}] = :entry",
                ExpressionAttributeNames={"#turn": TURN_ATTRIBUTE},
                ExpressionAttributeValues={":entry": {"S": queued}},
                ReturnValues="ALL_NEW",
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
            )
        except ConditionFailed as exc:  # the queue moved, or the entry is gone
            return False, exc.item or {}
        attributes: Item = response.get("Attributes") or {}
        return True, attributes

    async def leave(self, turns: tuple[str, ...]) -> None:
        """Take this writer's entry out of the queue when nobody is left for it to write
        for (its callers gone, its object closing, its commit failed): one ``UpdateItem``,
        ``REMOVE #turn[i] IF #turn[i] = :entry``, at the index ``turns`` (the queue as last
        seen) shows, then once
        more at the index its failure returns. Best effort: an entry left (an error, an
        unknown queue) is removed by the writers behind it once it is stale."""
        mine, self._mine = self._mine, None
        for _ in range(2):
            if mine is None or mine not in turns:
                return
            try:
                removed, item = await self._remove(turns.index(mine), mine)
            except StoreError as exc:
                log.debug("counter %r: left the queue's entry to go stale: %s", self.key, exc)
                return
            if removed:
                return
            turns = turns_of(item)  # try at the index it has now

    async def _remove_head(self, head: str) -> Item:
        """Remove another writer's stale entry at the head (unless its writer wrote
        meanwhile, or another removed it); the counter item as it is now."""
        removed, item = await self._remove(0, head)
        if removed:
            self._head_since = None
        return item
