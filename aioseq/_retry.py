"""The one retry engine: every request aioseq sends runs through `RetryEngine.run()`.

An engine is built once per [`RetryPolicy`][aioseq.RetryPolicy] (the store builds it) and holds
tenacity's stop and wait objects (aiodynamo's frozen ``RetryConfig`` with its ``attempts()``
loop; tenacity's ``AsyncRetrying``). The first attempt goes straight to the request: no retry
machinery is entered, and nothing is allocated for it, until an attempt has failed. From then
on tenacity runs the attempts, bounded by the policy, with full-jitter backoff (AWS
Architecture Blog, "Exponential Backoff And Jitter").

A caller supplies only how to classify a failed attempt (`Verdict`): retry after a
backoff, retry at once, or fail. Whatever state carries from one attempt to the next (a value
learnt from a lost race, a write in flight) lives in the attempt's closure or object.
"""

from __future__ import annotations

import enum
import logging
import random
from collections import Counter
from collections.abc import Awaitable, Callable
from typing import Generic, TypeVar

from tenacity import AsyncRetrying, RetryCallState, RetryError

from aioseq.clock import Clock, LoopClock
from aioseq.config import RetryPolicy
from aioseq.errors import (
    AioseqError,
    EndpointUnreachable,
    RetriesExhausted,
    StoreError,
    TransactionCanceled,
)
from aioseq.observe import Observer, RetryEvent, notify

__all__ = [
    "RetryEngine",
    "Verdict",
    "Waiting",
    "is_conflict_reason",
    "is_transient",
    "reason",
    "transient",
]

T = TypeVar("T")

log = logging.getLogger("aioseq")


class Verdict(enum.Enum):
    """What becomes of a failed attempt."""

    #: Try again after a jittered backoff (throttling, 5xx, a lost connection, a lost race).
    RETRY = "retry"
    #: Try again at once: the attempt learnt what the next one needs and nothing argues for
    #: waiting (the sort-key strategy's ``+1`` after a taken key; a lost race whose failed
    #: condition returned the counter item).
    RETRY_NOW = "retry now"
    #: Try again after a pause the caller computes: writers ahead of this one in the
    #: counter's queue (see `aioseq.strategies._turn`) are about to write. The pause is the
    #: caller's (``RetryEngine.run(pause_secs=)``), jittered by +-10% only: the queue
    #: already spreads the writers, and a pause drawn long leaves the counter idle.
    YIELD = "yield"
    #: The error ends the call.
    FAIL = "fail"


Classify = Callable[[Exception], Verdict]


class Waiting(AioseqError):
    """An attempt that sent nothing: its writer waits its turn (a counter's queue, see
    `aioseq.strategies._turn`). A pause after it is not an attempt spent: it does not count
    toward ``RetryPolicy.max_attempts`` (``max_delay_secs`` still bounds it)."""


def is_transient(exc: BaseException) -> bool:
    """True for errors that any request may retry: throttling, transaction conflicts, 5xx and
    lost connections (``StoreError.retryable``). ``CancelledError`` and every other
    ``BaseException`` that is not an ``Exception`` are never retried."""
    return isinstance(exc, StoreError) and exc.retryable


def transient(exc: Exception) -> Verdict:
    """The default classification: transient errors are retried after a backoff, every other
    error fails the call."""
    return Verdict.RETRY if is_transient(exc) else Verdict.FAIL


def reason(exc: BaseException) -> str:
    """A short label for why an attempt failed, used as the key of retry statistics:
    DynamoDB's error code, with a transaction's cancellation reasons appended
    (``"TransactionCanceledException:ConditionalCheckFailed,None"``)."""
    code = getattr(exc, "code", "") or type(exc).__name__
    if isinstance(exc, TransactionCanceled):
        code += ":" + ",".join(exc.codes)
    return code


def is_conflict_reason(reason: str) -> bool:
    """True for a `reason()` that is a lost race: a failed condition on the counter item
    or the candidate key (alone, or among a transaction's cancellation reasons)."""
    return "ConditionalCheckFailed" in reason


class RetryEngine:
    """Runs attempts under one [`RetryPolicy`][aioseq.RetryPolicy]; built once, used by every
    request of a store (counters, allocators, counter administration, the table's creation and
    its wait).

    Parameters:
        policy: the bounds and the waits.
        observer: if given, each retry is reported to its ``on_retry``.
        clock: what bounds are measured and waits are slept on (the store's).
    """

    __slots__ = ("clock", "observer", "policy")

    def __init__(
        self, policy: RetryPolicy, observer: Observer | None = None, clock: Clock | None = None
    ) -> None:
        self.policy = policy
        self.observer = observer
        self.clock: Clock = clock or LoopClock()

    def backoff_secs(self, n: int) -> float:
        """The wait before the retry that follows the ``n``-th failure that asked for a
        backoff (from 1), "full jitter": uniform in ``[0, min(max_backoff_secs,
        initial_backoff_secs * 2**(n - 1))]`` (tenacity's ``wait_random_exponential``, with the
        exponent counting those failures only: a lost race retried at once, or a pause in a
        counter's queue, does not lengthen the next backoff)."""
        policy = self.policy
        cap = policy.initial_backoff_secs * 2 ** min(n - 1, 64)
        return random.uniform(0, min(policy.max_backoff_secs, cap))

    async def run(
        self,
        attempt: Callable[[], Awaitable[T]],
        *,
        classify: Classify = transient,
        retries: Counter[str] | None = None,
        counter_key: str = "",
        pause_secs: Callable[[], float] | None = None,
    ) -> T:
        """Await ``attempt()`` until it returns, as the policy allows.

        Parameters:
            attempt: a coroutine function of no arguments: one attempt.
            classify: the `Verdict` on an attempt's error (default: `transient()`).
                Only ``Exception``\\ s are classified: ``CancelledError`` always propagates.
            retries: if given, each retry is counted here under `reason()` of its error.
            counter_key: the key of the counter that retries, for the observer and the log.
            pause_secs: the wait before an attempt classified `Verdict.YIELD`, in
                seconds (default: the policy's ``initial_backoff_secs``).

        Returns:
            what the first successful attempt returned.

        Raises:
            RetriesExhausted: the policy's bounds were reached (``max_attempts`` attempts,
                ``max_delay_secs`` since the first attempt began, or an unreachable endpoint
                for ``max_unreachable_secs``); ``last_error`` and ``__cause__`` are the last
                attempt's error, and ``maybe_applied`` says whether any attempt may have been
                applied.
            whatever an attempt raises that ``classify`` fails, with ``maybe_applied`` set
                when an earlier attempt may have been applied.
        """
        started = self.clock.now()
        try:
            return await attempt()
        except Exception as exc:
            if classify(exc) is Verdict.FAIL:
                raise
            first = exc
        run = _Run(self, attempt, first, classify, retries, counter_key, started, pause_secs)
        return await run.go()


