"""The Watching issue's figures: how fast a change reaches the callback and the index,
what a checkout costs, and what a watcher costs when nothing happens.

    python bench/bench_watch.py                      # 1k notes, every section (~3 min)
    python bench/bench_watch.py --notes 1000,10000   # end-to-end at 10k too
    python bench/bench_watch.py --idle-seconds 10    # a quicker idle measurement
    python bench/bench_watch.py --sections e2e       # one section (latency, checkout, idle, e2e)

Sections, on a synthetic vault from gen_vault.py:

- latency: edit -> callback, p50/p95 over --edits spaced edits (events), and over
  --poll-edits edits in polling mode (2 s interval);
- checkout: 2,000 files written under ``.git/index.lock``, then the lock committed as
  the index; time from that last write to the one full reconcile, and how many
  batches leaked out meanwhile; and the same 2,000 files written with no git at all;
- idle: the process's CPU time over --idle-seconds of a watcher with nothing to do,
  for events and for polling;
- end to end (keyword): Watcher -> Vault.reindex(vectors=False); edit -> searchable
  latency, and an editor autosaving every 50 ms for 10 s: batches,
  CPU share, and time from the last save to its text being found.

Measures and prints; never asserts. The table goes to ``bench/out/watch.md``.
"""

from __future__ import annotations

import argparse
import os
import queue
import random
import shutil
import statistics
import string
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import gen_vault
from markvault.config import Settings
from markvault.indexing.watch_batches import GIT, WatchBatch, vault_callback
from markvault.indexing.watcher import Watcher
from markvault.types.reindex import ReindexReport
from markvault.types.search import Filters, SearchRequest
from markvault.vault import Vault

CORES = os.cpu_count() or 1
HERE = Path(__file__).resolve().parent
OUT = HERE / "out" / "watch.md"
WAIT_S = 60.0
EVERY_NOTE = Filters(include_expired=True)


# ---- reporting -------------------------------------------------------------------------------


@dataclass
class Report:
    rows: list[tuple[str, str, str]] = field(default_factory=list)

    def add(self, size: str, name: str, value: str) -> None:
        self.rows.append((size, name, value))
        print(f"[{CORES} cores] {size} · {name}: {value}", flush=True)

    def markdown(self) -> str:
        lines = ["| size | figure | value | cores |", "| --- | --- | --- | --- |"]
        lines += [f"| {s} | {n} | {v} | {CORES} |" for s, n, v in self.rows]
        return "\n".join(lines) + "\n"


def log(message: str) -> None:
    print(f"· {message}", file=sys.stderr, flush=True)


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.0f} ms"


def p50_p95(samples: list[float]) -> str:
    ordered = sorted(samples)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return f"p50 {ms(statistics.median(ordered))} · p95 {ms(p95)} · max {ms(ordered[-1])}"


def label(notes: int) -> str:
    return f"{notes // 1000}k notes" if notes % 1000 == 0 else f"{notes} notes"


# ---- helpers ---------------------------------------------------------------------------------


class Inbox:
    """The watcher's callback: (time of the call, batch) into a queue."""

    def __init__(self, then: Callable[[WatchBatch], None] | None = None) -> None:
        self.calls: queue.Queue[tuple[float, WatchBatch]] = queue.Queue()
        self.count = 0
        self._then = then

    def __call__(self, batch: WatchBatch) -> None:
        at = time.monotonic()
        self.count += 1
        if self._then is not None:
            self._then(batch)
        self.calls.put((at, batch))

    def wait(self, wanted: Callable[[WatchBatch], bool], timeout: float = WAIT_S) -> float:
        """The call time of the first batch ``wanted`` accepts."""
        deadline = time.monotonic() + timeout
        while True:
            at, batch = self.calls.get(timeout=max(0.001, deadline - time.monotonic()))
            if wanted(batch):
                return at

    def drain(self) -> int:
        n = 0
        while not self.calls.empty():
            self.calls.get_nowait()
            n += 1
        return n


@contextmanager
def watching(vault: Path, inbox: Inbox, **options: object) -> Iterator[Watcher]:
    watcher = Watcher(vault, inbox, **options)
    watcher.start()
    inbox.wait(lambda b: b.full)  # the start reconcile
    try:
        yield watcher
    finally:
        stopped = time.monotonic()
        watcher.stop(5.0)
        log(f"stopped in {ms(time.monotonic() - stopped)} ({watcher.mode})")


def note_files(vault: Path) -> list[Path]:
    return sorted(p for p in vault.rglob("*.md") if ".git" not in p.parts)


def names(rel: str) -> Callable[[WatchBatch], bool]:
    """A batch test: does it name ``rel``?"""
    return lambda batch: rel in batch.paths


