"""What the server tells its clients unasked: which notes changed, and log messages.

One ``LiveServer`` per server process. What the index owner's change feed says
(``feed.py``: note changes and the owner's news) comes in from any thread (``accept``,
``publish``, ``log``) and goes out to every client that asked, in both protocol eras:

- current era (2026-07-28): each change becomes ``ResourceUpdated`` events, and adds,
  moves and removals one ``ResourcesListChanged``, on the SDK's ``SubscriptionBus``;
  the SDK's ``subscriptions/listen`` handler filters them per stream and ends a stream
  with its request, so nothing is kept per client here;
- handshake era (2025-11-25 and before): each connection is a ``Peer`` holding its
  ``resources/subscribe`` URIs and its ``logging/setLevel`` level; it is forgotten when
  the connection's teardown runs (stdio closed, HTTP session ended or expired).

A URI may name a note that does not exist yet: the subscription waits for it. Note
URIs match by what they name (``vault://note/a%20b`` and ``vault://note/a b`` alike),
and a client is told the URI exactly as it subscribed to it. When the feed says changes
were lost (too many to list, a reader that fell behind, a new owner), every client hears
``list_changed`` and an update for each URI it listens or subscribed to: read it again.
Listen streams stay open (the SDK's client does not listen again by itself).

Log messages (``log``) carry paths and reasons, never the text of a note. At the
current era log delivery rides a request the client made (``tool_call``); only
handshake-era connections hear the server's own messages.
"""

from __future__ import annotations

import logging
import math
import threading
from collections import Counter
from collections.abc import AsyncIterator, Iterable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any, get_args
from urllib.parse import quote, unquote

import anyio
import anyio.from_thread
import anyio.lowlevel
from mcp.server.connection import Connection
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.mcpserver import MCPServer
from mcp.server.session import ServerSession
from mcp.server.subscriptions import SubscriptionBus
from mcp.shared.subscriptions import ResourcesListChanged, ResourceUpdated
from mcp.types import (
    EmptyResult,
    LoggingLevel,
    SetLevelRequestParams,
    SubscribeRequestParams,
    UnsubscribeRequestParams,
)
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from markvault.indexing.feed_items import ChangeBatch, FeedItem, NoteChange, OwnerEvent
from markvault.server.sdk import connection_of, declare_resources_list_changed, lowlevel

__all__ = ["LiveServer", "NoteChange", "Peer"]

logger = logging.getLogger(__name__)

LOG_LEVELS: tuple[LoggingLevel, ...] = get_args(LoggingLevel)  # least severe first
DEFAULT_LEVEL: LoggingLevel = "warning"
"""What a handshake-era client hears before it sends ``logging/setLevel``."""
NOTIFY_SECONDS = 2.0
"""A client that does not take a notification within this time misses it (others don't wait)."""
LOGGER_NAME = "markvault"

NOTE_PREFIX = "vault://note/"
TOPIC_PREFIX = "knowledge://"


def note_uri(ref: str) -> str:
    """The citation URI search hits carry (``search.note_uri``)."""
    return NOTE_PREFIX + quote(ref, safe="/")


def topic_uri(topic: str) -> str:
    return TOPIC_PREFIX + quote(topic, safe="/")


def uri_key(uri: str) -> str:
    """What a URI names, for matching: spelled with or without percent-escapes alike."""
    return unquote(uri.strip())


def affected(changes: Iterable[NoteChange]) -> tuple[set[str], bool]:
    """The resource URIs a batch touches (each note by id and by path, old and new, and
    the topics involved), and whether the list of notes changed (adds, moves, removals,
    a note whose id changed)."""
    uris: set[str] = set()
    listed = False
    for change in changes:
        renamed = change.old_id is not None and change.old_id != change.id
        listed = listed or change.kind != "changed" or renamed
        for ref in (change.id, change.path, change.old_id, change.old_path):
            if ref:
                uris.add(note_uri(ref))
        for topic in (change.topic, change.old_topic):
            if topic:
                uris.add(topic_uri(topic))
    return uris, listed


