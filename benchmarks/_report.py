"""What every benchmark report starts with: when, where, which versions."""

from __future__ import annotations

import platform
import time
from typing import Any

import aioseq


def header(endpoint: str) -> dict[str, Any]:
    """Date, machine, Python and aioseq versions, and the server measured."""
    return {
        "date": time.strftime("%Y-%m-%d %H:%M:%S %z"),
        "machine": f"{platform.machine()}, {platform.python_implementation()} "
        f"{platform.python_version()}",
        "aioseq": aioseq.__version__,
        "endpoint": endpoint,
    }
