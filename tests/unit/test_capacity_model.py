"""The AWS-like capacity model's pure part (costs, buckets, answers), with a fake clock; no
server. Through the proxy against the servers: ``tests/integration/test_capacity.py``."""

from __future__ import annotations

import json
from typing import Any

import pytest
from checks import Clock

from aioseq import (
    ConfigurationError,
)
from aioseq._items import write_units
from aioseq.testing import CapacityModel
from aioseq.testing.capacity import (
    HOT_KEY_READ_REASON,
    HOT_KEY_REASON,
    Admission,
    CapacityLedger,
    TableKeys,
    read_cost_rcu,
    request_charges,
    tables_of,
    throttled_answer,
)


def key(pk: str, sk: int = 0) -> dict[str, Any]:
    return {"pk": {"S": pk}, "sk": {"N": str(sk)}}


def update(pk: str, table: str = "t") -> dict[str, Any]:
    return {"TableName": table, "Key": key(pk), "UpdateExpression": "ADD #v :n"}


def put(pk: str, payload_bytes: int = 0, table: str = "t", sk: int = 0) -> dict[str, Any]:
    return {"TableName": table, "Item": {**key(pk, sk), "p": {"S": "x" * payload_bytes}}}


def transact(*actions: tuple[str, dict[str, Any]]) -> dict[str, Any]:
    return {"TransactItems": [{kind: body} for kind, body in actions]}


def ledger(clock: Clock, **model: Any) -> CapacityLedger:
    return CapacityModel(**model).ledger(clock=clock)


def per_item(clock: Clock, wcu_per_sec: float, **model: Any) -> CapacityLedger:
    """The model before partitions: a write budget per item."""
    return ledger(clock, partition_by="item", partition_wcu_per_sec=wcu_per_sec, **model)


#: Table ``t``: partition key ``pk``, sort key ``sk``.
T_KEYS = {"t": TableKeys("pk", frozenset({"pk", "sk"}))}


def keyed(clock: Clock, **model: Any) -> CapacityLedger:
    """A per-partition ledger that knows table t's key, as the proxy's does once it asked."""
    budgets = ledger(clock, **model)
    budgets.keys.update(T_KEYS)
    return budgets


def partition(pk: str) -> str:
    return json.dumps({"pk": {"S": pk}}, separators=(",", ":"))


def get(pk: str, sk: int = 0, **options: Any) -> dict[str, Any]:
    return {"TableName": "t", "Key": key(pk, sk), **options}


def query(pk: str, **options: Any) -> dict[str, Any]:
    return {
        "TableName": "t",
        "KeyConditionExpression": "#p = :p AND sk > :lo",
        "ExpressionAttributeNames": {"#p": "pk"},
        "ExpressionAttributeValues": {":p": {"S": pk}, ":lo": {"N": "0"}},
        **options,
    }


# --- costs -----------------------------------------------------------------------------------

#: ``pk``/``sk``/``p`` names and values, and the number: what an item costs beyond its payload.
PUT_OVERHEAD = len("pk") + 1 + len("sk") + 2 + len("p")


@pytest.mark.parametrize(
    ("payload", "wcu"), [(0, 1), (1024 - PUT_OVERHEAD, 1), (1025 - PUT_OVERHEAD, 2), (5000, 5)]
)
def test_a_put_costs_its_size_in_kb_rounded_up(payload: int, wcu: int) -> None:
    [single] = request_charges("PutItem", put("a", payload))
    assert (single.unit, single.units) == ("WCU", wcu)
    [action] = request_charges("TransactWriteItems", transact(("Put", put("a", payload))))
    assert action.units == 2 * wcu


def test_updates_deletes_and_condition_checks_cost_one_wcu_twice_in_a_transaction() -> None:
    body = update("a")
    assert [a.units for a in request_charges("UpdateItem", body)] == [1]
    assert [a.units for a in request_charges("DeleteItem", body)] == [1]
    both = transact(
        ("Update", update("a")), ("Delete", update("b")), ("ConditionCheck", update("c"))
    )
    assert [a.units for a in request_charges("TransactWriteItems", both)] == [2, 2, 2]
    assert write_units(0) == 1 and write_units(2049, transactional=True) == 6