def level_allows(threshold: LoggingLevel, level: LoggingLevel) -> bool:
    return LOG_LEVELS.index(level) >= LOG_LEVELS.index(threshold)


@dataclass(eq=False)
class Peer:
    """A handshake-era connection: what it subscribed to and how much it wants to hear."""

    connection: Connection
    level: LoggingLevel = DEFAULT_LEVEL
    subscriptions: dict[str, str] = field(default_factory=dict)  # uri_key -> URI as given

    async def notify(self, method: str, params: dict[str, Any] | None) -> None:
        with anyio.move_on_after(NOTIFY_SECONDS):
            await self.connection.notify(method, params)


class LiveServer:
    """The process's change bus and its clients' subscriptions and log levels."""

    def __init__(self, listen_bus: SubscriptionBus) -> None:
        self.listen_bus = listen_bus
        self._peers: dict[Connection, Peer] = {}
        self._listened: Counter[str] = Counter()  # URIs open listen streams asked for
        self._send, self._receive = anyio.create_memory_object_stream[tuple[str, Any]](math.inf)
        self._token: anyio.lowlevel.EventLoopToken | None = None
        self._loop_thread: int | None = None

    # -- wiring into the SDK server

    def install(self, server: MCPServer) -> None:
        """Serve ``resources/subscribe``, ``resources/unsubscribe`` and
        ``logging/setLevel``; declare ``resources.listChanged``; know every
        handshake-era connection from its first request on."""
        low = lowlevel(server)
        low.add_request_handler("resources/subscribe", SubscribeRequestParams, self._subscribe)
        low.add_request_handler(
            "resources/unsubscribe", UnsubscribeRequestParams, self._unsubscribe
        )
        low.add_request_handler("logging/setLevel", SetLevelRequestParams, self._set_level)
        declare_resources_list_changed(server)
        server.middleware.append(self._track)

    @asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        """For the server's lifespan: deliver what ``publish`` and ``log`` queue."""
        self._token = anyio.lowlevel.current_token()
        self._loop_thread = threading.get_ident()
        try:
            async with anyio.create_task_group() as tasks:
                tasks.start_soon(self._pump)
                yield
                tasks.cancel_scope.cancel()
        finally:
            self._token = None

    # -- in: from any thread

    def accept(self, item: FeedItem) -> None:
        """One item of the owner's change feed (``feed.Listener``: returns at once)."""
        if isinstance(item, OwnerEvent):
            self.log(item.level, item.message)
        elif isinstance(item, ChangeBatch):
            if item.lost is not None:
                self._queue(("lost", item.lost))
            else:
                self.publish(item.notes)

    def publish(self, changes: Iterable[NoteChange]) -> None:
        """Tell the clients about ``changes`` (thread-safe; returns at once)."""
        batch = list(changes)
        if batch:
            self._queue(("changes", batch))

    def log(self, level: LoggingLevel, message: str) -> None:
        """A message for every handshake-era client that wants ``level`` (thread-safe).
        Paths and reasons only: never a note's text."""
        self._queue(("log", (level, message)))

    def _queue(self, item: tuple[str, Any]) -> None:
        token = self._token
        if token is None:
            return  # not serving: nobody to tell
        if threading.get_ident() == self._loop_thread:
            self._send.send_nowait(item)  # from_thread would wait on itself here
        else:
            try:
                anyio.from_thread.run_sync(self._send.send_nowait, item, token=token)
            except RuntimeError:  # the loop has stopped meanwhile
                pass

    async def _pump(self) -> None:
        async for kind, payload in self._receive:
            try:
                if kind == "changes":
                    await self.deliver(payload)
                elif kind == "lost":
                    await self.deliver_lost()
                else:
                    await self.broadcast_log(*payload)
            except Exception:  # one bad batch must not stop the feed
                logger.exception("delivering %s failed", kind)

    # -- out: on the event loop

    async def deliver(self, changes: Iterable[NoteChange]) -> None:
        """Send the notifications ``changes`` call for, to both eras' clients."""
        uris, listed = affected(changes)
        keys = {uri_key(u) for u in uris}
        # Listen streams match URIs as written: each spelling a stream asked for.
        spelled = {uri for uri in self._listened if uri_key(uri) in keys}
        for uri in sorted(uris | spelled):
            await self.listen_bus.publish(ResourceUpdated(uri=uri))
        if listed:
            await self.listen_bus.publish(ResourcesListChanged())
        for peer in list(self._peers.values()):
            for key, uri in list(peer.subscriptions.items()):
                if key in keys:
                    await peer.notify("notifications/resources/updated", {"uri": uri})
            if listed:
                await peer.notify("notifications/resources/list_changed", None)

    async def deliver_lost(self) -> None:
        """Changes went unlisted: everything anyone listens to may have changed."""
        for uri in sorted(self._listened):
            await self.listen_bus.publish(ResourceUpdated(uri=uri))
        await self.listen_bus.publish(ResourcesListChanged())
        for peer in list(self._peers.values()):
            for uri in list(peer.subscriptions.values()):
                await peer.notify("notifications/resources/updated", {"uri": uri})
            await peer.notify("notifications/resources/list_changed", None)

    async def broadcast_log(self, level: LoggingLevel, message: str) -> None:
        params = {"level": level, "logger": LOGGER_NAME, "data": message}
        for peer in list(self._peers.values()):
            if level_allows(peer.level, level):
                await peer.notify("notifications/message", params)

    # -- handshake-era connections

    def peer(self, session: ServerSession) -> Peer | None:
        """The handshake-era connection ``session`` belongs to (None at the current era)."""
        if session.protocol_version in MODERN_PROTOCOL_VERSIONS:
            return None
        connection = connection_of(session)
        found = self._peers.get(connection)
        if found is None:
            found = self._peers[connection] = Peer(connection)
            # The connection's teardown runs when the client goes: forget it with it.
            connection.exit_stack.callback(self._peers.pop, connection, None)
        return found

    @property
    def peers(self) -> int:
        return len(self._peers)

    async def _track(
        self, ctx: ServerRequestContext[Any, Any], call_next: CallNext
    ) -> HandlerResult:
        if ctx.request_id is not None:
            self.peer(ctx.session)
        if ctx.method != "subscriptions/listen":
            return await call_next(ctx)
        # A listen request lasts as long as its stream: what it asked for, meanwhile.
        uris = _listen_uris(ctx.params)
        self._listened.update(uris)
        try:
            return await call_next(ctx)
        finally:
            self._listened.subtract(uris)
            self._listened = +self._listened  # drop the URIs nobody listens to any more

    async def _subscribe(
        self, ctx: ServerRequestContext[Any, Any], params: SubscribeRequestParams
    ) -> EmptyResult:
        if peer := self.peer(ctx.session):
            peer.subscriptions[uri_key(params.uri)] = params.uri
        return EmptyResult()

    async def _unsubscribe(
        self, ctx: ServerRequestContext[Any, Any], params: UnsubscribeRequestParams
    ) -> EmptyResult:
        if peer := self.peer(ctx.session):
            peer.subscriptions.pop(uri_key(params.uri), None)
        return EmptyResult()

    async def _set_level(
        self, ctx: ServerRequestContext[Any, Any], params: SetLevelRequestParams
    ) -> EmptyResult:
        if peer := self.peer(ctx.session):
            peer.level = params.level
        return EmptyResult()


def _listen_uris(params: Mapping[str, Any] | None) -> list[str]:
    """The resource URIs a ``subscriptions/listen`` request asks for."""
    notifications = (params or {}).get("notifications")
    uris = notifications.get("resourceSubscriptions") if isinstance(notifications, dict) else None
    return [u for u in uris if isinstance(u, str)] if isinstance(uris, list) else []
