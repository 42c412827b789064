"""Calls run here: this process's own core, one call at a time.

A ``LocalHost`` is where every declared call ends (``calls.py``): for a vault that no
other process shares (``open_local``), and for the owner of a shared index, whose
socket server hands it the calls of every other process (``owner.py``). DuckDB's
connection is not for two threads at once, so calls take turns on one lock; a read
that finds a long sync holding it (a first build, a big checkout) is answered within
seconds, saying so, rather than left waiting.

A host that owns a shared index also keeps it fresh for everyone: before each call it
syncs what changed on disk since it last looked (``core/freshness.py``), it watches the
files, embeds new chunks in the background, a small group at a time, and with ``[sync]
auto`` syncs the vault with git on its own (``autosync.py``).
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import sys
import threading
import time
import weakref
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from markvault import errors
from markvault.calls import Call, SyncReport
from markvault.config import Settings
from markvault.core import Core
from markvault.core.freshness import OVERLAPPED_CALLS
from markvault.core.runtime_context import HostLink, RuntimeContext
from markvault.embed.embedder import Embedder
from markvault.git.autosync import AutoSync
from markvault.index.guard import IndexTurns, is_index_failure
from markvault.indexing.change_feed import ChangeFeed, Listener
from markvault.types.search import SearchRequest, SearchResult
from markvault.vault import Vault

if TYPE_CHECKING:
    from markvault.answers.status import OwnerInfo
    from markvault.indexing.watch_batches import WatchBatch
    from markvault.indexing.watcher import Watcher

CLOSE_WAIT_SECONDS = 1.5  # a stopping host waits this long for a call under way
BUSY_ANSWER_SECONDS = 3.0  # a read waits this long for a running sync, then says so
BACKFILL_GROUP = 64  # chunks embedded per turn in the background
BACKFILL_IDLE_SECONDS = 300.0  # a check for missing vectors when nothing woke it
EMBED_NEWS_SECONDS = 5.0  # the background embedding tells its progress this often
INDEX_CHECK_SECONDS = 1.0  # an owner looks at its index file this often between calls


T = TypeVar("T")


def open_local(
    vault: str | Path | None = None,
    index: str | Path | None = None,
    model: str | None = None,
    embedder: Embedder | None = None,
) -> Vault:
    """A vault whose calls run in this process, shared with no other (tests, benchmarks,
    scripts). ``embedder`` lets several share one loaded model."""
    return local_vault(Settings.load(vault=vault, index=index, model=model), embedder)


def local_vault(settings: Settings, embedder: Embedder | None = None) -> Vault:
    """``open_local`` from settings already loaded."""
    return Vault(LocalHost(RuntimeContext(settings, embedder)))


class LocalHost:
    """Runs a vault's calls on this process's core (see the module's docstring)."""

    def __init__(
        self,
        context: RuntimeContext,
        *,
        owner: bool = False,
        fresh: bool | None = None,
        reclaim: Callable[[], bool] | None = None,
    ) -> None:
        """Makes this host's core from ``context``, with this host's link in it
        (``core/runtime_context.py``).

        ``owner``: this host serves a shared index, so its background work also embeds
        and watches for every process (an unshared vault only loads the model).
        ``fresh``: sync what changed on disk before each call (``core/freshness.py``);
        by default an owner does (the faces' vaults), an unshared vault does not (tests,
        benchmarks and scripts that sync when they choose). ``reclaim``: the owner
        lock's ``reclaim``, for an owner that rebuilds an index whose folder was gone."""
        self.owner = owner
        self.fresh = owner if fresh is None else fresh
        self.closed = False
        self.clients: int | None = None  # set by the owner's server: processes served
        self._reclaim = reclaim
        self._backfill: threading.Thread | None = None
        self._index_check: threading.Thread | None = None
        self._wake = threading.Event()  # set after writes and syncs: new chunks to embed
        # Set whenever the background embedding finds nothing left to embed.
        self.backfill_idle = threading.Event()
        self._stopping = threading.Event()
        self._on_report: SyncReport | None = None
        self.model_wait: float | None = None  # see ``calls.Host.model_wait``
        self._watcher: Watcher | None = None
        self._autosync: AutoSync | None = None
        self._attachments: threading.Thread | None = None
        self._core = Core(dataclasses.replace(context, host=_link_of(weakref.ref(self))))
        # One call at a time; each turn first checks that the index file is still the one
        # this process left (deleted, replaced or changed under it: rebuilt first).
        self.calls = IndexTurns(self._core.keeper.check_index, self._core.keeper.stamp)

    @property
    def settings(self) -> Settings:
        return self._core.settings

    @property
    def autosync(self) -> AutoSync | None:
        """``[sync] auto``'s runner, started with the background (the core's status
        reports it)."""
        return self._autosync

    @property
    def runs_here(self) -> bool:
        return True

    def core(self) -> Core:
        return self._core

    @property
    def feed(self) -> ChangeFeed:
        """What changes in the index, and the owner's news (``feed.py``): owner-side
        work tells its users through ``feed.event``."""
        return self._core.keeper.feed

    def watch_changes(self, listener: Listener) -> Callable[[], None]:
        return self.feed.subscribe(listener)

    def owner_info(self) -> OwnerInfo:
        return {"owner_pid": os.getpid(), "this_process_owns": True, "clients": self.clients}

    # ---- calls -------------------------------------------------------------------

    def call(self, call: Call[Any, Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        """Run a declared call's body here. A read that finds the index busy with a long
        sync is answered within seconds, saying so (a cold start of a large vault must
        answer queries while it builds, never time out).

        Raises:
            ConnectionAbortedError: the host is closing; the call did not run.
        """
        wait = -1 if call.writes else BUSY_ANSWER_SECONDS
        if not self.calls.acquire(timeout=wait):
            return self._busy_answer(call, args, kwargs)
        if self.closed:  # it closed while this call waited: never reopen the index
            self.calls.release()
            raise ConnectionAbortedError("the index owner is closing")
        try:
            try:
                return self._run(call, args, kwargs)
            except Exception as exc:
                if call.writes or not is_index_failure(exc):
                    raise
                # The file broke during this read (overwritten, deleted with its folder):
                # rebuilt from the vault, and the read asked again, once.
                reason = str(exc).strip().splitlines()[0] if str(exc).strip() else "an error"
                self._core.keeper.recover(f"the index could not be read ({reason})")
                return self._run(call, args, kwargs)
        finally:
            self.calls.release()
            if call.writes:
                self._wake.set()
                if self.autosync is not None and call.name not in ("sync", "reindex", "refresh"):
                    self.autosync.changed()

    def _run(self, call: Call[Any, Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        if self.fresh and call.name in OVERLAPPED_CALLS:
            return self._core.fresh.around(call.name, lambda: call.run(self._core, args, kwargs))
        if self.fresh:
            self._core.fresh.before_call(call.name)
        return call.run(self._core, args, kwargs)

    @contextlib.contextmanager
    def _lend_turn(self) -> Iterator[None]:
        """Let other calls run while the current call waits on the network (`vault
        sync`'s fetch and push touch neither the index nor, unlocked, the files), then
        take the turn back.

        Raises:
            ConnectionAbortedError: the host closed meanwhile; the call stops there.
        """
        self.calls.release()
        try:
            yield
        finally:
            self.calls.acquire()
        if self.closed:
            raise ConnectionAbortedError("the index owner is closing")

    def _keep_claim(self) -> bool:
        """Before a running owner rebuilds an index whose folder was deleted: its lock
        file back at the path (``OwnerLock.reclaim``); when another process took the index
        over meanwhile, this one stops taking calls (its clients go to the new owner)."""
        if self._reclaim is None or self._reclaim():
            return True
        self.closed = True
        message = "another process took the index over while its folder was gone; stepping down"
        print(f"markvault: {message}", file=sys.stderr)
        self.feed.event("error", "owner", message)
        return False

    def _busy_answer(
        self, call: Call[Any, Any], args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> Any:
        activity = self._core.keeper.activity
        if activity and not activity[2]:  # work that counts nothing: `vault sync`'s git
            message = f"the vault is busy ({activity[0].lower()}); retry when it is done"
        else:
            doing = (
                f"{activity[0].lower()}: {activity[1]:,} of {activity[2]:,}"
                if activity
                else "a sync is running"
            )
            message = f"the index is being built ({doing}); results will come when it is done"
        if call.name == "search":
            request: SearchRequest = args[0] if args else kwargs["request"]
            return SearchResult(request.query, request.mode, [], {"total": 0.0}, 0, [message])
        raise errors.IndexBusyError(message[0].upper() + message[1:] + ".", "Retry shortly.")

    # ---- background work -----------------------------------------------------------

    def start_background(self, *, watch: bool = True, poll: bool | None = None) -> None:
        """Load the model in a background thread, so keyword searches are answered
        meanwhile; as the owner of a shared index, also embed missing vectors in the
        background and, with ``watch``, keep the index in step with the files."""
        self._core.keeper.start_background()
        if self.owner:
            self._start_backfill()
            self._start_index_check()
            self._start_attachment_backfill()
            if watch:
                self._start_watching(poll)
            self._start_autosync()

    def on_sync(self, report: SyncReport) -> None:
        self._on_report = report

    def watch_forever(self, stop: threading.Event, poll: bool | None = None) -> None:
        self._core.keeper.start_background()
        self._start_index_check()
        self._start_watching(poll)
        self._start_attachment_backfill()
        while not stop.wait(0.5):  # short waits keep Ctrl-C responsive
            pass

    def _start_backfill(self) -> None:
        """Embed chunks that have no vector yet, a small group at a time, letting every
        other call in between: a first embedding of a vault takes minutes to hours and
        must not hold the index that long (syncs embed inline only a few chunks)."""
        if self._backfill is None:
            self._backfill = threading.Thread(
                target=self._backfill_loop, name="markvault-backfill", daemon=True
            )
            self._backfill.start()

    def _start_attachment_backfill(self) -> None:
        """Read in the background the attachments that syncs made before an answer left
        waiting (attachment_backfill.py): their text never holds up the notes."""
        from markvault.attachments.backfill import run_backfill

        if self._attachments is not None:
            return
        self._attachments = threading.Thread(
            target=run_backfill,
            args=(self._core.keeper, self.calls, self._stopping),
            name="markvault-attachments",
            daemon=True,
        )
        self._attachments.start()

    def _backfill_loop(self) -> None:
        embedder = self._core.keeper.embedder()
        while not embedder.wait(1.0):
            if self._stopping.is_set() or embedder.load_error:
                return
        news = _EmbeddingNews(self.feed)
        while not self._stopping.is_set():
            try:
                # The index is held only to read and to store; the model works without it.
                with self.calls:
                    todo = self._core.keeper.chunks_without_vectors(BACKFILL_GROUP)
                if todo:
                    vectors = embedder.encode([text for _, text in todo])
                    with self.calls:
                        self._core.keeper.add_vectors([h for h, _ in todo], vectors)
                        news.embedded(len(todo), self._core.keeper.vector_counts)
            except Exception as exc:  # the next write or sync tries again
                print(f"markvault: embedding in the background failed: {exc}", file=sys.stderr)
                self.feed.event("error", "embedding", f"embedding in the background failed: {exc}")
                todo = []
            if not todo:
                news.idle()
                self.backfill_idle.set()
                self._wake.wait(BACKFILL_IDLE_SECONDS)
                self._wake.clear()

    def _start_index_check(self) -> None:
        """Look at the index file every ``INDEX_CHECK_SECONDS`` (one ``stat``) and take a
        turn when another program deleted, replaced or changed it: the turn rebuilds it
        (``IndexTurns``), so a new note is searchable within seconds, and the owner lock
        (in the index folder) is back for other processes to find this owner, even when
        no call comes."""
        if self._index_check is not None:
            return
        keeper = self._core.keeper

        def loop() -> None:
            while not self._stopping.wait(INDEX_CHECK_SECONDS):
                if keeper.index_moved() is None:
                    continue
                try:
                    with self.calls:
                        pass
                except Exception as exc:  # the next call or tick tries again
                    print(f"markvault: rebuilding the index failed: {exc}", file=sys.stderr)
                    self.feed.event("error", "index_rebuilt", f"rebuilding the index failed: {exc}")

        self._index_check = threading.Thread(target=loop, name="markvault-index", daemon=True)
        self._index_check.start()

    def _start_autosync(self) -> None:
        """``[sync] auto``: sync with git on its own (``autosync.py``), as a call of this
        host, so it takes its turn with every other call."""
        if self.autosync is not None or not self.settings.sync.auto:
            return
        autosync = AutoSync(lambda: self.call(Vault.sync, (), {}), self.settings.sync)
        self._autosync = autosync
        autosync.start()

    def _start_watching(self, poll: bool | None = None) -> None:
        """Keep the index in step with the files (servers and `vault watch` do this)."""
        if self._watcher is not None:
            return
        settings = self.settings
        from markvault.indexing.watch_batches import vault_callback
        from markvault.indexing.watcher import Watcher  # only hosts that watch load watchfiles

        def synced(batch: WatchBatch, report: Any) -> None:
            self._wake.set()
            if self.autosync is not None and (
                report.added or report.updated or report.renamed or report.removed
            ):
                self.autosync.changed()
            if self._on_report is not None:
                self._on_report(batch, report)

        watcher = Watcher(
            settings.vault_dir,
            vault_callback(self._core.keeper, self.calls, on_report=synced, stop=self._stopping),
            index_dir=settings.index_dir,
            poll=poll,
        )
        self._watcher = watcher
        watcher.start()

    # ---- closing -------------------------------------------------------------------

    def stop_background(self) -> None:
        """Stop the background work. An owner also stops taking calls: each is declined
        from now on, and its caller sends it to the next owner (an unshared vault
        reopens its index at the next call)."""
        self._stopping.set()
        self._wake.set()
        if self.autosync is not None:
            self.autosync.stop()
        if self._watcher is not None:
            self._watcher.stop(1.0)  # a sync in progress finishes in its daemon thread
            self._watcher = None
        if self.owner:
            self.closed = True

    def close(self) -> None:
        """Stop, then close the index once a call or sync under way is done (a thread
        must not be inside DuckDB while the interpreter exits), but do not wait forever:
        past that the process exits anyway and DuckDB's write-ahead log makes the next
        open whole."""
        self.stop_background()
        self.calls.checking = False  # closing: whatever became of the file, never rebuilt now
        if self.calls.acquire(timeout=CLOSE_WAIT_SECONDS):
            try:
                self._core.close()
            finally:
                self.calls.release()


def _link_of(host: weakref.ref[LocalHost]) -> HostLink:
    """What a host lends its core, through a weak reference: the core holding its host
    would keep a vault that nobody closed (and its DuckDB lock) alive until the cycle
    collector runs. A host gone lends what a core without one has."""

    def lend() -> AbstractContextManager[None]:
        alive = host()
        return alive._lend_turn() if alive is not None else contextlib.nullcontext()

    def asks(what: Callable[[LocalHost], T], gone: T) -> Callable[[], T]:
        def ask() -> T:
            alive = host()
            return what(alive) if alive is not None else gone

        return ask

    return HostLink(
        lend=lend,
        claim=asks(LocalHost._keep_claim, True),
        recovered=asks(lambda alive: alive._wake.set(), None),  # chunks without vectors
        watcher=asks(lambda alive: alive._watcher, None),
        autosync=asks(lambda alive: alive._autosync, None),
        model_wait=asks(lambda alive: alive.model_wait, None),
    )


class _EmbeddingNews:
    """The background embedding's progress as owner events: every few seconds while it
    works, and once when it has caught up."""

    def __init__(self, feed: ChangeFeed) -> None:
        self._feed = feed
        self._done = 0
        self._told_at = 0.0

    def embedded(self, n: int, counts: Callable[[], tuple[int, int]]) -> None:
        self._done += n
        if not self._feed.listening or time.monotonic() - self._told_at < EMBED_NEWS_SECONDS:
            return
        self._told_at = time.monotonic()
        have, total = counts()
        self._feed.event("info", "embedding", f"embedding: {have:,} of {total:,} chunks")

    def idle(self) -> None:
        if self._done and self._feed.listening:
            self._feed.event("info", "embedding", f"embedding done: {self._done:,} chunks")
        self._done = 0
        self._told_at = 0.0
