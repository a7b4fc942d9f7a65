"""Invoice series (aioseq.series) on the fake at the Transport seam: periods in the seller's zone,
daylight saving time, late and future-dated documents, restarts, every strategy, Region
scopes, and identifiers with the period. The same on moto and DynamoDB Local:
tests/integration/test_series.py.
"""

from __future__ import annotations

import asyncio
from datetime import date, datetime, timedelta, timezone
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from aioseq import (
    ConfigurationError,
    DynamoStore,
    FutureDated,
    IdFormat,
    PeriodClosed,
    RegionScope,
    RetryPolicy,
    Series,
    TransactionalCounter,
)
from aioseq.series import period_counter_key
from aioseq.testing import FakeDynamoDB, SimulatedGlobalTable

PARIS = ZoneInfo("Europe/Paris")
UTC = timezone.utc
DAY_SECS = 86_400.0
FAST = RetryPolicy(max_attempts=50, initial_backoff_secs=0.0001, max_backoff_secs=0.001)


def paris(year: int, month: int, day: int, *time: int) -> datetime:
    hour, minute, second, micro = (*time, 0, 0, 0, 0)[:4]
    return datetime(year, month, day, hour, minute, second, micro, tzinfo=PARIS)


def plain(period: str = "year", **options: Any) -> Series[str]:
    """A series whose counters are their counter keys (no store)."""
    return Series("invoices", lambda key, **_: key, period=period, tz="Europe/Paris", **options)


def stored(fake: FakeDynamoDB, counter_key: str) -> list[int]:
    """The numbers of the items stored under ``counter_key`` (not its counter item)."""
    return sorted(
        int(item["sk"]["N"])
        for item in fake.items("aioseq")
        if item["pk"] == {"S": counter_key} and item["sk"] != {"N": "0"}
    )


# --- the period of a document --------------------------------------------------------------


def test_the_year_of_a_document_is_its_own_in_the_sellers_zone() -> None:
    invoices = plain()
    assert invoices.period_of(paris(2026, 12, 31, 23, 59, 59, 999_000)) == "2026"
    assert invoices.period_of(paris(2027, 1, 1, 0, 0, 0)) == "2027"
    # 23:30 UTC on 31 December is 00:30 on 1 January in Paris.
    assert invoices.period_of(datetime(2026, 12, 31, 23, 30, tzinfo=UTC)) == "2027"
    assert invoices.period_of(date(2026, 12, 31)) == "2026"  # a date: in the series' zone
    assert invoices.bounds("2027") == (paris(2027, 1, 1), paris(2028, 1, 1))


def test_a_naive_datetime_is_refused_and_says_why() -> None:
    with pytest.raises(ConfigurationError, match=r"naive datetime .* names no instant") as caught:
        plain().period_of(datetime(2026, 12, 31, 23, 30))
    assert isinstance(caught.value, ValueError)
    with pytest.raises(ConfigurationError, match="naive"):
        plain().at(datetime(2026, 12, 31, 23, 30), now=paris(2027, 1, 1))
    with pytest.raises(ConfigurationError, match="now must be an aware datetime"):
        plain().at(paris(2026, 12, 31), now=datetime(2027, 1, 1))
    with pytest.raises(ConfigurationError, match="a datetime or a date"):
        plain().period_of("2026-12-31")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("first", "hours"),
    [(date(2026, 3, 27), 23), (date(2026, 10, 23), 25)],
    ids=["march", "october"],
)
def test_day_periods_across_a_dst_change_keep_one_label_per_local_day(
    first: date, hours: int
) -> None:
    """Every 10 minutes for five days around the change: each instant's label is its local
    date, the labels follow each other day by day, and the day of the change lasts 23 (or 25)
    hours of elapsed time."""
    days = plain("day")
    start = datetime(first.year, first.month, first.day, tzinfo=UTC)
    labels: dict[str, list[datetime]] = {}
    for step in range(5 * 24 * 6):
        instant = start + timedelta(minutes=10 * step)
        labels.setdefault(days.period_of(instant), []).append(instant)
    expected = [str(first + timedelta(days=n)) for n in range(len(labels))]
    assert list(labels) == expected
    for label, instants in labels.items():
        begin, end = days.bounds(label)
        assert all(begin <= i < end and str(i.astimezone(PARIS).date()) == label for i in instants)
    change = str(first + timedelta(days=2))  # the last Sunday of the month
    begin, end = days.bounds(change)
    assert (end.astimezone(UTC) - begin.astimezone(UTC)) == timedelta(hours=hours)


