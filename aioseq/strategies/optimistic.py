"""Strategy 3: optimistic locking (read, then a conditional write of ``current + n``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from aioseq._checks import check_count
from aioseq._coalesce import Waiter
from aioseq._retry import Verdict
from aioseq.config import MAX_NUMBER, GroupCommit
from aioseq.contracts import Store
from aioseq.errors import ConditionFailed, ConfigurationError, TransactionCanceled
from aioseq.layout import CounterKind
from aioseq.numbering import Numbering
from aioseq.strategies._base import ConditionalCounterStrategy
from aioseq.strategies._group_commit import GroupCommitter, Settled
from aioseq.strategies._outcomes import counter_write_verdict
from aioseq.strategies._recent_writes import CounterWrite

__all__ = ["OptimisticCounter"]

WriteForm = Literal["update", "put"]

#: What its counter item says it is, where it says nothing yet: a counter that stores no items.
_KIND = CounterKind("optimistic").encode()

#: A call waiting for ``request`` numbers.
Take = Waiter[int, range]


class OptimisticCounter(ConditionalCounterStrategy):
    """Numbers from a read of the counter item and a conditional write of ``current + n``:
    handed out without holes, a lost race costs one more write.

    The first call reads the counter item (``GetItem``, strongly consistent); each call then
    sends one write (``UpdateItem`` or ``PutItem``, by ``write``) that sets the value and
    records a fresh token in the counter item's ring of its last 32 writes, ``IF #value =
    :current AND #writes = :w``. A lost race fails the condition and brings the winner's value
    back (``ALL_OLD``), so the retry needs no second read; a write whose answer was lost is
    resent as it is and the ring tells whether it was applied. See [What each strategy
    sends](../strategies.md#optimistic-locking) and [Guarantees](../guarantees.md).

    Guarantees:
        - unique: always (a number is handed out only when its conditional write succeeded).
        - gapless: among numbers handed out, yes, unless a lost answer stays unresolved (32 or
          more writes followed it before the resend: its numbers are counted as
          ``unresolved``, a hole, never a duplicate); a caller that crashes, or is cancelled,
          after its write and before using the number leaves a hole in what it meant to store.
        - ordered: like the atomic counter, across processes.
        - crash: costs at most the numbers of calls in flight; a crash before the write costs
          nothing.

    Cost: 1 conditional write (1 WCU: the counter item with its ring stays under 1 KB) per
    call without contention, plus 1 ``GetItem`` (1 RCU) on the first call; each lost race adds
    one write. Grouped (the default), one write serves every caller waiting. Across processes
    one writer per round trip wins, so throughput falls as concurrent writers on one counter
    key grow: prefer the atomic counter for raw numbers.

    Parameters:
        store, key, max_in_flight: see `GroupCommitStrategy` (``key``: the counter key).
        write: ``"update"`` (``UpdateItem``: touches only the value, the write count and the
            ring) or ``"put"`` (``PutItem``: replaces the whole counter item, dropping other
            attributes on it).
        max_value: the highest number handed out (see `Strategy`).
        group: group commit of concurrent calls, a [`GroupCommit`][aioseq.GroupCommit]
            (``True``, the default, is ``GroupCommit()``; ``False``: one write per call): the
            waiting callers' numbers come from one conditional write of ``current + k``, in
            arrival order, with the same guarantees. See [Group commit](../group-commit.md).

    Raises:
        ConfigurationError: bad ``key`` or ``write``.
    """

    def __init__(
        self,
        store: Store,
        key: str,
        *,
        write: WriteForm = "update",
        max_value: int = MAX_NUMBER,
        max_in_flight: int | None = 1,
        group: GroupCommit | bool = True,
    ) -> None:
        super().__init__(store, key, max_value=max_value, max_in_flight=max_in_flight)
        self._committer = GroupCommitter(
            self, self._retry, self._verdict, handed_out=self._handed_out
        )
        self._group = self._grouper(self._commit, group, largest=None)
        if write not in ("update", "put"):
            raise ConfigurationError(f"write must be 'update' or 'put': {write!r}")
        self.write: WriteForm = write

    async def next(self) -> int:
        """The next number. See [`next_many()`][aioseq.OptimisticCounter.next_many]."""
        return (await self.next_many(1)).start

    async def next_many(self, n: int) -> range:
        """Take ``n`` consecutive numbers with one conditional write of ``current + n``.

        Returns:
            ``range(c + 1, c + n + 1)`` for the value ``c`` the winning write replaced.

        Raises:
            ConfigurationError: ``n`` is not a positive ``int`` (nothing is written).
            CounterValueInvalid: the counter item's value is not a whole number (nothing is
                written).
            NumberOutOfRange: ``c + n`` would pass ``max_value`` or 38 digits (nothing is
                written).
            RetriesExhausted: lost races or transient errors outlasted the retry policy.
            StoreError: a request failed in a way that is not retried (its subclass says how).
            StoreClosed: the store or this object is closed.
        """
        check_count(n, "n")
        self._check_open()
        return await self._through(self._group, self._commit, n)

    async def _commit(self, takes: list[Take]) -> None:
        """One commit (see `aioseq.strategies._group_commit`): one conditional write of
        ``current + k`` for the k numbers the waiting callers want in all, each caller's range
        handed out in order. Its place in the counter's queue is kept while callers wait,
        else given up."""
        failed = True
        try:
            await self._committer.commit(takes)
            failed = False
        finally:
            self._keep_place(takes, failed=failed)

    # --- the parts of the group-commit skeleton (aioseq.strategies._group_commit) -------------

    async def prepare(self, takes: list[Take], limit: int | None) -> _Write | None:
        """The next write: the waiting callers in order (at most ``limit`` of them, and
        numbers within the size this writer queued with), from the counter item as last seen
        (read first if not known); ``None`` when nobody waits."""
        group = [take for take in takes if take.waiting][:limit]
        if not group:  # (its place in the queue is kept for the callers behind)
            return None
        before = await self._item.ready(_numbers(group), predict=self.write == "update")
        queued = self._turn.limit()  # the size it queued with: those behind predicted it
        group = _within(group, queued)
        if queued is not None:
            self._top_up(takes, (queued - _numbers(group), _count))
            group = _within([take for take in takes if take.waiting][:limit], queued)
        write = self._item.new_write(before, _numbers(group), _KIND)
        return _Write(group, write, self._numbers_of)

    def drop_unwanted(self, write: _Write, maybe_applied: bool) -> bool:
        """Dropped, never resent for other callers: one that may have been applied is left
        to the token ring (`LostAnswers.gave_up()`), which counts it once it can tell."""
        if maybe_applied:
            self._lost.gave_up(write.counter_write, "every caller of it was cancelled")
        return True

    async def send(self, write: _Write) -> None:
        """Send ``write``: an ``UpdateItem``, or a ``PutItem`` of the whole counter item."""
        table = self.store.table
        key = self._item.primary_key
        counter_write = write.counter_write
        common: dict[str, Any] = {
            "TableName": table.name,
            "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
        }
        started = self.store.clock.now()
        if self.write == "update":
            await self.store.send_once(
                "update_item", Key=key, **counter_write.update(table), **common
            )
        else:
            condition = counter_write.condition(table, whole_queue=True)
            if not condition["ExpressionAttributeValues"]:  # a put has no update expression
                del condition["ExpressionAttributeValues"]
            item = {**key, **counter_write.after(table)}
            await self.store.send_once("put_item", Item=item, **condition, **common)
        write.secs = self.store.clock.now() - started

    def judge(
        self, write: _Write, error: ConditionFailed | TransactionCanceled, maybe_applied: bool
    ) -> Settled:
        """A failed condition returns the counter item (``ALL_OLD``): after an error that may
        hide its success, its token ring says whether an earlier attempt was applied
        (`LostAnswers.was_applied()`); otherwise another writer won the race."""
        item = error.item if isinstance(error, ConditionFailed) else None
        self._lost.seen(item)  # (tells what became of writes given up on)
        if maybe_applied and self._lost.was_applied(write.counter_write, item):
            self._item.saw(item)
            return Settled.APPLIED
        self._item.saw(item, known=item is not None)
        return Settled.REBUILD

    def stored(self, write: _Write) -> None:
        """The counter item is now the write's: the next write needs no read."""
        self._item.committed(write.counter_write, write.secs)
        self._lost.seen(write.counter_write.before)  # (the counter item its condition matched)

    def applied(self, write: _Write) -> None:
        """Nothing to count: the optimistic counter stores no items."""

    def unresolved(self, write: _Write) -> None:
        """Left to the token ring, as an abandoned write is."""
        self._lost.gave_up(write.counter_write, "the retry policy ran out first")

    def _verdict(self, exc: Exception) -> Verdict:
        """See `counter_write_verdict()`: a lost race waits for the writers ahead of it in
        the counter's queue, or is retried at once."""
        return counter_write_verdict(exc, self._item.lost_race)


def _count(n: int) -> int:
    return n


def _numbers(group: list[Take]) -> int:
    return sum(take.request for take in group)


def _within(group: list[Take], limit: int | None) -> list[Take]:
    """The first callers of ``group`` whose numbers fit in ``limit`` (the size this writer
    queued with; at least one caller); the others wait for the next write."""
    if limit is None:
        return group
    taken: list[Take] = []
    total = 0
    for take in group:
        if taken and total + take.request > limit:
            break
        taken.append(take)
        total += take.request
    return taken


@dataclass
class _Write:
    """One conditional write of the counter item for a group of callers."""

    group: list[Take]
    counter_write: CounterWrite
    #: The counter's values as the numbers handed out.
    numbering: Numbering
    #: How long its last send took, in seconds.
    secs: float = 0.0

    @property
    def numbers(self) -> range:
        return self.counter_write.numbers

    @property
    def results(self) -> list[range]:
        """Each caller's numbers, in order."""
        found, start = [], self.numbers.start
        for take in self.group:
            found.append(self.numbering.numbers(start, take.request))
            start += take.request
        return found
