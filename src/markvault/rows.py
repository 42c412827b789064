"""A note as the index stores it: its ``notes`` row and its chunks' and links' columns.

Built where the note was read (a worker process, in a large sync). A worker then packs
its batch's rows into a ``RowBlock``: Arrow tables and numpy arrays, which pickle as a
few buffers (no Python object per value to rebuild in the parent) and which the parent
inserts as they are (``index.writes``). Nothing here imports DuckDB: the workers never
load it; pyarrow and numpy are imported only by a block's builder and readers.
"""

from __future__ import annotations

import json
import time
from collections import defaultdict
from collections.abc import Sequence
from itertools import chain
from typing import Any, NamedTuple

from .links import link_name
from .model import NoteRecord

NOTE_COLUMNS = (
    "path",
    "file",
    "id",
    "title",
    "kind",
    "type",
    "tags",
    "tags_lc",
    "aliases",
    "topic",
    "project",
    "status",
    "created",
    "updated",
    "valid_until",
    "superseded_by",
    "source",
    "files",
    "concepts",
    "metadata",
    "problems",
    "hash",
    "mtime_ns",
    "size",
    "date",
)
# The chunks' columns but their ids, which the index gives out (index.writes).
CHUNK_COLUMNS = (
    "path",
    "seq",
    "heading_path",
    "start_line",
    "end_line",
    "text",
    "context",
    "hash",
    "fts_text",
    "note_len",
)
LINK_COLUMNS = (
    "source",
    "target",
    "heading",
    "block",
    "alias",
    "embed",
    "style",
    "line",
    "target_name",
)


class NoteRows(NamedTuple):
    """One note's rows, and what a sync reports and resolves links with."""

    path: str
    note_id: str
    topic: str | None
    hash: str
    aliases: tuple[str, ...]
    problems: tuple[str, ...]
    conflicted: bool
    note: tuple[Any, ...]  # the ``notes`` row, in NOTE_COLUMNS order
    chunks: tuple[list[Any], ...]  # a list per CHUNK_COLUMNS, a value per chunk
    links: tuple[list[Any], ...]  # a list per LINK_COLUMNS, a value per link
    terms: tuple[str, ...]  # see NoteRecord.terms
    term_counts: bytes | None
    # A worker's note: its rows (note .. term_counts empty) are row ``slot`` of ``block``.
    block: RowBlock | None = None
    slot: int = 0

    @property
    def chunk_count(self) -> int:
        if self.block is not None:
            starts = self.block.chunk_starts
            return int(starts[self.slot + 1] - starts[self.slot])
        return len(self.chunks[0])

    @property
    def counted(self) -> bool:
        """Whether the worker counted the note's postings (``sync.note_terms``)."""
        if self.block is not None:
            return self.block.terms is not None
        return self.term_counts is not None

    @property
    def ends_block(self) -> bool:
        """Whether no row of this note's block comes after it (or it has no block)."""
        return self.block is None or self.slot == len(self.block.chunk_starts) - 2

    def in_block(self, block: RowBlock, slot: int) -> NoteRows:
        """This note without its rows, which are row ``slot`` of ``block``."""
        return self._replace(
            note=(), chunks=(), links=(), terms=(), term_counts=None, block=block, slot=slot
        )

    @classmethod
    def of(cls, rec: NoteRecord) -> NoteRows:
        note = rec.note
        cs, ls = rec.chunks, note.links
        # Search tokens in all its chunks: the note's length for BM25 (bm25.py).
        note_len = sum(t.count(" ") + 1 for t in rec.chunk_tokens if t)
        chunks = (
            [note.path] * len(cs),
            [c.seq for c in cs],
            [list(c.heading_path) for c in cs],
            [c.start_line for c in cs],
            [c.end_line for c in cs],
            [c.text for c in cs],
            [c.context for c in cs],
            [c.hash for c in cs],
            list(rec.chunk_tokens),
            [note_len] * len(cs),
        )
        links = (
            [note.path] * len(ls),
            [link.target for link in ls],
            [link.heading for link in ls],
            [link.block for link in ls],
            [link.alias for link in ls],
            [link.embed for link in ls],
            [link.style for link in ls],
            [link.line for link in ls],
            [link_name(link.target) for link in ls],
        )
        return cls(
            note.path,
            note.id,
            note.fields.get("topic"),
            rec.hash,
            tuple(note.aliases),
            tuple(note.problems),
            rec.conflicted,
            note_row(rec),
            chunks,
            links,
            rec.terms,
            rec.term_counts,
        )


