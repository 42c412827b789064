"""The MCP server: thin tools over ``Vault`` for Claude Code and other clients.

No SQL and no file I/O here. One ``Vault`` is opened per server; DuckDB
connections are not meant for concurrent use, so tool calls (which the SDK runs
in worker threads) take turns on a lock.
"""

from __future__ import annotations

import json
import threading
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any, Literal, TypeVar

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations

from .edit import Edit, Op
from .errors import MarkvaultError
from .index import Filters
from .model import SearchResult
from .vault import Vault

T = TypeVar("T")
MODEL_WAIT_SECONDS = 3.0

INSTRUCTIONS = """\
markvault is the user's Markdown vault: notes, session summaries, knowledge points and
documents, shared with people who edit the same files.
Workflow: 1) `search` in the compact index format to find candidates; 2) `get` the notes or
chunks that matter (by id, path, #chunk or vault:// URI); 3) to change a note, pass the
`hash` that get/search returned to `edit_note` - a stale hash is refused because a person
may have edited the file meanwhile. Cite notes by their vault:// URI.
"""

READ_ONLY = ToolAnnotations(
    read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False
)
WRITE = ToolAnnotations(
    read_only_hint=False, destructive_hint=False, idempotent_hint=False, open_world_hint=False
)


class VaultService:
    """The server's one vault, used by one tool call at a time."""

    def __init__(self, vault: Vault) -> None:
        self.vault = vault
        self._lock = threading.Lock()

    def call(self, fn: Callable[[Vault], T]) -> T:
        with self._lock:
            try:
                return fn(self.vault)
            except MarkvaultError as exc:
                raise ToolError(str(exc)) from exc


def format_index(result: SearchResult) -> str:
    """One compact line per hit (plus its snippet), for a model to skim."""
    lines = [
        f"{len(result.hits)} of {result.total} notes · {result.mode} · "
        f"{result.timings_ms.get('total', 0):.0f} ms"
    ]
    lines += [f"warning: {w}" for w in result.warnings]
    for h in result.hits:
        heading = " > ".join(h.heading_path) or h.title
        more = f" (+{h.more_chunks} chunks)" if h.more_chunks else ""
        lines.append(
            f'#{h.chunk_id} | {h.path} | "{heading}" | {h.score:.4f}{more} | {h.uri} | '
            f"hash {h.hash}\n    {h.snippet}"
        )
    return "\n".join(lines)


