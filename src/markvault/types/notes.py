"""A note as parsed from its file: links, sections, blocks, chunks, and the record the
index stores for it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NamedTuple

# Frozen dataclasses' own __init__ sets each field through object.__setattr__, a call
# per field; Link and Chunk (a parse and a chunking make one per link and chunk, a
# quarter million in a large vault) set their __dict__ in one call instead. Same fields,
# equality, hash, repr and immutability: only the constructor is written by hand.
_set_attr = object.__setattr__


@dataclass(frozen=True, init=False)
class Link:
    """One outgoing link as written; ``target_path`` is filled in by resolution."""

    target: str  # the note part as written: "Folder/Note", "../x.md", "" for self
    heading: str | None
    block: str | None
    alias: str | None
    embed: bool
    style: str  # "wiki" or "markdown"
    line: int  # 1-based line in the file

    def __init__(
        self,
        target: str,
        heading: str | None,
        block: str | None,
        alias: str | None,
        embed: bool,
        style: str,
        line: int,
    ) -> None:
        _set_attr(
            self,
            "__dict__",
            {
                "target": target,
                "heading": heading,
                "block": block,
                "alias": alias,
                "embed": embed,
                "style": style,
                "line": line,
            },
        )


class Section(NamedTuple):
    """A heading with its 1-based line. (Named tuples, this and Block: a parse makes
    one per block, and they are built several times faster than frozen dataclasses.)"""

    level: int
    text: str
    line: int


class Block(NamedTuple):
    """A top-level Markdown block: 1-based lines ``start``..``end`` inclusive."""

    kind: str  # "heading", "code" (fenced or indented) or "text"
    start: int
    end: int
    level: int = 0  # heading level
    heading: str = ""


@dataclass(frozen=True)
class ParsedNote:
    """Everything derived from one file's text. Pure data: no paths on disk."""

    path: str  # vault-relative, POSIX, NFC
    id: str
    title: str
    kind: str
    type: str | None
    tags: tuple[str, ...]
    aliases: tuple[str, ...]
    fields: dict[str, Any]  # recognised frontmatter keys, normalised to JSON types
    metadata: dict[str, Any]  # the whole frontmatter mapping, JSON types
    body: str
    body_line: int  # 1-based line where the body starts
    sections: tuple[Section, ...]
    links: tuple[Link, ...]
    blocks: tuple[Block, ...]  # top-level Markdown blocks, in order
    frontmatter_title: bool
    problems: tuple[str, ...]

    @property
    def code_lines(self) -> frozenset[int]:
        """1-based lines inside fences or indented code (from ``blocks``: nothing in a
        build reads them, so they are not made for every note)."""
        return frozenset(
            line for b in self.blocks if b.kind == "code" for line in range(b.start, b.end + 1)
        )


@dataclass(frozen=True, init=False)
class Chunk:
    seq: int
    heading_path: tuple[str, ...]
    start_line: int  # 1-based, inclusive
    end_line: int  # 1-based, inclusive
    text: str
    context: str  # "Title > Heading > Subheading": what the chunk is about
    hash: str  # of embed_text: the embedding cache key

    def __init__(
        self,
        seq: int,
        heading_path: tuple[str, ...],
        start_line: int,
        end_line: int,
        text: str,
        context: str,
        hash: str,
    ) -> None:
        _set_attr(  # see Link
            self,
            "__dict__",
            {
                "seq": seq,
                "heading_path": heading_path,
                "start_line": start_line,
                "end_line": end_line,
                "text": text,
                "context": context,
                "hash": hash,
            },
        )

    @property
    def embed_text(self) -> str:
        return embed_input(self.context, self.text)


def embed_input(context: str, text: str) -> str:
    """What the embedding model reads: the heading context, then the chunk."""
    return f"{context}\n{text}" if context else text


@dataclass(frozen=True)
class NoteRecord:
    """One note ready to be stored: parsed note, its chunks and file facts."""

    note: ParsedNote
    chunks: list[Chunk]
    note_len: int  # search tokens in all its chunks: the note's length for BM25
    file: str  # the path as on disk (may differ from note.path in Unicode form)
    hash: str
    mtime_ns: int
    size: int
    conflicted: bool = False  # holds git conflict markers (told to the change feed)
    # The note's distinct search terms and its postings over them, (chunk position, term
    # position, count) as int32 triples (``sync.note_terms``): a first build's keyword
    # index is sorted from these, and an edit's postings are made from them. None: not
    # counted (the keyword index is then rebuilt from the chunks' text).
    terms: tuple[str, ...] = ()
    term_counts: bytes | None = None
    ctime_ns: int = 0  # racy.RACY_CTIME when recorded within the racy window
    ino: int = 0
