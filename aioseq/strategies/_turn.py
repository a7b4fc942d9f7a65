"""Fair group commit across processes: the counter item's queue of writers.

Writers in several processes that move one counter item with conditional writes (the
optimistic and transactional strategies) race on it, and the race is not fair: the winner
learns the new value first and wins again. So writers that meet on a counter queue on it, in
the counter item itself, as a ticket lock does (Mellor-Crummey and Scott, 1991), each ticket
saying how many numbers its write takes, so that a writer knows the value it will write from
without reading it:

- ``aioseq_turn`` is a list of entries ``"<token>:<size>:<lease_ms>"``;
- a writer that lost a race, or met others lately, **enqueues** (one ``UpdateItem``,
  ``list_append``, ``ReturnValues=ALL_NEW``), which tells it the value and who is ahead;
- the head writes at once; the writer at position p waits about p - 1/2 times the interval
  between writes on the counter, then writes from the value the sizes ahead predict; its
  write requires ``#turn[0] = :its_entry`` and removes it; a wrong guess fails its condition,
  whose ``ALL_OLD`` item corrects it;
- a writer outside the queue writes only while the queue is empty.

The queue decides only who writes next: numbers come from the conditional write on the value
and ``aioseq_writes``, so uniqueness, gaplessness and exactly once never depend on it. What
the queue must guarantee is liveness (docs/group-commit.md, "Liveness"):

- an entry belongs to its writer object, not to one commit: callers that arrive while it
  waits take its place when the callers it was made for are gone;
- a writer that has nobody left to write for **leaves**: off its callers' path, in a task of
  its own, finding its entry wherever it moved (reading the item if it must), under the
  store's retry policy; so does an enqueue that was cancelled or whose answer was lost;
- an entry whose writer vanished is **stale** once it has stood at the head longer than its
  **lease** (the most of `MIN_LEASE_SECS`, the lease its writer wrote in it from its own
  round trips, and a few of the observer's round trips, on the observer's clock); the writer
  that finds it removes it together with every entry ahead of its own that it has watched for
  as long: a crash costs the writers behind one lease, once, however many entries it left.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections import deque
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import replace
from typing import Any, TypeVar

from aioseq._items import Item
from aioseq._limits import TURN_ATTRIBUTE
from aioseq._retry import Verdict, Waiting
from aioseq.clock import Clock
from aioseq.config import MAX_NUMBER, RECENT_WRITES
from aioseq.contracts import Store
from aioseq.errors import AioseqError, ConditionFailed
from aioseq.strategies._recent_writes import CounterState, new_token, turns_of

__all__ = [
    "MAX_LEASE_SECS",
    "MIN_LEASE_SECS",
    "Turn",
    "TurnHeld",
    "entry",
    "entry_lease_secs",
    "entry_size",
]

log = logging.getLogger("aioseq")

T = TypeVar("T")

#: The shortest lease: how long any entry may stand at the head before others remove it (s).
MIN_LEASE_SECS = 0.5

#: A writer's lease on the head, in its own round trips (written in its entry).
LEASE_ROUND_TRIPS = 4

#: The longest lease written or honoured, in seconds: a blocked event loop or a slow server
#: inflates round trips, and a vanished writer costs the others its lease.
MAX_LEASE_SECS = 10.0

#: An observer's least patience with a head, in its own round trips.
OBSERVER_ROUND_TRIPS = 4

#: Enqueues in a row that find the writer alone before it writes without the queue again.
SOLITARY_ENQUEUES = 2

#: Pauses behind one head after which a writer's pauses double (up to that head's lease).
LINGERING_WAITS = 4

#: The first guess of a round trip, before one was measured (seconds).
FIRST_ROUND_TRIP_SECS = 0.01

#: Attempts to take this writer's entries out of the queue when it leaves (each one
#: ``UpdateItem``; a failed one returns the queue as it is now).
LEAVE_ATTEMPTS = 8

#: How long a writer that seems to have nobody left to write for keeps its place, in seconds.
GIVE_UP_GRACE_SECS = 0.02

#: The least pause between the reads of a writer that is leaving and waits for an enqueue of
#: its own that was cut off on its way (seconds).
ARRIVAL_POLL_SECS = 0.1

#: How long an entry whose enqueue may have been applied is looked for, in seconds (a request
#: can arrive late: its entry may appear after its sender gave up on it).
STRAY_SECS = 120.0


def entry(token: str, size: int, lease_secs: float) -> str:
    """A queue entry: a writer's token, the count of numbers its write takes, and how long it
    may hold the head (milliseconds in the entry)."""
    return f"{token}:{size}:{round(lease_secs * 1000)}"


def _fields(queued: str) -> list[str]:
    return queued.split(":")


def entry_size(queued: str) -> int:
    """The count of numbers a queue entry's write takes (0 for an entry aioseq did not
    write)."""
    fields = _fields(queued)
    size = fields[1] if len(fields) in (2, 3) else ""
    return int(size) if size.isdecimal() and size.isascii() else 0


def entry_lease_secs(queued: str) -> float:
    """How long a queue entry's writer may hold the head, in seconds (0 when it says none)."""
    fields = _fields(queued)
    lease = fields[2] if len(fields) == 3 else ""
    return int(lease) / 1000 if lease.isdecimal() and lease.isascii() else 0.0


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


