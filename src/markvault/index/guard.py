"""An owner that survives its index: the index file is derived data, and the README
says it may be deleted at any time, also while `vault mcp` or `vault watch` runs.

A long-lived owner holds the DuckDB file open. Deleted, it keeps writing to a file
nobody else can see (and DuckDB cannot re-create its log in a folder that is gone);
replaced, it answers from the old one; overwritten in place, DuckDB reads garbage. So
each turn at the index (``IndexTurns``: a call, a watcher's sync, a group of background
vectors) first compares the file with what this process left there at the end of its
last turn (``FileStamp``: device, inode, size, mtime and ctime; one ``stat``), and when
it differs the keeper rebuilds the index from the vault before the turn goes on
(``IndexKeeper.recover``). Only the owner writes the file, and only during a turn, so a
difference is always another program's doing. A DuckDB error that says the file cannot
be read (``is_index_failure``) is answered the same way, and the call retried once.

docs/index-lifecycle.md tells the whole story, the owner lock included.
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

DUCKDB_MAGIC = b"DUCK"  # where every DuckDB file says what it is: bytes 8-11
_MAGIC_AT = 8


def looks_like_duckdb(path: Path) -> bool:
    """Whether the file at ``path`` still starts as a DuckDB file does (one small read):
    written over during a turn of this process, its stamp cannot tell (the turn wrote it
    too), but garbage or zeros over its head can."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(_MAGIC_AT + len(DUCKDB_MAGIC))
    except OSError:
        return False
    return head[_MAGIC_AT:] == DUCKDB_MAGIC


class FileStamp(NamedTuple):
    """What one ``stat`` says of the index file: who it is and whether it was written."""

    dev: int
    ino: int
    size: int
    mtime_ns: int
    ctime_ns: int

    @classmethod
    def of(cls, path: Path) -> FileStamp | None:
        """The file's stamp; None when there is no file."""
        try:
            st = os.stat(path)
        except OSError:
            return None
        return cls(st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)

    def change(self, now: FileStamp | None) -> str | None:
        """Why ``now`` is not the file this stamp was taken of, in words; None when it is."""
        if now is None:
            return "the index file was deleted"
        if (now.dev, now.ino) != (self.dev, self.ino):
            return "the index file was replaced by another file"
        if now != self:
            return "the index file was changed by another program"
        return None


# DuckDB's errors that say the file cannot be read as a database (deleted under it,
# overwritten, truncated, a folder gone so its log cannot be written); not a lock held by
# another process, not a mistake in a query.
_FAILURES = ("IOException", "InternalException", "FatalException", "SerializationException")
_FAILURE_WORDS = ("database has been invalidated", "not a valid duckdb", "corrupt")


def is_index_failure(exc: BaseException) -> bool:
    """Whether ``exc`` says the index file is broken (see ``_FAILURES``)."""
    duckdb = sys.modules.get("_duckdb")
    if duckdb is None or not isinstance(exc, duckdb.Error):
        return False
    text = str(exc).lower()
    if "lock" in text or "already attached" in text:
        return False  # another process holds it: busy, not broken
    return type(exc).__name__ in _FAILURES or any(w in text for w in _FAILURE_WORDS)


class IndexTurns:
    """The host's one-call-at-a-time lock (re-entrant, as ``threading.RLock``) that also
    checks the index at the start of each outermost turn and stamps it at the end (see
    the module's docstring). ``check`` runs with the lock held; ``stamp`` too."""

    def __init__(self, check: Callable[[], None], stamp: Callable[[], None]) -> None:
        self._lock = threading.RLock()
        self._check = check
        self._stamp = stamp
        self._depth = threading.local()
        self.checking = True  # off once the host closes: a closing host rebuilds nothing

    def _level(self) -> int:
        return getattr(self._depth, "n", 0)

    def acquire(self, blocking: bool = True, timeout: float = -1) -> bool:
        if not self._lock.acquire(blocking, timeout):
            return False
        level = self._level()
        self._depth.n = level + 1
        if level == 0 and self.checking:
            try:
                self._check()
            except BaseException:
                self.release()
                raise
        return True

    def release(self) -> None:
        level = self._level() - 1
        self._depth.n = level
        try:
            if level == 0:
                self._stamp()
        finally:
            self._lock.release()

    def __enter__(self) -> bool:
        return self.acquire()

    def __exit__(self, *exc: object) -> None:
        self.release()
