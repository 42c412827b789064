"""Attachments' text extracted in worker processes, each file within a budget of time,
bytes, pages and memory. A file that hangs a parser or eats memory is stopped with its
worker (killed, a fresh one started) and comes back as a failure with its reason; the
sync goes on with the rest.

``pool.in_workers`` spreads notes over workers but cannot stop one stuck item, so this
keeps its own few workers, started the same way (``forkserver``: a clean process, not a
fork of one holding DuckDB). Each worker imports the extractors it needs before it says
it is ready, so a file's clock measures the file, not the imports. Where no worker can
start (a sandbox without semaphores) files are read in this process, with every limit
but time and memory.
"""

from __future__ import annotations

import multiprocessing
import os
import time
from collections import deque
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from multiprocessing.connection import Connection, wait
from typing import Any

from markvault.attachments.formats import (
    MEMORY_REASON,
    Extracted,
    Limits,
    extract,
    too_large_reason,
)
from markvault.config import AttachmentLimits
from markvault.files.vault_files import content_hash

MAX_WORKERS = 4
START_SECONDS = 60.0  # a worker's imports; far above what they take (~1 s)
_MODULES = {"pdf": "pypdfium2", "docx": "docx", "pptx": "pptx", "xlsx": "openpyxl"}


@dataclass(frozen=True)
class Job:
    """One file to read: ``full`` on disk, ``hash`` of the bytes the caller read (the
    worker reads them again and checks)."""

    path: str  # vault-relative, for the caller
    full: str
    fmt: str
    hash: str


def limits_of(settings: AttachmentLimits) -> Limits:
    return Limits(
        settings.max_bytes, settings.max_pages, settings.max_chars, settings.max_unpacked_bytes
    )


def read_one(job: Job, limits: Limits) -> tuple[str, object]:
    """("done", Extracted), or ("retry", why) when the file went or changed while it was
    read (a rename under way): the next sync reads it again."""
    try:
        size = os.stat(job.full).st_size
        if size > limits.max_bytes:
            return "done", too_large(job.fmt, size, limits)
        with open(job.full, "rb") as f:
            data = f.read(limits.max_bytes + 1)
    except FileNotFoundError:
        return "retry", f"{job.path}: gone while being read (renamed or removed); will retry"
    except OSError as exc:
        return "retry", f"{job.path}: cannot read ({exc}); will retry"
    if content_hash(data) != job.hash:
        return "retry", f"{job.path}: changed while being read; will retry"
    started = time.perf_counter()
    result = extract(data, job.fmt, limits)
    result.seconds = time.perf_counter() - started
    return "done", result


def too_large(fmt: str, size: int, limits: Limits) -> Extracted:
    """The result for a file over the size limit, which is never read."""
    return Extracted(fmt, "failed", reason=too_large_reason(size, limits.max_bytes))


def _serve(conn: Connection, formats: Sequence[str], memory_bytes: int) -> None:
    """A worker: import the extractors, say so, then read one file per message."""
    import gc
    import importlib

    for fmt in formats:
        if fmt in _MODULES:
            importlib.import_module(_MODULES[fmt])
    _limit_memory(memory_bytes)
    gc.freeze()
    conn.send("ready")
    while True:
        try:
            message = conn.recv()
        except (EOFError, OSError):
            return
        if message is None:
            return
        job, limits = message
        try:
            outcome = read_one(job, limits)
        except MemoryError:
            outcome = ("done", Extracted(job.fmt, "failed", reason=MEMORY_REASON))
        conn.send(outcome)


