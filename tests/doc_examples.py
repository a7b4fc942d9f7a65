"""The code examples of README.md and docs/*.md, run by Sybil in the test suite.

The root ``conftest.py`` hands :func:`pytest_collect_file` to pytest, so ``make test`` (and
plain ``pytest``) collects each page as one test item (``README.md::examples``) that runs every
```` ```python ```` block of the page in order, in one namespace:

- **Python blocks** run as written, top-level ``await`` and ``async with`` included (compiled
  with ``PyCF_ALLOW_TOP_LEVEL_AWAIT``; a coroutine is run on the page's event loop, one
  per page), as ``python -m asyncio`` runs them. ``asyncio.run(main())`` works too. A page
  with a visible block of top-level ``await`` says how to run it: it names
  ``python -m asyncio`` (or the item fails, saying so).
- **The page's server** is the session's serialized moto server (the ``aioseq_moto_server``
  fixture): ``AWS_ENDPOINT_URL`` points at it for the page, with test credentials, so
  ``DynamoStore.open()`` (endpoint from the environment) talks to it. The default table,
  ``aioseq``, is created before the page's first example and deleted after its last one: one
  table per page, which keeps the examples cheap (no server per page, no sleeps).
- **Names a fragment uses** are the page's own: nothing is put in the namespace for it, so a
  page imports ``aioseq`` and opens its ``store`` in a block the reader sees, and a reader
  who runs the blocks in order runs what the suite runs. A store still open after the last
  example is closed then.
- **Output**: whatever the Python blocks print since the last check is compared with the next
  ```` ```text title="Output" ```` block (doctest's ``ELLIPSIS``: ``...`` matches anything).
- **An example that cannot run alone** is preceded by ``<!-- skip: next "the reason" -->``
  (Sybil's skip directive; the item is reported as skipped with the reason) and says why in
  the page; its code lives in ``examples/docs/`` where ``make lint`` type-checks it.
- ``<!-- invisible-code-block: python -->`` comments hold set-up or checks the reader does
  not need to see (Sybil's own directive).
"""

from __future__ import annotations

import ast
import asyncio
import contextlib
import doctest
import inspect
import io
import os
import traceback
import unittest
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from sybil import Document, Example, Sybil
from sybil.evaluators.python import pad
from sybil.integration.pytest import SybilFile, SybilItem
from sybil.parsers.markdown import CodeBlockParser, SkipParser

import aioseq

#: The table the examples use: the store's default.
DOC_TABLE = aioseq.DEFAULT_TABLE_NAME

#: The fenced block that holds what the Python blocks before it print.
OUTPUT_LANGUAGE = 'text title="Output"'

_RUN = "_aioseq_doc_run"
_CHECKER = doctest.OutputChecker()
_OPTIONS = doctest.ELLIPSIS


@dataclass
class _PageRun:
    """One page's event loop, store, saved environment and captured output."""

    loop: asyncio.AbstractEventLoop
    store: aioseq.DynamoStore
    environ: dict[str, str]
    output: io.StringIO = field(default_factory=io.StringIO)


def _page_environment(endpoint_url: str) -> dict[str, str]:
    """The process environment a page runs in: the developer's AWS settings replaced by test
    ones (as tests/conftest.py does for every test), the endpoint the moto server's."""
    saved = dict(os.environ)
    for name in [name for name in os.environ if name.startswith("AWS_")]:
        del os.environ[name]
    os.environ.update(
        {
            "AWS_ACCESS_KEY_ID": "testing",
            "AWS_SECRET_ACCESS_KEY": "testing",
            "AWS_DEFAULT_REGION": "us-east-1",
            "AWS_CONFIG_FILE": os.devnull,
            "AWS_SHARED_CREDENTIALS_FILE": os.devnull,
            "AWS_ENDPOINT_URL": endpoint_url,
        }
    )
    return saved


def _page_run(namespace: dict[str, Any]) -> _PageRun:
    """The page's run, begun at its first example (Sybil's per-page ``setup`` runs before the
    fixtures are there): its environment, event loop, table and store."""
    if _RUN in namespace:
        run: _PageRun = namespace[_RUN]
        return run
    server = namespace["aioseq_moto_server"]
    environ = _page_environment(server.endpoint_url)
    loop = asyncio.new_event_loop()  # asyncio.Runner is 3.11+

    async def open_store() -> aioseq.DynamoStore:
        store = await aioseq.DynamoStore.open(table=DOC_TABLE)
        with contextlib.suppress(aioseq.TableNotFound):  # a page that failed before
            await store.delete_table()
        await store.create_table()
        return store

    try:
        store = loop.run_until_complete(open_store())
    except BaseException:
        loop.close()
        os.environ.clear()
        os.environ.update(environ)
        raise
    run = namespace[_RUN] = _PageRun(loop, store, environ)
    return run


