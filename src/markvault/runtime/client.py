"""One connection to the process that owns an index: send a call, read its answer; or
follow the owner's change feed."""

from __future__ import annotations

import contextlib
import json
import socket
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from markvault.errors import CallCancelled
from markvault.runtime.wire import MAX_LINE, PROGRESS, decode, dumps, encode, raise_error
from markvault.types.progress import Progress


@runtime_checkable
class CancelHook(Protocol):
    """A progress object whose caller can cancel: ``on_cancel(callback)`` calls
    ``callback`` once when that happens (at once if it already did)."""

    def on_cancel(self, callback: Callable[[], None]) -> None: ...


class Declined(ConnectionError):
    """The owner was closing and did not run the call: safe to send it again."""


class OwnerClient:
    """A connected socket to the owner; one call at a time goes over it.

    A lost connection surfaces as ``OSError``, ``EOFError`` or ``json.JSONDecodeError``
    (the caller decides whether to send the call again), a closing owner as ``Declined``,
    an error raised in the owner as that same ``MarkvaultError``.
    """

    def __init__(self, sock: socket.socket) -> None:
        self._sock = sock
        self._file = sock.makefile("rwb")
        self._next_id = 0
        self._io = threading.Lock()  # one call at a time
        self._write = threading.Lock()  # a cancel is written while its call waits

    @classmethod
    def connect(cls, path: Path) -> OwnerClient | None:
        """A client of the owner listening at ``path``; None when nobody answers there."""
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.connect(str(path))
        except OSError:
            sock.close()
            return None
        return cls(sock)

    def ping(self) -> bool:
        return bool(self.send("ping", (), {}) == "pong")

    def send(self, method: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        """Run ``method`` at the owner; its progress events go to the ``progress``
        argument here, and if that can be cancelled (``CancelHook``), cancelling it
        stops the work in the owner at its next step."""
        kwargs = dict(kwargs)
        progress: Progress | None = kwargs.pop("progress", None)
        if progress is not None:
            kwargs["progress"] = PROGRESS
        with self._io:
            self._next_id += 1
            rid = self._next_id
            request = {"id": rid, "method": method, "args": encode(list(args))}
            request["kwargs"] = encode(kwargs)
            self._send_line(request)
            answered = threading.Event()
            if isinstance(progress, CancelHook):
                progress.on_cancel(lambda: self._cancel(rid, answered))
            try:
                return self._answer(progress)
            finally:
                answered.set()

    def _answer(self, progress: Progress | None) -> Any:
        while True:
            reply = self._read_line()
            if "progress" in reply:
                if progress is not None:
                    _relay(progress, reply["progress"])
                continue
            if reply.get("declined"):
                raise Declined("the index owner is closing")
            if "error" in reply:
                raise_error(reply["error"])
            return decode(reply.get("result"))

    def _cancel(self, rid: int, answered: threading.Event) -> None:
        if answered.is_set():
            return
        with contextlib.suppress(OSError, ValueError):  # ValueError: closed meanwhile
            self._send_line({"id": rid, "cancel": True})

    def watch(self, on_item: Callable[[Any], None], on_watching: Callable[[], None]) -> None:
        """Follow the owner's change feed on this connection (it serves nothing else
        from now on): ``on_watching`` once the owner has subscribed it, then ``on_item``
        with each ``feed.FeedItem``, until the owner goes (``EOFError``, ``OSError``)."""
        with self._io:
            self._send_line({"id": 0, "method": "watch_changes", "args": [], "kwargs": {}})
            self._answer(None)  # raises if the owner declined or failed
            on_watching()
            while True:
                reply = self._read_line()
                if "event" in reply:
                    on_item(decode(reply["event"]))

    def _send_line(self, message: dict[str, Any]) -> None:
        with self._write:
            self._file.write(dumps(message))
            self._file.flush()

    def _read_line(self) -> dict[str, Any]:
        line = self._file.readline(MAX_LINE)
        if not line:
            raise EOFError("the index owner closed the connection")
        reply: dict[str, Any] = json.loads(line)
        return reply

    def close(self) -> None:
        """Close the connection, also from another thread than one reading it: the
        shutdown wakes that reader (closing the buffered file first would wait for it)."""
        with contextlib.suppress(OSError):
            self._sock.shutdown(socket.SHUT_RDWR)
        with contextlib.suppress(OSError, ValueError):
            self._file.close()
            self._sock.close()


def _relay(progress: Progress, event: list[Any]) -> None:
    """Replay one progress event here. A caller that cancelled meanwhile raises
    ``CallCancelled`` from it: the owner was told and its answer follows, so this
    connection reads on to it."""
    with contextlib.suppress(CallCancelled):
        _replay(progress, event)


def _replay(progress: Progress, event: list[Any]) -> None:
    if event[0] == "start":
        progress.start(str(event[1]), int(event[2]))
    elif event[0] == "advance":
        progress.advance(int(event[1]))
    else:
        progress.finish()
