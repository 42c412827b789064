"""What a vault watcher delivers: batches of paths that may have changed, why a batch
asks for a full reconcile, and the callback that syncs a vault's index with each.

Kept apart from watcher.py (which loads watchfiles): the hosts and the call layer name
a ``WatchBatch`` without starting a watch.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from markvault.errors import CallCancelled
from markvault.types.progress import StopsWhen

if TYPE_CHECKING:
    from markvault.types.reindex import ReindexReport

# Why a batch asks for a full reconcile (WatchBatch.reasons).
START = "start"  # the watcher started: anything may have changed while nobody looked
GIT = "git"  # HEAD or the git index changed: a checkout, pull, reset or stash
PERIODIC = "periodic"  # the safety net for lost events (queue overflow, odd filesystems)
FOLDER = "folder"  # a folder appeared or went: its notes send no events of their own
IGNORE_RULES = "ignore-file"  # .markvaultignore changed: the set of notes changed
MANY = "many-changes"  # more paths than are worth listing; the kernel may have dropped some
RETRY = "retry"  # the previous callback failed
MODE = "mode-change"  # events broke down and polling took over
VAULT_BACK = "vault-back"  # the vault folder was missing (unmounted?) and is back
# Past this many paths a batch stops listing them and asks for a full reconcile.
MAX_HINTS = 1000


@dataclass(frozen=True)
class WatchBatch:
    """What may have changed since the previous batch.

    ``paths`` are vault-relative POSIX paths (as named on disk) of notes (``.md``) and
    other files links may name (attachments) that were added, modified, deleted or
    renamed (a rename lists both names). They are
    hints: a path may be gone or unchanged by the time the consumer looks. ``full``
    means the hints are incomplete and every file must be re-statted; ``reasons`` says
    why (``start``, ``git``, ``periodic``, ``folder``, ``ignore-file``,
    ``many-changes``, ``retry``, ``mode-change``, ``vault-back``). ``since`` is the
    ``time.monotonic()`` at which the oldest change in the batch was seen.
    """

    paths: frozenset[str]
    full: bool
    reasons: tuple[str, ...]
    since: float


OnChange = Callable[[WatchBatch], None]


@dataclass
class Observed:
    """What one wake-up of a source found, already filtered."""

    paths: set[str] = field(default_factory=set)
    reasons: set[str] = field(default_factory=set)


class Pending:
    """Changes seen but not yet delivered."""

    def __init__(self) -> None:
        self.paths: set[str] = set()
        self.reasons: list[str] = []
        self.since: float | None = None

    def __bool__(self) -> bool:
        return bool(self.paths or self.reasons)

    def add(self, paths: Iterable[str], reasons: Iterable[str], now: float) -> None:
        for reason in reasons:
            if reason not in self.reasons:
                self.reasons.append(reason)
        if MANY not in self.reasons:
            self.paths.update(paths)
            if len(self.paths) > MAX_HINTS:
                self.reasons.append(MANY)
        if self and self.since is None:
            self.since = now

    def take(self, now: float) -> WatchBatch:
        batch = WatchBatch(
            frozenset(self.paths), bool(self.reasons), tuple(self.reasons), self.since or now
        )
        self.paths, self.reasons, self.since = set(), [], None
        return batch


class Synced(Protocol):
    """What a watcher's callback syncs: a vault's ``core.lifecycle.IndexKeeper``."""

    def refresh(self, progress: Any = None, paths: Iterable[str] | None = None) -> ReindexReport:
        """Sync ``paths`` (all files when None), embedding only with the model loaded."""

    def reindex(
        self, *, vectors: bool = True, progress: Any = None, paths: Iterable[str] | None = None
    ) -> ReindexReport:
        """Sync ``paths``, embedding or not as ``vectors`` says."""

    def reload_ignore_rules(self) -> None:
        """Read ``.markvaultignore`` again."""


def vault_callback(
    vault: Synced,
    lock: contextlib.AbstractContextManager[Any] | None = None,
    *,
    vectors: bool | None = None,
    on_report: Callable[[WatchBatch, ReindexReport], None] | None = None,
    stop: threading.Event | None = None,
) -> OnChange:
    """A callback that brings ``vault``'s index in step with each batch.

    A batch with hints syncs only those paths (a rename names both, so the Syncer
    still matches it by hash); a full one runs the whole stat scan, which reads only
    files whose mtime or size changed. ``lock`` serialises the sync with whatever else
    uses the vault (its DuckDB connection is not for two threads at once).
    ``vectors``: None embeds only when the model is already loaded (as
    ``IndexKeeper.refresh``); True or False forces it. ``stop``: once set (the host
    closing), a sync under way stops at its next step and the batch is dropped, so
    closing never waits for a long first sync.
    """
    guard: contextlib.AbstractContextManager[Any] = lock if lock is not None else threading.Lock()
    progress = StopsWhen(stop) if stop is not None else None

    def on_change(batch: WatchBatch) -> None:
        paths = None if batch.full else sorted(batch.paths)
        try:
            with guard:
                if IGNORE_RULES in batch.reasons:
                    vault.reload_ignore_rules()
                if vectors is None:
                    report = vault.refresh(progress=progress, paths=paths)
                else:
                    report = vault.reindex(vectors=vectors, progress=progress, paths=paths)
        except CallCancelled:
            if stop is not None and stop.is_set():
                return  # closing: the next owner's first sync does the work
            raise
        if on_report is not None:
            on_report(batch, report)

    return on_change
