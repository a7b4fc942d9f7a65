"""Identifiers (``ORD-000042``) and zero-padded sort keys against a server: aioseq.formatting
(the rules that need no server: tests/unit/test_id_format.py)."""

from __future__ import annotations

import pytest
from checks import counter_item, item_count, put_counter_value

from aioseq import (
    ConfigurationError,
    DynamoStore,
    IdFormat,
    NumberOutOfRange,
    TableSpec,
    zero_pad,
)


async def test_check_counter_rejects_a_counter_that_can_outgrow_the_width(
    aioseq_store: DynamoStore,
) -> None:
    order_id = IdFormat(prefix="ORD-", width=6)
    with pytest.raises(ConfigurationError, match="max_value=999999"):
        order_id.check_counter(aioseq_store.transactional_counter("orders"))
    order_id.check_counter(
        aioseq_store.transactional_counter("bounded-orders", max_value=order_id.max_number)
    )
    order_id.check_counter(999_999)
    with pytest.raises(ConfigurationError):
        order_id.check_counter(1_000_000)


async def test_a_counter_bounded_by_the_format_stops_before_writing(
    aioseq_store: DynamoStore,
) -> None:
    """The counter made with ``max_value=fmt.max_number`` hands out ORD-999999, then refuses
    the next number with nothing written: no item, and the counter does not move."""
    order_id = IdFormat(prefix="ORD-", width=6)
    orders = aioseq_store.transactional_counter("orders", max_value=order_id.max_number)
    await put_counter_value(aioseq_store, "orders", {"N": "999998"})

    def order(n: int) -> dict[str, object]:
        return {"pk": "order", "sk": n, "order_id": order_id.format(n)}

    assert await orders.put(order) == 999_999
    with pytest.raises(NumberOutOfRange):
        await orders.put(order)
    item = await counter_item(aioseq_store, "orders")
    assert item is not None and item["value"] == {"N": "999999"}
    assert await item_count(aioseq_store) == 2  # the counter item and ORD-999999


async def test_sort_key_counter_pads_with_zero_pad(aioseq_endpoint: str) -> None:
    """One padding rule: a string sort key is ``zero_pad(n, width)``, as ``IdFormat`` pads."""
    spec = TableSpec(name="aioseq-format-only", sort_key_type="S")  # never created: no request
    async with DynamoStore.open(table=spec, endpoint_url=aioseq_endpoint) as store:
        issues = store.sort_key_counter("project", zero_pad=4)
        for n in (1, 42, 9999):
            assert issues.format_sort_key(n) == {"S": zero_pad(n, 4)}
            assert zero_pad(n, 4) == IdFormat(width=4).format(n)
        with pytest.raises(NumberOutOfRange):
            issues.format_sort_key(10_000)
