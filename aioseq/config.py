"""Frozen configuration values: the table's layout and the retry policy."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Literal

from aioseq.errors import ConfigurationError

__all__ = ["DEFAULT_TABLE_NAME", "MAX_DIGITS", "MAX_NUMBER", "RetryPolicy", "TableSpec"]

#: The table ``aioseq create-table`` and ``DynamoStore.open()`` use when none is named.
DEFAULT_TABLE_NAME = "aioseq"

#: DynamoDB's Number type holds at most 38 significant digits.
MAX_DIGITS = 38
#: The largest sequence number aioseq hands out: 10**38 - 1.
MAX_NUMBER = 10**MAX_DIGITS - 1

#: The longest counter key or partition key value accepted, in UTF-8 bytes (DynamoDB: 2048).
MAX_KEY_BYTES = 1024


@dataclass(frozen=True)
class TableSpec:
    """The layout of the table that holds counter items (and, for the item-writing strategies,
    the items numbered by them).

    The default layout, created by ``DynamoStore.create_table()`` / ``aioseq create-table``::

        partition key  pk  (S)   the counter key, or the item collection of a sort-key counter
        sort key       sk  (N)   0 for a counter item; the sequence number for numbered items

    A counter item is ``{"pk": "<counter key>", "sk": 0, "value": <N>}``; many counters live in
    one table, each under its own counter key. A table without a sort key also works for the
    counter strategies (``sort_key=None``); the sort-key strategy needs one.

    Attributes:
        name: the table name.
        partition_key: the partition key attribute's name (type S).
        sort_key: the sort key attribute's name, or ``None`` for a partition-key-only table.
        sort_key_type: ``"N"`` (numbers) or ``"S"`` (zero-padded strings).
        value_attribute: the counter item's attribute that holds the counter's value (type N).
    """

    name: str = DEFAULT_TABLE_NAME
    partition_key: str = "pk"
    sort_key: str | None = "sk"
    sort_key_type: Literal["N", "S"] = "N"
    value_attribute: str = "value"

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not 3 <= len(self.name) <= 255:
            raise ConfigurationError(f"table name must be 3 to 255 characters: {self.name!r}")
        names = [self.partition_key, self.value_attribute]
        if self.sort_key is not None:
            names.append(self.sort_key)
        for name in names:
            if not isinstance(name, str) or not name or len(name.encode()) > 255:
                raise ConfigurationError(f"attribute name must be 1 to 255 bytes: {name!r}")
        if len(set(names)) != len(names):
            raise ConfigurationError(f"attribute names must differ: {names}")
        if self.sort_key_type not in ("N", "S"):
            raise ConfigurationError(f"sort_key_type must be 'N' or 'S': {self.sort_key_type!r}")

    @property
    def counter_sort_key(self) -> int | str:
        """The sort key value of counter items: ``0`` (N) or ``"0"`` (S); both sort below every
        positive number, zero-padded or not."""
        return 0 if self.sort_key_type == "N" else "0"


Sleep = Callable[[float], Awaitable[None]]


@dataclass(frozen=True)
class RetryPolicy:
    """How aioseq retries what is safe to retry (conflicts, throttling, transient errors).

    Retries stop at whichever bound comes first: ``max_attempts`` attempts in all, or
    ``max_delay_secs`` seconds since the first attempt. Waits between attempts are drawn
    uniformly from ``[0, min(max_backoff_secs, initial_backoff_secs * 2**n)]`` ("full jitter",
    AWS Architecture Blog, "Exponential Backoff And Jitter"; tenacity's
    ``wait_random_exponential``). botocore's own retries are switched off on clients aioseq
    opens, so this policy is the only one that runs.

    Attributes:
        max_attempts: attempts in all, including the first (>= 1).
        max_delay_secs: seconds after which no new attempt starts (> 0).
        initial_backoff_secs: the cap of the first wait, in seconds (> 0).
        max_backoff_secs: the largest wait, in seconds (>= initial_backoff_secs).
        sleep: the coroutine used to wait (inject a fake one in tests).
    """

    max_attempts: int = 100
    max_delay_secs: float = 60.0
    initial_backoff_secs: float = 0.005
    max_backoff_secs: float = 1.0
    sleep: Sleep = field(default=asyncio.sleep, compare=False, repr=False)

    def __post_init__(self) -> None:
        if (
            not isinstance(self.max_attempts, int)
            or isinstance(self.max_attempts, bool)
            or not 1 <= self.max_attempts <= 10_000
        ):
            raise ConfigurationError(
                f"max_attempts must be an int in 1..10000: {self.max_attempts!r}"
            )
        for name in ("max_delay_secs", "initial_backoff_secs", "max_backoff_secs"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
                raise ConfigurationError(f"{name} must be a positive number: {value!r}")
        if self.max_backoff_secs < self.initial_backoff_secs:
            raise ConfigurationError("max_backoff_secs must be >= initial_backoff_secs")
