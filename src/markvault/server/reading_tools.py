"""The MCP tools and resources that read: ``get``, ``status``, the context tools
(``recent``, ``timeline``, ``related``, ``vault_map``) and the ``vault://`` and
``knowledge://`` resources."""

from __future__ import annotations

from typing import Any

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError

from markvault.answers.context import RecentNotes, Timeline, VaultMap
from markvault.answers.status import Status
from markvault.server.vault_service import READ_ONLY, VaultService, check_page_chars, open_answer
from markvault.types import PAGE_CHARS
from markvault.types.search import Filters
from markvault.vault import parse_lines


def read_tools(server: MCPServer, service: VaultService) -> None:
    @server.tool(annotations=READ_ONLY)
    async def get(
        ctx: Context,
        ref: str | None = None,
        refs: list[str] | None = None,
        pattern: str | None = None,
        lines: str | None = None,
        max_chars: int = PAGE_CHARS,
    ) -> dict[str, Any]:
        """Read notes or chunks, with metadata, links, backlinks and the current hash.

        ref: one note id, vault-relative path ("notes/Welcome.md"), chunk ("#42") or
        citation URI ("vault://note/<id>", "vault://chunk/<n>") from search results.
        refs: several of those at once; pattern: a path glob ("knowledge/duckdb/*").
        Several notes share one `max_chars` budget; the ones past it come back without
        text. A long note comes back cut at a line: continue with lines="N:" as its
        `next_lines` says. lines: "A:B" reads lines A to B of one note. An attachment
        (PDF, Office file, ...) is read by page: its hits cite "vault://note/<path>#page=N",
        and lines are its pages ("#page=A-B" in the ref does the same).
        Pass the returned `hash` to edit_note / move_note / delete_note.
        Example: ref="vault://chunk/42", or pattern="sessions/markvault/*".
        """
        check_page_chars(max_chars, "notes")
        if ref and not refs and not pattern:
            return await service.run(
                ctx, "get", lambda v, call: open_answer(v.get(ref, parse_lines(lines), max_chars))
            )
        if lines:
            raise ToolError("lines is for one note: pass ref alone.")
        targets = ([ref] if ref else []) + (refs or [])
        return await service.run(
            ctx, "get", lambda v, call: open_answer(v.get_many(targets, pattern, max_chars))
        )

    @server.tool(annotations=READ_ONLY)
    async def status(ctx: Context) -> Status:
        """Index health: notes and chunks by kind, type, topic and project; the embedding
        model, its dimension, whether vectors are ready and which encoder runs it here
        and why; files changed on disk but not yet indexed; notes with problems;
        attachments (PDFs, Office files: how many were read, have no text or failed, each
        one not read with why); the watcher and automatic git sync (when the last sync
        ran, and any problem it hit). Use it when results look stale or thin."""
        return await service.run(ctx, "status", lambda v, call: v.status())


def context_tools(server: MCPServer, service: VaultService) -> None:
    @server.tool(annotations=READ_ONLY)
    async def recent(
        ctx: Context,
        days: float = 7,
        since: str | None = None,
        until: str | None = None,
        kind: list[str] | None = None,
        type: list[str] | None = None,
        project: list[str] | None = None,
        limit: int = 20,
        offset: int = 0,
    ) -> RecentNotes:
        """Notes created or changed lately, newest first: what happened in the last `days`
        (or between since and until, ISO dates). Use at the start of a task to pick up
        where work stopped. Example: days=3, project=["markvault"]."""
        filters = Filters(
            kinds=kind or [], types=type or [], projects=project or [], include_expired=True
        )
        return await service.run(
            ctx,
            "recent",
            lambda v, call: v.recent(
                since=since, until=until, days=days, filters=filters, limit=limit, offset=offset
            ),
        )

    @server.tool(annotations=READ_ONLY)
    async def timeline(
        ctx: Context,
        anchor: str | None = None,
        query: str | None = None,
        before: int = 5,
        after: int = 5,
        kind: list[str] | None = None,
        project: list[str] | None = None,
    ) -> Timeline:
        """Notes in time order around an anchor: a note (id, path, URI), a session id or
        an ISO time; or around the best match of `query`. Shows what came before and
        after a decision or session. Example: query="switched to DuckDB", before=3."""
        filters = Filters(kinds=kind or [], projects=project or [], include_expired=True)
        return await service.run(
            ctx,
            "timeline",
            lambda v, call: v.timeline(
                anchor, query=query, before=before, after=after, filters=filters
            ),
        )

    @server.tool(annotations=READ_ONLY)
    async def related(
        ctx: Context, ref: str, depth: int = 1, to: str | None = None, limit: int = 50
    ) -> dict[str, Any]:
        """Notes connected to `ref` through links and backlinks, up to `depth` (1-3) links
        away, nearest first. With `to`, the shortest chain of links between the two notes
        instead. Example: ref="notes/Welcome.md", depth=2."""
        if to is not None:
            return await service.run(
                ctx, "related", lambda v, call: open_answer(v.link_path(ref, to))
            )
        return await service.run(
            ctx, "related", lambda v, call: open_answer(v.related(ref, depth, limit))
        )

    @server.tool(annotations=READ_ONLY)
    async def vault_map(ctx: Context, depth: int | None = None, top: int = 10) -> VaultMap:
        """The vault's shape: folders (cut to `depth` levels) with note counts and the
        links between folders; the most linked and most linking notes; orphans (no links
        either way); broken links. Use to orient in an unknown vault."""
        return await service.run(ctx, "vault_map", lambda v, call: v.vault_map(depth, top))


def resources(server: MCPServer, service: VaultService) -> None:
    @server.resource("vault://note/{note_id}", mime_type="text/markdown")
    def note_resource(note_id: str) -> str:
        """A note's Markdown, by id (or vault-relative path)."""
        return str(service.read(lambda v: v.get("vault://note/" + note_id))["text"])

    # A note cited by its path (no id of its own, or an id that names no note of its
    # own: identity.py): "{note_id}" matches no "/", so these are read here.
    @server.resource("vault://note/{+note_path}", mime_type="text/markdown")
    def note_by_path_resource(note_path: str) -> str:
        """A note's Markdown, by its vault-relative path, as search hits cite it."""
        return str(service.read(lambda v: v.get("vault://note/" + note_path))["text"])

    @server.resource("vault://chunk/{chunk_id}", mime_type="text/markdown")
    def chunk_resource(chunk_id: str) -> str:
        """One chunk's Markdown, as cited by search hits."""
        return str(service.read(lambda v: v.get("#" + chunk_id))["text"])

    @server.resource("knowledge://{topic}", mime_type="text/markdown")
    def knowledge_resource(topic: str) -> str:
        """A topic's knowledge points, newest first."""
        points = service.read(lambda v: v.topic_points(topic))
        parts = [f"# Knowledge: {topic}"]
        for note in points["notes"]:
            parts.append(f"\n---\n<!-- {note.get('uri')} -->\n{note.get('text') or ''}")
        return "\n".join(parts)
