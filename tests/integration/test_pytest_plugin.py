"""The pytest plugin as a user's project meets it: its own pytest run, no settings of ours."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from aioseq.testing import DynamoDBLocal
from aioseq.testing.dynamodb_local import SHORT_RUN_JVM_OPTIONS

USER_TEST = textwrap.dedent(
    """
    import pytest

    @pytest.mark.asyncio
    async def test_orders(aioseq_store):
        orders = aioseq_store.atomic_counter("orders")
        assert [await orders.next() for _ in range(3)] == [1, 2, 3]
    """
)


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["strict", "auto"])
def test_aioseq_store_works_in_either_pytest_asyncio_mode(tmp_path: Path, mode: str) -> None:
    (tmp_path / "test_user.py").write_text(USER_TEST)
    result = subprocess.run(
        [
            *(sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"),
            *("-o", f"asyncio_mode={mode}", "-o", "asyncio_default_fixture_loop_scope=function"),
            *("-W", "error", "test_user.py"),
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "1 passed" in result.stdout


def test_the_session_s_dynamodb_local_runs_on_the_quick_compiler(
    aioseq_dynamodb_local: DynamoDBLocal,
) -> None:
    if not Path("/proc/self/cmdline").exists():
        pytest.skip("reads the Java command line from /proc")
    command = Path(f"/proc/{aioseq_dynamodb_local.pid}/cmdline").read_bytes().split(b"\0")
    jar = command.index(b"-jar")
    assert [option.decode() for option in command[1:jar]][: len(SHORT_RUN_JVM_OPTIONS)] == list(
        SHORT_RUN_JVM_OPTIONS
    )
