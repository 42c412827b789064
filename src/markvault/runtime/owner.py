"""Many processes, one index: one owner process serves the others over a local socket.

DuckDB lets one process write a database file, and then no other process may even
read it. So for each index, exactly one process - the owner - opens the DuckDB file,
runs the watcher (when it is a server) and loads the embedding model; every other
`vault` process (more MCP servers, CLI commands) sends its calls to the owner over a
Unix socket. The owner is whichever process first takes an exclusive ``flock`` on
``<index>/<vault>.owner.lock``; the kernel drops that lock when the process dies,
even by kill -9, and the next caller takes over: it reconnects to a new owner or
becomes the owner itself. Nobody waits on DuckDB's own lock, so no caller ever sees a
lock error, each change is indexed and embedded once, and a write through any
process is visible to all at once (there is one index).

This module is the owner's side: the lock that makes a process the owner, and the
socket server that hands the others' calls to its ``host.LocalHost``. The calling side
is ``shared.py``; the protocol is ``wire.py``.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import hashlib
import json
import os
import selectors
import socket
import socketserver
import sys
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from markvault import errors
from markvault.config import Settings
from markvault.errors import MarkvaultError
from markvault.indexing.change_feed import FeedQueue
from markvault.runtime.wire import MAX_LINE, PROGRESS, decode, dumps, encode, error_json
from markvault.types.progress import Progress
from markvault.vault import CALLS

if TYPE_CHECKING:
    from markvault.runtime.local_host import LocalHost


def lock_path(settings: Settings) -> Path:
    return settings.db_path.with_name(settings.db_path.name + ".owner.lock")


def socket_path(settings: Settings) -> Path:
    """A short path (sockets are limited to ~100 bytes) private to this user."""
    digest = hashlib.blake2b(str(settings.db_path).encode(), digest_size=8).hexdigest()
    folder = Path(tempfile.gettempdir()) / f"markvault-{os.getuid()}"
    return folder / f"{digest}.sock"


class OwnerLock:
    """The exclusive, crash-proof claim on an index (an flock the kernel releases)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fd: int | None = None
        self._socket: Path | None = None
        # Lock files this owner held before their folder was deleted: still locked, so a
        # process waiting on one keeps waiting until this one exits (then it finds the
        # file gone and locks the one at the path: ``_at_path``).
        self._gone: list[int] = []

    def try_acquire(self) -> bool:
        while True:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError as exc:
                os.close(fd)
                if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                    return False
                raise
            if self._at_path(fd):
                self._claim(fd)
                return True

    def acquire_blocking(self) -> None:
        """Wait until the current owner, if any, lets go (exits or dies)."""
        while True:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
            fcntl.flock(fd, fcntl.LOCK_EX)
            if self._at_path(fd):
                self._claim(fd)
                return

    def _at_path(self, fd: int) -> bool:
        """Whether the file locked as ``fd`` is still the one at the path; if not (the
        index folder was deleted meanwhile, and maybe a new lock file made there), it is
        closed: a lock on a file nobody can open again would make a second owner."""
        try:
            st, held = os.stat(self.path), os.fstat(fd)
            if (st.st_dev, st.st_ino) == (held.st_dev, held.st_ino):
                return True
        except OSError:
            pass
        os.close(fd)
        return False

    def reclaim(self) -> bool:
        """Keep the claim when the lock file is no longer at its path (the index folder
        was deleted under a running owner): lock a new file there, and write our pid and
        socket into it, so other processes still find this owner. False when another
        process holds the new file: it owns the index now."""
        if self._fd is None:
            return True
        held = os.fstat(self._fd)
        try:
            st = os.stat(self.path)
            if (st.st_dev, st.st_ino) == (held.st_dev, held.st_ino):
                return True
        except FileNotFoundError:
            pass
        old, socket = self._fd, self._socket
        self._fd = None
        if not self.try_acquire():
            self._fd = old
            return False
        self._gone.append(old)
        if socket is not None:
            self.record(socket)
        return True

    def _claim(self, fd: int, socket: Path | None = None) -> None:
        """Hold ``fd`` (locked) and write our pid, and our socket once listening."""
        self._fd = fd
        self._socket = socket
        tail = f"{socket}\n" if socket else ""
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n{tail}".encode(), 0)

    def holder(self) -> int | None:
        """The pid written by the current owner, if readable."""
        try:
            return int(self.path.read_text().split("\n")[0].strip() or 0) or None
        except (OSError, ValueError):
            return None

    def socket(self) -> Path | None:
        """Where the current owner listens, as it wrote it: processes with another
        TMPDIR (an MCP server started by a client with a bare environment) still meet."""
        try:
            lines = self.path.read_text().split("\n")
        except OSError:
            return None
        return Path(lines[1]) if len(lines) > 1 and lines[1].strip() else None

    def record(self, socket: Path) -> None:
        """Write our pid and socket into the lock file (we hold the lock)."""
        if self._fd is not None:
            self._claim(self._fd, socket)

    def release(self) -> None:
        for fd in [*self._gone, self._fd]:
            if fd is not None:
                with contextlib.suppress(OSError):
                    fcntl.flock(fd, fcntl.LOCK_UN)
                    os.close(fd)
        self._fd = None
        self._gone = []


