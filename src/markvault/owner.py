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

The protocol is JSON lines: ``{"id", "method", "args", "kwargs"}`` in,
``{"id", "result"}`` or ``{"id", "error"}`` out, with ``{"id", "progress"}`` lines
before the answer of a long call. Values that are not JSON (filters, edits, paths,
search results, reindex reports) travel as ``{"__type__": ...}`` objects.
"""

from __future__ import annotations

import contextlib
import dataclasses
import errno
import fcntl
import hashlib
import json
import os
import socket
import socketserver
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from . import errors
from .config import Settings
from .edit import Edit
from .errors import MarkvaultError
from .index import Filters
from .model import Hit, ReindexReport, SearchResult
from .sync import Progress
from .vault import Vault
from .watch import WatchBatch, Watcher, vault_callback

# Calls that change nothing: safe to send again after the owner was replaced.
READ_METHODS = frozenset(
    {
        "search",
        "search_batch",
        "get",
        "get_many",
        "status",
        "pending",
        "trash",
        "topics",
        "topic_points",
        "complete",
        "recent",
        "timeline",
        "related",
        "link_path",
        "vault_map",
        "written",
        "list_sessions",
        "read_session",
        "session_projects",
        "template_dirs",
    }
)
WRITE_METHODS = frozenset(
    {
        "reindex",
        "refresh",
        "new_note",
        "edit_note",
        "move_note",
        "delete_note",
        "restore_note",
        "learn_knowledge",
        "store_document",
        "import_sessions",
        "save_session_summary",
    }
)
READ_RETRIES = 5  # reconnections to find a live owner before a write
CLOSE_WAIT_SECONDS = 1.5  # a stopping owner waits this long for a call under way
BUSY_ANSWER_SECONDS = 3.0  # a read waits this long for a running sync, then says so
BACKFILL_GROUP = 64  # chunks embedded per turn in the background
BACKFILL_IDLE_SECONDS = 300.0  # a check for missing vectors when nothing woke it
CONNECT_WAIT_SECONDS = 60.0  # an owner may be building a large index before it answers
MAX_LINE = 256 * 1024 * 1024


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

    def try_acquire(self) -> bool:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            os.close(fd)
            if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                return False
            raise
        self._claim(fd)
        return True

    def acquire_blocking(self) -> None:
        """Wait until the current owner, if any, lets go (exits or dies)."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        fcntl.flock(fd, fcntl.LOCK_EX)
        self._claim(fd)

    def _claim(self, fd: int, socket: Path | None = None) -> None:
        """Hold ``fd`` (locked) and write our pid, and our socket once listening."""
        self._fd = fd
        tail = f"{socket}\n" if socket else ""
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n{tail}".encode(), 0)

    @property
    def held(self) -> bool:
        return self._fd is not None

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
        if self._fd is not None:
            with contextlib.suppress(OSError):
                fcntl.flock(self._fd, fcntl.LOCK_UN)
                os.close(self._fd)
            self._fd = None


# ---- values on the wire --------------------------------------------------------------


