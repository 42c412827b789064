"""Reconcile the vault's files into the index, whole or incrementally (the Syncer).
Reading notes into records is note_reading.py's; writing them and telling the change
feed, sync_changes.py's.

Change detection is cheap first: a file whose (name, mtime, size) match the
index is not read. A file that is read but hashes the same is only touched.
Chunks are keyed by the hash of what the model reads, so unchanged text, moved
notes and renamed files reuse their vectors.
"""

from __future__ import annotations

import contextlib
import time
import unicodedata
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING

from markvault.config import Settings
from markvault.embed.embedder import Embedder
from markvault.files.vault_files import VaultFiles
from markvault.files.vault_scan import FileStat, VaultScan
from markvault.index.rows import NoteRows
from markvault.indexing import note_reading
from markvault.indexing.change_feed import ChangeFeed
from markvault.indexing.note_reading import read_files
from markvault.indexing.racy import measure_granularity, probe_granularity, racy_window, settle
from markvault.indexing.sync_changes import (
    Changes,
    StoredNotes,
    note_changes,
    tell_conflicts,
    tell_skipped,
)
from markvault.markdown.links import LinkResolver, link_name, names_of
from markvault.types.progress import NoProgress, Progress
from markvault.types.reindex import ReindexReport

if TYPE_CHECKING:  # the workers that read notes import this module: not DuckDB
    from markvault.files.find_walk import FindWalk
    from markvault.index import Index

GRANULARITY_KEY = "timestamp_granularity_ns"  # the index's meta: racy.py
# Vectors are committed this many at a time: progress moves and an interrupted run
# keeps its work, while sentence-transformers still sorts each group by length.
EMBED_GROUP = 256
INLINE_EMBED_GROUP = 8
# A read waits 3 s for a sync's turn (``BUSY_ANSWER_SECONDS``); the inline embedding
# stops starting groups after this, so one slow group still leaves the read its answer.
INLINE_EMBED_SECONDS = 1.0


# A sync reading more notes than this (a first build, a large checkout) writes them this
# many at a time as they are read, instead of holding them all (see scan_changes).
APPLY_BATCH = 500


def _files_order(
    todo: list[tuple[FileStat, str | None]],
    changes: Changes,
    retries: list[tuple[str, str]],
    stored: StoredNotes | None,
) -> None:
    """What a read in page order found, back in the files' order (``todo``'s): all that
    a sync reports, tells the feed or matches as renames; only the chunk ids a build
    written batch by batch hands out follow the page order."""
    place = {st.path: i for i, (st, _) in enumerate(todo)}
    changes.records.sort(key=lambda r: place[r.path])
    changes.touched.sort(key=lambda t: place[t[0]])
    changes.skipped.sort(key=lambda t: place[t[0]])
    retries.sort(key=lambda t: place[t[0]])
    if stored is not None:
        stored.written.sort(key=lambda w: place[w.path])
        # a build written batch by batch: only its notes' problems are there yet
        stored.report.warnings.sort(key=lambda w: place.get(str(w.get("path")), -1))


