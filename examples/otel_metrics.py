"""OpenTelemetry metrics from aioseq, as ``docs/observability.md`` shows them.

The page includes the part between the ``--8<--`` markers. The test suite does not run it (it
sets the process's global meter provider and starts an exporter thread); ``make lint``
type-checks it.
"""

from __future__ import annotations

import aioseq


async def open_observed_store() -> aioseq.DynamoStore:
    # --8<-- [start:otel]
    from opentelemetry import metrics
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import (
        ConsoleMetricExporter,
        PeriodicExportingMetricReader,
    )

    from aioseq.observe import OpenTelemetryObserver

    reader = PeriodicExportingMetricReader(ConsoleMetricExporter())
    metrics.set_meter_provider(MeterProvider(metric_readers=[reader]))
    store = await aioseq.DynamoStore.open(observer=OpenTelemetryObserver())
    # --8<-- [end:otel]
    return store
