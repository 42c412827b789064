"""The session model: what a Claude Code transcript says, sanitised.

A :class:`Session` is built by the transcript reader (``transcript_reader``) and is the
input of every rendering function (``session_note``). Its texts are already sanitised
(``sanitize``): it never holds a secret.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Mapping
from dataclasses import dataclass

from markvault.sessions.sanitize import one_line

TITLE_CHARS = 80


@dataclass(frozen=True)
class ToolResult:
    """The start of a tool's output: a few lines, already sanitised."""

    text: str
    more_lines: int
    is_error: bool


@dataclass(frozen=True)
class Event:
    """One thing shown in the transcript, in file order.

    ``kind`` is ``prompt`` (a person's message), ``text`` (the assistant's answer),
    ``tool`` (a call: ``name`` and its key argument in ``text``), ``subagent`` (a run of
    sidechain messages, summarised in ``text``) or ``compaction`` (the summary Claude
    Code wrote when it compacted the context).
    """

    kind: str
    time: dt.datetime | None
    text: str = ""
    name: str = ""
    tool_id: str = ""
    result: ToolResult | None = None


@dataclass(frozen=True)
class Session:
    """What a transcript says, sanitised; the input of every rendering function."""

    session_id: str
    project: str
    cwd: str
    git_branch: str
    started: dt.datetime | None
    ended: dt.datetime | None
    turns: int
    models: tuple[str, ...]
    tools: Mapping[str, int]  # name -> calls, most used first
    files_read: tuple[str, ...]
    files_modified: tuple[str, ...]
    events: tuple[Event, ...]
    titles: tuple[str, ...] = ()  # from "summary" lines: Claude Code's own session titles
    compactions: int = 0
    subagent_messages: int = 0
    malformed_lines: int = 0  # not JSON, not an object, or a message without a message
    skipped_lines: int = 0  # other types (file-history-snapshot, system, ...) and meta lines
    oversized_lines: int = 0  # over max_line_bytes, skipped unread
    redactions: int = 0
    version: str = ""  # Claude Code version
    source: str = ""  # the transcript file; not written into the note

    @property
    def title(self) -> str:
        """The first prompt, shortened; else Claude Code's title; else the session id."""
        for event in self.events:
            if event.kind == "prompt":
                title = _title_text(event.text)
                if title:
                    return title
        for title in self.titles:
            if _title_text(title):
                return _title_text(title)
        return f"Session {self.session_id[:8]}"


def _title_text(text: str) -> str:
    text = re.sub(r"^[\s#>*+\-`~]+", "", text.strip())
    return one_line(text, TITLE_CHARS)