def note_row(rec: NoteRecord) -> tuple[Any, ...]:
    """The ``notes`` row of a record, in NOTE_COLUMNS order."""
    note, f = rec.note, rec.note.fields
    return (
        note.path,
        rec.file,
        note.id,
        note.title,
        note.kind,
        note.type,
        list(note.tags),
        [t.lower() for t in note.tags],
        list(note.aliases),
        f.get("topic"),
        f.get("project"),
        f.get("status"),
        f.get("created"),
        f.get("updated"),
        f.get("valid_until"),
        f.get("superseded_by"),
        f.get("source"),
        f.get("files", []),
        f.get("concepts", []),
        json.dumps(note.metadata, ensure_ascii=False),
        list(note.problems),
        rec.hash,
        rec.mtime_ns,
        rec.size,
        f.get("updated")
        or f.get("created")
        or time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(rec.mtime_ns / 1e9)),
    )


def row_columns(
    records: Sequence[NoteRows],
) -> tuple[dict[str, list[Any]], dict[str, list[Any]], dict[str, list[Any]]]:
    """The notes', chunks' and links' columns of records that hold their own rows."""
    rows = zip(*(r.note for r in records), strict=True)
    notes = {c: list(v) for c, v in zip(NOTE_COLUMNS, rows, strict=True)}
    chunks = {
        column: list(chain.from_iterable(r.chunks[i] for r in records))
        for i, column in enumerate(CHUNK_COLUMNS)
    }
    links = {
        column: list(chain.from_iterable(r.links[i] for r in records))
        for i, column in enumerate(LINK_COLUMNS)
    }
    return notes, chunks, links


# Arrow types of the columns that are not text, as the index's tables have them
# (index.store's schema): every block's tables then have one schema and concatenate.
_TYPES = {
    **dict.fromkeys(
        ("tags", "tags_lc", "aliases", "files", "concepts", "problems", "heading_path"), "list"
    ),
    **dict.fromkeys(("mtime_ns", "size"), "int64"),
    **dict.fromkeys(("seq", "start_line", "end_line", "note_len", "line"), "int32"),
    "embed": "bool",
}


def _arrow(columns: dict[str, list[Any]]) -> Any:
    import pyarrow as pa

    kinds = {
        "list": pa.list_(pa.string()),
        "int64": pa.int64(),
        "int32": pa.int32(),
        "bool": pa.bool_(),
    }
    schema = pa.schema([(c, kinds.get(_TYPES.get(c, ""), pa.string())) for c in columns])
    return pa.table(columns, schema=schema)


