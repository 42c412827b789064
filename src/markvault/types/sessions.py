"""Session notes: which a listing shows, and what an import of transcripts did."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any


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