def build_server(vault: Vault) -> MCPServer:
    service = VaultService(vault)

    @asynccontextmanager
    async def lifespan(_: MCPServer) -> AsyncIterator[None]:
        # Keyword searches are answered at once; the model (seconds to load) arrives
        # in the background, and hybrid calls wait briefly for it.
        vault.model_wait = MODEL_WAIT_SECONDS
        vault.embedder().start_loading()
        try:
            yield
        finally:
            vault.close()

    server = MCPServer(
        "markvault", instructions=INSTRUCTIONS, lifespan=lifespan, log_level="WARNING"
    )

    @server.tool(annotations=READ_ONLY)
    def search(
        query: str,
        mode: Literal["keyword", "vector", "hybrid"] = "hybrid",
        kind: list[str] | None = None,
        type: list[str] | None = None,
        tags: list[str] | None = None,
        topic: list[str] | None = None,
        project: list[str] | None = None,
        path: str | None = None,
        since: str | None = None,
        until: str | None = None,
        limit: int = 10,
        offset: int = 0,
        format: Literal["index", "full"] = "index",
    ) -> str:
        """Search the vault; returns the best chunk of each matching note, best first.

        Use this first; then `get` what matters. Modes: hybrid (default: keywords and
        meaning fused), keyword (exact words, names, identifiers), vector (meaning only).
        Keyword syntax: word, "exact phrase", prefix*, a AND b, a OR b, NOT a or -a, ( ).
        Filters: kind (note, session, knowledge, document), type (decision, bugfix, ...),
        tags (all required; "a" matches "a/b"), topic, project, path glob ("notes/*"),
        since/until ISO dates. format "index" gives one line per hit with its chunk id,
        path, heading, score, citation URI and hash; "full" adds each chunk's text.
        Example: query='"rank fusion" -vector', mode="keyword", kind=["knowledge"].
        """
        filters = Filters(
            kind or [], type or [], tags or [], topic or [], project or [], path, since, until
        )
        result = service.call(
            lambda v: v.search(
                query,
                mode=mode,
                filters=filters,
                limit=limit,
                offset=offset,
                full_text=format == "full",
            )
        )
        if format == "full":
            return json.dumps(result.to_json(), ensure_ascii=False)
        return format_index(result)

    @server.tool(annotations=READ_ONLY)
    def get(ref: str, lines: str | None = None) -> dict[str, Any]:
        """Read one note or chunk, with its metadata, links, backlinks and current hash.

        ref: a note id, a vault-relative path ("notes/Welcome.md"), a chunk ("#42") or a
        citation URI ("vault://note/<id>", "vault://chunk/<n>") from search results.
        lines: "A:B" to read only lines A to B of a long note. Pass the returned `hash`
        to edit_note when changing the note.
        """
        span = None
        if lines:
            a, _, b = lines.partition(":")
            try:
                span = (int(a or 1), int(b) if b else 10**9)
            except ValueError:
                raise ToolError('lines must look like "10:40".') from None
        return service.call(lambda v: v.get(ref, span))

    @server.tool(annotations=READ_ONLY)
    def status() -> dict[str, Any]:
        """Index health: note and chunk counts by kind and type, the embedding model and
        whether vectors are ready, and files changed since the last sync."""
        return service.call(lambda v: v.status())

    @server.tool(annotations=WRITE)
    def create_note(
        kind: Literal["note", "session", "knowledge", "document"],
        title: str,
        content: str = "",
        topic: str | None = None,
        tags: list[str] | None = None,
        project: str | None = None,
    ) -> dict[str, Any]:
        """Create a note from the kind's template in its folder (notes/, sessions/,
        knowledge/<topic>/, documents/), optionally appending `content`. Never overwrites:
        an existing title is an error. Knowledge notes need a topic. Searchable at once.
        """

        def create(v: Vault) -> dict[str, Any]:
            path = v.new_note(
                kind, title, topic=topic, tags=tags or [], project=project, content=content
            )
            note = v.get(path.relative_to(v.settings.vault_dir).as_posix())
            rel = note["path"]
            return {"path": rel, "id": note["id"], "uri": note["uri"], "hash": note["hash"]}

        return service.call(create)

    @server.tool(annotations=WRITE)
    def edit_note(
        ref: str,
        hash: str,
        op: Op,
        text: str = "",
        heading: str | None = None,
        find: str | None = None,
        count: int = 1,
        key: str | None = None,
        value: Any = None,
    ) -> dict[str, Any]:
        """Change one note, touching only the bytes concerned, if its hash is still `hash`.

        Ops: append/prepend `text`; replace_section (the content under `heading`),
        insert_before / insert_after a `heading`'s section; replace_text (`find` ->
        `text`, which must occur exactly `count` times); set_key / remove_key in the
        frontmatter (`key`, `value`). A stale hash is refused: get the note again.
        Example: op="replace_section", heading="Open items", text="- none".
        """
        change = Edit(op, text=text, heading=heading, find=find, count=count, key=key, value=value)
        return service.call(lambda v: v.edit_note(ref, [change], hash))

    @server.resource("vault://note/{note_id}", mime_type="text/markdown")
    def note_resource(note_id: str) -> str:
        """A note's Markdown, by id (or vault-relative path)."""
        return str(service.call(lambda v: v.get(note_id))["text"])

    return server


def serve_stdio(vault: Vault) -> None:
    build_server(vault).run("stdio")
