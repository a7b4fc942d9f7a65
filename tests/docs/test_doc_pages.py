"""The pages a newcomer runs in order: README.md, then docs/ in the order of mkdocs.yml's nav.

Their Python blocks run against one server, the one getting-started.md starts, and its default
table: a counter key one page uses and a later page uses again would make the later page print
other numbers than it shows (web-services.md's transcript showed order 1 where a reader who had
followed getting-started.md got 2). So each counter key that a block names belongs to one page.
How the blocks run (``python -m asyncio``, the store a page opens) is checked where they run:
tests/doc_examples.py.
"""

from __future__ import annotations

import ast
import re
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

#: The factories and admin functions whose counter key is a block's literal argument.
FACTORIES = {
    "atomic_counter",
    "block_allocator",
    "optimistic_counter",
    "sort_key_counter",
    "transactional_counter",
}
ADMIN = {
    "set_counter",
    "ensure_at_least",
    "describe_counter",
    "set_numbering",
    "start_after_maximum",
}

#: Pages whose blocks write no counter of the reader's table, and why.
OWN_TABLES = {
    "docs/operations.md": "a table of its own (admin-example), and the commands a fresh server",
    "docs/global-tables.md": "simulated global tables",
    "docs/testing.md": "the fixtures' fresh tables and FakeDynamoDB",
    "docs/reliability.md": "the fixtures' fresh table",
}

#: Pages that show one program: the README's quick start is getting-started.md's.
SAME_PROGRAM = {"README.md": "docs/getting-started.md"}

_BLOCK = re.compile(
    r"^ *```python\n(?P<visible>.*?)^ *```|<!-- invisible-code-block: python\n(?P<hidden>.*?)-->",
    re.S | re.M,
)


def reading_order() -> list[str]:
    """README.md, then the pages of mkdocs.yml's nav, in order."""
    nav = (ROOT / "mkdocs.yml").read_text().split("\nnav:\n", 1)[1]
    return ["README.md", *(f"docs/{page}" for page in re.findall(r":\s*(\S+\.md)\s*$", nav, re.M))]


def counter_keys(page: str) -> set[str]:
    """The literal counter keys the page's Python blocks (seen or not) pass to a factory or an
    admin function."""
    keys = set()
    for block in _BLOCK.finditer((ROOT / page).read_text()):
        source = block["visible"] or block["hidden"]
        lines = source.splitlines()
        indent = min((len(line) - len(line.lstrip()) for line in lines if line.strip()), default=0)
        code = "\n".join(line[indent:] for line in lines)
        if code.startswith("--8<--"):  # a snippet of examples/, type-checked there
            continue
        tree = compile(code, page, "exec", flags=ast.PyCF_ONLY_AST | ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
                continue
            name = node.func.attr
            position = 0 if name in FACTORIES else 1 if name in ADMIN else None
            if position is None or len(node.args) <= position:
                continue
            key = node.args[position]
            if isinstance(key, ast.Constant) and isinstance(key.value, str):
                keys.add(key.value)
    return keys


def test_the_reading_order_is_the_sites() -> None:
    order = reading_order()
    assert order[:4] == [
        "README.md",
        "docs/index.md",
        "docs/getting-started.md",
        "docs/recipes.md",
    ]
    assert all((ROOT / page).is_file() for page in order)


def test_each_page_uses_counter_keys_of_its_own() -> None:
    first_used: dict[str, str] = {}
    reused: dict[str, list[str]] = defaultdict(list)
    for page in reading_order():
        if page in OWN_TABLES:
            continue
        for key in sorted(counter_keys(page)):
            earlier = first_used.setdefault(key, page)
            if earlier != page and SAME_PROGRAM.get(earlier) != page:
                reused[key].append(f"{page} (first on {earlier})")
    assert not reused, f"counter keys a later page uses again: {dict(reused)}"


def test_the_check_sees_the_keys_of_a_page() -> None:
    """The scan finds keys in visible, hidden and indented blocks, and none elsewhere."""
    assert {"receipts", "credit-notes"} <= counter_keys("docs/index.md")
    assert {"shop-orders", "support-tickets", "invoice-lost"} <= counter_keys("docs/recipes.md")
    assert "invoices-initech" in counter_keys("docs/layout.md")  # in a list item's block
    assert counter_keys("docs/strategies.md") == set()
