"""Reading the vault's notes into index records: each file read, parsed, chunked and
its terms counted (``build_record``), in worker processes when there are many (parsing
Markdown is CPU-bound Python). Workers remember the pages they built last, so a page
repeated in several versions of a document set is built once.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Iterator
from dataclasses import replace
from typing import TYPE_CHECKING

from markvault.config import ChunkParams, Settings
from markvault.errors import MarkvaultError, RefusedError
from markvault.files.vault_files import VaultFiles, content_hash
from markvault.files.vault_scan import FileStat
from markvault.git.repo import has_conflict_markers
from markvault.index.rows import NoteRows, RowBlock, note_terms
from markvault.markdown.memo import Recent
from markvault.types.notes import Chunk, NoteRecord, ParsedNote
from markvault.types.progress import Progress

if TYPE_CHECKING:  # the workers that read notes import this module: not DuckDB
    from markvault.markdown.outline import Outline


def build_record(stat: FileStat, data: bytes, text: str, settings: Settings) -> NoteRecord:
    # Imported here: a sync that reads no file (nothing changed) never loads the parser.
    from markvault.markdown.parse import parse_note
    from markvault.markdown.template_text import without_placeholders

    worker = _in_worker()
    text = without_placeholders(text)  # a template's placeholders are never content
    note = parse_note(
        stat.path,
        text,
        max_frontmatter_bytes=settings.max_frontmatter_bytes,
        shapes=_shapes if worker else None,
    )
    # What decides the chunks and their terms (the blocks are the body's, from its line).
    key = (note.title, note.frontmatter_title, note.body_line, note.body, settings.chunk)
    built = _built.find(key) if worker else None
    if built is None:
        built = _chunks_and_terms(note, text, settings.chunk)
        if worker:
            _built.keep(key, built, len(note.body))
    chunks, terms, counts, note_len = built
    return NoteRecord(
        note,
        list(chunks),
        note_len,
        stat.file,
        content_hash(data),
        stat.mtime_ns,
        stat.size,
        terms=terms,
        term_counts=counts,
        ctime_ns=stat.ctime_ns,
        ino=stat.ino,
    )


def _chunks_and_terms(note: ParsedNote, text: str, params: ChunkParams) -> _Built:
    """The chunks of ``note`` (``text`` its file's text), their terms and postings
    (``note_terms``) and the note's number of tokens."""
    from markvault.markdown.chunk import chunk_note
    from markvault.markdown.tokens import chunk_words

    lines = (text[1:] if text.startswith("\ufeff") else text).split("\n")
    if "\r" in text:  # only then a pass over every line
        lines = [line.rstrip("\r") for line in lines]
    chunks = chunk_note(note, lines, params)
    # Title and heading path are searchable with every chunk of the note.
    words = [chunk_words(note.title, c.context, c.text) for c in chunks]
    terms, counts = note_terms(words)
    return tuple(chunks), terms, counts, sum(map(len, words))


_Built = tuple[tuple[Chunk, ...], tuple[str, ...], bytes, int]


# What a worker remembers of the pages it built last (``_in_worker``; a long-lived process
# keeps nothing), by characters of body: a collection of document sets in several
# versions repeats whole pages under other frontmatter, and a large sync hands a page's
# versions to the workers side by side (``read_files``), so a page seen a few notes
# before costs no outline, chunking or tokenizing. Chunks and outlines are immutable
# (named tuples, frozen dataclasses; the outline's lists are only read), so two records
# may share them.
RECENT_CHARS = 1_000_000
_built: Recent[tuple[object, ...], _Built] = Recent(RECENT_CHARS)
_shapes: Recent[tuple[str, int], Outline] = Recent(RECENT_CHARS)


def _in_worker() -> bool:
    """Whether this is a worker process (``pool.in_workers``: it ends with its sync),
    the only kind that remembers built notes; a long-lived process keeps none."""
    process = sys.modules.get("multiprocessing.process")
    return process is not None and process.parent_process() is not None


# Below this many files to read, worker processes cost more than they save.
PARALLEL_MIN_FILES = 200
READ_BATCH = 64  # files a worker reads per turn
# What a worker reading notes imports, imported once where the workers fork from
# (pyarrow: a batch's rows go back as Arrow tables, rows.RowBlock).
WORKER_MODULES = (
    "markvault.indexing.note_reading",
    "markvault.markdown.parse",
    "markvault.markdown.chunk",
    "markvault.markdown.tokens",
    "pyarrow",
)


def read_file(
    files: VaultFiles, settings: Settings, st: FileStat, known_hash: str | None
) -> tuple[str, object]:
    """Read and build one note: ("record", NoteRows), ("touched", None) when the bytes
    are unchanged, ("skipped", reason) or ("retry", message)."""
    outcome, value = _build_file(files, settings, st, known_hash)
    if outcome == "record":
        return outcome, NoteRows.of(value)  # type: ignore[arg-type]
    return outcome, value


def _build_file(
    files: VaultFiles, settings: Settings, st: FileStat, known_hash: str | None
) -> tuple[str, object]:
    """read_file, its record a NoteRecord."""
    try:
        data, text = files.read(st.file, settings.max_note_bytes)
    except RefusedError as exc:
        return "skipped", str(exc)
    except (OSError, MarkvaultError) as exc:
        return "retry", f"{st.file}: cannot read ({exc}); will retry"
    if known_hash is not None and known_hash == content_hash(data):
        return "touched", None
    record = build_record(st, data, text, settings)
    return "record", replace(record, conflicted=has_conflict_markers(text))


def _read_batch(
    settings: Settings, batch: list[tuple[FileStat, str | None]]
) -> tuple[list[tuple[str, object]], RowBlock | None]:
    """read_file over a batch, in a worker process (its own VaultFiles): the outcomes,
    the records' rows in one block of Arrow tables, which pickle as a few buffers
    instead of an object per value (see ``_unpack_batch``)."""
    files = VaultFiles(settings.vault_dir, settings.index_dir)
    results = [_build_file(files, settings, st, known) for st, known in batch]
    records = [value for outcome, value in results if outcome == "record"]
    if not records:
        return results, None
    block = RowBlock.of(records)  # type: ignore[arg-type]
    return [(o, None if o == "record" else v) for o, v in results], block


def _unpack_batch(
    done: tuple[list[tuple[str, object]], RowBlock | None],
) -> list[tuple[str, object]]:
    """A worker's batch (``_read_batch``) as read_file's outcomes, in the parent."""
    results, block = done
    if block is None:
        return results
    records = iter(block.records())
    return [(o, next(records) if o == "record" else v) for o, v in results]


def read_files(
    files: VaultFiles,
    settings: Settings,
    todo: list[tuple[FileStat, str | None]],
    progress: Progress,
) -> Iterator[tuple[FileStat, tuple[str, object]]]:
    """read_file over ``todo``, in worker processes when there are many (parsing
    Markdown is CPU-bound Python). What this process's chunker learnt of the texts it
    read is forgotten at the end (``chunk.forget_pieces``)."""
    from markvault.markdown.chunk import forget_pieces

    try:
        if len(todo) < PARALLEL_MIN_FILES:  # here, without importing the process pool
            for st, known in todo:
                yield st, read_file(files, settings, st, known)
                progress.advance(1)
            return
        from markvault.indexing.pool import in_workers

        # A page's versions side by side (docset/v1/x.md, docset/v2/x.md, ...): mostly in
        # one batch, so its worker builds the page once (see RECENT_CHARS).
        for done in in_workers(
            sorted(todo, key=_page_order),
            lambda item: read_file(files, settings, *item),
            functools.partial(_read_batch, settings),
            unpack=_unpack_batch,
            batch_size=READ_BATCH,
            min_items=PARALLEL_MIN_FILES,
            preload=WORKER_MODULES,
            weight=lambda item: item[0].size,
        ):
            for (st, _), result in done:
                yield st, result
            progress.advance(len(done))
    finally:
        forget_pieces()


def _page_order(item: tuple[FileStat, str | None]) -> tuple[str, str]:
    """A file's place in a large read: by its name, then its path."""
    path = item[0].path
    return path.rpartition("/")[2], path
