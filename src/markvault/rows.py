"""A note as the index stores it: its ``notes`` row and its chunks' and links' columns.

Built where the note was read (a worker process, in a large sync): what goes back to
the parent is then a few lists per note, which unpickle several times faster than the
parsed note's objects, and the parent's write only strings the columns together
(``index.writes``). Nothing here imports DuckDB: the workers never load it.
"""

from __future__ import annotations

import json
import time
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

    @property
    def chunk_count(self) -> int:
        return len(self.chunks[0])

    @property
    def chunk_hashes(self) -> list[str]:
        return self.chunks[CHUNK_COLUMNS.index("hash")]

    @classmethod
    def of(cls, rec: NoteRecord) -> NoteRows:
        note = rec.note
        cs, ls = rec.chunks, note.links
        chunks = (
            [note.path] * len(cs),
            [c.seq for c in cs],
            [list(c.heading_path) for c in cs],
            [c.start_line for c in cs],
            [c.end_line for c in cs],
            [c.text for c in cs],
            [c.context for c in cs],
            [c.hash for c in cs],
            [rec.note_len] * len(cs),
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
