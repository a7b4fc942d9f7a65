"""Frozen configuration values: the table's layout, the retry policy and group commit.

DynamoDB's limits and the attribute names aioseq keeps for itself are published here (they
live in the private `aioseq._limits`, which the values layer below this module reads)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from aioseq._checks import check_attribute_name, check_seconds, check_table_name
from aioseq._limits import (
    COUNTER_ATTRIBUTE,
    EXPIRES_ATTRIBUTE,
    MAX_DIGITS,
    MAX_ITEM_BYTES,
    MAX_KEY_ATTRIBUTE_NAME_BYTES,
    MAX_NUMBER,
    MAX_PARTITION_KEY_BYTES,
    MAX_SAFE_INTEGER,
    MAX_SORT_KEY_BYTES,
    NUMBERING_ATTRIBUTE,
    RECENT_WRITES,
    RESERVED_ATTRIBUTES,
    TOKEN_ATTRIBUTE,
    TOKENS_ATTRIBUTE,
    TURN_ATTRIBUTE,
    WRITES_ATTRIBUTE,
)
from aioseq.errors import ConfigurationError

__all__ = [
    "COUNTER_ATTRIBUTE",
    "DEFAULT_TABLE_NAME",
    "EXPIRES_ATTRIBUTE",
    "IDEMPOTENCY_MEMORY_BYTES",
    "IDEMPOTENCY_TTL_SECS",
    "MAX_DIGITS",
    "MAX_IDEMPOTENCY_TTL_SECS",
    "MAX_ITEM_BYTES",
    "MAX_KEY_ATTRIBUTE_NAME_BYTES",
    "MAX_NUMBER",
    "MAX_PARTITION_KEY_BYTES",
    "MAX_SAFE_INTEGER",
    "MAX_SORT_KEY_BYTES",
    "NUMBERING_ATTRIBUTE",
    "RECENT_WRITES",
    "RESERVED_ATTRIBUTES",
    "TOKENS_ATTRIBUTE",
    "TOKEN_ATTRIBUTE",
    "TURN_ATTRIBUTE",
    "WRITES_ATTRIBUTE",
    "GroupCommit",
    "RetryPolicy",
    "TableSpec",
]

#: The table ``aioseq create-table`` and ``DynamoStore.open()`` use when none is named.
DEFAULT_TABLE_NAME = "aioseq"

#: How long an idempotency key holds its first call's number by default: 24 hours, as
#: Stripe's API keeps a key's first result.
IDEMPOTENCY_TTL_SECS = 86_400

#: The longest ``idempotency_ttl_secs``: 10 years (315,360,000 s). A record's expiry, now plus
#: the time to live in epoch seconds, stays a small DynamoDB Number (38 digits at most), and a
#: key that must answer longer is a business key: store it as an item of its own.
MAX_IDEMPOTENCY_TTL_SECS = 10 * 365 * 86_400

#: How much memory a counter object spends by default remembering the idempotency keys it
#: stored or found, to answer a replay that comes back to it with no request: 1 MiB (about
#: 2,100 keys of 36 characters, a UUID's; at most 10,000 keys whatever their size). See
#: docs/web-services.md for what a key costs and how it was measured.
IDEMPOTENCY_MEMORY_BYTES = 1024 * 1024


@dataclass(frozen=True)
class TableSpec:
    """The layout of the table that holds counter items (and, for the item-writing strategies,
    the items numbered by them).

    The default layout, created by ``DynamoStore.create_table()`` / ``aioseq create-table``:

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


@dataclass(frozen=True)
class RetryPolicy:
    """How aioseq retries what is safe to retry (conflicts, throttling, transient errors).

    Retries stop at whichever bound comes first: ``max_attempts`` attempts in all (a writer's
    waits for its turn in a counter's queue, attempts that sent nothing, are not counted), or
    ``max_delay_secs`` seconds since the first attempt. Waits between attempts are drawn
    uniformly from ``[0, min(max_backoff_secs, initial_backoff_secs * 2**n)]`` ("full jitter",
    AWS Architecture Blog, "Exponential Backoff And Jitter"; tenacity's
    ``wait_random_exponential``), where ``n`` counts the failures that ask for a backoff
    (throttling, 5xx, lost connections), not lost races retried at once or a writer's pauses
    in a counter's queue. botocore's own retries are switched off on clients aioseq opens, so
    this policy is the only one that runs.

    Attributes:
        max_attempts: attempts in all, including the first, less waits for a turn in a
            counter's queue (>= 1).
        max_delay_secs: seconds after which no new attempt starts (> 0).
        initial_backoff_secs: the cap of the first wait, in seconds (> 0).
        max_backoff_secs: the largest wait, in seconds (>= initial_backoff_secs).
        max_unreachable_secs: how long an endpoint that cannot be connected to at all
            (connection refused, no such host, connect timeout:
            [`EndpointUnreachable`][aioseq.errors.EndpointUnreachable]) is retried, in seconds since
            the first attempt, while the endpoint answers nothing else (> 0). Such a request was
            never sent, and retrying a gone server for the whole ``max_delay_secs`` only delays
            the error.

    The waits and the bounds are on the store's clock ([`aioseq.clock`][aioseq.clock]).
    """

    max_attempts: int = 100
    max_delay_secs: float = 60.0
    initial_backoff_secs: float = 0.005
    max_backoff_secs: float = 1.0
    max_unreachable_secs: float = 3.0

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


@dataclass(frozen=True)
class GroupCommit:
    """How a strategy that groups (optimistic, sort-key, transactional) commits concurrent
    calls together: the calls waiting while one request is in flight share the next request,
    so one round trip serves all of them and a lone caller is not delayed.

    This is group commit as databases do it for their logs (DeWitt et al., "Implementation
    Techniques for Main Memory Database Systems", SIGMOD 1984; PostgreSQL's ``commit_delay``).
    Pass ``group=GroupCommit(...)`` to a strategy; ``group=True`` (the default) is
    ``GroupCommit()`` and ``group=False`` commits each call alone.

    Attributes:
        max_size: the most calls one request serves (>= 1), or ``None`` for as many as the
            strategy's request takes: 100 puts per transaction for the sort-key strategy,
            99 for the transactional one (one action is the counter's), no limit for the
            optimistic counter's single write. A strategy refuses a larger value.
        window_secs: how long, in seconds, a group waits for company before it commits
            (0 to 10; 0, the default: never; the first call goes at once and the next group
            forms while it is in flight).

    Raises:
        ConfigurationError: a value outside those ranges, or of the wrong type.
    """

    max_size: int | None = None
    window_secs: float = 0.0

    def __post_init__(self) -> None:
        if self.max_size is not None and (
            not isinstance(self.max_size, int)
            or isinstance(self.max_size, bool)
            or not 1 <= self.max_size <= 10**12
        ):
            raise ConfigurationError(f"max_size must be an int >= 1 or None: {self.max_size!r}")
        if (
            isinstance(self.window_secs, bool)
            or not isinstance(self.window_secs, (int, float))
            or not 0 <= self.window_secs <= 10
        ):
            raise ConfigurationError(f"window_secs must be in [0, 10]: {self.window_secs!r}")
