"""The one retry loop: tenacity's ``AsyncRetrying``, bounded, jittered, reason-aware."""

from __future__ import annotations

from collections import Counter
from collections.abc import Awaitable, Callable
from typing import TypeVar

from tenacity import (
    AsyncRetrying,
    RetryCallState,
    RetryError,
    retry_if_exception,
    stop_after_attempt,
    stop_after_delay,
    wait_random_exponential,
)

from aioseq.config import RetryPolicy
from aioseq.errors import RetriesExhausted, StoreError, TransactionCanceled

T = TypeVar("T")


def is_transient(exc: BaseException) -> bool:
    """True for errors that any operation may retry: throttling, transaction conflicts, 5xx and
    lost connections (``StoreError.retryable``). ``CancelledError`` and every other
    ``BaseException`` that is not an ``Exception`` are never retried."""
    return isinstance(exc, StoreError) and exc.retryable


def reason(exc: BaseException) -> str:
    """A short label for why an attempt failed, used as the key of retry statistics:
    DynamoDB's error code, with a transaction's cancellation reasons appended
    (``"TransactionCanceledException:ConditionalCheckFailed,None"``)."""
    code = getattr(exc, "code", "") or type(exc).__name__
    if isinstance(exc, TransactionCanceled):
        code += ":" + ",".join(exc.codes)
    return code


async def retry(
    attempt: Callable[[], Awaitable[T]],
    *,
    policy: RetryPolicy,
    retry_if: Callable[[BaseException], bool] = is_transient,
    retries: Counter[str] | None = None,
    at_once: Callable[[BaseException], bool] = lambda exc: False,
) -> T:
    """Run ``attempt`` until it returns, retrying the errors ``retry_if`` accepts.

    Parameters:
        attempt: a coroutine function taking no arguments; state that must carry over from one
            attempt to the next (a value learnt from a lost race) lives in its closure.
        policy: the bounds and waits.
        retry_if: which errors to retry; anything else propagates at once.
        retries: if given, each retry is counted here under :func:`reason` of its error.
        at_once: errors to retry without waiting (the sort-key strategy's ``+1`` after a
            taken key). Every other retry waits with full jitter, lost races included: a
            writer that wins gets its answer first and its next request in first, so losers
            retrying at once with the value they learnt would keep losing to it; full jitter
            also minimises total work for optimistic concurrency (AWS Architecture Blog,
            "Exponential Backoff And Jitter").

    Raises:
        RetriesExhausted: the bounds were reached; ``last_error`` (and ``__cause__``) is the last
            attempt's error.
        whatever ``attempt`` raises that ``retry_if`` rejects, unchanged.
    """

    def count(state: RetryCallState) -> None:
        if retries is not None and state.outcome is not None:
            error = state.outcome.exception()
            if error is not None:
                retries[reason(error)] += 1

    jitter = wait_random_exponential(
        multiplier=policy.initial_backoff_secs, max=policy.max_backoff_secs
    )

    def wait(state: RetryCallState) -> float:
        error = state.outcome.exception() if state.outcome is not None else None
        return 0.0 if error is not None and at_once(error) else jitter(state)

    retrying = AsyncRetrying(
        stop=stop_after_attempt(policy.max_attempts) | stop_after_delay(policy.max_delay_secs),
        wait=wait,
        retry=retry_if_exception(lambda exc: isinstance(exc, Exception) and retry_if(exc)),
        before_sleep=count,
        sleep=policy.sleep,
        reraise=False,
    )
    try:
        return await retrying(attempt)
    except RetryError as exhausted:
        last = exhausted.last_attempt
        error = last.exception()
        raise RetriesExhausted(last.attempt_number, error) from error
