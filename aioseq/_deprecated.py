"""Old public names that keep working after a rename, each with a ``DeprecationWarning``
pointed at the user's line (not at aioseq's own frames, where Python's default filters would
hide it)."""

from __future__ import annotations

import sys
import warnings
from collections.abc import Mapping
from types import FrameType
from typing import Any

__all__ = ["RENAMED", "renamed_attribute", "warn"]

#: Public names renamed in 0.2: old name -> new name.
RENAMED = {"GaplessCounter": "TransactionalCounter", "gapless_counter": "transactional_counter"}


def _ours(frame: FrameType) -> bool:
    """A frame of aioseq itself, or of the machinery working for it (imports, contextlib)."""
    module = str(frame.f_globals.get("__name__", ""))
    return module == "aioseq" or module.startswith(("aioseq.", "importlib", "contextlib"))


def warn(message: str) -> None:
    """Warn ``DeprecationWarning`` with ``message``, attributed to the first frame outside
    aioseq (the call a user wrote, however many of aioseq's frames lie between)."""
    frame = sys._getframe(1)
    level = 2  # stacklevel 2 is warn()'s caller
    while frame.f_back is not None and _ours(frame):
        frame = frame.f_back
        level += 1
    warnings.warn(message, DeprecationWarning, stacklevel=level)


def renamed_attribute(module: str, namespace: Mapping[str, Any], name: str) -> Any:
    """A module ``__getattr__``'s answer for ``name``: the object under its new name, with a
    warning, or :class:`AttributeError` for a name that never was. ``from module import old``
    looks the name up twice (``hasattr`` in the import machinery first); only the lookup the
    user's code makes warns."""
    new = RENAMED.get(name)
    if new is None or new not in namespace:
        raise AttributeError(f"module {module!r} has no attribute {name!r}")
    if sys._getframe(2).f_code.co_name != "_handle_fromlist":  # 1 is the module's __getattr__
        warn(
            f"{module}.{name} is deprecated since 0.2; use {new} (one name in the library,"
            " the CLI and the benchmarks)"
        )
    return namespace[new]
