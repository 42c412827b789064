"""The owner's change feed: what changed in the index, for whoever listens.

The process that owns the index sees every change to it: the watcher's syncs, writes
from any process (they all run there), session imports, reindexes, a git sync. Each sync
publishes the notes it added, changed, moved or removed (``NoteChange``) on the index's
``ChangeFeed``, and the owner's other news goes out the same way as ``OwnerEvent`` log
lines: files skipped and why, embedding progress, a sync conflict. Paths and reasons
only, never the text of a note.

Listeners in the owner's process subscribe to the feed directly; other processes follow
it over the owner's socket (``watch_changes`` in owner.py, ``shared.SharedHost`` on the
other side), each through a bounded ``FeedQueue`` drained by its own writer thread, so a
reader that stops reading never holds up a sync. When changes cannot be listed - too many
at once (a first build, a large checkout), a reader that fell behind, an owner that
changed hands - listeners get a ``ChangeBatch`` with ``lost`` set instead: anything may
have changed, read again what matters.

Light on purpose (no index layer): processes that only talk to an owner decode these.
The items themselves are in ``feed_items``, imported when one is made or read: every
command's host makes a feed, and most never send anything on it.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from markvault.indexing.feed_items import FeedItem, Level, NoteChange

MAX_LISTED = 1000
"""A batch of more changes than this goes out as ``lost`` (listeners re-read instead)."""
QUEUE_ITEMS = 256
"""Items a remote reader may fall behind by before they are dropped for one ``lost``."""

Listener = Callable[["FeedItem"], None]
"""Called on the publishing thread: must return at once (queue the item, never block)."""


class ChangeFeed:
    """One index's changes and the owner's events, fanned out to its listeners."""

    def __init__(self) -> None:
        self._listeners: dict[object, Listener] = {}
        self._changed = threading.Condition()

    @property
    def listening(self) -> bool:
        """Whether anyone listens (a sync skips describing its changes otherwise)."""
        return bool(self._listeners)

    def subscribe(self, listener: Listener) -> Callable[[], None]:
        """Call ``listener`` with each item from now on; returns the unsubscribe."""
        key = object()
        with self._changed:
            self._listeners[key] = listener
            self._changed.notify_all()

        def unsubscribe() -> None:
            with self._changed:
                self._listeners.pop(key, None)
                self._changed.notify_all()

        return unsubscribe

    def wait_for_listeners(self, count: int, timeout: float) -> bool:
        """Wait until exactly ``count`` listeners are subscribed (a reader that went away
        has let go); False after ``timeout`` seconds."""
        with self._changed:
            return self._changed.wait_for(lambda: len(self._listeners) == count, timeout)

    # ---- publishing: from any thread ---------------------------------------------------

    def publish(self, notes: Sequence[NoteChange]) -> None:
        """What one sync changed (nothing when empty; ``lost`` when too many to list)."""
        from markvault.indexing.feed_items import ChangeBatch

        if len(notes) > MAX_LISTED:
            self.lost(f"{len(notes):,} notes changed at once")
        elif notes:
            self._send(ChangeBatch(tuple(notes)))

    def lost(self, reason: str) -> None:
        """Changes happened that are not listed: listeners should read again what matters."""
        from markvault.indexing.feed_items import ChangeBatch

        self._send(ChangeBatch(lost=reason))

    def event(self, level: Level, kind: str, message: str, paths: Sequence[str] = ()) -> None:
        """The hook for the owner's own news (files skipped, embedding progress, a sync
        conflict): a log line for the clients' users, at ``level``. Paths and reasons
        only: never the text of a note."""
        from markvault.indexing.feed_items import OwnerEvent

        self._send(OwnerEvent(level, kind, message, tuple(paths)))

    def _send(self, item: FeedItem) -> None:
        tell_each(self._listeners.values(), item)


def tell_each(listeners: Iterable[Listener], item: FeedItem) -> None:
    """Give ``item`` to each of ``listeners`` (a copy is taken first: one may unsubscribe
    meanwhile). One listener's bug is logged and stops neither a sync nor the others."""
    for listener in list(listeners):
        try:
            listener(item)
        except Exception:
            import logging  # here: a call that meets no such bug never loads it

            logging.getLogger(__name__).exception("a change feed listener failed")


class FeedQueue:
    """The items waiting for one remote reader, bounded: when it falls ``limit`` items
    behind they are dropped for one ``lost`` marker, so publishing never waits."""

    def __init__(self, limit: int = QUEUE_ITEMS) -> None:
        self._items: deque[FeedItem] = deque()
        self._limit = limit
        self._ready = threading.Condition()
        self._closed = False

    def put(self, item: FeedItem) -> None:
        with self._ready:
            if self._closed:
                return
            if len(self._items) >= self._limit:
                self._items.clear()
                from markvault.indexing.feed_items import ChangeBatch

                item = ChangeBatch(lost="a reader fell behind the change feed")
            self._items.append(item)
            self._ready.notify()

    def get(self) -> FeedItem | None:
        """The next item, waiting for one; None once closed."""
        with self._ready:
            self._ready.wait_for(lambda: self._items or self._closed)
            return None if self._closed else self._items.popleft()

    def close(self) -> None:
        with self._ready:
            self._closed = True
            self._items.clear()
            self._ready.notify_all()
