"""``aioseq set | list | describe | start-after | iam-policy`` and the options of ``next`` and
``current``, run in-process (``run_cli``; ``test_cli.py`` drives the script in subprocesses)."""

from __future__ import annotations

import asyncio
import json
import uuid
from typing import Any

import pytest
from checks import cli_table, run_cli

from aioseq import DynamoStore, TableSpec, admin, iam
from aioseq.layout import ShardedItems


@pytest.fixture
def run(aioseq_endpoint: str) -> Any:
    """``run(*args)``: the CLI on a fresh table of the selected server."""
    table = cli_table(aioseq_endpoint)

    def run(*args: str) -> tuple[int, str, str]:
        done = run_cli("--endpoint-url", aioseq_endpoint, "--table", table, *args)
        return done.returncode, done.stdout, done.stderr

    run.table = table  # type: ignore[attr-defined]
    return run


def test_the_issues_script(run: Any) -> None:
    assert run("next", "k1", "--count", "3")[:2] == (0, "1\n2\n3\n")
    code, out, err = run("set", "k1", "1000")
    assert (code, out) == (0, "") and "set to 1000 (was 3)" in err
    assert run("next", "k1")[:2] == (0, "1001\n")

    code, out, err = run("set", "k1", "10")
    assert (code, out) == (1, "")
    assert err.count("\n") == 1 and "CounterWouldMoveBack" in err and "1001" in err
    assert "(--allow-backward to do it anyway)" in err  # the CLI's flag, not the keyword
    assert run("describe", "k1")[1].split("\t")[:2] == ["k1", "1001"]  # nothing changed

    assert run("set", "k1", "10", "--allow-backward")[0] == 0
    assert run("next", "k1")[:2] == (0, "11\n")
    code, out, _ = run("list")
    assert code == 0 and out.splitlines()[0].split("\t")[:2] == ["k1", "11"]


def test_set_says_when_it_created_the_counter(run: Any) -> None:
    code, out, err = run("set", "zero", "0")
    assert (code, out) == (0, "") and err == "counter 'zero' created at 0 (it did not exist)\n"
    code, out, err = run("set", "zero", "0")
    assert (code, out, err) == (0, "", "counter 'zero' set to 0 (was 0)\n")


def test_a_missing_table_is_named_with_the_command_that_creates_it(aioseq_endpoint: str) -> None:
    table = f"aioseq-missing-{uuid.uuid4().hex[:8]}"
    for command in (["next", "k"], ["set", "k", "1"]):
        done = run_cli("--endpoint-url", aioseq_endpoint, "--table", table, *command)
        assert (done.returncode, done.stdout) == (1, ""), command
        assert done.stderr.count("\n") == 1 and f"table {table!r} does not exist" in done.stderr
        create = f"create it with: aioseq create-table --table {table} --endpoint-url"
        assert create in done.stderr, done.stderr
    # Following the advice works.
    created = run_cli("create-table", "--table", table, "--endpoint-url", aioseq_endpoint)
    assert created.returncode == 0, created.stderr
    assert run_cli("--endpoint-url", aioseq_endpoint, "--table", table, "next", "k").stdout == "1\n"


def test_a_missing_source_table_is_named_but_not_to_be_made_a_counter_table(run: Any) -> None:
    code, out, err = run("start-after", "k", "--table", "no-such-source", "--attribute", "id")
    assert (code, out) == (1, "") and "table 'no-such-source' does not exist" in err
    assert "create-table" not in err


def test_list_is_sorted_one_counter_a_line_and_json_lines(run: Any) -> None:
    assert run("list")[:2] == (0, "")
    for key, value in (("b", "2"), ("a", "7"), ("tab\tkey", "3")):
        assert run("set", key, value)[0] == 0
    code, out, _ = run("list")
    assert code == 0
    default = "stride=1 offset=1"  # set records the default numbering on a new counter
    assert [line.split("\t")[:3] for line in out.splitlines()] == [
        ["a", "7", default],
        ["b", "2", default],
        ["tab\\tkey", "3", default],
    ]
    records = [json.loads(line) for line in run("list", "--json")[1].splitlines()]
    numbering = {"stride": 1, "offset": 1, "max_value": None}
    assert [(r["key"], r["value"], r["numbering"]) for r in records] == [
        ("a", 7, numbering),
        ("b", 2, numbering),
        ("tab\tkey", 3, numbering),
    ]
    assert all(r["updated_at"].endswith("+00:00") for r in records)