def test_months_and_fiscal_years() -> None:
    months = plain("month")
    assert months.period_of(paris(2026, 3, 31, 23, 59)) == "2026-03"
    assert months.period_of(datetime(2026, 3, 31, 22, 0, tzinfo=UTC)) == "2026-04"
    assert months.bounds("2026-12") == (paris(2026, 12, 1), paris(2027, 1, 1))
    fiscal = plain("fiscal-year:4")  # from 1 April, labelled by the year it begins in
    assert fiscal.period_of(date(2026, 3, 31)) == "2025"
    assert fiscal.period_of(date(2026, 4, 1)) == "2026"
    assert fiscal.bounds("2026") == (paris(2026, 4, 1), paris(2027, 4, 1))
    assert fiscal.counter_key("2026") == "invoices/2026"
    wide = "\uff12\uff10\uff12\uff16-03"  # fullwidth digits
    for label in ("2026-3", "2026", "2026-13", "2026-03-01", " 2026-03", wide):
        with pytest.raises(ConfigurationError, match="has no period"):
            months.counter_key(label)


def test_a_period_counter_key_names_its_series_and_period() -> None:
    assert period_counter_key("invoices-acme/2026-03") == ("invoices-acme", "2026-03")
    assert period_counter_key("invoices-acme") is None
    assert period_counter_key("a/b/2026") is None  # no series key holds the separator


@pytest.mark.parametrize(
    ("options", "match"),
    [
        ({"period": "week"}, "period must be"),
        ({"period": "fiscal-year:13"}, "period must be"),
        ({"tz": "Europe/Nowhere"}, "not an IANA time zone"),
        ({"tz": None}, "IANA time zone name"),
        ({"key": "invoices/acme"}, "may not hold '/'"),
        ({"key": ""}, "must not be empty"),
        ({"grace_secs": -1}, "grace_secs"),
        ({"future_secs": float("nan")}, "future_secs"),
        ({"strategy": "sorted"}, "strategy must be one of"),
        ({"blocksize": 10}, "unexpected keyword argument 'blocksize'"),
        ({"id_format": IdFormat(prefix="INV-", width=6)}, "{period} token"),
        (
            {"id_format": IdFormat(template="{period}-{number:04}"), "max_value": 10**5},
            "does not fit",
        ),
    ],
)
async def test_bad_series_are_refused_before_any_request(
    fake_store: DynamoStore, fake: FakeDynamoDB, options: dict[str, Any], match: str
) -> None:
    arguments: dict[str, Any] = {"key": "invoices", "period": "year", "tz": "Europe/Paris"}
    arguments.update(options)
    with pytest.raises(ConfigurationError, match=match):
        fake_store.series(arguments.pop("key"), **arguments)
    assert fake.sent == []


# --- numbering per period --------------------------------------------------------------------


async def test_documents_from_two_stores_on_both_sides_of_the_new_year(
    fake: FakeDynamoDB,
) -> None:
    """200 documents put concurrently from two stores, half dated on each side of the new
    year: items 1..100 in each period; a store opened afterwards goes on at 101."""
    now = paris(2027, 1, 1, 0, 5)
    dates = [paris(2027, 1, 1) + timedelta(seconds=i) for i in range(-100, 100)]
    async with (
        DynamoStore(transport=fake, retry_policy=FAST, idle_secs=None) as one,
        DynamoStore(transport=fake, retry_policy=FAST, idle_secs=None) as two,
    ):
        await one.create_table()

        async def put(store: DynamoStore, i: int) -> tuple[str, int]:
            counter = store.series("invoices", period="year", tz="Europe/Paris").at(
                dates[i], now=now
            )
            number = await counter.put(lambda n: {"pk": counter.key, "sk": n, "doc": i})
            return counter.key, number

        got = await asyncio.gather(*(put((one, two)[i % 2], i) for i in range(200)))
        assert sorted(n for key, n in got if key == "invoices/2026") == list(range(1, 101))
        assert sorted(n for key, n in got if key == "invoices/2027") == list(range(1, 101))
        assert stored(fake, "invoices/2026") == stored(fake, "invoices/2027") == [*range(1, 101)]
        async with DynamoStore(transport=fake, retry_policy=FAST, idle_secs=None) as later:
            series = later.series("invoices", period="year", tz="Europe/Paris")
            counter = series.at(paris(2027, 1, 2, 9, 0), now=paris(2027, 1, 2, 9, 0))
            assert await counter.put(lambda n: {"pk": counter.key, "sk": n}) == 101