def _teardown(namespace: dict[str, Any]) -> None:
    """After a page's last example: delete its table, close its store and loop, restore the
    environment."""
    run: _PageRun | None = namespace.pop(_RUN, None)
    if run is None:
        return

    left_open = [
        value
        for value in namespace.values()
        if isinstance(value, aioseq.DynamoStore) and not value.closed
    ]

    async def close() -> None:
        for store in left_open:  # (a reader's session ends with its stores)
            await store.aclose()
        with contextlib.suppress(aioseq.TableNotFound):
            await run.store.delete_table()
        await run.store.aclose()

    try:
        run.loop.run_until_complete(close())
        run.loop.run_until_complete(run.loop.shutdown_asyncgens())
        run.loop.close()
    finally:
        os.environ.clear()
        os.environ.update(run.environ)


def run_python(example: Example) -> str | None:
    """A Python block: run it in the page's namespace, top-level ``await`` allowed, its
    output captured for the next output block. An exception is a failure whose traceback
    starts at the page's line (Sybil's own traceback filter cannot cut one that went through
    the event loop)."""
    run = _page_run(example.namespace)
    source = pad(example.parsed, example.line + example.parsed.line_offset)
    code = compile(
        source, example.path, "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT, dont_inherit=True
    )
    unsaid = _how_to_run_unsaid(example, code)
    if unsaid is not None:
        return unsaid
    try:
        with contextlib.redirect_stdout(run.output):
            result = eval(code, example.namespace)  # exec, or a coroutine if the block awaits
            if inspect.iscoroutine(result):
                run.loop.run_until_complete(result)
    except Exception as exc:
        tb = exc.__traceback__
        while tb is not None and tb.tb_frame.f_code.co_filename != example.path:
            tb = tb.tb_next
        return "".join(traceback.format_exception(type(exc), exc, tb or exc.__traceback__))
    finally:
        example.namespace.pop("__builtins__", None)
    return None


#: What a page says of a block with top-level ``await``: the prompt it runs in.
HOW_TO_RUN = "python -m asyncio"


def _how_to_run_unsaid(example: Example, code: Any) -> str | None:
    """A failure for a block the reader sees that needs top-level ``await`` on a page that
    never says where to run it (``HOW_TO_RUN``), else ``None``."""
    if not code.co_flags & inspect.CO_COROUTINE:  # (compiled so only with a top-level await)
        return None
    if example.document.text[example.start : example.end].lstrip().startswith("<!--"):
        return None  # an invisible block: the page's own set-up or checks
    if HOW_TO_RUN in " ".join(example.document.text.split()):  # (wrapped as prose is)
        return None
    return (
        f"this block awaits at its top level, and the page never says how to run it: name"
        f" {HOW_TO_RUN!r} once (or wrap the block in a main() run by asyncio.run)"
    )


def check_output(example: Example) -> str | None:
    """An output block: what the Python blocks printed since the last one, or a failure."""
    run = _page_run(example.namespace)
    want = str(example.parsed)
    got = run.output.getvalue()
    run.output = io.StringIO()
    if _CHECKER.check_output(want, got, _OPTIONS):
        return None
    return f"the page shows:\n{want}\nthe examples printed:\n{got}"


class _Page:
    """A page's examples, run in order as one test item: its blocks build on each other, so
    they must run in one process in page order, and pytest-xdist's ``worksteal`` (``make
    test``) would deal one page's items to several workers. Quacks like the
    :class:`sybil.Example` that Sybil's pytest item runs; a failure names its line."""

    def __init__(self, document: Document) -> None:
        self.document = document
        self.path = document.path
        self.namespace = document.namespace
        self.line, self.column = 1, 1

    def evaluate(self) -> None:
        for example in self.document.examples():
            try:
                example.evaluate()
            except unittest.SkipTest:  # <!-- skip: next "reason" -->: the page says why
                continue


class _PageSybil(Sybil):
    def identify(self, example: Example | _Page) -> str:
        return "examples" if isinstance(example, _Page) else super().identify(example)


class _PageFile(SybilFile):
    def collect(self) -> Iterator[SybilItem]:
        for sybil in self.sybils:
            document = sybil.parse(self.path)
            self.documents.append(document)
            if next(document.examples(), None) is not None:  # a page with no example: no item
                yield SybilItem.from_parent(self, sybil=sybil, example=_Page(document))


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> _PageFile | None:
    """The root conftest's hook: one item per page that :data:`SYBIL` parses."""
    if SYBIL.should_parse(file_path):
        page: _PageFile = _PageFile.from_parent(parent, path=file_path, sybils=[SYBIL])
        return page
    return None


#: The pages and how to run them (see the module doc).
SYBIL = _PageSybil(
    parsers=[
        CodeBlockParser(language="python", evaluator=run_python),
        CodeBlockParser(language=OUTPUT_LANGUAGE, evaluator=check_output),
        SkipParser(),
    ],
    patterns=["README.md", "docs/*.md"],
    path=str(Path(__file__).resolve().parent.parent),  # the checkout
    teardown=_teardown,
    fixtures=["aioseq_moto_server"],
)
