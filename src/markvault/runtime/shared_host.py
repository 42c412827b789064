"""The calling side of a shared index: run here as its owner, or ask the owner.

A ``SharedHost`` is the host (``calls.Host``) of the vault the faces use. When this
process holds the owner lock it runs calls on its own ``LocalHost`` and serves the
others (``owner.py``); otherwise it sends each call over the owner's socket
(``client.py``). When the owner goes away it reconnects to the next one, or becomes
the owner itself, and a server that is not the owner waits on the lock to take over
at once. A call the owner declined because it was closing is sent again, whatever it
is; after an owner died mid-call only a read is (a write may have been done).

Nothing here imports the index layer: that happens only if this process becomes the
owner.
What changes in the index reaches ``watch_changes`` listeners wherever it is owned: here
straight from the owner's feed, elsewhere over a second connection that follows it
(``feed.py``), moved to the next owner when the owner changes hands.
"""

from __future__ import annotations

import functools
import json
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from markvault import errors
from markvault.calls import Call, SyncReport
from markvault.config import Settings
from markvault.indexing.change_feed import Listener, tell_each
from markvault.runtime.client import Declined, OwnerClient
from markvault.runtime.owner import IndexOwner, OwnerLock, lock_path, socket_path
from markvault.vault import Vault

if TYPE_CHECKING:
    from markvault.answers.status import OwnerInfo
    from markvault.core import Core
    from markvault.embed.embedder import SentenceEmbedder
    from markvault.indexing.feed_items import FeedItem
    from markvault.runtime.local_host import LocalHost

LIVE_RETRIES = 5  # reconnections to find a live owner before a write
CONNECT_WAIT_SECONDS = 60.0  # an owner may be building a large index before it answers
FOLLOW_RETRY_SECONDS = 1.0  # longest wait between two looks for an owner's change feed


def connect(
    settings: Settings,
    *,
    must_own: bool = False,
    look_ahead: bool = False,
    walk_ahead: bool = False,
    embed_ahead: bool = False,
) -> Vault:
    """The vault as the faces use it: this process owns its index, or asks the process
    that does, and takes over when that one stops. ``must_own``: wait until this process
    owns the index (`vault watch`). ``look_ahead``: the first call is a search made now
    (a one-shot command): where this process becomes the owner, its freshness look at
    the disk starts before the index layer is imported. ``walk_ahead``: likewise, the
    first call is a sync of the whole vault made now (a one-shot `vault reindex`): GNU
    find's walk of the vault starts before that import, for the sync's scan.
    ``embed_ahead``: that search embeds its query: where this process becomes the owner
    of an existing index, the query's encoder starts loading in a thread meanwhile
    (``SentenceEmbedder.start_query_loading``)."""
    return Vault(
        SharedHost(
            settings,
            must_own=must_own,
            look_ahead=look_ahead,
            walk_ahead=walk_ahead,
            embed_ahead=embed_ahead,
        )
    )


class OwnerLostError(errors.IndexBusyError):
    """The owner went away in the middle of a write."""


