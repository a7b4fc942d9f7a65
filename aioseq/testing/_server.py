"""What the test servers share: ``start()``/``stop()`` and the context-manager protocol."""

from __future__ import annotations

from types import TracebackType
from typing import TypeVar

S = TypeVar("S", bound="Server")


class Server:
    """Base of the test servers: ``with server:`` starts it and always stops it."""

    def start(self) -> None:
        raise NotImplementedError

    def stop(self) -> None:
        raise NotImplementedError

    def __enter__(self: S) -> S:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()
