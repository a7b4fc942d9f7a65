"""The bottom of the house: what each check accepts and refuses (and says), the sizes DynamoDB
counts for items, the number codec, and plain values to AttributeValues and back."""

from __future__ import annotations

import math
from decimal import Decimal
from typing import Any

import pytest

from aioseq import ConfigurationError, CounterValueInvalid, Numbering, NumberOutOfRange
from aioseq._checks import (
    check_attribute_name,
    check_count,
    check_endpoint_url,
    check_key,
    check_region,
    check_seconds,
    check_table_name,
)
from aioseq._items import check_item_size, deserialize, item_size, number, parse_counter, serialize
from aioseq._limits import MAX_ITEM_BYTES, MAX_NUMBER, MAX_PARTITION_KEY_BYTES, MAX_SORT_KEY_BYTES

LONE_SURROGATE = "a\ud800"


# --- names, keys, counts, durations, endpoints, regions ---------------------------------------


@pytest.mark.parametrize(
    ("key", "message"),
    [
        (5, "counter key must be a str, not int"),
        (b"orders", "counter key must be a str, not bytes"),
        ("", "counter key must not be empty"),
        (LONE_SURROGATE, "counter key must be valid Unicode"),
        ("é" * 1025, "counter key must be at most 2048 UTF-8 bytes, not 2050"),
    ],
)
def test_a_bad_counter_key_is_refused_saying_why(key: object, message: str) -> None:
    with pytest.raises(ConfigurationError) as raised:
        check_key(key)
    assert str(raised.value).startswith(message)


def test_a_key_may_hold_any_characters_up_to_its_limit_in_bytes() -> None:
    for key in ("orders", "#pk :v ) OR 1=1", "x" * MAX_PARTITION_KEY_BYTES, "é" * 1024):
        assert check_key(key) == key
    assert check_key("s" * MAX_SORT_KEY_BYTES, "sort key", maximum=MAX_SORT_KEY_BYTES)
    with pytest.raises(ConfigurationError, match=r"^sort key must be at most 1024 UTF-8 bytes"):
        check_key("s" * (MAX_SORT_KEY_BYTES + 1), "sort key", maximum=MAX_SORT_KEY_BYTES)


@pytest.mark.parametrize(
    ("name", "message"),
    [
        (None, "attribute name must be a str, not NoneType"),
        (LONE_SURROGATE, "attribute name must be valid Unicode (no lone surrogates)"),
        ("", "attribute name must be 1 to 255 UTF-8 bytes, not 0"),
        ("n" * 256, "attribute name must be 1 to 255 UTF-8 bytes, not 256"),
        ("é" * 128, "attribute name must be 1 to 255 UTF-8 bytes, not 256"),
    ],
)
def test_a_bad_attribute_name_is_refused(name: object, message: str) -> None:
    with pytest.raises(ConfigurationError) as raised:
        check_attribute_name(name)
    assert str(raised.value) == message


def test_an_attribute_name_may_be_anything_of_1_to_255_bytes() -> None:
    for name in ("value", "n" * 255, "a b:c#d", "é" * 127):
        assert check_attribute_name(name) == name


@pytest.mark.parametrize("name", ["ab", "x" * 256, "has space", "ümlaut", 12, None])
def test_a_bad_table_name_is_refused(name: object) -> None:
    with pytest.raises(ConfigurationError, match="table must be a str of 3 to 255 characters"):
        check_table_name(name, "table")


def test_a_table_name_of_the_allowed_characters_passes() -> None:
    assert check_table_name("my_table-1.v2") == "my_table-1.v2"
    assert check_table_name("t" * 255) == "t" * 255


@pytest.mark.parametrize("secs", [0, -1, math.nan, math.inf, True, "1", None])
def test_a_duration_must_be_a_finite_positive_number(secs: object) -> None:
    with pytest.raises(ConfigurationError, match=r"^timeout must be a finite number of seconds"):
        check_seconds(secs, "timeout")


def test_a_duration_is_given_back_as_a_float() -> None:
    assert check_seconds(2, "timeout") == 2.0 and isinstance(check_seconds(2, "t"), float)
    assert check_seconds(0.001, "timeout") == 0.001


