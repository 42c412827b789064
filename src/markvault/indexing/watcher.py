"""Watch a vault folder and tell a consumer which notes may have changed.

Events are hints, never the truth: watchfiles batches them,
loses their order, reports a rename as a delete plus an add, drops them when the
kernel queue overflows, and gets none from some network filesystems. So a batch only
names the vault-relative paths worth a look (notes, and the other files links may name),
and asks for a full reconcile scan (``full=True``) whenever hints cannot be trusted: at
start, after a git operation, when a folder appears or goes, when ``.markvaultignore``
changes, after a failed callback, and every few minutes. The consumer re-stats and syncs (the Syncer
compares mtime and size, then content hashes, and recognises renames by hash).

Two sources feed one loop:

- ``events``: watchfiles (inotify on Linux) with a short debounce;
- ``polling``: a stat walk of the vault that prunes hidden and ignored folders, every
  ``poll_interval`` seconds. Used when asked for, when the vault sits on a filesystem
  that reports no changes made elsewhere (NFS, SMB, 9p, FUSE, ...), when the vault has
  more folders than the inotify watch limit, and when events fail to start.

The callback runs on the watcher's own thread. Events that arrive meanwhile pile up
and come as one batch afterwards, and the next callback waits at least
``min_interval_ms`` after the last one returned: an editor autosaving every 50 ms
costs a sync every half second, not twenty a second. Nothing here writes to the vault.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import stat as stat_mod
import sys
import threading
import time
from collections.abc import Callable, Generator, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import watchfiles

from markvault.answers.status import WatcherStatus
from markvault.errors import CallCancelled
from markvault.files.vault_files import IGNORE_FILE, TEMP_PREFIX, VaultFiles, is_attachment_name
from markvault.types import StopsWhen

if TYPE_CHECKING:
    from markvault.types import ReindexReport

logger = logging.getLogger(__name__)

EVENTS = "events"
POLLING = "polling"

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

# The loop wakes this often with nothing to do, to run its timers (held batches, git
# state, periodic reconcile). A few stats each time: idle CPU stays near zero.
TICK_S = 0.2
# After a git operation, wait for this much quiet before the one full reconcile.
GIT_SETTLE_S = 0.25
# Past this many paths a batch stops listing them and asks for a full reconcile.
MAX_HINTS = 1000
# Polling slows down when its scans would take more than this share of a core.
POLL_CPU_SHARE = 0.05
# A failing callback is retried after min_interval, doubling up to this.
MAX_RETRY_S = 60.0
MAX_WARNINGS = 20

MOUNTS_FILE = Path("/proc/mounts")
MAX_WATCHES_FILE = Path("/proc/sys/fs/inotify/max_user_watches")
# Filesystems where inotify sees only changes made through this kernel: an edit on
# the server, on another client, or on the host of a VM or container sends nothing.
_NETWORK_FS = ("nfs", "nfs4", "cifs", "smb3", "smbfs", "afs")
_CLUSTER_FS = ("ceph", "glusterfs", "lustre", "gpfs", "beegfs")
_VM_SHARE_FS = ("9p", "virtiofs", "vboxsf", "vmhgfs", "prl_fs", "drvfs")
_FUSE_FS = ("fuse", "fuseblk", "sshfs", "davfs")  # and every "fuse.<name>"
NO_EVENT_FILESYSTEMS = frozenset(_NETWORK_FS + _CLUSTER_FS + _VM_SHARE_FS + _FUSE_FS)

Signature = tuple[int, int, int] | None  # (mtime_ns, size, inode) of a file, None if absent


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
IgnoreRule = Callable[[str, bool], bool]  # (vault-relative path, is a folder) -> ignored


# ---- what the kernel and the disk say ------------------------------------------------------


def file_signature(path: Path) -> Signature:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_mtime_ns, st.st_size, st.st_ino)


def max_user_watches(path: Path = MAX_WATCHES_FILE) -> int | None:
    """The per-user inotify watch limit, or None where there is none to read."""
    try:
        return int(path.read_text().strip())
    except (OSError, ValueError):
        return None


def count_folders(root: Path, stop_at: int) -> int:
    """Folders under ``root`` (itself included), counted up to ``stop_at``.

    Every one costs an inotify watch, hidden and ignored ones too: the watcher below
    watches the whole tree and filters afterwards.
    """
    count = 0
    stack = [str(root)]
    while stack and count < stop_at:
        folder = stack.pop()
        count += 1
        with contextlib.suppress(OSError), os.scandir(folder) as entries:
            stack.extend(e.path for e in entries if e.is_dir(follow_symlinks=False))
    return count


_OCTAL_ESCAPE = re.compile(r"\\([0-7]{3})")


def read_mounts(mounts_file: Path = MOUNTS_FILE) -> list[tuple[str, str]]:
    """(mount point, filesystem type) of every mount, from /proc/mounts."""
    try:
        text = mounts_file.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return []
    mounts = []
    for line in text.splitlines():
        fields = line.split()
        if len(fields) >= 3:
            # Spaces and tabs in mount points are written as octal escapes (\040).
            point = _OCTAL_ESCAPE.sub(lambda m: chr(int(m.group(1), 8)), fields[1])
            mounts.append((point, fields[2]))
    return mounts


def no_event_filesystem(root: Path, mounts_file: Path = MOUNTS_FILE) -> str | None:
    """A description ("nfs4 at /mnt/notes") of a filesystem that holds ``root`` or lies
    inside it and sends no events for changes made elsewhere; None if there is none.

    Read from /proc/mounts, never by writing a probe file: the vault is not ours to write.
    """
    where = str(root)
    holder: tuple[str, str] | None = None
    inside: list[tuple[str, str]] = []
    for point, fstype in read_mounts(mounts_file):
        if where == point or where.startswith(point.rstrip("/") + "/"):
            if holder is None or len(point) >= len(holder[0]):
                holder = (point, fstype)
        elif point.startswith(where.rstrip("/") + "/"):
            inside.append((point, fstype))
    for point, fstype in ([holder] if holder else []) + inside:
        if fstype in NO_EVENT_FILESYSTEMS or fstype.startswith("fuse."):
            return f"{fstype} at {point}"
    return None


def find_git_dir(root: Path) -> Path | None:
    """The git folder of the repository holding ``root``: the vault may be its own
    repository, a folder inside a project's, or a worktree whose ``.git`` is a file."""
    for folder in (root, *root.parents):
        dot = folder / ".git"
        if dot.is_dir():
            return dot
        if dot.is_file():
            try:
                text = dot.read_text(encoding="utf-8", errors="replace").strip()
            except OSError:
                return None
            if not text.startswith("gitdir:"):
                return None
            return (folder / text.removeprefix("gitdir:").strip()).resolve()
    return None


