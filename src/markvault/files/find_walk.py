"""GNU find's walk of the vault, in a process of its own, for one look at the disk.

A walk in Python holds the GIL and takes one core; find needs neither, so a one-shot
command starts it as it becomes the owner, and it walks on the other core while the
index layer is imported. Its listing serves twice: the freshness check's digest
(``FindWalk.digest``) and the scan of the vault's files (``VaultFiles.scan_listing``
turns it into what ``VaultFiles.scan_all`` would find). Where find is missing (not
Linux) or fails, the callers walk in Python.

Kept apart from ``vault_scan.py`` (which parses the listing) and ``core/freshness.py``
(which digests it): both the freshness look and a one-shot `vault reindex` start it,
before anything heavy is imported, so it imports nothing of markvault.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import shutil
import sys
import tempfile
from dataclasses import dataclass

# GNU find's look at the vault, as ``stat_sum``'s: hidden entries and the index folder
# pruned (walk.py's rule but the ignore rules, as ``stat_sum``: tests/test_walk.py), a
# line per entry (type, mtime, ctime, inode, size, path: ctime and inode see a restored
# mtime, racy.py), links by path alone (statted after, following them as ``stat_sum``
# does).
FIND_ARGS = (
    "(", "-name", ".*", "-o", "-path", "{skip}", ")", "-prune",
    "-o", "-type", "l", "-printf", "l %P\\0",
    "-o", "-printf", "%y %T@ %C@ %i %s %P\\0",
)  # fmt: skip
LINK_LINE = re.compile(rb"(?:^|\0)l ([^\0]*)")


@dataclass(frozen=True)
class FindListing:
    """What one find walk listed (``FIND_ARGS``' NUL-ended lines) under ``root``, with
    the ``skip`` folder (the index) pruned."""

    root: str
    skip: str
    data: bytes


def find_digest(root: str, skip: str) -> str | None:
    """A digest of every file's and folder's path, mtime and size under ``root`` (as
    ``stat_sum`` walks it), taken by GNU find; None where there is none or it failed."""
    walk = FindWalk.start(root, skip)
    return walk.digest() if walk is not None else None


class FindWalk:
    """GNU find's look at ``root`` (``FIND_ARGS``), under way in a process of its own:
    unlike a walk in Python it needs no GIL, so it runs beside the call on another core.
    Spawned by ``os.posix_spawn``, not ``subprocess``: a one-shot search starts it
    before its imports are done, and ``subprocess`` with ``signal`` is ~1.5 ms of
    imports more. Every descriptor Python opens is close-on-exec, DuckDB's too, so find
    inherits only the standard three (its output goes to a temporary file)."""

    def __init__(self, find: str, root: str, skip: str) -> None:
        pattern = re.sub(r"([*?\[\]\\])", r"\\\1", skip)  # -path takes a glob
        args = [a.replace("{skip}", pattern) for a in FIND_ARGS]
        self.root = root
        self.skip = skip
        self._listing: FindListing | None = None
        self._done = False  # waited for (or stopped) and its file closed
        # Into a file, not a pipe: find never waits on a reader, and the look's thread
        # takes the GIL back once, when find is done, not once per pipe's worth of output.
        self._out = tempfile.TemporaryFile()  # noqa: SIM115 - closed by listing or cancel
        try:
            self.pid = os.posix_spawn(
                find,
                # -H: a vault reached through a link is walked (links inside are not).
                [find, "-H", root, "-mindepth", "1", *args],
                {**os.environ, "LC_ALL": "C"},
                file_actions=[
                    (os.POSIX_SPAWN_DUP2, self._out.fileno(), 1),
                    (os.POSIX_SPAWN_OPEN, 2, os.devnull, os.O_WRONLY, 0),
                ],
            )
        except OSError:
            self._out.close()
            raise

    @classmethod
    def start(cls, root: str, skip: str) -> FindWalk | None:
        """The walk under way; None where there is no GNU find (the caller walks)."""
        find = shutil.which("find") if sys.platform.startswith("linux") else None
        if find is None:
            return None
        try:
            return cls(find, root, skip)
        except OSError:
            return None

    def _wait(self) -> int:
        _, status = os.waitpid(self.pid, 0)
        return os.waitstatus_to_exitcode(status)

    def cancel(self) -> None:
        """Stop find (if it still runs) and forget its listing; nothing once done."""
        if self._done:
            return
        self._done = True
        import signal  # rarely needed: not worth its import on every look

        with contextlib.suppress(OSError):
            os.kill(self.pid, signal.SIGKILL)
            self._wait()
        self._out.close()

    def listing(self) -> FindListing | None:
        """Waits for find; what it listed, None when it failed (an unreadable folder)
        or was stopped: the caller walks."""
        if self._done:
            return self._listing
        self._done = True
        with self._out as out:
            if self._wait() != 0:
                return None
            out.seek(0)
            self._listing = FindListing(self.root, self.skip, out.read())
        return self._listing

    def digest(self) -> str | None:
        """Waits for find; the digest of what it listed, None when it failed: the
        caller walks. The listing stays for ``listing``."""
        found = self.listing()
        if found is None:
            return None
        listing, root = found.data, self.root
        digest = hashlib.sha1(listing, usedforsecurity=False)
        digest.update(str(os.stat(root).st_mtime_ns).encode())
        has_links = listing.startswith(b"l ") or b"\0l " in listing  # the search is slower
        for link in LINK_LINE.findall(listing) if has_links else ():
            try:
                st = os.stat(os.path.join(root, os.fsdecode(link)))
            except OSError:
                continue
            digest.update(f"{st.st_mtime_ns} {st.st_size} {st.st_ctime_ns} {st.st_ino}".encode())
        return digest.hexdigest()
