"""The counter item's ring of recent write tokens, as pure values (no server)."""

from __future__ import annotations

from typing import Any

import pytest

from aioseq.config import (
    RECENT_WRITES,
    TOKENS_ATTRIBUTE,
    TURN_ATTRIBUTE,
    WRITES_ATTRIBUTE,
    TableSpec,
)
from aioseq.errors import ConfigurationError, CounterValueInvalid
from aioseq.strategies._recent_writes import CounterState, CounterWrite, LostAnswers, new_token
from aioseq.strategies._turn import entry_size, predicted

TABLE = TableSpec()


def item_after(*writes: CounterWrite) -> dict[str, Any]:
    """The counter item after ``writes``, applied in order."""
    item: dict[str, Any] = {"pk": {"S": "c"}, "sk": {"N": "0"}}
    for write in writes:
        item.update(write.after(TABLE))
    return item


def chain(first: CounterState, count: int) -> list[CounterWrite]:
    """``count`` writes of one number each, each on the state the previous one left."""
    writes = []
    state = first
    for _ in range(count):
        write = CounterWrite(state, state.value + 1, new_token())
        writes.append(write)
        state = CounterState.of(item_after(*writes), key="c", table=TABLE)
    return writes


def test_tokens_are_short_and_distinct() -> None:
    tokens = {new_token() for _ in range(1000)}
    assert len(tokens) == 1000
    assert {len(t) for t in tokens} == {16}


def test_a_new_counter_is_created_with_its_whole_ring() -> None:
    write = CounterWrite(CounterState(), 3, "t0")
    request = write.update(TABLE)
    assert request["ConditionExpression"] == "attribute_not_exists(#pk)"
    assert request["UpdateExpression"] == (
        "SET #value = :next, #writes = :writes_after, #tokens = :tokens"
    )
    ring = request["ExpressionAttributeValues"][":tokens"]["L"]
    assert len(ring) == RECENT_WRITES and ring[0] == {"S": "t0"}
    assert write.numbers == range(1, 4)


def test_a_known_ring_is_written_one_slot_at_a_time() -> None:
    state = CounterState.of(item_after(*chain(CounterState(), 5)), key="c", table=TABLE)
    assert state.writes == 5 and state.value == 5
    request = CounterWrite(state, 6, "t5").update(TABLE)
    assert request["UpdateExpression"].endswith("#tokens[5] = :token")
    assert request["ConditionExpression"] == (
        "#value = :current AND #writes = :writes AND attribute_not_exists(#turn[0])"
    )
    assert request["ExpressionAttributeValues"][":writes"] == {"N": "5"}


def test_a_write_from_the_head_of_the_queue_requires_its_entry_and_removes_it() -> None:
    item = item_after(*chain(CounterState(), 2))
    item[TURN_ATTRIBUTE] = {"L": [{"S": "a:3"}, {"S": "b:1"}]}
    state = CounterState.of(item, key="c", table=TABLE)
    assert state.turns == ("a:3", "b:1")
    write = CounterWrite(state, 5, "t2")
    request = write.update(TABLE)
    assert request["ConditionExpression"].endswith(" AND #turn[0] = :turn")
    assert request["ExpressionAttributeValues"][":turn"] == {"S": "a:3"}
    assert request["UpdateExpression"].endswith(" REMOVE #turn[0]")
    assert write.after(TABLE)[TURN_ATTRIBUTE] == {"L": [{"S": "b:1"}]}  # the rest as known
    whole = write.condition(TABLE, whole_queue=True)  # a PutItem replaces the queue whole
    assert whole["ConditionExpression"].endswith(" AND #turn = :turns")
    assert whole["ExpressionAttributeValues"][":turns"] == item[TURN_ATTRIBUTE]


def test_a_writer_further_back_predicts_the_item_from_the_sizes_ahead() -> None:
    item = item_after(*chain(CounterState(), 2))
    item[TURN_ATTRIBUTE] = {"L": [{"S": "a:3"}, {"S": "b:4"}, {"S": "me:2"}]}
    state = CounterState.of(item, key="c", table=TABLE)
    after = predicted(state, state.turns[:2])
    assert (after.value, after.writes, after.turns) == (state.value + 7, 4, ("me:2",))
    request = CounterWrite(after, after.value + 2, "t").update(TABLE)
    assert request["ExpressionAttributeValues"][":current"] == {"N": str(state.value + 7)}
    assert request["ExpressionAttributeValues"][":turn"] == {"S": "me:2"}
    assert request["UpdateExpression"].startswith("SET #value = :next, #writes = :writes_after,")
    assert "#tokens[4] = :token" in request["UpdateExpression"]
    assert [entry_size(e) for e in ("a:3", "b:40", "odd")] == [3, 40, 0]


