"""The shape of the package: no import cycle, and a front door written out.

No server: the imports are read from the source (every ``import``, at any depth, those under
``if TYPE_CHECKING:`` included: a type a lower layer needs is a ``Protocol`` defined down
there), and the factories are read with ``inspect``.
"""

from __future__ import annotations

import ast
import inspect
import re
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

import aioseq

PACKAGE = Path(aioseq.__file__).parent


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(
    tree: ast.AST, module: str, is_package: bool, modules: frozenset[str] = frozenset()
) -> Iterator[str]:
    """The aioseq modules ``tree`` imports, at run time or for the type checker.
    ``from package import submodule`` counts as the submodule (importing any submodule
    initialises its package anyway), ``from package import name`` as the package."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names if alias.name.startswith("aioseq"))
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative: resolve against this module's package
                base = module.split(".")
                base = base if is_package else base[:-1]
                base = base[: len(base) - node.level + 1]
                name = ".".join([*base, node.module] if node.module else base)
            else:
                name = node.module or ""
            if name.startswith("aioseq"):
                for alias in node.names:
                    submodule = f"{name}.{alias.name}"
                    yield submodule if submodule in modules else name


def import_graph() -> dict[str, set[str]]:
    """aioseq module -> the aioseq modules it imports (type-checking imports included)."""
    paths = {_module_name(p): p for p in PACKAGE.rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for module, path in paths.items():
        tree = ast.parse(path.read_text())
        found = _imports(tree, module, path.name == "__init__.py", frozenset(paths))
        graph[module] = {name for name in found if name in paths and name != module}
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle, as the list of modules around it, or None."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(module: str) -> list[str] | None:
        state[module] = 1
        path.append(module)
        for imported in sorted(graph[module]):
            if state.get(imported) == 1:
                return [*path[path.index(imported) :], imported]
            if imported not in state and (cycle := visit(imported)):
                return cycle
        path.pop()
        state[module] = 2
        return None

    for module in sorted(graph):
        if module not in state and (cycle := visit(module)):
            return cycle
    return None


def test_the_cycle_finder_finds_a_cycle() -> None:
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None


def test_the_graph_sees_function_level_and_type_checking_imports() -> None:
    source = textwrap.dedent(
        """
        from typing import TYPE_CHECKING
        from aioseq import errors
        if TYPE_CHECKING:
            from aioseq._store import DynamoStore
        def f():
            from aioseq.strategies import atomic
        """
    )
    modules = frozenset({"aioseq.errors", "aioseq.strategies.atomic"})
    found = set(_imports(ast.parse(source), "aioseq.x", False, modules))
    assert {"aioseq.errors", "aioseq.strategies.atomic", "aioseq._store"} <= found


def test_aioseq_has_no_import_cycle() -> None:
    graph = import_graph()
    assert "aioseq.strategies._base" in graph  # the walk found the package
    assert find_cycle(graph) is None, " -> ".join(find_cycle(graph) or [])


def test_the_values_layer_imports_nothing_above_it() -> None:
    """The bottom of the house, each module one concept: limits, then the checks of what
    callers pass, then items and numberings; errors beside them."""
    graph = import_graph()
    assert graph["aioseq.errors"] == set()
    assert graph["aioseq._limits"] == set()
    assert graph["aioseq._checks"] <= {"aioseq.errors", "aioseq._limits"}
    assert graph["aioseq._items"] <= {"aioseq.errors", "aioseq._limits", "aioseq._checks"}
    values = {"aioseq.errors", "aioseq._limits", "aioseq._checks", "aioseq._items"}
    assert graph["aioseq.numbering"] <= values


#: Each factory of DynamoStore and the class it shares.
FACTORIES = {
    "atomic_counter": "AtomicCounter",
    "optimistic_counter": "OptimisticCounter",
    "sort_key_counter": "SortKeyCounter",
    "transactional_counter": "TransactionalCounter",
    "block_allocator": "BlockAllocator",
}


@pytest.mark.parametrize("factory", FACTORIES)
def test_each_factory_is_written_out_with_its_class_parameters(factory: str) -> None:
    """The factories are plain methods, so each must keep its class's parameters by hand:
    same names, kinds and defaults (the store's own collaborators, such as ``adopt``, not
    offered)."""
    import aioseq

    method = getattr(aioseq.DynamoStore, factory)
    assert inspect.getsource(method).lstrip().startswith(f"def {factory}(")
    cls = getattr(aioseq, FACTORIES[factory])
    wanted = [
        (p.name, p.kind, p.default)
        for p in list(inspect.signature(cls).parameters.values())[1:]  # not the store
        if p.name != "adopt"
    ]
    found = [
        (p.name, p.kind, p.default)
        for p in list(inspect.signature(method).parameters.values())[1:]  # not self
    ]
    assert found == wanted


def test_no_constructor_is_bypassed_nor_a_concrete_class_probed() -> None:
    """One constructor per class (no ``__new__``), and the store and its registry know what
    they made through `aioseq.contracts.Managed` only."""
    package = Path(__file__).parents[2] / "aioseq"
    for path in package.rglob("*.py"):
        source = path.read_text()
        assert "__new__" not in source, path
        if path.name != "allocator.py":
            assert "isinstance(thing, BlockAllocator)" not in source, path
            assert re.search(r"isinstance\([^)]*BlockAllocator\)", source) is None, path
    for name in ("_store.py", "_registry.py"):
        assert "getattr(" not in (package / name).read_text(), name


def test_no_name_aioseq_testing_exports_is_shadowed_by_a_submodule() -> None:
    """``aioseq.testing`` loads its names on first use; a submodule of the same name would
    replace the name once imported (as ``serving`` did)."""
    import importlib
    import types

    import aioseq.testing

    for path in (PACKAGE / "testing").glob("*.py"):
        if path.stem not in ("__init__", "__main__"):
            importlib.import_module(f"aioseq.testing.{path.stem}")
    for name in aioseq.testing.__all__:
        assert not isinstance(getattr(aioseq.testing, name), types.ModuleType), name


#: The longest docstring a class, function or method may have, in lines: the contract
#: (what it is, guarantees, cost, parameters, raises) and a link to the page that tells the
#: story (issue #45: "docstrings by contract").
MAX_DOCSTRING_LINES = 40


def _long_docstrings(limit: int) -> list[str]:
    """``path:line name (n lines)`` for each class, function or method in aioseq whose
    docstring runs over ``limit`` lines."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
                lines = len((ast.get_docstring(node) or "").splitlines())
                if lines > limit:
                    where = path.relative_to(PACKAGE.parent)
                    found.append(f"{where}:{node.lineno} {node.name} ({lines} lines)")
    return found


def test_the_docstring_check_finds_a_long_docstring() -> None:
    assert _long_docstrings(3)  # every module has docstrings longer than that


def test_no_docstring_is_longer_than_its_contract() -> None:
    """A class, function or method docstring gives the contract in at most
    `MAX_DOCSTRING_LINES` lines and links to the page in docs/ that tells the story."""
    assert _long_docstrings(MAX_DOCSTRING_LINES) == []
