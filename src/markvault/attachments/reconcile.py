"""A sync's second wave: attachments (PDFs, Office files, HTML, EPUB) whose text goes
into the index, after the notes are written (``sync.Syncer.run``).

An attachment is an index note of kind ``attachment``: its path is the file's, its id
the path, its type the format, and its chunks are its pages (slides, sheets, chapters),
each chunk's ``start_line``/``end_line`` holding the page numbers. Its text is kept by
the file's content hash (``index.extracts``): a renamed or copied file is hashed, found
and never read again; a changed one is read again alone. Nothing is ever written into
the vault. The keyword index and the vectors take the chunks as they take any note's.
"""

from __future__ import annotations

import os
import stat as stat_mod
import time
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from markvault.attachments.formats import Extracted, format_of, unit_of
from markvault.files.vault_files import content_hash
from markvault.index.rows import NoteRows
from markvault.types import ATTACHMENT_KIND
from markvault.types.progress import Progress

if TYPE_CHECKING:
    from markvault.config import ChunkParams, Settings
    from markvault.files.vault_files import VaultFiles
    from markvault.index import Index
    from markvault.indexing.change_feed import ChangeFeed
    from markvault.types.notes import NoteRecord
    from markvault.types.reindex import ReindexReport

_UNHASHED = "unread:"  # the "hash" of a file too large to read: its size and mtime


def attachment_record(
    path: str,
    file: str,
    mtime_ns: int,
    size: int,
    digest: str,
    extracted: Extracted,
    params: ChunkParams,
) -> NoteRecord:
    """The index note of an attachment: its pages as chunks (a chunk never spans two),
    the page number in each chunk's line fields; a file without text has one chunk of
    its name, so it is still found by it."""
    # Here: a freshness check that asks only ``changed_attachments`` builds no note.
    from markvault.index.rows import note_terms
    from markvault.markdown.chunk import chunk_note
    from markvault.markdown.tokens import chunk_words
    from markvault.types.notes import Block, Chunk, NoteRecord, ParsedNote

    title = path.rsplit("/", 1)[-1]
    lines: list[str] = []
    page_of: list[int] = []
    blocks: list[Block] = []
    for number, label, text in extracted.pages:
        lines.append(label)
        page_of.append(number)
        blocks.append(Block("heading", len(lines), len(lines), 1, label))
        start = None
        for line in [*text.split("\n"), ""]:
            if line.strip():
                lines.append(line)
                page_of.append(number)
                if start is None:
                    start = len(lines)
            elif start is not None:
                blocks.append(Block("text", start, len(lines)))
                start = None
    problems = (extracted.reason,) if extracted.reason else ()
    note = ParsedNote(
        path=path,
        id=path,
        title=title,
        kind=ATTACHMENT_KIND,
        type=extracted.format,
        tags=(),
        aliases=(),
        fields={},
        metadata={
            "format": extracted.format,
            "extraction": extracted.status,
            "pages": extracted.total_pages,
            "unit": unit_of(extracted.format).lower(),
        },
        body="",
        body_line=0,
        sections=(),
        links=(),
        blocks=tuple(blocks),
        # The chunks' context (what the model reads with them, and their hash) is the
        # page alone: a renamed file keeps its vectors. Its name is searchable by keyword
        # with every chunk, as a note's title is.
        frontmatter_title=False,
        problems=problems,
    )
    chunks = []
    for c in chunk_note(note, lines, params):
        first = page_of[c.start_line - 1] if c.start_line >= 1 else 0
        last = page_of[c.end_line - 1] if c.end_line >= 1 else 0
        chunks.append(Chunk(c.seq, c.heading_path, first, last, c.text, c.context, c.hash))
    words = [chunk_words(title, c.context, c.text) for c in chunks]
    terms, counts = note_terms(words)
    return NoteRecord(
        note,
        chunks,
        sum(map(len, words)),
        file,
        digest,
        mtime_ns,
        size,
        terms=terms,
        term_counts=counts,
    )


def wanted(paths: Iterable[str], settings: Settings) -> set[str]:
    """The attachments among ``paths`` whose text is indexed."""
    if not settings.attachments.enabled:
        return set()
    return {p for p in paths if format_of(p)}


def changed_attachments(
    files: VaultFiles, on_disk: Iterable[str], index: Index, settings: Settings
) -> set[str]:
    """The attachments with text whose file differs from what the index holds of it, or
    that the index holds but the disk no longer has (a freshness check's question)."""
    known = index.extracts.states()
    here = wanted(on_disk, settings)
    changed = set(known) - here
    for path in here:
        st = _stat(files, path)
        old = known.get(path)
        if st is not None and (old is None or (old[1], old[2]) != (st.st_mtime_ns, st.st_size)):
            changed.add(path)
    return changed


def _stat(files: VaultFiles, path: str) -> os.stat_result | None:
    try:
        st = os.stat(files.root / path)
    except OSError:
        return None
    return st if stat_mod.S_ISREG(st.st_mode) else None


def jobs_for(files: VaultFiles, index: Index, settings: Settings, paths: list[str]) -> list[Any]:
    """The extractions ``paths`` need: those whose text (by content hash) is not kept."""
    from markvault.attachments.extract import Job

    found: list[Job] = []
    for path in wanted(paths, settings):
        st = _stat(files, path)
        if st is None or st.st_size > settings.attachments.max_bytes:
            continue
        try:
            digest = content_hash((files.root / path).read_bytes())
        except OSError:
            continue
        fmt = format_of(path)
        assert fmt is not None
        found.append(Job(path, str(files.root / path), fmt, digest))
    cached = index.extracts.cached([j.hash for j in found])
    return [j for j in found if j.hash not in cached]


