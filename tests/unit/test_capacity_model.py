"""The AWS-like capacity model's pure part (costs, buckets, answers), with a fake clock; no
server. Through the proxy against the servers: ``tests/integration/test_capacity.py``."""

from __future__ import annotations

from typing import Any

import pytest
from checks import Clock

from aioseq import (
    ConfigurationError,
)
from aioseq.testing import CapacityModel
from aioseq.testing.capacity import (
    HOT_KEY_REASON,
    Admission,
    CapacityLedger,
    WriteAction,
    throttled_answer,
    write_actions,
    write_cost_wcu,
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


# --- costs -----------------------------------------------------------------------------------

#: ``pk``/``sk``/``p`` names and values, and the number: what an item costs beyond its payload.
PUT_OVERHEAD = len("pk") + 1 + len("sk") + 2 + len("p")


@pytest.mark.parametrize(
    ("payload", "wcu"), [(0, 1), (1024 - PUT_OVERHEAD, 1), (1025 - PUT_OVERHEAD, 2), (5000, 5)]
)
def test_a_put_costs_its_size_in_kb_rounded_up(payload: int, wcu: int) -> None:
    [single] = write_actions("PutItem", put("a", payload))
    assert single.wcu == wcu
    [action] = write_actions("TransactWriteItems", transact(("Put", put("a", payload))))
    assert action.wcu == 2 * wcu


def test_updates_deletes_and_condition_checks_cost_one_wcu_twice_in_a_transaction() -> None:
    body = update("a")
    assert [a.wcu for a in write_actions("UpdateItem", body)] == [1]
    assert [a.wcu for a in write_actions("DeleteItem", body)] == [1]
    both = transact(
        ("Update", update("a")), ("Delete", update("b")), ("ConditionCheck", update("c"))
    )
    assert [a.wcu for a in write_actions("TransactWriteItems", both)] == [2, 2, 2]
    assert write_cost_wcu(0) == 1 and write_cost_wcu(2049, transactional=True) == 6


@pytest.mark.parametrize(
    ("operation", "body"),
    [
        ("GetItem", {"TableName": "t", "Key": key("a")}),
        ("Query", {"TableName": "t"}),
        ("TransactGetItems", {"TransactItems": [{"Get": {"TableName": "t", "Key": key("a")}}]}),
        ("BatchWriteItem", {"RequestItems": {"t": [{"PutRequest": {"Item": key("a")}}]}}),
        ("UpdateItem", {"Key": key("a")}),  # no table: DynamoDB refuses it
        ("PutItem", {"TableName": "t", "Item": {"pk": {}}}),  # not an AttributeValue
        ("TransactWriteItems", {"TransactItems": [{"Bogus": {}}]}),
    ],
)
def test_reads_batches_and_malformed_requests_are_not_budgeted(
    operation: str, body: dict[str, Any]
) -> None:
    assert write_actions(operation, body) == []
    budgets = ledger(Clock(), item_wcu_per_sec=1, burst_secs=1)
    for _ in range(5):
        assert budgets.admit(operation, body).admitted
    assert budgets.charged_wcu == 0


def test_a_put_is_keyed_by_its_primary_key_once_the_tables_key_is_known() -> None:
    first, second = put("a", 10), put("a", 20)
    unknown = write_actions("PutItem", first) + write_actions("PutItem", second)
    assert unknown[0].key != unknown[1].key  # each distinct item is its own budget
    known = {"t": frozenset({"pk", "sk"})}
    keyed = write_actions("PutItem", first, known) + write_actions("PutItem", second, known)
    assert keyed[0].key == keyed[1].key == write_actions("UpdateItem", update("a"))[0].key
    assert write_actions("PutItem", put("a", 10, sk=1), known)[0].key != keyed[0].key


def test_the_ledger_learns_key_attributes_from_traffic() -> None:
    budgets = ledger(Clock())
    create = {"TableName": "c", "KeySchema": [{"AttributeName": "id", "KeyType": "HASH"}]}
    budgets.learn("CreateTable", create)
    described = {"Table": {"TableName": "d", "KeySchema": [{"AttributeName": "pk"}]}}
    budgets.learn("DescribeTable", {"TableName": "d"}, described)
    budgets.learn("TransactWriteItems", transact(("Update", update("a", table="u"))))
    assert budgets.key_names == {
        "c": frozenset({"id"}),
        "d": frozenset({"pk"}),
        "u": frozenset({"pk", "sk"}),
    }


# --- buckets ---------------------------------------------------------------------------------


def test_an_item_takes_its_burst_at_once_then_its_rate() -> None:
    clock = Clock()
    budgets = ledger(clock, item_wcu_per_sec=8, burst_secs=0.5)  # 4 WCU
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
    assert budgets.level("t", admitted.actions[0].key) == 4.0
    assert sum(budgets.admit("UpdateItem", update("a")).admitted for _ in range(9)) == 4
    assert (budgets.admitted, budgets.throttled, budgets.charged_wcu) == (9, 8, 9.0)


def test_a_throttled_request_consumes_nothing() -> None:
    clock = Clock()
    budgets = ledger(clock, item_wcu_per_sec=8, burst_secs=0.125)  # 1 WCU
    assert budgets.admit("UpdateItem", update("a")).admitted
    for _ in range(64):  # hammering while empty does not push the item into debt
        clock.now += 0.0009765625
        assert budgets.admit("UpdateItem", update("a")) == Admission(
            "UpdateItem", (WriteAction("t", write_actions("UpdateItem", update("a"))[0].key, 1),),
            (0,), 0.0,
        )  # fmt: skip
    clock.now += 0.0625  # 0.125 s after the admitted one: one WCU again
    assert budgets.admit("UpdateItem", update("a")).admitted


def test_items_and_tables_have_budgets_of_their_own() -> None:
    budgets = ledger(Clock(), item_wcu_per_sec=8, burst_secs=0.125)
    budgets.learn("UpdateItem", update("a"))  # table t's key: pk, sk
    assert budgets.admit("UpdateItem", update("a")).admitted
    assert not budgets.admit("UpdateItem", update("a")).admitted
    assert not budgets.admit("PutItem", put("a", 10)).admitted  # the same item, put whole
    assert budgets.admit("UpdateItem", update("b")).admitted
    assert budgets.admit("UpdateItem", update("a", table="other")).admitted
    assert budgets.admit("PutItem", put("a", sk=1)).admitted  # another item of partition a


def test_a_request_larger_than_the_bucket_passes_once_its_cost_has_accrued() -> None:
    clock = Clock()
    budgets = ledger(clock, item_wcu_per_sec=8, burst_secs=0.125)  # 1 WCU; a 3 KB put: 3
    big = put("a", 3000)
    assert budgets.admit("PutItem", big).wcu == 3  # a fresh item holds one request's cost
    clock.now += 0.25
    assert not budgets.admit("PutItem", big).admitted
    clock.now += 0.125
    assert budgets.admit("PutItem", big).admitted
    clock.now += 10.0  # and a full bucket holds its own size, for smaller requests
    assert [budgets.admit("UpdateItem", update("a")).admitted for _ in range(2)] == [True, False]


def test_an_over_budget_transaction_names_each_throttled_action_and_charges_none() -> None:
    budgets = ledger(Clock(), item_wcu_per_sec=8, burst_secs=0.375)  # 3 WCU
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
    hot = write_actions("UpdateItem", update("hot"))[0].key
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
    budgets = ledger(Clock(), item_wcu_per_sec=1, burst_secs=1)
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
        throttled_answer(budgets.admit("GetItem", {"TableName": "t", "Key": key("a")}))


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
        {"item_wcu_per_sec": 0},
        {"item_wcu_per_sec": -5.0},
        {"item_wcu_per_sec": float("inf")},
        {"item_wcu_per_sec": True},
        {"item_wcu_per_sec": "100"},
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
    assert model.item_wcu_per_sec == 1000 and model.bucket_wcu == pytest.approx(100)
    assert model.round_trip_secs == (0.0, 0.0)
    assert CapacityModel(burst_secs=0).bucket_wcu == 0  # still one request at a time
