"""The MCP tool ``search``, and the compact index format it answers in by default."""

from __future__ import annotations

import json
from typing import Literal

from mcp.server.mcpserver import Context, MCPServer

from markvault.display import fold
from markvault.search.time_signal import time_line
from markvault.server.vault_service import READ_ONLY, VaultService
from markvault.types.search import Filters, SearchRequest, SearchResult


def format_index(result: SearchResult) -> str:
    """One compact line per hit (plus its snippet), for a model to skim."""
    stages = ", ".join(f"{k} {v:.0f} ms" for k, v in result.timings_ms.items() if k != "total")
    lines = [
        f"{len(result.hits)} of {result.total} notes · {result.mode} · "
        f"{result.timings_ms.get('total', 0):.0f} ms ({stages})"
    ]
    lines += [f"warning: {fold(w)}" for w in result.warnings]
    if result.time:
        lines.append(f"time: {fold(time_line(result.time))}")
    for h in result.hits:  # every value from a note folded: one hit, two lines (display.py)
        heading = fold(" > ".join(h.heading_path) or h.title)
        more = f" (+{h.more_chunks} chunks)" if h.more_chunks else ""
        lines.append(
            f'#{h.chunk_id} | {fold(h.path)} | "{heading}" | {h.score:.4f}{more} | '
            f"{fold(h.uri)} | hash {h.hash}\n    {fold(h.snippet)}"
        )
    if not result.hits:
        lines.append("no matches: try other words, mode hybrid or deep, or fewer filters")
    return "\n".join(lines)


def search_tools(server: MCPServer, service: VaultService) -> None:
    @server.tool(annotations=READ_ONLY)
    async def search(
        ctx: Context,
        query: str,
        mode: Literal["hybrid", "keyword", "vector", "deep"] = "hybrid",
        variants: list[str] | None = None,
        kind: list[str] | None = None,
        type: list[str] | None = None,
        tags: list[str] | None = None,
        concepts: list[str] | None = None,
        topic: list[str] | None = None,
        project: list[str] | None = None,
        files: list[str] | None = None,
        path: str | None = None,
        since: str | None = None,
        until: str | None = None,
        include_expired: bool = False,
        scope: Literal["sessions", "prompts", "decisions", "outcomes", "open_items"] | None = None,
        attachments: Literal["include", "exclude", "only"] = "include",
        order: Literal["relevance", "date"] = "relevance",
        min_score: float | None = None,
        limit: int = 10,
        offset: int = 0,
        format: Literal["index", "full"] = "index",
        as_of: str | None = None,
    ) -> str:
        """Search the vault; returns the best chunk of each matching note, best first.

        Use this first, then `get` what matters. Modes: hybrid (default: keywords and
        meaning fused), keyword (exact words, names, identifiers), vector (meaning only),
        deep (hybrid plus your `variants` of the query, up to 8: prefix "lex:" for a
        keyword rewrite, "vec:" for a paraphrase, "hyde:" for a hypothetical answer
        passage; unprefixed ones run both ways; skipped when the keywords already give a
        clear winner). Keyword syntax: word, "exact phrase", prefix*, a AND b, a OR b,
        NOT a or -a, ( ).
        Filters: kind (note, session, knowledge, document), type (decision, bugfix, ...),
        tags (all required; "a" matches "a/b"), concepts (all required), topic, project,
        files (code paths a note is about; "x.py" or "src/*.py"), path glob ("notes/*"),
        since/until ISO dates. Expired (valid_until past) and superseded notes are left
        out unless include_expired. scope: "sessions" (session notes only), "prompts" (what
        the user asked in sessions), "decisions", "outcomes" or "open_items" (those parts
        of session summaries; each hit is the session, its snippet the matching item).
        Time words in the query ("yesterday", "last Tuesday", "two weeks ago", "in
        March", "since 2026-01-05") rank notes dated then higher (never filter), read
        against as_of (the ISO date the question is asked; default today); "now",
        "currently", "my current" rank the newest matching notes higher (a value a
        later session changed); the result says which window it read ("time:").
        Attachments (PDF, docx, pptx, xlsx, html, epub files: kind "attachment", type
        their format) are searched by their text; a hit names its page (slide, sheet)
        and cites it (vault://note/<path>#page=N, which `get` reads); attachments
        "exclude" or "only" them.
        order "date" = newest first. min_score drops weaker hits (BM25 for keyword,
        cosine for vector, the fused score for hybrid: 0 to 1, RRF for deep).
        format "index": one line per hit with chunk id, path, heading, score, citation URI
        and hash, then a snippet; "full": JSON with each chunk's text and the metadata.
        Example: query="rank fusion", mode="deep",
        variants=["lex: RRF reciprocal rank", "hyde: we merge BM25 and vector lists by rank"]
        """
        filters = Filters(
            kinds=kind or [], types=type or [], tags=tags or [], topics=topic or [],
            projects=project or [], path_glob=path, since=since, until=until,
            concepts=concepts or [], files=files or [], include_expired=include_expired,
            scope=scope, attachments=attachments,
        )  # fmt: skip
        request = SearchRequest(
            query, mode=mode, filters=filters, limit=limit, offset=offset,
            full_text=format == "full", variants=tuple(variants or ()), order=order,
            min_score=min_score, as_of=as_of,
        )  # fmt: skip
        result = await service.run(ctx, "search", lambda v, call: v.search(request, progress=call))
        if format == "full":
            return json.dumps(result.to_json(), ensure_ascii=False)
        return format_index(result)