# ---- which paths can be notes --------------------------------------------------------------


class _Rules:
    """The rules of ``VaultFiles.scan``: ``.md`` files outside hidden folders and not
    matched by ``.markvaultignore``; never temp files or the index folder.

    Answers come from the path alone (the stat the consumer makes anyway is the
    truth); folder answers are cached, and the rules reload when the ignore file
    changes on disk.
    """

    def __init__(self, root: Path, index_dir: Path | None, ignore: IgnoreRule | None) -> None:
        self.root = root
        self.index_rel = _relative(index_dir, root) if index_dir else None
        self._custom = ignore
        self._signature = file_signature(root / IGNORE_FILE)
        self._ignored = self._load()
        self._folders: dict[str, bool] = {}

    def _load(self) -> IgnoreRule:
        return self._custom or VaultFiles(self.root).is_ignored

    def reload_if_changed(self) -> bool:
        """Reload the ignore rules if the ignore file changed; True when it did."""
        signature = file_signature(self.root / IGNORE_FILE)
        if signature == self._signature:
            return False
        self._signature = signature
        self._ignored = self._load()
        self._folders.clear()
        return True

    def hidden(self, rel: str) -> bool:
        """Hidden (``.git``, ``.obsidian``, ``.trash``, temp files), or the index folder."""
        parts = rel.split("/")
        if any(p.startswith(".") for p in parts) or parts[-1].startswith(TEMP_PREFIX):
            return True
        index = self.index_rel
        return index is not None and (rel == index or rel.startswith(index + "/"))

    def folder_ignored(self, rel: str) -> bool:
        """Whether the folder ``rel`` (or one holding it) is left out of the vault."""
        known = self._folders.get(rel)
        if known is None:
            parent = rel.rpartition("/")[0]
            known = (
                self.hidden(rel)
                or bool(parent and self.folder_ignored(parent))
                or self._ignored(rel, True)
            )
            self._folders[rel] = known
        return known

    def is_vault_file(self, rel: str) -> bool:
        """Whether a file at ``rel`` would be a note, or another file links may name
        (an attachment: an image, a PDF), which the index also keeps track of."""
        name = rel.rpartition("/")[2]
        if self.hidden(rel) or not (name.lower().endswith(".md") or is_attachment_name(name)):
            return False
        parent = rel.rpartition("/")[0]
        return not (parent and self.folder_ignored(parent)) and not self._ignored(rel, False)


