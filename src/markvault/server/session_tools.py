"""The MCP tools over past coding sessions: list and read them, save a session's
summary, and import Claude Code's transcripts."""

from __future__ import annotations

from typing import Any, Literal

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError

from markvault.answers.sessions import SummarySaved
from markvault.server.tool_call import ToolCall
from markvault.server.vault_service import (
    READ_ONLY,
    WRITE,
    VaultService,
    check_page_chars,
    open_answer,
)
from markvault.types import PAGE_CHARS
from markvault.types.sessions import SessionQuery
from markvault.vault import parse_lines

IMPORT_LISTED = 50  # sessions and errors an import lists; the counts cover all


def session_tools(server: MCPServer, service: VaultService) -> None:
    @server.tool(annotations=READ_ONLY)
    async def list_sessions(
        ctx: Context,
        project: str | None = None,
        cwd: str | None = None,
        has_summary: bool | None = None,
        since: str | None = None,
        until: str | None = None,
        limit: int = 20,
        offset: int = 0,
        group_by: Literal["session", "project"] = "session",
    ) -> dict[str, Any]:
        """Past coding-agent sessions (Claude Code transcripts imported as notes), newest
        first: what was worked on, where, and whether it has a summary yet.

        Filters: project (name, e.g. "shop-app") or cwd (the folder Claude Code ran in),
        has_summary (false: sessions still to summarise), since/until (ISO dates: active
        in that range); limit/offset page (next_offset says where to continue). Each
        session has its session_id, title, started/ended, turns, path, uri and hash.
        group_by="project": instead, every project with its sessions, summarised
        sessions, other notes, working folders and last activity.
        Example: project="shop-app", limit=5 (the project's recent sessions).
        """
        if group_by == "project":
            return await service.run(
                ctx, "list_sessions", lambda v, call: open_answer(v.session_projects())
            )
        query = SessionQuery(project, cwd, has_summary, since, until, limit, offset)
        return await service.run(
            ctx, "list_sessions", lambda v, call: open_answer(v.list_sessions(query))
        )

    @server.tool(annotations=READ_ONLY)
    async def read_session(
        ctx: Context,
        ref: str,
        query: str | None = None,
        lines: str | None = None,
        max_chars: int = PAGE_CHARS,
        max_matches: int = 50,
    ) -> dict[str, Any]:
        """Read one session: its metadata, parsed summary, and transcript in pages.

        ref: a session id (or its first 8 characters), a note id, path or vault:// URI.
        Without query: the note's text from `lines` ("A:B"), cut at `max_chars`;
        continue with lines=`next_lines`. With query: the transcript lines holding the
        query's words (matched like search: any case, stemmed), each with its line
        number, the turn it is under ("09:15 User") and `read`, a line range to pass as
        lines next. Long sessions: search first, then read the turns that matter.
        Returns the note's `hash` for save_session_summary.
        Example: ref="5f0c2a9e", query="rounding decimal".
        """
        check_page_chars(max_chars, "sessions")
        if not 1 <= max_matches <= 500:
            raise ToolError("max_matches must be 1..500.")
        return await service.run(
            ctx,
            "read_session",
            lambda v, call: open_answer(
                v.read_session(
                    ref,
                    lines=parse_lines(lines),
                    query=query,
                    max_chars=max_chars,
                    max_matches=max_matches,
                )
            ),
        )


def session_summary_tool(server: MCPServer, service: VaultService) -> None:
    @server.tool(annotations=WRITE)
    async def save_session_summary(
        ctx: Context,
        ref: str,
        hash: str,
        overview: str = "",
        decisions: list[str] | None = None,
        outcomes: list[str] | None = None,
        open_items: list[str] | None = None,
        tags: list[str] | None = None,
    ) -> SummarySaved:
        """Save a session's structured summary into its note's "## Summary" section,
        replacing the previous summary; the transcript and all other text are kept.

        overview: 2-3 sentences on what the session set out to do and what happened.
        decisions: one item per decision, with its reason; outcomes: what changed (files,
        behaviour); open_items: what is left. tags are added to the note's tags. Items
        are single lines. Each decision, outcome and open item becomes searchable
        (search scope="decisions"...) and shows in timelines. Needs the `hash` that
        read_session or list_sessions returned; returns the new hash.
        Example: ref="5f0c2a9e", hash="3f2a...", overview="Fixed the checkout rounding.",
        decisions=["Use Decimal for money: floats lost a cent"],
        open_items=["invoice.py still rounds floats"].
        """
        summary = {
            "overview": overview,
            "decisions": decisions or [],
            "outcomes": outcomes or [],
            "open_items": open_items or [],
            "tags": tags or [],
        }
        return await service.run(
            ctx, "save_session_summary", lambda v, call: v.save_session_summary(ref, summary, hash)
        )

    @server.tool(annotations=WRITE)
    async def import_sessions(
        ctx: Context, project: str | None = None, since: str | None = None
    ) -> dict[str, Any]:
        """Import Claude Code's transcripts of past sessions (this user's, from
        ~/.claude/projects) as session notes, or bring those already imported up to date.
        Idempotent: a session is rewritten only when its transcript grew, keeping its
        summary and every edit. Sessions that end are usually imported by the hooks
        (`vault sessions hook install`); use this when list_sessions lacks recent ones.
        project: the working folder the sessions ran in (absolute path), default all;
        since: an ISO date. Can take minutes the first time: reports progress.
        Example: project="/home/me/code/shop-app", since="2026-03-01".
        """
        report = await service.run(
            ctx,
            "import_sessions",
            lambda v, call: _imported(
                v.import_sessions(project=project, since=since, progress=call), call
            ),
        )
        return report


def _imported(report: Any, call: ToolCall) -> dict[str, Any]:
    """An import's outcome for the model (counts, what changed, what failed), and its
    problems as log lines for the person watching the client."""
    for item in report.errors:
        call.log("warning", f"session not imported: {item['message']}")
    skipped = report.malformed_lines + report.oversized_lines
    if skipped:
        call.log("info", f"{skipped} unreadable transcript lines skipped")
    if report.index == "busy":
        call.log("warning", "sessions written; another process holds the index (reindex later)")
    for notice in report.notices:
        call.log("notice", notice)
    data: dict[str, Any] = report.to_json()
    changed = [s for s in data.pop("sessions") if s.get("action") in ("new", "updated")]
    data["sessions"] = changed[:IMPORT_LISTED]
    data["more_sessions"] = max(0, len(changed) - IMPORT_LISTED)
    data["errors"] = data["errors"][:IMPORT_LISTED]
    return data
