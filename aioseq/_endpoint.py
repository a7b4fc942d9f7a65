"""Whether a store's endpoint answers: a circuit breaker over the requests it sends.

An endpoint goes *down* on evidence of silence, never on slowness alone:

- **Unreachable**: no connection could be made (refused, no such host, connect timeout) for
  ``down_after_secs`` (the store's ``RetryPolicy.max_unreachable_secs``), with no answer to
  anything in between. A connection failure is direct evidence.
- **Silent**: a request has been on its way for ``down_after_secs`` with no answer to
  anything meanwhile. That is only a suspicion (the answer may be slow, the event loop may
  have been blocked): a probe of its own is sent at once, and the endpoint goes down only if
  the probe, given ``down_after_secs`` too, gets no answer either and no other answer arrives
  meanwhile. A probe deadline the event loop reached late is not evidence. So an answer
  slower than ``down_after_secs`` keeps it up, if it comes within twice that.

A request that ends without an answer (its caller cancelled, its connection reset) is no
longer outstanding: a quiet spell after it is not silence. While the endpoint is down, every
request fails at once with [`EndpointDown`][aioseq.errors.EndpointDown] (nothing sent,
``maybe_applied`` false, the last underlying error as its ``__cause__``), and one probe at a
time asks the endpoint for an answer; the first answer (any HTTP answer, an error response
included) brings it up for everyone. Throttling and 5xx answers are answers.

(The circuit breaker of Nygard's "Release It!"; Envoy's outlier detection ejects on connect
failures, not on latency; gRPC keepalive declares a connection dead when a ping of its own
goes unanswered.)
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

from aioseq.clock import Clock, LoopClock
from aioseq.errors import EndpointDown
from aioseq.observe import EndpointEvent, Observer, notify

__all__ = ["PROBE_SECS", "STALL_SECS", "EndpointHealth"]

#: Its own logger: a service watches it; the CLI, which reports the error itself, quiets it.
log = logging.getLogger("aioseq.endpoint")

#: The wait between two probes of an endpoint that is down, in seconds.
PROBE_SECS = 0.5
#: A probe's deadline seen this late (on the loop's time) means the event loop was blocked: its
#: silence is not the endpoint's (seconds).
STALL_SECS = 0.5


class EndpointHealth:
    """What a transport knows of its endpoint; the transport reports each request's fate, and
    this object alone changes its state.

    Parameters:
        name: the endpoint, for errors and the log (its URL).
        down_after_secs: how long connections may fail, or requests and a probe go
            unanswered, before it is down (seconds).
        clock: what that is measured and the probes are paced on (the store's).
        observer: told when it goes down and comes up (``on_endpoint``).

    The transport calls `sent()` as a request goes out and, with the ticket it returns,
    `answered()` on any HTTP answer, `unreachable()` when no connection could be made, or
    `ended()` when the request ends otherwise (a reset, a timeout, a cancelled caller).
    ``probe`` (set by the transport) is one attempt at a request that any live endpoint
    answers; it raises when there was no answer.
    """

    __slots__ = (
        "_closed",
        "_confirming",
        "_last_answer",
        "_next_ticket",
        "_outstanding",
        "_probing",
        "_unreachable_since",
        "_watch",
        "_why",
        "clock",
        "down_after_secs",
        "down_since",
        "last_error",
        "name",
        "observer",
        "probe",
        "up_since",
    )

    def __init__(
        self,
        name: str,
        down_after_secs: float,
        clock: Clock | None = None,
        observer: Observer | None = None,
    ) -> None:
        self.name = name
        self.down_after_secs = down_after_secs
        self.clock: Clock = clock or LoopClock()
        self.observer = observer
        #: The reading of ``clock.now()`` (monotonic seconds, not a time of day) when it went
        #: down (``None``: up).
        self.down_since: float | None = None
        #: The reading of ``clock.now()`` when it last came up (or this object was made).
        self.up_since = self.clock.now()
        #: The last error a request or a probe met without an answer (``None``: none yet).
        self.last_error: BaseException | None = None
        self.probe: Callable[[], Awaitable[object]] | None = None
        self._outstanding: dict[int, float] = {}  # ticket -> when sent, oldest first
        self._next_ticket = 0
        self._last_answer = self.up_since
        self._unreachable_since: float | None = None  # connections failing, no answer since
        self._confirming: asyncio.Task[None] | None = None
        self._probing: asyncio.Task[None] | None = None
        # A timer that looks at the oldest request outstanding once it may have waited past
        # the threshold: a lone request with nothing sent after it must raise the suspicion.
        self._watch: asyncio.TimerHandle | None = None
        self._why = ""  # the evidence it went down on
        self._closed = False

    # --- what the transport reports -----------------------------------------------------------

    def sent(self) -> int:
        """A request is about to go; returns its ticket. Takes the endpoint down if
        connections have failed for ``down_after_secs`` with no answer since (then the caller
        refuses the request: see `is_down()`); starts a probe if an older request has had no
        answer, nor anything else, past the threshold (see the module doc)."""
        now = self.clock.now()
        ticket = self._next_ticket
        self._next_ticket = ticket + 1
        outstanding = self._outstanding
        if self.down_since is None:
            failing = self._unreachable_since
            if failing is not None and now - failing >= self.down_after_secs:
                self._go_down(now, f"no connection for {now - failing:.1f} s")
            elif outstanding and self._confirming is None:
                oldest = next(iter(outstanding.values()))
                if now - max(oldest, self._last_answer) >= self.down_after_secs:
                    self._suspect(now)
        outstanding[ticket] = now
        if self._watch is None:
            self._watch_in(self.down_after_secs)
        return ticket

    def answered(self, ticket: int | None = None) -> None:
        """The endpoint answered (a response, or an error response): it is up."""
        now = self.clock.now()
        self._last_answer = now
        self._unreachable_since = None
        if ticket is not None:
            self._outstanding.pop(ticket, None)
        if self.down_since is not None:
            down_secs = now - self.down_since
            log.warning("%s answers again after %.1f s down", self.name, down_secs)
            self.down_since = None
            self.up_since = now
            self._tell(up=True, secs=down_secs)

    def unreachable(self, ticket: int | None, error: BaseException) -> None:
        """No connection could be made for a request (nothing sent): direct evidence. Down
        once connections have failed for ``down_after_secs`` with no answer in between."""
        if ticket is not None:
            self._outstanding.pop(ticket, None)
        self.last_error = error
        now = self.clock.now()
        if self._unreachable_since is None:
            self._unreachable_since = now
        elif self.down_since is None and now - self._unreachable_since >= self.down_after_secs:
            self._go_down(now, f"no connection for {now - self._unreachable_since:.1f} s")

    def ended(self, ticket: int, error: BaseException | None = None) -> None:
        """A request ended with no answer (a reset, a read timeout, its caller cancelled): it
        is no longer outstanding; ``error``, if any, is remembered for `refused()`. One that
        had waited past the threshold with no answer to anything meanwhile (a read timeout
        longer than it) is a suspicion, as if still outstanding: a probe confirms it."""
        sent_at = self._outstanding.pop(ticket, None)
        if error is not None:
            self.last_error = error
        if sent_at is None or self.down_since is not None or self._confirming is not None:
            return
        now = self.clock.now()
        if now - max(sent_at, self._last_answer) >= self.down_after_secs:
            self._suspect(now)

    # --- what callers ask -----------------------------------------------------------------------

    def is_down(self) -> bool:
        """Whether requests should fail at once (a query: it changes nothing)."""
        return self.down_since is not None

    def refused(self, operation: str) -> EndpointDown:
        """The error a request gets while the endpoint is down (nothing sent); its
        ``__cause__`` is the last error a request or a probe met."""
        now = self.clock.now()
        since = self.down_since if self.down_since is not None else now
        cause = self.last_error
        detail = f"; last error: {cause}" if cause is not None else ""
        error = EndpointDown(
            f"{operation}: not sent: {self.name} is down ({self._why}, {now - since:.1f} s"
            f" ago){detail}",
            operation=operation,
        )
        error.__cause__ = cause
        return error

    # --- deciding ---------------------------------------------------------------------------------

    def _watch_in(self, secs: float) -> None:
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # (no loop: nothing to watch with; sent() looks on each request)
            return
        self._watch = loop.call_later(secs, self._look)

    def _look(self) -> None:
        """The watch's timer: suspect the oldest request outstanding if it has waited past the
        threshold with no answer to anything meanwhile, else look again when it will have."""
        self._watch = None
        outstanding = self._outstanding
        if not outstanding or self._closed or self.down_since is not None:
            return
        if self._confirming is not None:
            self._watch_in(self.down_after_secs)
            return
        now = self.clock.now()
        waited = now - max(next(iter(outstanding.values())), self._last_answer)
        if waited >= self.down_after_secs:
            self._suspect(now)
            self._watch_in(self.down_after_secs)
        else:
            self._watch_in(self.down_after_secs - waited)

    def _suspect(self, now: float) -> None:
        """A request unanswered past the threshold: confirm with a probe of its own."""
        if self.probe is None or self._closed:
            return
        log.info("%s: no answer for %.1f s; probing", self.name, now - self._last_answer)
        self._confirming = asyncio.get_running_loop().create_task(
            self._confirm(now), name=f"aioseq-confirm {self.name}"
        )

    async def _confirm(self, suspected: float) -> None:
        """Probe until an answer arrives (up: done) or a probe gets none in its own time on a
        loop that ran on time (down)."""
        try:
            while not self._closed and self.down_since is None:
                answered, stalled = await self._probe_once()
                if answered or self._last_answer >= suspected:
                    return
                if not stalled:
                    now = self.clock.now()
                    silent = now - self._last_answer
                    self._go_down(now, f"no answer to a request nor to a probe for {silent:.1f} s")
                    return
        finally:
            self._confirming = None

    async def _probe_once(self) -> tuple[bool, bool]:
        """One probe, given its time: (whether it was answered, whether the loop ran late).
        Its deadline is on the loop's time, as a network timeout is."""
        probe = self.probe
        assert probe is not None
        patience = self.down_after_secs
        loop = asyncio.get_running_loop()
        started = loop.time()
        attempt = asyncio.ensure_future(probe())
        await asyncio.wait({attempt}, timeout=patience)
        for _ in range(3):  # answers that arrived with the deadline are read first
            if attempt.done():
                break
            await asyncio.sleep(0)
        late = loop.time() - started - patience > STALL_SECS
        if not attempt.done():
            attempt.cancel()
            await asyncio.gather(attempt, return_exceptions=True)
            return False, late
        error = attempt.exception() if not attempt.cancelled() else None
        if error is not None:
            self.last_error = error
            return False, False  # refused at once: no connection is evidence, stalled or not
        return True, False

    def _go_down(self, now: float, why: str) -> None:
        self.down_since = now
        self._why = why
        log.warning("%s is down (%s): requests fail at once until it answers", self.name, why)
        self._tell(up=False, secs=now - self._last_answer)
        if self.probe is not None and not self._closed and self._probing is None:
            self._probing = asyncio.get_running_loop().create_task(
                self._probe_until_up(), name=f"aioseq-probe {self.name}"
            )

    def _tell(self, *, up: bool, secs: float) -> None:
        if self.observer is not None:
            notify(self.observer.on_endpoint, EndpointEvent(self.name, up, secs))

    async def _probe_until_up(self) -> None:
        """One probe at a time, each given its time to answer, every `PROBE_SECS`, until an
        answer (of the probe's or of any other request) brings the endpoint up."""
        try:
            while self.down_since is not None and not self._closed:
                answered, _ = await self._probe_once()
                if answered or self.down_since is None:
                    return
                await self.clock.sleep(PROBE_SECS)
        finally:
            self._probing = None

    async def aclose(self) -> None:
        """Stop probing (the store's close); an observer counts the endpoint down no more."""
        if not self._closed and self.down_since is not None:
            self._tell(up=True, secs=self.clock.now() - self.down_since)
        self._closed = True
        if self._watch is not None:
            self._watch.cancel()
            self._watch = None
        tasks = [t for t in (self._probing, self._confirming) if t is not None and not t.done()]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        self._probing = self._confirming = None