async def test_a_process_started_after_the_boundary_numbers_each_period_where_it_stands(
    fake_store: DynamoStore, fake: FakeDynamoDB
) -> None:
    """The period is the document's and its state is in DynamoDB: a store that worked in
    December and one opened in January agree, whatever their own clocks did."""
    december = fake_store.series("receipts", period="month", tz="Europe/Paris")
    for day in (29, 30, 31):
        on = paris(2026, 12, day, 18)
        assert await december.at(on, now=on).put({"pk": "r", "sk": day}) == day - 28
    async with DynamoStore(transport=fake, retry_policy=FAST, idle_secs=None) as restarted:
        january = restarted.series("receipts", period="month", tz="Europe/Paris")
        now = paris(2027, 1, 1, 8)
        assert await january.at(now, now=now).put({"pk": "r", "sk": 101}) == 1
        late = paris(2026, 12, 31, 23, 50)  # a late December receipt, no grace limit
        assert await january.at(late, now=now).put({"pk": "r", "sk": 102}) == 4
        # The store that worked in December, idle across the boundary, agrees.
        assert await december.at(now, now=now).put({"pk": "r", "sk": 103}) == 2


async def test_late_documents_within_grace_are_taken_and_after_it_refused_writing_nothing(
    fake_store: DynamoStore, fake: FakeDynamoDB
) -> None:
    invoices = fake_store.series(
        "invoices", period="year", tz="Europe/Paris", grace_secs=15 * DAY_SECS
    )
    on = paris(2026, 12, 31, 16, 0)
    counter = invoices.at(on, now=paris(2027, 1, 10, 9, 0))
    assert await counter.put(lambda n: {"pk": counter.key, "sk": n}) == 1
    fake.reset()
    refused_at = datetime(2027, 1, 20, 9, 0, tzinfo=UTC)
    with pytest.raises(PeriodClosed) as caught:
        invoices.at(on, now=refused_at)
    assert fake.sent == []  # nothing was asked, so nothing was written
    error = caught.value
    assert (error.series, error.period, error.closed_at) == ("invoices", "2026", paris(2027, 1, 16))
    assert (error.on, error.now) == (on, refused_at)
    assert "period '2026' closed at 2027-01-16T00:00:00+01:00" in str(error)
    assert "nothing was written" in str(error)
    # The boundary itself: closed at end + grace exactly, elapsed seconds (UTC).
    assert invoices.at(on, now=paris(2027, 1, 15, 23, 59, 59)) is counter
    with pytest.raises(PeriodClosed):
        invoices.at(on, now=paris(2027, 1, 16))
    assert stored(fake, "invoices/2026") == [1]


async def test_documents_dated_ahead_of_now_are_refused_beyond_the_tolerance(
    fake_store: DynamoStore, fake: FakeDynamoDB
) -> None:
    invoices = fake_store.series("invoices", period="year", tz="Europe/Paris")
    now = datetime(2026, 12, 31, 22, 56, tzinfo=UTC)  # 23:56 in Paris
    assert invoices.at(paris(2027, 1, 1, 0, 0), now=now).key == "invoices/2027"  # 4 minutes
    with pytest.raises(FutureDated) as caught:
        invoices.at(paris(2027, 1, 1, 0, 1, 1), now=now)
    assert caught.value.tolerance_secs == 300 and "more than 300 s ahead" in str(caught.value)
    with pytest.raises(FutureDated):
        invoices.at(date(2027, 1, 2), now=now)  # a date begins at its local midnight
    lenient = fake_store.series("invoices", period="year", tz="Europe/Paris", future_secs=None)
    assert lenient.at(paris(2030, 1, 1), now=now).key == "invoices/2030"
    assert fake.sent == []


