"""The bottom of the house: pure values and their validation, with no I/O.

DynamoDB's limits, the names aioseq keeps for itself, the checks of keys, counts, durations,
names, endpoints and regions, the number codec, the sizing of items by DynamoDB's rules, and
the conversion of plain Python values to AttributeValues and back. Everything above imports
from here; this module imports nothing from aioseq but its errors.
"""

from __future__ import annotations

import math
import re
import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from boto3.dynamodb.types import TypeDeserializer, TypeSerializer  # type: ignore[import-untyped]

from aioseq.errors import ConfigurationError, CounterValueInvalid, NumberOutOfRange

#: DynamoDB's Number type holds at most 38 significant digits.
MAX_DIGITS = 38
#: The largest sequence number aioseq hands out: 10**38 - 1.
MAX_NUMBER = 10**MAX_DIGITS - 1

#: JavaScript's ``Number.MAX_SAFE_INTEGER`` (2**53 - 1): pass it as ``max_value=`` when the
#: numbers are read by JavaScript, which loses precision above it.
MAX_SAFE_INTEGER = 2**53 - 1

#: DynamoDB's limits on key values, in UTF-8 bytes: a partition key value (a counter key, an
#: item collection) and a sort key value.
MAX_PARTITION_KEY_BYTES = 2048
MAX_SORT_KEY_BYTES = 1024
#: DynamoDB's largest item (names and values), in bytes.
MAX_ITEM_BYTES = 400 * 1024
#: DynamoDB's longest name of a key attribute, in UTF-8 bytes.
MAX_KEY_ATTRIBUTE_NAME_BYTES = 255

#: The attributes aioseq keeps for itself, so that a lost answer is resolved by checking,
#: never by guessing (see `aioseq.strategies._recent_writes`):
#:
#: - ``aioseq_token`` (S) on every item the sort-key strategy stores: the idempotency token of
#:   the ``put`` call that stored it;
#: - ``aioseq_writes`` (N) on a counter item: how many conditional writes (optimistic and
#:   gapless strategies) have moved it;
#: - ``aioseq_tokens`` (L of S) on a counter item: the tokens of its last
#:   [`RECENT_WRITES`][aioseq.config.RECENT_WRITES] conditional writes, write ``w`` (counting
#:   from 0) in slot ``w % RECENT_WRITES``.
#: - ``aioseq_numbering`` (S) on a counter item: the [`Numbering`][aioseq.Numbering] its values are
#:   handed out under, recorded by the first write (``"stride=3 offset=2"``).
#: - ``aioseq_updated_at`` (S) on a counter item: when an operator's write (``set_counter``,
#:   ``ensure_at_least``) last moved it, ISO-8601 UTC (``"2025-01-31T12:00:00.000000+00:00"``).
#: - ``aioseq_turn`` (L of S) on a counter item, only once writers in several processes met on
#:   it: the queue of writers waiting to write, entries ``"<token>:<size>:<lease_ms>"`` (see
#:   `aioseq.strategies._turn`).
TOKEN_ATTRIBUTE = "aioseq_token"
WRITES_ATTRIBUTE = "aioseq_writes"
TOKENS_ATTRIBUTE = "aioseq_tokens"
NUMBERING_ATTRIBUTE = "aioseq_numbering"
UPDATED_AT_ATTRIBUTE = "aioseq_updated_at"
TURN_ATTRIBUTE = "aioseq_turn"
RESERVED_ATTRIBUTES = frozenset(
    {
        TOKEN_ATTRIBUTE,
        WRITES_ATTRIBUTE,
        TOKENS_ATTRIBUTE,
        NUMBERING_ATTRIBUTE,
        UPDATED_AT_ATTRIBUTE,
        TURN_ATTRIBUTE,
    }
)
#: How many conditional writes a counter item remembers the tokens of. A retry whose earlier
#: attempt's answer was lost can tell its own write from a rival's while fewer than this many
#: writes followed it. 32 tokens of 16 characters keep a counter item under 1 KB (1 WCU).
RECENT_WRITES = 32

