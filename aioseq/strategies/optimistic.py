"""Strategy 3: optimistic locking (read, then a conditional write of ``current + n``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

from aioseq._coalesce import Coalescer, Waiter
from aioseq._retry import is_transient
from aioseq._store import check_count
from aioseq.config import MAX_NUMBER
from aioseq.errors import ConditionFailed, ConfigurationError
from aioseq.strategies._base import Strategy, is_conflict

if TYPE_CHECKING:
    from aioseq._store import DynamoStore

__all__ = ["OptimisticCounter"]

WriteForm = Literal["update", "put"]


class OptimisticCounter(Strategy):
    """Numbers from a read of the counter item and a write that succeeds only if nobody wrote in
    between ("Read the number 1, try to write 2, fail if the source value is not still 1":
    the DynamoCounter write-up, and the ``NextId`` table of the StackOverflow answer it cites).

    The first call reads the counter item (``GetItem``, strongly consistent); every call then
    sends, with ``c`` the value last seen::

        write="update":  UpdateItem SET #value = :next   IF #value = :current
        write="put":     PutItem    {pk, sk, value: next} IF #value = :current

    (``IF attribute_not_exists(#pk)`` while the counter item does not exist yet, so its
    creation is race-free too). A lost race fails the condition; the request asks for
    ``ReturnValuesOnConditionCheckFailure=ALL_OLD``, so the failure carries the winner's value
    and the next attempt needs no second read; after a success the object remembers the value
    it wrote. So ``c`` is a guess that the condition checks, and a wrong guess costs one failed
    write, never a wrong number. Lost races are retried with jittered backoff, up to the
    store's :class:`~aioseq.config.RetryPolicy`.

    The ``put`` form replaces the whole counter item (other attributes on it are dropped), as in
    the seed articles; ``update`` touches only the value.

    Guarantees:
        - unique: always (a number is handed out only when its conditional write succeeded).
        - gapless: yes among numbers handed out; a caller that crashes, or is cancelled, after
          its write and before using the number leaves a hole in whatever it meant to store.
          A write that was applied but whose answer was lost (timeout, reset, 5xx) skips its
          numbers: the retry sees the counter moved, and cannot tell its own write from a
          rival's.
        - ordered: like the atomic counter, across processes.
        - crash: costs at most the numbers of calls in flight; a crash before the write costs
          nothing.

    Cost: 1 conditional write (1 WCU) per call without contention, plus 1 ``GetItem`` (1 RCU)
    on the first call; each lost race adds one write. Under contention only one writer per
    round trip wins, so throughput falls as concurrent writers on one key grow: prefer the
    atomic counter for raw numbers.

    Parameters:
        store, key, max_in_flight: see :class:`~aioseq.strategies._base.Strategy`.
        write: ``"update"`` (``UpdateItem``) or ``"put"`` (``PutItem``).
        max_value: the highest number handed out (see
            :class:`~aioseq.strategies._base.Strategy`).
        group: coalesce concurrent calls: the k numbers the waiting callers want come from one
            read-free conditional write of ``current + k``, handed out in arrival order. The
            guarantees stay the same; one round trip serves every caller waiting.
        batch_window_secs: how long a group waits for company first (0: never).

    Raises:
        ConfigurationError: bad ``key`` or ``write``.
    """

    def __init__(
        self,
        store: DynamoStore,
        key: str,
        *,
        write: WriteForm = "update",
        max_value: int = MAX_NUMBER,
        max_in_flight: int | None = 1,
        group: bool = False,
        batch_window_secs: float = 0.0,
    ) -> None:
        super().__init__(store, key, max_value=max_value, max_in_flight=max_in_flight)
        self._group: Coalescer[int, range] | None = self._grouper(
            self._commit, group, None, None, batch_window_secs
        )
        if write not in ("update", "put"):
            raise ConfigurationError(f"write must be 'update' or 'put': {write!r}")
        self.write: WriteForm = write

    async def next(self) -> int:
        """The next number. See :meth:`next_many`."""
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
            StoreError, StoreClosed.
        """
        check_count(n, "n")
        self._check_open()
        return await self._through(self._group, self._commit, n)

    async def _commit(self, takes: list[Waiter[int, range]]) -> None:
        """One conditional write of ``current + k`` for the k numbers the waiting callers want
        in all, retried; then each gets its range, in order."""

        async def attempt() -> None:
            waiting = [take for take in takes if take.waiting]
            if not waiting:
                return
            current, exists = await self._last_seen_value()
            new = current + sum(take.request for take in waiting)
            try:
                await self._write(current, new, exists=exists)
            except ConditionFailed as exc:
                self._saw(exc.item, known=exc.item is not None)
                raise
            self._saw_value(new)
            self._numbers += new - current
            start = current + 1
            for take in waiting:
                if take.waiting:  # a caller cancelled during the write loses its numbers
                    take.future.set_result(range(start, start + take.request))
                start += take.request

        await self._retry(attempt, retry_if=lambda e: is_transient(e) or is_conflict(e))

    async def _write(self, current: int, new: int, *, exists: bool) -> None:
        table = self.store.table
        write = self._counter_write(current, new, exists=exists)
        values = write.pop("ExpressionAttributeValues")
        common: dict[str, Any] = {
            "TableName": table.name,
            "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
            **write,
        }
        key = self.store.counter_item_key(self.key)
        if self.write == "update":
            await self.store.call(
                "update_item",
                Key=key,
                UpdateExpression="SET #value = :next",
                ExpressionAttributeValues=values,
                **common,
            )
        else:
            item = {**key, table.value_attribute: values.pop(":next")}
            if not exists:  # the condition names only #pk, and a put has no update expression
                del common["ExpressionAttributeNames"]["#value"]
            await self.store.call(
                "put_item",
                Item=item,
                **({"ExpressionAttributeValues": values} if values else {}),
                **common,
            )