class SharedHost:
    """Runs calls at whichever process owns the index (see the module's docstring)."""

    def __init__(
        self,
        settings: Settings,
        *,
        connect_wait: float = CONNECT_WAIT_SECONDS,
        must_own: bool = False,
        look_ahead: bool = False,
        walk_ahead: bool = False,
        embed_ahead: bool = False,
    ) -> None:
        """``must_own``: wait until this process owns the index (`vault watch`);
        ``look_ahead``, ``walk_ahead``, ``embed_ahead``: see ``connect``."""
        self._settings = settings
        self._look_ahead = look_ahead
        self._walk_ahead = walk_ahead
        self._embed_ahead = embed_ahead
        self._background = False
        self._watch = False
        self._poll: bool | None = None
        self._must_own = must_own
        self._on_report: SyncReport | None = None
        self._state = threading.RLock()  # ownership changes: a call's failover, standby
        self._standby: threading.Thread | None = None
        self._closing = False
        self._connect_wait = connect_wait
        self._lock = OwnerLock(lock_path(settings))
        self._owner: IndexOwner | None = None
        self._client: OwnerClient | None = None
        self._model_wait: float | None = None
        self._follow = _Follower(self)  # watch_changes listeners, and where they listen
        self._attach()

    @property
    def settings(self) -> Settings:
        return self._settings

    @property
    def model_wait(self) -> float | None:
        """Applies where the model lives (the owner)."""
        return self._model_wait

    @model_wait.setter
    def model_wait(self, value: float | None) -> None:
        self._model_wait = value
        if self._owner is not None:
            self._owner.host.model_wait = value

    @property
    def local(self) -> LocalHost | None:
        """The host that runs calls in this process, when it owns the index."""
        return self._owner.host if self._owner else None

    @property
    def runs_here(self) -> bool:
        return self._owner is not None

    def core(self) -> Core:
        if self._owner is None:
            raise errors.UsageError("Only the process that owns the index has its core.")
        return self._owner.host.core()

    def owner_info(self) -> OwnerInfo:
        if self._owner is not None:
            return self._owner.host.owner_info()
        return {"owner_pid": self._lock.holder(), "this_process_owns": False, "clients": None}

    # ---- who owns the index ----------------------------------------------------------

    def _attach(self) -> None:
        """Connect to the owner, or become it; wait while an owner is starting.

        The state lock is held only for each attempt, never across the wait: this
        process's standby thread may be the one about to become the owner.
        """
        if self._must_own:
            self._lock.acquire_blocking()
            with self._state:
                self._become_owner()
            return
        deadline = time.monotonic() + self._connect_wait
        delay = 0.01
        while True:
            with self._state:
                if self._owner is not None:
                    return  # the standby thread took over meanwhile
                self._client = OwnerClient.connect(
                    self._lock.socket() or socket_path(self._settings)
                )
                if self._client is not None:
                    if self._background:
                        self._start_standby()
                    return
                if self._lock.try_acquire():
                    self._become_owner()
                    return
            if time.monotonic() > deadline:
                pid = self._lock.holder()
                raise errors.IndexBusyError(
                    f"The index is held by process {pid or '?'}, which does not answer.",
                    "Wait for it to finish, or stop it; its lock goes with it.",
                )
            time.sleep(delay)  # an owner is between taking the lock and listening
            delay = min(delay * 2, 0.2)

    def _embedder_ahead(self) -> SentenceEmbedder | None:
        """The model, its query encoder loading for the command's search (``connect``);
        not where that search first builds a missing index."""
        if not self._embed_ahead or not self._settings.db_path.exists():
            return None
        from markvault.embed.embedder import SentenceEmbedder

        embedder = SentenceEmbedder(self._settings.model)
        embedder.start_query_loading()
        return embedder

    def _become_owner(self) -> None:
        from markvault.core.freshness import look_ahead
        from markvault.core.runtime_context import RuntimeContext
        from markvault.files.find_walk import FindWalk

        # Before the index layer: GNU find walks the vault on the other core meanwhile.
        look = look_ahead(self._settings) if self._look_ahead else None
        vault, index = str(self._settings.vault_dir), str(self._settings.index_dir)
        walk = FindWalk.start(vault, index) if self._walk_ahead else None
        embedder = self._embedder_ahead()
        # A later takeover's first call is not the command's.
        self._look_ahead = self._walk_ahead = self._embed_ahead = False
        try:
            from markvault.runtime.local_host import (
                LocalHost,  # the index layer: only the owner loads it
            )

            context = RuntimeContext(self._settings, embedder, look=look, walk=walk)
            host = LocalHost(context, owner=True, reclaim=self._lock.reclaim)
        except BaseException:
            if walk is not None:  # no keeper took it: stopped and reaped here
                walk.cancel()
            raise
        host.model_wait = self._model_wait
        self._follow.owned_here(host.feed.subscribe)  # before its first sync reports
        self._owner = IndexOwner(host, self._lock)
        self._owner.serve()
        self._start_owner_work()

    def start_background(self, *, watch: bool = True, poll: bool | None = None) -> None:
        """For long-running servers: wherever this process owns the index (now, or
        after taking over from a dead owner), load the model in the background, embed
        what has no vector yet and watch the files."""
        self._background, self._watch, self._poll = True, watch, poll
        self._start_owner_work()
        self._start_standby()

    def _start_standby(self) -> None:
        """A server that is not the owner waits on the owner's lock in a thread, to take
        over - watcher and model included - the moment the owner exits or dies, not only
        at its next call."""
        if self._standby is not None or self._owner is not None or self._must_own:
            return
        lock = OwnerLock(lock_path(self._settings))

        def wait_and_take_over() -> None:
            lock.acquire_blocking()
            with self._state:
                self._standby = None
                if self._closing or self._owner is not None:
                    lock.release()
                    return
                self._lock = lock
                self._become_owner()

        self._standby = threading.Thread(
            target=wait_and_take_over, name="markvault-standby", daemon=True
        )
        self._standby.start()

    def on_sync(self, report: SyncReport) -> None:
        self._on_report = report

    def watch_changes(self, listener: Listener) -> Callable[[], None]:
        return self._follow.add(listener)

    def _start_owner_work(self) -> None:
        if self._owner is None or not self._background:
            return
        if self._on_report is not None:
            self._owner.host.on_sync(self._on_report)
        self._owner.host.start_background(watch=self._watch, poll=self._poll)

    def watch_forever(self, stop: threading.Event, poll: bool | None = None) -> None:
        """`vault watch`: as the owner, keep the index fresh until ``stop`` is set."""
        assert self._owner is not None, "watching needs ownership (must_own=True)"
        self.start_background(watch=True, poll=poll)
        while not stop.wait(0.5):  # short waits keep Ctrl-C responsive
            pass

    def _disconnect(self) -> None:
        if self._client is not None:
            self._client.close()
        self._client = None

    def close(self) -> None:
        with self._state:
            self._closing = True
            self._follow.stop()
            self._disconnect()
            if self._owner is not None:
                self._owner.close()
                self._owner = None

    # ---- calls -----------------------------------------------------------------------

    def call(self, call: Call, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        """Run a declared call here (owner) or at the owner. A write goes only to an
        owner that just answered a ping, so it fails only when the owner dies during
        that very write."""
        deadline = time.monotonic() + self._connect_wait
        while True:
            if self._owner is not None:
                return self._owner.host.call(call, args, kwargs)
            try:
                if call.writes:
                    self._ensure_live()
                    if self._owner is not None:
                        continue  # this process took over: run it here
                if self._client is None:
                    raise ConnectionError("not connected")
                return self._client.send(call.name, args, kwargs)
            except Declined:
                self._disconnect()
                self._attach()
            except (OSError, EOFError, json.JSONDecodeError):
                self._disconnect()
                self._attach()
                if call.writes:
                    raise OwnerLostError(
                        "The process that owned the index stopped during this change.",
                        "Read the note again to see whether the change was made, then retry.",
                    ) from None
            if time.monotonic() > deadline:
                raise errors.IndexBusyError(
                    "The index changed hands too often to answer.", "Retry in a moment."
                )

    def _ensure_live(self) -> None:
        """Reconnect until an owner answers a ping (a dying owner's socket can accept a
        connection and then reset it)."""
        for _ in range(LIVE_RETRIES + 1):
            try:
                if self._client is not None and self._client.ping():
                    return
            except (OSError, EOFError, json.JSONDecodeError):
                pass
            self._disconnect()
            self._attach()
            if self._owner is not None:
                return


class _Follower:
    """A ``SharedHost``'s ``watch_changes`` listeners, fed from wherever the index is
    owned: the owner's feed when this process owns it, else a thread that follows the
    owner's feed over a connection of its own and moves to the next owner when that one
    goes. After such a move its listeners get a ``lost`` marker (what changed meanwhile
    went unseen); a process that takes over hears its own first sync instead."""

    def __init__(self, host: SharedHost) -> None:
        self._host = host
        self._listeners: dict[object, Listener] = {}
        self._guard = threading.Lock()
        self._unsubscribe: Callable[[], None] | None = None  # from the local feed
        self._thread: threading.Thread | None = None
        self._client: OwnerClient | None = None
        self._wake = threading.Event()
        self._stopped = False

    def add(self, listener: Listener) -> Callable[[], None]:
        key = object()
        with self._guard:
            self._listeners[key] = listener
        owner = self._host._owner
        if owner is not None:
            self.owned_here(owner.host.feed.subscribe)
        else:
            self._start_thread()

        def remove() -> None:
            with self._guard:
                self._listeners.pop(key, None)

        return remove

    def owned_here(self, subscribe: Callable[[Listener], Callable[[], None]]) -> None:
        """This process owns the index now: listen to its feed (once), if anyone here
        listens (a sync that nobody hears does not describe its changes)."""
        with self._guard:
            if self._unsubscribe is not None or self._stopped or not self._listeners:
                return
            self._unsubscribe = subscribe(self._relay)
            client = self._client
        if client is not None:
            client.close()  # the dead owner's feed; its thread sees we own and ends

    def stop(self) -> None:
        with self._guard:
            self._stopped = True
            unsubscribe, self._unsubscribe = self._unsubscribe, None
            client = self._client
        if unsubscribe is not None:
            unsubscribe()
        if client is not None:
            client.close()
        self._wake.set()

    def _relay(self, item: FeedItem) -> None:
        tell_each(self._listeners.values(), item)

    def _start_thread(self) -> None:
        with self._guard:
            if self._thread is not None or self._stopped or self._unsubscribe is not None:
                return
            self._thread = threading.Thread(
                target=self._follow_owner, name="markvault-follow", daemon=True
            )
            self._thread.start()

    def _done(self) -> bool:
        return self._stopped or self._unsubscribe is not None or self._host._owner is not None

    def _resumed(self, missed: bool) -> None:
        if missed:
            from markvault.indexing.feed_items import ChangeBatch

            self._relay(ChangeBatch(lost="the index changed owners"))

    def _follow_owner(self) -> None:
        """Follow whichever process owns the index, until this one does or stops."""
        missed = False  # the feed broke off: say so once following again
        delay = 0.02
        try:
            while not self._done():
                lock = self._host._lock
                client = OwnerClient.connect(lock.socket() or socket_path(self._host.settings))
                if client is None:
                    self._wake.wait(delay)  # no owner yet: a server's standby takes over
                    delay = min(delay * 2, FOLLOW_RETRY_SECONDS)
                    continue
                with self._guard:
                    self._client = client
                if self._done():
                    client.close()
                    break
                try:
                    client.watch(self._relay, functools.partial(self._resumed, missed))
                except (OSError, EOFError, ValueError, errors.MarkvaultError):
                    pass  # the owner went (or declined, closing): find the next one
                finally:
                    client.close()
                    with self._guard:
                        self._client = None
                missed, delay = True, 0.02
                if not self._done():
                    self._wake.wait(delay)
        finally:
            with self._guard:
                self._thread = None
