"""Servers and fixtures for testing code that uses aioseq (and aioseq itself).

- [`SerializedMotoServer`][aioseq.testing.SerializedMotoServer] /
  [`MotoServerProcess`][aioseq.testing.MotoServerProcess]: moto's DynamoDB on 127.0.0.1 with every
  request serialized (the ``server`` extra).
- [`DynamoDBLocal`][aioseq.testing.DynamoDBLocal]: Amazon DynamoDB Local, started only inside a
  loopback-only network namespace.
- [`FaultProxy`][aioseq.testing.FaultProxy] / [`FaultSchedule`][aioseq.testing.FaultSchedule]: a
  fault-injecting proxy between a client and a server (throttling, 500s, transaction conflicts,
  resets, timeouts, lost answers).
- [`FakeDynamoDB`][aioseq.testing.FakeDynamoDB]: DynamoDB in the test's process, at the store's
  transport seam (moto's DynamoDB handler called in process), with faults on demand: unit tests
  with no server and no network.
- [`SimulatedGlobalTable`][aioseq.testing.SimulatedGlobalTable]: a DynamoDB global table of two or
  three Regions over local servers or fakes: replication with a delay and last writer wins
  (MREC), or conflicts refused (MRSC), and ``DescribeTable`` answered as a replica.
- [`ManualClock`][aioseq.testing.ManualClock]: a clock tests move by hand, for the store's
  ``clock=``: retries, backoffs, leases and idle sweeps with no real wait.
- [`CapacityModel`][aioseq.testing.CapacityModel]: makes the proxy act like AWS under load: a
  write and a read budget per partition key value, throttled as DynamoDB throttles a hot
  partition, and a round trip per request.
- [`serving()`][aioseq.testing.serving] / [`serving_endpoint()`][aioseq.testing.serving_endpoint]:
  the endpoint given (or configured), or a moto or DynamoDB Local server started for a ``with``
  block ([`Endpoint`][aioseq.testing.Endpoint],
  [`ServerUnavailable`][aioseq.testing.ServerUnavailable]).
- pytest fixtures (``aioseq_endpoint``, ``aioseq_store``...), registered automatically as the
  ``aioseq`` pytest plugin: see [`aioseq.testing.pytest_plugin`][aioseq.testing.pytest_plugin].

The names are imported on first use, so that ``python -m aioseq.testing.moto_server`` and
``python -m aioseq.testing.dynamodb_local`` run their modules once, and importing this package
imports neither moto nor the launcher.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from aioseq.testing.capacity import CapacityModel as CapacityModel
    from aioseq.testing.clock import ManualClock as ManualClock
    from aioseq.testing.dynamodb_local import DynamoDBLocal as DynamoDBLocal
    from aioseq.testing.dynamodb_local import DynamoDBLocalUnavailable as DynamoDBLocalUnavailable
    from aioseq.testing.fake import FakeDynamoDB as FakeDynamoDB
    from aioseq.testing.fault_proxy import FaultProxy as FaultProxy
    from aioseq.testing.faults import FaultSchedule as FaultSchedule
    from aioseq.testing.global_table import SimulatedGlobalTable as SimulatedGlobalTable
    from aioseq.testing.moto_server import MotoServerProcess as MotoServerProcess
    from aioseq.testing.moto_server import SerializedMotoServer as SerializedMotoServer
    from aioseq.testing.servers import Endpoint as Endpoint
    from aioseq.testing.servers import ServerUnavailable as ServerUnavailable
    from aioseq.testing.servers import serving as serving
    from aioseq.testing.servers import serving_endpoint as serving_endpoint

__all__ = [
    "CapacityModel",
    "DynamoDBLocal",
    "DynamoDBLocalUnavailable",
    "Endpoint",
    "FakeDynamoDB",
    "FaultProxy",
    "FaultSchedule",
    "ManualClock",
    "MotoServerProcess",
    "SerializedMotoServer",
    "ServerUnavailable",
    "SimulatedGlobalTable",
    "serving",
    "serving_endpoint",
]

_MODULES = {
    "CapacityModel": "aioseq.testing.capacity",
    "DynamoDBLocal": "aioseq.testing.dynamodb_local",
    "DynamoDBLocalUnavailable": "aioseq.testing.dynamodb_local",
    "Endpoint": "aioseq.testing.servers",
    "FakeDynamoDB": "aioseq.testing.fake",
    "FaultProxy": "aioseq.testing.fault_proxy",
    "FaultSchedule": "aioseq.testing.faults",
    "ManualClock": "aioseq.testing.clock",
    "MotoServerProcess": "aioseq.testing.moto_server",
    "SerializedMotoServer": "aioseq.testing.moto_server",
    "ServerUnavailable": "aioseq.testing.servers",
    "SimulatedGlobalTable": "aioseq.testing.global_table",
    "serving": "aioseq.testing.servers",
    "serving_endpoint": "aioseq.testing.servers",
}


def __getattr__(name: str) -> Any:
    if name not in _MODULES:
        raise AttributeError(f"module 'aioseq.testing' has no attribute {name!r}")
    return getattr(importlib.import_module(_MODULES[name]), name)