def sync_attachments(
    settings: Settings,
    index: Index,
    files: VaultFiles,
    on_disk: set[str],
    within: Any,
    report: ReindexReport,
    progress: Progress,
    *,
    inline: bool,
    feed: ChangeFeed | None = None,
) -> None:
    """Bring the attachments among ``on_disk`` (all the vault's, or those under a
    watcher's hints, which ``within(path)`` tells) in step with the index. ``inline``:
    a sync made before an answer, which starts extractions for at most
    ``inline_seconds``; what is left waits for the next sync."""
    limits = settings.attachments
    known = {p: v for p, v in index.extracts.states().items() if within(p)}
    here = wanted(on_disk, settings)
    removed = sorted(set(known) - here)
    # (path, file, mtime, size, hash) of each attachment to (re)index, its text to find
    todo: list[tuple[str, str, int, int, str]] = []
    touched: list[tuple[str, str, int, int]] = []
    retries: list[str] = []
    for path in sorted(here):
        st = _stat(files, path)
        if st is None:
            continue
        old = known.get(path)
        if old is not None and (old[1], old[2]) == (st.st_mtime_ns, st.st_size):
            continue
        if st.st_size > limits.max_bytes:
            digest = f"{_UNHASHED}{st.st_size}:{st.st_mtime_ns}"
        else:
            try:
                digest = content_hash((files.root / path).read_bytes())
            except OSError as exc:
                retries.append(f"{path}: cannot read ({exc}); will retry")
                continue
        if old is not None and old[3] == digest:
            touched.append((path, path, st.st_mtime_ns, st.st_size))
            continue
        todo.append((path, path, st.st_mtime_ns, st.st_size, digest))
    if not (todo or removed or touched or retries):
        return
    started = time.perf_counter()
    found = index.extracts.cached([t[4] for t in todo])
    new: list[tuple[str, Extracted, float]] = []
    from markvault.attachments.extract import Job, too_large

    jobs: list[Job] = []
    for path, _, _, size, digest in todo:
        if digest in found:
            continue
        fmt = format_of(path)
        assert fmt is not None
        if digest.startswith(_UNHASHED):
            found[digest] = too_large(fmt, size, _limits(settings))
            new.append((digest, found[digest], 0.0))
            continue
        jobs.append(Job(path, str(files.root / path), fmt, digest))
    reused = sum(1 for t in todo if t[4] in found) - len(new)
    later: set[str] = set()
    if jobs:
        from markvault.attachments.extract import Extractor

        progress.start("Reading attachments", len(jobs))
        until = time.monotonic() + limits.inline_seconds if inline else None
        with Extractor(limits) as extractor:
            for job, outcome, value in extractor.run(jobs, until):
                if outcome == "done":
                    found[job.hash] = value
                    new.append((job.hash, value, value.seconds))
                elif outcome == "retry":
                    retries.append(str(value))
                    later.add(job.path)
                else:
                    later.add(job.path)
                progress.advance(1)
        progress.finish()
    records = [
        NoteRows.of(attachment_record(p, f, m, s, h, found[h], settings.chunk))
        for p, f, m, s, h in todo
        if h in found and p not in later
    ]
    with index.store.transaction():
        index.extracts.keep(new)
        if records or removed:
            index.writes.apply(records, removed)
        index.writes.touch([(*t, None, None) for t in touched])  # no racy check: by hash
        index.extracts.prune()
    if index.keyword.dirty():
        index.keyword.rebuild()
    _report(report, records, removed, new, reused, later, retries, known, started)
    if feed is not None and feed.listening and (records or removed):
        from markvault.indexing.feed_items import NoteChange

        feed.publish(
            [NoteChange("changed" if r.path in known else "added", r.path, r.path) for r in records]
            + [NoteChange("removed", p, p) for p in removed]
        )


def _limits(settings: Settings) -> Any:
    from markvault.attachments.extract import limits_of

    return limits_of(settings.attachments)


def _report(
    report: ReindexReport,
    records: list[NoteRows],
    removed: list[str],
    new: list[tuple[str, Extracted, float]],
    reused: int,
    later: set[str],
    retries: list[str],
    known: dict[str, Any],
    started: float,
) -> None:
    """What the wave did, in the report: counts, each problem with its path, a line."""
    pages = sum(len(e.pages) for _, e, _ in new)
    failed = sum(1 for _, e, _ in new if e.status != "text")
    report.attachments = {
        "indexed": len(records),
        "extracted": len(new),
        "reused": reused,
        "removed": len(removed),
        "not_read": failed,
        "pending": len(later),
        "waiting": sorted(later),  # read by the owner's background (attachment_backfill)
        "pages": pages,
        "extract_seconds": round(sum(s for _, _, s in new), 3),
        "seconds": round(time.perf_counter() - started, 3),
    }
    for r in records:
        report.warnings.extend({"path": r.path, "message": p} for p in r.problems)
    report.warnings.extend({"path": m.split(":", 1)[0], "message": m} for m in retries)
    parts = [f"{len(new)} read ({pages} pages)"] if new else []
    if reused:
        parts.append(f"{reused} renamed, copied or restored (text reused)")
    if removed:
        parts.append(f"{len(removed)} removed")
    if failed:
        parts.append(f"{failed} without text or unreadable (see `vault status`)")
    if later:
        parts.append(f"{len(later)} waiting to be read (the next sync, or `vault reindex`)")
    if parts:
        report.notices.append("Attachments: " + ", ".join(parts) + ".")
