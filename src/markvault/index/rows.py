"""A note as the index stores it: its ``notes`` row and its chunks' and links' columns.

Built where the note was read. In this process (a small sync) a note's rows are a few
Python lists, and the write strings them together (``index.writes``); a worker of a
large sync packs its batch's rows into Arrow tables (``RowBlock``), which pickle as a
few buffers instead of a Python object per value, and the parent inserts them as they
are. Nothing here imports DuckDB (the workers never load it), nor pyarrow but a block's
builder and readers (a one-note sync never loads it).
"""

from __future__ import annotations

import json
import time
from array import array
from collections import _count_elements, defaultdict  # type: ignore[attr-defined]
from collections.abc import Iterable, Sequence
from itertools import accumulate, chain, repeat
from typing import TYPE_CHECKING, Any, NamedTuple

from markvault.markdown.links import link_name
from markvault.sessions.turns import is_user_turn

if TYPE_CHECKING:
    from markvault.types.notes import NoteRecord

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
    "ctime_ns",
    "ino",
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
    "note_len",
    "user_turn",
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
    # Rows as Python values: the ``notes`` row in NOTE_COLUMNS order, a list per
    # CHUNK_COLUMNS and per LINK_COLUMNS (a value per chunk, per link); empty for a note
    # a worker read, whose rows are row ``slot`` of ``block`` instead.
    note: tuple[Any, ...]
    chunks: tuple[list[Any], ...]
    links: tuple[list[Any], ...]
    terms: tuple[str, ...]  # see NoteRecord.terms
    term_counts: bytes | None
    block: RowBlock | None = None
    slot: int = 0

    @property
    def chunk_count(self) -> int:
        if self.block is not None:
            return self.block.chunk_starts[self.slot + 1] - self.block.chunk_starts[self.slot]
        return len(self.chunks[0])

    @classmethod
    def of(cls, rec: NoteRecord) -> NoteRows:
        return cls.bare(rec)._replace(
            note=note_row(rec), chunks=chunk_columns([rec]), links=link_columns([rec])
        )

    @classmethod
    def bare(cls, rec: NoteRecord) -> NoteRows:
        """The note without its rows (a worker's: ``RowBlock.of``)."""
        note = rec.note
        return cls(
            note.path,
            note.id,
            note.fields.get("topic"),
            rec.hash,
            tuple(note.aliases),
            tuple(note.problems),
            rec.conflicted,
            (),
            (),
            (),
            rec.terms,
            rec.term_counts,
        )


def _each(values: Iterable[Any], counts: Iterable[int]) -> list[Any]:
    """Each value repeated its count of times, in one list."""
    return list(chain.from_iterable(map(repeat, values, counts)))


def chunk_columns(records: Sequence[NoteRecord]) -> tuple[list[Any], ...]:
    """The chunks' rows of ``records``, a list per CHUNK_COLUMNS."""
    cs = [c for rec in records for c in rec.chunks]
    counts = [len(rec.chunks) for rec in records]
    return (
        _each((rec.note.path for rec in records), counts),
        [c.seq for c in cs],
        [list(c.heading_path) for c in cs],
        [c.start_line for c in cs],
        [c.end_line for c in cs],
        [c.text for c in cs],
        [c.context for c in cs],
        [c.hash for c in cs],
        _each((rec.note_len for rec in records), counts),
        [is_user_turn(c.heading_path) for c in cs],
    )


def link_columns(records: Sequence[NoteRecord]) -> tuple[list[Any], ...]:
    """The links' rows of ``records``, a list per LINK_COLUMNS."""
    ls = [link for rec in records for link in rec.note.links]
    return (
        _each((rec.note.path for rec in records), [len(rec.note.links) for rec in records]),
        [link.target for link in ls],
        [link.heading for link in ls],
        [link.block for link in ls],
        [link.alias for link in ls],
        [link.embed for link in ls],
        [link.style for link in ls],
        [link.line for link in ls],
        [link_name(link.target) for link in ls],
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
        rec.ctime_ns,
        rec.ino,
        f.get("updated")
        or f.get("created")
        or time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(rec.mtime_ns / 1e9)),
    )


# The columns that are not text, with the type the index's tables give them (index.store):
# every block's tables then have one schema, and concatenate.
_LISTS = ("tags", "tags_lc", "aliases", "files", "concepts", "problems", "heading_path")
_INT32 = ("seq", "start_line", "end_line", "note_len", "line")


def _tables(*columns: Sequence[list[Any]]) -> tuple[Any, Any, Any]:
    """The notes', chunks' and links' columns as Arrow tables."""
    import pyarrow as pa

    kinds = {
        **dict.fromkeys(_LISTS, pa.list_(pa.string())),
        **dict.fromkeys(_INT32, pa.int32()),
        **dict.fromkeys(("mtime_ns", "size", "ctime_ns", "ino"), pa.int64()),
        "embed": pa.bool_(),
        "user_turn": pa.bool_(),
    }
    return tuple(
        pa.Table.from_arrays(
            list(values), schema=pa.schema([(c, kinds.get(c, pa.string())) for c in names])
        )
        for values, names in zip(columns, (NOTE_COLUMNS, CHUNK_COLUMNS, LINK_COLUMNS), strict=True)
    )


