"""The one retry loop: tenacity's ``AsyncRetrying``, bounded, jittered, reason-aware."""

from __future__ import annotations

import logging
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
from tenacity.stop import stop_base

from aioseq.config import RetryPolicy
from aioseq.errors import (
    AioseqError,
    EndpointUnreachable,
    RetriesExhausted,
    StoreError,
    TransactionCanceled,
)
from aioseq.observe import Observer, RetryEvent, notify

T = TypeVar("T")

log = logging.getLogger("aioseq")


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


def is_conflict_reason(reason: str) -> bool:
    """True for a :func:`reason` that is a lost race: a failed condition on the counter item
    or the candidate key (alone, or among a transaction's cancellation reasons)."""
    return "ConditionalCheckFailed" in reason


class unreachable_for(stop_base):
    """A tenacity stop condition: the last attempt found the endpoint unreachable and
    ``seconds`` have passed since the first attempt."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds

    def __call__(self, retry_state: RetryCallState) -> bool:
        outcome = retry_state.outcome
        error = outcome.exception() if outcome is not None else None
        elapsed = retry_state.seconds_since_start or 0.0
        return isinstance(error, EndpointUnreachable) and elapsed >= self.seconds


async def retry(
    attempt: Callable[[], Awaitable[T]],
    *,
    policy: RetryPolicy,
    retry_if: Callable[[BaseException], bool] = is_transient,
    retries: Counter[str] | None = None,
    at_once: Callable[[BaseException], bool] = lambda exc: False,
    observer: Observer | None = None,
    counter_key: str = "",
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
        observer: if given, each retry is reported to its ``on_retry``.
        counter_key: the key of the counter that retries, for the observer and the log.

    Raises:
        RetriesExhausted: the bounds were reached; ``last_error`` (and ``__cause__``) is the last
            attempt's error.
        whatever ``attempt`` raises that ``retry_if`` rejects, unchanged.
    """

    def count(state: RetryCallState) -> None:
        error = state.outcome.exception() if state.outcome is not None else None
        if error is None:
            return
        why = reason(error)
        if retries is not None:
            retries[why] += 1
        wait_secs = state.next_action.sleep if state.next_action is not None else 0.0
        log.debug(
            "counter %r: attempt %d failed (%s); retrying in %.3f s",
            counter_key,
            state.attempt_number,
            why,
            wait_secs,
        )
        if observer is not None:
            event = RetryEvent(
                counter_key=counter_key,
                reason=why,
                conflict=is_conflict_reason(why),
                attempt=state.attempt_number,
                wait_secs=wait_secs,
            )
            notify(observer.on_retry, event)

    jitter = wait_random_exponential(
        multiplier=policy.initial_backoff_secs, max=policy.max_backoff_secs
    )

    def wait(state: RetryCallState) -> float:
        error = state.outcome.exception() if state.outcome is not None else None
        return 0.0 if error is not None and at_once(error) else jitter(state)

    retrying = AsyncRetrying(
        stop=(
            stop_after_attempt(policy.max_attempts)
            | stop_after_delay(policy.max_delay_secs)
            | unreachable_for(policy.max_unreachable_secs)
        ),
        wait=wait,
        retry=retry_if_exception(lambda exc: isinstance(exc, Exception) and retry_if(exc)),
        before_sleep=count,
        sleep=policy.sleep,
        reraise=False,
    )
    ambiguous = False  # an attempt failed in a way that may hide its success

    async def tracked() -> T:
        nonlocal ambiguous
        try:
            return await attempt()
        except AioseqError as exc:
            ambiguous = ambiguous or exc.maybe_applied
            raise

    try:
        return await retrying(tracked)
    except AioseqError as exc:  # not retried: it ends the call, and says what may be written
        exc.maybe_applied = exc.maybe_applied or ambiguous
        raise
    except RetryError as exhausted:
        last = exhausted.last_attempt
        error = last.exception()
        log.info(
            "counter %r: gave up after %d attempts; last error: %s",
            counter_key,
            last.attempt_number,
            reason(error) if error is not None else None,
        )
        raise RetriesExhausted(last.attempt_number, error, maybe_applied=ambiguous) from error