@pytest.mark.parametrize(
    ("n", "message"),
    [
        (True, "count must be an int, not bool"),
        (1.0, "count must be an int, not float"),
        (0, "count must be an int from 1 to 10, not 0"),
        (11, "count must be an int from 1 to 10, not 11"),
    ],
)
def test_a_count_is_a_whole_number_in_range(n: object, message: str) -> None:
    with pytest.raises(ConfigurationError) as raised:
        check_count(n, maximum=10)
    assert str(raised.value) == message
    assert check_count(10, maximum=10) == 10


@pytest.mark.parametrize(
    "url",
    [
        "127.0.0.1:8000",  # no scheme
        "ftp://127.0.0.1:8000",
        "http://",  # no host
        "http://127.0.0.1:99999",  # a port out of range
        "http://127.0.0.1:0",
        "http://127.0.0.1:port",
        8000,
    ],
)
def test_an_endpoint_must_be_an_http_url_with_a_host(url: object) -> None:
    with pytest.raises(ConfigurationError, match="must be an http:// or https:// URL with a host"):
        check_endpoint_url(url, "endpoint_url")


def test_an_endpoint_url_is_given_back() -> None:
    for url in ("http://127.0.0.1:8000", "https://dynamodb.eu-west-1.amazonaws.com"):
        assert check_endpoint_url(url, "endpoint_url") == url


@pytest.mark.parametrize("region", ["", "-eu", "eu_west_1", "eu-west-1-", "x" * 64, None])
def test_a_region_must_be_an_aws_region_name(region: object) -> None:
    with pytest.raises(ConfigurationError, match="must be an AWS region name"):
        check_region(region, "region_name")


def test_a_region_name_is_given_back() -> None:
    assert check_region("eu-west-1", "region_name") == "eu-west-1"
    assert check_region("local", "region_name") == "local"


# --- the number codec --------------------------------------------------------------------------


def test_numbers_are_n_values_up_to_38_digits_either_sign() -> None:
    assert number(0) == {"N": "0"}
    assert number(MAX_NUMBER) == {"N": "9" * 38}
    assert number(-MAX_NUMBER) == {"N": "-" + "9" * 38}
    for n in (MAX_NUMBER + 1, -MAX_NUMBER - 1):
        with pytest.raises(NumberOutOfRange) as raised:
            number(n)
        assert raised.value.value == n


@pytest.mark.parametrize(
    ("item", "expected"),
    [
        (None, 0),  # no counter item
        ({}, 0),
        ({"value": {"N": "42"}}, 42),
        ({"value": {"N": "1E+2"}}, 100),  # what some servers send: a Decimal's text
        ({"value": {"N": "7.000"}}, 7),
        ({"value": {"N": "9" * 38}}, MAX_NUMBER),
    ],
)
def test_a_counter_value_is_read_from_its_number(item: Any, expected: int) -> None:
    assert parse_counter(item, "orders", "value") == expected


@pytest.mark.parametrize(
    "found",
    [
        None,  # the counter item has no value attribute
        {"S": "42"},
        {"N": "1.5"},
        {"N": "-1"},
        {"N": "Infinity"},
        {"N": "1", "S": "1"},
    ],
)
def test_a_counter_value_that_is_not_a_whole_number_is_invalid(found: Any) -> None:
    item = {"pk": {"S": "orders"}} if found is None else {"value": found}
    with pytest.raises(CounterValueInvalid) as raised:
        parse_counter(item, "orders", "value")
    assert (raised.value.key, raised.value.attribute, raised.value.found) == (
        "orders",
        "value",
        found,
    )


