"""The one table of aioseq's strategies: each one's name on the command line, the
`DynamoStore` factory that makes it, its class, how it takes a number, and what it promises.

The CLI (``--strategy`` choices), the demo, the workload driver (`aioseq._workload`), the
benchmarks and ``verification/`` read these facts here and nowhere else;
``tests/unit/test_strategy_table.py`` checks them against the classes and the factories.

Private: a tools-layer module (it imports the strategies and the allocator, not the store)."""

from __future__ import annotations

from dataclasses import dataclass

from aioseq.allocator import BlockAllocator
from aioseq.errors import ConfigurationError
from aioseq.strategies.atomic import AtomicCounter
from aioseq.strategies.optimistic import OptimisticCounter
from aioseq.strategies.sort_key import SortKeyCounter
from aioseq.strategies.transactional import TransactionalCounter

__all__ = ["STRATEGIES", "STRATEGY_NAMES", "StrategyFacts", "strategy_named"]


@dataclass(frozen=True)
class StrategyFacts:
    """What one strategy is and promises.

    Attributes:
        name: its name on the command line (``aioseq next --strategy NAME``).
        factory: the `DynamoStore` method that makes it (``store.<factory>(key, ...)``).
        cls: the class that factory returns.
        taken_by: how a number is taken, in one short phrase.
        gapless: no holes at all: a number exists exactly when its item is stored (the class's
            ``gapless:`` line says yes).
        gapless_handed_out: no holes among the numbers handed out, unless a lost answer stays
            unresolved (the class's ``gapless:`` line is not a plain no); true where
            ``gapless`` is.
        writes_items: stores one item per number (``await counter.put(item) -> int``); the
            others hand out bare numbers (``await counter.next() -> int``).
        grouped: its factory takes ``group=`` (group commit of concurrent calls).
    """

    name: str
    factory: str
    cls: type[object]
    taken_by: str
    gapless: bool
    gapless_handed_out: bool
    writes_items: bool
    grouped: bool


#: Every strategy, in the order the CLI lists them and the demo runs them.
STRATEGIES: tuple[StrategyFacts, ...] = (
    StrategyFacts(
        name="atomic",
        factory="atomic_counter",
        cls=AtomicCounter,
        taken_by="UpdateItem ADD on the counter item",
        gapless=False,
        gapless_handed_out=False,
        writes_items=False,
        grouped=False,
    ),
    StrategyFacts(
        name="allocator",
        factory="block_allocator",
        cls=BlockAllocator,
        taken_by="from a block in memory, reserved by ADD on the counter item (hi/lo)",
        gapless=False,
        gapless_handed_out=False,
        writes_items=False,
        grouped=False,
    ),
    StrategyFacts(
        name="optimistic",
        factory="optimistic_counter",
        cls=OptimisticCounter,
        taken_by="conditional write of current + n on the counter item",
        gapless=False,
        gapless_handed_out=True,
        writes_items=False,
        grouped=True,
    ),
    StrategyFacts(
        name="sort-key",
        factory="sort_key_counter",
        cls=SortKeyCounter,
        taken_by="Query of the highest sort key, then a conditional PutItem of the item",
        gapless=True,
        gapless_handed_out=True,
        writes_items=True,
        grouped=True,
    ),
    StrategyFacts(
        name="transactional",
        factory="transactional_counter",
        cls=TransactionalCounter,
        taken_by="TransactWriteItems of the counter update and the item",
        gapless=True,
        gapless_handed_out=True,
        writes_items=True,
        grouped=True,
    ),
)

#: The strategies' names, in table order: the CLI's ``--strategy`` choices.
STRATEGY_NAMES: tuple[str, ...] = tuple(s.name for s in STRATEGIES)

_BY_NAME = {s.name: s for s in STRATEGIES}


def strategy_named(name: str) -> StrategyFacts:
    """The row of the strategy called ``name``.

    Raises:
        ConfigurationError: no strategy has that name.
    """
    try:
        return _BY_NAME[name]
    except KeyError:
        raise ConfigurationError(
            f"unknown strategy {name!r}; choose from {', '.join(STRATEGY_NAMES)}"
        ) from None
