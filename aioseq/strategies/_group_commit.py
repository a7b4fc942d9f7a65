"""The group-commit skeleton of the strategies with a conditional write: optimistic (a group's
write holds no items), sort-key and transactional (it holds one item per call).

One commit serves the calls a flush of the strategy's coalescer hands it (or a lone call, when
ungrouped): it takes the waiting calls into one write, sends it, and hands out its numbers in
order once it is known to be stored. The strategy supplies the parts that differ, as an
`ItemWriter`: how a group is chosen and its write built, how it is sent, what a failed
condition means, and what becomes of a write whose callers all left. The skeleton owns the rest,
written once (this is where exactly once lives):

- the write in flight is resent as it is (same numbers, items and tokens) after an error that
  may hide its success, and judged by the strategy when a resend fails its condition;
- a write DynamoDB refuses whole (``ValidationException``: something only the server checks)
  is split: the next writes take half as many puts until the refused put stands alone and fails
  alone; nothing of a refused write is stored, so the numbers stay gapless;
- puts that fail alone (an item that exists) get their own error, and the rest of the group,
  still waiting, goes back to the coalescer, which commits it next;
- retries run under the store's retry engine, with the strategy's classification.
"""

from __future__ import annotations

import enum
import weakref
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Generic, Protocol, TypeVar

from aioseq._coalesce import Waiter, held_weakly
from aioseq._retry import Classify
from aioseq.errors import (
    AioseqError,
    ConditionFailed,
    StoreError,
    TransactionCanceled,
    ValidationFailed,
)

__all__ = ["GroupCommitter", "ItemWrite", "ItemWriter", "Settled"]

#: A call waiting in a group: its request, and the future its result goes to.
Put = Waiter[Any, Any]


class ItemWrite(Protocol):
    """A write a strategy built for a group of calls."""

    @property
    def group(self) -> Sequence[Put]:
        """The calls it serves, in order."""

    @property
    def numbers(self) -> range:
        """Every number it takes, in order."""

    @property
    def results(self) -> Sequence[Any]:
        """What each call of ``group`` gets once it is stored (a number, or a range of
        them), in the same order."""


W = TypeVar("W", bound=ItemWrite)


class Settled(enum.Enum):
    """What a write's failed condition means (`ItemWriter.judge()`)."""

    #: An earlier attempt of it was applied (its answer was lost): hand out its numbers.
    APPLIED = "applied"
    #: Nothing was written and some puts failed alone: the rest wait for the next commit.
    REGROUP = "regroup"
    #: Nothing was written, for a transient reason: send the same write again.
    RESEND = "resend"
    #: Nothing was written: another writer won the race; build the write afresh and retry.
    REBUILD = "rebuild"


class ItemWriter(Protocol[W]):
    """What a strategy supplies to `GroupCommitter`."""

    async def prepare(self, puts: list[Put], limit: int | None) -> W | None:
        """The next write for the waiting ``puts`` (at most ``limit`` of them), or ``None``
        when none waits."""

    def drop_unwanted(self, write: W, maybe_applied: bool) -> bool:
        """Every caller of ``write`` left before its outcome was known: True to drop it (the
        next write is built for the callers still waiting, if any), False to send it still."""

    async def send(self, write: W) -> None:
        """Send ``write`` once."""

    def judge(
        self, write: W, error: ConditionFailed | TransactionCanceled, maybe_applied: bool
    ) -> Settled:
        """What ``write``'s failed condition or canceled transaction means."""

    def stored(self, write: W) -> None:
        """``write`` was applied (its answer came back)."""

    def applied(self, write: W) -> None:
        """``write`` is applied, its answer come back or found applied after it was lost: its
        numbers are handed out next. Called once per write."""

    def unresolved(self, write: W) -> None:
        """``write`` may have been applied and its outcome will not be known."""


Run = Callable[[Callable[[], Awaitable[None]], Classify], Awaitable[None]]


def split_refused(group: Sequence[Put], exc: ValidationFailed) -> int | None:
    """After DynamoDB refused a whole group's write as invalid, the most puts the next write
    may take. With one put, that put gets the error and groups go back to full size (``None``);
    with more, the next writes take half as many, until the refused put stands alone and fails
    alone. k puts with one bad one cost about log2(k) extra requests."""
    if len(group) == 1:
        if group[0].waiting:
            group[0].future.set_exception(exc)
        return None
    return len(group) // 2


class GroupCommitter(Generic[W]):
    """Commits groups of puts through one `ItemWriter`.

    Parameters:
        writer: the strategy's parts.
        run: runs an attempt under the store's retry engine in the strategy's turn (the
            strategy's ``_retry``).
        classify: the strategy's `Verdict` on a failed attempt.
        handed_out: told how many numbers each stored write handed out.

    The strategy that owns the committer is its writer, and gives it its own methods: the
    committer holds them weakly (a strong hold would make a reference cycle, so a strategy
    dropped by its store would live on until a full collection of the cyclic GC). The
    strategy's :meth:`commit` caller holds it for the commit's duration.
    """

    __slots__ = ("_classify", "_handed_out", "_run", "_writer", "limit")

    def __init__(
        self,
        writer: ItemWriter[W],
        run: Run,
        classify: Classify,
        *,
        handed_out: Callable[[int], None],
    ) -> None:
        self._writer = weakref.ref(writer)
        self._run = held_weakly(run)
        self._classify = held_weakly(classify)
        self._handed_out = held_weakly(handed_out)
        #: After DynamoDB refused a group as invalid: the most puts per write (see
        #: `split_refused()`); ``None``: as many as the strategy takes.
        self.limit: int | None = None

    async def commit(self, puts: list[Put]) -> None:
        """Commit one write for the waiting ``puts``; those it does not serve stay waiting."""
        writer, run, classify = self._writer(), self._run(), self._classify()
        handed_out = self._handed_out()
        assert writer is not None and run is not None and classify is not None
        assert handed_out is not None  # the strategy calling this holds them all
        pending: W | None = None  # the write in flight, until its outcome is known
        maybe_applied = False  # an attempt of it failed in a way that may hide its success

        async def attempt() -> None:
            nonlocal pending, maybe_applied
            if (
                pending is not None
                and not any(put.waiting for put in pending.group)
                and writer.drop_unwanted(pending, maybe_applied)
            ):
                pending = None
            if pending is None:
                pending = await writer.prepare(puts, self.limit)
                if pending is None:
                    return
                maybe_applied = False
            write = pending
            try:
                await writer.send(write)
            except ValidationFailed as exc:
                pending = None  # refused whole: nothing was written
                self.limit = split_refused(write.group, exc)
                return
            except (ConditionFailed, TransactionCanceled) as exc:
                settled = writer.judge(write, exc, maybe_applied)
                if settled is Settled.RESEND:
                    raise
                if settled is not Settled.APPLIED:
                    pending = None  # nothing was written: the next write is built afresh
                    if settled is Settled.REBUILD:
                        raise
                    return  # REGROUP
            except StoreError as exc:
                maybe_applied = maybe_applied or exc.maybe_applied
                raise
            else:
                writer.stored(write)
            writer.applied(write)
            pending = None
            self.limit = None
            handed_out(len(write.numbers))
            for result, put in zip(write.results, write.group, strict=True):
                if put.waiting:  # a caller cancelled during the write loses its numbers
                    put.future.set_result(result)

        try:
            await run(attempt, classify)
        except AioseqError:
            if pending is not None and maybe_applied:  # the items may be stored: say so
                writer.unresolved(pending)
            raise