@pytest.mark.parametrize(
    "value", ["-5", "1.5", "1e3", "abc", "", "100000000000000000000000000000000000000"]
)
def test_set_refuses_bad_values_and_writes_nothing(run: Any, value: str) -> None:
    code, out, err = run("set", "k", value)
    assert (code, out) == (1, "") and err.count("\n") == 1 and "ConfigurationError" in err
    code, out, err = run("describe", "k")
    assert (code, out) == (1, "") and "CounterNotFound" in err


def test_describe_an_unknown_key_fails_in_one_line(run: Any) -> None:
    code, out, err = run("describe", "never-used")
    assert (code, out) == (1, "") and err.count("\n") == 1 and "CounterNotFound" in err


def test_start_after_prints_the_value_and_progress_on_stderr(
    run: Any, aioseq_endpoint: str
) -> None:
    source = f"aioseq-cli-src-{uuid.uuid4().hex[:8]}"
    asyncio.run(_make_source(aioseq_endpoint, source, [3, 4_200, 17]))
    try:
        code, out, err = run(
            "start-after", "orders", "--table", source, "--attribute", "order_id",
            "--segments", "2",
        )  # fmt: skip
        assert (code, out) == (0, "4200\n"), err
        assert "scanned 3 items" in err and "2/2 segments" in err
        assert run("next", "orders")[:2] == (0, "4201\n")
        code, out, err = run("start-after", "orders", "--table", source, "--attribute", "order_id")
        assert (code, out) == (0, "4201\n"), err  # never moves back
    finally:
        asyncio.run(_drop(aioseq_endpoint, source))


def test_start_after_refuses_an_attribute_no_item_holds(run: Any, aioseq_endpoint: str) -> None:
    """A misspelt attribute must not leave the counter where it was, exit 0 and let the legacy
    ids be handed out again."""
    source = f"aioseq-cli-src-{uuid.uuid4().hex[:8]}"
    asyncio.run(_make_source(aioseq_endpoint, source, [3, 4_200, 17]))
    try:
        code, out, err = run("start-after", "orders", "--table", source, "--attribute", "orderid")
        assert (code, out) == (1, ""), err
        assert "no item of table" in err and "'orderid'" in err and "3 items scanned" in err
        assert run("describe", "orders")[0] == 1  # nothing written: the counter does not exist
    finally:
        asyncio.run(_drop(aioseq_endpoint, source))


async def _make_source(endpoint: str, name: str, ids: list[int]) -> None:
    async with DynamoStore.open(table=TableSpec(name=name), endpoint_url=endpoint) as store:
        await store.create_table()
        for i, order_id in enumerate(ids):
            item = {"pk": {"S": f"o{i}"}, "sk": {"N": "0"}, "order_id": {"N": str(order_id)}}
            await store.send_once("put_item", TableName=name, Item=item)


async def _drop(endpoint: str, name: str) -> None:
    async with DynamoStore.open(table=TableSpec(name=name), endpoint_url=endpoint) as store:
        await store.delete_table()


def test_start_after_needs_the_table_and_attribute() -> None:
    assert run_cli("start-after", "k", "--attribute", "id").returncode == 2
    assert run_cli("start-after", "k", "--table", "orders").returncode == 2


@pytest.mark.parametrize("which", ["--runtime", "--admin"])
def test_iam_policy_prints_the_documented_policy(which: str) -> None:
    done = run_cli("--table", "orders", "iam-policy", which, "--region", "eu-west-1",
                  "--account", "123456789012")  # fmt: skip
    assert done.returncode == 0, done.stderr
    arn = "arn:aws:dynamodb:eu-west-1:123456789012:table/orders"
    expected = (
        iam.policy(arn)
        if which == "--runtime"
        else iam.policy(arn, features=(), admin_features=iam.ADMIN_FEATURES)
    )
    assert json.loads(done.stdout) == expected


