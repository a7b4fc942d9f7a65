"""Invoice series: a gapless counter per calendar period, in the seller's time zone.

A [`Series`][aioseq.Series] numbers documents from 1 again in every period (year, month, day,
fiscal year). Each period's counter is an ordinary counter whose counter key is the series key
and the period's label, ``f"{key}/{label}"`` (``"invoices-acme/2026"``): the period lives in
DynamoDB, not in the process, so a process started after the boundary, or one idle across it,
numbers the new period from 1 and the old one where it stood. The period of a document is
its own date's, in the series' zone: never the process's clock. The story, and what some
countries' rules ask: docs/series.md.
"""

from __future__ import annotations

import inspect
import math
import re
from collections.abc import Callable, Mapping
from datetime import date, datetime, timedelta, timezone
from typing import Any, Generic, TypeVar
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from aioseq._checks import check_key
from aioseq._limits import MAX_PARTITION_KEY_BYTES
from aioseq.errors import ConfigurationError, FutureDated, PeriodClosed
from aioseq.formatting import IdFormat

__all__ = ["DEFAULT_FUTURE_SECS", "PERIOD_SEPARATOR", "Series", "period_counter_key"]

C = TypeVar("C")

#: Between the series key and the period label in a period's counter key. Series keys may not
#: hold it and labels never do, so two series' period counters never share a key.
PERIOD_SEPARATOR = "/"
#: How far ahead of now a document may be dated by default, in seconds: clocks disagree by
#: seconds, not by minutes.
DEFAULT_FUTURE_SECS = 300.0
#: ``"year"``, ``"month"``, ``"day"``, ``"fiscal-year:M"``.
_PERIOD = re.compile(r"(year|month|day)|fiscal-year:([1-9]|1[0-2])")
#: A period counter key: the series key, the separator, a label.
_PERIOD_KEY = re.compile(r"([^/]+)/([0-9]{4}(?:-[0-9]{2}){0,2})")
#: How many of a date's fields (year, month, day) a period's label shows, and its length.
_FIELDS = {"year": 1, "fiscal-year": 1, "month": 2, "day": 3}
_WIDTHS = {"year": 4, "fiscal-year": 4, "month": 7, "day": 10}


def period_counter_key(key: str) -> tuple[str, str] | None:
    """The series key and period label of a period's counter key (``"invoices/2026"`` ->
    ``("invoices", "2026")``), or ``None`` for a key of another shape. The shape alone: an
    ordinary counter may have such a key too."""
    found = _PERIOD_KEY.fullmatch(key)
    return (found.group(1), found.group(2)) if found else None


