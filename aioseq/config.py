"""Frozen configuration values: the table's layout and the retry policy."""

from __future__ import annotations

import asyncio
import math
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Literal

from aioseq.errors import ConfigurationError

__all__ = [
    "DEFAULT_TABLE_NAME",
    "MAX_DIGITS",
    "MAX_ITEM_BYTES",
    "MAX_NUMBER",
    "MAX_PARTITION_KEY_BYTES",
    "MAX_SAFE_INTEGER",
    "MAX_SORT_KEY_BYTES",
    "RECENT_WRITES",
    "RESERVED_ATTRIBUTES",
    "TOKENS_ATTRIBUTE",
    "TOKEN_ATTRIBUTE",
    "WRITES_ATTRIBUTE",
    "RetryPolicy",
    "TableSpec",
    "check_attribute_name",
    "check_seconds",
    "check_table_name",
]

#: The table ``aioseq create-table`` and ``DynamoStore.open()`` use when none is named.
DEFAULT_TABLE_NAME = "aioseq"

#: DynamoDB's Number type holds at most 38 significant digits.
MAX_DIGITS = 38
#: The largest sequence number aioseq hands out: 10**38 - 1.
MAX_NUMBER = 10**MAX_DIGITS - 1

#: JavaScript's ``Number.MAX_SAFE_INTEGER`` (2**53 - 1): pass it as ``max_value=`` when the
#: numbers are read by JavaScript, which loses precision above it.
MAX_SAFE_INTEGER = 2**53 - 1

#: DynamoDB's limits on key values, in UTF-8 bytes: a partition key value (a counter key, an
#: item collection) and a sort key value.
MAX_PARTITION_KEY_BYTES = 2048
MAX_SORT_KEY_BYTES = 1024
#: DynamoDB's largest item (names and values), in bytes.
MAX_ITEM_BYTES = 400 * 1024
#: DynamoDB's longest name of a key attribute, in UTF-8 bytes.
MAX_KEY_ATTRIBUTE_NAME_BYTES = 255

#: The attributes aioseq keeps for itself, so that a lost answer is resolved by checking,
#: never by guessing (see :mod:`aioseq.strategies._recent_writes`):
#:
#: - ``aioseq_token`` (S) on every item the sort-key strategy stores: the idempotency token of
#:   the ``put`` call that stored it;
#: - ``aioseq_writes`` (N) on a counter item: how many conditional writes (optimistic and
#:   gapless strategies) have moved it;
#: - ``aioseq_tokens`` (L of S) on a counter item: the tokens of its last
#:   :data:`RECENT_WRITES` conditional writes, write ``w`` (counting from 0) in slot
#:   ``w % RECENT_WRITES``.
TOKEN_ATTRIBUTE = "aioseq_token"
WRITES_ATTRIBUTE = "aioseq_writes"
TOKENS_ATTRIBUTE = "aioseq_tokens"
RESERVED_ATTRIBUTES = frozenset({TOKEN_ATTRIBUTE, WRITES_ATTRIBUTE, TOKENS_ATTRIBUTE})
#: How many conditional writes a counter item remembers the tokens of. A retry whose earlier
#: attempt's answer was lost can tell its own write from a rival's while fewer than this many
#: writes followed it. 32 tokens of 16 characters keep a counter item under 1 KB (1 WCU).
RECENT_WRITES = 32

_TABLE_NAME = re.compile(r"[A-Za-z0-9_.-]{3,255}")


def check_table_name(name: object, what: str = "table name") -> str:
    """A DynamoDB table name: 3 to 255 of ``A-Z a-z 0-9 _ - .``.
    Raises :class:`~aioseq.errors.ConfigurationError`."""
    if not isinstance(name, str) or not _TABLE_NAME.fullmatch(name):
        raise ConfigurationError(
            f"{what} must be a str of 3 to 255 characters among A-Z a-z 0-9 _ - .: {name!r}"
        )
    return name


def check_attribute_name(name: object, what: str = "attribute name") -> str:
    """An attribute name: a non-empty ``str`` of at most 255 UTF-8 bytes (DynamoDB's limit for
    key attributes). Any characters are fine: aioseq passes names only through
    ``ExpressionAttributeNames``, never into an expression's text.
    Raises :class:`~aioseq.errors.ConfigurationError`."""
    if not isinstance(name, str):
        raise ConfigurationError(f"{what} must be a str, not {type(name).__name__}")
    try:
        size = len(name.encode("utf-8"))
    except UnicodeEncodeError:
        raise ConfigurationError(f"{what} must be valid Unicode (no lone surrogates)") from None
    if not 1 <= size <= MAX_KEY_ATTRIBUTE_NAME_BYTES:
        raise ConfigurationError(
            f"{what} must be 1 to {MAX_KEY_ATTRIBUTE_NAME_BYTES} UTF-8 bytes, not {size}"
        )
    return name


def check_seconds(value: object, what: str) -> float:
    """A duration in seconds: a finite number > 0 (``bool``, NaN and infinity are not).
    Raises :class:`~aioseq.errors.ConfigurationError`."""
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float))
        or not math.isfinite(value)
        or not value > 0
    ):
        raise ConfigurationError(f"{what} must be a finite number of seconds > 0, not {value!r}")
    return float(value)


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
        check_table_name(self.name)
        names = [self.partition_key, self.value_attribute]
        if self.sort_key is not None:
            names.append(self.sort_key)
        for name in names:
            check_attribute_name(name)
        if len(set(names)) != len(names):
            raise ConfigurationError(f"attribute names must differ: {names}")
        reserved = RESERVED_ATTRIBUTES.intersection(names)
        if reserved:
            raise ConfigurationError(
                f"attribute names {sorted(reserved)} are aioseq's own; choose other names"
            )
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
        max_unreachable_secs: how long an endpoint that cannot be connected to at all
            (connection refused, no such host, connect timeout:
            :class:`~aioseq.errors.EndpointUnreachable`) is retried, in seconds since the
            first attempt (> 0). Such a request was never sent, and retrying a gone server
            for the whole ``max_delay_secs`` only delays the error.
        sleep: the coroutine used to wait (inject a fake one in tests).
    """

    max_attempts: int = 100
    max_delay_secs: float = 60.0
    initial_backoff_secs: float = 0.005
    max_backoff_secs: float = 1.0
    max_unreachable_secs: float = 3.0
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
        for name in (
            "max_delay_secs",
            "initial_backoff_secs",
            "max_backoff_secs",
            "max_unreachable_secs",
        ):
            check_seconds(getattr(self, name), name)
        if self.max_backoff_secs < self.initial_backoff_secs:
            raise ConfigurationError("max_backoff_secs must be >= initial_backoff_secs")
