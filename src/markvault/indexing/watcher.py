"""Watch a vault folder and tell a consumer which notes may have changed.

Events are hints, never the truth: watchfiles batches them,
loses their order, reports a rename as a delete plus an add, drops them when the
kernel queue overflows, and gets none from some network filesystems. So a batch only
names the vault-relative paths worth a look (notes, and the other files links may name),
and asks for a full reconcile scan (``full=True``) whenever hints cannot be trusted: at
start, after a git operation, when a folder appears or goes, when ``.markvaultignore``
changes, after a failed callback, and every few minutes (watch_batches.py: the batches
and the callback that syncs them). The consumer re-stats and syncs (the Syncer
compares mtime and size, then content hashes, and recognises renames by hash).

Two sources feed one loop:

- ``events``: watchfiles (inotify on Linux) with a short debounce;
- ``polling``: a stat walk of the vault (walk.py's, with the vault's rules:
  watch_rules.py) that prunes hidden and ignored folders, every
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
import sys
import threading
import time
from collections.abc import Generator
from pathlib import Path
from typing import TYPE_CHECKING

import watchfiles

from markvault.indexing.watch_batches import (
    FOLDER,
    GIT,
    IGNORE_RULES,
    MODE,
    PERIODIC,
    RETRY,
    START,
    VAULT_BACK,
    Observed,
    OnChange,
    Pending,
)
from markvault.indexing.watch_git import GitWatch
from markvault.indexing.watch_limits import (
    MOUNTS_FILE,
    count_folders,
    max_user_watches,
    no_event_filesystem,
)
from markvault.indexing.watch_rules import WatchRules, relative_path, scan_files, scan_folders

if TYPE_CHECKING:
    from markvault.answers.status import WatcherStatus

logger = logging.getLogger(__name__)

EVENTS = "events"
POLLING = "polling"

# The loop wakes this often with nothing to do, to run its timers (held batches, git
# state, periodic reconcile). A few stats each time: idle CPU stays near zero.
TICK_S = 0.2
# After a git operation, wait for this much quiet before the one full reconcile.
GIT_SETTLE_S = 0.25
# Polling slows down when its scans would take more than this share of a core.
POLL_CPU_SHARE = 0.05
# A failing callback is retried after min_interval, doubling up to this.
MAX_RETRY_S = 60.0
MAX_WARNINGS = 20


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
        max_watches: int | None = None,
        mounts_file: Path = MOUNTS_FILE,
        stale_lock_s: float = 30.0,
    ) -> None:
        self.root = Path(vault_dir).resolve()
        if not self.root.is_dir():
            raise NotADirectoryError(f"No vault folder at {self.root}.")
        self._on_change = on_change
        self._rules = WatchRules(self.root, Path(index_dir).resolve() if index_dir else None)
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
        self._pending = Pending()
        self._git: GitWatch | None = None
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
        self._git = GitWatch(self.root, self._stale_lock_s, self._warn)
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
            self._folders = scan_folders(self.root, self._rules)
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

    def _event_source(self, stop: threading.Event) -> Generator[Observed, None, None]:
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

    def _classify(self, raw: set[tuple[watchfiles.Change, str]]) -> Observed:
        observed = Observed()
        for change, path in raw:
            rel = relative_path(path, self.root)
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

    def _poll_source(self, stop: threading.Event) -> Generator[Observed, None, None]:
        """Paths whose signature changed between two scans; an empty batch each tick."""
        snapshot = scan_files(self.root, self._rules)
        yield Observed()
        next_scan = time.monotonic() + self._effective_poll
        while not stop.wait(min(TICK_S, self._poll_interval)):
            if time.monotonic() < next_scan or not self.root.is_dir():
                yield Observed()
                continue
            began = time.perf_counter()
            current = scan_files(self.root, self._rules)
            spent = time.perf_counter() - began
            self._effective_poll = max(self._poll_interval, spent / POLL_CPU_SHARE)
            next_scan = time.monotonic() + self._effective_poll
            changed = {
                p for p in snapshot.keys() | current.keys() if snapshot.get(p) != current.get(p)
            }
            snapshot = current
            yield Observed(paths=changed)

    def _step(self, observed: Observed) -> None:
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
                self._folders = scan_folders(self.root, self._rules)
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
