"""Plain data passed between the layers: parsed notes, chunks, hits, reports."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

KINDS = ("note", "session", "knowledge", "document")


@dataclass(frozen=True)
class Link:
    """One outgoing link as written; ``target_path`` is filled in by resolution."""

    target: str  # the note part as written: "Folder/Note", "../x.md", "" for self
    heading: str | None
    block: str | None
    alias: str | None
    embed: bool
    style: str  # "wiki" or "markdown"
    line: int  # 1-based line in the file


@dataclass(frozen=True)
class Section:
    """A heading with its 1-based line."""

    level: int
    text: str
    line: int


@dataclass(frozen=True)
class Block:
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
    code_lines: frozenset[int]  # 1-based lines inside fences or indented code
    blocks: tuple[Block, ...]  # top-level Markdown blocks, in order
    frontmatter_title: bool
    problems: tuple[str, ...]


@dataclass(frozen=True)
class Chunk:
    seq: int
    heading_path: tuple[str, ...]
    start_line: int  # 1-based, inclusive
    end_line: int  # 1-based, inclusive
    text: str
    context: str  # "Title > Heading > Subheading": what the chunk is about
    hash: str  # of embed_text: the embedding cache key

    @property
    def embed_text(self) -> str:
        return embed_input(self.context, self.text)


def embed_input(context: str, text: str) -> str:
    """What the embedding model reads: the heading context, then the chunk."""
    return f"{context}\n{text}" if context else text


@dataclass
class Hit:
    """One search result: the best chunk of a note, with its note's summary."""

    id: str
    path: str
    title: str
    kind: str
    type: str | None
    chunk_id: int
    heading_path: list[str]
    lines: list[int]
    score: float
    ranks: dict[str, int]
    scores: dict[str, float]
    snippet: str
    hash: str
    uri: str
    more_chunks: int = 0
    text: str | None = None  # the chunk's full text, for --format full

    def to_json(self) -> dict[str, Any]:
        data = {
            "id": self.id,
            "path": self.path,
            "title": self.title,
            "kind": self.kind,
            "type": self.type,
            "chunk_id": self.chunk_id,
            "heading_path": self.heading_path,
            "lines": self.lines,
            "score": round(self.score, 6),
            "ranks": self.ranks,
            "scores": {k: round(v, 6) for k, v in self.scores.items()},
            "snippet": self.snippet,
            "hash": self.hash,
            "uri": self.uri,
            "more_chunks": self.more_chunks,
        }
        if self.text is not None:
            data["text"] = self.text
        return data


@dataclass
class SearchResult:
    query: str
    mode: str
    hits: list[Hit]
    timings_ms: dict[str, float]
    total: int = 0  # notes matched before limit/offset
    warnings: list[str] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)  # chunks found by each stage
    shortcut: bool = False  # deep search skipped its variants

    def to_json(self) -> dict[str, Any]:
        data = {
            "query": self.query,
            "mode": self.mode,
            "hits": [h.to_json() for h in self.hits],
            "total": self.total,
            "counts": self.counts,
            "timings_ms": {k: round(v, 2) for k, v in self.timings_ms.items()},
            "warnings": self.warnings,
        }
        if self.mode == "deep":
            data["shortcut"] = self.shortcut
        return data


@dataclass
class ReindexReport:
    notes: int = 0
    chunks: int = 0
    added: int = 0
    updated: int = 0
    renamed: int = 0
    removed: int = 0
    unchanged: int = 0
    embedded: int = 0
    reused: int = 0
    errors: list[dict[str, str]] = field(default_factory=list)
    warnings: list[dict[str, str]] = field(default_factory=list)
    notices: list[str] = field(default_factory=list)
    vectors: bool = True
    seconds: float = 0.0

    def to_json(self) -> dict[str, Any]:
        return dict(self.__dict__, seconds=round(self.seconds, 3))
