"""`vault sync` as the core runs it: git's part (``gitsync.py``), then the index.

It runs as a write where the index is owned, so no markvault write of this vault's
owner is in flight meanwhile, and the vault's write lock (``gitrepo.py``) keeps out the
writes of every other process while git changes the files. While git fetches and
pushes, the owner lends its turn: searches and writes go on (they take the write lock
as usual), only a second sync is turned away. What git brought is indexed
before the call returns: the next search finds it.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

from markvault.errors import IndexBusyError, UsageError
from markvault.git.sync import PullMode, SyncOptions, sync_vault

if TYPE_CHECKING:
    from markvault.answers.sync import SyncAnswer
    from markvault.core.lifecycle import IndexKeeper

PULL_MODES: tuple[PullMode, ...] = ("merge", "rebase")


class GitSync:
    """Commits, pulls and pushes one vault, and indexes what arrived."""

    def __init__(self, keeper: IndexKeeper) -> None:
        self.keeper = keeper
        # Held through a whole sync: other calls run while it fetches and pushes, and
        # one of them may be another sync (git would refuse the second halfway).
        self._running = threading.Lock()

    def sync(
        self,
        *,
        message: str | None = None,
        push: bool = True,
        dry_run: bool = False,
        pull: str | None = None,
        interactive: bool = False,
    ) -> SyncAnswer:
        """Commit what changed, pull, push, index what arrived (``gitsync.sync_vault``).
        ``pull``: "merge" or "rebase" (None: the vault's ``[sync] pull``)."""
        settings = self.keeper.settings
        mode = settings.sync.pull if pull is None else pull
        if mode not in PULL_MODES:
            raise UsageError(f"pull must be merge or rebase, not {pull!r}.")
        options = SyncOptions(
            message=message,
            push=push,
            dry_run=dry_run,
            pull=mode,
            interactive=interactive,
            trash=settings.sync.trash,
        )
        if not self._running.acquire(blocking=False):
            raise IndexBusyError("A vault sync is already running here.", "Retry when it is done.")
        try:
            with self.keeper.busy("Syncing with git"):  # what a busy answer says
                report = sync_vault(settings.vault_dir, options, network=self.keeper.host.lend)
        finally:
            self._running.release()
        indexed = None
        if report.changed_paths and settings.db_path.exists():
            # Keywords at once; vectors too where the model is loaded (a server), else
            # at the next `vault reindex` or by a server's background embedding.
            indexed = self.keeper.refresh(paths=report.changed_paths)
        return {**report.to_json(), "index": indexed.to_json() if indexed else None}
