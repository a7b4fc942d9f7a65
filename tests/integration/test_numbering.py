"""A counter remembers its numbering (#16): recorded by the first write, refused when another
object asks for another one, changed only by ``DynamoStore.set_numbering``."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import uuid

import pytest
from checks import cli_table, counter_item, put_counter_value, run_cli

from aioseq import (
    AtomicCounter,
    BlockAllocator,
    ConfigurationError,
    CounterValueInvalid,
    DynamoStore,
    Numbering,
    NumberingMismatch,
    NumberOutOfRange,
    StoreClosed,
    TableSpec,
    admin,
)
from aioseq._limits import NUMBERING_ATTRIBUTE


async def recorded(store: DynamoStore, key: str) -> str | None:
    item = await counter_item(store, key)
    return None if item is None else item.get(NUMBERING_ATTRIBUTE, {}).get("S")


async def value(store: DynamoStore, key: str) -> int:
    item = await counter_item(store, key)
    return 0 if item is None else int(item[store.table.value_attribute]["N"])


def assert_mismatch(exc: NumberingMismatch, stored: Numbering, requested: Numbering) -> None:
    assert (exc.stored, exc.requested) == (stored, requested)
    assert stored.encode() in str(exc) and requested.encode() in str(exc)


# --- the library ------------------------------------------------------------------------------


async def test_the_first_write_records_the_numbering(aioseq_store: DynamoStore) -> None:
    await aioseq_store.atomic_counter("plain").next()
    assert await recorded(aioseq_store, "plain") == "stride=1 offset=1"
    await aioseq_store.atomic_counter("limited", max_value=999).next()
    assert await recorded(aioseq_store, "limited") == "stride=1 offset=1 max_value=999"
    async with aioseq_store.block_allocator("k", stride=3, offset=2, block_size=4) as allocator:
        assert allocator.numbering == Numbering(3, 2)
        assert [await allocator.next() for _ in range(5)] == [2, 5, 8, 11, 14]
    assert await recorded(aioseq_store, "k") == "stride=3 offset=2"  # not the inner counter's


async def test_objects_of_one_numbering_share_the_counter(aioseq_store: DynamoStore) -> None:
    # Two private allocators (the store's factory would share one): as two processes would.
    first = BlockAllocator(aioseq_store, "k", stride=3, offset=2, block_size=2, prefetch_at=0)
    second = BlockAllocator(aioseq_store, "k", stride=3, offset=2, block_size=2, prefetch_at=0)
    numbers = [await first.next(), await second.next(), await first.next(), await second.next()]
    assert numbers == [2, 8, 5, 11]
    assert aioseq_store.requests["UpdateItem"] == 2  # the check costs no request of its own
    one, two = AtomicCounter(aioseq_store, "a"), AtomicCounter(aioseq_store, "a")
    assert [await one.next(), await two.next()] == [1, 2]


@pytest.mark.parametrize(
    "requested",
    [
        Numbering(1, 2),  # stride 1: the issue's example
        Numbering(3, 1),  # offset 1
        Numbering(3, 2, 10**6),
    ],
)
async def test_another_numbering_is_refused_and_takes_nothing(
    aioseq_store: DynamoStore, requested: Numbering
) -> None:
    async with aioseq_store.block_allocator("k", stride=3, offset=2, block_size=5) as allocator:
        await allocator.next()
    assert await value(aioseq_store, "k") == 1  # the unused tail was given back
    other = aioseq_store.block_allocator(
        "k",
        block_size=5,
        stride=requested.stride,
        offset=requested.offset,
        max_value=requested.max_value or 10**38 - 1,
    )
    with pytest.raises(NumberingMismatch) as caught:
        await other.next()
    assert_mismatch(caught.value, Numbering(3, 2), requested)
    assert other.statistics().reserved == 0
    assert await value(aioseq_store, "k") == 1  # nothing written
    assert await recorded(aioseq_store, "k") == "stride=3 offset=2"
    await other.aclose()


async def test_max_value_is_part_of_the_numbering(aioseq_store: DynamoStore) -> None:
    await aioseq_store.atomic_counter("k", max_value=100).next_many(3)
    for max_value in (99, 101, 10**38 - 1):  # lower, higher, none: each a mismatch
        with pytest.raises(NumberingMismatch) as caught:
            await AtomicCounter(aioseq_store, "k", max_value=max_value).next()
        assert_mismatch(
            caught.value,
            Numbering(max_value=100),
            Numbering(max_value=None if max_value == 10**38 - 1 else max_value),
        )
    assert await value(aioseq_store, "k") == 3
    # The max_value condition still holds, under the recorded numbering.
    with pytest.raises(NumberOutOfRange):
        await AtomicCounter(aioseq_store, "k", max_value=100).next_many(98)


async def test_a_counter_item_from_before_numberings_records_the_first_writers(
    aioseq_store: DynamoStore,
) -> None:
    await put_counter_value(aioseq_store, "legacy", {"N": "41"})
    allocator = aioseq_store.block_allocator("legacy", stride=2, offset=1, block_size=1)
    assert await allocator.next() == 1 + 41 * 2  # counter value 42
    assert await recorded(aioseq_store, "legacy") == "stride=2 offset=1"
    with pytest.raises(NumberingMismatch):
        await aioseq_store.atomic_counter("legacy").next()
    await allocator.aclose()
    await put_counter_value(aioseq_store, "legacy-optimistic", {"N": "7"})
    assert await aioseq_store.optimistic_counter("legacy-optimistic").next() == 8
    assert await recorded(aioseq_store, "legacy-optimistic") == "stride=1 offset=1"


async def test_a_fraction_put_back_keeps_a_numbering_recorded_before(
    aioseq_store: DynamoStore,
) -> None:
    """The ADD on a fraction is undone; the numbering it did not write stays recorded, so a
    writer of another numbering is still refused afterwards."""
    item = {
        **aioseq_store.counter_item_key("k"),
        aioseq_store.table.value_attribute: {"N": "1.5"},
        NUMBERING_ATTRIBUTE: {"S": "stride=1 offset=1"},
    }
    await aioseq_store.send_once("put_item", TableName=aioseq_store.table.name, Item=item)
    with pytest.raises(CounterValueInvalid):
        await aioseq_store.atomic_counter("k").next()
    assert await counter_item(aioseq_store, "k") == item  # value put back, numbering kept
    await aioseq_store.send_once(  # mend the value by hand, as an operator would
        "update_item",
        TableName=aioseq_store.table.name,
        Key=aioseq_store.counter_item_key("k"),
        UpdateExpression="SET #v = :v",
        ExpressionAttributeNames={"#v": aioseq_store.table.value_attribute},
        ExpressionAttributeValues={":v": {"N": "5"}},
    )
    assert await aioseq_store.atomic_counter("k").next() == 6
    with pytest.raises(NumberingMismatch):
        await aioseq_store.block_allocator("k", stride=3, offset=2).next()


async def test_an_unreadable_numbering_is_a_typed_error(aioseq_store: DynamoStore) -> None:
    for bad in ({"S": "stride=3"}, {"S": "offset=2 stride=3"}, {"N": "3"}):
        key = f"bad-{uuid.uuid4().hex[:6]}"
        item = {
            **aioseq_store.counter_item_key(key),
            aioseq_store.table.value_attribute: {"N": "5"},
            NUMBERING_ATTRIBUTE: bad,
        }
        await aioseq_store.send_once("put_item", TableName=aioseq_store.table.name, Item=item)
        with pytest.raises(CounterValueInvalid, match=NUMBERING_ATTRIBUTE):
            await aioseq_store.atomic_counter(key).next()
        with pytest.raises(CounterValueInvalid, match=NUMBERING_ATTRIBUTE):
            await aioseq_store.optimistic_counter(key).next()
        assert await value(aioseq_store, key) == 5


@pytest.mark.parametrize("first", ["allocator", "atomic", "optimistic", "transactional"])
async def test_strategies_on_one_key_are_refused_across_numberings(
    aioseq_store: DynamoStore, first: str
) -> None:
    """An allocator with stride 3 against the strategies that number 1, 2, 3: whichever wrote
    first, the other is refused and writes nothing."""
    store = aioseq_store

    async def take(strategy: str) -> int:
        if strategy == "allocator":
            async with store.block_allocator("k", stride=3, offset=2, block_size=1) as allocator:
                return await allocator.next()
        if strategy == "atomic":
            return await store.atomic_counter("k").next()
        if strategy == "optimistic":
            return await store.optimistic_counter("k").next()
        transactional = store.transactional_counter("k")
        return await transactional.put(lambda n: {"pk": "item", "sk": n})

    await take(first)
    stored = await counter_item(store, "k")
    others = ["atomic", "optimistic", "transactional"] if first == "allocator" else ["allocator"]
    for strategy in others:
        with pytest.raises(NumberingMismatch):
            await take(strategy)
        assert await counter_item(store, "k") == stored, strategy
    if first != "allocator":  # the strategies of one numbering share it
        for strategy in ("atomic", "optimistic", "transactional"):
            await take(strategy)
        assert await value(store, "k") == 4


async def test_a_numbering_changed_under_a_running_optimistic_counter_is_refused(
    aioseq_store: DynamoStore,
) -> None:
    optimistic = aioseq_store.optimistic_counter("k")
    assert await optimistic.next() == 1
    await admin.set_numbering(aioseq_store, "k", Numbering(3, 2))
    with pytest.raises(NumberingMismatch):
        await optimistic.next()  # its last seen state is stale: the condition catches it


async def test_set_numbering_changes_it_and_keeps_numbers_increasing(
    aioseq_store: DynamoStore,
) -> None:
    store = aioseq_store
    assert await store.atomic_counter("k").next_many(14) == range(1, 15)
    assert await admin.set_numbering(store, "k", Numbering(3, 2)) == Numbering()
    async with store.block_allocator("k", stride=3, offset=2, block_size=2) as allocator:
        assert [await allocator.next() for _ in range(3)] == [17, 20, 23]
    assert await recorded(store, "k") == "stride=3 offset=2"
    # And back: the next number is above 23.
    assert await admin.set_numbering(store, "k", Numbering()) == Numbering(3, 2)
    assert await store.atomic_counter("k").next() == 24
    # The same numbering again changes nothing.
    assert await admin.set_numbering(store, "k", Numbering()) == Numbering()
    assert await store.atomic_counter("k").next() == 25


async def test_set_numbering_before_the_first_number(aioseq_store: DynamoStore) -> None:
    store = aioseq_store
    assert await admin.set_numbering(store, "new", Numbering(10, 7)) is None
    assert await value(store, "new") == 0
    with pytest.raises(NumberingMismatch):
        await store.atomic_counter("new").next()
    async with store.block_allocator("new", stride=10, offset=7) as allocator:
        assert await allocator.next_many(3) == range(7, 37, 10)
    await put_counter_value(store, "legacy", {"N": "5"})
    assert (
        await admin.set_numbering(store, "legacy", Numbering(2, 2), previous=Numbering()) is None
    )  # 1, 2, 3, 4, 5 handed out
    async with store.block_allocator("legacy", stride=2, offset=2) as allocator:
        assert await allocator.next() == 6


async def test_a_counter_without_a_recorded_numbering_is_renumbered_only_when_told_its_own(
    aioseq_store: DynamoStore,
) -> None:
    """A counter from before numberings were recorded, used by an allocator with stride 3 and
    offset 2 up to value 5 (numbers 2, 5, 8, 11, 14): assuming stride 1 would make the next
    number 6 and hand 8, 11 and 14 out again."""
    store = aioseq_store
    await put_counter_value(store, "legacy", {"N": "5"})
    with pytest.raises(ConfigurationError, match="previous=Numbering"):
        await admin.set_numbering(store, "legacy", Numbering())
    assert await value(store, "legacy") == 5 and await recorded(store, "legacy") is None
    assert await admin.set_numbering(store, "legacy", Numbering(), previous=Numbering(3, 2)) is None
    assert await store.atomic_counter("legacy").next() == 15


async def test_an_allocator_does_not_give_back_after_a_renumbering(
    aioseq_store: DynamoStore,
) -> None:
    allocator = aioseq_store.block_allocator("k", block_size=10, prefetch_at=0)
    assert await allocator.next() == 1
    await admin.set_numbering(aioseq_store, "k", Numbering(2, 1))
    renumbered = await value(aioseq_store, "k")
    await allocator.aclose()
    assert allocator.statistics().returned == 0
    assert await value(aioseq_store, "k") == renumbered


# --- the command line -------------------------------------------------------------------------


@pytest.fixture
def table(aioseq_endpoint: str) -> str:
    return cli_table(aioseq_endpoint)


def test_the_issues_script(aioseq_endpoint: str, table: str) -> None:
    where = ("--endpoint-url", aioseq_endpoint, "--table", table)
    run = run_cli(*where, "next", "k2", "--strategy", "allocator", "--stride", "3", "--offset", "2",
                  "--count", "5")  # fmt: skip
    assert (run.returncode, run.stdout) == (0, "2\n5\n8\n11\n14\n"), run.stderr
    for numbering in (["--stride", "1", "--offset", "2"], ["--stride", "3", "--offset", "1"],
                      ["--stride", "1"], ["--offset", "1"]):  # fmt: skip
        refused = run_cli(*where, "next", "k2", "--strategy", "allocator", *numbering)
        assert (refused.returncode, refused.stdout) == (1, ""), numbering
        assert refused.stderr.count("\n") == 1 and "NumberingMismatch" in refused.stderr
        assert "'stride=3 offset=2'" in refused.stderr
    for strategy in ("atomic", "optimistic", "transactional"):
        refused = run_cli(*where, "next", "k2", "--strategy", strategy)
        assert (refused.returncode, refused.stdout) == (1, ""), strategy
    current = run_cli(*where, "current", "k2", "--strategy", "allocator")
    assert current.stdout == "14\n"  # nothing taken: the last number reserved is still 14
    numbered = ("--strategy", "allocator", "--stride", "3", "--offset", "2")
    again = run_cli(*where, "next", "k2", *numbered)
    assert again.stdout == "17\n", again.stderr


@pytest.mark.parametrize("strategy", ["atomic", "optimistic", "sort-key", "transactional"])
def test_stride_and_offset_are_the_allocators_only(
    aioseq_endpoint: str, table: str, strategy: str
) -> None:
    where = ("--endpoint-url", aioseq_endpoint, "--table", table)
    refused = run_cli(*where, "next", "k", "--strategy", strategy, "--stride", "3")
    assert (refused.returncode, refused.stdout) == (2, "")
    assert "allocator" in refused.stderr
    current = run_cli(*where, "current", "k", "--strategy", strategy)
    assert "CounterNotFound" in current.stderr  # nothing was written
    defaults = run_cli(
        *where, "next", "k", "--strategy", strategy, "--stride", "1", "--offset", "1"
    )
    assert (defaults.returncode, defaults.stdout) == (0, "1\n"), defaults.stderr


async def test_two_processes_with_two_numberings(
    aioseq_store: DynamoStore, aioseq_endpoint: str
) -> None:
    """Two processes start together on one key, one with stride 3 offset 2, one with stride 1:
    one of them records its numbering and takes its numbers, the other fails and takes none."""
    store = aioseq_store
    where = ("--endpoint-url", aioseq_endpoint, "--table", store.table.name)
    numberings = {"3/2": ("--stride", "3", "--offset", "2"), "1/1": ("--stride", "1")}

    async def run(numbering: tuple[str, ...]) -> tuple[int | None, bytes, bytes]:
        process = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "aioseq", *where,
            "next", "shared", "--strategy", "allocator", "--count", "20", "--concurrency", "4",
            "--block-size", "3", *numbering,
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        )  # fmt: skip
        out, err = await process.communicate()
        return process.returncode, out, err

    results = dict(
        zip(numberings, await asyncio.gather(*map(run, numberings.values())), strict=True)
    )
    winners = [name for name, (code, _, _) in results.items() if code == 0]
    assert len(winners) == 1, results
    (loser,) = set(results) - set(winners)
    code, out, err = results[loser]
    assert (code, out) == (1, b"") and b"NumberingMismatch" in err
    stride, offset = (3, 2) if winners[0] == "3/2" else (1, 1)
    numbers = [int(n) for n in results[winners[0]][1].split()]
    assert sorted(numbers) == [offset + k * stride for k in range(20)]
    assert await recorded(store, "shared") == Numbering(stride, offset).encode()
    assert await value(store, "shared") == 20  # the loser reserved nothing


async def test_set_numbering_on_a_closed_store_is_refused(aioseq_endpoint: str) -> None:
    table = TableSpec(name=f"aioseq-test-{uuid.uuid4().hex[:12]}")
    store = await DynamoStore.open(table=table, endpoint_url=aioseq_endpoint)
    await store.aclose()
    with pytest.raises(StoreClosed):
        await admin.set_numbering(store, "k", Numbering())
