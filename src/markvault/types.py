"""Plain data passed between the layers: parsed notes, chunks, records, filters, edits,
hits and reports. Nothing here reads a file or the index, so the faces, the wire codec
and the index layer can all share it.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import threading
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Literal, NamedTuple, Protocol, cast

from markvault.errors import CallCancelled, UsageError

if TYPE_CHECKING:
    from markvault.answers.search import HitJSON, SearchJSON
    from markvault.answers.sync import IndexReport

TRASH_DIR = ".trash"  # deleted notes, in the vault: Obsidian's own trash; hidden, so never indexed

KINDS = ("note", "session", "knowledge", "document")
# One read returns at most this many characters: Claude Code cuts tool results above
# ~25k tokens, and a character is at most about one token even in Chinese.
PAGE_CHARS = 20_000
MIN_PAGE_CHARS = 500
MAX_PAGE_CHARS = 80_000  # the most one MCP read may return
MAX_GET_NOTES = 50


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
    # An attachment's hit: the page (slide, sheet) it is on; ``uri`` then cites it
    # (``vault://note/<path>#page=N``, which ``get`` reads).
    page: int | None = None

    def to_json(self) -> HitJSON:
        data: HitJSON = {
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
        if self.page is not None:
            data["page"] = self.page
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
    relaxed: bool = False  # phrases and required words matched nothing: the words ranked
    # The time window read from the query's words (time_expressions.py), if any:
    # {"text", "start", "end", "asked_at"}, ISO dates (start or end None when open).
    time: dict[str, Any] | None = None

    def to_json(self) -> SearchJSON:
        data: SearchJSON = {
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
        if self.relaxed:
            data["relaxed"] = True
        if self.time is not None:
            data["time"] = self.time
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
    # What the sync's second wave did with attachments' text (attachment_sync): files
    # indexed, read, reused by content hash, removed, not read, pending; pages; seconds.
    attachments: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> IndexReport:
        # Every field, in order (IndexReport declares them: keep the two in step).
        return cast("IndexReport", dict(self.__dict__, seconds=round(self.seconds, 3)))


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


# The kind of an attachment's index note: a PDF, Office file, HTML page or EPUB whose
# text is indexed (attachment_sync.py); never a file the note tools may write.
ATTACHMENT_KIND = "attachment"

# Search scopes (``Filters.scope``): session notes, or parts of them told apart by the
# heading path every chunk carries. "sessions" is note-level; the others pick chunks
# (their SQL is in ``index.filters``).
NOTE_SCOPE = "sessions"
SCOPES = (NOTE_SCOPE, "prompts", "decisions", "outcomes", "open_items")


@dataclass
class Filters:
    """Which notes a search may return. Empty fields do not filter."""

    kinds: list[str] = field(default_factory=list)
    types: list[str] = field(default_factory=list)
    tags: list[str] = field(default_factory=list)  # each must be present; "a" matches "a/b"
    topics: list[str] = field(default_factory=list)
    projects: list[str] = field(default_factory=list)
    path_glob: str | None = None
    since: str | None = None
    until: str | None = None
    meta: dict[str, str] = field(default_factory=dict)  # any frontmatter key = value
    concepts: list[str] = field(default_factory=list)  # each must be present
    files: list[str] = field(default_factory=list)  # referenced code paths: any matches
    # Notes past their `valid_until`, or superseded, are left out unless asked for.
    include_expired: bool = False
    # One of SCOPES: session notes only, or only their prompts, decisions, outcomes or
    # open items (a condition on chunks, not notes).
    scope: str | None = None
    # Attachments (PDFs, Office files: kind "attachment", type their format) among the
    # results: "include" (default), "exclude" or "only".
    attachments: str = "include"

    def is_empty(self) -> bool:
        """True when nothing but the validity rule filters (the index checks that one)."""
        return not (
            self.scope
            or self.attachments != "include"
            or self.kinds
            or self.types
            or self.tags
            or self.topics
            or self.projects
            or self.path_glob
            or self.since
            or self.until
            or self.meta
            or self.concepts
            or self.files
        )

    def notes_only(self) -> Filters:
        """These filters without the chunk-level part of ``scope``, for queries over
        ``notes n`` alone (listings, timelines): a scope then keeps its session notes."""
        if self.scope is None or self.scope == NOTE_SCOPE or self.scope not in SCOPES:
            return self
        return dataclasses.replace(self, scope=NOTE_SCOPE)

    def check(self) -> None:
        """Raises UsageError for an unknown scope or a date that is not ISO 8601."""
        if self.scope is not None and self.scope not in SCOPES:
            raise UsageError(f"Unknown scope {self.scope!r}.", f"Use one of: {', '.join(SCOPES)}.")
        for name, value in (("since", self.since), ("until", self.until)):
            if value is None:
                continue
            try:
                dt.datetime.fromisoformat(value)
            except ValueError:
                raise UsageError(
                    f"{name} {value!r} is not a date.", "Use ISO dates, e.g. 2026-01-31."
                ) from None


@dataclass(frozen=True)
class SearchRequest:
    """One search as a face asked for it: built once from the face's input and carried
    unchanged to the searcher (across the owner's socket too). ``variants`` are deep
    search's rewrites of the query; ``full_text`` brings each hit's chunk text."""

    query: str
    mode: str = "hybrid"
    filters: Filters = field(default_factory=Filters)
    limit: int = 10
    offset: int = 0
    full_text: bool = False
    variants: tuple[str, ...] = ()
    order: str = "relevance"
    min_score: float | None = None
    # The date the question is asked (ISO; today when None): time words in the query
    # ("last Tuesday") are read against it (search/time_expressions.py).
    as_of: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "variants", tuple(self.variants))  # a list from JSON

    def with_query(self, query: str) -> SearchRequest:
        """This request for another query (a batch shares everything else)."""
        return replace(self, query=query)


@dataclass(frozen=True)
class SessionQuery:
    """Which session notes a listing shows: a project's (name or working folder), with or
    without a summary, active between ``since`` and ``until``; one page of them."""

    project: str | None = None
    cwd: str | None = None
    has_summary: bool | None = None
    since: str | None = None
    until: str | None = None
    limit: int = 20
    offset: int = 0


Op = Literal[
    "append",
    "prepend",
    "replace_section",
    "insert_before",
    "insert_after",
    "replace_text",
    "set_key",
    "remove_key",
]
OPS: tuple[str, ...] = Op.__args__  # type: ignore[attr-defined]


@dataclass(frozen=True)
class Edit:
    """One change to a note's text (applied by ``edit.apply_edit``)."""

    op: Op
    text: str = ""  # content to add, or the replacement
    heading: str | None = None  # for section operations: "Heading" or "## Heading"
    find: str | None = None  # for replace_text
    count: int = 1  # expected occurrences for replace_text
    key: str | None = None  # for set_key / remove_key
    value: Any = None  # for set_key


class Progress(Protocol):
    """What long work reports to: a terminal bar, a relay over the owner's socket."""

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


class StopsWhen(NoProgress):
    """Reports nowhere; stops the work at its next step once ``stop`` is set (a host
    closing while its watcher syncs: a sync stopped between steps leaves the index whole,
    and the next one finishes the work)."""

    def __init__(self, stop: threading.Event) -> None:
        self.stop = stop

    def start(self, label: str, total: int) -> None:
        self._check()

    def advance(self, n: int) -> None:
        self._check()

    def _check(self) -> None:
        if self.stop.is_set():
            raise CallCancelled("The sync was stopped: markvault is closing.")


@dataclass
class SessionImportReport:
    """What an import of Claude Code transcripts did."""

    transcripts: int = 0  # transcripts found
    read: int = 0  # transcripts read (the others were as the last import left them)
    new: int = 0  # notes created
    updated: int = 0  # notes whose transcript grew (summary and edits kept)
    unchanged: int = 0
    empty: int = 0  # transcripts without a message yet: no note
    failed: int = 0  # transcripts unreadable, or notes that could not be updated
    malformed_lines: int = 0  # skipped and counted, never fatal
    oversized_lines: int = 0
    redactions: int = 0  # secrets replaced by [REDACTED]
    index: str = "unchanged"  # "refreshed", "unchanged", or "busy" (another process has it)
    seconds: float = 0.0
    sessions: list[dict[str, Any]] = field(default_factory=list)  # session_id, action, path
    errors: list[dict[str, str]] = field(default_factory=list)  # source, message
    notices: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        data = dataclasses.asdict(self)
        data["seconds"] = round(self.seconds, 3)
        return data
