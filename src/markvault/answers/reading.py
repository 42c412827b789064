"""PLAIN DATA: what the reads answer: ``get`` of a note, an attachment or a chunk,
``get_many``, topics and completions."""

from __future__ import annotations

from typing import Any, NotRequired, final

from typing_extensions import TypedDict

# ---- reading ------------------------------------------------------------------------


class ChunkEntry(TypedDict):
    """A chunk as a note's listing shows it."""

    chunk_id: int
    heading_path: list[str]
    lines: list[int]
    uri: str


class OutLink(TypedDict):
    """A link written in a note."""

    target: str
    heading: str | None
    block: str | None
    alias: str | None
    embed: bool
    style: str
    line: int
    target_path: str | None


class Backlink(TypedDict):
    """A link to a note from another."""

    source: str
    line: int
    heading: str | None
    block: str | None


class LinkCounts(TypedDict):
    links: int
    backlinks: int


class NotePage(TypedDict):
    """A page of a note's text, with what the index knows of it: ``get`` answers it as
    it is (``NoteView``), ``read_session`` with the session's facts (``SessionPage``)."""

    id: str
    path: str
    title: str
    kind: str
    type: str | None
    tags: list[str]
    metadata: dict[str, Any]
    hash: str
    stale: bool
    uri: str
    lines: list[int]
    total_lines: int
    text: str
    next_lines: str | None
    chunks: NotRequired[list[ChunkEntry]]  # get gives them; read_session takes them out
    links: list[OutLink]
    backlinks: list[Backlink]
    link_counts: LinkCounts
    problems: list[str]
    warning: NotRequired[str]  # a line longer than a page was cut


@final  # so that a test for one of its keys tells it apart (`in`)
class NoteView(NotePage):
    """``get`` of a note: a page of its text, with what the index knows of it."""


class AttachmentExtraction(TypedDict):
    status: str
    reason: str | None
    format: str | None


class AttachmentChunk(TypedDict):
    chunk_id: int
    heading_path: list[str]
    page: int
    uri: str


@final  # so that a test for one of its keys tells it apart (`in`)
class AttachmentPage(TypedDict):
    """``get`` of an attachment (PDF, Office, ...): its extracted text, a page range at a
    time; ``lines`` count pages, so a client that pages notes pages these alike."""

    id: str
    path: str
    title: str
    kind: str
    type: str | None
    metadata: dict[str, Any]
    hash: str
    uri: str
    extraction: AttachmentExtraction
    pages: list[int]
    total_pages: int
    lines: list[int]
    text: str
    next_pages: str | None
    chunks: list[AttachmentChunk]
    backlinks: list[Backlink]
    problems: list[str]
    next_lines: str | None
    warning: NotRequired[str]  # a page longer than a page of text was cut


@final  # so that a test for one of its keys tells it apart (`in`)
class ChunkView(TypedDict):
    """``get`` of a chunk (``#12``, ``vault://chunk/12``)."""

    chunk_id: int
    uri: str
    id: str
    path: str
    title: str
    kind: str
    heading_path: list[str]
    lines: list[int]
    text: str
    hash: str
    note_uri: str
    page: NotRequired[int]  # a chunk of an attachment: its page


@final  # so that a test for one of its keys tells it apart (`in`)
class NoteBrief(TypedDict):
    """A note ``get_many`` left without text: over the size budget."""

    id: str
    path: str
    title: str
    uri: str
    hash: str
    text: None
    omitted: str


@final  # so that a test for one of its keys tells it apart (`in`)
class ChunkOmitted(TypedDict):
    """A chunk ``get_many`` left without text: over the size budget."""

    ref: str
    text: None
    omitted: str


@final  # so that a test for one of its keys tells it apart (`in`)
class RefError(TypedDict):
    """A ref ``get_many`` could not read, and why."""

    ref: str
    error: str


class NotesPage(TypedDict):
    """``get_many`` and ``topic_points``: several notes within one budget."""

    notes: list[NoteView | ChunkView | AttachmentPage | NoteBrief | ChunkOmitted | RefError]
    count: int
    budget_left: int


class TopicCount(TypedDict):
    """A topic of knowledge points and documents."""

    topic: str
    knowledge: int
    documents: int
    last_changed: str | None


class Completions(TypedDict):
    """``complete``: values that start with the prefix, best first, and how many match."""

    values: list[str]
    total: int


class TopicList(TypedDict):
    """The MCP tool ``list_topics``: ``topics`` in an object."""

    topics: list[TopicCount]
