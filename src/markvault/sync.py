"""Reconcile the vault's files into the index, whole or incrementally.

Change detection is cheap first: a file whose (name, mtime, size) match the
index is not read. A file that is read but hashes the same is only touched.
Chunks are keyed by the hash of what the model reads, so unchanged text, moved
notes and renamed files reuse their vectors.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from .chunk import chunk_note
from .config import Settings
from .embed import Embedder
from .errors import RefusedError
from .files import FileStat, VaultFiles, content_hash
from .index import Index, NoteRecord
from .links import LinkResolver
from .model import ReindexReport
from .parse import parse_note
from .text import tokenize

EMBED_GROUP = 256


class Progress(Protocol):
    def start(self, label: str, total: int) -> None: ...
    def advance(self, n: int) -> None: ...
    def finish(self) -> None: ...


class NoProgress:
    def start(self, label: str, total: int) -> None:
        pass

    def advance(self, n: int) -> None:
        pass

    def finish(self) -> None:
        pass


@dataclass
class Changes:
    """What a scan found, before anything is written."""

    records: list[NoteRecord]
    removed: list[str]
    skipped: list[tuple[str, str, int, int]]
    touched: list[tuple[str, str, int, int]]
    unchanged: int
    known: dict[str, tuple[str, int, int, str]]  # the index's view before the change
    warnings: list[str]


def build_record(stat: FileStat, data: bytes, text: str, settings: Settings) -> NoteRecord:
    note = parse_note(stat.path, text, max_frontmatter_bytes=settings.max_frontmatter_bytes)
    lines = (text[1:] if text.startswith("\ufeff") else text).split("\n")
    chunks = chunk_note(note, [line.rstrip("\r") for line in lines], settings.chunk)
    # Title and heading path are searchable with every chunk of the note.
    tokens = [" ".join(tokenize(f"{note.title} {c.context}\n{c.text}")) for c in chunks]
    return NoteRecord(note, chunks, tokens, stat.file, content_hash(data), stat.mtime_ns, stat.size)


class Syncer:
    def __init__(self, settings: Settings, index: Index, files: VaultFiles) -> None:
        self.settings = settings
        self.index = index
        self.files = files

    def scan_changes(self, progress: Progress) -> Changes:
        on_disk, warnings = self.files.scan()
        known = self.index.file_states()
        skipped_before = self.index.skipped_states()
        to_read: list[FileStat] = []
        unchanged = 0
        for path, st in on_disk.items():
            old = known.get(path)
            if old and (old[0], old[1], old[2]) == (st.file, st.mtime_ns, st.size):
                unchanged += 1
                continue
            was = skipped_before.get(path)
            if was and (was[0], was[1]) == (st.mtime_ns, st.size):
                continue  # still the same bad file
            to_read.append(st)

        changes = Changes([], [], [], [], unchanged, known, warnings)
        progress.start("Reading notes", len(to_read))
        for st in to_read:
            try:
                data, text = self.files.read(st.file, self.settings.max_note_bytes)
            except RefusedError as exc:
                changes.skipped.append((st.path, str(exc), st.mtime_ns, st.size))
            except OSError as exc:
                warnings.append(f"{st.file}: cannot read ({exc.strerror}); will retry")
            else:
                old = known.get(st.path)
                if old and old[3] == content_hash(data):
                    changes.touched.append((st.path, st.file, st.mtime_ns, st.size))
                else:
                    changes.records.append(build_record(st, data, text, self.settings))
            progress.advance(1)
        progress.finish()
        changes.removed = sorted((set(known) | set(skipped_before)) - set(on_disk))
        return changes

    def run(
        self,
        *,
        vectors: bool,
        embedder: Callable[[], Embedder] | None = None,
        progress: Progress | None = None,
    ) -> ReindexReport:
        started = time.perf_counter()
        progress = progress or NoProgress()
        report = ReindexReport(vectors=vectors)
        report.notices.extend(self.index.notices)
        self.index.notices.clear()

        changes = self.scan_changes(progress)
        known = changes.known
        removed_hashes = {known[p][3]: p for p in changes.removed if p in known}
        for rec in changes.records:
            if rec.note.path in known:
                report.updated += 1
            elif rec.hash in removed_hashes:
                report.renamed += 1
            else:
                report.added += 1
        report.removed = len(changes.removed) - report.renamed
        report.unchanged = changes.unchanged + len(changes.touched)
        report.warnings = [{"path": w.split(":", 1)[0], "message": w} for w in changes.warnings]
        for rec in changes.records:
            for problem in rec.note.problems:
                report.warnings.append({"path": rec.note.path, "message": problem})
        report.errors = [{"path": s[0], "message": s[1]} for s in changes.skipped]

        self.index.touch(changes.touched)
        if changes.records or changes.removed or changes.skipped:
            aliases_before = dict(self.index.note_link_keys())
            self.index.apply(changes.records, changes.removed, changes.skipped)
            self._resolve_links(changes, aliases_before)
        if self.index.keyword_index_dirty():
            self.index.rebuild_keyword_index()

        if vectors and embedder is not None:
            self._embed(embedder(), report, progress)

        stats = self.index.stats()
        report.notes = stats["notes"]
        report.chunks = stats["chunks"]
        report.notices.extend(self.index.notices)
        self.index.notices.clear()
        report.seconds = time.perf_counter() - started
        return report

    def _resolve_links(self, changes: Changes, aliases_before: dict[str, list[str]]) -> None:
        notes = self.index.note_link_keys()
        # A new, removed or re-aliased note can change where any link points;
        # otherwise only the changed notes' own links need resolving.
        set_changed = changes.removed or any(
            aliases_before.get(r.note.path) != list(r.note.aliases) for r in changes.records
        )
        sources = None if set_changed else [r.note.path for r in changes.records]
        resolver = LinkResolver(notes)
        rows = self.index.links_to_resolve(sources)
        self.index.set_link_targets(
            [(rid, resolver.resolve(src, target, style)) for rid, src, target, style in rows]
        )

    def _embed(self, embedder: Embedder, report: ReindexReport, progress: Progress) -> None:
        model = self.settings.model
        missing = self.index.missing_embeddings(model)
        if missing:
            self.index.ensure_embedding_table(model, embedder.dim)
            missing = self.index.missing_embeddings(model)
        progress.start("Embedding chunks", len(missing))
        # Committed group by group: an interrupted run keeps what it embedded.
        for start in range(0, len(missing), EMBED_GROUP):
            group = missing[start : start + EMBED_GROUP]
            vectors = embedder.encode(
                [text for _, text in group],
                batch_size=self.settings.embed_batch,
                group=EMBED_GROUP,
            )
            self.index.add_embeddings(model, [h for h, _ in group], vectors)
            progress.advance(len(group))
        progress.finish()
        report.embedded = len(missing)
        done, _ = self.index.embedding_counts(model)
        report.reused = max(0, done - len(missing))
        self.index.prune_embeddings()