@pytest.mark.parametrize(
    ("size", "options", "rcu"),
    [
        (0, {}, 0.5),
        (4096, {}, 0.5),
        (4097, {}, 1.0),
        (4097, {"consistent": True}, 2.0),
        (100, {"transactional": True}, 2.0),
        (9000, {"transactional": True}, 6.0),
    ],
)
def test_a_read_costs_its_size_in_4_kb_rounded_up(
    size: int, options: dict[str, bool], rcu: float
) -> None:
    assert read_cost_rcu(size, **options) == rcu


def test_reads_are_charged_to_their_partition_at_the_least_they_can_cost() -> None:
    [eventual] = request_charges("GetItem", get("a", 3), T_KEYS)
    assert (eventual.partition, eventual.unit, eventual.units) == (partition("a"), "RCU", 0.5)
    [strong] = request_charges("GetItem", get("a", ConsistentRead=True), T_KEYS)
    assert strong.units == 1.0 and strong.read == "consistent"
    [collection] = request_charges("Query", query("a"), T_KEYS)
    assert collection.partition == collection.key == partition("a")
    both = {"TransactItems": [{"Get": get("a")}, {"Get": get("b")}]}
    assert [(c.partition, c.units) for c in request_charges("TransactGetItems", both, T_KEYS)] == [
        (partition("a"), 2.0),
        (partition("b"), 2.0),
    ]


@pytest.mark.parametrize(
    "body",
    [
        query("a", IndexName="by-owner"),  # an index's partitions: not modelled
        {**query("a"), "KeyConditionExpression": "begins_with(sk, :lo)"},  # no partition named
        {"TableName": "t", "KeyConditions": {"pk": {"ComparisonOperator": "GT"}}},
    ],
)
def test_queries_the_model_cannot_place_are_not_budgeted(body: dict[str, Any]) -> None:
    assert request_charges("Query", body, T_KEYS) == []


def test_a_query_names_its_partition_in_either_condition_form() -> None:
    flipped = {**query("a"), "KeyConditionExpression": "sk > :lo AND :p = #p"}
    legacy = {
        "TableName": "t",
        "KeyConditions": {"pk": {"ComparisonOperator": "EQ", "AttributeValueList": [{"S": "a"}]}},
    }
    plain = {**query("a"), "KeyConditionExpression": "pk = :p", "ExpressionAttributeNames": {}}
    for body in (flipped, legacy, plain):
        assert [c.partition for c in request_charges("Query", body, T_KEYS)] == [partition("a")]


@pytest.mark.parametrize(
    ("operation", "body"),
    [
        ("Scan", {"TableName": "t"}),
        ("BatchGetItem", {"RequestItems": {"t": {"Keys": [key("a")]}}}),
        ("BatchWriteItem", {"RequestItems": {"t": [{"PutRequest": {"Item": key("a")}}]}}),
        ("UpdateItem", {"Key": key("a")}),  # no table: DynamoDB refuses it
        ("PutItem", {"TableName": "t", "Item": {"pk": {}}}),  # not an AttributeValue
        ("TransactWriteItems", {"TransactItems": [{"Bogus": {}}]}),
        ("TransactGetItems", {"TransactItems": [{"Put": put("a")}]}),
    ],
)
def test_scans_batches_and_malformed_requests_are_not_budgeted(
    operation: str, body: dict[str, Any]
) -> None:
    assert request_charges(operation, body, T_KEYS) == []
    budgets = keyed(Clock(), partition_wcu_per_sec=1, partition_rcu_per_sec=1, burst_secs=1)
    for _ in range(5):
        assert budgets.admit(operation, body).admitted
    assert budgets.charged_wcu == budgets.charged_rcu == 0