def _relative(path: Path | str, root: Path) -> str | None:
    """``path`` relative to ``root`` in POSIX form; None outside it or for root itself."""
    text, base = str(path), str(root)
    if not text.startswith(base + os.sep):
        return None
    return text[len(base) + 1 :].replace(os.sep, "/")


def _scan_files(root: Path, rules: _Rules) -> dict[str, Signature]:
    """Signature of every note and attachment: what polling compares from one scan to
    the next."""
    found: dict[str, Signature] = {}
    for rel, entry in _walk(root, rules):
        if entry.is_dir(follow_symlinks=False) or not rules.is_vault_file(rel):
            continue
        with contextlib.suppress(OSError):
            st = entry.stat()  # follows a symlink, as the Syncer's scan does
            if stat_mod.S_ISREG(st.st_mode):
                found[rel] = (st.st_mtime_ns, st.st_size, st.st_ino)
    return found


def _scan_folders(root: Path, rules: _Rules) -> set[str]:
    """Every folder that can hold notes, so that its disappearance can be recognised."""
    return {rel for rel, entry in _walk(root, rules) if entry.is_dir(follow_symlinks=False)}


def _walk(root: Path, rules: _Rules) -> Iterator[tuple[str, os.DirEntry[str]]]:
    """(vault-relative path, entry) under ``root``, pruning folders that hold no notes."""
    stack = [("", str(root))]
    while stack:
        prefix, folder = stack.pop()
        try:
            with os.scandir(folder) as it:
                entries = list(it)
        except OSError:
            continue  # vanished or unreadable: nothing to report from it now
        for entry in entries:
            rel = prefix + entry.name
            if entry.is_dir(follow_symlinks=False):
                if rules.folder_ignored(rel):
                    continue
                stack.append((rel + "/", entry.path))
            yield rel, entry


# ---- the state between batches -------------------------------------------------------------


@dataclass
class _Observed:
    """What one wake-up of a source found, already filtered."""

    paths: set[str] = field(default_factory=set)
    reasons: set[str] = field(default_factory=set)


class _Pending:
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


class _GitWatch:
    """Notices git operations by stat: HEAD or the index changing, ``index.lock`` held.

    Stat, not events: a vault inside a project's repository has its ``.git`` outside
    the watched folder. Three stats per wake-up cost next to nothing.
    """

    def __init__(self, root: Path, stale_lock_s: float, warn: Callable[[str], None]) -> None:
        self.root = root
        self.stale_lock_s = stale_lock_s
        self._warn = warn
        self.git_dir = find_git_dir(root)
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
            self.git_dir = find_git_dir(self.root)
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


class _SourceFailed(Exception):
    """The event source could not start or broke down."""


# ---- the watcher ---------------------------------------------------------------------------


