"""What long work reports to, and the reporters that report nowhere."""

from __future__ import annotations

import threading
from typing import Protocol

from markvault.errors import CallCancelled


class Progress(Protocol):
    """What long work reports to: a terminal bar, a relay over the owner's socket."""

    def start(self, label: str, total: int) -> None: ...
    def advance(self, n: int) -> None: ...
    def finish(self) -> None: ...


class NoProgress:
    def start(self, label: str, total: int) -> None:
        pass

    def advance(self, n: int) -> None:
        pass

    def finish(self) -> None:
        pass


class StopsWhen(NoProgress):
    """Reports nowhere; stops the work at its next step once ``stop`` is set (a host
    closing while its watcher syncs: a sync stopped between steps leaves the index whole,
    and the next one finishes the work)."""

    def __init__(self, stop: threading.Event) -> None:
        self.stop = stop

    def start(self, label: str, total: int) -> None:
        self._check()

    def advance(self, n: int) -> None:
        self._check()

    def _check(self) -> None:
        if self.stop.is_set():
            raise CallCancelled("The sync was stopped: markvault is closing.")
