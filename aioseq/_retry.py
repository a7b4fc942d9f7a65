"""The one retry engine: every request aioseq sends runs through `RetryEngine.run()`.

The first attempt goes straight to the request: no retry machinery is entered, and nothing is
allocated for it, until an attempt has failed. Then tenacity's ``AsyncRetrying`` runs the call
(its public ``__call__``), with that failure as its first outcome: the stop, wait and retry
objects are built once per engine and composed as tenacity composes them (``stop_a |
stop_b``): attempts spent, time since the first attempt, an unreachable endpoint. Waits are
full-jitter backoffs (AWS Architecture Blog, "Exponential Backoff And Jitter").

A caller supplies only how to classify a failed attempt (`Verdict`), read once per failure:
retry after a backoff, retry at once, wait its turn, or fail. Whatever state carries from one
attempt to the next (a value learnt from a lost race, a write in flight) lives in the
attempt's closure or object.
"""

from __future__ import annotations

import enum
import logging
import random
from collections import Counter
from collections.abc import Awaitable, Callable
from typing import Any, Generic, NoReturn, TypeVar

from tenacity import AsyncRetrying, RetryCallState, retry_base
from tenacity.stop import stop_base
from tenacity.wait import wait_base

from aioseq._endpoint import EndpointHealth
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
    "applied_at_most_once",
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


