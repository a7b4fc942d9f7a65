"""The four ways aioseq takes a number from DynamoDB. See each class for its guarantees."""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING, Any

from aioseq.strategies.counter import AtomicCounter as AtomicCounter
from aioseq.strategies.optimistic import OptimisticCounter as OptimisticCounter
from aioseq.strategies.sort_key import SortKeyCounter as SortKeyCounter
from aioseq.strategies.transactional import TransactionalCounter as TransactionalCounter

__all__ = ["AtomicCounter", "OptimisticCounter", "SortKeyCounter", "TransactionalCounter"]

#: Names kept working after a rename: old name -> the name to use. Each warns when imported.
DEPRECATED_NAMES = {"GaplessCounter": "TransactionalCounter"}

if TYPE_CHECKING:
    GaplessCounter = TransactionalCounter  # deprecated since 0.2
else:

    def __getattr__(name: str) -> Any:
        return deprecated_name(__name__, globals(), name)


def deprecated_name(module: str, namespace: dict[str, Any], name: str) -> Any:
    """A module ``__getattr__``'s answer for ``name``: the object of its new name, with a
    :class:`DeprecationWarning`, or :class:`AttributeError` when it has no such old name."""
    if name in DEPRECATED_NAMES:
        warnings.warn(
            f"{module}.{name} is deprecated since 0.2; use {DEPRECATED_NAMES[name]}"
            " (the strategy's one name in the library, the CLI and the benchmarks)",
            DeprecationWarning,
            stacklevel=3,
        )
        return namespace[DEPRECATED_NAMES[name]]
    raise AttributeError(f"module {module!r} has no attribute {name!r}")