def test_a_put_is_keyed_by_its_primary_key_once_the_tables_key_is_known() -> None:
    first, second = put("a", 10), put("a", 20)
    unknown = request_charges("PutItem", first) + request_charges("PutItem", second)
    assert unknown[0].key != unknown[1].key  # each distinct item is its own budget
    assert unknown[0].partition == unknown[0].key
    known = request_charges("PutItem", first, T_KEYS) + request_charges("PutItem", second, T_KEYS)
    assert known[0].key == known[1].key == request_charges("UpdateItem", update("a"))[0].key
    other = request_charges("PutItem", put("a", 10, sk=1), T_KEYS)[0]
    assert other.key != known[0].key and other.partition == known[0].partition == partition("a")


def test_the_ledger_learns_each_tables_partition_key_from_traffic() -> None:
    budgets = ledger(Clock())
    create = {"TableName": "c", "KeySchema": [{"AttributeName": "id", "KeyType": "HASH"}]}
    budgets.learn("CreateTable", create)
    schema = [{"AttributeName": "s", "KeyType": "RANGE"}, {"AttributeName": "p", "KeyType": "HASH"}]
    budgets.learn(
        "DescribeTable", {"TableName": "d"}, {"Table": {"TableName": "d", "KeySchema": schema}}
    )
    budgets.learn("TransactWriteItems", transact(("Update", update("a", table="u"))))
    budgets.learn("GetItem", {"TableName": "v", "Key": {"id": {"S": "x"}}})
    assert budgets.keys == {
        "c": TableKeys("id", frozenset({"id"})),
        "d": TableKeys("p", frozenset({"p", "s"})),
        "u": TableKeys(None, frozenset({"pk", "sk"})),  # which of two is the partition key?
        "v": TableKeys("id", frozenset({"id"})),  # a key of one attribute
    }
    assert budgets.knows("d") and not budgets.knows("u") and not budgets.knows("w")
    assert tables_of(
        "TransactWriteItems", transact(("Put", put("a")), ("Update", update("b", table="u")))
    ) == {"t", "u"}
    assert tables_of("Scan", {"TableName": "t"}) == set()


# --- partitions ------------------------------------------------------------------------------


def test_items_of_one_partition_share_its_budget() -> None:
    budgets = keyed(Clock(), partition_wcu_per_sec=8, burst_secs=0.5)  # 4 WCU
    admitted = [budgets.admit("PutItem", put("a", sk=n)).admitted for n in range(1, 6)]
    assert admitted == [True, True, True, True, False]  # five items, one partition's budget
    assert all(budgets.admit("PutItem", put(f"p{n}", sk=n)).admitted for n in range(1, 6))
    assert budgets.level("t", partition("a")) == 0.0 and budgets.level("t", partition("p1")) == 3.0


def test_per_item_the_same_writes_each_have_a_budget_of_their_own() -> None:
    budgets = per_item(Clock(), 8, burst_secs=0.5)
    budgets.keys.update(T_KEYS)
    assert all(budgets.admit("PutItem", put("a", sk=n)).admitted for n in range(1, 9))
    assert all(budgets.admit("GetItem", get("a")).admitted for _ in range(100))  # unbudgeted
    assert budgets.charged_rcu == 0


def test_a_transaction_is_charged_per_partition_each_action_twice() -> None:
    budgets = keyed(Clock(), partition_wcu_per_sec=40, burst_secs=0.1)  # 4 WCU
    counter_and_item = transact(("Update", update("a")), ("Put", put("a", sk=7)))
    decision = budgets.admit("TransactWriteItems", counter_and_item)
    assert decision.admitted and decision.wcu == 4  # 2 + 2, both in partition a
    refused = budgets.admit("TransactWriteItems", counter_and_item)
    assert refused.over_budget == (0, 1)  # both actions' partition is out of budget
    apart = transact(("Update", update("b")), ("Put", put("b-items", sk=7)))
    assert budgets.admit("TransactWriteItems", apart).admitted
    assert budgets.level("t", partition("b")) == budgets.level("t", partition("b-items")) == 2.0


