"""What the host that runs a core's calls lends that core, given once when it is made.

The core runs one call at a time on the host's turn (``runtime/local_host.py``). Three
things of that turn reach into the core's work: a call that waits on the network lends
the turn to other calls meanwhile (`vault sync`'s fetch and push); an owner keeps, or
takes back, its owner lock before it rebuilds an index whose folder was deleted; and a
rebuilt index wakes the host's background embedding. A core made without a host (a
benchmark, a test of the core) lends nothing, always may rebuild, and wakes nobody.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass


def _may_rebuild() -> bool:
    return True


def _nobody() -> None:
    return None


@dataclass(frozen=True)
class HostTurns:
    """The host's part in the core's work (see the module's docstring)."""

    # Let other calls run while the current one waits on something that touches neither
    # the index nor, unlocked, the files; the turn is taken back after.
    lend: Callable[[], AbstractContextManager[None]] = contextlib.nullcontext
    # Before a rebuild: keep (or take back) the owner lock; False when another process
    # holds it now (this one must not write the index any more).
    claim: Callable[[], bool] = _may_rebuild
    # After a rebuild: the index has chunks without vectors.
    recovered: Callable[[], None] = _nobody
