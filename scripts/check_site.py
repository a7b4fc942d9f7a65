"""Check the built documentation site (make docs, after mkdocs build --strict).

Fails (exit 1, one line per problem) when
- a page shows a raw Sphinx role (``:meth:`x```, ``:class:`~a.B```: mkdocstrings renders them
  as text; write ``[`B`][a.B]`` or a backticked name instead);
- a paragraph (or list item, or table cell) ends in ``::``: a reStructuredText literal-block
  marker left in a docstring, which markdown shows as it is (end the sentence with ``:``; an
  indented or fenced block after a blank line is the code block);
- a cross-reference was left unresolved (autorefs leaves an ``<autoref`` element);
- a public name (``aioseq.__all__`` and the ``__all__`` of every public module) has no anchor
  in the API reference, under its module's path or under a path that names the same object;
  nor has one of the store's factory methods.

    python scripts/check_site.py [SITE_DIR]
"""

from __future__ import annotations

import importlib
import pkgutil
import re
import sys
from pathlib import Path
from typing import Any

ROLE = re.compile(r":(?:py:)?(?:meth|class|func|mod|attr|exc|data|obj|const|ref):(?:`|<code>)")
LITERAL_MARKER = re.compile(r"([^\s<>]{0,40})::\s*</(p|li|td)>")
ANCHOR = re.compile(r'id="(aioseq(?:\.\w+)+)"')
REFERENCE = Path("reference/api/index.html")
FACTORIES = [
    f"aioseq.DynamoStore.{name}"
    for name in (
        "atomic_counter",
        "block_allocator",
        "optimistic_counter",
        "sort_key_counter",
        "transactional_counter",
    )
]


def public_modules() -> list[str]:
    import aioseq

    names = ["aioseq"]
    for info in pkgutil.walk_packages(aioseq.__path__, "aioseq."):
        if not any(part.startswith("_") for part in info.name.split(".")):
            names.append(info.name)
    return names


def resolve(path: str) -> Any:
    parts = path.split(".")
    for i in range(len(parts), 0, -1):
        try:
            obj: Any = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        for name in parts[i:]:
            obj = getattr(obj, name, None)
        return obj
    return None


def undocumented(anchors: set[str]) -> list[str]:
    """Public names with no anchor: none under their own path, none naming the same object."""
    by_name: dict[str, list[str]] = {}
    for anchor in anchors:
        by_name.setdefault(anchor.rsplit(".", 1)[1], []).append(anchor)
    missing = []
    for module_name in public_modules():
        module = importlib.import_module(module_name)
        for name in getattr(module, "__all__", ()):
            path = f"{module_name}.{name}"
            if path in anchors:
                continue
            obj = getattr(module, name)
            if not any(resolve(anchor) is obj for anchor in by_name.get(name, ())):
                missing.append(path)
    return missing


def main(argv: list[str]) -> int:
    site = Path(argv[1] if len(argv) > 1 else "site")
    problems = []
    for page in sorted(site.rglob("*.html")):
        text = page.read_text(encoding="utf-8")
        for match in ROLE.finditer(text):
            problems.append(f"{page}: raw Sphinx role {match.group(0)!r}")
        for match in LITERAL_MARKER.finditer(text):
            problems.append(f"{page}: a paragraph ends in '::' ({match.group(0)!r})")
        if "<autoref" in text:
            problems.append(f"{page}: an unresolved cross-reference (<autoref>)")
    reference = site / REFERENCE
    anchors = set(ANCHOR.findall(reference.read_text(encoding="utf-8")))
    missing = undocumented(anchors) + [path for path in FACTORIES if path not in anchors]
    problems += [f"{reference}: no entry for public name {path}" for path in missing]
    for problem in problems:
        print(problem, file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