@pytest.mark.parametrize(
    "args",
    [
        ["--table", "a b", "iam-policy", "--runtime"],
        ["--region", "us east", "iam-policy", "--runtime"],
        ["iam-policy", "--admin", "--table-arn", "arn:aws:dynamodb:x:123456789012:table/a b"],
    ],
)
def test_iam_policy_refuses_what_no_arn_can_hold(args: list[str]) -> None:
    done = run_cli(*args)
    assert (done.returncode, done.stdout) == (1, "")
    assert "ConfigurationError" in done.stderr and "ARN" in done.stderr


def test_iam_policy_needs_one_of_runtime_or_admin() -> None:
    assert run_cli("iam-policy").returncode == 2
    assert run_cli("iam-policy", "--runtime", "--admin").returncode == 2


@pytest.mark.parametrize("flag", ["--group", "--no-group"])
@pytest.mark.parametrize("strategy", ["atomic", "allocator"])
def test_group_flags_on_a_strategy_without_groups_are_a_usage_error(
    run: Any, strategy: str, flag: str
) -> None:
    code, out, err = run("next", "k", "--strategy", strategy, flag)
    assert (code, out) == (2, "") and f"not {strategy}" in err
    assert run("describe", "k")[0] == 1  # nothing written


def test_next_takes_the_max_value_a_counter_records(run: Any, aioseq_endpoint: str) -> None:
    async def make() -> None:
        table = TableSpec(name=run.table)
        async with DynamoStore.open(table=table, endpoint_url=aioseq_endpoint) as store:
            assert await store.atomic_counter("bounded", max_value=5).next() == 1

    asyncio.run(make())
    code, out, err = run("next", "bounded")  # the default records no max_value: refused
    assert (code, out) == (1, "") and "NumberingMismatch" in err
    assert run("next", "bounded", "--max-value", "5", "--count", "2")[:2] == (0, "2\n3\n")
    code, out, err = run("next", "bounded", "--max-value", "5", "--count", "3")
    assert code == 1 and "NumberOutOfRange" in err


def test_describe_gives_the_headroom_of_a_bounded_counter(run: Any) -> None:
    assert run("next", "bounded", "--max-value", "100", "--count", "3")[0] == 0
    assert run("next", "open", "--count", "3")[0] == 0
    code, out, err = run("describe", "bounded")
    fields = out.rstrip("\n").split("\t")
    assert code == 0 and (fields[1], fields[4:]) == ("3", ["97", "-"]) and err == ""
    code, out, _ = run("describe", "open")
    assert code == 0 and out.rstrip("\n").split("\t")[4:] == ["-", "-"]
    code, out, _ = run("list")  # list keeps its four fields
    assert code == 0 and [len(line.split("\t")) for line in out.splitlines()] == [4, 4]


def test_current_of_an_allocator_is_its_last_number_reserved(run: Any) -> None:
    args = ["--strategy", "allocator", "--stride", "3", "--offset", "2", "--block-size", "1"]
    assert run("next", "striped", *args, "--count", "2")[:2] == (0, "2\n5\n")
    assert run("current", "striped", "--strategy", "allocator")[:2] == (0, "5\n")
    assert run("current", "striped")[:2] == (0, "2\n")  # the atomic counter: the value


def test_audit_passes_then_finds_a_counter_below_its_items(run: Any, aioseq_endpoint: str) -> None:
    async def numbered() -> None:
        table = TableSpec(name=run.table)
        async with DynamoStore.open(table=table, endpoint_url=aioseq_endpoint) as store:
            invoices = store.transactional_counter("inv")
            await asyncio.gather(
                *(invoices.put(lambda n: {"pk": "inv", "sk": n}) for _ in range(150))
            )

    asyncio.run(numbered())
    code, out, err = run("audit", "inv")
    assert (code, out) == (0, "inv: 150 items, numbers up to 150: ok\n"), err
    assert run("set", "inv", "100", "--allow-backward")[0] == 0  # the counter restored alone
    code, out, err = run("audit")  # every counter
    assert code == 1, err
    fix = (
        f"aioseq --table {run.table} start-after inv --table {run.table}"
        " --attribute sk --partition inv"
    )
    assert "50 items above the counter (the highest 150)" in out and fix in out
    record = json.loads(run("audit", "inv", "--json")[1])
    assert (record["ok"], record["above"], record["fix"]) == (False, 50, fix)
    fixed = run(*fix.split()[1:])  # the printed command, as an operator pastes it
    assert fixed[:2] == (0, "150\n"), fixed
    assert run("audit", "inv")[0] == 0


