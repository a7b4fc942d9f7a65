"""Items as DynamoDB stores them: AttributeValues to and from plain Python values, the number
codec, item sizes by DynamoDB's rules, and the one check an item gets before it is sent
(`storable_item()`). No I/O."""

from __future__ import annotations

from collections.abc import Mapping
from decimal import Decimal
from typing import Any

from boto3.dynamodb.types import TypeDeserializer, TypeSerializer  # type: ignore[import-untyped]

from aioseq._checks import check_key
from aioseq._limits import MAX_ITEM_BYTES, MAX_NUMBER
from aioseq.errors import ConfigurationError, CounterValueInvalid, NumberOutOfRange

AttributeValue = dict[str, Any]


Item = dict[str, AttributeValue]


_serializer = TypeSerializer()


_deserializer = TypeDeserializer()


def number(n: int) -> AttributeValue:
    """An ``N`` AttributeValue. Raises [`NumberOutOfRange`][aioseq.errors.NumberOutOfRange] beyond
    38 digits."""
    if not -MAX_NUMBER <= n <= MAX_NUMBER:
        raise NumberOutOfRange(n)
    return {"N": str(n)}


def parse_counter(item: Mapping[str, AttributeValue] | None, key: str, attribute: str) -> int:
    """The counter's value: the whole number ``0 <= v <= 10**38 - 1`` in ``item[attribute]``;
    0 when there is no counter item (``item`` is ``None`` or empty).

    Raises:
        CounterValueInvalid: the counter item exists without the attribute, or the attribute
            is not a Number, or not a whole one, or is negative.
    """
    if not item:
        return 0
    value = item.get(attribute)
    if value is None or len(value) != 1 or "N" not in value:
        raise CounterValueInvalid(key, attribute, value)
    text = value["N"]
    if (
        type(text) is str and text.isdigit() and text.isascii()
    ):  # the usual answer: plain digits, no Decimal needed
        return int(text)
    parsed = Decimal(text)
    if not parsed.is_finite() or parsed != parsed.to_integral_value() or parsed < 0:
        raise CounterValueInvalid(key, attribute, value)
    return int(parsed)


def item_size(item: Mapping[str, AttributeValue]) -> int:
    """The size DynamoDB counts for an item (AttributeValues), in bytes, by the rules of its
    guide ("Item sizes and formats"): names and strings in UTF-8 bytes, binary in bytes, a
    number 1 byte per 2 significant digits plus 1, a boolean or null 1, a list or map 3 plus 1
    per element, a set the sum of its elements. Rounded up, so an upper bound."""
    return sum(
        len(name.encode("utf-8", "surrogatepass")) + _value_size(v) for name, v in item.items()
    )


def _value_size(value: AttributeValue) -> int:
    kind, data = next(iter(value.items()))
    if kind == "S":
        return len(str(data).encode("utf-8", "surrogatepass"))
    if kind == "N":
        mantissa = str(data).lstrip("+-").partition("e")[0].partition("E")[0]
        digits = max(1, len(mantissa.replace(".", "").strip("0")))
        return (digits + 1) // 2 + 1
    if kind == "B":
        return len(data)
    if kind in ("SS", "NS", "BS"):
        return sum(_value_size({kind[0]: element}) for element in data)
    if kind == "L":
        return 3 + sum(1 + _value_size(element) for element in data)
    if kind == "M":
        return 3 + sum(1 + item_size({name: element}) for name, element in data.items())
    return 1  # BOOL, NULL


def write_units(size_bytes: int, *, transactional: bool = False) -> int:
    """WCU of a write of an item of ``size_bytes``: ``ceil(size / 1 KB)``, at least 1; twice
    that in a transaction ("Managing throughput for transactions")."""
    units = max(1, -(-size_bytes // 1024))
    return 2 * units if transactional else units


def check_item_size(item: Mapping[str, AttributeValue]) -> None:
    """Raise [`ConfigurationError`][aioseq.errors.ConfigurationError] if ``item`` would not fit
    DynamoDB's 400 KB item limit (by `item_size()`). The message gives sizes only, never the
    item."""
    size = item_size(item)
    if size > MAX_ITEM_BYTES:
        raise ConfigurationError(
            f"the item is {size:,} bytes; DynamoDB stores at most {MAX_ITEM_BYTES:,} bytes"
            " (400 KB) per item, names included"
        )


def serialize(item: Mapping[str, Any]) -> Item:
    """Plain Python values -> DynamoDB AttributeValues (boto3's ``TypeSerializer``: ``int`` and
    ``Decimal`` become N, ``str`` S, ``bytes`` B, ``dict`` M, ``list`` L, ``set`` SS/NS/BS...).

    Raises:
        ConfigurationError: a value has no DynamoDB type (``float`` included: use ``Decimal``;
            NaN and infinity), or is an empty set, anywhere in the item (DynamoDB refuses empty
            sets; some local servers store them).
    """
    serialized: Item = {}
    for name, value in item.items():
        try:
            serialized[str(name)] = _serializer.serialize(value)
        except ArithmeticError:  # boto3's decimal context traps rounding
            problem = "a number with more than 38 significant digits"
        except (TypeError, ValueError) as exc:  # boto3's message shows the value: not ours
            text = str(exc)
            if "Float" in text:
                problem = "a float (use int or Decimal)"
            elif "NaN" in text or "Infinity" in text:
                problem = "NaN or infinity"
            else:
                problem = "a value"
            problem += " that has no DynamoDB type"
        else:
            if not _has_empty_set(serialized[str(name)]):
                continue
            problem = "an empty set, which DynamoDB does not store"
        raise ConfigurationError(
            f"attribute {name!r} ({type(value).__name__}) holds {problem}; DynamoDB stores"
            " int, Decimal, str, bytes, bool, None, and lists, dicts and non-empty sets of them"
        ) from None
    return serialized


def _has_empty_set(value: AttributeValue) -> bool:
    """Whether an AttributeValue is, or holds in a list or map, an empty set."""
    kind, data = next(iter(value.items()))
    if kind in ("SS", "NS", "BS"):
        return not data
    if kind == "L":
        return any(_has_empty_set(element) for element in data)
    if kind == "M":
        return any(_has_empty_set(element) for element in data.values())
    return False


def deserialize(item: Mapping[str, AttributeValue]) -> dict[str, Any]:
    """DynamoDB AttributeValues -> plain Python values (numbers become ``Decimal``)."""
    return {name: _deserializer.deserialize(value) for name, value in item.items()}


def storable_item(item: Mapping[str, Any], key_limits: Mapping[str, int]) -> Item:
    """``item`` serialized (`serialize()`) and checked as DynamoDB would: each string key value
    named in ``key_limits`` (attribute name -> most UTF-8 bytes) 1 to that many bytes, and the
    whole item at most 400 KB (`check_item_size()`).

    Raises:
        ConfigurationError: one of those does not hold (the message never shows a value).
    """
    serialized = serialize(item)
    for name, maximum in key_limits.items():
        value = serialized.get(name)
        if value is not None and "S" in value:
            check_key(value["S"], f"the item's key attribute {name!r}", maximum=maximum)
    check_item_size(serialized)
    return serialized
