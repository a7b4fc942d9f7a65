"""The strategy table (`aioseq._strategy_table`) says what the code does: each factory exists
and makes its class, the promises are the classes' own, and the tools read the table. No
server: the store's endpoint refuses connections and nothing is sent."""

from __future__ import annotations

import argparse
import inspect
import re

import pytest

from aioseq import ConfigurationError, DynamoStore
from aioseq._strategy_table import STRATEGIES, STRATEGY_NAMES, StrategyFacts, strategy_named
from aioseq._workload import make_taker
from aioseq.cli import _parser
from aioseq.contracts import ItemCounter, SequenceSource

REFUSING_ENDPOINT = "http://127.0.0.1:1"


def gapless_line(facts: StrategyFacts) -> str:
    """What the class's docstring says after ``- gapless:``."""
    found = re.search(r"^\s*- gapless: (.*)$", inspect.getdoc(facts.cls) or "", re.MULTILINE)
    assert found, f"{facts.cls.__name__}'s docstring has no '- gapless:' line"
    return found.group(1)


@pytest.mark.parametrize("facts", STRATEGIES, ids=STRATEGY_NAMES)
async def test_the_factory_makes_the_class(facts: StrategyFacts) -> None:
    factory = getattr(DynamoStore, facts.factory)
    returns = inspect.signature(factory).return_annotation  # a name, or the class itself
    assert getattr(returns, "__name__", returns) == facts.cls.__name__
    async with DynamoStore.open(endpoint_url=REFUSING_ENDPOINT) as store:
        assert type(getattr(store, facts.factory)("k")) is facts.cls
        assert store.requests.total() == 0


@pytest.mark.parametrize("facts", STRATEGIES, ids=STRATEGY_NAMES)
def test_the_promises_are_the_classes_own(facts: StrategyFacts) -> None:
    says = gapless_line(facts)
    assert facts.gapless == says.startswith("yes"), says
    assert facts.gapless_handed_out == (not says.startswith("no")), says
    # the item-writing strategies hand out the number they stored; the others bare numbers
    assert facts.writes_items == issubclass(facts.cls, ItemCounter)
    assert facts.writes_items != issubclass(facts.cls, SequenceSource)
    assert facts.grouped == (
        "group" in inspect.signature(getattr(DynamoStore, facts.factory)).parameters
    )


def test_gapless_strategies_are_exactly_those_that_write_items() -> None:
    """As the classes say: a number exists exactly when its item is stored."""
    assert [s.name for s in STRATEGIES if s.gapless] == [
        s.name for s in STRATEGIES if s.writes_items
    ]


def test_names_and_factories_are_unique_and_the_cli_offers_them() -> None:
    assert len(set(STRATEGY_NAMES)) == len({s.factory for s in STRATEGIES}) == len(STRATEGIES)
    parser = _parser()
    commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    listed = "{" + ",".join(STRATEGY_NAMES) + "}"  # argparse's way of listing choices
    for command in ("next", "current", "demo"):
        assert f"--strategy {listed}" in commands.choices[command].format_help(), command
    for name in STRATEGY_NAMES:
        assert parser.parse_args(["next", "k", "--strategy", name]).strategy == name


async def test_make_taker_dispatches_through_the_table() -> None:
    async with DynamoStore.open(endpoint_url=REFUSING_ENDPOINT) as store:
        for facts in STRATEGIES:
            taker = make_taker(store, facts.name, f"k-{facts.name}")
            make_taker(store, facts.name, f"off-{facts.name}", group=False)  # where it can be
            made = getattr(store, facts.factory)(f"k-{facts.name}")  # the object the store shares
            assert taker.counter is (made.counter if taker.aclose is not None else made)
        assert store.requests.total() == 0
        with pytest.raises(
            ConfigurationError, match="unknown strategy 'random'; choose from atomic"
        ):
            make_taker(store, "random", "k")
        with pytest.raises(ConfigurationError, match="those that do: optimistic, sort-key, trans"):
            make_taker(store, "atomic", "k", group=True)


def test_an_unknown_name_is_a_configuration_error() -> None:
    assert strategy_named("sort-key").factory == "sort_key_counter"
    with pytest.raises(ConfigurationError, match="choose from atomic, allocator, optimistic"):
        strategy_named("gapless")