_TABLE_NAME = re.compile(r"[A-Za-z0-9_.-]{3,255}")


def check_table_name(name: object, what: str = "table name") -> str:
    """A DynamoDB table name: 3 to 255 of ``A-Z a-z 0-9 _ - .``.
    Raises [`ConfigurationError`][aioseq.errors.ConfigurationError]."""
    if not isinstance(name, str) or not _TABLE_NAME.fullmatch(name):
        raise ConfigurationError(
            f"{what} must be a str of 3 to 255 characters among A-Z a-z 0-9 _ - .: {name!r}"
        )
    return name


def check_attribute_name(name: object, what: str = "attribute name") -> str:
    """An attribute name: a non-empty ``str`` of at most 255 UTF-8 bytes (DynamoDB's limit for
    key attributes). Any characters are fine: aioseq passes names only through
    ``ExpressionAttributeNames``, never into an expression's text.
    Raises [`ConfigurationError`][aioseq.errors.ConfigurationError]."""
    if not isinstance(name, str):
        raise ConfigurationError(f"{what} must be a str, not {type(name).__name__}")
    try:
        size = len(name.encode("utf-8"))
    except UnicodeEncodeError:
        raise ConfigurationError(f"{what} must be valid Unicode (no lone surrogates)") from None
    if not 1 <= size <= MAX_KEY_ATTRIBUTE_NAME_BYTES:
        raise ConfigurationError(
            f"{what} must be 1 to {MAX_KEY_ATTRIBUTE_NAME_BYTES} UTF-8 bytes, not {size}"
        )
    return name


def check_seconds(value: object, what: str) -> float:
    """A duration in seconds: a finite number > 0 (``bool``, NaN and infinity are not).
    Raises [`ConfigurationError`][aioseq.errors.ConfigurationError]."""
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float))
        or not math.isfinite(value)
        or not value > 0
    ):
        raise ConfigurationError(f"{what} must be a finite number of seconds > 0, not {value!r}")
    return float(value)


AttributeValue = dict[str, Any]
Item = dict[str, AttributeValue]

_serializer = TypeSerializer()
_deserializer = TypeDeserializer()


#: botocore's own rule for region names (``botocore.utils.validate_region_name``).
_REGION = re.compile(r"[a-zA-Z0-9](?:[a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?")


def check_endpoint_url(url: object, what: str) -> str:
    """An endpoint URL: ``http://`` or ``https://`` with a host, e.g.
    ``http://127.0.0.1:8000``. Raises [`ConfigurationError`][aioseq.errors.ConfigurationError]."""
    parts = urllib.parse.urlsplit(url) if isinstance(url, str) else None
    try:
        port_ok = parts is not None and (parts.port is None or parts.port > 0)
    except ValueError:
        port_ok = False
    if parts is None or parts.scheme not in ("http", "https") or not parts.hostname or not port_ok:
        raise ConfigurationError(
            f"{what} must be an http:// or https:// URL with a host, such as"
            f" 'http://127.0.0.1:8000', not {url!r}"
        )
    return str(url)


def check_region(region: object, what: str) -> str:
    """An AWS region name such as ``eu-west-1``. Raises
    [`ConfigurationError`][aioseq.errors.ConfigurationError]."""
    if not isinstance(region, str) or not _REGION.fullmatch(region):
        raise ConfigurationError(
            f"{what} must be an AWS region name such as 'eu-west-1', not {region!r}"
        )
    return region


def check_key(
    key: object, what: str = "counter key", *, maximum: int = MAX_PARTITION_KEY_BYTES
) -> str:
    """Validate a counter key / partition key value: a non-empty ``str`` of valid Unicode and
    at most ``maximum`` UTF-8 bytes (DynamoDB's 2048 for a partition key). Any characters are
    fine: key values travel as AttributeValues, never in an expression's text.
    Raises [`ConfigurationError`][aioseq.errors.ConfigurationError]."""
    if not isinstance(key, str):
        raise ConfigurationError(f"{what} must be a str, not {type(key).__name__}")
    if not key:
        raise ConfigurationError(f"{what} must not be empty")
    try:
        size = len(key.encode("utf-8"))
    except UnicodeEncodeError:
        raise ConfigurationError(f"{what} must be valid Unicode (no lone surrogates)") from None
    if size > maximum:
        raise ConfigurationError(f"{what} must be at most {maximum} UTF-8 bytes, not {size}")
    return key