def encode(value: Any) -> Any:
    """Python values -> JSON values, tagging the types the facade takes and returns."""
    if isinstance(value, Filters | Edit):
        return {"__type__": type(value).__name__, **dataclasses.asdict(value)}
    if isinstance(value, SearchResult):
        data = value.to_json()
        data["hits"] = [dict(h.to_json(), text=h.text) for h in value.hits]
        return {"__type__": "SearchResult", **data}
    if isinstance(value, ReindexReport):
        return {"__type__": "ReindexReport", **value.to_json()}
    if isinstance(value, Path):
        return {"__type__": "Path", "value": str(value)}
    if isinstance(value, dict):
        return {str(k): encode(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [encode(v) for v in value]
    if isinstance(value, Iterator):
        return [encode(v) for v in value]
    return value


def decode(value: Any) -> Any:
    if isinstance(value, list):
        return [decode(v) for v in value]
    if not isinstance(value, dict):
        return value
    kind = value.get("__type__")
    if kind is None:
        return {k: decode(v) for k, v in value.items()}
    data = {k: v for k, v in value.items() if k != "__type__"}
    if kind == "Filters":
        return Filters(**data)
    if kind == "Edit":
        return Edit(**data)
    if kind == "Path":
        return Path(data["value"])
    if kind == "ReindexReport":
        data.pop("vectors_ready", None)
        return ReindexReport(**{k: v for k, v in data.items() if k in _REPORT_FIELDS})
    if kind == "SearchResult":
        hits = [_hit(h) for h in data["hits"]]
        result = SearchResult(
            data["query"],
            data["mode"],
            hits,
            data["timings_ms"],
            data["total"],
            data["warnings"],
            data.get("counts", {}),
            data.get("shortcut", False),
        )
        return result
    raise ValueError(f"unknown value type {kind!r} on the wire")


_REPORT_FIELDS = {f.name for f in dataclasses.fields(ReindexReport)}
_HIT_FIELDS = {f.name for f in dataclasses.fields(Hit)}


def _hit(data: dict[str, Any]) -> Hit:
    return Hit(**{k: v for k, v in data.items() if k in _HIT_FIELDS})


def _error_json(exc: MarkvaultError) -> dict[str, Any]:
    return {
        "type": type(exc).__name__,
        "message": exc.message,
        "hint": exc.hint,
        "exit_code": exc.exit_code,
    }


def _raise_error(data: dict[str, Any]) -> None:
    cls = getattr(errors, str(data.get("type")), None)
    if not (isinstance(cls, type) and issubclass(cls, MarkvaultError)):
        cls = MarkvaultError
    exc = cls(data.get("message", "the index owner failed"), data.get("hint"))
    raise exc


# ---- the owner's side ------------------------------------------------------------------


class _RelayProgress:
    """A progress object that forwards to the caller's, over the connection."""

    def __init__(self, send: Callable[[Any], None]) -> None:
        self._send = send

    def start(self, label: str, total: int) -> None:
        self._send(["start", label, total])

    def advance(self, n: int) -> None:
        self._send(["advance", n])

    def finish(self) -> None:
        self._send(["finish"])


class _Handler(socketserver.StreamRequestHandler):
    server: _SocketServer

    def handle(self) -> None:
        owner = self.server.owner
        owner.client_connected(self.request)
        try:
            while True:
                line = self.rfile.readline(MAX_LINE)
                if not line:
                    return
                self._answer(owner, line)
        except (BrokenPipeError, ConnectionResetError, OSError):
            return
        finally:
            owner.client_disconnected(self.request)

    def _answer(self, owner: IndexOwner, line: bytes) -> None:
        try:
            request = json.loads(line)
            rid = request.get("id")
        except (json.JSONDecodeError, AttributeError):
            self._send({"id": None, "error": {"type": "UsageError", "message": "bad request"}})
            return

        def progress(event: Any) -> None:
            self._send({"id": rid, "progress": event})

        try:
            result = owner.run(
                request["method"], request.get("args", []), request.get("kwargs", {}), progress
            )
            self._send({"id": rid, "result": encode(result)})
        except MarkvaultError as exc:
            self._send({"id": rid, "error": _error_json(exc)})
        except ConnectionAbortedError:
            # Closing: the call did not run; the caller sends it to the next owner.
            self._send({"id": rid, "declined": True})
        except Exception as exc:  # a bug must not take the owner down for everyone
            print(f"markvault owner: {type(exc).__name__}: {exc}", file=sys.stderr)
            message = f"internal error in the index owner: {type(exc).__name__}: {exc}"
            self._send({"id": rid, "error": {"type": "MarkvaultError", "message": message}})

    def _send(self, data: dict[str, Any]) -> None:
        self.wfile.write(json.dumps(data, ensure_ascii=False, default=str).encode() + b"\n")
        self.wfile.flush()


class _SocketServer(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    daemon_threads = True
    owner: IndexOwner


class IndexOwner:
    """Owns one index for this process and serves it to the others."""

    def __init__(self, vault: Vault, lock: OwnerLock) -> None:
        self.vault = vault
        self.lock = lock
        self.calls = threading.RLock()  # one facade call at a time, like VaultService
        self.path = socket_path(vault.settings)
        self._server: _SocketServer | None = None
        self._thread: threading.Thread | None = None
        self._conns: set[socket.socket] = set()
        self.closed = False
        self.watcher: Watcher | None = None
        self._backfill: threading.Thread | None = None
        self._wake = threading.Event()  # set after writes and syncs: new chunks to embed
        self._stopping = threading.Event()

    def start_backfill(self) -> None:
        """Embed chunks that have no vector yet, a small group at a time, letting every
        other call in between: a first embedding of a vault takes minutes to hours and
        must not hold the index that long (syncs embed inline only a few chunks)."""
        if self._backfill is None:
            self._backfill = threading.Thread(
                target=self._backfill_loop, name="markvault-backfill", daemon=True
            )
            self._backfill.start()

    def _backfill_loop(self) -> None:
        embedder = self.vault.embedder()
        while not embedder.wait(1.0):
            if self._stopping.is_set() or embedder.load_error:
                return
        while not self._stopping.is_set():
            try:
                # The index is held only to read and to store; the model works without it.
                with self.calls:
                    todo = self.vault.chunks_without_vectors(BACKFILL_GROUP)
                if todo:
                    vectors = embedder.encode([text for _, text in todo])
                    with self.calls:
                        self.vault.add_vectors([h for h, _ in todo], vectors)
            except Exception as exc:  # the next write or sync tries again
                print(f"markvault: embedding in the background failed: {exc}", file=sys.stderr)
                todo = []
            if not todo:
                self._wake.wait(BACKFILL_IDLE_SECONDS)
                self._wake.clear()

    def start_watching(
        self,
        poll: bool | None = None,
        on_report: Callable[[WatchBatch, ReindexReport], None] | None = None,
    ) -> None:
        """Keep the index in step with the files (servers and `vault watch` do this)."""
        if self.watcher is None:
            settings = self.vault.settings

            def synced(batch: WatchBatch, report: ReindexReport) -> None:
                self._wake.set()
                if on_report is not None:
                    on_report(batch, report)

            self.watcher = Watcher(
                settings.vault_dir,
                vault_callback(self.vault, self.calls, on_report=synced),
                index_dir=settings.index_dir,
                poll=poll,
            )
            self.watcher.start()

    def status(self) -> dict[str, Any]:
        data = self.call("status", [], {})
        data["watcher"] = self.watcher.status() if self.watcher else None
        return data

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
        self._thread = threading.Thread(
            target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()

    def run(
        self,
        method: str,
        args: list[Any],
        kwargs: dict[str, Any],
        progress: Callable[[Any], None] | None = None,
    ) -> Any:
        if self.closed:
            raise ConnectionAbortedError("the index owner is closing")
        if method == "ping":
            return "pong"
        if method == "status":
            return self.status()
        if method not in READ_METHODS and method not in WRITE_METHODS:
            raise errors.UsageError(f"Unknown call {method!r}.")
        call_args = [decode(a) for a in args]
        call_kwargs = {k: decode(v) for k, v in kwargs.items()}
        if call_kwargs.get("progress") == "__progress__":
            call_kwargs["progress"] = _RelayProgress(progress) if progress else None
        return self.call(method, call_args, call_kwargs)

    def call(self, method: str, args: list[Any], kwargs: dict[str, Any]) -> Any:
        """Run a facade method. A read that finds the index busy with a long sync (a
        first build, a big checkout) is answered within seconds, saying so, rather than
        left waiting (RELIABILITY 39)."""
        wait = BUSY_ANSWER_SECONDS if method in READ_METHODS else -1
        if not self.calls.acquire(timeout=wait):
            return self._busy_answer(method, args, kwargs)
        if self.closed:  # it closed while this call waited: never reopen the index
            self.calls.release()
            raise ConnectionAbortedError("the index owner is closing")
        try:
            result = getattr(self.vault, method)(*args, **kwargs)
            return list(result) if isinstance(result, Iterator) else result
        finally:
            self.calls.release()
            if method in WRITE_METHODS:
                self._wake.set()

    def _busy_answer(self, method: str, args: list[Any], kwargs: dict[str, Any]) -> Any:
        activity = self.vault.activity
        doing = (
            f"{activity[0].lower()}: {activity[1]:,} of {activity[2]:,}"
            if activity
            else "a sync is running"
        )
        message = f"the index is being built ({doing}); results will come when it is done"
        if method == "search":
            query = str(args[0] if args else kwargs.get("query", ""))
            mode = str(kwargs.get("mode", "hybrid"))
            return SearchResult(query, mode, [], {"total": 0.0}, 0, [message])
        raise errors.IndexBusyError(message[0].upper() + message[1:] + ".", "Retry shortly.")

    def client_connected(self, conn: socket.socket) -> None:
        self._conns.add(conn)

    def client_disconnected(self, conn: socket.socket) -> None:
        self._conns.discard(conn)

    @property
    def clients(self) -> int:
        return len(self._conns)

    def close(self) -> None:
        self._stopping.set()
        self._wake.set()
        if self.watcher is not None:
            self.watcher.stop(1.0)  # a sync in progress finishes in its daemon thread
            self.watcher = None
        self.closed = True  # no call starts from now on; each client fails over
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
            with contextlib.suppress(FileNotFoundError):
                self.path.unlink()
        for conn in list(self._conns):
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RD)  # a call under way still sends its answer
        # Wait for a call or sync under way (a thread must not be inside DuckDB while the
        # interpreter exits), but not forever: past that the process exits anyway and
        # DuckDB's write-ahead log makes the next open whole.
        if self.calls.acquire(timeout=CLOSE_WAIT_SECONDS):
            try:
                self.vault.close()
            finally:
                self.calls.release()
        self.lock.release()


# ---- everyone's side -------------------------------------------------------------------


class _Declined(ConnectionError):
    """The owner was closing and did not run the call: safe to send it again."""


class OwnerLostError(errors.IndexBusyError):
    """The owner went away in the middle of a write."""


class SharedVault:
    """The facade the CLI and the MCP server use: the local ``Vault`` when this process
    owns the index, the owner's over the socket otherwise, taking over when it dies."""

    def __init__(
        self,
        settings: Settings,
        *,
        connect_wait: float = CONNECT_WAIT_SECONDS,
        must_own: bool = False,
    ) -> None:
        """``must_own``: wait until this process owns the index (`vault watch`)."""
        self.settings = settings
        self._background = False
        self._watch = False
        self._poll: bool | None = None
        self._must_own = must_own
        self._on_report: Callable[[WatchBatch, ReindexReport], None] | None = None
        self._state = threading.RLock()  # ownership changes: a call's failover, standby
        self._standby: threading.Thread | None = None
        self._closing = False
        self._connect_wait = connect_wait
        self._lock = OwnerLock(lock_path(settings))
        self._owner: IndexOwner | None = None
        self._sock: socket.socket | None = None
        self._file: Any = None
        self._next_id = 0
        self._io = threading.Lock()
        self._model_wait: float | None = None
        self._attach()

    @property
    def model_wait(self) -> float | None:
        """See ``Vault.model_wait``; applies where the model lives (the owner)."""
        return self._model_wait

    @model_wait.setter
    def model_wait(self, value: float | None) -> None:
        self._model_wait = value
        if self._owner is not None:
            self._owner.vault.model_wait = value

    # -- who owns the index

    @property
    def is_owner(self) -> bool:
        return self._owner is not None

    @property
    def local(self) -> Vault | None:
        """This process's own ``Vault``, when it is the owner."""
        return self._owner.vault if self._owner else None

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
                if self._connect():
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

    def _connect(self) -> bool:
        path = self._lock.socket() or socket_path(self.settings)
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.connect(str(path))
        except OSError:
            sock.close()
            return False
        self._sock = sock
        self._file = sock.makefile("rwb")
        return True

    def _become_owner(self) -> None:
        vault = Vault(self.settings)
        vault.model_wait = self._model_wait
        self._owner = IndexOwner(vault, self._lock)
        self._owner.serve()
        self._start_owner_work()

    def start_background(self, *, watch: bool = True, poll: bool | None = None) -> None:
        """For long-running servers: wherever this process owns the index (now, or
        after taking over from a dead owner), load the model in the background and
        watch the files."""
        self._background, self._watch, self._poll = True, watch, poll
        self._start_owner_work()
        self._start_standby()

    def _start_standby(self) -> None:
        """A server that is not the owner waits on the owner's lock in a thread, to take
        over - watcher and model included - the moment the owner exits or dies, not only
        at its next call."""
        if self._standby is not None or self._owner is not None or self._must_own:
            return
        lock = OwnerLock(lock_path(self.settings))

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

    def on_sync(self, report: Callable[[WatchBatch, ReindexReport], None]) -> None:
        """Call ``report`` after each sync the watcher runs here (`vault watch` prints)."""
        self._on_report = report

    def _start_owner_work(self) -> None:
        if self._owner is None or not self._background:
            return
        self._owner.vault.start_background()
        self._owner.start_backfill()
        if self._watch:
            self._owner.start_watching(self._poll, self._on_report)

    def _disconnect(self) -> None:
        with contextlib.suppress(OSError):
            if self._file is not None:
                self._file.close()
            if self._sock is not None:
                self._sock.close()
        self._sock = self._file = None

    def close(self) -> None:
        with self._state:
            self._closing = True
            self._disconnect()
            if self._owner is not None:
                self._owner.close()
                self._owner = None

    def __enter__(self) -> SharedVault:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- calls

    def call(self, method: str, *args: Any, **kwargs: Any) -> Any:
        """Run a facade method here (owner) or at the owner. A call the owner declined
        because it was closing is sent again to the next owner (or run here, if this
        process becomes it), whatever it is; after an owner died mid-call only a read is
        sent again. A write goes only to an owner that just answered a ping, so it fails
        only when the owner dies during that very write."""
        deadline = time.monotonic() + self._connect_wait
        while True:
            if self._owner is not None:
                return self._owner.call(method, list(args), kwargs)
            try:
                if method in WRITE_METHODS:
                    self._ensure_live()
                    if self._owner is not None:
                        continue  # this process took over: run it here
                return self._remote(method, args, kwargs)
            except _Declined:
                self._disconnect()
                self._attach()
            except (OSError, EOFError, json.JSONDecodeError):
                self._disconnect()
                self._attach()
                if method not in READ_METHODS:
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
        for _ in range(READ_RETRIES + 1):
            try:
                if self._remote("ping", (), {}) == "pong":
                    return
            except (OSError, EOFError, json.JSONDecodeError):
                pass
            self._disconnect()
            self._attach()
            if self._owner is not None:
                return

    def _remote(self, method: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        progress: Progress | None = kwargs.pop("progress", None)
        if progress is not None:
            kwargs["progress"] = "__progress__"
        with self._io:
            if self._file is None:
                raise ConnectionError("not connected")
            self._next_id += 1
            rid = self._next_id
            request = {"id": rid, "method": method, "args": encode(list(args))}
            request["kwargs"] = encode(kwargs)
            self._file.write(json.dumps(request, ensure_ascii=False).encode() + b"\n")
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
                    raise _Declined("the index owner is closing")
                if "error" in reply:
                    _raise_error(reply["error"])
                return decode(reply.get("result"))

    def __getattr__(self, name: str) -> Any:
        if name in READ_METHODS or name in WRITE_METHODS:
            return lambda *args, **kwargs: self.call(name, *args, **kwargs)
        raise AttributeError(name)

    # -- the parts of Vault that are not calls

    def embedder(self) -> Any:
        if self._owner is None:
            raise errors.UsageError("Only the owner of the index loads the model.")
        return self._owner.vault.embedder()

    def status(self) -> dict[str, Any]:
        """The owner's ``Vault.status`` and its watcher's, plus who owns the index."""
        if self._owner is not None:
            return {**self._owner.status(), "owner": self.owner_info()}
        return {**self.call("status"), "owner": self.owner_info()}

    def watch_forever(self, stop: threading.Event, poll: bool | None = None) -> None:
        """`vault watch`: as the owner, keep the index fresh until ``stop`` is set."""
        assert self._owner is not None, "watching needs ownership (must_own=True)"
        self.start_background(watch=True, poll=poll)
        while not stop.wait(0.5):  # short waits keep Ctrl-C responsive
            pass

    def owner_info(self) -> dict[str, Any]:
        return {
            "owner_pid": os.getpid() if self.is_owner else self._lock.holder(),
            "this_process_owns": self.is_owner,
            "clients": self._owner.clients if self._owner else None,
        }


def _relay(progress: Progress, event: list[Any]) -> None:
    if event[0] == "start":
        progress.start(str(event[1]), int(event[2]))
    elif event[0] == "advance":
        progress.advance(int(event[1]))
    else:
        progress.finish()


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
