"""CPU-bound Python spread over worker processes, in order, falling back to this one.

Parsing Markdown and reading transcripts are pure Python: threads would share one core,
so large batches go to a process pool. Workers start by ``forkserver`` (a clean process,
not a fork of one holding DuckDB), and where they cannot start at all (a ``__main__``
read from stdin, a sandbox without semaphores) the work goes on here.
"""

from __future__ import annotations

import gc
import multiprocessing
import os
import threading
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Any, TypeVar

T = TypeVar("T")
R = TypeVar("R")
MAX_WORKERS = 8
# Batches handed to the workers ahead of the one consumed, per worker: enough to keep
# them busy while the consumer works (a first build writes 500 notes at a time, ~8 of
# sync's batches: with 2 ahead per worker they ran out and waited), few enough that
# results do not pile up in this process.
AHEAD_PER_WORKER = 6
WORKER_GC_THRESHOLD = 50_000  # see worker_setup


def in_workers(
    items: Sequence[T],
    here: Callable[[T], R],
    there: Callable[[list[T]], Any],
    *,
    unpack: Callable[[Any], list[R]] | None = None,
    batch_size: int,
    min_items: int,
    preload: Sequence[str] = (),
    weight: Callable[[T], int] | None = None,
) -> Iterator[list[tuple[T, R]]]:
    """Each item with its result, in order, a list at a time (one item, or one batch).

    Below ``min_items`` items, or on one core, ``here`` runs on each item in this process
    (worker processes would cost more than they save); otherwise ``there`` runs on
    batches of ``batch_size`` in worker processes, all but the first, whose items
    ``here`` takes while they start (``_while_starting``). ``there`` must pickle: a
    module-level function, or a ``functools.partial`` of one; ``unpack``, run here on
    what ``there`` returned, turns it into the batch's results (default: it is them).
    ``preload``: modules ``there`` uses, imported once by the process the workers fork
    from instead of by each worker. ``weight``: what an item costs to work on (a file's
    size), which keeps a few costly items from making one batch long (``_batches``).
    """
    workers = min(os.cpu_count() or 1, MAX_WORKERS)
    if len(items) < min_items or workers < 2:
        for item in items:
            yield [(item, here(item))]
        return
    batches = _batches(items, batch_size, weight)
    done = 0
    try:
        context = multiprocessing.get_context("forkserver")
        if preload:  # only read when the server starts (the first pool of a process)
            context.set_forkserver_preload(["__main__", *preload])
        with ProcessPoolExecutor(
            max_workers=workers, mp_context=context, initializer=worker_setup
        ) as pool:
            pending: deque[Future[Any]] = deque()
            try:
                first, failed = _while_starting(pool, there, batches, pending, workers, here)
                yield first
                done = 1
                if failed is not None:
                    raise failed
                while done < len(batches):
                    while done + len(pending) < len(batches) and (
                        len(pending) < AHEAD_PER_WORKER * workers
                    ):
                        pending.append(pool.submit(there, batches[done + len(pending)]))
                    results = pending.popleft().result()
                    if unpack is not None:
                        results = unpack(results)
                    yield list(zip(batches[done], results, strict=True))
                    done += 1
            finally:
                for future in pending:
                    future.cancel()
    except (BrokenProcessPool, OSError):
        for batch in batches[done:]:
            yield [(item, here(item)) for item in batch]


def _batches(items: Sequence[T], size: int, weight: Callable[[T], int] | None) -> list[list[T]]:
    """``items`` in batches of ``size``, each but the first (``_while_starting``) also
    cut before it would weigh twice what ``size`` items weigh on average: a vault's
    few large notes (an index of every plugin, 300 KB) sit side by side in the pool's
    order, and a batch holding them kept one worker busy ~0.25 s after the other had
    nothing left (bench/README.md, "2026-11-25 night")."""
    if weight is None or len(items) <= size:
        return [list(items[i : i + size]) for i in range(0, len(items), size)]
    weights = [weight(item) for item in items]
    most = 2 * sum(weights) * size / len(items)
    batches = [list(items[:size])]
    batch: list[T] = []
    held = 0
    for item, w in zip(items[size:], weights[size:], strict=True):
        if batch and (len(batch) == size or held + w > most):
            batches.append(batch)
            batch, held = [], 0
        batch.append(item)
        held += w
    if batch:
        batches.append(batch)
    return batches


def _while_starting(
    pool: ProcessPoolExecutor,
    there: Callable[[list[T]], Any],
    batches: list[list[T]],
    pending: deque[Future[Any]],
    workers: int,
    here: Callable[[T], R],
) -> tuple[list[tuple[T, R]], BaseException | None]:
    """The first batch, read here while a thread hands the next ones to ``pool``: its
    first ``submit`` waits for the worker processes to start (the forkserver's own start
    and imports, ~0.2-0.3 s), in which this process would otherwise sit idle. With what
    handing out raised (the pool could not start), for the caller to raise."""
    failed: list[BaseException] = []

    def hand_out() -> None:
        try:
            for batch in batches[1 : 1 + AHEAD_PER_WORKER * workers]:
                pending.append(pool.submit(there, batch))
        except BaseException as exc:  # raised by the caller, after the first batch
            failed.append(exc)

    thread = threading.Thread(target=hand_out, name="markvault-pool-start", daemon=True)
    thread.start()
    try:
        first = [(item, here(item)) for item in batches[0]]
    finally:
        thread.join()
    return first, failed[0] if failed else None


def worker_setup() -> None:
    """A worker's collector: what it imported is frozen out of its collections, and the
    young generation is collected every 50,000 allocations, not 700. A worker builds
    many short-lived objects a batch at a time, freed by their counts; collecting the
    youngest so often walked them for nothing (~6% of a worker's CPU on a vault of long
    documents; bench/bench_workers.py)."""
    gc.freeze()
    gc.set_threshold(WORKER_GC_THRESHOLD, *gc.get_threshold()[1:])
