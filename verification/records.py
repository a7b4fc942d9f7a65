"""What the history checker (:mod:`verification.history`) records: each call that takes
numbers, and each write the server applied as the fault proxy saw it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["Call", "WireWrite"]


@dataclass(frozen=True)
class Call:
    """One call that takes numbers.

    Attributes:
        strategy: ``"atomic"``, ``"allocator"``, ``"optimistic"``, ``"sort-key"`` or
            ``"transactional"`` (a variant's suffix, ``+group``, ``+no-group``, is ignored by
            the checker).
        counter: the counter key.
        process: who made the call (any label; the same as its ``AWS_SDK_UA_APP_ID``).
        task: the task within the process.
        started, ended: ``time.monotonic()`` before and after the call, in seconds (the same
            clock in every process of one machine), or ``None`` when unknown.
        numbers: the numbers the caller got, or ``None`` if the call failed.
        error: the error's class name when the call failed (``RetriesExhausted`` with its last
            error's: ``"RetriesExhausted(TransactionCanceled)"``; ``"CancelledError"`` for a
            cancelled caller; ``"TimeoutError"`` for a call past its deadline, which
            ``asyncio.wait_for`` cancelled).
        payload: what the call stored with its number (unique to the call; the item-writing
            strategies' items hold it), or ``None`` when unknown. ``<process>/...`` by
            convention, so an item of a killed process can be told by its payload alone.
    """

    strategy: str
    counter: str
    process: str
    task: int
    started: float | None
    ended: float | None
    numbers: range | None
    error: str | None = None
    payload: str | None = None

    @property
    def cancelled(self) -> bool:
        """Cancelled by its caller, or by its deadline (``asyncio.wait_for`` cancels the call
        it gives up on, then raises ``TimeoutError``)."""
        return self.error in ("CancelledError", "TimeoutError")

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {**self.__dict__}
        data["numbers"] = None if self.numbers is None else [self.numbers.start, self.numbers.stop]
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Call:
        numbers = data.get("numbers")
        return cls(**{**data, "numbers": None if numbers is None else range(*numbers)})


@dataclass(frozen=True)
class WireWrite:
    """Numbers a write applied by the server covered, as seen by the fault proxy.

    Attributes:
        counter: the counter key (partition key value).
        process: the client's ``app/`` id from its ``User-Agent``, or ``""``.
        numbers: the numbers the write took (an ``ADD``'s range, an optimistic write's
            ``current + 1 .. next``, the sort keys of stored items).
        delivered: whether the client got the answer.
        fault: the injected fault kind, if any.
        observed: ``time.monotonic()`` when the proxy reported it (after the server answered),
            or ``None`` when unknown.
    """

    counter: str
    process: str
    numbers: range
    delivered: bool
    fault: str | None
    observed: float | None = None
