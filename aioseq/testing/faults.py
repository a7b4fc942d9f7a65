"""The faults [`FaultProxy`][aioseq.testing.FaultProxy] injects: their kinds, the seeded
[`FaultSchedule`][aioseq.testing.FaultSchedule] that picks one per request, and the answer DynamoDB
sends for each error kind (the kinds are described in the proxy's module doc)."""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from typing import Any

from aioseq.errors import ConfigurationError

__all__ = [
    "ALL_KINDS",
    "APPLIED_KINDS",
    "KINDS",
    "NO_FAULTS",
    "REGION_KINDS",
    "FaultSchedule",
    "error_body",
]

#: Every kind of fault the proxy injects, in the order of the table in
#: [`aioseq.testing.fault_proxy`][aioseq.testing.fault_proxy].
KINDS: tuple[str, ...] = (
    "throughput-exceeded",
    "throttling",
    "internal-error",
    "http-500",
    "transaction-conflict",
    "reset",
    "delay",
    "response-lost",
)

#: The faults of a global table with multi-Region strong consistency (MRSC): another Region's
#: request is modifying the item (HTTP 400 ``ReplicatedWriteConflictException``, not applied).
#: Asked for by name; [`FaultSchedule.uniform()`][aioseq.testing.FaultSchedule.uniform]'s
#: default kinds are [`KINDS`][aioseq.testing.faults.KINDS].
REGION_KINDS: tuple[str, ...] = ("replicated-write-conflict",)

#: Every kind a schedule or a planned fault may name.
ALL_KINDS: tuple[str, ...] = KINDS + REGION_KINDS

#: The kinds after which the server has applied the request without the client knowing.
APPLIED_KINDS = frozenset({"delay", "response-lost"})

_SERVICE = "com.amazonaws.dynamodb.v20120810#"


@dataclass(frozen=True)
class FaultSchedule:
    """Which requests get which fault: a seeded draw per request, in the order requests arrive.

    Each request (of an operation in ``operations``, or of any when ``None``) gets kind ``k``
    with probability ``rates[k]``, and passes through otherwise; the draws come from
    ``random.Random(seed)``, so one seed gives one sequence of decisions (which request gets
    which is up to the order in which concurrent requests arrive).

    Attributes:
        rates: probability per kind (see [`ALL_KINDS`][aioseq.testing.faults.ALL_KINDS]), each
            in [0, 1], summing to <= 1.
        seed: the random generator's seed.
        operations: DynamoDB operation names (``"TransactWriteItems"``, from the request's
            ``X-Amz-Target`` header) that may get faults; ``None``: every operation.
        delay_secs: how long a ``delay`` fault holds the request, in seconds; set it past the
            client's read timeout (``DynamoStore.open(read_timeout_secs=...)``).

    Raises:
        ConfigurationError: an unknown kind, or rates out of range.
    """

    rates: Mapping[str, float] = field(default_factory=dict)
    seed: int = 0
    operations: frozenset[str] | None = None
    delay_secs: float = 3.0

    def __post_init__(self) -> None:
        unknown = set(self.rates) - set(ALL_KINDS)
        if unknown:
            raise ConfigurationError(f"unknown fault kinds {sorted(unknown)}; known: {ALL_KINDS}")
        if any(not 0 <= r <= 1 for r in self.rates.values()) or sum(self.rates.values()) > 1:
            raise ConfigurationError(f"fault rates must be in [0, 1] and sum to <= 1: {self.rates}")
        if not self.delay_secs > 0:
            raise ConfigurationError(f"delay_secs must be positive: {self.delay_secs!r}")

    @classmethod
    def uniform(
        cls,
        rate: float,
        *,
        seed: int = 0,
        kinds: Collection[str] = KINDS,
        operations: Collection[str] | None = None,
        delay_secs: float = 3.0,
    ) -> FaultSchedule:
        """``rate`` of the requests get a fault, shared equally between ``kinds``."""
        kinds = list(kinds)
        share = rate / len(kinds) if kinds else 0.0
        return cls(
            rates={k: share for k in kinds},
            seed=seed,
            operations=frozenset(operations) if operations is not None else None,
            delay_secs=delay_secs,
        )

    @property
    def rate(self) -> float:
        """The probability that a request it covers gets a fault."""
        return sum(self.rates.values())

    def picker(self) -> Callable[[str], str | None]:
        """A fresh draw sequence: ``pick(operation)`` returns a kind or ``None``."""
        rng = random.Random(self.seed)
        table = [(kind, self.rates[kind]) for kind in ALL_KINDS if self.rates.get(kind)]

        def pick(operation: str) -> str | None:
            if self.operations is not None and operation not in self.operations:
                return None
            draw = rng.random()
            for kind, rate in table:
                if draw < rate:
                    return kind
                draw -= rate
            return None

        return pick


#: No faults: a plain proxy (still reporting exchanges).
NO_FAULTS = FaultSchedule()


def error_body(kind: str, operation: str, request: bytes) -> tuple[int, dict[str, Any] | str]:
    """The status and body DynamoDB sends for an injected error ``kind``."""
    if kind == "throughput-exceeded":
        return 400, {
            "__type": _SERVICE + "ProvisionedThroughputExceededException",
            "message": "The level of configured provisioned throughput for the table was "
            "exceeded. Consider increasing your provisioning level with the UpdateTable API.",
        }
    if kind == "throttling":
        return 400, {
            "__type": _SERVICE + "ThrottlingException",
            "message": "Throughput exceeds the current capacity for one or more global "
            "secondary indexes. DynamoDB is automatically scaling your index so please try "
            "again shortly.",
        }
    if kind == "internal-error":
        return 500, {
            "__type": _SERVICE + "InternalServerError",
            "message": "Internal server error",
        }
    if kind == "http-500":
        return 500, "<html><body><h1>500 Internal Server Error</h1></body></html>"
    if kind == "transaction-conflict":
        if operation in ("TransactWriteItems", "TransactGetItems"):
            try:
                actions = len(json.loads(request).get("TransactItems", [])) or 1
            except ValueError:
                actions = 1
            reasons: list[dict[str, str]] = [{"Code": "None"}] * actions
            # The conflict is on one action, chosen by the request itself (no shared RNG).
            where = sum(request) % actions
            reasons[where] = {
                "Code": "TransactionConflict",
                "Message": "Transaction is ongoing for the item",
            }
            codes = ", ".join(r["Code"] for r in reasons)
            return 400, {
                "__type": _SERVICE + "TransactionCanceledException",
                "Message": "Transaction cancelled, please refer cancellation reasons for "
                f"specific reasons [{codes}]",
                "CancellationReasons": reasons,
            }
        return 400, {
            "__type": _SERVICE + "TransactionConflictException",
            "message": "Transaction is ongoing for the item",
        }
    if kind == "replicated-write-conflict":
        return 400, {
            "__type": _SERVICE + "ReplicatedWriteConflictException",
            "message": "One or more items in this request are being modified by a request in"
            " another Region.",
        }
    raise AssertionError(kind)