def append(path: Path, text: str) -> None:
    with open(path, "a", encoding="utf-8") as fh:
        fh.write(text)


# ---- sections --------------------------------------------------------------------------------


def bench_latency(vault: Path, size: str, edits: int, poll: bool, report: Report) -> None:
    """Edit -> callback, edits spaced past the min interval (a person typing and saving)."""
    rng = random.Random(7)
    files = note_files(vault)
    inbox = Inbox()
    options = {"poll": True, "poll_interval": 2.0} if poll else {}
    with watching(vault, inbox, **options) as watcher:
        samples = []
        for i in range(edits):
            path = rng.choice(files)
            rel = path.relative_to(vault).as_posix()
            time.sleep(0.6)  # past min_interval: each edit starts from an idle watcher
            began = time.monotonic()
            append(path, f"\nedit {i}\n")
            samples.append(inbox.wait(names(rel)) - began)
        mode = f"{watcher.mode}" + (" (2 s interval)" if poll else "")
    report.add(size, f"edit -> callback, {mode}, {edits} edits", p50_p95(samples))


def bench_checkout(vault: Path, size: str, files: int, report: Report) -> None:
    """A checkout under the index lock: one reconcile after it, none during it."""
    git = vault / ".git"
    git.mkdir(exist_ok=True)
    (git / "HEAD").write_text("ref: refs/heads/main\n")
    (git / "index").write_text("index 1")
    notes = note_files(vault)
    inbox = Inbox()
    with watching(vault, inbox):
        (git / "index.lock").write_text("")
        began = time.monotonic()
        for i in range(files):
            target = notes[i] if i < len(notes) else vault / "checkout" / f"c{i}.md"
            target.parent.mkdir(exist_ok=True)
            target.write_text(f"# Checked out {i}\n\nbranch text {i}\n", encoding="utf-8")
        (git / "index.lock").write_text("index 2")
        os.replace(git / "index.lock", git / "index")
        last_write = time.monotonic()
        reconciled = inbox.wait(lambda b: b.full and GIT in b.reasons)
        leaked = inbox.drain()
    report.add(
        size,
        f"checkout of {files:,} files: last write -> full reconcile",
        f"{ms(reconciled - last_write)} (writing took {ms(last_write - began)}; "
        f"{leaked} other batches)",
    )
    shutil.rmtree(git)


def bench_bulk_copy(vault: Path, size: str, files: int, report: Report) -> None:
    """The same number of files with no git: bounded batches, then quiet."""
    inbox = Inbox()
    target = vault / "copied"
    with watching(vault, inbox):
        target.mkdir()
        began = time.monotonic()
        for i in range(files):
            (target / f"n{i}.md").write_text(f"# Copied {i}\n", encoding="utf-8")
        last_write = time.monotonic()
        last_call = last_write
        with_all = False
        while True:
            try:
                at, batch = inbox.calls.get(timeout=2.0)
            except queue.Empty:
                break
            last_call = at
            with_all = with_all or batch.full
    report.add(
        size,
        f"bulk copy of {files:,} files (no git): batches, last write -> last call",
        f"{inbox.count - 1} batches, {ms(last_call - last_write)} "
        f"(writing took {ms(last_write - began)}; full reconcile asked: {with_all})",
    )
    shutil.rmtree(target)


def bench_idle(vault: Path, size: str, seconds: float, poll: bool, report: Report) -> None:
    inbox = Inbox()
    options = {"poll": True, "poll_interval": 2.0} if poll else {}
    with watching(vault, inbox, **options) as watcher:
        time.sleep(1.0)  # past the start reconcile
        cpu, wall = time.process_time(), time.monotonic()
        time.sleep(seconds)
        cpu, wall = time.process_time() - cpu, time.monotonic() - wall
        mode = watcher.mode + (" (2 s interval)" if poll else "")
    report.add(
        size,
        f"idle CPU, {mode}, {seconds:.0f} s",
        f"{cpu / wall * 100:.3f}% of a core ({cpu * 1000:.0f} ms CPU)",
    )


def token(rng: random.Random) -> str:
    """A word no generated note holds, that the tokenizer keeps whole."""
    return "qz" + "".join(rng.choice(string.ascii_lowercase) for _ in range(10))


