"""PLAIN DATA: a search's answer as JSON (``types.SearchResult``, ``types.Hit``)."""

from __future__ import annotations

from typing import Any, NotRequired

from typing_extensions import TypedDict

# ---- search -------------------------------------------------------------------------


class HitJSON(TypedDict):
    """A search hit as ``--json`` and deep/full search write it (``types.Hit``)."""

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
    more_chunks: int
    text: NotRequired[str]  # with full text only
    page: NotRequired[int]  # a hit in an attachment: its page (slide, sheet)


class SearchJSON(TypedDict):
    """A search's answer as JSON (``types.SearchResult``); ``id`` in a batch only."""

    id: NotRequired[str]
    query: str
    mode: str
    hits: list[HitJSON]
    total: int
    counts: dict[str, int]
    timings_ms: dict[str, float]
    warnings: list[str]
    shortcut: NotRequired[bool]  # deep search only
    relaxed: NotRequired[bool]  # phrases and required words matched nothing: the words ranked
    time: NotRequired[dict[str, Any]]  # the time window read from the query's words


class SearchError(TypedDict):
    """A batch's query that could not be searched, and why."""

    id: NotRequired[str]
    query: str
    error: str