def check_count(n: object, what: str = "count", *, maximum: int = MAX_NUMBER) -> int:
    """Validate a positive whole count (``bool`` is not one). Raises
    [`ConfigurationError`][aioseq.errors.ConfigurationError]."""
    if not isinstance(n, int) or isinstance(n, bool):
        raise ConfigurationError(f"{what} must be an int, not {type(n).__name__}")
    if not 1 <= n <= maximum:
        raise ConfigurationError(f"{what} must be an int from 1 to {maximum}, not {n}")
    return n


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


@dataclass(frozen=True)
class Numbering:
    """How a counter's values become numbers: value ``k`` (1, 2, 3, ...) is the number
    ``offset + (k - 1) * stride``, and no number passes ``max_value``. The default numbering
    hands out the values themselves (1, 2, 3, ...). Several deployments that share a key space
    give each counter its own ``offset`` in ``1..stride`` and never collide (MySQL's
    ``auto_increment_increment`` / ``auto_increment_offset``).

    A counter item records its numbering on its first write, in the
    [`NUMBERING_ATTRIBUTE`][aioseq.config.NUMBERING_ATTRIBUTE] attribute, as
    [`encode()`][aioseq.Numbering.encode] writes it; an object that asks for another numbering on
    the same counter is refused ([`NumberingMismatch`][aioseq.errors.NumberingMismatch]).

    Attributes:
        stride: the step between two numbers (1 .. 10**12).
        offset: the first number (0 .. ``MAX_NUMBER``).
        max_value: the highest number, or ``None`` for no limit of the counter's own
            (``MAX_NUMBER``).

    Raises:
        ConfigurationError: a value outside those ranges, or not an ``int``.
    """

    stride: int = 1
    offset: int = 1
    max_value: int | None = None

    def __post_init__(self) -> None:
        check_count(self.stride, "stride", maximum=10**12)
        if (
            not isinstance(self.offset, int)
            or isinstance(self.offset, bool)
            or not 0 <= self.offset <= MAX_NUMBER
        ):
            raise ConfigurationError(f"offset must be an int from 0 to 10**38 - 1: {self.offset!r}")
        if self.max_value is not None:
            check_count(self.max_value, "max_value")

    def number(self, value: int) -> int:
        """The number of counter value ``value`` (>= 1)."""
        return self.offset + (value - 1) * self.stride

    def count_up_to(self, highest: int) -> int:
        """How many of this numbering's numbers are ``<= highest``: the counter value whose
        number is the highest one not above it (0 when none is that low)."""
        if highest < self.offset:
            return 0
        return (highest - self.offset) // self.stride + 1

    def encode(self) -> str:
        """The attribute's text: ``"stride=S offset=O"``, then ``" max_value=M"`` if set."""
        text = f"stride={self.stride} offset={self.offset}"
        return text if self.max_value is None else f"{text} max_value={self.max_value}"

    @classmethod
    def decode(cls, text: str) -> Numbering:
        """The numbering [`encode()`][aioseq.Numbering.encode] wrote as ``text``.

        Raises:
            ConfigurationError: ``text`` is not what [`encode()`][aioseq.Numbering.encode] writes.
        """
        fields: dict[str, int] = {}
        for part in text.split(" ") if isinstance(text, str) else [""]:
            name, _, digits = part.partition("=")
            if name not in ("stride", "offset", "max_value") or not digits.isdigit():
                raise ConfigurationError(f"not a counter numbering: {text!r}")
            fields[name] = int(digits)
        if "stride" not in fields or "offset" not in fields:
            raise ConfigurationError(f"not a counter numbering: {text!r}")
        return cls(**fields)

    def __str__(self) -> str:
        return self.encode()