class Watcher:
    """Watches ``vault_dir`` and calls ``on_change(batch)`` with what may have changed.

    ``run(stop_event)`` blocks (for ``vault watch``); ``start()`` / ``stop()`` run it
    on a daemon thread (for the MCP server). The callback always runs on the watcher's
    thread, one batch at a time; it may raise: the error is logged and the next batch
    asks for a full reconcile.

    Args:
        vault_dir: the vault folder.
        on_change: called with each WatchBatch.
        index_dir: the index folder, never reported (markvault keeps it outside the
            vault; this guards a hand-made setup).
        debounce_ms: quiet time that ends a group of events (watchfiles' ``step``).
        min_interval_ms: the least time between the end of one callback and the next;
            changes meanwhile are coalesced.
        poll: True forces polling, False forbids choosing it up front (it still takes
            over if events fail), None decides from the filesystem and watch limit.
        poll_interval: seconds between polling scans; longer if scans get expensive.
        reconcile_interval: seconds between periodic full reconciles; 0 turns them off.
        reconcile_on_start: deliver a full batch once the watch is in place.
        ignore: a ``(path, is_folder) -> ignored`` rule replacing ``.markvaultignore``
            (hidden folders, temp files and non-``.md`` files are always left out).
        max_watches: the inotify watch limit; None reads the kernel's.
        mounts_file: where mounts are listed (tests point it elsewhere).
        stale_lock_s: after this long untouched with a quiet vault, ``.git/index.lock``
            is taken for a crashed git's and no longer holds batches back.
    """

    def __init__(
        self,
        vault_dir: Path | str,
        on_change: OnChange,
        *,
        index_dir: Path | str | None = None,
        debounce_ms: int = 50,
        min_interval_ms: int = 500,
        poll: bool | None = None,
        poll_interval: float = 2.0,
        reconcile_interval: float = 300.0,
        reconcile_on_start: bool = True,
        ignore: IgnoreRule | None = None,
        max_watches: int | None = None,
        mounts_file: Path = MOUNTS_FILE,
        stale_lock_s: float = 30.0,
    ) -> None:
        self.root = Path(vault_dir).resolve()
        if not self.root.is_dir():
            raise NotADirectoryError(f"No vault folder at {self.root}.")
        self._on_change = on_change
        self._rules = _Rules(self.root, Path(index_dir).resolve() if index_dir else None, ignore)
        self._debounce_ms = max(10, int(debounce_ms))
        self._min_interval = max(0.0, min_interval_ms / 1000)
        self._poll = poll
        self._poll_interval = max(0.05, float(poll_interval))
        self._effective_poll = self._poll_interval
        self._reconcile_interval = max(0.0, float(reconcile_interval))
        self._reconcile_on_start = reconcile_on_start
        self._max_watches = max_watches
        self._mounts_file = mounts_file
        self._stale_lock_s = stale_lock_s

        self._mode = ""
        self._reason = "not started"
        self._warnings: list[str] = []
        self._folders: set[str] = set()
        self._watched_folders: int | None = None
        self._watch_limit: int | None = None
        self._pending = _Pending()
        self._git: _GitWatch | None = None
        self._hold_until = 0.0
        self._next_periodic = 0.0
        self._last_event = 0.0
        self._missing_since: float | None = None
        self._restart = False
        self._failures = 0  # consecutive failed callbacks

        self._batches = 0
        self._errors = 0
        self._last_error: str | None = None
        self._last_batch_at: float | None = None
        self._last_batch_full = False
        self._running = False
        self._ready = threading.Event()
        self._stop = threading.Event()
        self._run_stop: threading.Event | None = None
        self._thread: threading.Thread | None = None

    # ---- status ------------------------------------------------------------------------

    @property
    def mode(self) -> str:
        """``events`` or ``polling``; empty before the first start."""
        return self._mode

    @property
    def reason(self) -> str:
        """Why the watcher is in its mode, in words for a person."""
        return self._reason

    @property
    def warnings(self) -> list[str]:
        return list(self._warnings)

    @property
    def last_batch_at(self) -> float | None:
        """``time.time()`` when the last callback returned (or raised)."""
        return self._last_batch_at

    @property
    def running(self) -> bool:
        return self._running

    def status(self) -> WatcherStatus:
        """A JSON-ready summary, e.g. for ``vault status`` or the MCP status tool."""
        return {
            "running": self._running,
            "ready": self._ready.is_set() and self._running,
            "mode": self._mode,
            "reason": self._reason,
            "warnings": list(self._warnings),
            "poll_interval_s": round(self._effective_poll, 3) if self._mode == POLLING else None,
            "reconcile_interval_s": self._reconcile_interval or None,
            "watched_folders": self._watched_folders,
            "git_dir": str(self._git.git_dir) if self._git and self._git.git_dir else None,
            "batches": self._batches,
            "errors": self._errors,
            "last_error": self._last_error,
            "last_batch_at": self._last_batch_at,
            "last_batch_full": self._last_batch_full,
            "pending_paths": len(self._pending.paths),
            "pending_reasons": list(self._pending.reasons),
        }

    # ---- lifecycle ---------------------------------------------------------------------

    def start(self, ready_timeout: float = 10.0) -> None:
        """Run on a daemon thread; returns once the watch is in place (or after
        ``ready_timeout`` seconds), so changes made after it are not missed."""
        if self._thread is not None and self._thread.is_alive():
            return
        self._stop.clear()
        self._ready.clear()
        self._thread = threading.Thread(
            target=self._run_thread, name="markvault-watch", daemon=True
        )
        self._thread.start()
        self._ready.wait(ready_timeout)

    def stop(self, timeout: float = 2.0) -> bool:
        """Ask the watcher to stop and wait up to ``timeout`` s; True once it has.

        A callback in progress is let finish: the wait covers the rest of it.
        """
        self._stop.set()
        if self._run_stop is not None:
            self._run_stop.set()
        thread = self._thread
        if thread is None or thread is threading.current_thread():
            return True
        thread.join(timeout)
        return not thread.is_alive()

    def __enter__(self) -> Watcher:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _run_thread(self) -> None:
        try:
            self.run(self._stop)
        except BaseException as exc:  # the thread's last word: a dead watcher must say why
            self._last_error = f"{type(exc).__name__}: {exc}"
            logger.exception("The vault watcher stopped on an error")

    def run(self, stop_event: threading.Event | None = None) -> None:
        """Watch until ``stop_event`` (or ``stop()``) is set; blocks.

        In the main thread, Ctrl+C raises KeyboardInterrupt out of here.
        """
        if self._running:
            raise RuntimeError("This watcher is already running.")
        stop = stop_event or self._stop
        self._run_stop = stop
        self._running = True
        try:
            self._prepare()
            backoff = 1.0
            while not stop.is_set():
                try:
                    self._watch(stop)
                    backoff = 1.0
                    continue
                except _SourceFailed as exc:
                    if self._source_failed(exc.__cause__ or exc, stop):
                        continue
                    self._record_error(exc, "Watching the vault failed; trying again")
                except Exception as exc:  # a bug here must not end watching for good
                    self._record_error(exc, "The vault watcher hit an error; restarting")
                self._pending.add((), [RETRY], time.monotonic())
                stop.wait(backoff)
                backoff = min(backoff * 2, MAX_RETRY_S)
        finally:
            self._running = False
            self._run_stop = None
            self._ready.set()  # nobody waits for a watcher that is gone

    def _prepare(self) -> None:
        now = time.monotonic()
        self._git = _GitWatch(self.root, self._stale_lock_s, self._warn)
        self._next_periodic = now + self._reconcile_interval
        if self._reconcile_on_start:
            self._pending.add((), [START], now)
        self._mode, self._reason = self._choose_mode()
        logger.info("Watching %s by %s: %s", self.root, self._mode, self._reason)

    def _choose_mode(self) -> tuple[str, str]:
        if self._poll:
            return POLLING, "polling was asked for"
        if self._poll is None:
            filesystem = no_event_filesystem(self.root, self._mounts_file)
            if filesystem:
                self._warn(f"The vault is on {filesystem}, which sends no events; polling.")
                return POLLING, f"the vault is on {filesystem}, which sends no change events"
            over_limit = self._watch_limit_problem()
            if over_limit:
                self._warn(over_limit)
                return POLLING, over_limit
        return EVENTS, "file system events" + (" (inotify)" if sys.platform == "linux" else "")

    def _watch_limit_problem(self) -> str | None:
        """Why inotify cannot watch this vault, or None; warns when it comes close."""
        limit = self._max_watches
        if limit is None:
            if sys.platform != "linux":
                return None
            limit = max_user_watches()
            if limit is None:
                return None
        folders = count_folders(self.root, limit + 1)
        self._watched_folders, self._watch_limit = folders, limit
        if folders > limit:
            return (
                f"the vault has more folders ({folders:,}+) than the inotify watch limit "
                f"({limit:,}, fs.inotify.max_user_watches); raise it with "
                "`sudo sysctl fs.inotify.max_user_watches=524288` to get events"
            )
        if folders > limit // 2:
            self._warn(
                f"The vault's {folders:,} folders take over half of the inotify watch limit "
                f"({limit:,}), which all programs of this user share."
            )
        return None

    def _source_failed(self, exc: BaseException, stop: threading.Event) -> bool:
        """Deal with a source that failed: wait for a missing vault, or leave events for
        polling. False when nothing fits (polling itself failed)."""
        if not self.root.is_dir():
            self._missing_since = self._missing_since or time.monotonic()
            stop.wait(1.0)  # it may come back (a remount): look again in a while
            return True
        if self._mode == POLLING:
            return False
        message = str(exc)
        if "limit" in message.lower() or "MaxFilesWatch" in message:
            why = f"the inotify watch limit was reached ({message.splitlines()[0]})"
        else:
            why = f"file events are unavailable ({type(exc).__name__}: {message})"
        self._warn(f"Polling the vault instead of events: {why}.")
        self._mode, self._reason = POLLING, why
        self._pending.add((), [MODE], time.monotonic())
        return True

    def _warn(self, message: str) -> None:
        """Log a warning and keep it for ``status()``; a repeat is neither."""
        if message in self._warnings:
            return
        logger.warning("%s", message)
        self._warnings = [*self._warnings, message][-MAX_WARNINGS:]

    # ---- the loop ----------------------------------------------------------------------

    def _watch(self, stop: threading.Event) -> None:
        """Feed one source's wake-ups to ``_step`` until stopped or told to restart."""
        self._restart = False
        if self._mode == EVENTS:
            self._folders = _scan_folders(self.root, self._rules)
            source = self._event_source(stop)
        else:
            source = self._poll_source(stop)
        with contextlib.closing(source):
            while not stop.is_set():
                try:
                    observed = next(source)
                except StopIteration:
                    return
                except (OSError, RuntimeError) as exc:
                    raise _SourceFailed(str(exc)) from exc
                self._ready.set()
                self._step(observed)
                if self._restart:
                    return

    def _event_source(self, stop: threading.Event) -> Generator[_Observed, None, None]:
        """Filtered watchfiles batches; an empty one at least every TICK_S."""
        changes = watchfiles.watch(
            self.root,
            watch_filter=None,  # filtered below: .git noise must still wake the loop
            debounce=max(int(self._min_interval * 1000), 4 * self._debounce_ms),
            step=self._debounce_ms,
            stop_event=stop,
            rust_timeout=int(TICK_S * 1000),
            yield_on_timeout=True,
            force_polling=False,
            ignore_permission_denied=False,  # True would hide the watch-limit error too
        )
        with contextlib.closing(changes):
            for raw in changes:
                yield self._classify(raw)

    def _classify(self, raw: set[tuple[watchfiles.Change, str]]) -> _Observed:
        observed = _Observed()
        for change, path in raw:
            rel = _relative(path, self.root)
            if rel is None or self._rules.hidden(rel):
                continue
            if self._is_folder_change(change, rel, path):
                observed.reasons.add(FOLDER)
            elif self._rules.is_vault_file(rel):
                observed.paths.add(rel)
        return observed

    def _is_folder_change(self, change: watchfiles.Change, rel: str, path: str) -> bool:
        """A folder that can hold notes appeared or went (moved in or out, created,
        deleted): the notes inside it send no events of their own."""
        if change == watchfiles.Change.modified:
            return False
        if change == watchfiles.Change.added and os.path.isdir(path):
            if self._rules.folder_ignored(rel):
                return False
            self._folders.add(rel)
            return True
        if change == watchfiles.Change.deleted and rel in self._folders:
            self._folders = {f for f in self._folders if f != rel and not f.startswith(rel + "/")}
            return True
        return False

    def _poll_source(self, stop: threading.Event) -> Generator[_Observed, None, None]:
        """Paths whose signature changed between two scans; an empty batch each tick."""
        snapshot = _scan_files(self.root, self._rules)
        yield _Observed()
        next_scan = time.monotonic() + self._effective_poll
        while not stop.wait(min(TICK_S, self._poll_interval)):
            if time.monotonic() < next_scan or not self.root.is_dir():
                yield _Observed()
                continue
            began = time.perf_counter()
            current = _scan_files(self.root, self._rules)
            spent = time.perf_counter() - began
            self._effective_poll = max(self._poll_interval, spent / POLL_CPU_SHARE)
            next_scan = time.monotonic() + self._effective_poll
            changed = {
                p for p in snapshot.keys() | current.keys() if snapshot.get(p) != current.get(p)
            }
            snapshot = current
            yield _Observed(paths=changed)

    def _step(self, observed: _Observed) -> None:
        """One wake-up: take in what was seen, run the timers, deliver when due."""
        now = time.monotonic()
        if not self._vault_present(now):
            return
        if observed.paths or observed.reasons:
            self._last_event = now
            self._pending.add(observed.paths, observed.reasons, now)
        if self._rules.reload_if_changed():
            self._pending.add((), [IGNORE_RULES], now)
            if self._mode == EVENTS:
                self._folders = _scan_folders(self.root, self._rules)
        assert self._git is not None
        if self._git.poll(now):
            self._pending.add((), [GIT], now)
        self._check_periodic(now)
        # A restart delivers from the new source, once it watches: a change made between
        # this batch and the new watch would be lost otherwise.
        if not self._restart and self._due(now):
            self._deliver()

    def _vault_present(self, now: float) -> bool:
        """False while the vault folder is missing (unmounted, moved): nothing is
        delivered then, or the index would drop every note. When it is back, the
        source restarts (an inotify watch does not survive its folder) with a reconcile."""
        if self.root.is_dir():
            if self._missing_since is not None:
                self._missing_since = None
                self._warn(f"The vault folder {self.root} is back; reconciling.")
                self._pending.add((), [VAULT_BACK], now)
                self._restart = True
            return True
        if self._missing_since is None:
            self._missing_since = now
            self._warn(f"The vault folder {self.root} is missing; waiting for it to return.")
        return False

    def _check_periodic(self, now: float) -> None:
        if not self._reconcile_interval or now < self._next_periodic:
            return
        self._next_periodic = now + self._reconcile_interval
        self._pending.add((), [PERIODIC], now)
        assert self._git is not None
        self._git.rediscover()
        if self._mode == EVENTS and self._near_watch_limit():
            over_limit = self._watch_limit_problem()
            if over_limit:
                self._warn(f"Polling the vault instead of events: {over_limit}.")
                self._mode, self._reason = POLLING, over_limit
                self._restart = True

    def _near_watch_limit(self) -> bool:
        """Whether the folder count is worth checking again: inotify silently leaves new
        folders unwatched past the limit. Counting walks the whole tree, so only when
        the last count came within a quarter of it."""
        folders, limit = self._watched_folders, self._watch_limit
        if self._poll is not None or folders is None or limit is None:
            return False
        return folders > limit // 4

    def _due(self, now: float) -> bool:
        if not self._pending or now < self._hold_until:
            return False
        assert self._git is not None
        if self._git.busy(now - self._last_event):
            return False  # a checkout or pull is writing: one reconcile once it is done
        settled_at = max(self._last_event, self._git.changed_at) + GIT_SETTLE_S
        return GIT not in self._pending.reasons or now >= settled_at

    def _deliver(self) -> None:
        batch = self._pending.take(time.monotonic())
        try:
            self._on_change(batch)
        except Exception as exc:
            self._failures += 1
            self._pending.add(batch.paths, [*batch.reasons, RETRY], batch.since)
            delay = min(max(self._min_interval, 0.5) * 2 ** (self._failures - 1), MAX_RETRY_S)
            self._record_error(exc, f"The change callback failed; retrying in {delay:.1f} s")
        else:
            self._failures = 0
            delay = self._min_interval
        finished = time.monotonic()
        self._hold_until = finished + delay
        if batch.full:
            self._next_periodic = finished + self._reconcile_interval
        self._batches += 1
        self._last_batch_at = time.time()
        self._last_batch_full = batch.full

    def _record_error(self, exc: Exception, message: str) -> None:
        self._errors += 1
        self._last_error = f"{type(exc).__name__}: {exc}"
        # The traceback once; a failure that repeats (a busy index) gets one line each.
        logger.error("%s: %s", message, self._last_error, exc_info=self._failures <= 1)


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