# ---- the socket server -----------------------------------------------------------------


class _RelayProgress:
    """A progress object that forwards to the caller's, over the connection, and stops
    the work at its next step once the caller cancelled it."""

    def __init__(self, send: Callable[[Any], None], cancelled: threading.Event) -> None:
        self._send = send
        self._cancelled = cancelled

    def start(self, label: str, total: int) -> None:
        self._check()
        self._send(["start", label, total])

    def advance(self, n: int) -> None:
        self._check()
        self._send(["advance", n])

    def finish(self) -> None:  # no check: called from finally blocks
        self._send(["finish"])

    def _check(self) -> None:
        if self._cancelled.is_set():
            raise errors.CallCancelled("The call was cancelled by its caller.")


class _Handler(socketserver.StreamRequestHandler):
    """One connection: its requests, each answered on a thread of its own while this
    one reads on (a caller's ``{"id", "cancel": true}`` arrives during its call), or,
    after ``watch_changes``, the owner's change feed (``_FeedWriter``)."""

    server: _SocketServer

    def setup(self) -> None:
        super().setup()
        self._write = threading.Lock()
        self._cancels: dict[Any, threading.Event] = {}
        self._call: threading.Thread | None = None
        self._feed: _FeedWriter | None = None

    def handle(self) -> None:
        owner = self.server.owner
        owner.client_connected(self.request)
        try:
            while True:
                line = self.rfile.readline(MAX_LINE)
                if not line:
                    return
                self._take(owner, line)
        except (BrokenPipeError, ConnectionResetError, OSError):
            return
        finally:
            if self._feed is not None:
                self._feed.stop()
            if not owner.host.closed:  # the caller went away: its call stops at a step
                for cancel in list(self._cancels.values()):
                    cancel.set()
            if self._call is not None:
                self._call.join()  # closing: a call under way still sends its answer
            owner.client_disconnected(self.request)

    def _take(self, owner: IndexOwner, line: bytes) -> None:
        try:
            request = json.loads(line)
            rid = request.get("id")
        except (json.JSONDecodeError, AttributeError):
            self._send({"id": None, "error": {"type": "UsageError", "message": "bad request"}})
            return
        if request.get("cancel"):
            cancel = self._cancels.get(rid)
            if cancel is not None:
                cancel.set()
            return
        if request.get("method") == "watch_changes":
            self._feed = _FeedWriter(owner, self.request, self._send)
            self._feed.start(rid)
            return
        if self._call is not None:
            self._call.join()  # callers send one call at a time; this one has answered
        cancel = self._cancels[rid] = threading.Event()
        self._call = threading.Thread(
            target=self._answer, args=(owner, request, cancel), name="markvault-call", daemon=True
        )
        self._call.start()

    def _answer(self, owner: IndexOwner, request: dict[str, Any], cancel: threading.Event) -> None:
        rid = request.get("id")

        def progress(event: Any) -> None:
            try:
                self._send({"id": rid, "progress": event})
            except OSError:  # the caller went away: the work stops at its next step
                cancel.set()

        reply: dict[str, Any]
        try:
            result = owner.answer(
                request["method"],
                request.get("args", []),
                request.get("kwargs", {}),
                _RelayProgress(progress, cancel),
            )
            reply = {"id": rid, "result": encode(result)}
        except MarkvaultError as exc:
            reply = {"id": rid, "error": error_json(exc)}
        except ConnectionAbortedError:
            # Closing: the call did not run; the caller sends it to the next owner.
            reply = {"id": rid, "declined": True}
        except Exception as exc:  # a bug must not take the owner down for everyone
            print(f"markvault owner: {type(exc).__name__}: {exc}", file=sys.stderr)
            message = f"internal error in the index owner: {type(exc).__name__}: {exc}"
            reply = {"id": rid, "error": {"type": "MarkvaultError", "message": message}}
        finally:
            self._cancels.pop(rid, None)
        with contextlib.suppress(OSError):  # the caller went away: nobody to answer
            self._send(reply)

    def _send(self, data: dict[str, Any]) -> None:
        with self._write:
            self.wfile.write(dumps(data))
            self.wfile.flush()


