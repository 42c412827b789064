"""Session notes once imported: listings, projects, reading a transcript in pages or by
the turns that hold some words, and saving a structured summary into the note."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from markvault.core.common import check_page, moment
from markvault.errors import NotFoundError, UsageError
from markvault.files.vault_files import check_hash, content_hash
from markvault.git.repo import check_writable
from markvault.identity import note_uri, recite
from markvault.markdown.frontmatter import split_frontmatter
from markvault.markdown.tokens import tokenize
from markvault.sessions.session_summary import SessionSummary, read_summary, set_summary
from markvault.types import PAGE_CHARS
from markvault.types.sessions import SessionQuery

if TYPE_CHECKING:
    from markvault.answers.sessions import (
        SessionEntry,
        SessionFacts,
        SessionList,
        SessionMatches,
        SessionPage,
        SessionProjects,
        SummaryJSON,
        SummarySaved,
        TranscriptMatch,
    )
    from markvault.core.gate import CredentialGate
    from markvault.core.lifecycle import IndexKeeper
    from markvault.core.reading import NoteReader
    from markvault.index import Index


class SessionNotes:
    """Reads session notes and saves their summaries."""

    def __init__(self, keeper: IndexKeeper, notes: NoteReader, gate: CredentialGate) -> None:
        self.keeper = keeper
        self.notes = notes
        self.gate = gate

    def list_sessions(self, query: SessionQuery) -> SessionList:
        """Session notes, newest first, as ``query`` says."""
        check_page(query.limit, query.offset)
        for name, value in (("since", query.since), ("until", query.until)):
            moment(value, name)  # a bad date is a UsageError, not an empty list
        total, rows = self.keeper.reader().sessions.listing(query)
        offset = query.offset
        shown = offset + len(rows)
        return {
            "total": total,
            "offset": offset,
            "next_offset": shown if shown < total else None,
            "sessions": recite(
                [_session_view(r) for r in rows], self.keeper.reader().reads.unsound_paths()
            ),
        }

    def session_projects(self) -> SessionProjects:
        """Projects with counts of sessions (summarised or not) and other notes, the
        folders their sessions ran in, and when each was last active."""
        return {"projects": self.keeper.reader().sessions.projects()}

    def read_session(
        self,
        ref: str,
        *,
        lines: tuple[int, int] | None = None,
        query: str | None = None,
        max_chars: int = PAGE_CHARS,
        max_matches: int = 50,
    ) -> SessionPage | SessionMatches:
        """A session note in pages, like ``get``, with its summary parsed; or, with
        ``query``, the transcript lines that hold the query's words (within ``lines``),
        each with the turn it belongs to and a line range to read next.

        Raises:
            NotFoundError: no such session. UsageError: not a session note; bad range.
        """
        index = self.keeper.reader()
        row = self._session_row(index, ref)
        data, text = self.keeper.files.read(row["file"], self.keeper.max_note_bytes)
        summary = read_summary(text)
        meta = json.loads(row["metadata"] or "{}")
        about: SessionFacts = {
            "session": {
                "session_id": meta.get("session_id"),
                "project": row["project"],
                "cwd": meta.get("cwd"),
                "started": _text_or_none(meta.get("started")),
                "ended": _text_or_none(meta.get("ended")),
                "turns": _int_or_none(meta.get("turns")),
            },
            "has_summary": summary is not None,
            "summary": summary.to_dict() if summary else None,
        }
        if query is None:
            view = self.notes.note(row["path"], lines, max_chars)
            view.pop("chunks", None)  # a transcript has hundreds; pages are read by lines
            return {**view, **about}
        if not query.strip():
            raise UsageError("The query is empty.", "Give words to find in the transcript.")
        all_lines = text.splitlines()
        start, end = lines or (1, len(all_lines))
        if start < 1 or end < start:
            raise UsageError(f"Bad line range {start}:{end}.", 'Use lines "A:B" with 1 <= A <= B.')
        body_line = split_frontmatter(text.lstrip("\ufeff"))[2]  # frontmatter is no turn
        first = max(start, body_line)
        matches, total, how = _find_lines(all_lines, query, first, min(end, len(all_lines)))
        return {
            "id": row["id"],
            "path": row["path"],
            "title": row["title"],
            "uri": self.notes.cite(index, row["id"], row["path"]),
            "hash": content_hash(data),
            "total_lines": len(all_lines),
            "query": query,
            "match": how,
            "total_matches": total,
            "matches": matches[:max_matches],
            **about,
        }

    def save_session_summary(
        self, ref: str, summary: SessionSummary | Mapping[str, Any], expected_hash: str
    ) -> SummarySaved:
        """Write a session's structured summary into its ``## Summary`` section (replacing
        the previous one; the transcript and everything else stay byte for byte) and
        merge its tags, if the note's hash is still ``expected_hash``.

        Raises:
            UsageError: no hash, an empty or malformed summary, not a session note.
            ConflictError: the hash is stale. NotFoundError: no such session.
            RefusedError: conflict markers, unsafe path, a git operation in progress.
        """
        if not expected_hash:
            raise UsageError(
                "Saving a summary needs the note's current hash.",
                "Read the session first (read_session / vault sessions show) and pass its hash.",
            )
        if not isinstance(summary, SessionSummary):
            summary = SessionSummary.from_dict(summary)
        index = self.keeper.reader()
        row = self._session_row(index, ref)
        rel, uri = row["path"], self.notes.cite(index, row["id"], row["path"])
        data, text = self.keeper.files.read(row["file"], self.keeper.max_note_bytes)
        check_hash(rel, content_hash(data), expected_hash)
        check_writable(text, rel)
        gate = self.gate.write(rel)
        summary = replace(summary, tags=tuple(gate.names(summary.tags, "tags")))
        new_text = gate.text(set_summary(text, summary, gated=True), text)
        saved = read_summary(new_text)
        if new_text == text:
            return {
                "path": rel,
                "id": row["id"],
                "uri": uri,
                "hash": expected_hash,
                "changed": False,
                "summary": _dict(saved),
            }
        new_hash = self.keeper.files.replace(row["file"], new_text, expected_hash)
        self.keeper.refresh(paths=[row["file"]])
        return {
            "path": rel,
            "id": row["id"],
            "uri": uri,
            "hash": new_hash,
            "changed": True,
            "summary": _dict(saved),
            **gate.report(),
        }

    def _session_row(self, index: Index, ref: str) -> dict[str, Any]:
        """The session note ``ref`` names: a session id (or its first 8+ characters, as
        in file names), or a note id, path or URI."""
        text = ref.strip()
        if not text:
            raise UsageError("No session given.", "Pass a session id, or a note id or path.")
        rows = index.sessions.by_prefix(text, 50) if len(text) >= 4 else []
        exact = [r for r in rows if json.loads(r["metadata"] or "{}").get("session_id") == text]
        if exact or len(rows) == 1:
            row = (exact or rows)[0]
        elif len(rows) > 1:
            raise UsageError(
                f"Several sessions start with {text!r}.", "Give more of the session id."
            )
        else:
            try:
                row = self.notes.note_row(index, text)
            except NotFoundError:
                raise NotFoundError(
                    f"No session or note {text!r}.",
                    "Pass a session id (or its first 8 characters), a note id or a path; "
                    "list sessions with list_sessions (vault sessions list).",
                ) from None
        if (row["kind"] or "").lower() != "session":
            raise UsageError(
                f"{row['path']} is not a session note.",
                "Read other notes with get; list sessions with list_sessions.",
            )
        return row


def _text_or_none(value: Any) -> str | None:
    return None if value in (None, "") else str(value)


def _int_or_none(value: Any) -> int | None:
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def _dict(summary: SessionSummary | None) -> SummaryJSON | None:
    return summary.to_dict() if summary else None


def _session_view(row: dict[str, Any]) -> SessionEntry:
    """What a session listing shows of one session note."""
    return {
        "session_id": row["session_id"],
        "id": row["id"],
        "path": row["path"],
        "title": row["title"],
        "project": row["project"],
        "cwd": row["cwd"],
        "git_branch": row["git_branch"],
        "started": row["started"] or row["created"],
        "ended": row["ended"],
        "turns": _int_or_none(row["turns"]),
        "has_summary": bool(row["has_summary"]),
        "tags": list(row["tags"] or []),
        "uri": note_uri(row["id"]),
        "hash": row["hash"],
    }


# A turn or section heading of a session note: "### 09:15 User", "## Summary".
_TURN_HEADING = re.compile(r"^(#{2,3}) +(.+?)\s*$")

MATCH_CHARS = 300


def _find_lines(
    lines: list[str], query: str, start: int, end: int
) -> tuple[list[TranscriptMatch], int, str]:
    """(matches, how many, "all" | "some") of lines ``start``..``end`` holding the
    query's words, compared as search compares them (folded, stemmed; CJK bigrams).

    Lines with every word come first; only when there are none, lines with some of
    them. Each match names the heading it sits under and suggests lines to read.
    """
    wanted = set(tokenize(query))
    if not wanted:
        raise UsageError("The query has no words to look for.", 'Example: query="rounding"')
    heading: tuple[int, str] | None = None
    every: list[TranscriptMatch] = []
    some: list[TranscriptMatch] = []
    in_fence = False
    for number in range(1, end + 1):
        line = lines[number - 1]
        if line.lstrip().startswith(("```", "~~~")):
            in_fence = not in_fence
        found = _TURN_HEADING.match(line) if not in_fence else None
        if found:
            heading = (number, found.group(2))
        if number < start:
            continue
        common = wanted & set(tokenize(line))
        if not common:
            continue
        turn_line = heading[0] if heading else 1
        entry: TranscriptMatch = {
            "line": number,
            "text": line.strip()[:MATCH_CHARS],
            "under": heading[1] if heading else None,
            "read": f"{turn_line}:{number + 20}",
        }
        (every if common == wanted else some).append(entry)
    if every or not some:
        return every, len(every), "all"
    return some, len(some), "some"