def _limit_memory(extra: int) -> None:
    """Cap this process's address space at what it holds now plus ``extra`` (Linux)."""
    try:
        import resource

        with open("/proc/self/statm") as f:
            held = int(f.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
        resource.setrlimit(resource.RLIMIT_AS, (held + extra, held + extra))
    except (OSError, ValueError, ImportError):
        pass


class _Worker:
    def __init__(self, context: Any, formats: Sequence[str], memory_bytes: int) -> None:
        self.conn: Connection
        self.conn, child = context.Pipe()
        self.process = context.Process(
            target=_serve, args=(child, tuple(formats), memory_bytes), daemon=True
        )
        self.process.start()
        child.close()
        if not self.conn.poll(START_SECONDS) or self.conn.recv() != "ready":
            self.stop()
            raise OSError("an extraction worker did not start")

    def stop(self) -> None:
        if self.process.is_alive():
            self.process.kill()
        self.process.join(5)
        self.conn.close()


class Extractor:
    """Reads files' text in up to ``workers`` processes, each file within ``limits``.
    Use as a context manager: the workers end with it."""

    def __init__(self, limits: AttachmentLimits, workers: int | None = None) -> None:
        self.settings = limits
        self.limits = limits_of(limits)
        self.workers = workers or min(os.cpu_count() or 1, MAX_WORKERS)
        self._idle: list[_Worker] = []
        self._context: Any = None
        self._in_process = False

    def __enter__(self) -> Extractor:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        for worker in self._idle:
            try:
                worker.conn.send(None)
            except OSError:
                pass
            worker.stop()
        self._idle = []

    def run(
        self, jobs: Sequence[Job], until: float | None = None
    ) -> Iterator[tuple[Job, str, Any]]:
        """(job, outcome, value) as each file is done: ("done", Extracted), ("retry",
        message), or ("later", None) for the files not started by ``until`` (a
        ``time.monotonic()``)."""
        todo = deque(jobs)
        formats = sorted({j.fmt for j in jobs})
        running: dict[Connection, tuple[_Worker, Job, float]] = {}
        seconds = self.settings.seconds
        while todo or running:
            while todo and len(running) < self.workers and not self._in_process:
                if until is not None and time.monotonic() > until:
                    break
                worker = self._worker(formats)
                if worker is None:
                    break
                job = todo.popleft()
                worker.conn.send((job, self.limits))
                running[worker.conn] = (worker, job, time.monotonic())
            if self._in_process and todo:
                if until is not None and time.monotonic() > until:
                    break
                job = todo.popleft()
                outcome, value = read_one(job, self.limits)
                yield job, outcome, value
                continue
            if not running:
                break
            now = time.monotonic()
            first_end = min(started + seconds for _, _, started in running.values())
            ready = wait(list(running), timeout=max(0.0, first_end - now))
            for worker, job, _ in [running.pop(c) for c in list(running) if c in ready]:
                try:
                    outcome, value = worker.conn.recv()
                except (EOFError, OSError):  # killed by the memory limit, or crashed
                    worker.stop()
                    yield job, "done", Extracted(job.fmt, "failed", reason=_CRASHED)
                    continue
                if isinstance(value, Extracted) and value.reason == MEMORY_REASON:
                    worker.stop()  # what it could not free would fail the next file too
                else:
                    self._idle.append(worker)
                yield job, outcome, value
            now = time.monotonic()
            for conn, (worker, job, started) in list(running.items()):
                if now - started >= seconds:
                    del running[conn]
                    worker.stop()
                    reason = (
                        f"took over {seconds:g} s to read, the limit for one attachment; "
                        "not indexed"
                    )
                    yield job, "done", Extracted(job.fmt, "failed", reason=reason)
        for job in todo:
            yield job, "later", None

    def _worker(self, formats: Sequence[str]) -> _Worker | None:
        """An idle worker, or a new one; None (and reading here from now on) when none
        can start."""
        if self._idle:
            return self._idle.pop()
        try:
            if self._context is None:
                self._context = multiprocessing.get_context("forkserver")
            return _Worker(self._context, formats, self.settings.memory_bytes)
        except (OSError, ValueError, RuntimeError):
            self._in_process = True
            return None


_CRASHED = "its reader stopped (out of the memory one attachment may take, or crashed); not indexed"


def extract_file(full: str, fmt: str, limits: AttachmentLimits) -> tuple[str, Extracted]:
    """(content hash, text) of one file outside any sync (a document being stored),
    within the same budget, in a worker.

    Raises:
        OSError: the file cannot be read.
    """
    size = os.stat(full).st_size
    if size > limits.max_bytes:
        return "", too_large(fmt, size, limits_of(limits))
    with open(full, "rb") as f:
        digest = content_hash(f.read())
    with Extractor(limits, workers=1) as extractor:
        for _, outcome, value in extractor.run([Job(full, full, fmt, digest)]):
            if outcome == "done":
                return digest, value
            raise OSError(str(value))
    raise OSError(f"{full}: not read")