class Series(Generic[C]):
    """Documents numbered 1, 2, 3, ... again in every period, without holes with a gapless
    strategy. Made by [`store.series()`][aioseq.DynamoStore.series]; cheap to make (no
    request), so code may make one per request.

        invoices = store.series("invoices-acme", period="year", tz="Europe/Paris")
        counter = invoices.at(issued)                   # the document's own aware datetime
        number = await counter.put(lambda n: {"pk": counter.key, "sk": n, ...})

    ``at()`` returns the period's counter: the strategy's object the store shares for the
    period's counter key (``f"{key}/{label}"``), so idempotency keys, group commit, item
    layouts and statistics work as for any counter, and its cost is the strategy's. Periods
    are calendar periods in ``tz``, daylight saving time included: a period begins at the
    first instant whose local date is in it.

    Parameters:
        key: the series key: a non-empty ``str`` without ``/``, at most 2,037 UTF-8 bytes.
        factory: makes the counter of a period counter key (the store's factory, such as
            ``store.transactional_counter``), called as ``factory(counter_key, **options)``.
        period: ``"year"`` (label ``"2026"``), ``"month"`` (``"2026-03"``), ``"day"``
            (``"2026-03-31"``), or ``"fiscal-year:M"``: a year from the 1st of month M,
            labelled by the calendar year it begins in.
        tz: an IANA time zone name (``"Europe/Paris"``): the seller's.
        grace_secs: how long after its end a period still takes documents, in seconds
            (``None``: no limit).
        future_secs: how far ahead of now a document may be dated, in seconds (``None``: no
            limit).
        id_format: the documents' [`IdFormat`][aioseq.IdFormat]; it must have a ``{period}``
            token (else two periods' numbers look alike). The counters' ``max_value`` is
            its ``max_number`` unless ``options`` say (and then it must fit).
        options: the factory's other arguments (``group=``, ``max_value=``, ...).

    Raises:
        ConfigurationError: a bad key, period, zone, grace, tolerance, format or option.
    """

    def __init__(
        self,
        key: str,
        factory: Callable[..., C],
        *,
        period: str,
        tz: str,
        grace_secs: float | None = None,
        future_secs: float | None = DEFAULT_FUTURE_SECS,
        id_format: IdFormat | None = None,
        options: Mapping[str, Any] | None = None,
    ) -> None:
        label_room = len(PERIOD_SEPARATOR) + len("2026-03-31")
        self.key = check_key(key, "series key", maximum=MAX_PARTITION_KEY_BYTES - label_room)
        if PERIOD_SEPARATOR in key:
            raise ConfigurationError(
                f"a series key may not hold {PERIOD_SEPARATOR!r} (it separates the series key"
                f" from the period label in the period's counter key): {key!r}"
            )
        found = _PERIOD.fullmatch(period) if isinstance(period, str) else None
        if found is None:
            raise ConfigurationError(
                "period must be 'year', 'month', 'day' or 'fiscal-year:M' (M from 1 to 12),"
                f" not {period!r}"
            )
        self.period = period
        self._kind = found.group(1) or "fiscal-year"
        self._first_month = int(found.group(2) or 1)
        self.tz = _zone(tz)
        self.grace_secs = _seconds_or_none(grace_secs, "grace_secs")
        self.future_secs = _seconds_or_none(future_secs, "future_secs")
        if id_format is not None and not (isinstance(id_format, IdFormat) and id_format.has_period):
            raise ConfigurationError(
                f"a series' id_format must have a {{period}} token, or the numbers of two"
                f" periods look alike: {id_format!r}"
            )
        self.id_format = id_format
        options = dict(options or {})
        if id_format is not None:
            if "max_value" in options:
                id_format.check_counter(options["max_value"])
            else:
                options["max_value"] = id_format.max_number
        try:
            inspect.signature(factory).bind(key, **options)
        except TypeError as exc:
            raise ConfigurationError(f"series {key!r}: {exc}") from None
        self.options = options
        self._factory = factory

    def period_of(self, on: datetime | date) -> str:
        """The label of the period ``on`` falls in, in the series' zone: ``"2026"``,
        ``"2026-03"`` or ``"2026-03-31"``. No request.

        Parameters:
            on: the document's legal date and time, an aware ``datetime``; or a ``date``,
                taken as a date in the series' zone.

        Raises:
            ConfigurationError: a naive ``datetime`` (a wall time names no instant, so no
                period), or not a date.
        """
        local = _local_date(on, self.tz)
        if self._kind == "fiscal-year" and local.month < self._first_month:
            return f"{local.year - 1:04d}"
        return f"{local.year:04d}-{local.month:02d}-{local.day:02d}"[: _WIDTHS[self._kind]]

    def bounds(self, label: str) -> tuple[datetime, datetime]:
        """The first instant of period ``label`` and the first instant after it, aware, in
        the series' zone (a year: 1 January 00:00 to the next).

        Raises:
            ConfigurationError: ``label`` is not a label of this series' period.
        """
        first = self._first_day(label)
        try:
            if self._kind == "day":
                after = first + timedelta(days=1)
            elif self._kind == "month":
                after = (first + timedelta(days=31)).replace(day=1)
            else:
                after = first.replace(year=first.year + 1)
        except (ValueError, OverflowError):
            raise ConfigurationError(f"period {label!r} ends past year 9999") from None
        return _start(first, self.tz), _start(after, self.tz)

    def counter_key(self, label: str) -> str:
        """The counter key of period ``label``: ``f"{key}/{label}"``.

        Raises:
            ConfigurationError: ``label`` is not a label of this series' period.
        """
        self._first_day(label)
        return f"{self.key}{PERIOD_SEPARATOR}{label}"

    def counter(self, label: str) -> C:
        """The counter of period ``label``, with no check of dates (to read it, or to number
        in a closed period on purpose). No request.

        Raises:
            ConfigurationError: ``label`` is not a label of this series' period; the
                strategy's factory's errors.
        """
        return self._factory(self.counter_key(label), **self.options)

    def at(self, on: datetime | date, *, now: datetime | None = None) -> C:
        """The counter of the period a document dated ``on`` belongs to, after checking that
        the period takes it. No request: a refusal writes nothing.

        Parameters:
            on: the document's legal date and time, as for
                [`period_of()`][aioseq.Series.period_of].
            now: the time to judge by, aware (default: the wall clock, UTC).

        Raises:
            PeriodClosed: ``now`` is past the period's end plus ``grace_secs``.
            FutureDated: ``on`` is more than ``future_secs`` ahead of ``now``.
            ConfigurationError: a naive ``on`` or ``now``; the strategy's factory's errors.
        """
        label = self.period_of(on)
        now = datetime.now(timezone.utc) if now is None else now
        if not isinstance(now, datetime) or now.utcoffset() is None:
            raise ConfigurationError(f"now must be an aware datetime, not {now!r}")
        # Elapsed time is counted in UTC: arithmetic on two datetimes of one zone is on their
        # wall clocks, an hour off across a daylight saving change.
        after = self.bounds(label)[1].astimezone(timezone.utc)
        instant = (on if isinstance(on, datetime) else _start(on, self.tz)).astimezone(timezone.utc)
        utc_now = now.astimezone(timezone.utc)
        if self.future_secs is not None and (instant - utc_now).total_seconds() > self.future_secs:
            raise FutureDated(self.key, on, now, self.future_secs)
        if self.grace_secs is not None:
            closed_at = after + timedelta(seconds=self.grace_secs)
            if utc_now >= closed_at:
                raise PeriodClosed(self.key, label, closed_at.astimezone(self.tz), on, now)
        return self._factory(f"{self.key}{PERIOD_SEPARATOR}{label}", **self.options)

    def _first_day(self, label: str) -> date:
        """The local date period ``label`` begins on."""
        fields = _FIELDS[self._kind]
        found = _PERIOD_KEY.fullmatch(f"k/{label}") if isinstance(label, str) else None
        try:
            if found is None or label.count("-") != fields - 1:
                raise ValueError
            year, month, day = [*map(int, label.split("-")), 1, 1][:3]
            first = date(year, month if fields > 1 else self._first_month, day)
        except ValueError:
            raise ConfigurationError(
                f"series {self.key!r} ({self.period}) has no period {label!r}"
            ) from None
        return first

    def __repr__(self) -> str:
        grace = "" if self.grace_secs is None else f" grace_secs={self.grace_secs:.10g}"
        return f"<Series key={self.key!r} period={self.period!r} tz={self.tz.key!r}{grace}>"