def test_audit_reads_items_spread_over_shards(run: Any, aioseq_endpoint: str) -> None:
    async def numbered() -> None:
        table = TableSpec(name=run.table)
        async with DynamoStore.open(table=table, endpoint_url=aioseq_endpoint) as store:
            invoices = store.transactional_counter("inv")
            spread = ShardedItems("inv-items", shards=8)
            await asyncio.gather(*(invoices.put(spread.key) for _ in range(60)))

    asyncio.run(numbered())
    assert run("audit", "inv", "--partition", "inv-items")[0] == 1  # one shard's key: nothing
    code, out, err = run("audit", "inv", "--partition", "inv-items", "--shards", "8")
    assert (code, out) == (0, "inv: 60 items, numbers up to 60: ok\n"), err
    assert run("set", "inv", "50", "--allow-backward")[0] == 0
    code, out, _ = run("audit", "inv", "--partition", "inv-items", "--shards", "8")
    fix = out.rpartition("fix: ")[2].strip()
    assert code == 1 and fix.endswith("--partition inv-items --shards 8")
    assert run(*fix.split()[1:])[:2] == (0, "60\n")
    code, _, err = run("audit", "inv", "--shards", "0")
    assert code == 2 and "shards must be an int from 1 to 1000" in err  # an error, no finding


def test_audit_knows_what_each_counter_is(run: Any, aioseq_endpoint: str) -> None:
    """Issue 44: with no key, counters that store no items have nothing to check, items are
    found where their counter says, items of other programs are no counters, and a key that
    is no counter is an error."""
    table = TableSpec(name=run.table)

    async def fill() -> None:
        async with DynamoStore.open(table=table, endpoint_url=aioseq_endpoint) as store:
            gapless = store.transactional_counter("gapless")
            for _ in range(4):
                await gapless.put(lambda n: {"pk": "gapless", "sk": n})
            async with store.block_allocator("allocator") as allocator:
                await allocator.next_many(3)
            await store.optimistic_counter("optimistic").next_many(2)
            spread = ShardedItems("orders", shards=4)
            orders = store.transactional_counter("orders", layout=spread)
            await asyncio.gather(*(orders.put(spread.key) for _ in range(10)))
            for key, value in (("price", "12.50"), ("stock", "7")):  # another program's
                await store.send_once(
                    "put_item",
                    TableName=run.table,
                    Item={"pk": {"S": key}, "sk": {"N": "0"}, "value": {"N": value}},
                )

    async def move_back(key: str, value: int) -> None:
        async with DynamoStore.open(table=table, endpoint_url=aioseq_endpoint) as store:
            await admin.set_counter(store, key, value, allow_backward=True)

    async def break_counter(key: str) -> None:  # a counter item someone wrote a fraction into
        async with DynamoStore.open(table=table, endpoint_url=aioseq_endpoint) as store:
            await store.send_once(
                "update_item",
                TableName=run.table,
                Key=store.counter_item_key(key),
                UpdateExpression="SET #value = :fraction",
                ExpressionAttributeNames={"#value": "value"},
                ExpressionAttributeValues={":fraction": {"N": "2.5"}},
            )

    asyncio.run(fill())
    code, out, err = run("audit")
    assert (code, err) == (0, ""), (out, err)
    assert out.splitlines() == [
        "allocator: allocator, no items to check",
        "gapless: 4 items, numbers up to 4: ok",
        "optimistic: optimistic, no items to check",
        "orders: 10 items, numbers up to 10: ok",
    ]
    code, out, err = run("list")
    assert (code, err) == (0, "") and [line.split("\t")[0] for line in out.splitlines()] == [
        "allocator",
        "gapless",
        "optimistic",
        "orders",
    ]
    records = [json.loads(line) for line in run("audit", "--json")[1].splitlines()]
    assert [(r["key"], r["ok"], r["unchecked"]) for r in records] == [
        ("allocator", True, "no items"),
        ("gapless", True, None),
        ("optimistic", True, "no items"),
        ("orders", True, None),
    ]
    assert records[3]["kind"] == "transactional items=sharded shards=4 number=sk prefix=orders"

    asyncio.run(move_back("orders", 8))  # the library's backward set
    assert run("set", "gapless", "3", "--allow-backward")[0] == 0  # the command's
    code, out, err = run("audit")
    assert code == 1, (out, err)
    assert "gapless: 4 items, numbers up to 3: FINDINGS" in out
    assert "orders: 10 items, numbers up to 8: FINDINGS" in out
    fix = out.rpartition("fix: ")[2].strip()
    assert fix.endswith("--partition orders --shards 4")
    assert run(*fix.split()[1:])[:2] == (0, "10\n")  # the printed fix, pasted
    code, out, _ = run("audit", "orders")
    assert (code, out) == (0, "orders: 10 items, numbers up to 10: ok\n")

    code, out, err = run("audit", "nosuchkey")
    assert (code, out) == (2, "") and "CounterNotFound" in err and "nosuchkey" in err
    code, out, err = run("audit", "gapless", "nosuchkey", "allocator")  # the others are audited
    assert code == 2 and "CounterNotFound" in err
    assert [line.partition(":")[0] for line in out.splitlines() if line[:1] != " "] == [
        "gapless",
        "allocator",
    ]

    asyncio.run(break_counter("optimistic"))  # one bad counter item: a finding, not a crash
    code, out, err = run("list")
    assert code == 1 and [line.split("\t")[0] for line in out.splitlines()] == [
        "allocator",
        "gapless",
        "orders",
    ]
    assert err.startswith("aioseq list: optimistic: CounterValueInvalid") and err.count("\n") == 1
    code, out, err = run("audit")
    assert (code, err) == (1, "") and "optimistic: FINDINGS" in out
    assert "allocator: allocator, no items to check" in out  # the others still audited