def _python_tables(records: Sequence[NoteRows]) -> tuple[Any, Any, Any]:
    """Records holding Python rows as Arrow tables: notes, chunks, links."""
    return _tables(
        [list(v) for v in zip(*(r.note for r in records), strict=True)],
        [
            list(chain.from_iterable(r.chunks[i] for r in records))
            for i in range(len(CHUNK_COLUMNS))
        ],
        [list(chain.from_iterable(r.links[i] for r in records)) for i in range(len(LINK_COLUMNS))],
    )


class RowBlock(NamedTuple):
    """The rows of a worker's batch of notes as Arrow tables, and the notes without
    them: what a worker sends back (``sync.read_files``). ``records`` gives each note
    its place in the block (``NoteRows.block``, ``slot``); a note's rows are rows
    ``starts[slot]:starts[slot + 1]`` of each table."""

    notes: Any  # pa.Table, a row per note
    chunks: Any
    links: Any
    bare: list[NoteRows]  # the notes, rows left out
    chunk_starts: list[int]  # a start per note, and the end
    link_starts: list[int]

    @classmethod
    def of(cls, records: Sequence[NoteRecord]) -> RowBlock:
        """The block of built notes (imports pyarrow)."""
        tables = _tables(
            [list(v) for v in zip(*map(note_row, records), strict=True)],
            chunk_columns(records),
            link_columns(records),
        )
        return cls(
            *tables,
            [NoteRows.bare(rec) for rec in records],
            [0, *accumulate(len(rec.chunks) for rec in records)],
            [0, *accumulate(len(rec.note.links) for rec in records)],
        )

    def records(self) -> list[NoteRows]:
        """The block's notes, each with its place in the block."""
        return [r._replace(block=self, slot=i) for i, r in enumerate(self.bare)]

    def tables(self, first: int, end: int) -> tuple[Any, Any, Any]:
        """The notes', chunks' and links' rows of slots ``first`` to ``end``."""
        cs, ls = self.chunk_starts, self.link_starts
        return (
            self.notes.slice(first, end - first),
            self.chunks.slice(cs[first], cs[end] - cs[first]),
            self.links.slice(ls[first], ls[end] - ls[first]),
        )


def row_tables(records: Sequence[NoteRows]) -> tuple[Any, Any, Any]:
    """The notes', chunks' and links' rows of ``records`` as Arrow tables, a chunk each:
    runs of the workers' blocks concatenated, Python rows converted."""
    import pyarrow as pa

    parts: list[tuple[Any, Any, Any]] = []
    python: list[NoteRows] = []
    run: list[Any] = []  # [block, first slot, end slot]
    for r in records:
        if r.block is not None and run and run[0] is r.block and run[2] == r.slot:
            run[2] += 1
            continue
        if run:
            parts.append(run[0].tables(run[1], run[2]))
            run = []
        if r.block is None:
            python.append(r)
            continue
        if python:
            parts.append(_python_tables(python))
            python = []
        run = [r.block, r.slot, r.slot + 1]
    if run:
        parts.append(run[0].tables(run[1], run[2]))
    if python:
        parts.append(_python_tables(python))
    tables = [pa.concat_tables(column) for column in zip(*parts, strict=True)]
    try:  # one chunk: DuckDB scans many small record batches several times slower
        return tuple(t.combine_chunks() for t in tables)
    except pa.ArrowInvalid:  # over 2 GiB of text in a column: left in chunks
        return tuple(tables)


def note_terms(chunk_words: Sequence[Sequence[str]]) -> tuple[tuple[str, ...], bytes]:
    """A note's distinct terms, and its postings as int32 arrays end to end: how many
    terms each chunk has, then the term (its position in the note's terms) and count of
    each. Counted in the worker that tokenized the note, from each chunk's token
    list (``text.chunk_words``); the index stores the counts, never the tokens."""
    ids: defaultdict[str, int] = defaultdict()
    ids.default_factory = ids.__len__  # a new term gets the next position
    sizes: list[int] = []
    terms: list[int] = []
    counts: list[int] = []
    for words in chunk_words:
        # Counter's own C counting loop, into a plain dict: a Counter per chunk costs
        # more to make than to fill (a quarter million chunks in a large vault).
        found: dict[str, int] = {}
        _count_elements(found, words)
        found.pop("", None)
        sizes.append(len(found))
        terms += map(ids.__getitem__, found)
        counts += found.values()
    # One array from lists: extending an array item by item costs several times more.
    return tuple(ids), array("i", sizes + terms + counts).tobytes()