def test_reads_and_writes_of_a_partition_have_budgets_of_their_own() -> None:
    clock = Clock()
    budgets = keyed(clock, partition_wcu_per_sec=10, partition_rcu_per_sec=20, burst_secs=0.1)
    assert budgets.admit("UpdateItem", update("a")).admitted  # 1 WCU: all the write budget
    assert not budgets.admit("UpdateItem", update("a")).admitted
    reads = [budgets.admit("GetItem", get("a")).admitted for _ in range(5)]  # 2 RCU: 4 reads
    assert reads == [True, True, True, True, False]
    status, body = throttled_answer(budgets.admit("GetItem", get("a")))
    assert status == 400 and body["ThrottlingReasons"][0]["reason"] == HOT_KEY_READ_REASON
    assert (budgets.charged_wcu, budgets.charged_rcu) == (1.0, 2.0)
    clock.now += 0.1
    assert budgets.admit("Query", query("a")).admitted


def test_a_read_pays_the_rest_of_its_size_when_its_answer_arrives() -> None:
    clock = Clock()
    budgets = keyed(clock, partition_rcu_per_sec=10, burst_secs=1.0)  # 10 RCU
    decision = budgets.admit("Query", query("a", ConsistentRead=True))
    assert decision.rcu == 1.0
    items = [{**key("a", n), "p": {"S": "x" * 4000}} for n in range(1, 11)]  # ~40 KB: 10 RCU
    assert budgets.settle(decision, {"Items": items, "Count": 10}) == 9.0
    assert budgets.level("t", partition("a"), "RCU") == 0.0
    assert not budgets.admit("GetItem", get("a")).admitted
    big = budgets.admit("TransactGetItems", {"TransactItems": [{"Get": get("b")}]})
    five_kb = {**key("b"), "p": {"S": "x" * 5000}}
    assert budgets.settle(big, {"Responses": [{"Item": five_kb}]}) == 2.0  # 4 RCU in all
    assert budgets.settle(budgets.admit("UpdateItem", update("c")), {}) == 0.0  # a write
    assert budgets.charged_rcu == 1.0 + 9.0 + 2.0 + 2.0


# --- buckets ---------------------------------------------------------------------------------


def test_an_item_takes_its_burst_at_once_then_its_rate() -> None:
    clock = Clock()
    budgets = per_item(clock, 8, burst_secs=0.5)  # 4 WCU
    assert [budgets.admit("UpdateItem", update("a")).admitted for _ in range(5)] == [
        *[True] * 4,
        False,
    ]
    clock.now += 0.0625  # half a WCU
    assert not budgets.admit("UpdateItem", update("a")).admitted
    clock.now += 0.0625
    admitted = budgets.admit("UpdateItem", update("a"))
    assert admitted.admitted and admitted.wcu == 1
    assert not budgets.admit("UpdateItem", update("a")).admitted
    clock.now += 60.0  # an idle bucket fills to its size, no more
    assert budgets.level("t", admitted.charges[0].key) == 4.0
    assert sum(budgets.admit("UpdateItem", update("a")).admitted for _ in range(9)) == 4
    assert (budgets.admitted, budgets.throttled, budgets.charged_wcu) == (9, 8, 9.0)


def test_a_throttled_request_consumes_nothing() -> None:
    clock = Clock()
    budgets = per_item(clock, 8, burst_secs=0.125)  # 1 WCU
    assert budgets.admit("UpdateItem", update("a")).admitted
    for _ in range(64):  # hammering while empty does not push the item into debt
        clock.now += 0.0009765625
        assert budgets.admit("UpdateItem", update("a")) == Admission(
            "UpdateItem", tuple(request_charges("UpdateItem", update("a"))), (0,), 0.0,
        )  # fmt: skip
    clock.now += 0.0625  # 0.125 s after the admitted one: one WCU again
    assert budgets.admit("UpdateItem", update("a")).admitted


def test_per_item_items_and_tables_have_budgets_of_their_own() -> None:
    budgets = per_item(Clock(), 8, burst_secs=0.125)
    budgets.learn("UpdateItem", update("a"))  # table t's key: pk, sk
    assert budgets.admit("UpdateItem", update("a")).admitted
    assert not budgets.admit("UpdateItem", update("a")).admitted
    assert not budgets.admit("PutItem", put("a", 10)).admitted  # the same item, put whole
    assert budgets.admit("UpdateItem", update("b")).admitted
    assert budgets.admit("UpdateItem", update("a", table="other")).admitted
    assert budgets.admit("PutItem", put("a", sk=1)).admitted  # another item of partition a


