"""One tool call as its client sees it while it runs: progress, cancellation, log lines.

Tools do their vault work in a worker thread (DuckDB and the model block the loop).
``ToolCall.run`` runs it there, and meanwhile:

- **Progress.** The call is the work's ``sync.Progress``: each stage (``start``,
  ``advance``, ``finish``: reading notes, embedding chunks, importing sessions) becomes
  ``notifications/progress`` with the stage's count and total, at most four a second;
  while no stage runs, a heartbeat each second ("search: 3 s") tells the client the
  call is alive. Progress only ever increases, across stages too.
- **Cancellation.** When the client cancels (``notifications/cancelled``, or closing
  the request's stream), the client is answered at once and the work stops at its next
  progress step (``CallCancelled``); what it wrote by then is whole, as after any
  interrupted sync. Work that runs in the index owner's process is stopped there the
  same way: the call is the progress of the facade call, whose ``on_cancel`` hook tells
  the owner (``client.CancelHook``).
- **Log lines.** ``log`` sends ``notifications/message`` for this call: to a
  handshake-era client at or above its ``logging/setLevel`` level (on the connection's
  own channel, so that over HTTP they reach its GET stream), to a current-era client
  only when the request opted in (``_meta`` log level; the SDK's rule).

Handshake-era progress rides the connection's channel too: over HTTP the answer to a
POST is one JSON body, which has no room for notifications.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any, Generic, TypeVar

import anyio
import anyio.from_thread
import anyio.to_thread
from mcp.server.connection import allowed_log_levels
from mcp.server.context import ServerRequestContext
from mcp.server.mcpserver import Context
from mcp.shared.jsonrpc_dispatcher import progress_token_from_params
from mcp.types import LoggingLevel, LoggingMessageNotification, LoggingMessageNotificationParams
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from markvault.errors import CallCancelled
from markvault.server.live import LOGGER_NAME, LiveServer, level_allows

__all__ = ["CallCancelled", "ToolCall"]

T = TypeVar("T")
logger = logging.getLogger(__name__)
PROGRESS_INTERVAL = 0.25  # seconds between two progress notifications of one stage
HEARTBEAT_SECONDS = 1.0


class _Outcome(Generic[T]):
    value: T
    error: BaseException | None = None


class ToolCall:
    """The client's view of one running tool call (see the module docstring)."""

    def __init__(self, ctx: Context[Any, Any], live: LiveServer | None, what: str) -> None:
        self.what = what
        self._live = live
        self._cancelled = threading.Event()
        self._on_cancel: list[Callable[[], None]] = []
        self._request: ServerRequestContext[Any, Any] | None
        try:
            self._request = ctx.request_context
        except ValueError:  # called outside a request (MCPServer.call_tool in-process)
            self._request = None
        self._modern = bool(self._request) and self._protocol in MODERN_PROTOCOL_VERSIONS
        token = progress_token_from_params(self._request.params) if self._request else None
        self._token = token
        # The current era's SDK stamps the caller's token itself (and drops progress
        # nobody asked for); at the handshake era we send it with the token we read.
        self._wants_progress = self._request is not None and (self._modern or token is not None)
        self._lock = threading.Lock()
        self._value = 0.0
        self._stage: list[Any] | None = None  # [label, base, total, done]
        self._posted = False
        self._last_post = time.monotonic()
        self._started = self._last_post
        self._sent = -1.0

    @property
    def _protocol(self) -> str:
        return self._request.protocol_version if self._request else ""

    # -- running the work

    async def run(self, work: Callable[[ToolCall], T]) -> T:
        """``work(self)`` in a worker thread, with progress and cancellation as above."""
        outcome: _Outcome[T] = _Outcome()
        try:
            async with anyio.create_task_group() as tasks:
                if self._wants_progress:
                    tasks.start_soon(self._heartbeat)

                async def do() -> None:
                    try:
                        outcome.value = await anyio.to_thread.run_sync(
                            work, self, abandon_on_cancel=True
                        )
                    except Exception as exc:
                        outcome.error = exc
                    tasks.cancel_scope.cancel()

                tasks.start_soon(do)
        except BaseException:  # cancelled: the abandoned worker stops at its next step
            self._cancel()
            raise
        if outcome.error is not None:
            raise outcome.error
        return outcome.value

    # -- sync.Progress, called by the work in its thread

    def start(self, label: str, total: int) -> None:
        self._check()
        with self._lock:
            base = self._value + 1 if self._posted else self._value
            self._stage = [label, base, max(total, 0), 0]
            self._value = base
        self._post(force=True)

    def advance(self, n: int) -> None:
        self._check()
        with self._lock:
            if self._stage is None:
                return
            self._stage[3] += n
            self._value = self._stage[1] + min(self._stage[3], self._stage[2])
        self._post(force=False)

    def finish(self) -> None:  # no check: called from finally blocks
        with self._lock:
            if self._stage is None:
                return
            self._value = self._stage[1] + self._stage[2]
        self._post(force=True)
        with self._lock:
            self._stage = None

    def log(self, level: LoggingLevel, message: str) -> None:
        """A log line for this call's client, from the work's thread. Paths and reasons
        only: never the text of a note the client did not ask for."""
        if self._request is None or self._cancelled.is_set():
            return
        try:
            anyio.from_thread.run(self.send_log, level, message)
        except RuntimeError:  # not in a worker thread of this loop
            pass

    def on_cancel(self, callback: Callable[[], None]) -> None:
        """``client.CancelHook``: call ``callback`` when the client cancels (now if it
        has): the work runs in the owner's process and is stopped there."""
        with self._lock:
            if not self._cancelled.is_set():
                self._on_cancel.append(callback)
                return
        callback()

    def _cancel(self) -> None:
        with self._lock:
            self._cancelled.set()
            callbacks, self._on_cancel = self._on_cancel, []
        for callback in callbacks:
            try:
                callback()
            except Exception:  # the owner will not hear of it; its work just finishes
                logger.exception("telling the index owner of a cancelled call failed")

    def _check(self) -> None:
        if self._cancelled.is_set():
            raise CallCancelled(f"{self.what} was cancelled by the client")

    def _post(self, *, force: bool) -> None:
        if not self._wants_progress or self._cancelled.is_set():
            return
        with self._lock:
            now = time.monotonic()
            if not force and now - self._last_post < PROGRESS_INTERVAL:
                return
            self._last_post = now
            self._posted = True
            value, total, message = self._snapshot()
        try:
            anyio.from_thread.run(self._emit, value, total, message)
        except RuntimeError:
            pass

    def _snapshot(self) -> tuple[float, float | None, str]:
        if self._stage is None:
            elapsed = time.monotonic() - self._started
            return self._value, None, f"{self.what}: {elapsed:.0f} s"
        label, base, total, done = self._stage
        return self._value, float(base + total), f"{label}: {min(done, total):,} of {total:,}"

    # -- on the event loop

    async def _heartbeat(self) -> None:
        while True:
            await anyio.sleep(HEARTBEAT_SECONDS)
            with self._lock:
                if self._stage is not None:
                    continue  # the stage reports itself (a long step just takes long)
                if time.monotonic() - self._last_post < HEARTBEAT_SECONDS:
                    continue
                self._value += 1
                self._last_post = time.monotonic()
                self._posted = True
                value, total, message = self._snapshot()
            await self._emit(value, total, message)

    async def _emit(self, value: float, total: float | None, message: str) -> None:
        request = self._request
        if request is None or value <= self._sent:
            return  # progress must increase; an older snapshot that arrives late is dropped
        self._sent = value
        if self._modern:
            await request.session.report_progress(value, total, message)
        elif self._token is not None:
            await request.session.send_progress_notification(self._token, value, total, message)

    async def send_log(self, level: LoggingLevel, message: str) -> None:
        request = self._request
        if request is None:
            return
        if not self._modern:
            peer = self._live.peer(request.session) if self._live else None
            if peer is not None and level_allows(peer.level, level):
                params = {"level": level, "logger": LOGGER_NAME, "data": message}
                await peer.notify("notifications/message", params)
            return
        if level not in allowed_log_levels(request.protocol_version, request.meta):
            return  # the current era: only what this request opted in to
        note = LoggingMessageNotification(
            params=LoggingMessageNotificationParams(level=level, logger=LOGGER_NAME, data=message)
        )
        await request.session.send_notification(note, related_request_id=request.request_id)