class RowBlock(NamedTuple):
    """The rows of a batch of notes, as a worker sends them: Arrow tables, and the
    postings it counted with the batch's own term numbers. A note's rows are found by
    its slot: rows ``starts[slot]:starts[slot + 1]`` of each table or array."""

    notes: Any  # pa.Table in NOTE_COLUMNS, a row per note
    chunks: Any  # pa.Table in CHUNK_COLUMNS
    links: Any  # pa.Table in LINK_COLUMNS
    chunk_starts: Any  # numpy int64, a start per note and the end
    link_starts: Any
    terms: list[str] | None  # the batch's distinct terms; a term's number: its position
    # The postings a worker counted (None: some note was not counted), in the smallest
    # integer type that holds them: each chunk's count of distinct terms, then each
    # posting's term number and count, chunk after chunk.
    chunk_sizes: Any
    posting_terms: Any
    posting_tfs: Any
    posting_starts: Any  # a start per note and the end
    note_terms: Any  # the numbers of each note's distinct terms
    term_starts: Any

    @classmethod
    def of(cls, records: Sequence[NoteRows]) -> RowBlock:
        """The block of records that hold their own rows (imports pyarrow and numpy)."""
        import numpy as np

        notes, chunks, links = row_columns(records)
        chunk_starts = np.cumsum([0, *(len(r.chunks[0]) for r in records)])
        link_starts = np.cumsum([0, *(len(r.links[0]) for r in records)])
        tables = (_arrow(notes), _arrow(chunks), _arrow(links))
        if any(r.term_counts is None for r in records):
            return cls(*tables, chunk_starts, link_starts, *(None,) * 7)
        return cls(*tables, chunk_starts, link_starts, *_counted(records, chunk_starts))

    def tables(self, first: int, end: int) -> tuple[Any, Any, Any]:
        """The notes', chunks' and links' rows of slots ``first`` to ``end``."""
        cs, ls = self.chunk_starts, self.link_starts
        return (
            self.notes.slice(first, end - first),
            self.chunks.slice(int(cs[first]), int(cs[end] - cs[first])),
            self.links.slice(int(ls[first]), int(ls[end] - ls[first])),
        )

    def counted_rows(self, first: int, end: int) -> tuple[Any, Any, Any, Any]:
        """The postings of slots ``first`` to ``end``: their chunks' sizes, their terms'
        numbers and counts; and the numbers of each of their notes' distinct terms."""
        cs, ps, ts = self.chunk_starts, self.posting_starts, self.term_starts
        return (
            self.chunk_sizes[cs[first] : cs[end]],
            self.posting_terms[ps[first] : ps[end]],
            self.posting_tfs[ps[first] : ps[end]],
            self.note_terms[ts[first] : ts[end]],
        )


def _counted(records: Sequence[NoteRows], chunk_starts: Any) -> tuple[Any, ...]:
    """A block's terms, postings and its notes' distinct terms, from each note's
    ``term_counts`` (``sync.note_terms``)."""
    import numpy as np

    ids: defaultdict[str, int] = defaultdict()
    ids.default_factory = ids.__len__  # a new term gets the next number
    own = [len(r.terms) for r in records]
    terms = chain.from_iterable(r.terms for r in records)
    numbers = np.fromiter(map(ids.__getitem__, terms), np.int32, sum(own))
    term_starts = np.cumsum([0, *own])
    parts = [np.frombuffer(r.term_counts or b"", np.int32) for r in records]
    counts = np.diff(chunk_starts)
    sizes = np.concatenate([p[:n] for p, n in zip(parts, counts, strict=True)])
    pairs = [p[n:].reshape(2, -1) for p, n in zip(parts, counts, strict=True)]
    per_note = [p.shape[1] for p in pairs]
    local, tf = np.concatenate(pairs, axis=1)
    term = numbers[local + np.repeat(term_starts[:-1], per_note)]
    posting_starts = np.cumsum([0, *per_note])
    return (
        list(ids),
        _small(sizes),
        _small(term),
        _small(tf),
        posting_starts,
        _small(numbers),
        term_starts,
    )


def _small(values: Any) -> Any:
    """Non-negative int32 values as uint16 when they fit: half the bytes to send."""
    import numpy as np

    return values.astype(np.uint16) if not len(values) or values.max() < 2**16 else values


def block_runs(records: Sequence[NoteRows]) -> list[tuple[RowBlock, int, int]]:
    """``records`` as runs of block rows, in order: (block, first slot, end slot).
    Records holding their own rows (read in this process) are packed into blocks."""
    runs: list[tuple[RowBlock, int, int]] = []
    own: list[NoteRows] = []
    for r in records:
        if r.block is None:
            own.append(r)
            continue
        if own:
            runs.append((RowBlock.of(own), 0, len(own)))
            own = []
        if runs and runs[-1][0] is r.block and runs[-1][2] == r.slot:
            runs[-1] = (r.block, runs[-1][1], r.slot + 1)
        else:
            runs.append((r.block, r.slot, r.slot + 1))
    if own:
        runs.append((RowBlock.of(own), 0, len(own)))
    return runs