def test_a_request_larger_than_the_bucket_passes_when_it_is_full_and_leaves_a_debt() -> None:
    clock = Clock()
    budgets = per_item(clock, 8, burst_secs=0.125)  # 1 WCU; a 3 KB put: 3
    budgets.keys.update(T_KEYS)  # the put and the updates: one item
    big = put("a", 3000)
    key = request_charges("PutItem", big, T_KEYS)[0].key
    assert budgets.admit("PutItem", big).wcu == 3  # a new item's bucket is full: it passes
    assert budgets.level("t", key) == -2.0  # in debt
    clock.now += 0.25
    assert not budgets.admit("UpdateItem", update("a")).admitted  # the debt is paid first
    assert not budgets.admit("PutItem", big).admitted
    clock.now += 0.125  # full again: 3 WCU in 0.375 s, the rate
    assert budgets.admit("PutItem", big).admitted
    clock.now += 10.0  # and a full bucket holds its own size, for smaller requests
    assert [budgets.admit("UpdateItem", update("a")).admitted for _ in range(2)] == [True, False]


def test_an_over_budget_transaction_names_each_throttled_action_and_charges_none() -> None:
    budgets = per_item(Clock(), 8, burst_secs=0.375)  # 3 WCU
    assert budgets.admit("UpdateItem", update("hot")).admitted  # 2 WCU left
    assert budgets.admit("UpdateItem", update("warm")).admitted
    assert budgets.admit("UpdateItem", update("warm")).admitted  # 1 WCU left
    request = transact(
        ("Put", put("cold", 10)),
        ("Update", update("hot")),  # 2 WCU: fits
        ("ConditionCheck", update("warm")),  # 2 WCU: over
        ("Delete", update("other")),
    )
    decision = budgets.admit("TransactWriteItems", request)
    assert not decision.admitted and decision.over_budget == (2,) and decision.wcu == 0
    hot = request_charges("UpdateItem", update("hot"))[0].key
    assert budgets.level("t", hot) == 2.0  # the action that fitted: not charged
    status, body = throttled_answer(decision)
    assert status == 400
    assert body["__type"].endswith("#TransactionCanceledException")
    assert [r["Code"] for r in body["CancellationReasons"]] == [
        "None",
        "None",
        "ThrottlingError",
        "None",
    ]
    assert "hot key" in body["CancellationReasons"][2]["Message"]
    assert "[None, None, ThrottlingError, None]" in body["Message"]
    request["TransactItems"].pop(2)
    assert budgets.admit("TransactWriteItems", request).wcu == 6
    assert budgets.level("t", hot) == 0.0


def test_a_throttled_single_write_is_answered_like_a_hot_key_in_aws() -> None:
    budgets = keyed(Clock(), partition_wcu_per_sec=1, burst_secs=1)
    assert budgets.admit("DeleteItem", update("a")).admitted
    status, body = throttled_answer(budgets.admit("DeleteItem", update("a")), region="eu-west-1")
    assert status == 400
    assert body["__type"] == (
        "com.amazonaws.dynamodb.v20120810#ProvisionedThroughputExceededException"
    )
    assert body["ThrottlingReasons"] == [
        {"reason": HOT_KEY_REASON, "resource": "arn:aws:dynamodb:eu-west-1:000000000000:table/t"}
    ]
    with pytest.raises(ValueError, match="admitted"):
        throttled_answer(budgets.admit("Scan", {"TableName": "t"}))


def test_round_trips_are_seeded_draws_within_the_range() -> None:
    def draws(seed: int) -> list[float]:
        budgets = ledger(Clock(), round_trip_secs=(0.002, 0.006), seed=seed)
        return [budgets.round_trip_secs() for _ in range(200)]

    assert draws(1) == draws(1) != draws(2)
    assert all(0.002 <= d <= 0.006 for d in draws(1))
    assert max(draws(1)) - min(draws(1)) > 0.003  # spread over the range, not a constant
    assert ledger(Clock(), round_trip_secs=[0.01, 0.01]).round_trip_secs() == 0.01


