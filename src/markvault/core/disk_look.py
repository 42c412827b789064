"""A freshness check's look at the disk, in a thread of its own, and what it found.

The disk side of a check (``freshness.py``: stat calls, git's processes, GNU find) needs
no index, so it runs in a thread beside the call's own work, and for a one-shot `vault
search` it starts before the index layer is imported (``freshness.look_ahead``); the
core takes such a look from its ``RuntimeContext``.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any, NamedTuple

from markvault.errors import MarkvaultError
from markvault.files.find_walk import FindListing


class DiskPlan(NamedTuple):
    """What the disk side of a check found, for the index side to settle."""

    state: dict[str, Any]  # what the last check saw
    new_state: dict[str, Any]  # what this one saw, saved once settled
    walk_all: bool  # compare every file with the index (nothing narrower to start from)
    candidates: set[str]  # else only these paths
    listing: FindListing | None = None  # what find listed, for ``walk_all`` (no 2nd walk)


class LookAhead(threading.Thread):
    """The disk side of a check, in a thread: stat calls and git's processes release the
    GIL, so it runs beside the call's own work on another core."""

    def __init__(self, look: Callable[[], DiskPlan | None]) -> None:
        super().__init__(name="markvault-fresh", daemon=True)
        self._look = look
        self.plan: DiskPlan | None = None
        self.error: MarkvaultError | OSError | None = None
        self.took = 0.0  # seconds the look took
        self.start()

    def run(self) -> None:
        began = time.monotonic()
        try:
            self.plan = self._look()
        except (MarkvaultError, OSError) as exc:
            self.error = exc
        self.took = time.monotonic() - began
