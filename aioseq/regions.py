"""Counters on DynamoDB global tables: what a table says of its Regions, the two safe ways to
share counters across Regions, and the one decision of whether a store may write.

On a global table with multi-Region eventual consistency (MREC, the default mode), every replica
takes writes, a condition is evaluated against the local replica only, and two Regions' writes
to one item are settled by last writer wins, silently: two Regions moving one counter item hand
out the same numbers and never learn of it. With multi-Region strong consistency (MRSC), a
write is evaluated against the latest state everywhere, and a conflicting write from another
Region is refused with ``ReplicatedWriteConflictException`` (aioseq's
[`TransactionConflict`][aioseq.errors.TransactionConflict], retried); MRSC tables take no
transactions (``TransactWriteItems``). (AWS: "How DynamoDB global tables work", consistency
modes; version 2019.11.21.)

So a [`DynamoStore`][aioseq.DynamoStore] learns its table's [`Replication`][aioseq.Replication]
from ``DescribeTable`` before its first write, and [`write_refusal()`][aioseq.regions.write_refusal]
decides, once, whether it may write:

- an MREC global table, nothing stated: refused
  ([`UnsafeGlobalTable`][aioseq.errors.UnsafeGlobalTable]);
- ``home_region="us-east-1"``: only a store in that Region writes
  ([`NotHomeRegion`][aioseq.errors.NotHomeRegion] elsewhere); reads work everywhere;
- ``regions=["us-east-1", "eu-west-1"]``: Region-scoped numbering, a
  [`RegionScope`][aioseq.RegionScope]: each Region moves its own counter items
  (``"orders@us-east-1"``), and its numbers are its own residue class, so numbers are unique
  across Regions and increasing within one;
- an MRSC table: shared counters work; what needs transactions is refused
  ([`NotSupportedByTable`][aioseq.errors.NotSupportedByTable]).

See docs/global-tables.md for the guarantees and runbooks.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from aioseq.errors import (
    AioseqError,
    NotHomeRegion,
    NotSupportedByTable,
    RegionNotListed,
    UnsafeGlobalTable,
)
from aioseq.numbering import RegionScope

__all__ = ["Replication"]

Consistency = Literal["EVENTUAL", "STRONG"]


@dataclass(frozen=True)
class Replication:
    """What ``DescribeTable`` says of a table's Regions.

    Attributes:
        replicas: the Regions of its replicas, sorted (empty: not a global table). The Region
            described from is included (when known) whether or not DynamoDB lists it.
        consistency: ``"EVENTUAL"`` (MREC) or ``"STRONG"`` (MRSC) for a global table, ``None``
            for a table with no replicas.
        witnesses: the Regions of an MRSC table's witness (at most one).
        known: ``False`` when the table could not be described (no permission): nothing is
            known, and nothing is refused for it.
    """

    replicas: tuple[str, ...] = ()
    consistency: Consistency | None = None
    witnesses: tuple[str, ...] = ()
    known: bool = True

    @property
    def is_global(self) -> bool:
        """Whether the table has replicas (a global table)."""
        return bool(self.replicas)

    @classmethod
    def of(cls, table: Mapping[str, Any], region: str | None) -> Replication:
        """The replication of ``DescribeTable``'s ``Table`` answer, described from ``region``."""
        replicas = {r["RegionName"] for r in table.get("Replicas") or () if "RegionName" in r}
        if not replicas:
            return cls()
        if region is not None:
            replicas.add(region)
        consistency: Consistency = (
            "STRONG" if table.get("MultiRegionConsistency") == "STRONG" else "EVENTUAL"
        )
        witnesses = tuple(sorted(w["RegionName"] for w in table.get("GlobalTableWitnesses") or ()))
        return cls(tuple(sorted(replicas)), consistency, witnesses)


def write_refusal(
    replication: Replication,
    *,
    table: str,
    region: str | None,
    scope: RegionScope | None,
    home_region: str | None,
    transactions: bool = False,
) -> AioseqError | None:
    """Why a store in ``region`` may not write counters on ``table`` (``None``: it may).

    Parameters:
        replication: what ``DescribeTable`` said (``Replication(known=False)``: nothing).
        table: the table's name, for the message.
        region: the store's Region (``None``: not known).
        scope: the store's ``regions=``, if any.
        home_region: the store's ``home_region=``, if any.
        transactions: the writer sends ``TransactWriteItems`` (the transactional strategy, a
            grouped sort-key counter).

    Returns:
        [`NotHomeRegion`][aioseq.errors.NotHomeRegion],
        [`RegionNotListed`][aioseq.errors.RegionNotListed],
        [`NotSupportedByTable`][aioseq.errors.NotSupportedByTable] or
        [`UnsafeGlobalTable`][aioseq.errors.UnsafeGlobalTable], the first that applies, or
        ``None``.
    """
    if home_region is not None and region != home_region:
        return NotHomeRegion(table, region, home_region)
    if scope is not None and region not in scope.regions:
        return RegionNotListed(region, scope.regions)
    if transactions and replication.consistency == "STRONG":
        return NotSupportedByTable(
            table,
            "TransactWriteItems (the transactional strategy, or grouped sort-key puts)",
            "a table with multi-Region strong consistency takes no transactions: use the"
            " optimistic counter and put each item with its number, or a sort-key counter"
            " with group=False",
        )
    if (
        replication.is_global
        and replication.consistency == "EVENTUAL"
        and scope is None
        and home_region is None
    ):
        return UnsafeGlobalTable(table, replication.replicas, region)
    return None
