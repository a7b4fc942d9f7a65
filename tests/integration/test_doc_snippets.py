"""The shell snippet of docs/dynamodb-local.md that runs DynamoDB Local beside a program in a
loopback-only network namespace, run under ``sh`` (dash on Debian and Ubuntu) as a reader runs
it, piped as a reader may pipe it: it ends with the program's exit status and leaves nothing
running. (Its first version stopped the server with ``kill %1``, which ``sh`` cannot do in a
script: DynamoDB Local was left running and the pipe open.)"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from aioseq.testing.dynamodb_local import find_dynamodb_local_jar
from aioseq.testing.pytest_plugin import REQUIRE_DYNAMODB_LOCAL

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "dynamodb-local.md"
#: The program the snippet runs, and the smaller run of it this test asks for.
PROGRAM = "aioseq demo --endpoint-url http://127.0.0.1:8000"
SMALLER = f"{PROGRAM} --count 20 --strategy atomic"


def _snippet() -> str:
    blocks = re.findall(r"^```sh\n(.*?)^```", PAGE.read_text(), re.S | re.M)
    (snippet,) = [b for b in blocks if "aioseq.testing.dynamodb_local" in b and "sh -c" in b]
    return str(snippet)


def _environment() -> dict[str, str]:
    """This interpreter's ``python`` and ``aioseq`` first on the PATH, as in its virtualenv."""
    scripts = str(Path(sys.executable).parent)
    return {**os.environ, "PATH": f"{scripts}{os.pathsep}{os.environ.get('PATH', '')}"}


def _why_not_here() -> str | None:
    """Why DynamoDB Local cannot run in a namespace of the script's here, or ``None``."""
    if find_dynamodb_local_jar() is None:
        return "no DynamoDBLocal.jar (scripts/install-dynamodb-local)"
    if shutil.which("java") is None:
        return "no java on the PATH"
    probe = subprocess.run(
        [
            "scripts/in-loopback-netns",
            sys.executable,
            "-c",
            "from aioseq.testing.dynamodb_local import loopback_only_reason as r; print(r() or '')",
        ],
        cwd=ROOT,
        env=_environment(),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    return probe.stdout.strip() or None


@pytest.mark.slow  # ~15 s: a JVM, and a small demo on it
def test_the_dynamodb_local_snippet_ends_and_leaves_nothing_running() -> None:
    reason = _why_not_here()
    if reason is not None:
        if os.environ.get(REQUIRE_DYNAMODB_LOCAL) == "1":
            pytest.fail(f"DynamoDB Local is required ({REQUIRE_DYNAMODB_LOCAL}=1): {reason}")
        pytest.skip(f"DynamoDB Local cannot run here: {reason}")
    snippet = _snippet()
    assert PROGRAM in snippet
    command = snippet.strip().replace(PROGRAM, SMALLER)
    run = subprocess.Popen(
        ["sh", "-c", f"{command} | cat"],  # a pipe stays open while anything holds it
        cwd=ROOT,
        env=_environment(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # its own process group: what it leaves behind is in it
    )
    try:
        out, err = run.communicate(timeout=180)
    except subprocess.TimeoutExpired:
        os.killpg(run.pid, signal.SIGTERM)  # the group this test started, and only it
        run.communicate()
        pytest.fail("the snippet did not end: DynamoDB Local was left running, the pipe open")
    assert run.returncode == 0, err
    assert "all checks passed" in out, out
    # The group is empty once the snippet ends: no launcher, no JVM left.
    with pytest.raises(ProcessLookupError):
        os.killpg(run.pid, 0)