def test_describe_says_when_items_share_the_counter_items_partition(
    run: Any, aioseq_endpoint: str
) -> None:
    async def numbered() -> None:
        table = TableSpec(name=run.table)
        async with DynamoStore.open(table=table, endpoint_url=aioseq_endpoint) as store:
            beside, spread = (
                store.transactional_counter("beside"),
                store.transactional_counter("spread"),
            )
            await beside.put(lambda n: {"pk": "beside", "sk": n})
            await spread.put(ShardedItems("spread", shards=4).key)

    asyncio.run(numbered())
    code, out, err = run("describe", "beside")
    assert code == 0 and out.rstrip("\n").split("\t")[4:] == ["-", "500"]
    assert "items share the counter item's partition" in err and "ShardedItems" in err
    assert json.loads(run("describe", "beside", "--json")[1])["partition_ceiling"] == 500
    code, out, err = run("describe", "spread")
    assert code == 0 and out.rstrip("\n").split("\t")[4:] == ["-", "-"] and err == ""
    assert json.loads(run("describe", "spread", "--json")[1])["partition_ceiling"] is None


def test_the_global_table_options(run: Any) -> None:
    """``--regions`` numbers in the Region's residue class (a local endpoint's Region is
    us-east-1, the first slot), ``--home-region`` elsewhere refuses writes, not reads."""
    code, out, err = run("--regions", "us-east-1,eu-west-1", "next", "orders", "--count", "3")
    assert (code, out) == (0, "1\n3\n5\n"), err
    code, out, err = run("--regions", "eu-west-1,us-east-1", "next", "orders")
    assert code == 1 and out == "" and "NumberingMismatch" in err  # another list: refused
    code, out, err = run("--home-region", "eu-west-1", "next", "plain")
    assert code == 1 and out == "" and "eu-west-1 only" in err
    code, out, err = run("--home-region", "eu-west-1", "--region-slots", "2", "next", "plain")
    assert code == 1 and "region_slots= goes with regions=" in err


def test_a_region_scoped_counter_is_audited_in_its_region(run: Any) -> None:
    scoped = ("--regions", "us-east-1,eu-west-1")
    code, out, err = run(*scoped, "next", "inv", "--strategy", "transactional", "--count", "3")
    assert (code, out) == (0, "1\n3\n5\n"), err
    code, out, err = run(*scoped, "audit", "--json")  # every counter: this Region's
    [found] = [json.loads(line) for line in out.splitlines()]
    assert found["key"] == "inv" and found["ok"] and found["items"] == 3, (out, err)