class _Run(Generic[T]):
    """The retries of one `RetryEngine.run()` after its first attempt failed: tenacity's
    ``AsyncRetrying`` with this run's classification, the engine's jitter and bounds."""

    __slots__ = (
        "ambiguous",
        "attempt",
        "backoffs",
        "classify",
        "counter_key",
        "engine",
        "first",
        "pause_secs",
        "pauses",
        "retries",
        "started",
    )

    def __init__(
        self,
        engine: RetryEngine,
        attempt: Callable[[], Awaitable[T]],
        first: Exception,
        classify: Classify,
        retries: Counter[str] | None,
        counter_key: str,
        started: float,
        pause_secs: Callable[[], float] | None = None,
    ) -> None:
        self.engine = engine
        self.attempt = attempt
        self.first: Exception | None = first
        self.classify = classify
        self.retries = retries
        self.counter_key = counter_key
        self.started = started
        self.pause_secs = pause_secs
        self.backoffs = 0  # failures so far that asked for a backoff
        self.pauses = 0  # waits after attempts that sent nothing (Waiting): not attempts spent
        # An attempt failed in a way that may hide its success.
        self.ambiguous = isinstance(first, AioseqError) and first.maybe_applied

    async def go(self) -> T:
        retrying = AsyncRetrying(
            stop=self._stop,
            wait=self._wait,
            retry=self._retry,
            before_sleep=self._before_sleep,
            sleep=self.engine.clock.sleep,
            reraise=False,
        )
        try:
            return await retrying(self._again)
        except AioseqError as exc:  # not retried: it ends the call, and says what may be written
            exc.maybe_applied = exc.maybe_applied or self.ambiguous
            raise
        except RetryError as exhausted:
            last = exhausted.last_attempt
            error = last.exception()
            log.info(
                "counter %r: gave up after %d attempts; last error: %s",
                self.counter_key,
                last.attempt_number,
                reason(error) if error is not None else None,
            )
            raise RetriesExhausted(
                last.attempt_number, error, maybe_applied=self.ambiguous
            ) from error

    async def _again(self) -> T:
        """tenacity's attempt: the first one replays the error already met, so the policy
        counts it; the others call the attempt."""
        if self.first is not None:
            first, self.first = self.first, None
            raise first
        try:
            return await self.attempt()
        except AioseqError as exc:
            self.ambiguous = self.ambiguous or exc.maybe_applied
            raise

    def _retry(self, state: RetryCallState) -> bool:
        error = state.outcome.exception() if state.outcome is not None else None
        return isinstance(error, Exception) and self.classify(error) is not Verdict.FAIL

    def _stop(self, state: RetryCallState) -> bool:
        policy = self.engine.policy
        # Waiting its turn is not failing: it does not use up attempts (max_delay_secs still
        # bounds the wait); a write that failed its condition does.
        if state.attempt_number - self.pauses >= policy.max_attempts:
            return True
        elapsed = self.engine.clock.now() - self.started
        if elapsed >= policy.max_delay_secs:
            return True
        error = state.outcome.exception() if state.outcome is not None else None
        return isinstance(error, EndpointUnreachable) and elapsed >= policy.max_unreachable_secs

    def _wait(self, state: RetryCallState) -> float:
        error = state.outcome.exception() if state.outcome is not None else None
        verdict = self.classify(error) if isinstance(error, Exception) else Verdict.RETRY
        if verdict is Verdict.RETRY_NOW:
            return 0.0
        if verdict is Verdict.YIELD:
            if isinstance(error, Waiting):
                self.pauses += 1
            policy = self.engine.policy
            pause = self.pause_secs() if self.pause_secs else policy.initial_backoff_secs
            return pause * random.uniform(0.9, 1.1)
        self.backoffs += 1
        return self.engine.backoff_secs(self.backoffs)

    def _before_sleep(self, state: RetryCallState) -> None:
        error = state.outcome.exception() if state.outcome is not None else None
        if error is None:
            return
        why = reason(error)
        if self.retries is not None:
            self.retries[why] += 1
        wait_secs = state.next_action.sleep if state.next_action is not None else 0.0
        log.debug(
            "counter %r: attempt %d failed (%s); retrying in %.3f s",
            self.counter_key,
            state.attempt_number,
            why,
            wait_secs,
        )
        observer = self.engine.observer
        if observer is not None:
            event = RetryEvent(
                counter_key=self.counter_key,
                reason=why,
                conflict=is_conflict_reason(why),
                attempt=state.attempt_number,
                wait_secs=wait_secs,
            )
            notify(observer.on_retry, event)