def _local_date(on: object, tz: ZoneInfo) -> date:
    """``on``'s date in ``tz`` (a ``date`` is one already)."""
    if isinstance(on, datetime):
        if on.utcoffset() is None:
            raise ConfigurationError(
                f"a naive datetime ({on.isoformat()}) names no instant, so no period: pass the"
                " document's date and time with its zone, such as"
                " datetime(2026, 12, 31, 23, 59, tzinfo=ZoneInfo('Europe/Paris'))"
            )
        return on.astimezone(tz).date()
    if isinstance(on, date):
        return on
    raise ConfigurationError(f"a document's date is a datetime or a date, not {on!r}")


def _start(day: date, tz: ZoneInfo) -> datetime:
    """The first instant of local date ``day`` in ``tz``: local midnight, or, where midnight
    is skipped (a daylight saving change at 00:00), the instant the clocks jump (``fold=0``
    takes the offset before the jump)."""
    return datetime(day.year, day.month, day.day, tzinfo=tz)


def _zone(tz: object) -> ZoneInfo:
    if not isinstance(tz, str):
        raise ConfigurationError(f"tz must be an IANA time zone name, not {tz!r}")
    try:
        return ZoneInfo(tz)
    except (ZoneInfoNotFoundError, ValueError):
        raise ConfigurationError(
            f"tz {tz!r} is not an IANA time zone this system knows (such as 'Europe/Paris');"
            " where the system has no time zone database (Windows, slim images), install"
            " the tzdata package"
        ) from None


def _seconds_or_none(value: object, what: str) -> float | None:
    if value is None:
        return None
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float))
        or not math.isfinite(value)
        or value < 0
    ):
        raise ConfigurationError(f"{what} must be a finite number of seconds >= 0, not {value!r}")
    return float(value)