# --- item sizes --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "size"),
    [
        ({"S": "héllo"}, 6),  # UTF-8 bytes
        ({"N": "12345"}, 4),  # 1 byte per 2 significant digits, plus 1
        ({"N": "-0.00120"}, 2),  # leading and trailing zeros are not significant
        ({"N": "1E+5"}, 2),
        ({"B": b"\x00\x01\x02"}, 3),
        ({"SS": ["ab", "c"]}, 3),  # a set: the sum of its elements
        ({"NS": ["1", "22"]}, 4),
        ({"BS": [b"ab", b"c"]}, 3),
        ({"L": [{"S": "ab"}, {"N": "1"}]}, 3 + (1 + 2) + (1 + 2)),  # 3, and 1 per element
        ({"M": {"x": {"S": "ab"}}}, 3 + 1 + (1 + 2)),  # names count inside maps too
        ({"BOOL": True}, 1),
        ({"NULL": True}, 1),
    ],
)
def test_an_item_is_sized_by_dynamodbs_rules(value: dict[str, Any], size: int) -> None:
    assert item_size({"a": value}) == 1 + size  # the name, then the value


def test_an_item_over_400_kb_is_refused_giving_sizes_only() -> None:
    name = "payload"
    fits = {name: {"S": "x" * (MAX_ITEM_BYTES - len(name))}}
    check_item_size(fits)  # exactly 400 KB: fits
    over = {name: {"S": "secret" + "x" * (MAX_ITEM_BYTES - len(name) - 5)}}
    with pytest.raises(ConfigurationError, match=r"^the item is 409,601 bytes; .* 409,600") as e:
        check_item_size(over)
    assert "secret" not in str(e.value)


# --- plain values and AttributeValues -----------------------------------------------------------


def test_plain_values_make_the_round_trip() -> None:
    item = {
        "n": 3,
        "d": Decimal("1.25"),
        "s": "x",
        "b": b"\x00",
        "t": True,
        "none": None,
        "l": [1, "a"],
        "m": {"k": "v"},
        "ss": {"a", "b"},
    }
    serialized = serialize(item)
    assert serialized["n"] == {"N": "3"} and serialized["m"] == {"M": {"k": {"S": "v"}}}
    assert deserialize(serialized) == {**item, "n": Decimal(3), "l": [Decimal(1), "a"]}


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        (1.5, "a float (use int or Decimal) that has no DynamoDB type"),
        (Decimal("NaN"), "NaN or infinity that has no DynamoDB type"),
        (Decimal("Infinity"), "NaN or infinity that has no DynamoDB type"),
        (object(), "a value that has no DynamoDB type"),
        (Decimal("1" * 39), "a number with more than 38 significant digits"),
        (set(), "an empty set, which DynamoDB does not store"),
        ([1, [set()]], "an empty set, which DynamoDB does not store"),  # anywhere inside
        ({"inner": {"deeper": set()}}, "an empty set, which DynamoDB does not store"),
    ],
)
def test_a_value_dynamodb_cannot_store_is_refused_without_showing_it(
    value: object, problem: str
) -> None:
    with pytest.raises(ConfigurationError) as raised:
        serialize({"ok": 1, "bad": value})
    message = str(raised.value)
    assert message.startswith(f"attribute 'bad' ({type(value).__name__}) holds {problem};")
    assert raised.value.__cause__ is None and raised.value.__suppress_context__


def test_sets_and_lists_that_hold_values_are_stored() -> None:
    serialized = serialize({"l": [{"a"}], "m": {"k": [1]}})
    assert serialized == {"l": {"L": [{"SS": ["a"]}]}, "m": {"M": {"k": {"L": [{"N": "1"}]}}}}


# --- Numbering's checks -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "fields",
    [
        {"offset": -1},
        {"offset": MAX_NUMBER + 1},
        {"offset": True},
        {"offset": "1"},
        {"stride": 0},
        {"stride": 10**12 + 1},
        {"max_value": 0},
    ],
)
def test_a_numbering_out_of_range_is_refused(fields: dict[str, Any]) -> None:
    with pytest.raises(ConfigurationError):
        Numbering(**fields)


@pytest.mark.parametrize(
    "text", ["", "stride=1", "offset=1", "stride=x offset=1", "stride=1 offset=1 color=2", 7]
)
def test_a_numbering_text_aioseq_did_not_write_is_refused(text: Any) -> None:
    with pytest.raises(ConfigurationError, match="not a counter numbering"):
        Numbering.decode(text)