async def test_a_periods_counter_is_the_one_the_store_shares_for_its_key(
    fake_store: DynamoStore,
) -> None:
    on = paris(2026, 6, 1)
    first = fake_store.series("invoices", period="year", tz="Europe/Paris").at(on, now=on)
    again = fake_store.series("invoices", period="year", tz="Europe/Paris").at(on, now=on)
    assert first is again is fake_store.transactional_counter("invoices/2026")
    assert isinstance(first, TransactionalCounter)
    counter = fake_store.series("invoices", period="year", tz="Europe/Paris").counter("2025")
    assert counter is fake_store.transactional_counter("invoices/2025")
    assert fake_store.statistics().live_keys == 2


@pytest.mark.parametrize("strategy", ["sort-key", "optimistic", "atomic", "allocator"])
async def test_every_strategy_numbers_each_period_from_one(
    fake_store: DynamoStore, fake: FakeDynamoDB, strategy: str
) -> None:
    series = fake_store.series("tickets", period="day", tz="Europe/Paris", strategy=strategy)
    days = [paris(2026, 3, 28, 23, 59), paris(2026, 3, 29, 0, 0)] * 3
    got: dict[str, list[int]] = {}
    for on in days:
        counter: Any = series.at(on, now=on)
        if strategy == "sort-key":
            number = await counter.put({"doc": str(on)})
        else:
            number = await counter.next()
        got.setdefault(series.period_of(on), []).append(number)
    assert got == {"2026-03-28": [1, 2, 3], "2026-03-29": [1, 2, 3]}
    if strategy == "sort-key":
        assert stored(fake, "tickets/2026-03-28") == [1, 2, 3]


async def test_a_series_format_carries_the_period_and_bounds_the_counters(
    fake_store: DynamoStore,
) -> None:
    invoice_id = IdFormat(template="INV-{period}-{number:06}")
    invoices = fake_store.series("invoices", period="year", tz="Europe/Paris", id_format=invoice_id)
    on = paris(2026, 3, 2)
    counter = invoices.at(on, now=on)
    assert counter.max_value == 999_999  # the format's room, unless max_value= says less
    number = await counter.put(lambda n: {"pk": counter.key, "sk": n})
    text = invoice_id.format(number, period=invoices.period_of(on))
    assert text == "INV-2026-000001"
    assert invoice_id.parse_period(text) == ("2026", 1)


async def test_region_scoped_series_number_each_period_in_the_regions_residue_class() -> None:
    regions = ("us-east-1", "eu-west-1")
    async with SimulatedGlobalTable(regions, replication_delay_secs=0.005) as table:
        stores = [
            DynamoStore(
                transport=table.transport(region), retry_policy=FAST, regions=RegionScope(regions)
            )
            for region in regions
        ]
        await stores[0].create_table()
        got: dict[tuple[str, str], list[int]] = {}
        for on in (paris(2026, 12, 31, 23), paris(2027, 1, 1, 1)) * 2:
            for store in stores:
                counter = store.series("invoices", period="year", tz="Europe/Paris").at(on, now=on)
                done = sum(map(len, got.values()))
                number = await counter.put({"pk": counter.key, "sk": 100 + done})
                got.setdefault((str(store.region), counter.key), []).append(number)
        assert got == {
            ("us-east-1", "invoices/2026"): [1, 3],
            ("eu-west-1", "invoices/2026"): [2, 4],
            ("us-east-1", "invoices/2027"): [1, 3],
            ("eu-west-1", "invoices/2027"): [2, 4],
        }
        for store in stores:
            await store.aclose()


def test_a_series_says_what_it_is() -> None:
    grace = plain(grace_secs=15 * DAY_SECS)
    assert repr(grace) == (
        "<Series key='invoices' period='year' tz='Europe/Paris' grace_secs=1296000>"
    )
