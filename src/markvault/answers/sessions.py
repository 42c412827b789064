"""PLAIN DATA: what the session calls answer: ``list_sessions``, ``session_projects``,
``read_session`` and ``save_session_summary``."""

from __future__ import annotations

from typing import final

from typing_extensions import TypedDict

from markvault.answers.reading import NotePage
from markvault.answers.writing import WriteReport

# ---- sessions -----------------------------------------------------------------------


class SessionEntry(TypedDict):
    """A session note as ``list_sessions`` shows it."""

    session_id: str | None
    id: str
    path: str
    title: str
    project: str | None
    cwd: str | None
    git_branch: str | None
    started: str | None
    ended: str | None
    turns: int | None
    has_summary: bool
    tags: list[str]
    uri: str
    hash: str


class SessionList(TypedDict):
    """``list_sessions``: a page of sessions, newest first."""

    total: int
    offset: int
    next_offset: int | None
    sessions: list[SessionEntry]


class ProjectEntry(TypedDict):
    """A project: its sessions (summarised or not), other notes, folders, last activity."""

    project: str
    sessions: int
    notes: int
    summarized: int
    last_active: str | None
    cwds: list[str]


class SessionProjects(TypedDict):
    """``session_projects``: projects, most recently active first."""

    projects: list[ProjectEntry]


class SummaryJSON(TypedDict):
    """A session's structured summary (``SessionSummary.to_dict``)."""

    overview: str
    decisions: list[str]
    outcomes: list[str]
    open_items: list[str]
    tags: list[str]


class SessionAbout(TypedDict):
    session_id: str | None
    project: str | None
    cwd: str | None
    started: str | None
    ended: str | None
    turns: int | None


class SessionFacts(TypedDict):
    """What ``read_session`` adds to both its answers."""

    session: SessionAbout
    has_summary: bool
    summary: SummaryJSON | None


@final  # so that a test for one of its keys tells it apart (`in`)
class SessionPage(NotePage, SessionFacts):
    """``read_session`` without a query: a page of the note as ``get`` gives it (without
    its chunks: a transcript has hundreds), and the session's facts."""


class TranscriptMatch(TypedDict):
    """A transcript line holding the query's words."""

    line: int
    text: str
    under: str | None  # the turn it is under, e.g. "09:15 User"
    read: str  # a line range to read next


@final  # so that a test for one of its keys tells it apart (`in`)
class SessionMatches(TypedDict):
    """``read_session`` with a query: the lines that hold its words, and the facts."""

    id: str
    path: str
    title: str
    uri: str
    hash: str
    total_lines: int
    query: str
    match: str
    total_matches: int
    matches: list[TranscriptMatch]
    session: SessionAbout
    has_summary: bool
    summary: SummaryJSON | None


class SavedSummary(TypedDict):
    """A session note's new hash and its summary as saved (``SummarySaved``)."""

    path: str
    id: str
    uri: str
    hash: str
    changed: bool
    summary: SummaryJSON | None


class SummarySaved(SavedSummary, WriteReport):
    """``save_session_summary``: the note's new hash, the summary as saved, and the
    write's report."""
