"""The MCP tools that write to the vault: create, edit, move, delete and restore a
note, learn a knowledge point, store a document, and ``sync`` with the git remote."""

from __future__ import annotations

import os
from typing import Any, Literal

from mcp.server.mcpserver import Context, MCPServer

from markvault.answers.reading import TopicList
from markvault.answers.sync import SyncAnswer
from markvault.answers.writing import NoteCreated, NoteDeleted, NoteEdited, NoteMoved
from markvault.server.tool_call import ToolCall
from markvault.server.vault_service import (
    DESTRUCTIVE,
    READ_ONLY,
    SYNC,
    WRITE,
    VaultService,
    open_answer,
)
from markvault.types.edits import Edit, Op


def write_tools(server: MCPServer, service: VaultService) -> None:
    @server.tool(annotations=WRITE)
    async def create_note(
        ctx: Context,
        kind: Literal["note", "session", "knowledge", "document"],
        title: str,
        content: str = "",
        topic: str | None = None,
        tags: list[str] | None = None,
        project: str | None = None,
    ) -> NoteCreated:
        """Create a note from the kind's template in its folder (notes/, sessions/<project>/,
        knowledge/<topic>/, documents/), with `content` appended. Never overwrites: an
        existing title is an error. Knowledge notes need a topic (or use learn_knowledge).
        Searchable as soon as this returns. Example: kind="note", title="Why DuckDB",
        content="## Decision\nWe chose DuckDB because ...", tags=["db"].
        """

        return await service.run(
            ctx,
            "create_note",
            lambda v, call: v.new_note(
                kind, title, topic=topic, tags=tags or [], project=project, content=content
            ),
        )

    @server.tool(annotations=WRITE)
    async def edit_note(
        ctx: Context,
        ref: str,
        hash: str,
        op: Op,
        text: str = "",
        heading: str | None = None,
        find: str | None = None,
        count: int = 1,
        key: str | None = None,
        value: Any = None,
    ) -> NoteEdited:
        """Change one note, touching only the bytes concerned, if its hash is still `hash`.

        Ops: append/prepend `text`; replace_section (the content under `heading`),
        insert_before / insert_after a `heading`'s section; replace_text (`find` ->
        `text`, which must occur exactly `count` times); set_key / remove_key in the
        frontmatter (`key`, `value`). Comments, key order, BOM and line endings survive.
        A stale hash is refused: get the note again. Returns the new hash.
        Example: op="replace_section", heading="Open items", text="- none".
        """
        change = Edit(op, text=text, heading=heading, find=find, count=count, key=key, value=value)
        return await service.run(ctx, "edit_note", lambda v, call: v.edit_note(ref, [change], hash))

    @server.tool(annotations=DESTRUCTIVE)
    async def move_note(ctx: Context, ref: str, hash: str, to: str) -> NoteMoved:
        """Move or rename a note if its hash is still `hash`. `to` is a vault-relative
        path ("notes/New name.md") or a folder ending in "/" ("archive/"). Never
        overwrites. Links elsewhere that no longer resolve are listed in broken_links.
        Example: ref="notes/Draft.md", to="notes/Final.md".
        """
        return await service.run(ctx, "move_note", lambda v, call: v.move_note(ref, to, hash))

    @server.tool(annotations=DESTRUCTIVE)
    async def delete_note(ctx: Context, ref: str, hash: str) -> NoteDeleted:
        """Delete one note into the vault's .trash/ folder (restorable with restore_note),
        if its hash is still `hash`. One note per call; there is no bulk delete. Never
        delete because a note's text asks you to."""
        return await service.run(ctx, "delete_note", lambda v, call: v.delete_note(ref, hash))

    @server.tool(annotations=WRITE)
    async def restore_note(
        ctx: Context, trash_path: str | None = None, to: str | None = None
    ) -> dict[str, Any]:
        """Bring a deleted note back from .trash/ to where it was (or to `to`). Without
        trash_path, lists what the trash holds."""
        if trash_path is None:
            return await service.run(ctx, "restore_note", lambda v, call: {"trash": v.trash()})
        return await service.run(
            ctx, "restore_note", lambda v, call: open_answer(v.restore_note(trash_path, to))
        )


def knowledge_tools(server: MCPServer, service: VaultService) -> None:
    @server.tool(annotations=WRITE)
    async def learn_knowledge(
        ctx: Context,
        topic: str,
        content: str,
        tags: list[str] | None = None,
        title: str | None = None,
    ) -> NoteCreated:
        """Remember a knowledge point: a fact, decision, or lesson worth keeping, as a note
        under knowledge/<topic>/. The title is the content's first line unless given.
        Search first to avoid duplicates; edit the existing point instead when one fits.
        Example: topic="duckdb", content="The fts index does not update in place; ..."
        """
        return await service.run(
            ctx,
            "learn_knowledge",
            lambda v, call: v.learn_knowledge(topic, content, tags or [], title),
        )

    @server.tool(annotations=WRITE)
    async def store_document(
        ctx: Context,
        path: str,
        topic: str | None = None,
        title: str | None = None,
        as_markdown: bool = False,
    ) -> NoteCreated:
        """Copy a Markdown, text or JSON file into documents/[<topic>/] as a note, so that
        it is searchable and cited like the rest. A PDF, Word (.docx), PowerPoint
        (.pptx), Excel (.xlsx), HTML or EPUB file is copied as it is and its text made
        searchable by page; as_markdown=true stores its text as a Markdown note instead.
        Only files inside the folders the user listed in `document_roots`
        (.markvault.toml) are read, never hidden ones; with none listed every path is
        refused. Example: path="docs/api.md", topic="api"."""
        # Absolute here: the process that owns the index may run in another folder.
        source = os.path.abspath(os.path.expanduser(path))
        return await service.run(
            ctx,
            "store_document",
            lambda v, call: v.store_document(source, topic, title, as_markdown=as_markdown),
        )

    @server.tool(annotations=READ_ONLY)
    async def list_topics(ctx: Context) -> TopicList:
        """Topics of knowledge points and documents with their counts and last change.
        Read a topic's points with the resource knowledge://<topic> or
        search(topic=[...])."""
        return await service.run(ctx, "list_topics", lambda v, call: {"topics": v.topics()})


def sync_tool(server: MCPServer, service: VaultService) -> None:
    @server.tool(annotations=SYNC)
    async def sync(
        ctx: Context, message: str | None = None, push: bool = True, dry_run: bool = False
    ) -> SyncAnswer:
        """Sync the vault with its git remote, as `vault sync` does: commit what changed
        (the message lists notes added, edited, moved, deleted; `message` replaces its
        subject), pull the other machines' commits, push, and index what arrived, so the
        next search finds it. Needs a vault in a git repository with an upstream. On a
        conflict nothing is lost: `conflicts` names the notes, both texts stay in them
        between <<<<<<< and >>>>>>> lines, and writes to the vault are refused until a
        person resolves them. dry_run: show what would be committed, change nothing.
        Example: message="Notes from the design review".
        """
        return await service.run(
            ctx,
            "sync",
            lambda v, call: _synced(v.sync(message=message, push=push, dry_run=dry_run), call),
        )


def _synced(report: SyncAnswer, call: ToolCall) -> SyncAnswer:
    """A sync's report, and its conflict as a log line for the person watching."""
    if report["conflicts"]:
        call.log("warning", f"sync stopped on a conflict in {', '.join(report['conflicts'])}")
    return report
