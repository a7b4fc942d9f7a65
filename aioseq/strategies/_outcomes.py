"""What a failed write means, in one place: a lost race, a transaction canceled for transient
reasons or for good, and the `Verdict` each strategy's retries act on. The group-commit
skeleton (`aioseq.strategies._group_commit`) asks the strategies what a failed condition
means for a write in flight (`ItemWriter.judge()`); they answer with these.
"""

from __future__ import annotations

from collections.abc import Callable

from aioseq._retry import Verdict, is_transient
from aioseq.errors import ConditionFailed, TransactionCanceled
from aioseq.strategies._turn import TurnHeld

__all__ = [
    "TRANSIENT_REASONS",
    "counter_write_verdict",
    "is_conflict",
    "is_decisive",
    "is_retryable_cancellation",
    "item_put_verdict",
]

#: Cancellation reason codes worth another attempt of the same transaction.
TRANSIENT_REASONS = frozenset(
    {"TransactionConflict", "ThrottlingError", "ProvisionedThroughputExceeded"}
)


def is_conflict(exc: BaseException) -> bool:
    """A lost race: a condition on the counter item (or the candidate key) was false."""
    if isinstance(exc, ConditionFailed):
        return True
    return isinstance(exc, TransactionCanceled) and "ConditionalCheckFailed" in exc.codes


def is_retryable_cancellation(exc: BaseException, *, lost_race_at: int | None) -> bool:
    """A canceled transaction worth retrying: its reasons are transient, or it lost a race,
    a failed condition on the action at index ``lost_race_at`` (on any action when ``None``).
    Once the race is lost, other failed conditions are moot: they may be items keyed by the
    numbers the winner took."""
    if not isinstance(exc, TransactionCanceled):
        return False
    codes = set(exc.codes) - {"None"}
    lost = "ConditionalCheckFailed" in (
        codes if lost_race_at is None else exc.codes[lost_race_at : lost_race_at + 1]
    )
    if lost:
        codes.discard("ConditionalCheckFailed")
    return codes <= TRANSIENT_REASONS


def is_decisive(exc: TransactionCanceled) -> bool:
    """Whether a canceled transaction says what became of it: a condition failed (the
    counter's, or an item's) or an item was refused. Otherwise every reason is transient
    (``TransactionConflict``, throttling) and the request is to be sent again unchanged."""
    return bool({"ConditionalCheckFailed", "ValidationError"} & set(exc.codes))


def counter_write_verdict(exc: Exception, lost_race: Callable[[], Verdict]) -> Verdict:
    """The verdict on a conditional write of the counter item (optimistic: an ``UpdateItem``
    or ``PutItem``; transactional: a transaction whose action 0 is the counter's): a
    writer's turn in the counter's queue waits (`Verdict.YIELD`); a transient error, or a
    transaction canceled for transient reasons only, is retried after a backoff; a lost race
    asks ``lost_race()`` (`CounterItem.lost_race()`: at once, or after the writers ahead);
    anything else fails."""
    if isinstance(exc, TurnHeld):
        return Verdict.YIELD
    if is_transient(exc):
        return Verdict.RETRY
    if isinstance(exc, ConditionFailed):
        return lost_race()
    if is_retryable_cancellation(exc, lost_race_at=0):
        assert isinstance(exc, TransactionCanceled)
        return lost_race() if exc.codes[:1] == ["ConditionalCheckFailed"] else Verdict.RETRY
    return Verdict.FAIL


def item_put_verdict(exc: Exception, *, increment: bool) -> Verdict:
    """The verdict on a conditional put of items keyed by their numbers (the sort-key
    strategy): a transient error or a lost race is retried after a backoff; with
    ``increment``, a taken key on a lone put at once (+1 needs no fresh read)."""
    if increment and isinstance(exc, ConditionFailed):
        return Verdict.RETRY_NOW
    if is_transient(exc) or is_conflict(exc) or is_retryable_cancellation(exc, lost_race_at=None):
        return Verdict.RETRY
    return Verdict.FAIL
