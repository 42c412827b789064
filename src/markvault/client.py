"""One connection to the process that owns an index: send a call, read its answer."""

from __future__ import annotations

import contextlib
import json
import socket
import threading
from pathlib import Path
from typing import Any

from .model import Progress
from .wire import MAX_LINE, PROGRESS, decode, dumps, encode, raise_error


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
        self._io = threading.Lock()

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
        argument here."""
        kwargs = dict(kwargs)
        progress: Progress | None = kwargs.pop("progress", None)
        if progress is not None:
            kwargs["progress"] = PROGRESS
        with self._io:
            self._next_id += 1
            rid = self._next_id
            request = {"id": rid, "method": method, "args": encode(list(args))}
            request["kwargs"] = encode(kwargs)
            self._file.write(dumps(request))
            self._file.flush()
            while True:
                line = self._file.readline(MAX_LINE)
                if not line:
                    raise EOFError("the index owner closed the connection")
                reply = json.loads(line)
                if "progress" in reply:
                    if progress is not None:
                        _relay(progress, reply["progress"])
                    continue
                if reply.get("declined"):
                    raise Declined("the index owner is closing")
                if "error" in reply:
                    raise_error(reply["error"])
                return decode(reply.get("result"))

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self._file.close()
            self._sock.close()


def _relay(progress: Progress, event: list[Any]) -> None:
    if event[0] == "start":
        progress.start(str(event[1]), int(event[2]))
    elif event[0] == "advance":
        progress.advance(int(event[1]))
    else:
        progress.finish()