def _never_wanted() -> bool:
    return False


class TurnHeld(Waiting):
    """Writers ahead of this one in the counter's queue have not written yet: this writer
    waits (not raised to callers unless the retry policy runs out while waiting, as
    ``RetriesExhausted.last_error``). ``read_first``: its turn came, but it may not write from
    the prediction: it reads the counter item before its next write."""

    def __init__(self, key: str, position: int, *, read_first: bool = False) -> None:
        super().__init__(f"counter {key!r}: {position} writers ahead in the counter's queue")
        self.position = position
        self.read_first = read_first


class Turn:
    """One writer's side of the queue on counter ``key``'s counter item: the component the
    conditional strategies compose (one per counter object), through this interface only:

    - `ready()` before each write: the counter item to write from (enqueues, waits, predicts);
      `limit()`, the most numbers that write may take;
    - `lost_race()`, the retry engine's verdict on a failed condition; `committed()` after an
      applied write; `observed()` and `sent()` (or `timed()`), the counter's pace;
    - `give_up()` when nobody is left to write for, `leave()` on close;
    - `enabled`, whether it queues; `pause_secs()`, the wait behind the writers ahead.

    Parameters:
        store: where the counter item lives.
        key: the counter key.
        clock: what leases, pace and the grace are measured on (default: the store's).
    """

    def __init__(self, store: Store, key: str, clock: Clock | None = None) -> None:
        self.store = store
        self.key = key
        self.clock: Clock = clock or store.clock
        self._mine: str | None = None  # this writer's entry in the queue, while it has one
        # Entries of this writer's that may be on the item though it no longer uses them (an
        # enqueue cancelled or whose answer was lost, a place given up), and since when.
        self._strays: dict[str, float] = {}
        # Enqueues whose request may still arrive: not yet answered nor seen on the item.
        self._unseen: set[str] = set()
        self._leaving: asyncio.Task[None] | None = None
        self._give_up_asked: Callable[[], bool] | None = None  # a give-up to serve, if any
        self._contended = False  # lost a race, or wrote behind others: enqueue to write next
        self._alone = 0  # enqueues in a row that found nobody else in the queue
        self._paused = False  # waited since last told its position: write from the prediction
        self._position = 0  # entries ahead of this writer's, as last seen
        self._watched: dict[str, float] = {}  # entries in the queue as last seen, seen since
        self._head_since: tuple[str, float] | None = None  # another's entry at the head, since
        self._round_trip = FIRST_ROUND_TRIP_SECS  # moving average of this writer's requests
        self._recent: deque[float] = deque(maxlen=3)  # its last round trips
        self._interval = FIRST_ROUND_TRIP_SECS  # moving average of the time between writes
        self._last_writes: tuple[int, float] | None = None  # aioseq_writes seen, and when
        self._waits = 0  # pauses while one entry stayed at the head
        #: Whether the last `ready()` returned a prediction (not the counter item as seen).
        self.predicting = False
        #: Whether this writer queues: only while at most one of its writes is on its way at
        #: a time (an object whose commits run concurrently writes past the queue instead).
        self.enabled = True

    @property
    def entry(self) -> str | None:
        """This writer's entry in the queue, or ``None``."""
        return self._mine

    @property
    def holds(self) -> bool:
        """Whether this writer has, or may have, entries on the counter item."""
        return self._mine is not None or bool(self._strays)

    def limit(self) -> int | None:
        """The most numbers this writer's next write may take: the size it enqueued with
        (those behind it predicted from it), or ``None`` outside the queue."""
        return entry_size(self._mine) if self._mine is not None else None

    @property
    def round_trip_secs(self) -> float:
        """This writer's round trip: a moving average (a first guess before any)."""
        return self._round_trip

    def _fastest_round_trip(self) -> float:
        # The least of the last three: a connection's set-up, or one slow answer, is not a
        # far writer.
        return min(self._recent) if self._recent else FIRST_ROUND_TRIP_SECS

    def lease_secs(self) -> float:
        """How long this writer may hold the head (what it writes in its entry): a few of its
        fastest recent round trips."""
        lease = max(MIN_LEASE_SECS, LEASE_ROUND_TRIPS * self._fastest_round_trip())
        return min(lease, MAX_LEASE_SECS)

    def stale_after(self, head: str) -> float:
        """How long ``head`` may stand at the head before this writer removes it."""
        return min(
            max(
                MIN_LEASE_SECS,
                entry_lease_secs(head),
                OBSERVER_ROUND_TRIPS * self._fastest_round_trip(),
            ),
            MAX_LEASE_SECS,
        )

    def pause_secs(self) -> float:
        """How long a writer waits for the entries ahead of its own: the interval between
        writes on the counter per entry, less half of one for the head, which is already
        writing (at least a quarter). Past `LINGERING_WAITS` pauses behind one head, pauses
        double, up to the time left until that head is stale."""
        pause = max(self._position - 0.5, 0.25) * self._interval
        if self._waits > LINGERING_WAITS and self._head_since is not None:
            head, since = self._head_since
            left = self.stale_after(head) - (self.clock.now() - since)
            pause = max(pause, min(pause * 2 ** min(self._waits - LINGERING_WAITS, 16), left))
        return pause

    def observed(self, writes: int) -> None:
        """The counter item showed ``writes`` (``aioseq_writes``) just now: the time between
        writes on the counter, from the writes seen since the last observation (at most two
        of this writer's round trips each: a pause in the traffic is not a slow counter)."""
        now = self.clock.now()
        last = self._last_writes
        if last is not None and writes > last[0]:
            sample = min((now - last[1]) / (writes - last[0]), 2 * self.round_trip_secs)
            self._interval += (sample - self._interval) / 8
        if last is None or writes != last[0]:
            self._last_writes = (writes, now)

    def sent(self, secs: float) -> None:
        """A request of this writer's took ``secs`` seconds (its answer came back)."""
        self._round_trip += (secs - self._round_trip) / 8
        self._recent.append(secs)

    async def timed(self, request: Awaitable[T]) -> T:
        """Await ``request``, one of this writer's requests, and note its round trip."""
        started = self.clock.now()
        answer = await request
        self.sent(self.clock.now() - started)
        return answer

    def committed(self, before: CounterState, secs: float | None = None) -> None:
        """A write from ``before`` was applied (its answer back after ``secs`` seconds, if
        given): the entry it required is used."""
        if secs is not None:
            self.sent(secs)
        if self._mine is not None and before.turns[:1] == (self._mine,):
            self._mine = None  # (still contended if it queued behind others)
        self._head_since = None

    def _watch(self, turns: tuple[str, ...]) -> float:
        """Note the queue as seen now; the time."""
        now = self.clock.now()
        watched = self._watched
        self._watched = {e: watched.get(e, now) for e in turns}
        head = turns[0] if turns else None
        if head is None or head == self._mine:
            self._head_since = None
        elif self._head_since is None or self._head_since[0] != head:
            self._head_since = (head, now)
            self._waits = 0
        self._unseen.difference_update(turns)
        for stray, since in list(self._strays.items()):
            if stray not in turns and now - since > STRAY_SECS:
                del self._strays[stray]
                self._unseen.discard(stray)
        return now

    def _removable(self, turns: tuple[str, ...], now: float) -> list[tuple[int, str]]:
        """The entries this writer takes out of the queue now, with their indices: its own
        strays; and, once the head is stale, the head and every entry ahead of this writer's
        that it has watched for as long as that entry may hold the head."""
        found = [(i, e) for i, e in enumerate(turns) if e in self._strays]
        head = self._head_since
        if head is None or now - head[1] <= self.stale_after(head[0]):
            return found
        end = turns.index(self._mine) if self._mine in turns else len(turns)
        for i, e in enumerate(turns[:end]):
            if e in self._strays:
                continue
            if i == 0 or now - self._watched.get(e, now) > self.stale_after(e):
                found.append((i, e))
        return sorted(found)

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
        self,
        state: CounterState,
        size: int,
        saw: Callable[[Item], CounterState],
        *,
        predict: bool = True,
        max_value: int = MAX_NUMBER,
    ) -> CounterState:
        """The counter item to write ``size`` numbers from, given ``state`` (the item as last
        seen): ``state`` itself for a lone writer or the head of the queue, the predicted
        item for a writer further back that has waited its turn. Enqueues this writer first
        when it must (one ``UpdateItem``) and removes its strays and stale entries (one
        ``UpdateItem``); ``saw`` is given the counter item either returned and gives back
        its state. A prediction is refused (``TurnHeld(read_first=True)``) when ``predict``
        is false (a ``PutItem`` writes the ring of recent writes, which only the item
        holds), or when it would pass ``max_value`` (a writer ahead may take fewer numbers
        than it queued for).

        Raises:
            TurnHeld: writers ahead of this one have not written yet (the engine waits);
                with ``read_first``, a prediction refused.
        """
        self.predicting = False
        if not self.enabled:
            return state
        seen = state
        for _ in range(4):  # entries removed, this writer enqueued: at most 3 rounds
            turns = state.turns
            if not state.exists:  # a new counter: its first write creates it, no queue
                self._mine = None
                return state
            now = self._watch(turns)
            if self._mine is not None and self._mine not in turns:
                # Removed as stale by another writer, or an enqueue whose answer was lost
                # that has not arrived yet (it may still): a stray; enqueue again.
                self._strays[self._mine] = now
                self._mine = None
                self._contended = True
            removable = self._removable(turns, now)
            if removable:
                _, item = await self._remove(removable)
                state = saw(item)
                continue
            if self._mine is None and not turns and not self._contended:
                return state  # a lone writer
            if self._mine is None:
                state = saw(await self._enqueue(size))
                continue
            position = turns.index(self._mine)
            if position == 0:
                return state
            if self._paused:
                log.debug("counter %r: predicted at %d: %s", self.key, position, turns)
                self._paused = False
                self._waits += 1  # (back to 0 when the head changes)
                ahead = predicted(state, turns[:position])
                if not predict or ahead.value + size > max_value:
                    raise TurnHeld(self.key, len(seen.turns), read_first=True)
                self.predicting = True
                return ahead
            self._position, self._paused = position, True
            raise TurnHeld(self.key, position)
        self._position = len(state.turns)
        raise TurnHeld(self.key, len(state.turns))

    async def _update(self, **params: Any) -> dict[str, Any]:
        """One ``UpdateItem`` of the counter item (1 WCU; one attempt), timed."""
        return await self.timed(
            self.store.send_once(
                "update_item",
                TableName=self.store.table.name,
                Key=self.store.counter_item_key(self.key),
                **params,
            )
        )

    async def _enqueue(self, size: int) -> Item:
        token = entry(new_token(), size, self.lease_secs())
        # Its own before the answer: an enqueue whose answer was lost is recognised on the
        # counter item's next read (`CounterItem.ready()` forgets the item it saw).
        self._mine = token
        self._unseen.add(token)
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
            self._unseen.discard(token)
            self._mine, self._contended = None, False
            return {}
        except AioseqError as exc:
            if not exc.maybe_applied:
                self._unseen.discard(token)
                self._mine = None  # not applied: nothing of it is on the counter item
            raise
        except BaseException:  # cancelled: it may have been applied, and nobody will use it
            self._mine = None
            self._strays[token] = self.clock.now()
            raise
        self._unseen.discard(token)
        attributes: Item = response.get("Attributes") or {}
        log.debug("counter %r: enqueued %s: %s", self.key, token, turns_of(attributes))
        # Found alone in the queue twice in a row, the next write after this one tries
        # without it; once is not enough: others often enqueue just behind.
        self._alone = 0 if len(turns_of(attributes)) > 1 else self._alone + 1
        self._contended = self._alone < SOLITARY_ENQUEUES
        return attributes

    async def _remove(self, entries: Sequence[tuple[int, str]]) -> tuple[bool, Item]:
        """``REMOVE #turn[i], ... IF #turn[i] = :entry AND ...`` (one ``UpdateItem``): whether
        ``entries`` (index, entry) were removed, and the counter item after (``ALL_NEW``), or
        as it is when one was not there (``ALL_OLD``; empty if the item is gone).

        Resent after a lost answer (`_leave_now()`): safe, as its condition names each entry by
        its token, fresh and random, appended by one enqueue that is never resent (a retry
        enqueues a new token): once removed, an entry is never there again for a resend to
        remove, and no other entry matches it."""
        names = {"#turn": TURN_ATTRIBUTE}
        values = {f":e{n}": {"S": e} for n, (_, e) in enumerate(entries)}
        try:
            response = await self._update(
                UpdateExpression="REMOVE " + ", ".join(f"#turn[{i}]" for i, _ in entries),
                ConditionExpression=" AND ".join(
                    f"#turn[{i}] = :e{n}" for n, (i, _) in enumerate(entries)
                ),
                ExpressionAttributeNames=names,
                ExpressionAttributeValues=values,
                ReturnValues="ALL_NEW",
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
            )
        except ConditionFailed as exc:  # the queue moved, or an entry is gone
            return False, exc.item or {}
        log.debug("counter %r: removed %s", self.key, entries)
        for _, e in entries:
            self._strays.pop(e, None)
            self._unseen.discard(e)
        if self._head_since is not None and any(e == self._head_since[0] for _, e in entries):
            self._head_since = None
        attributes: Item = response.get("Attributes") or {}
        return True, attributes

    def give_up(self, wanted: Callable[[], bool] | None = None) -> None:
        """This writer seems to have nobody left to write for. Unless ``wanted()`` says
        otherwise after `GIVE_UP_GRACE_SECS` (callers whose deadline just ended often call
        again at once), its entry becomes a stray and a task of its own takes it out of the
        queue (see `leave()`). A request made while that task runs is served by it once it is
        done. Nothing when this writer holds no entry. Returns at once; no request on the
        caller's path."""
        if not self.holds:
            return
        self._give_up_asked = wanted or _never_wanted
        if self._leaving is None:
            self._leaving = asyncio.get_running_loop().create_task(
                self._give_up_later(), name=f"aioseq-leave({self.key!r})"
            )

    async def _give_up_later(self) -> None:
        try:
            while (wanted := self._give_up_asked) is not None:
                self._give_up_asked = None
                await self.clock.sleep(GIVE_UP_GRACE_SECS)
                if wanted():
                    continue  # a commit uses the place again
                log.debug("counter %r: gave up %s (strays %s)", self.key, self._mine, self._strays)
                self._drop_place()
                await self._leave_now(None)
        finally:
            self._leaving = None

    def _drop_place(self) -> None:
        if self._mine is not None:
            self._strays[self._mine] = self.clock.now()
            self._mine = None
        self._contended = False
        self._paused = False

    async def leave(self, turns: tuple[str, ...] | None = None) -> None:
        """Take this writer's entries out of the queue now and wait until they are out (its
        close): from then on it writes past the queue, never enqueueing again (a write of it
        still on its way ends so). ``turns``: the queue as last seen, if known. No error
        raised: entries it could not remove go stale for the others."""
        self.enabled = False
        self._give_up_asked = None
        self._drop_place()
        task = self._leaving
        if task is not None:
            await asyncio.shield(task)
        if self._strays:
            await self._leave_now(turns)

    async def _leave_now(self, turns: tuple[str, ...] | None) -> None:
        """Remove this writer's strays wherever they stand: at the indices the queue shows
        (``turns``, else read), and again at those each failed removal returns, at most
        `LEAVE_ATTEMPTS` requests, each under the store's retry policy. A stray not on the
        item as read is forgotten, unless its enqueue was cut off on its way and may still
        arrive: the item is read again for it during its lease (`_arriving()`). An error is
        logged: entries left go stale, and the writers behind remove them after their lease."""
        fresh = False
        try:
            for _ in range(LEAVE_ATTEMPTS):
                looked_for = set(self._strays)
                if turns is None:
                    turns = turns_of(await self.store.retry.run(self._read, counter_key=self.key))
                    fresh = True
                mine = [(i, e) for i, e in enumerate(turns) if e in self._strays]
                if not mine:
                    if not fresh:
                        turns = None  # maybe an old view: read the item
                        continue
                    pause = self._arriving(looked_for)
                    if pause is None:
                        return
                    await self.clock.sleep(pause)
                    turns = None
                    continue
                _, item = await self.store.retry.run(
                    functools.partial(self._remove, mine), counter_key=self.key
                )
                turns, fresh = turns_of(item), True
        except AioseqError as exc:  # (RetriesExhausted, StoreClosed: the entries go stale)
            log.info("counter %r: could not leave the counter's queue: %s", self.key, exc)

    def _arriving(self, missing: set[str]) -> float | None:
        """Strays ``missing`` from the counter item as just read: forget those that cannot
        arrive any more, and say how long to wait before looking again for the others (an
        enqueue cut off on its way, by a cancel or a lost connection, can still reach the
        server after a read that missed it), or ``None`` when none is left to wait for.

        An enqueue is waited for during its own lease from when it was cut off: one that
        arrives later costs the writers behind one lease, as a vanished writer's entry does."""
        now = self.clock.now()
        left: list[float] = []
        for stray in missing:
            since = self._strays.get(stray)
            if since is None:
                continue
            wait = entry_lease_secs(stray) - (now - since) if stray in self._unseen else 0.0
            if wait > 0:
                left.append(wait)
            else:
                self._strays.pop(stray, None)
                self._unseen.discard(stray)
        if not left:
            return None
        return min(min(left), max(2 * self._fastest_round_trip(), ARRIVAL_POLL_SECS))

    async def _read(self) -> Item:
        response = await self.store.send_once(
            "get_item",
            TableName=self.store.table.name,
            Key=self.store.counter_item_key(self.key),
            ConsistentRead=True,
        )
        item: Item = response.get("Item") or {}
        return item
