"""Git operations on the vault's repository, noticed by stat: HEAD or git's index
changing, ``index.lock`` held (a checkout, pull or rebase rewriting the work tree)."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path

from markvault.git.repo import find_repo
from markvault.indexing.watch_rules import Signature, file_signature


def _git_dir(root: Path) -> Path | None:
    """The git folder of the repository holding ``root`` (git/repo.py finds it)."""
    repo = find_repo(root)
    return repo.git_dir.resolve() if repo is not None else None


class GitWatch:
    """Notices git operations by stat: HEAD or the index changing, ``index.lock`` held.

    Stat, not events: a vault inside a project's repository has its ``.git`` outside
    the watched folder. Three stats per wake-up cost next to nothing.
    """

    def __init__(self, root: Path, stale_lock_s: float, warn: Callable[[str], None]) -> None:
        self.root = root
        self.stale_lock_s = stale_lock_s
        self._warn = warn
        self.git_dir = _git_dir(root)
        self.refs = self._refs()
        self.changed_at = 0.0  # monotonic time HEAD, the index or the lock last changed
        self._lock: float | None = self._lock_mtime()
        self.stale_lock_reported = False

    def _refs(self) -> tuple[Signature, Signature]:
        if self.git_dir is None:
            return (None, None)
        return (file_signature(self.git_dir / "HEAD"), file_signature(self.git_dir / "index"))

    def _lock_mtime(self) -> float | None:
        if self.git_dir is None:
            return None
        try:
            return os.stat(self.git_dir / "index.lock").st_mtime
        except OSError:
            return None

    def rediscover(self) -> None:
        """Look for a repository again (``git init`` or ``clone`` after the start)."""
        if self.git_dir is None or not self.git_dir.is_dir():
            self.git_dir = _git_dir(self.root)
            self.refs = self._refs()

    def poll(self, now: float) -> bool:
        """Re-stat; True when HEAD or the index changed (a reconcile is due once quiet)."""
        if self.git_dir is None:
            return False
        lock = self._lock_mtime()
        if lock != self._lock:
            self._lock = lock
            self.changed_at = now
            self.stale_lock_reported = False
        refs = self._refs()
        if refs == self.refs:
            return False
        self.refs = refs
        self.changed_at = now
        return True

    def busy(self, quiet_s: float) -> bool:
        """Whether a git operation holds the index lock. A lock untouched for
        ``stale_lock_s`` while the vault was quiet is a crashed git's: ignored."""
        if self._lock is None:
            return False
        stale = min(time.time() - self._lock, quiet_s) >= self.stale_lock_s
        if stale and not self.stale_lock_reported:
            self.stale_lock_reported = True
            self._warn(
                f"{self.git_dir}/index.lock has been there for {time.time() - self._lock:.0f} s "
                "with the vault quiet: taken for a crashed git's; changes are synced again."
            )
        return not stale