def bench_end_to_end(vault_dir: Path, index: Path, size: str, edits: int, report: Report) -> None:
    """Watcher -> Vault.reindex(vectors=False): edit -> found by keyword search."""
    vault = Vault(Settings.load(vault=vault_dir, index=index))
    began = time.perf_counter()
    vault.reindex(vectors=False)
    log(f"{size}: keyword index built in {time.perf_counter() - began:.1f} s")
    lock = threading.Lock()
    syncs: list[float] = []

    def record(batch: WatchBatch, result: ReindexReport) -> None:
        syncs.append(result.seconds)

    inbox = Inbox(vault_callback(vault.host.core().keeper, lock, vectors=False, on_report=record))
    rng = random.Random(11)
    files = note_files(vault_dir)
    try:
        with watching(vault_dir, inbox):
            syncs.clear()
            samples = []
            for _ in range(edits):
                path = rng.choice(files)
                word = token(rng)
                time.sleep(0.6)  # as above: a save by a person, not part of a burst
                began_edit = time.monotonic()
                append(path, f"\n{word}\n")
                samples.append(searchable(vault, lock, word) - began_edit)
            report.add(size, f"edit -> searchable (keyword), {edits} edits", p50_p95(samples))
            report.add(size, "sync per batch (Vault.reindex, no vectors)", p50_p95(syncs))
            autosave_burst(vault, lock, rng.choice(files), size, inbox, rng, report)
    finally:
        vault.close()


def searchable(vault: Vault, lock: threading.Lock, word: str) -> float:
    """When a keyword search first finds ``word``."""
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline:
        with lock:
            # Expired and superseded notes (the generator makes some) are found too.
            if vault.search(SearchRequest(word, mode="keyword", limit=1, filters=EVERY_NOTE)).hits:
                return time.monotonic()
        time.sleep(0.01)
    raise TimeoutError(f"{word} never became searchable")


def autosave_burst(
    vault: Vault,
    lock: threading.Lock,
    path: Path,
    size: str,
    inbox: Inbox,
    rng: random.Random,
    report: Report,
) -> None:
    """An autosaving editor: a save every 50 ms for 10 s, each with a new word."""
    original = path.read_text(encoding="utf-8")
    inbox.drain()
    before = inbox.count
    cpu, wall = time.process_time(), time.monotonic()
    word = ""
    end = time.monotonic() + 10.0
    while time.monotonic() < end:
        word = token(rng)
        path.write_text(f"{original}\n{word}\n", encoding="utf-8")
        time.sleep(0.05)
    last_save = time.monotonic()
    found = searchable(vault, lock, word)
    cpu, wall = time.process_time() - cpu, time.monotonic() - wall
    report.add(
        size,
        "autosave every 50 ms for 10 s: batches · CPU · last save -> searchable",
        f"{inbox.count - before} batches · {cpu / wall * 100:.0f}% of a core · "
        f"{ms(found - last_save)}",
    )


# ---- main ------------------------------------------------------------------------------------


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--notes", default="1000", help="Vault sizes, comma-separated.")
    parser.add_argument("--edits", type=int, default=30, help="Edits for latency figures.")
    parser.add_argument("--poll-edits", type=int, default=10, help="Edits in polling mode.")
    parser.add_argument("--checkout-files", type=int, default=2000)
    parser.add_argument("--idle-seconds", type=float, default=60.0)
    parser.add_argument("--poll-idle-seconds", type=float, default=20.0)
    parser.add_argument(
        "--sections",
        default="latency,checkout,idle,e2e",
        help="Which sections to run, comma-separated (default: all four).",
    )
    parser.add_argument("--out", type=Path, default=OUT)
    return parser.parse_args(argv)


def run(args: argparse.Namespace, workdir: Path) -> Report:
    report = Report()
    sections = set(args.sections.split(","))
    for i, notes in enumerate(int(n) for n in args.notes.split(",")):
        size = label(notes)
        vault = workdir / f"v{notes}" / "vault"
        began = time.perf_counter()
        gen_vault.generate(vault, notes, seed=1)
        log(f"{size} generated in {time.perf_counter() - began:.1f} s")
        # The watcher's own figures hardly depend on the vault's size: the first one only.
        if i == 0 and "latency" in sections:
            bench_latency(vault, size, args.edits, poll=False, report=report)
            bench_latency(vault, size, args.poll_edits, poll=True, report=report)
        if i == 0 and "checkout" in sections:
            bench_checkout(vault, size, args.checkout_files, report)
            bench_bulk_copy(vault, size, args.checkout_files, report)
        if i == 0 and "idle" in sections:
            bench_idle(vault, size, args.idle_seconds, poll=False, report=report)
            bench_idle(vault, size, args.poll_idle_seconds, poll=True, report=report)
        if "e2e" in sections:
            bench_end_to_end(vault, workdir / f"v{notes}" / "index", size, args.edits, report)
    return report


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    from machine import machine_line  # the CPU and encoder every figure is of

    print(machine_line(), flush=True)
    workdir = Path(tempfile.mkdtemp(prefix="markvault-bench-watch-"))
    print(f"markvault watch benchmark · {CORES} cores · workdir {workdir}", flush=True)
    try:
        report = run(args, workdir)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    table = report.markdown()
    print("\n" + table)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(table, encoding="utf-8")
    print(f"written to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
