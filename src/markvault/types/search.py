"""A search as asked (``SearchRequest``, ``Filters``) and as answered (``SearchResult``,
``Hit``)."""

from __future__ import annotations

import dataclasses
import datetime as dt
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from markvault.errors import UsageError

if TYPE_CHECKING:
    from markvault.answers.search import HitJSON, SearchJSON

# Search scopes (``Filters.scope``): session notes, or parts of them told apart by the
# heading path every chunk carries. "sessions" is note-level; the others pick chunks
# (their SQL is in ``index.filters``).
NOTE_SCOPE = "sessions"
SCOPES = (NOTE_SCOPE, "prompts", "decisions", "outcomes", "open_items")


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
    total: int = 0  # notes ranked before limit/offset: the lists' depth bounds it
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
