"""The bad-input catalogue (docs/configuration.md, "Bad input"): each bad input gets a clear,
typed aioseq error and nothing is written. Inputs aioseq can judge alone are refused before any
request (the ``idle_store`` fixture checks that none was sent); inputs only the table can
reveal (a counter item that holds no counter, a number past ``max_value``, a wrong key schema)
are refused by a condition or by DynamoDB, and the table is checked to hold what it held
before.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest
from checks import counter_item, item_count, put_counter_value, record_requests

from aioseq import (
    MAX_NUMBER,
    AtomicCounter,
    BlockAllocator,
    ConfigurationError,
    CounterValueInvalid,
    DynamoStore,
    NumberOutOfRange,
    OptimisticCounter,
    SortKeyCounter,
    StoreClosed,
    TableNotFound,
    TableSpec,
    TransactionalCounter,
    ValidationFailed,
)
from aioseq.config import MAX_ITEM_BYTES, MAX_SAFE_INTEGER

#: Every counter object aioseq makes, by a name for test ids.
STRATEGIES = (
    "atomic",
    "allocator",
    "optimistic",
    "optimistic-put",
    "optimistic+group",
    "sort-key",
    "sort-key+group",
    "transactional",
    "transactional+group",
)
#: Those that keep a counter item.
COUNTER_ITEM_STRATEGIES = tuple(s for s in STRATEGIES if not s.startswith("sort-key"))
#: Those that take a count (next_many).
COUNTING_STRATEGIES = ("atomic", "allocator", "optimistic", "optimistic-put", "optimistic+group")


def make(store: DynamoStore, strategy: str, key: str = "k", **options: Any) -> Any:
    """The counter object ``strategy`` names, on counter ``key``."""
    name, _, group = strategy.partition("+")
    if group:
        options["group"] = True
    # The classes themselves: private objects, so that several strategies and options on one
    # key stay apart (the store's factories share one object per key and options).
    if name == "atomic":
        return AtomicCounter(store, key, **options)
    if name == "allocator":
        return BlockAllocator(store, key, **options)
    if name == "optimistic":
        return OptimisticCounter(store, key, **options)
    if name == "optimistic-put":
        return OptimisticCounter(store, key, write="put", **options)
    if name == "sort-key":
        return SortKeyCounter(store, key, **options)
    assert name == "transactional"
    return TransactionalCounter(store, key, **options)


def take(counter: Any) -> Awaitable[int]:
    """One number from any counter object (an item-writing one stores a small item)."""
    if isinstance(counter, SortKeyCounter):
        return counter.put()
    if isinstance(counter, TransactionalCounter):
        table = counter.store.table
        return counter.put(lambda n: {table.partition_key: "items", table.sort_key or "sk": n})
    next_number: Callable[[], Awaitable[int]] = counter.next
    return next_number()


@pytest.fixture
async def idle_store(aioseq_endpoint: str) -> AsyncIterator[DynamoStore]:
    """A store on a table that is never created, for inputs refused before any request."""
    async with DynamoStore.open(table="aioseq-never-created", endpoint_url=aioseq_endpoint) as s:
        yield s
        assert not s.requests


async def close(counter: Any) -> None:
    if isinstance(counter, BlockAllocator):
        await counter.aclose()


# --- keys -------------------------------------------------------------------------------------

BAD_KEYS = [
    pytest.param("", id="empty"),
    pytest.param(42, id="int"),
    pytest.param(None, id="None"),
    pytest.param(b"k", id="bytes"),
    pytest.param("k" * 2049, id="2049-bytes"),
    pytest.param("é" * 1024 + "k", id="2049-utf8-bytes"),
    pytest.param("\ud800", id="lone-surrogate"),
]


@pytest.mark.parametrize("key", BAD_KEYS)
async def test_bad_counter_keys_are_refused(idle_store: DynamoStore, key: object) -> None:
    for strategy in STRATEGIES:
        with pytest.raises(ConfigurationError, match="counter key must"):
            make(idle_store, strategy, key)  # type: ignore[arg-type]


@pytest.mark.parametrize("strategy", STRATEGIES)
async def test_a_key_of_dynamodb_s_largest_size_works(
    aioseq_store: DynamoStore, strategy: str
) -> None:
    key = "é" * 1024  # 2048 UTF-8 bytes: DynamoDB's largest partition key value
    counter = make(aioseq_store, strategy, key)
    assert await take(counter) == 1
    await close(counter)


@pytest.mark.parametrize(
    ("item", "message"),
    [
        pytest.param({"pk": "", "sk": 1}, "must not be empty", id="empty-partition-key"),
        pytest.param({"pk": "p" * 2049, "sk": 1}, "2048 UTF-8 bytes", id="long-partition-key"),
        pytest.param({"sk": 1}, "no partition key", id="no-partition-key"),
        pytest.param({"pk": "p", "sk": "s" * 1025}, "1024 UTF-8 bytes", id="long-sort-key"),
    ],
)
async def test_bad_item_keys_are_refused_before_any_request(
    idle_store: DynamoStore, item: dict[str, Any], message: str
) -> None:
    with pytest.raises(ConfigurationError, match=message):
        await idle_store.transactional_counter("c").put(item)


@pytest.mark.parametrize(
    "attributes",
    [
        pytest.param(lambda n: {"pk": "issues", "sk": n}, id="item-function"),
        pytest.param([("title", "x")], id="list"),
        pytest.param("title", id="str"),
    ],
)
async def test_a_sort_key_put_takes_attributes_not_an_item_function(
    idle_store: DynamoStore, attributes: Any
) -> None:
    with pytest.raises(ConfigurationError, match=r"as a mapping, such as put\(\{") as caught:
        await idle_store.sort_key_counter("issues").put(attributes)
    assert ("TransactionalCounter.put" in str(caught.value)) == callable(attributes)


# --- names that look like expressions ---------------------------------------------------------

#: Names and a key that would change an expression if they were formatted into one.
TRICKY = "a = :b OR #x"


@pytest.fixture
async def tricky_store(aioseq_endpoint: str) -> AsyncIterator[DynamoStore]:
    """A table whose key and value attributes are named like expression fragments."""
    spec = TableSpec(
        name=f"aioseq-test-{uuid.uuid4().hex[:12]}",
        partition_key=TRICKY,
        sort_key="#value) OR (:n",
        value_attribute="value = :limit OR attribute_exists(#pk)",
    )
    async with DynamoStore.open(table=spec, endpoint_url=aioseq_endpoint) as store:
        await store.create_table()
        try:
            yield store
        finally:
            await store.delete_table()


@pytest.mark.parametrize("strategy", STRATEGIES)
async def test_names_and_keys_never_change_an_expression(
    tricky_store: DynamoStore, strategy: str
) -> None:
    store, table = tricky_store, tricky_store.table
    sent = record_requests(store)
    if strategy.startswith("transactional"):
        counter = store.transactional_counter(TRICKY, group="+group" in strategy)
        sort_key = str(table.sort_key)

        def items(n: int) -> dict[str, Any]:
            return {table.partition_key: "#x", sort_key: n}

        assert [await counter.put(items), await counter.put(items)] == [1, 2]
    else:
        counter = make(store, strategy, TRICKY)
        assert [await take(counter), await take(counter)] == [1, 2]
        await close(counter)  # the allocator gives its unused numbers back
    assert await counter.current() == 2
    if strategy in COUNTER_ITEM_STRATEGIES:  # the counter item, under its literal names
        item = await counter_item(store, TRICKY)
        assert item is not None and item[table.value_attribute] == {"N": "2"}
    expressions = [text for _, params in sent for text in _expressions(params) if text is not None]
    assert expressions
    for text in expressions:
        assert TRICKY not in text and "attribute_exists(#pk)" not in text


def _expressions(params: dict[str, Any]) -> list[str]:
    found = [v for k, v in params.items() if k.endswith("Expression")]
    for action in params.get("TransactItems", []):
        for write in action.values():
            found += [v for k, v in write.items() if k.endswith("Expression")]
    return found


# --- counts, sizes, strides and limits --------------------------------------------------------

#: Not a whole number >= 1: zero, negative, not an int, absurd.
BAD_WHOLE_NUMBERS: list[object] = [0, -1, 1.5, True, "3", None, 10**40]


@pytest.mark.parametrize("strategy", COUNTING_STRATEGIES)
async def test_bad_counts_are_refused_before_any_request(
    idle_store: DynamoStore, strategy: str
) -> None:
    counter = make(idle_store, strategy)
    for n in BAD_WHOLE_NUMBERS:
        with pytest.raises(ConfigurationError, match="n must be an int"):
            await counter.next_many(n)
    await close(counter)


#: (strategy, option) pairs that take a whole number >= 1, with its error's words.
WHOLE_NUMBER_OPTIONS = [
    *((s, "max_value") for s in STRATEGIES),
    *((s, "max_in_flight") for s in ("optimistic", "sort-key", "transactional")),
    ("sort-key", "zero_pad"),
    ("allocator", "block_size"),
    ("allocator", "min_block_size"),
    ("allocator", "max_block_size"),
    ("allocator", "stride"),
]


@pytest.mark.parametrize(("strategy", "option"), WHOLE_NUMBER_OPTIONS)
async def test_bad_sizes_strides_and_limits_are_refused(
    idle_store: DynamoStore, strategy: str, option: str
) -> None:
    for value in BAD_WHOLE_NUMBERS:
        if value is None and option in ("max_in_flight", "zero_pad"):
            continue  # None is the default there: no limit, no padding
        options: dict[str, Any] = {option: value}
        with pytest.raises(ConfigurationError, match=option):
            make(idle_store, strategy, **options)


async def test_bad_offsets_are_refused(idle_store: DynamoStore) -> None:
    bad: list[Any] = [-1, 1.5, True, 10**40, 21]  # what a type checker would refuse too
    for offset in bad:
        with pytest.raises(ConfigurationError, match="offset"):
            idle_store.block_allocator("k", offset=offset, max_value=20)


# --- counter items that do not hold a counter -------------------------------------------------

BAD_COUNTER_VALUES = [
    pytest.param({"S": "12"}, "type S", id="string"),
    pytest.param({"N": "1.5"}, "not whole", id="fraction"),
    pytest.param({"N": "-3"}, "negative", id="negative"),
    pytest.param({"BOOL": True}, "type BOOL", id="bool"),
    pytest.param(None, "is missing", id="missing"),
]


@pytest.mark.parametrize(("value", "message"), BAD_COUNTER_VALUES)
@pytest.mark.parametrize("strategy", COUNTER_ITEM_STRATEGIES)
async def test_a_counter_item_without_a_counter_is_an_error_and_is_left_alone(
    aioseq_store: DynamoStore, strategy: str, value: dict[str, Any] | None, message: str
) -> None:
    store = aioseq_store
    if value is None:  # the counter item exists, without its value attribute
        item = {**store.counter_item_key("k"), "note": {"S": "made by hand"}}
        await store.send_once("put_item", TableName=store.table.name, Item=item)
    else:
        await put_counter_value(store, "k", value)
    stored = await counter_item(store, "k")
    counter = make(store, strategy)
    before = store.requests
    with pytest.raises(CounterValueInvalid, match=message) as caught:
        await take(counter)
    sent = store.requests - before
    assert caught.value.key == "k" and caught.value.found == value
    assert await counter_item(store, "k") == stored
    assert await item_count(store) == 1
    if strategy in ("atomic", "allocator") and value == {"N": "1.5"}:
        # No condition expression can tell a fraction from a whole number: the ADD is applied,
        # then undone by a conditional SET.
        assert sent == {"UpdateItem": 2}
    await close(counter)


# --- numbers past 38 digits, or past max_value -----------------------------------------------


#: An allocator that reserves one number per block: it reaches max_value exactly.
ONE_AT_A_TIME: dict[str, dict[str, Any]] = {
    "allocator": {"block_size": 1, "target_refill_interval_secs": None, "prefetch_at": 0}
}


@pytest.mark.parametrize(
    "max_value", [pytest.param(MAX_NUMBER, id="38-digits"), pytest.param(MAX_SAFE_INTEGER, id="js")]
)
@pytest.mark.parametrize("strategy", COUNTER_ITEM_STRATEGIES)
async def test_the_counter_never_passes_max_value(
    aioseq_store: DynamoStore, strategy: str, max_value: int
) -> None:
    store = aioseq_store
    await put_counter_value(store, "k", {"N": str(max_value - 2)})
    counter = make(store, strategy, max_value=max_value, **ONE_AT_A_TIME.get(strategy, {}))
    assert [await take(counter), await take(counter)] == [max_value - 1, max_value]
    with pytest.raises(NumberOutOfRange, match="max_value") as caught:
        await take(counter)
    assert caught.value.value > max_value
    assert (await counter_item(store, "k") or {})["value"] == {"N": str(max_value)}
    await close(counter)


@pytest.mark.parametrize("strategy", ["sort-key", "sort-key+group"])
async def test_the_sort_key_counter_never_passes_max_value(
    aioseq_store: DynamoStore, strategy: str
) -> None:
    issues = make(aioseq_store, strategy, "p", max_value=2)
    assert [await issues.put(), await issues.put()] == [1, 2]
    with pytest.raises(NumberOutOfRange, match="max_value"):
        await issues.put()
    assert await item_count(aioseq_store) == 2


async def test_an_allocator_with_strides_never_passes_max_value(aioseq_store: DynamoStore) -> None:
    allocator = aioseq_store.block_allocator(
        "k", stride=3, offset=2, max_value=20, **ONE_AT_A_TIME["allocator"]
    )
    assert [await allocator.next() for _ in range(7)] == [2, 5, 8, 11, 14, 17, 20]
    with pytest.raises(NumberOutOfRange):
        await allocator.next()
    assert await allocator.current() == 20  # the last number reserved (counter value 7)
    await allocator.aclose()


async def test_a_count_larger_than_max_value_is_refused(idle_store: DynamoStore) -> None:
    with pytest.raises(NumberOutOfRange):
        await idle_store.atomic_counter("k", max_value=5).next_many(6)


# --- items over 400 KB ------------------------------------------------------------------------

#: A string attribute that makes an item pass DynamoDB's 400 KB.
TOO_BIG = "x" * MAX_ITEM_BYTES


@pytest.mark.parametrize(
    "strategy", ["sort-key", "sort-key+group", "transactional", "transactional+group"]
)
async def test_an_item_over_400_kb_is_refused_before_any_request(
    aioseq_store: DynamoStore, strategy: str
) -> None:
    counter = make(aioseq_store, strategy, "c")

    def put(body: str) -> Awaitable[int]:
        if isinstance(counter, SortKeyCounter):
            return counter.put({"body": body})
        gapless: TransactionalCounter = counter
        return gapless.put(lambda n: {"pk": "i", "sk": n, "body": body})

    before = aioseq_store.requests
    with pytest.raises(ConfigurationError, match="400 KB"):
        await put(TOO_BIG)
    assert aioseq_store.requests == before
    assert await put("x" * 400_000) == 1  # 400,000 bytes fits


# --- the table --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "wrong",
    [
        pytest.param({"sort_key": None}, id="no-sort-key"),
        pytest.param({"sort_key_type": "S"}, id="sort-key-type"),
        pytest.param({"partition_key": "id"}, id="partition-key-name"),
    ],
)
async def test_a_table_with_another_key_schema_is_refused(
    aioseq_store: DynamoStore, wrong: dict[str, Any]
) -> None:
    spec = TableSpec(name=aioseq_store.table.name, **wrong)
    store = DynamoStore(aioseq_store.client, spec)
    with pytest.raises(ConfigurationError, match="key schema"):
        await store.check_table()
    with pytest.raises(ConfigurationError, match="key schema"):
        await store.create_table()
    # Without the check, DynamoDB refuses each request (or aioseq refuses an item whose key
    # types contradict the spec, before any request); nothing is written either way.
    for strategy in COUNTER_ITEM_STRATEGIES:
        counter = make(store, strategy)
        with pytest.raises((ValidationFailed, ConfigurationError)):
            await take(counter)
        await close(counter)
    assert await item_count(aioseq_store) == 0
    await store.aclose()


@pytest.mark.parametrize("strategy", STRATEGIES)
async def test_a_missing_table_is_table_not_found_not_retried_not_created(
    aioseq_endpoint: str, strategy: str
) -> None:
    async with DynamoStore.open(table="no-such-table", endpoint_url=aioseq_endpoint) as store:
        counter = make(store, strategy)
        with pytest.raises(TableNotFound, match="table 'no-such-table' does not exist") as caught:
            await take(counter)
        assert caught.value.tables == ("no-such-table",)
        with pytest.raises(TableNotFound):
            await counter.current()
        with pytest.raises(TableNotFound):
            await store.check_table()
        await close(counter)
        assert sum(store.requests.values()) == 3  # one request each: not retried
        assert "no-such-table" not in (await store.client.list_tables())["TableNames"]


# --- a closed store ---------------------------------------------------------------------------


@pytest.mark.parametrize("strategy", STRATEGIES)
async def test_a_closed_store_refuses_work(aioseq_endpoint: str, strategy: str) -> None:
    store = await DynamoStore.open(endpoint_url=aioseq_endpoint)
    counter = make(store, strategy)
    await store.aclose()
    await store.aclose()  # idempotent
    with pytest.raises(StoreClosed):
        await take(counter)
    with pytest.raises(StoreClosed):
        await counter.current()
    for operation in (store.create_table, store.check_table, store.delete_table):
        with pytest.raises(StoreClosed):
            await operation()
    assert sum(store.requests.values()) == 0


async def test_a_mapping_without_the_sort_key_points_to_the_item_function(
    idle_store: DynamoStore,
) -> None:
    """In the store's own table a mapping's number goes to ``number_attribute``, never to the
    sort key: such a put can never succeed, and the error says how to write it."""
    with pytest.raises(ConfigurationError, match=r"put\(lambda n: \{'pk': \.\.\., 'sk': n\}\)"):
        await idle_store.transactional_counter("c").put({"pk": "invoices", "total": 120})


@pytest.mark.parametrize("send", ["send_once", "send_with_retries"])
async def test_an_operation_named_by_its_api_name_gets_the_method_name(
    idle_store: DynamoStore, send: str
) -> None:
    with pytest.raises(ConfigurationError, match=r"'UpdateItem' is 'update_item'"):
        await getattr(idle_store, send)("UpdateItem", TableName=idle_store.table.name)
    with pytest.raises(ConfigurationError, match="unknown DynamoDB operation 'nope'"):
        await getattr(idle_store, send)("nope")
