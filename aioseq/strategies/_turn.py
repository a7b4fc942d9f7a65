"""Fair group commit across processes: the counter item's turn.

Writers in several processes that move one counter item with conditional writes (the
optimistic and transactional strategies, grouped or not) race on it: one write per value wins.
Left alone, the race is not fair. The winner learns the new value from its own success and
sends its next group at once; a loser learns it from its failed condition (``ALL_OLD``), later
by the time the server took to refuse it, so its next attempt arrives after the winner's next
and fails again. With backoff growing on every lost race, one process commits almost every
group while the others wait seconds (measured: 2,976 puts against 32 each for the three others
in 3 s; docs/group-commit.md).

So a lost race is not treated as throttling:

- a loser whose failed condition returned the counter item (it knows the value) retries at
  once (`Verdict.RETRY_NOW`), with its group grown meanwhile; only a
  failure that returned nothing backs off as before;
- before that retry it takes the counter's **turn**: one ``UpdateItem`` that sets
  ``aioseq_turn`` to a fresh token if nobody holds it (``attribute_exists(#pk) AND
  attribute_not_exists(#turn)``, ``ReturnValues=ALL_NEW``, so its next write starts from the
  item as it is now);
- every conditional write on the counter item requires the turn it saw (``attribute_not_exists
  (#turn)``, or the token it holds) and removes it (``REMOVE #turn``): while a loser holds the
  turn, the winner's next write fails, and the winner, seeing someone else's turn, **yields**:
  it waits about one of its own round trips (`Verdict.YIELD`, a pause
  that does not grow), reads the counter item again (one ``GetItem``, cheaper than a write
  sent to fail) and writes once the turn is gone;
- a turn held longer than `TURN_TIMEOUT_SECS` (or 20 round trips, whichever is longer)
  by the same token, as this writer measured it on its own clock, is stale (its holder
  crashed, was cancelled or closed): the next write takes it over (it requires that token and
  removes it), so a lost holder delays the others, never stops them.

A lone writer never loses a race, so it never takes a turn: one process pays nothing but the
condition's few bytes. The turn decides only who writes next; numbers still come from the
conditional write, so uniqueness, gaplessness and exactly once do not depend on it.
"""

from __future__ import annotations

import time

from aioseq._protocols import Store
from aioseq._retry import Verdict
from aioseq._values import TURN_ATTRIBUTE, Item
from aioseq.errors import AioseqError, ConditionFailed
from aioseq.strategies._recent_writes import CounterState, new_token

__all__ = ["TURN_TIMEOUT_SECS", "Turn", "TurnHeld"]

#: The least time a turn may be held before another writer takes it over, in seconds.
TURN_TIMEOUT_SECS = 0.5

#: Round trips a turn may be held before another writer takes it over.
TURN_TIMEOUT_ROUND_TRIPS = 20

#: A yield's pause, in this writer's round trips.
YIELD_ROUND_TRIPS = 0.5

#: The first guess of a write's round trip, before one was measured (seconds).
FIRST_ROUND_TRIP_SECS = 0.01


class TurnHeld(AioseqError):
    """Another writer holds the counter's turn: this writer yields (not raised to callers
    unless the retry policy runs out while yielding, as ``RetriesExhausted.last_error``)."""

    def __init__(self, key: str, turn: str) -> None:
        super().__init__(f"counter {key!r}: another writer holds the turn ({turn})")
        self.turn = turn


class Turn:
    """One writer's side of the turn on counter ``key``'s counter item.

    Parameters:
        store: where the counter item lives.
        key: the counter key.
    """

    __slots__ = ("_held_since", "_mine", "_reread", "_round_trip", "_want", "key", "store")

    def __init__(self, store: Store, key: str) -> None:
        self.store = store
        self.key = key
        self._mine: str | None = None  # the token of the turn this writer holds
        self._want = False  # lost a race with no turn held: take it before the next write
        self._reread = False  # yielded: read the counter item before the next write
        self._held_since: tuple[str, float] | None = None  # another's turn, first seen when
        self._round_trip = FIRST_ROUND_TRIP_SECS  # moving average of this writer's writes

    def pause_secs(self) -> float:
        """How long a yield waits: half of this writer's round trip (the holder took the turn
        before this writer's write failed on it, so its own write is already on its way)."""
        return self._round_trip * YIELD_ROUND_TRIPS

    def sent(self, secs: float) -> None:
        """A write took ``secs`` seconds (its answer came back)."""
        self._round_trip += (secs - self._round_trip) / 8

    def committed(self, before: CounterState) -> None:
        """A write from ``before`` was applied: the turn it required is used."""
        if before.turn is not None and before.turn == self._mine:
            self._mine = None
        self._held_since = None

    def _stale(self, turn: str) -> bool:
        """Whether another writer's ``turn`` has been seen for longer than it should take."""
        now = time.monotonic()
        if self._held_since is None or self._held_since[0] != turn:
            self._held_since = (turn, now)
            return False
        limit = max(TURN_TIMEOUT_SECS, TURN_TIMEOUT_ROUND_TRIPS * self._round_trip)
        return now - self._held_since[1] > limit

    def lost_race(self, state: CounterState | None) -> Verdict:
        """The verdict on a write that lost the race on the counter, given the counter item
        its failed condition returned (``None``: nothing came back, back off as before).
        Called once or twice per failure by the retry engine: it is idempotent."""
        if state is None:
            return Verdict.RETRY
        turn = state.turn
        if turn is None:
            self._want = True
            return Verdict.RETRY_NOW
        if turn == self._mine or self._stale(turn):
            return Verdict.RETRY_NOW
        self._reread = True
        return Verdict.YIELD

    def must_reread(self) -> bool:
        """After a yield, the counter item as last seen is stale: read it again (once)."""
        reread, self._reread = self._reread, False
        return reread

    async def check(self, state: CounterState) -> Item | None:
        """Before a write from ``state`` (the counter item as last seen): if this writer lost
        a race and nobody holds the turn, take it (one ``UpdateItem``, 1 WCU) and return the
        counter item as it is now, to write from; else ``None`` (write from ``state``; a stale
        turn is taken over by the write itself).

        Raises:
            TurnHeld: another writer holds the turn and it is not stale (the engine yields).
        """
        turn = state.turn
        if turn is not None and turn != self._mine:
            if not self._stale(turn):
                self._reread = True
                raise TurnHeld(self.key, turn)
            return None
        if self._want and state.exists and turn is None:
            self._want = False
            return await self._take()
        return None

    async def _take(self) -> Item:
        token = new_token()
        table = self.store.table
        try:
            response = await self.store.call(
                "update_item",
                TableName=table.name,
                Key=self.store.counter_item_key(self.key),
                UpdateExpression="SET #turn = :turn",
                ConditionExpression="attribute_exists(#pk) AND attribute_not_exists(#turn)",
                ExpressionAttributeNames={"#turn": TURN_ATTRIBUTE, "#pk": table.partition_key},
                ExpressionAttributeValues={":turn": {"S": token}},
                ReturnValues="ALL_NEW",
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
            )
        except ConditionFailed as exc:  # another writer took it first, or the item is gone
            self._reread = True
            turn = (exc.item or {}).get(TURN_ATTRIBUTE, {}).get("S", "none")
            raise TurnHeld(self.key, str(turn)) from exc
        self._mine = token
        attributes: Item = response.get("Attributes") or {}
        return attributes