def test_a_counter_without_writes_is_matched_on_its_value_alone() -> None:
    legacy = {"pk": {"S": "c"}, "sk": {"N": "0"}, "value": {"N": "7"}}
    state = CounterState.of(legacy, key="c", table=TABLE)
    request = CounterWrite(state, 8, "t").update(TABLE)
    assert request["ConditionExpression"] == (
        "#value = :current AND attribute_not_exists(#writes) AND attribute_not_exists(#turn[0])"
    )
    assert ":tokens" in request["ExpressionAttributeValues"]  # the whole ring, first time


@pytest.mark.parametrize("followers", [0, 1, RECENT_WRITES - 1])
def test_a_write_is_found_while_the_ring_still_holds_it(followers: int) -> None:
    writes = chain(CounterState(), 3 + followers)
    mine = writes[2]
    assert mine.applied_in(item_after(*writes), key="c", table=TABLE) is True


def test_a_write_that_was_not_applied_is_told_apart() -> None:
    writes = chain(CounterState(), 4)
    rival_took_my_place = CounterWrite(writes[1].before, writes[1].new, "never-sent")
    assert rival_took_my_place.applied_in(item_after(*writes), key="c", table=TABLE) is False
    assert writes[3].applied_in(item_after(*writes[:3]), key="c", table=TABLE) is False
    assert writes[0].applied_in(None, key="c", table=TABLE) is None  # nothing to tell by


def test_a_write_overwritten_in_the_ring_cannot_be_told() -> None:
    writes = chain(CounterState(), 1 + RECENT_WRITES)
    assert writes[0].applied_in(item_after(*writes), key="c", table=TABLE) is None


def test_a_ring_removed_by_another_writer_cannot_be_told() -> None:
    writes = chain(CounterState(), 2)
    found = item_after(*writes)
    del found[TOKENS_ATTRIBUTE]
    assert writes[0].applied_in(found, key="c", table=TABLE) is None


def test_a_write_given_up_on_is_counted_only_if_it_may_have_been_applied() -> None:
    writes = chain(CounterState(), 3)
    lost = LostAnswers("c", TABLE, None)
    never_applied = CounterWrite(writes[1].before, writes[1].new, "never-applied")
    lost.gave_up(never_applied, "every caller of it was cancelled")
    lost.seen(None)  # nothing seen yet: it waits
    assert lost.unresolved == 0
    lost.seen(writes[2].before)  # the state a later write's condition matched
    assert lost.unresolved == 0  # it simply failed: not counted, and forgotten
    lost.gave_up(writes[1], "the retry policy ran out first")
    lost.seen(item_after(*writes))  # its token is in the ring
    assert lost.unresolved == 1


def test_a_write_given_up_on_and_never_judged_is_counted_at_the_close() -> None:
    lost = LostAnswers("c", TABLE, None)
    lost.gave_up(CounterWrite(CounterState(), 5, "t"), "the retry policy ran out first")
    lost.seen(None, last=True)
    assert lost.unresolved == 5


def test_a_write_given_up_on_and_followed_by_a_whole_ring_is_counted() -> None:
    writes = chain(CounterState(), 1 + RECENT_WRITES)
    lost = LostAnswers("c", TABLE, None)
    lost.gave_up(writes[0], "every caller of it was cancelled")
    lost.seen(item_after(*writes))
    assert lost.unresolved == 1


def test_a_tampered_writes_attribute_is_refused() -> None:
    found = {**item_after(*chain(CounterState(), 1)), WRITES_ATTRIBUTE: {"S": "x"}}
    with pytest.raises(CounterValueInvalid):
        CounterState.of(found, key="c", table=TABLE)


@pytest.mark.parametrize("name", ["aioseq_token", "aioseq_writes", "aioseq_tokens"])
def test_a_table_may_not_use_aioseqs_own_attribute_names(name: str) -> None:
    with pytest.raises(ConfigurationError, match="aioseq's own"):
        TableSpec(value_attribute=name)
