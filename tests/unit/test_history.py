"""The history checker (``verification.history``) on made-up histories: no server, fast.

Each test builds the calls, the wire log and the stored items a run could leave, and checks
what the checker makes of them: duplicates, items stored twice, holes, order, and every number
nobody was handed attributed to a cause the strategy documents, or reported.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from aioseq._workload import check_numbers, stored_twice
from aioseq.testing.fault_proxy import Exchange
from verification.causes import (
    ANSWER_LOST,
    BLOCK_NOT_HANDED_OUT,
    CALLER_CANCELLED,
    CALLER_SAW_FAILURE,
    CLIENT_GONE,
    KILLED_PROCESS,
    STORED_TWICE,
    UNATTRIBUTED,
    UNEXPLAINED,
)
from verification.history import History, base_strategy
from verification.records import Call, WireWrite


def call(
    numbers: range | None,
    started: float | None = None,
    ended: float | None = None,
    *,
    strategy: str = "atomic",
    process: str = "p",
    payload: str | None = None,
    error: str | None = None,
) -> Call:
    if numbers is None and error is None:
        error = "RetriesExhausted(ConnectionFailed)"
    return Call(strategy, "c", process, 0, started, ended, numbers, error, payload)


def put(n: int | None, payload: str, *, error: str | None = None, process: str = "p") -> Call:
    """A transactional put of ``payload`` that got ``n`` (``None``: it failed with ``error``)."""
    numbers = None if n is None else range(n, n + 1)
    return call(numbers, strategy="transactional", process=process, payload=payload, error=error)


def history_of(*calls: Call, wire: tuple[WireWrite, ...] = ()) -> History:
    history = History()
    for c in calls:
        history.record(c)
    if wire:
        history.wire_observed = True
        history.wire.extend(wire)
    return history


def lost(numbers: range, *, process: str = "p", at: float | None = None) -> WireWrite:
    """A write applied by the server whose answer a ``response-lost`` fault dropped."""
    return WireWrite("c", process, numbers, False, "response-lost", at)


def delivered(numbers: range, *, process: str = "p", at: float | None = None) -> WireWrite:
    return WireWrite("c", process, numbers, True, None, at)


# --- items: exactly once ---------------------------------------------------------------------


def test_a_payload_stored_under_two_numbers_is_reported_as_stored_twice() -> None:
    # A lost answer, the item put again under the next number: the caller got 2, 1 holds its
    # payload too.
    history = history_of(put(2, "p/0/1"), put(3, "p/0/2"))
    report = history.check("sort-key", "c", stored={1: "p/0/1", 2: "p/0/1", 3: "p/0/2"})
    assert report.stored_twice == 1
    assert report.unacknowledged == {STORED_TWICE: 1}
    assert report.holes == 0 and report.duplicates == 0
    assert not report.ok
    assert any("stored twice" in p and "1 and 2" in p for p in report.problems)


def test_stored_twice_counts_every_extra_copy() -> None:
    history = history_of(put(3, "a"))
    report = history.check("sort-key", "c", stored={1: "a", 2: "a", 3: "a"})
    assert report.stored_twice == 2 and report.unacknowledged == {STORED_TWICE: 2}


def test_exactly_once_items_pass() -> None:
    history = history_of(put(1, "a"), put(2, "b"), put(3, "c"))
    report = history.check("transactional", "c", stored={1: "a", 2: "b", 3: "c"})
    assert report.ok, report.problems
    assert (report.stored, report.stored_twice, report.holes, report.wrong_payload) == (3, 0, 0, 0)
    assert report.unacknowledged == {}


def test_a_stored_item_nobody_was_handed_and_nothing_explains_fails() -> None:
    history = history_of(put(1, "a"))
    report = history.check("transactional", "c", stored={1: "a", 2: "z/9/9"})
    assert report.unacknowledged == {UNEXPLAINED: 1}
    assert not report.ok
    assert any("unexplained 1" in p for p in report.problems)


def test_an_item_of_a_killed_process_is_explained_by_its_payload() -> None:
    history = history_of(put(1, "p1/0/1", process="p1"))
    history.mark_killed("p0")
    report = history.check("sort-key", "c", stored={1: "p1/0/1", 2: "p0/3/7"})
    assert report.unacknowledged == {KILLED_PROCESS: 1}
    assert report.ok, report.problems


def test_an_item_of_a_killed_process_is_explained_by_the_wire_log() -> None:
    # No payload in the items (printed numbers only): the wire log names the writer.
    history = history_of(put(1, "x", process="p1"), wire=(lost(range(2, 3), process="p0"),))
    history.mark_killed("p0")
    report = history.check("transactional", "c", stored=[1, 2])
    assert report.unacknowledged == {KILLED_PROCESS: 1}
    assert report.ok, report.problems


def test_an_item_of_a_caller_that_saw_failure_or_was_cancelled_is_explained() -> None:
    history = history_of(
        put(1, "a"),
        put(None, "b", error="RetriesExhausted(ConnectionFailed)"),
        put(None, "c", error="CancelledError"),
    )
    report = history.check("transactional", "c", stored={1: "a", 2: "b", 3: "c"})
    assert report.unacknowledged == {CALLER_SAW_FAILURE: 1, CALLER_CANCELLED: 1}
    assert report.failed == {"RetriesExhausted(ConnectionFailed)": 1, "CancelledError": 1}
    assert report.ok, report.problems


def test_an_item_whose_answer_was_lost_and_that_nobody_got_is_a_broken_promise() -> None:
    # Wire log only (no payloads): the answer was lost and the caller carried on.
    history = history_of(put(1, "x"), wire=(lost(range(2, 3)), delivered(range(1, 2))))
    report = history.check("sort-key", "c", stored=[1, 2])
    assert report.unacknowledged == {ANSWER_LOST: 1}
    assert not report.ok


def test_a_number_handed_out_with_another_calls_item_is_reported() -> None:
    history = history_of(put(1, "a"), put(2, "b"))
    report = history.check("sort-key", "c", stored={1: "b", 2: "b"})
    assert report.wrong_payload == 1 and report.stored_twice == 1
    assert not report.ok


def test_holes_among_stored_items_and_numbers_without_items() -> None:
    history = history_of(*(put(n, f"p/0/{n}") for n in (1, 2, 4)))
    report = history.check("transactional", "c", stored={1: "p/0/1", 3: "p/0/9"})
    assert report.holes == 2  # 2 is missing from the table; 4 was handed out without its item
    assert report.unacknowledged == {UNEXPLAINED: 1}  # 3: nobody's, nothing explains it
    assert not report.ok


def test_without_payloads_or_wire_log_a_stored_item_is_unattributed_only_if_explicable() -> None:
    history = history_of(put(1, "a"))
    assert history.check("sort-key", "c", stored=[1, 2]).unacknowledged == {UNEXPLAINED: 1}
    history.mark_killed("p9")
    report = history.check("sort-key", "c", stored=[1, 2])
    assert report.unacknowledged == {UNATTRIBUTED: 1}
    assert report.ok  # counted, not judged


def test_item_strategies_need_the_stored_items() -> None:
    with pytest.raises(ValueError, match="stored items"):
        History().check("transactional", "c")
    with pytest.raises(ValueError, match="unknown strategy"):
        History().check("sequence", "c")


# --- counters: gaps by cause -----------------------------------------------------------------


def test_a_lost_answer_may_skip_atomic_numbers_but_not_optimistic_ones() -> None:
    # 1..2 applied, the answer lost; the retry took 3..4.
    wire = (lost(range(1, 3), at=1.0), delivered(range(3, 5), at=2.0))
    for strategy, ok in (("atomic", True), ("optimistic", False), ("optimistic+group", False)):
        history = history_of(call(range(3, 5), 0.0, 3.0, strategy=strategy), wire=wire)
        report = history.check(strategy, "c", top=4)
        assert report.gaps == {ANSWER_LOST: 2}
        assert report.ok is ok, report.problems
        assert report.holes == (0 if ok else 2)


def test_a_timed_out_client_counts_as_a_lost_answer() -> None:
    wire = (WireWrite("c", "p", range(1, 2), False, None, 1.0), delivered(range(2, 3), at=2.0))
    history = history_of(call(range(2, 3), 0.0, 3.0), wire=wire)
    assert history.check("atomic", "c", top=2).gaps == {CLIENT_GONE: 1}
    history = history_of(call(range(2, 3), 0.0, 3.0, strategy="optimistic"), wire=wire)
    assert not history.check("optimistic", "c", top=2).ok


def test_an_answer_delivered_but_unread_by_its_client_counts_once_as_a_lost_answer() -> None:
    # Both answers delivered as the proxy saw them; the client's event loop, busy, read the
    # first after its read timeout and retried: its statistics count one read timeout more
    # than the proxy held back.
    wire = (delivered(range(1, 2), at=1.0), delivered(range(2, 3), at=2.0))
    history = history_of(call(range(3, 4), 0.0, 3.0), wire=wire)
    assert history.check("atomic", "c", top=3).gaps == {UNEXPLAINED: 2}
    history.mark_unread("p", 1)
    assert history.check("atomic", "c", top=3).gaps == {CLIENT_GONE: 1, UNEXPLAINED: 1}
    history.mark_unread("other", 5)  # another process's timeouts explain nothing here
    assert history.check("atomic", "c", top=3).gaps == {CLIENT_GONE: 1, UNEXPLAINED: 1}


def test_a_killed_process_explains_its_numbers() -> None:
    wire = (delivered(range(1, 2), process="p0", at=1.0), delivered(range(2, 3), at=2.0))
    history = history_of(call(range(2, 3), 1.5, 2.5, strategy="optimistic"), wire=wire)
    history.mark_killed("p0")
    report = history.check("optimistic", "c", top=2)
    assert report.gaps == {KILLED_PROCESS: 1}
    assert report.ok and report.holes == 0


def test_a_caller_gone_explains_a_lost_number_only_while_its_call_was_under_way() -> None:
    history = history_of(
        call(None, 0.0, 1.0, strategy="optimistic", error="CancelledError"),
        call(range(3, 4), 50.0, 51.0, strategy="optimistic"),
        wire=(
            delivered(range(1, 2), at=1.5),  # after the cancel: the request was still on its way
            lost(range(2, 3), at=40.0),  # long after: not that call's
            delivered(range(3, 4), at=50.5),
        ),
    )
    history.late_secs = 10.0
    report = history.check("optimistic", "c", top=3)
    assert report.gaps == {CALLER_CANCELLED: 1, ANSWER_LOST: 1}
    assert report.holes == 1 and not report.ok


def test_a_caller_gone_explains_one_number_only() -> None:
    # Two answers lost in a busy process, one caller cancelled meanwhile: the cancel cannot
    # cover for the other lost answer (an optimistic write skipped after its answer was lost).
    history = history_of(
        call(None, 0.0, 1.0, strategy="optimistic", error="CancelledError"),
        call(range(3, 4), 0.0, 2.0, strategy="optimistic"),
        wire=(lost(range(1, 2), at=0.5), lost(range(2, 3), at=0.6), delivered(range(3, 4), at=1.5)),
    )
    report = history.check("optimistic", "c", top=3)
    assert report.gaps == {CALLER_CANCELLED: 1, ANSWER_LOST: 1}
    assert report.holes == 1 and not report.ok


def test_callers_gone_are_matched_to_the_numbers_they_can_explain() -> None:
    # The call that ends first takes the first lost number, so the later one is explained too.
    history = history_of(
        call(None, 0.0, 10.0, strategy="optimistic", error="CancelledError"),
        call(None, 0.0, 1.0, strategy="optimistic"),
        call(range(3, 4), 20.0, 21.0, strategy="optimistic"),
        wire=(
            lost(range(1, 2), at=0.5),
            lost(range(2, 3), at=5.0),
            delivered(range(3, 4), at=20.5),
        ),
    )
    history.late_secs = 1.0
    report = history.check("optimistic", "c", top=3)
    assert report.gaps == {CALLER_SAW_FAILURE: 1, CALLER_CANCELLED: 1}
    assert report.ok, report.problems


def test_a_lost_answer_explained_anyway_does_not_use_up_a_cancelled_caller() -> None:
    # The soak's flake: a caller cancelled while its ADD (2) was answered; meanwhile another
    # task's ADD (1) lost its answer to a fault, and its retry got 3. The fault explains 1
    # (atomic documents it), so the cancelled caller must be left for 2, which it alone explains.
    history = history_of(
        call(None, 0.0, 0.1, error="CancelledError"),
        call(range(3, 4), 0.0, 0.3),
        wire=(
            lost(range(1, 2), at=0.05),
            delivered(range(2, 3), at=0.08),
            delivered(range(3, 4), at=0.2),
        ),
    )
    report = history.check("atomic", "c", top=3)
    assert report.gaps == {ANSWER_LOST: 1, CALLER_CANCELLED: 1}
    assert report.ok, report.problems


def test_a_failed_put_explains_its_own_item_and_nothing_else() -> None:
    # The failed put's item is found by its payload; it cannot also explain another item.
    history = history_of(
        put(1, "p/0/1"),
        put(None, "p/0/2", error="RetriesExhausted(ConnectionFailed)"),
        wire=(lost(range(2, 3)), lost(range(3, 4))),
    )
    report = history.check("transactional", "c", stored={1: "p/0/1", 2: "p/0/2", 3: None})
    assert report.unacknowledged == {CALLER_SAW_FAILURE: 1, ANSWER_LOST: 1}
    assert not report.ok


def test_a_failed_call_explains_numbers_whose_answer_was_lost() -> None:
    history = history_of(
        call(None, 0.0, 5.0, strategy="optimistic"),
        call(range(2, 3), 6.0, 7.0, strategy="optimistic"),
        wire=(lost(range(1, 2), at=1.0), delivered(range(2, 3), at=6.5)),
    )
    report = history.check("optimistic", "c", top=2)
    assert report.gaps == {CALLER_SAW_FAILURE: 1}
    assert report.ok, report.problems


def test_an_unused_block_is_the_allocators_documented_gap() -> None:
    wire = (delivered(range(1, 101), at=1.0),)
    history = history_of(call(range(1, 2), 0.0, 2.0, strategy="allocator"), wire=wire)
    report = history.check("allocator", "c", top=100)
    assert report.gaps == {BLOCK_NOT_HANDED_OUT: 99}
    assert report.ok
    assert not history.check("atomic", "c", top=100).ok  # the atomic counter has no blocks


def test_duplicates_order_violations_and_unexplained_gaps() -> None:
    history = history_of(
        call(range(1, 2), 0.0, 1.0),
        call(range(1, 2), 2.0, 3.0),  # a duplicate, and out of order
        call(range(5, 6), 4.0, 5.0),
    )
    report = history.check("atomic", "c", top=5)
    assert report.duplicates == 1 and report.order_violations == 1
    assert report.gaps == {UNATTRIBUTED: 3}  # no wire log: counted, not judged
    assert not report.ok and len(report.problems) == 2
    history.wire_observed = True
    report = history.check("atomic", "c", top=5)
    assert report.gaps == {UNEXPLAINED: 3} and report.holes == 3


def test_without_a_wire_log_an_optimistic_gap_nothing_could_explain_is_a_hole() -> None:
    history = history_of(call(range(2, 3), 0.0, 1.0, strategy="optimistic"))
    assert history.check("optimistic", "c", top=2).gaps == {UNEXPLAINED: 1}
    history.record(call(None, 0.0, 1.0, strategy="optimistic"))
    assert history.check("optimistic", "c", top=2).gaps == {UNATTRIBUTED: 1}


def test_concurrent_calls_may_complete_out_of_order() -> None:
    history = history_of(call(range(2, 3), 0.0, 1.0), call(range(1, 2), 0.5, 2.0))
    assert history.check("atomic", "c").ok


def test_the_allocator_is_ordered_within_a_process_only() -> None:
    history = history_of(
        call(range(101, 102), 0.0, 1.0, strategy="allocator", process="a"),
        call(range(1, 2), 2.0, 3.0, strategy="allocator", process="b"),
    )
    assert history.check("allocator", "c", top=200).order_violations == 0
    assert history.check("atomic", "c", top=200).order_violations == 1


def test_strategy_variants_are_checked_as_their_strategy() -> None:
    assert {
        base_strategy(name)
        for name in ("sort-key", "sort-key+group", "sort-key+no-group", "sort-key --no-group")
    } == {"sort-key"}


# --- recording -------------------------------------------------------------------------------


async def test_take_records_the_payload_the_numbers_and_the_failure() -> None:
    history = History()

    async def one() -> int:
        return 7

    async def fails() -> int:
        raise RuntimeError("no")

    assert await history.take(one, strategy="sort-key", counter="c", process="p", task=1,
                              payload="p/1/1") == 7  # fmt: skip
    with pytest.raises(RuntimeError):
        await history.take(fails, strategy="sort-key", counter="c", process="p", task=1,
                           payload="p/1/2")  # fmt: skip
    first, second = history.calls
    assert (first.numbers, first.payload, first.error) == (range(7, 8), "p/1/1", None)
    assert (second.numbers, second.payload, second.error) == (None, "p/1/2", "RuntimeError")


def test_a_log_survives_its_writer_and_a_torn_last_line_is_skipped(tmp_path: Path) -> None:
    path = tmp_path / "p0.jsonl"
    writer = History(log=path)
    writer.record(put(1, "p0/0/1", process="p0"))
    writer.record(put(None, "p0/0/2", process="p0", error="CancelledError"))
    # No close(): each call is on disk once recorded; a kill mid-write leaves half a line.
    with path.open("a") as out:
        out.write('{"strategy": "transactional", "coun')
    reader = History()
    reader.load(path)
    assert reader.calls == writer.calls
    writer.close()
    writer.close()


def exchange(
    operation: str, request: dict[str, Any], response: dict[str, Any], **kwargs: Any
) -> Exchange:
    return Exchange(
        operation,
        kwargs.get("fault"),
        json.dumps(request).encode(),
        kwargs.get("status", 200),
        json.dumps(response).encode(),
        kwargs.get("delivered", True),
        kwargs.get("client", "p0"),
    )


def test_observe_reads_the_numbers_each_write_took() -> None:
    history = History()
    key = {"pk": {"S": "c"}, "sk": {"N": "0"}}
    history.observe(
        exchange(
            "UpdateItem",
            {"Key": key, "UpdateExpression": "ADD #value :n", "ExpressionAttributeValues": {
                ":n": {"N": "3"}}},
            {"Attributes": {"value": {"N": "10"}}},
            fault="response-lost", delivered=False,
        )
    )  # fmt: skip
    history.observe(
        exchange(
            "UpdateItem",
            {"Key": key, "UpdateExpression": "SET #value = :next, #writes = :writes_after",
             "ExpressionAttributeValues": {":current": {"N": "10"}, ":next": {"N": "12"}}},
            {},
        )
    )  # fmt: skip
    history.observe(
        exchange(
            "PutItem",
            {"Item": {**key, "value": {"N": "14"}},
             "ExpressionAttributeValues": {":current": {"N": "12"}}},
            {},
        )
    )  # fmt: skip
    history.observe(
        exchange("PutItem", {"Item": {"pk": {"S": "c"}, "sk": {"N": "15"}}}, {}, client="p1")
    )
    history.observe(
        exchange(
            "TransactWriteItems",
            {"TransactItems": [
                {"Update": {"Key": key}},
                {"Put": {"Item": {"pk": {"S": "c"}, "sk": {"N": "16"}}}},
                {"Put": {"Item": {"pk": {"S": "c"}, "sk": {"N": "17"}}}},
            ]},
            {},
        )
    )  # fmt: skip
    history.observe(  # refused: nothing applied
        exchange("PutItem", {"Item": {"pk": {"S": "c"}, "sk": {"N": "18"}}}, {}, status=400)
    )
    assert [(w.process, w.numbers, w.delivered, w.fault) for w in history.wire] == [
        ("p0", range(8, 11), False, "response-lost"),
        ("p0", range(11, 13), True, None),
        ("p0", range(13, 15), True, None),
        ("p1", range(15, 16), True, None),
        ("p0", range(16, 17), True, None),
        ("p0", range(17, 18), True, None),
    ]
    assert history.wire_observed and all(w.observed is not None for w in history.wire)


# --- aioseq._workload's quick check ----------------------------------------------------------


def test_check_numbers_counts_items_stored_twice_when_given_payloads() -> None:
    assert stored_twice({1: "a", 2: "a", 3: "b", 4: None, 5: None}) == 1
    check = check_numbers([1, 2, 3], {1: "a", 2: "b", 3: "a"})
    assert check.stored_twice == 1 and not check.ok
    assert check_numbers([1, 2, 3], [1, 2, 3]).ok