class _FeedWriter:
    """Writes the owner's change feed to one follower (``watch_changes``), from a
    bounded queue on a thread of its own: a follower that stops reading falls behind
    and gets a ``lost`` marker, and never holds up a sync."""

    def __init__(
        self, owner: IndexOwner, conn: socket.socket, send: Callable[[dict[str, Any]], None]
    ) -> None:
        self._owner = owner
        self._conn = conn
        self._send = send
        self._queue = FeedQueue()
        self._unsubscribe: Callable[[], None] | None = None
        self._thread: threading.Thread | None = None

    def start(self, rid: Any) -> None:
        self._owner.follower(self._conn)
        self._unsubscribe = self._owner.host.feed.subscribe(self._queue.put)
        self._send({"id": rid, "result": "watching"})

        def write() -> None:
            try:
                while (item := self._queue.get()) is not None:
                    self._send({"id": rid, "event": encode(item)})
            except OSError:
                pass  # the follower went away; its connection's reader stops us
            finally:
                self._detach()

        self._thread = threading.Thread(target=write, name="markvault-feed", daemon=True)
        self._thread.start()

    def _detach(self) -> None:
        if self._unsubscribe is not None:
            self._unsubscribe()

    def stop(self) -> None:
        self._detach()
        self._queue.close()


class _SocketServer(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    """Serves until ``stop``, which wakes it at once: ``serve_forever``'s shutdown waits
    out its poll interval, and every one-shot `vault search` owning the index closes it."""

    daemon_threads = True
    owner: IndexOwner
    timeout = 0.05  # handle_request's wait for a connection that left before its accept

    def __init__(self, path: str, handler: type[_Handler]) -> None:
        self._wake_read, self._wake_write = os.pipe()  # before a failed bind closes them
        super().__init__(path, handler)

    def serve_until_stopped(self) -> None:
        with selectors.DefaultSelector() as selector:
            selector.register(self, selectors.EVENT_READ)
            selector.register(self._wake_read, selectors.EVENT_READ)
            while True:
                ready = selector.select()
                if any(key.fd == self._wake_read for key, _ in ready):
                    return
                self.handle_request()

    def stop(self) -> None:
        os.write(self._wake_write, b"\0")

    def server_close(self) -> None:
        super().server_close()
        os.close(self._wake_read)
        os.close(self._wake_write)


class IndexOwner:
    """Serves one ``LocalHost``'s calls to the other processes, over a Unix socket."""

    def __init__(self, host: LocalHost, lock: OwnerLock) -> None:
        self.host = host
        self.lock = lock
        self.path = socket_path(host.settings)
        self._server: _SocketServer | None = None
        self._thread: threading.Thread | None = None
        self._conns: set[socket.socket] = set()
        self._followers: set[socket.socket] = set()  # connections that follow the feed
        host.clients = 0

    def serve(self) -> None:
        """Listen on the socket in a background thread (we hold the lock, so a socket
        file already there is a dead owner's)."""
        _private_folder(self.path.parent)
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()
        server = _SocketServer(str(self.path), _Handler)
        server.owner = self
        os.chmod(self.path, 0o600)
        self.lock.record(self.path)
        self._server = server
        self._thread = threading.Thread(target=server.serve_until_stopped, daemon=True)
        self._thread.start()

    def answer(
        self,
        method: str,
        args: list[Any],
        kwargs: dict[str, Any],
        progress: Progress | None = None,
    ) -> Any:
        """Run one request: a declared call (``vault.CALLS``), or a ping."""
        if self.host.closed:
            raise ConnectionAbortedError("the index owner is closing")
        if method == "ping":
            return "pong"
        call = CALLS.get(method)
        if call is None:
            raise errors.UsageError(f"Unknown call {method!r}.")
        call_args = tuple(decode(a) for a in args)
        call_kwargs = {k: decode(v) for k, v in kwargs.items()}
        if call_kwargs.get("progress") == PROGRESS:
            call_kwargs["progress"] = progress
        return self.host.call(call, call_args, call_kwargs)

    def client_connected(self, conn: socket.socket) -> None:
        self._conns.add(conn)
        self._count()

    def follower(self, conn: socket.socket) -> None:
        """``conn`` follows the change feed: a process's second connection, not a client."""
        self._followers.add(conn)
        self._count()

    def client_disconnected(self, conn: socket.socket) -> None:
        self._conns.discard(conn)
        self._followers.discard(conn)
        self._count()

    def _count(self) -> None:
        self.host.clients = len(self._conns - self._followers)

    def close(self) -> None:
        self.host.stop_background()  # no call starts from now on; each client fails over
        if self._server is not None:
            self._server.stop()
            if self._thread is not None:
                self._thread.join()
            self._server.server_close()
            self._server = None
            with contextlib.suppress(FileNotFoundError):
                self.path.unlink()
        for conn in list(self._conns):
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RD)  # a call under way still sends its answer
        self.host.close()
        self.lock.release()


def _private_folder(folder: Path) -> None:
    """Create the socket folder, or check that the one there is ours alone: another
    user's folder would let them answer our calls."""
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    st = os.lstat(folder)
    if os.path.islink(folder) or st.st_uid != os.getuid() or st.st_mode & 0o077:
        raise errors.ConfigError(
            f"{folder} is not a private folder of this user; markvault will not put its "
            "socket there.",
            "Remove it, or set TMPDIR to a folder only you can write.",
        )
