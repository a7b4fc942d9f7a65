"""Whether a store's endpoint answers: a circuit breaker over the requests it sends.

An endpoint is *down* once requests have gone unanswered for ``down_after_secs`` (the store's
``RetryPolicy.max_unreachable_secs``): no connection could be made, or the connections made
never answered. Then every request fails at once with
[`EndpointDown`][aioseq.errors.EndpointDown] (nothing sent, ``maybe_applied`` false) instead of
each spending its retry budget, and one probe at a time asks the endpoint for an answer; the
first answer (any HTTP answer, an error response included) brings it up for everyone. Throttling
and 5xx answers are answers: they never take an endpoint down. (The circuit breaker of Nygard's
"Release It!"; botocore's standard retry mode gets a similar effect from its retry quota.)
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable

from aioseq.clock import Clock, LoopClock
from aioseq.errors import EndpointDown
from aioseq.observe import EndpointEvent, Observer, notify

__all__ = ["PROBE_SECS", "EndpointHealth"]

#: Its own logger: a service watches it; the CLI, which reports the error itself, quiets it.
log = logging.getLogger("aioseq.endpoint")

#: The wait between two probes of an endpoint that is down, in seconds.
PROBE_SECS = 0.5


class EndpointHealth:
    """What a transport knows of its endpoint.

    Parameters:
        name: the endpoint, for errors and the log (its URL).
        down_after_secs: how long requests may go unanswered before it is down.
        clock: what that is measured and the probes are paced on.
        observer: told when it goes down and comes up (``on_endpoint``).

    The transport calls `sending()` as a request starts, `answered()` on any HTTP answer;
    `is_down()` says whether to send at all. ``probe`` (set by the transport) is one attempt
    at a request that any live endpoint answers; it raises when there was no answer.
    """

    __slots__ = (
        "_closed",
        "_probing",
        "clock",
        "down_after_secs",
        "down_since",
        "name",
        "observer",
        "probe",
        "unanswered_since",
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
        #: When it went down (``None``: up).
        self.down_since: float | None = None
        #: When it last came up (or this object was made).
        self.up_since = self.clock.now()
        #: Since when a request has been on its way with no answer to any (``None``: every
        #: request sent so far was answered).
        self.unanswered_since: float | None = None
        self.probe: Callable[[], Awaitable[object]] | None = None
        self._probing: asyncio.Task[None] | None = None
        self._closed = False

    def sending(self) -> None:
        """A request is about to be sent."""
        if self.unanswered_since is None:
            self.unanswered_since = self.clock.now()

    def answered(self) -> None:
        """The endpoint answered a request (a response, or an error response)."""
        self.unanswered_since = None
        if self.down_since is not None:
            now = self.clock.now()
            down_secs = now - self.down_since
            log.warning("%s answers again after %.1f s down", self.name, down_secs)
            self.down_since = None
            self.up_since = now
            self._tell(up=True, secs=down_secs)

    def is_down(self) -> bool:
        """Whether requests should fail at once: down, or unanswered for ``down_after_secs``
        (then it goes down here, and the probing starts)."""
        if self.down_since is not None:
            return True
        since = self.unanswered_since
        if since is None:
            return False
        now = self.clock.now()
        if now - since < self.down_after_secs:
            return False
        self.down_since = now
        log.warning(
            "%s has answered no request for %.1f s: requests fail at once until it answers",
            self.name,
            now - since,
        )
        self._tell(up=False, secs=now - since)
        if self.probe is not None and not self._closed:
            self._probing = asyncio.get_running_loop().create_task(
                self._probe_until_up(), name=f"aioseq-probe {self.name}"
            )
        return True

    def _tell(self, *, up: bool, secs: float) -> None:
        if self.observer is not None:
            notify(self.observer.on_endpoint, EndpointEvent(self.name, up, secs))

    def refused(self, operation: str) -> EndpointDown:
        """The error a request gets while the endpoint is down (nothing sent)."""
        now = self.clock.now()
        since = self.unanswered_since if self.unanswered_since is not None else now
        return EndpointDown(
            f"{operation}: not sent: {self.name} has answered no request for"
            f" {max(now - since, self.down_after_secs):.1f} s",
            operation=operation,
        )

    async def _probe_until_up(self) -> None:
        """One probe at a time, each given ``down_after_secs`` to answer, every `PROBE_SECS`,
        until an answer (of the probe's or of any other request) brings the endpoint up."""
        probe = self.probe
        assert probe is not None
        # (The flag too: asyncio.wait_for before 3.12 may swallow a cancellation.)
        while self.down_since is not None and not self._closed:
            with contextlib.suppress(Exception):  # no answer: the endpoint stays down
                await asyncio.wait_for(probe(), self.down_after_secs)
            if self.down_since is None:
                return
            await self.clock.sleep(PROBE_SECS)

    async def aclose(self) -> None:
        """Stop probing (the store's close); an observer counts the endpoint down no more."""
        if not self._closed and self.down_since is not None:
            self._tell(up=True, secs=self.clock.now() - self.down_since)
        self._closed = True
        probing, self._probing = self._probing, None
        if probing is not None and not probing.done():
            probing.cancel()
            await asyncio.gather(probing, return_exceptions=True)