def applied_at_most_once(classify: Classify = transient) -> Classify:
    """``classify`` for a write that must not be resent once it may have been applied: an
    error with ``maybe_applied`` (a lost answer, a 5xx) fails the call, whatever ``classify``
    says; refusals that surely were not applied (throttling, an unreachable endpoint, a
    failed condition) are classified by ``classify``.

    For a conditional write whose condition another writer can make true again once it was
    applied (the ABA problem of compare-and-swap): ``SET v = :a IF v = :b``, resent after a
    lost answer, applies twice if someone moved ``v`` back to ``:b`` in between. The caller
    treats the error as an outcome it cannot tell.
    """

    def at_most_once(exc: Exception) -> Verdict:
        if isinstance(exc, AioseqError) and exc.maybe_applied:
            return Verdict.FAIL
        return classify(exc)

    return at_most_once


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
    or the candidate key (alone, or among a transaction's cancellation reasons), or, on a
    global table with multi-Region strong consistency, another Region's write of the item
    (``ReplicatedWriteConflictException``)."""
    return "ConditionalCheckFailed" in reason or reason == "ReplicatedWriteConflictException"


class RetryEngine:
    """Runs attempts under one [`RetryPolicy`][aioseq.RetryPolicy]; built once, used by every
    request of a store (counters, allocators, counter administration, the table's creation and
    its wait).

    Parameters:
        policy: the bounds and the waits.
        observer: if given, each retry is reported to its ``on_retry``.
        clock: what bounds are measured and waits are slept on (the store's).
        answers: the endpoint's health (the store's transport's): a call whose connections
            fail stops once it is down; ``None``: ``max_unreachable_secs`` after it began.
    """

    __slots__ = ("answers", "clock", "observer", "policy", "retry_if", "stop", "wait")

    def __init__(
        self,
        policy: RetryPolicy,
        observer: Observer | None = None,
        clock: Clock | None = None,
        answers: EndpointHealth | None = None,
    ) -> None:
        self.policy = policy
        self.observer = observer
        self.clock: Clock = clock or LoopClock()
        self.answers = answers
        # tenacity's objects, built once and shared by every call (each reads its own call,
        # the `_Call` that tenacity runs: ``retry_state.fn``).
        self.stop = (
            _AttemptsSpent(policy.max_attempts)
            | _Elapsed(policy.max_delay_secs)
            | _Unreachable(policy.max_unreachable_secs)
        )
        self.wait = _Backoff()
        self.retry_if = _Classified()

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
            verdict = classify(exc)
            if verdict is Verdict.FAIL:
                raise
            first = exc
        call = _Call(self, attempt, classify, retries, counter_key, started, pause_secs, first)
        call.judge(first, verdict)
        retrying = AsyncRetrying(
            sleep=self.clock.sleep,
            stop=self.stop,
            wait=self.wait,
            retry=self.retry_if,
            before_sleep=_before_sleep,
            retry_error_callback=_exhausted,
        )
        try:
            result: T = await retrying(call)
        except AioseqError as exc:  # not retried: it ends the call, and says what may be written
            exc.maybe_applied = exc.maybe_applied or call.ambiguous
            raise
        return result


class _Call(Generic[T]):
    """One `RetryEngine.run()` whose first attempt failed: the function tenacity retries
    (``retry_state.fn``), and what the engine's stop, wait and retry objects read of the call:
    its verdict on the last failure, its backoffs and pauses so far, when it began.

    Its first attempt as tenacity sees it replays the failure the engine met before tenacity
    began (nothing is sent again); every later one is ``attempt()``."""

    __slots__ = (
        "ambiguous",
        "attempt",
        "backoffs",
        "classify",
        "counter_key",
        "engine",
        "pause_secs",
        "pauses",
        "replay",
        "retries",
        "started",
        "verdict",
    )

    def __init__(
        self,
        engine: RetryEngine,
        attempt: Callable[[], Awaitable[T]],
        classify: Classify,
        retries: Counter[str] | None,
        counter_key: str,
        started: float,
        pause_secs: Callable[[], float] | None,
        first: Exception,
    ) -> None:
        self.engine = engine
        self.attempt = attempt
        self.classify = classify
        self.retries = retries
        self.counter_key = counter_key
        self.started = started
        self.pause_secs = pause_secs
        self.replay: Exception | None = first  # the first attempt's failure, until replayed
        self.verdict = Verdict.RETRY  # on the last failure
        self.backoffs = 0  # failures so far that asked for a backoff
        self.pauses = 0  # waits after attempts that sent nothing (Waiting): not attempts spent
        self.ambiguous = False  # an attempt failed in a way that may hide its success

    async def __call__(self) -> T:
        replay, self.replay = self.replay, None
        if replay is not None:
            raise replay
        return await self.attempt()

    def judge(self, exc: Exception, verdict: Verdict | None = None) -> None:
        """Record a failed attempt: its verdict (``classify``'s, asked once, unless given),
        whether it may have been applied, and what it counts toward: a backoff, or a pause
        that is not an attempt spent."""
        if isinstance(exc, AioseqError) and exc.maybe_applied:
            self.ambiguous = True
        self.verdict = verdict = self.classify(exc) if verdict is None else verdict
        if verdict is Verdict.RETRY:
            self.backoffs += 1
        elif verdict is Verdict.YIELD and isinstance(exc, Waiting):
            self.pauses += 1


def _call_of(retry_state: RetryCallState) -> _Call[Any]:
    call = retry_state.fn
    assert isinstance(call, _Call)
    return call


def _failure(retry_state: RetryCallState) -> BaseException | None:
    outcome = retry_state.outcome
    return outcome.exception() if outcome is not None else None


class _Classified(retry_base):
    """Retry unless the call's verdict on the failure is `Verdict.FAIL`; a result, and a
    ``BaseException`` that is not an ``Exception`` (``CancelledError``), are not retried."""

    def __call__(self, retry_state: RetryCallState) -> bool:
        error = _failure(retry_state)
        if not isinstance(error, Exception):
            return False
        call = _call_of(retry_state)
        if retry_state.attempt_number > 1:  # (the first was judged before tenacity began)
            call.judge(error)
        return call.verdict is not Verdict.FAIL


class _AttemptsSpent(stop_base):
    """Stop after ``max_attempts`` attempts, less the waits for a turn in a counter's queue
    (attempts that sent nothing: `Waiting`)."""

    def __init__(self, max_attempts: int) -> None:
        self.max_attempts = max_attempts

    def __call__(self, retry_state: RetryCallState) -> bool:
        return retry_state.attempt_number - _call_of(retry_state).pauses >= self.max_attempts


class _Elapsed(stop_base):
    """Stop once ``secs`` have passed since the first attempt began, on the engine's clock."""

    def __init__(self, secs: float) -> None:
        self.secs = secs

    def __call__(self, retry_state: RetryCallState) -> bool:
        call = _call_of(retry_state)
        return call.engine.clock.now() - call.started >= self.secs


class _Unreachable(stop_base):
    """Stop on an endpoint that cannot be connected to at all
    ([`EndpointUnreachable`][aioseq.errors.EndpointUnreachable]): such a request was never
    sent, and waiting out ``max_delay_secs`` only delays the error. With the endpoint's health
    (a store's engine), once it is down: connections failed for ``secs`` with no answer to
    anything in between. A connection that failed while the endpoint answers, or after a
    silence it broke since (a connect timeout on a loaded machine, a full listen backlog), is
    slowness: retried within the other bounds. Without it, ``secs`` after the first attempt."""

    def __init__(self, secs: float) -> None:
        self.secs = secs

    def __call__(self, retry_state: RetryCallState) -> bool:
        if not isinstance(_failure(retry_state), EndpointUnreachable):
            return False
        call = _call_of(retry_state)
        engine = call.engine
        if engine.answers is not None:
            return engine.answers.is_down()
        return engine.clock.now() - call.started >= self.secs


class _Backoff(wait_base):
    """The wait the call's verdict asks for: none (`Verdict.RETRY_NOW`), the caller's pause
    jittered by +-10% (`Verdict.YIELD`), else a full-jitter backoff whose exponent counts
    only the failures that asked for one (`RetryEngine.backoff_secs()`)."""

    def __call__(self, retry_state: RetryCallState) -> float:
        call = _call_of(retry_state)
        verdict = call.verdict
        if verdict is Verdict.RETRY_NOW:
            return 0.0
        engine = call.engine
        if verdict is Verdict.YIELD:
            pause = call.pause_secs() if call.pause_secs else engine.policy.initial_backoff_secs
            return pause * random.uniform(0.9, 1.1)
        return engine.backoff_secs(call.backoffs)


def _before_sleep(retry_state: RetryCallState) -> None:
    """Count the retry under `reason()`, log it and report it to the observer."""
    call = _call_of(retry_state)
    error = _failure(retry_state)
    if error is None:
        return
    why = reason(error)
    if call.retries is not None:
        call.retries[why] += 1
    wait_secs = retry_state.next_action.sleep if retry_state.next_action is not None else 0.0
    log.debug(
        "counter %r: attempt %d failed (%s); retrying in %.3f s",
        call.counter_key,
        retry_state.attempt_number,
        why,
        wait_secs,
    )
    observer = call.engine.observer
    if observer is not None:
        event = RetryEvent(
            counter_key=call.counter_key,
            reason=why,
            conflict=is_conflict_reason(why),
            attempt=retry_state.attempt_number,
            wait_secs=wait_secs,
        )
        notify(observer.on_retry, event)


def _exhausted(retry_state: RetryCallState) -> NoReturn:
    """tenacity's ``retry_error_callback``: the stop said stop. Raise `RetriesExhausted`, the
    last attempt's error chained."""
    call = _call_of(retry_state)
    error = _failure(retry_state)
    log.info(
        "counter %r: gave up after %d attempts; last error: %s",
        call.counter_key,
        retry_state.attempt_number,
        reason(error) if error is not None else None,
    )
    raise RetriesExhausted(
        retry_state.attempt_number, error, maybe_applied=call.ambiguous
    ) from error
