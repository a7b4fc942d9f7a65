"""`StoreOptions`: what a [`DynamoStore`][aioseq.DynamoStore] is made with, checked once, in one
place, by ``DynamoStore(...)`` and by ``DynamoStore.open(...)`` (before it opens anything).
Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from aioseq._checks import check_region, check_seconds
from aioseq.config import TableSpec
from aioseq.errors import ConfigurationError
from aioseq.numbering import RegionScope

__all__ = ["StoreOptions"]


@dataclass(frozen=True)
class StoreOptions:
    """A store's own options, checked (`of()`): its table, how long a shared object may idle,
    the block allocators' runway, and how its counters are shared across Regions."""

    table: TableSpec
    #: Seconds an object the factories keep may go unused before it is dropped (``None``: never).
    idle_secs: float | None
    #: The runway of the block allocators made without one of their own (``None``: none).
    runway_secs: float | None
    #: Region-scoped numbering (``regions=``), or ``None``.
    region_scope: RegionScope | None
    #: The one Region that writes counters (``home_region=``), or ``None``.
    home_region: str | None
    #: The store's Region as given (``region_name=``), or ``None``: its transport's.
    region_name: str | None

    @classmethod
    def of(
        cls,
        *,
        table: TableSpec | str,
        idle_secs: float | None,
        runway_secs: float | None,
        regions: Sequence[str] | RegionScope | None,
        region_slots: int | None,
        home_region: str | None,
        region_name: str | None = None,
    ) -> StoreOptions:
        """The options ``DynamoStore`` takes, checked: ``table`` a name or a spec;
        ``runway_secs=0`` is none (``None``).

        Raises:
            ConfigurationError: a bad table name, ``idle_secs``, ``runway_secs`` or Region;
                bad Regions or slots, slots without Regions, or both ``regions`` and
                ``home_region``.
        """
        spec = table if isinstance(table, TableSpec) else TableSpec(name=table)
        scope = _sharing(regions, region_slots, home_region)
        if region_name is not None:
            check_region(region_name, "region_name")
        if idle_secs is not None:
            check_seconds(idle_secs, "idle_secs")
        if runway_secs == 0 and not isinstance(runway_secs, bool):
            runway_secs = None  # as for one allocator: none
        if runway_secs is not None:
            check_seconds(runway_secs, "runway_secs")
        return cls(spec, idle_secs, runway_secs, scope, home_region, region_name)


def _sharing(
    regions: Sequence[str] | RegionScope | None, slots: int | None, home_region: str | None
) -> RegionScope | None:
    """The Region scope ``regions=`` and ``region_slots=`` ask for, ``home_region=`` checked.

    Raises:
        ConfigurationError: bad Regions or slots, slots without Regions, a bad home Region,
            or both ways at once.
    """
    if home_region is not None:
        check_region(home_region, "home_region")
        if regions is not None:
            raise ConfigurationError(
                "regions= and home_region= are two ways to share counters across Regions: pass one"
            )
    if regions is None:
        if slots is not None:
            raise ConfigurationError("region_slots= goes with regions=")
        return None
    if isinstance(regions, RegionScope):
        if slots is not None and slots != regions.slots:
            raise ConfigurationError(f"region_slots={slots} differs from {regions}")
        return regions
    return RegionScope(tuple(regions) if not isinstance(regions, str) else regions, slots or 0)  # type: ignore[arg-type]