@pytest.mark.parametrize(
    "bad",
    [
        {"partition_wcu_per_sec": 0},
        {"partition_wcu_per_sec": -5.0},
        {"partition_wcu_per_sec": float("inf")},
        {"partition_wcu_per_sec": True},
        {"partition_wcu_per_sec": "100"},
        {"partition_rcu_per_sec": 0},
        {"partition_by": "sort-key"},
        {"burst_secs": -0.1},
        {"burst_secs": float("nan")},
        {"round_trip_secs": (0.01,)},
        {"round_trip_secs": (0.02, 0.01)},
        {"round_trip_secs": (-0.01, 0.01)},
        {"round_trip_secs": "0.01"},
        {"seed": 1.5},
    ],
)
def test_bad_models_are_refused(bad: dict[str, Any]) -> None:
    with pytest.raises(ConfigurationError):
        CapacityModel(**bad)


def test_the_default_model_is_aws_per_partition_limit() -> None:
    model = CapacityModel()
    assert (model.partition_wcu_per_sec, model.partition_rcu_per_sec) == (1000, 3000)
    assert model.partition_by == "partition-key"
    assert model.bucket("WCU") == pytest.approx(100) and model.bucket("RCU") == pytest.approx(300)
    assert model.round_trip_secs == (0.0, 0.0)
    assert CapacityModel(burst_secs=0).bucket("WCU") == 0  # still one request at a time
    assert CapacityModel(round_trip_secs=(0.002, 0.006)).describe() == {
        "partition_by": "partition-key",
        "partition_wcu_per_sec": 1000.0,
        "partition_rcu_per_sec": 3000.0,
        "burst_secs": 0.1,
        "round_trip_ms": [2.0, 6.0],
    }


def _puts_per_sec_in_model_time(pks: int, puts: int = 600, pace_secs: float = 0.001) -> float:
    """A client that sends a conditional put every ``pace_secs`` of the model's clock (one in
    flight per tick, a throttled put sent again on the next tick) puts ``puts`` items over
    ``pks`` partition keys through 200 WCU/s per partition: the puts per second it gets."""
    clock = Clock()
    budgets = keyed(clock, partition_wcu_per_sec=200)
    done = 0
    while done < puts:
        clock.now += pace_secs
        item = put(f"orders#{done % pks}", sk=done + 1)
        item["ConditionExpression"] = "attribute_not_exists(pk)"
        done += budgets.admit("PutItem", item).admitted
    return puts / clock.now


def test_large_transactions_get_the_rate_plus_one_and_are_not_starved() -> None:
    clock = Clock()
    budgets = keyed(clock, partition_wcu_per_sec=150)  # 15 WCU of burst
    sent = small = 0
    for _ in range(400):  # 4 s: a transaction of 100 puts (200 WCU) and a 1-WCU update,
        clock.now += 0.01  # each tried every 10 ms
        request = transact(*(("Put", put("issues", sk=sent + i)) for i in range(100)))
        sent += 100 * budgets.admit("TransactWriteItems", request).admitted
        small += budgets.admit("UpdateItem", update("issues")).admitted
    assert budgets.charged_wcu <= 15 + 150 * 4 + 200  # the rate, plus one request at most
    assert sent >= 200  # the large one passed more than once, for all the small ones
    assert budgets.charged_wcu >= 0.9 * 150 * 4


def test_one_partition_key_holds_600_puts_to_its_budget_and_600_keys_do_not() -> None:
    # The check of the model, in the model's own time: a client five times faster
    # than the budget (a put every millisecond) against 200 WCU/s per partition.
    one = _puts_per_sec_in_model_time(pks=1)
    spread = _puts_per_sec_in_model_time(pks=600)
    assert 195 <= one <= 300  # the budget, and the 20 WCU of a fresh partition's burst
    assert spread >= 2 * one and spread == pytest.approx(1000)  # the client's own pace