class Syncer:
    def __init__(
        self, settings: Settings, index: Index, files: VaultFiles, walk: FindWalk | None = None
    ) -> None:
        """``walk``: GNU find's walk of the vault, started for this sync (a one-shot
        `vault reindex`): its first full scan takes the vault from find's listing."""
        self.settings = settings
        self.index = index
        self.files = files
        self._walk = walk
        # The attachments the scan found, and the hints it was limited to (NFC): the
        # second wave's work (attachment_sync).
        self._seen: tuple[set[str], list[str] | None] | None = None

    def scan_changes(
        self,
        progress: Progress,
        hints: Iterable[str] | None = None,
        stored: StoredNotes | None = None,
    ) -> Changes:
        """What changed on disk: everything, or only under the ``hints`` (files or
        folders a watcher saw change; renames are matched by content hash as usual).

        ``stored``: when more than ``APPLY_BATCH`` notes are to be read and none was
        removed (a removed note's chunk ids may pass to its renamed self, which must then
        be written in the same transaction), records go to ``stored`` a batch at a time
        as they are read instead of into ``records``: a first build holds one batch of
        the vault, never all of it."""
        hint_list = None if hints is None else sorted({h.strip("/") for h in hints})
        started = time.time_ns()  # a file changed within the racy window of this is suspect
        scan = self._listed_scan() if hint_list is None else None
        if scan is None:
            scan = self.files.scan_all(under=hint_list)
        on_disk, warnings = scan.notes, scan.warnings
        known = self.index.writes.file_states()
        skipped_before = self.index.writes.skipped_states()
        window = racy_window(self._granularity(on_disk.values() if hint_list is None else None))
        to_read: list[FileStat] = []
        unchanged = 0
        for path, st in on_disk.items():
            old = known.get(path)
            if (
                old
                and (old[0], old[1], old[2]) == (st.file, st.mtime_ns, st.size)
                and (old[4], old[5]) == (st.ctime_ns, st.ino)
            ):
                unchanged += 1
                continue
            was = skipped_before.get(path)
            if was and (was[0], was[1]) == (st.mtime_ns, st.size):
                continue  # still the same bad file
            to_read.append(settle(st, started, window))

        changes = Changes([], [], [], [], unchanged, known, warnings)
        gone = (set(known) | set(skipped_before)) - set(on_disk)
        files_before = self.index.reads.attachments()
        nfc: list[str] = []
        if hint_list is not None:
            nfc = [unicodedata.normalize("NFC", h) for h in hint_list]
            gone = {p for p in gone if _within(p, nfc)}
            files_before = {p for p in files_before if _within(p, nfc)}
        changes.removed = sorted(gone)
        self._seen = (scan.attachments, None if hint_list is None else nfc)
        changes.files_added = scan.attachments - files_before
        changes.files_removed = files_before - scan.attachments
        if stored is not None and (changes.removed or len(to_read) <= APPLY_BATCH):
            stored = None
        if stored is not None:
            stored.begin_batches(len(to_read))
        progress.start("Reading notes", len(to_read))
        todo = [(st, known[st.path][3] if st.path in known else None) for st in to_read]
        if stored is None:
            self._read(todo, changes, None, progress)
        else:  # its batches are written while workers read the next
            with self.index.store.one_thread():
                self._read(todo, changes, stored, progress)
        progress.finish()
        return changes

    def _granularity(self, stats: Iterable[FileStat] | None) -> int | None:
        """The vault's timestamp granularity (racy.py), remembered in the index (which
        is the vault's: one per vault folder): measured by the first full scan, from a
        file it makes in the vault, else from the mtimes of ``stats``."""
        kept = self.index.meta().get(GRANULARITY_KEY)
        if kept or stats is None:
            return int(kept) if kept else None
        measured = probe_granularity(self.settings.vault_dir) or measure_granularity(stats)
        if measured is not None and self.index.store.writable:
            with self.index.store.transaction():
                self.index.store.set_meta(**{GRANULARITY_KEY: str(measured)})
        return measured

    def _listed_scan(self) -> VaultScan | None:
        """The vault as this sync's find walk listed it; None without one (or when find
        failed, or its listing did not parse): the caller walks."""
        walk, self._walk = self._walk, None
        listing = walk.listing() if walk is not None else None
        return self.files.scan_listing(listing) if listing is not None else None

    def _read(
        self,
        todo: list[tuple[FileStat, str | None]],
        changes: Changes,
        stored: StoredNotes | None,
        progress: Progress,
    ) -> None:
        """Read ``todo`` into ``changes``, or its records into ``stored`` a batch at a
        time (see scan_changes)."""
        batch: list[NoteRows] = []
        retries: list[tuple[str, str]] = []
        for st, (outcome, value) in read_files(self.files, self.settings, todo, progress):
            if outcome == "record":
                assert isinstance(value, NoteRows)
                if stored is None:
                    changes.records.append(value)
                    continue
                batch.append(value)
                if len(batch) >= APPLY_BATCH:
                    stored.store(batch, changes.known)
                    batch = []
            elif outcome == "touched":
                changes.touched.append(
                    (st.path, st.file, st.mtime_ns, st.size, st.ctime_ns, st.ino)
                )
            elif outcome == "skipped":
                changes.skipped.append((st.path, str(value), st.mtime_ns, st.size))
            else:
                retries.append((st.path, str(value)))
        if batch and stored is not None:
            stored.store(batch, changes.known)
        if len(todo) >= note_reading.PARALLEL_MIN_FILES:  # read in page order (read_files)
            _files_order(todo, changes, retries, stored)
        changes.warnings += [message for _, message in retries]

    def run(
        self,
        *,
        vectors: bool,
        embedder: Callable[[], Embedder] | None = None,
        progress: Progress | None = None,
        hints: Iterable[str] | None = None,
        embed_limit: int | None = None,
        feed: ChangeFeed | None = None,
    ) -> ReindexReport:
        """``embed_limit``: embed only when at most this many chunks lack a vector (a
        server's sync must not hold the index for a long embedding; its background
        backfill does that work group by group). ``feed``: told what changed."""
        started = time.perf_counter()
        progress = progress or NoProgress()
        report = ReindexReport(vectors=vectors)
        report.notices.extend(self.index.notices)
        self.index.notices.clear()

        # Checkpointed once at the end: a build written batch by batch would otherwise
        # rewrite the growing tables each time DuckDB's log passed its threshold.
        with self.index.store.deferred_checkpoints():
            self._sync_notes(report, progress, hints, feed)
        # The second wave: attachments' text, once the notes are written and searchable.
        seen, self._seen = self._seen, None
        if seen is not None:
            from markvault.attachments.reconcile import sync_attachments

            on_disk, under = seen
            sync_attachments(
                self.settings,
                self.index,
                self.files,
                on_disk,
                lambda p: under is None or _within(p, under),
                report,
                progress,
                inline=embed_limit is not None,
                feed=feed,
            )

        if vectors and embedder is not None:
            self._embed(embedder(), report, progress, embed_limit)

        report.notes, report.chunks = self.index.reads.note_and_chunk_counts()
        report.notices.extend(self.index.notices)
        self.index.notices.clear()
        report.seconds = time.perf_counter() - started
        return report

    def _sync_notes(
        self,
        report: ReindexReport,
        progress: Progress,
        hints: Iterable[str] | None,
        feed: ChangeFeed | None,
    ) -> None:
        """Bring the notes, their links and the keyword index in step with the files."""
        told = feed if feed is not None and feed.listening else None
        links_pending = self.index.writes.links_pending()
        stored = StoredNotes(self.index, report, told is not None)
        changes = self.scan_changes(progress, hints, stored)
        report.warnings[:0] = [{"path": w.split(":", 1)[0], "message": w} for w in changes.warnings]
        report.errors = [{"path": s[0], "message": s[1]} for s in changes.skipped]

        self.index.writes.touch(changes.touched)
        files_changed = bool(changes.files_added or changes.files_removed)
        notes_changed = bool(changes.records or changes.removed or changes.skipped)
        # Written batch by batch for a keyword rebuild: the batches' rows go to the file
        # before the postings sort needs the memory (else it evicts them to the temporary
        # file, and the checkpoint at the end reads them back), and that checkpoint runs
        # while link resolution works in Python (the links stay marked pending till then).
        alongside = None
        if stored.batched and self.index.keyword.dirty():
            alongside = self.index.store.checkpoint_large_log
        if notes_changed or files_changed or stored.wrote or links_pending:
            # One transaction: notes never without their links' targets, and one commit
            # (a sync of DuckDB's log to disk) instead of three.
            with self.index.store.transaction():
                if notes_changed:
                    stored.store(changes.records, changes.known, changes.removed, changes.skipped)
                self.index.writes.set_attachments(changes.files_added, changes.files_removed)
                if alongside is None:
                    self._resolve_links(changes, stored, links_pending)
            if alongside is not None:
                self._resolve_links(changes, stored, links_pending, alongside)
            if told is not None:
                told.publish(note_changes(changes, stored.written, stored.before))
                tell_skipped(told, changes.skipped)
                tell_conflicts(told, stored.written)
        report.removed = len(changes.removed) - report.renamed
        report.unchanged = changes.unchanged + len(changes.touched)
        if self.index.keyword.dirty():
            self.index.keyword.rebuild()
        elif self.index.keyword.needs_compaction():
            self.index.keyword.compact()

    def _resolve_links(
        self,
        changes: Changes,
        stored: StoredNotes,
        every: bool,
        alongside: Callable[[], None] | None = None,
    ) -> None:
        """Resolve the written notes' own links, and the links whose target may now
        point elsewhere: those naming a file or alias that came or went, and those that
        pointed at a file that went or a note whose aliases changed. ``every``: all
        links (a build written batch by batch was interrupted before this step).
        ``alongside``: a DuckDB statement to run on a thread while the links are
        resolved in Python (between reading them and writing their targets)."""
        aliases_before = stored.aliases_before()
        sources: list[str] | None = [w.path for w in stored.written]
        names: set[str] = set()
        targets = set(changes.removed) | changes.files_removed
        for path in (*changes.files_added, *changes.files_removed, *changes.removed):
            names |= names_of(path)
        for w in stored.written:
            before = aliases_before.get(w.path)
            if before is None:  # a new note (or the new name of a moved one)
                names |= names_of(w.path)
            if before != list(w.aliases):
                targets.add(w.path)
                names |= {link_name(a) for a in (*(before or ()), *w.aliases)}
        if every or not changes.known:  # the first build: every link
            sources = None
        rows = self.index.writes.links_to_resolve(sources, names, targets)
        notes = self.index.writes.note_link_keys() if rows else []
        files = self.index.reads.attachments() if rows else set()
        with _alongside(alongside):
            resolver = (
                LinkResolver(notes, files)
                if sources is None  # a whole vault's links name most of its files
                else LinkResolver.for_links([r[1:] for r in rows], notes, files)
            )
            resolved = [(rid, resolver.resolve(src, t, style)) for rid, src, t, style in rows]
        self.index.writes.set_link_targets(resolved)
        if every or stored.batched:
            self.index.writes.clear_links_pending()

    def _embed(
        self,
        embedder: Embedder,
        report: ReindexReport,
        progress: Progress,
        limit: int | None = None,
    ) -> None:
        model = self.settings.model
        missing = self.index.vectors.missing(model)
        if limit is not None and len(missing) > limit:
            report.notices.append(f"{len(missing)} chunks wait for vectors (embedded later)")
            return
        if missing:
            embedder.prepare(progress)  # a first load says what it does meanwhile
            self.index.vectors.ensure_table(model, embedder.dim)
            missing = self.index.vectors.missing(model)
        progress.start("Embedding chunks", len(missing))
        # Committed group by group: an interrupted run keeps what it embedded. Inline (a
        # sync holding the index for its callers) in small groups, for a few seconds at
        # most whatever the CPU: what is left goes to the background backfill.
        size, until = EMBED_GROUP, None
        if limit is not None:
            size, until = INLINE_EMBED_GROUP, time.monotonic() + INLINE_EMBED_SECONDS
        embedded = 0
        for start in range(0, len(missing), size):
            if until is not None and time.monotonic() > until:
                left = len(missing) - embedded
                report.notices.append(f"{left} chunks wait for vectors (embedded later)")
                break
            group = missing[start : start + size]
            vectors = embedder.encode([text for _, text in group], self.settings.embed_batch)
            self.index.vectors.add(model, [h for h, _ in group], vectors)
            embedded += len(group)
            progress.advance(len(group))
        progress.finish()
        report.embedded = embedded
        done, _ = self.index.vectors.counts(model)
        report.reused = max(0, done - embedded)
        self.index.vectors.prune()


@contextlib.contextmanager
def _alongside(work: Callable[[], None] | None) -> Iterator[None]:
    """Run ``work`` on a thread while the body runs, and wait for it. DuckDB releases
    Python's lock while it executes, so a statement there and pure Python here use both
    cores; the body must not use the connection meanwhile."""
    if work is None:
        yield
        return
    from concurrent.futures import ThreadPoolExecutor, wait

    with ThreadPoolExecutor(1) as pool:
        future = pool.submit(work)
        try:
            yield
        finally:
            wait([future])
        future.result()


def _within(path: str, hints: list[str]) -> bool:
    """Whether ``path`` is one of the hinted files or lies in a hinted folder (hints
    in NFC, as index paths are)."""
    return any(not h or path == h or path.startswith(h + "/") for h in hints)
