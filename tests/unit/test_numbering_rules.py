"""The numbering a counter item records: its text, the check, the conditions, renumbering.
No server."""

from __future__ import annotations

import itertools

import pytest

from aioseq import ConfigurationError, CounterValueInvalid, Numbering, NumberingMismatch
from aioseq._limits import MAX_NUMBER, NUMBERING_ATTRIBUTE
from aioseq.config import TableSpec
from aioseq.numbering import (
    GUARD,
    check_recorded,
    guard_values,
    numbering_for,
    recorded_text,
    renumbered_value,
)
from aioseq.strategies._recent_writes import CounterState, CounterWrite

TABLE = TableSpec(name="aioseq")


@pytest.mark.parametrize(
    "numbering",
    [Numbering(), Numbering(3, 2), Numbering(1, 0), Numbering(10**12, MAX_NUMBER, MAX_NUMBER)],
)
def test_the_text_round_trips(numbering: Numbering) -> None:
    assert Numbering.decode(numbering.encode()) == numbering
    assert str(numbering) == numbering.encode()


@pytest.mark.parametrize(
    "text",
    ["", "stride=3", "offset=2", "stride=3  offset=2", "stride=-3 offset=2", "stride=0 offset=1",
     "stride=3 offset=2 max=4", "stride=3 offset=2 max_value=0", "stride=x offset=1"],
)  # fmt: skip
def test_text_that_is_no_numbering_is_refused(text: str) -> None:
    with pytest.raises(ConfigurationError):
        Numbering.decode(text)


def test_the_recorded_numbering_leaves_the_default_limit_out() -> None:
    assert numbering_for() == Numbering() and numbering_for().encode() == "stride=1 offset=1"
    assert numbering_for(max_value=MAX_NUMBER).max_value is None
    assert numbering_for(stride=3, offset=2, max_value=99).encode() == (
        "stride=3 offset=2 max_value=99"
    )


def item(numbering: dict[str, str] | None) -> dict[str, dict[str, str]]:
    found = {"pk": {"S": "k"}, "value": {"N": "5"}}
    return found if numbering is None else {**found, NUMBERING_ATTRIBUTE: numbering}


def test_a_recorded_numbering_is_read_only_in_its_own_spelling() -> None:
    assert recorded_text(None, "k") is None
    assert recorded_text(item(None), "k") is None
    assert recorded_text(item({"S": "stride=3 offset=2"}), "k") == "stride=3 offset=2"
    # The condition compares strings: another spelling of a numbering would never match it.
    for bad in ({"S": "offset=2 stride=3"}, {"S": "stride=03 offset=2"}, {"N": "3"}, {"S": ""}):
        with pytest.raises(CounterValueInvalid) as caught:
            recorded_text(item(bad), "k")
        assert caught.value.attribute == NUMBERING_ATTRIBUTE
        assert "numbering" in str(caught.value) and "whole number" not in str(caught.value)


def test_the_check_refuses_another_numbering_naming_both() -> None:
    check_recorded(None, "k", Numbering(3, 2))
    check_recorded(item(None), "k", Numbering(3, 2))  # nothing recorded: the write records it
    check_recorded(item({"S": "stride=3 offset=2"}), "k", Numbering(3, 2))
    with pytest.raises(NumberingMismatch) as caught:
        check_recorded(item({"S": "stride=3 offset=2"}), "k", Numbering(3, 2, 100))
    assert caught.value.stored == Numbering(3, 2)
    assert caught.value.requested == Numbering(3, 2, 100)
    assert "'stride=3 offset=2'" in str(caught.value)
    assert "'stride=3 offset=2 max_value=100'" in str(caught.value)


def test_the_guard_uses_exactly_its_names_and_values() -> None:
    names, values = guard_values(Numbering(3, 2))
    assert names == {"#numbering": NUMBERING_ATTRIBUTE}
    assert values == {":numbering": {"S": "stride=3 offset=2"}}
    assert all(name in GUARD for name in names) and all(value in GUARD for value in values)


@pytest.mark.parametrize(
    ("before", "condition"),
    [
        (CounterState(), "attribute_not_exists(#pk)"),
        (
            CounterState(5, True, 2, None, "stride=1 offset=1"),
            "#value = :current AND #writes = :writes AND #numbering = :numbering_before"
            " AND attribute_not_exists(#turn[0])",
        ),
        (
            CounterState(5, True, None, None, None),
            "#value = :current AND attribute_not_exists(#writes)"
            " AND attribute_not_exists(#numbering) AND attribute_not_exists(#turn[0])",
        ),
    ],
)
def test_a_conditional_write_pins_and_records_the_numbering(
    before: CounterState, condition: str
) -> None:
    write = CounterWrite(before, before.value + 1, "token", "stride=1 offset=1")
    request = write.update(TABLE)
    assert request["ConditionExpression"] == condition
    assert request["UpdateExpression"].endswith(", #numbering = :numbering")
    assert request["ExpressionAttributeValues"][":numbering"] == {"S": "stride=1 offset=1"}
    assert write.after(TABLE)[NUMBERING_ATTRIBUTE] == {"S": "stride=1 offset=1"}
    expression = request["ConditionExpression"] + request["UpdateExpression"]
    assert all(name in expression for name in request["ExpressionAttributeNames"])
    assert all(value in expression for value in request["ExpressionAttributeValues"])


def test_a_write_without_a_numbering_leaves_it_alone() -> None:
    before = CounterState(5, True, 2, None, "stride=1 offset=1")
    write = CounterWrite(before, 6, "token")
    assert "numbering" not in write.update(TABLE)["UpdateExpression"]
    assert write.after(TABLE)[NUMBERING_ATTRIBUTE] == {"S": "stride=1 offset=1"}  # kept by a put


NUMBERINGS = [Numbering(), Numbering(3, 2), Numbering(1, 0), Numbering(2, 1), Numbering(7, 30)]


@pytest.mark.parametrize(("old", "new"), list(itertools.product(NUMBERINGS, repeat=2)))
def test_renumbering_continues_just_above_the_last_number(old: Numbering, new: Numbering) -> None:
    assert renumbered_value(0, old, new) == 0
    for value in range(1, 40):
        renumbered = renumbered_value(value, old, new)
        last = old.number(value)
        assert new.number(renumbered + 1) > last  # nothing handed out twice
        assert renumbered == 0 or new.number(renumbered) <= last  # and nothing skipped
    assert renumbered_value(9, new, new) == 9  # the same numbering: the same value
