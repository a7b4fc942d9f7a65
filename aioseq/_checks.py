"""The checks of what callers pass: keys, counts, durations, table and attribute names,
endpoints and regions. Each returns the value it checked or raises
[`ConfigurationError`][aioseq.errors.ConfigurationError]; no I/O."""

from __future__ import annotations

import math
import re
import urllib.parse

from aioseq._limits import MAX_KEY_ATTRIBUTE_NAME_BYTES, MAX_NUMBER, MAX_PARTITION_KEY_BYTES
from aioseq.errors import ConfigurationError

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
