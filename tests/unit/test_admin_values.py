"""The pure half of aioseq.admin (argument checks, numbering arithmetic, the renumbering
request, the scan tally) and the CLI's output formats."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from typing import Any

import pytest

from aioseq import ConfigurationError, CounterInfo, CounterValueInvalid, Numbering
from aioseq.admin.counters import check_value, counter_info, value_for_maximum
from aioseq.admin.renumber import renumbering
from aioseq.admin.scan import ScanProgress, ScanTally
from aioseq.cli import _parse_value, counter_line, counter_record

WHEN = datetime(2025, 1, 31, 12, 0, tzinfo=timezone.utc)


@pytest.mark.parametrize("value", [0, 1, 10**38 - 1])
def test_values_from_0_to_the_largest_number_are_accepted(value: int) -> None:
    assert check_value(value) == value


@pytest.mark.parametrize("value", [-1, 10**38, 1.0, 1.5, "5", True, False, None, [1]])
def test_other_values_are_refused(value: Any) -> None:
    with pytest.raises(ConfigurationError):
        check_value(value)


@pytest.mark.parametrize("text", ["-5", "+5", "1.5", "1e3", "", " 5", "٣", "0x10"])
def test_the_cli_takes_digits_only(text: str) -> None:
    with pytest.raises(ConfigurationError):
        _parse_value(text)
    assert _parse_value("0042") == 42


def test_a_line_is_key_value_numbering_update_tab_separated() -> None:
    assert counter_line(CounterInfo("k1", 11)) == "k1\t11\t-\t-"
    full = CounterInfo("k1", 11, Numbering(stride=3, offset=2), WHEN)
    assert counter_line(full) == "k1\t11\tstride=3 offset=2\t2025-01-31T12:00:00.000000+00:00"


def test_a_line_escapes_what_would_split_it() -> None:
    line = counter_line(CounterInfo("a\tb\nc\\d\re", 1))
    assert line == "a\\tb\\nc\\\\d\\re\t1\t-\t-"
    assert line.count("\t") == 3 and "\n" not in line


def test_a_record_is_json_with_the_key_as_it_is() -> None:
    info = CounterInfo("a\tb", 10**38 - 1, Numbering(stride=2, offset=1, max_value=99), WHEN)
    assert json.loads(json.dumps(counter_record(info))) == {
        "key": "a\tb",
        "value": 10**38 - 1,
        "numbering": {"stride": 2, "offset": 1, "max_value": 99},
        "updated_at": "2025-01-31T12:00:00.000000+00:00",
        "headroom": 0,  # (a value past max_value: none left, never negative)
    }
    assert counter_record(CounterInfo("k", 0))["numbering"] is None
    assert counter_record(CounterInfo("k", 0))["headroom"] is None


def test_headroom_counts_the_numbers_left_before_max_value() -> None:
    bounded = Numbering(stride=3, offset=2, max_value=20)  # 2, 5, ..., 20: 7 numbers
    assert CounterInfo("k", 0, bounded).headroom == 7
    assert CounterInfo("k", 5, bounded).headroom == 2
    assert CounterInfo("k", 5, Numbering()).headroom is None


def test_counter_info_reads_a_counter_item() -> None:
    item = {
        "pk": {"S": "k"},
        "value": {"N": "7"},
        "aioseq_numbering": {"S": "stride=3 offset=2"},
        "aioseq_updated_at": {"S": "2025-01-31T12:00:00.000000+00:00"},
    }
    assert counter_info(item, key="k", attribute="value") == CounterInfo(
        "k", 7, Numbering(stride=3, offset=2), WHEN
    )
    odd_time = {**item, "aioseq_updated_at": {"S": "yesterday"}}
    assert counter_info(odd_time, key="k", attribute="value").updated_at is None
    with pytest.raises(CounterValueInvalid):
        counter_info({**item, "value": {"N": "1.5"}}, key="k", attribute="value")
    for numbering in ({"S": "stride=3"}, {"S": "offset=2 stride=3"}, {"N": "3"}):
        with pytest.raises(CounterValueInvalid, match="aioseq_numbering"):  # as writers say it
            counter_info({**item, "aioseq_numbering": numbering}, key="k", attribute="value")


@pytest.mark.parametrize(
    ("maximum", "numbering", "value"),
    [
        (17, None, 17),
        (0, None, 0),
        (17, Numbering(stride=3, offset=2), 6),  # 2, 5, ..., 17 is the 6th number
        (18, Numbering(stride=3, offset=2), 6),  # 19 (the 7th) is the first above 18
        (1, Numbering(stride=3, offset=2), 0),  # below the first number
        (2, Numbering(stride=3, offset=2), 1),
    ],
)
def test_the_value_past_a_maximum(maximum: int, numbering: Numbering | None, value: int) -> None:
    assert value_for_maximum(maximum, numbering) == value
    if numbering is not None:
        assert numbering.number(value + 1) > maximum
        assert value == 0 or numbering.number(value) <= maximum


def _to_3_2(
    item: dict[str, Any] | None, previous: Numbering | None = None
) -> tuple[Numbering | None, dict[str, Any]]:
    """The request that renumbers counter ``k`` to ``stride=3 offset=2``."""
    return renumbering(
        item,
        key="k",
        numbering=Numbering(3, 2),
        previous=previous,
        value_attribute="value",
        partition_key="pk",
    )


def test_a_renumbering_is_conditional_on_the_counter_item_as_read() -> None:
    old, params = _to_3_2(None)
    assert old is None and params["ConditionExpression"] == "attribute_not_exists(#pk)"
    assert params["ExpressionAttributeValues"][":renumbered"] == {"N": "0"}

    item = {"pk": {"S": "k"}, "value": {"N": "4"}, "aioseq_numbering": {"S": "stride=1 offset=1"}}
    old, params = _to_3_2(item)
    assert old == Numbering()
    assert params["ConditionExpression"] == "#value = :value AND #numbering = :old"
    values = params["ExpressionAttributeValues"]
    assert values[":value"] == {"N": "4"} and values[":new"] == {"S": "stride=3 offset=2"}
    assert Numbering(3, 2).number(int(values[":renumbered"]["N"]) + 1) > 4  # past number 4

    legacy = {"pk": {"S": "k"}, "value": {"N": "4"}}
    with pytest.raises(ConfigurationError, match="previous="):
        _to_3_2(legacy)
    old, params = _to_3_2(legacy, previous=Numbering())
    assert old is None
    assert "attribute_not_exists(#numbering)" in params["ConditionExpression"]


def test_a_scan_tally_keeps_the_highest_whole_number_over_pages() -> None:
    tally = ScanTally(segments=2)
    page = [{"n": {"N": "7"}}, {"n": {"S": "0012"}}, {"n": {"N": "99.5"}}, {"n": {"S": "x"}}, {}]
    assert tally.add_page(page, "n", last=False) == ScanProgress(0, 2, 1, 5, 12)
    assert tally.add_page([{"n": {"N": "-50"}}], "n", last=True) == ScanProgress(1, 2, 2, 6, 12)
    assert tally.add_page([], "n", last=True) == ScanProgress(2, 2, 3, 6, 12)
    assert tally.maximum == 12
