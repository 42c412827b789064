"""What one core runs with: made in one place, passed in whole, never set from outside.

A ``RuntimeContext`` is made by the host that runs the core's calls (``runtime/
local_host.py``), or by a test or benchmark of the core itself, and handed to ``Core``,
which hands it to its ``IndexKeeper``: the settings, a model several vaults share, and
work already under way for the first call (a look at the disk, GNU find's walk).

Its ``HostLink`` is what the host lends the core. The core runs one call at a time on
the host's turn, and the host's background work (the watcher, ``[sync] auto``, the
model loading) goes on beside it. Where these reach into the core's work, the core asks
its host through the link: a call that waits on the network lends the turn to other
calls meanwhile (`vault sync`'s fetch and push); an owner keeps, or takes back, its
owner lock before it rebuilds an index whose folder was deleted; a rebuilt index wakes
the host's background embedding; status and the freshness check look at the host's
watcher and autosync; a search waits for a model loading in the background as long as
the host says. A core made without a host lends nothing, always may rebuild, wakes
nobody, has no watcher or autosync, and loads the model when a search needs it.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from markvault.config import Settings

if TYPE_CHECKING:
    from markvault.core.disk_look import LookAhead
    from markvault.embed.embedder import Embedder
    from markvault.files.find_walk import FindWalk
    from markvault.git.autosync import AutoSync
    from markvault.indexing.watcher import Watcher


def _may_rebuild() -> bool:
    return True


def _nobody() -> None:
    return None


@dataclass(frozen=True)
class HostLink:
    """The host's part in the core's work (see the module's docstring)."""

    # Let other calls run while the current one waits on something that touches neither
    # the index nor, unlocked, the files; the turn is taken back after.
    lend: Callable[[], AbstractContextManager[None]] = contextlib.nullcontext
    # Before a rebuild: keep (or take back) the owner lock; False when another process
    # holds it now (this one must not write the index any more).
    claim: Callable[[], bool] = _may_rebuild
    # After a rebuild: the index has chunks without vectors.
    recovered: Callable[[], None] = _nobody
    # The host's watcher of the files, and its ``[sync] auto`` runner, when running.
    watcher: Callable[[], Watcher | None] = _nobody
    autosync: Callable[[], AutoSync | None] = _nobody
    # Seconds a search waits for a model loading in the background (None: it loads it).
    model_wait: Callable[[], float | None] = _nobody


@dataclass(frozen=True)
class RuntimeContext:
    """What one core runs with (see the module's docstring)."""

    settings: Settings
    # A model several vaults share (used only where its name is the settings' model).
    embedder: Embedder | None = None
    # A look at the disk already under way for the first call's freshness check
    # (``freshness.look_ahead``): a one-shot search.
    look: LookAhead | None = None
    # GNU find's walk of the vault already under way for the first call's sync, which
    # scans the vault from its listing (a one-shot `vault reindex`). Only that sync,
    # right away: a later one walks the vault as it is then.
    walk: FindWalk | None = None
    host: HostLink = field(default_factory=HostLink)
