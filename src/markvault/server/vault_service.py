"""The server's one vault, used by one tool call at a time, and what the tools share:
their annotations, and the open object of a tool that answers in one of several shapes.

No SQL and no file I/O here. DuckDB connections are not meant for concurrent use, so
tool calls (each in a worker thread, ``tool_call``) take turns on a lock."""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ResourceError, ResourceNotFoundError, ToolError
from mcp.types import ToolAnnotations

from markvault.answers.reading import Completions
from markvault.errors import ConflictError, MarkvaultError, NotFoundError, RefusedError
from markvault.server.live import LiveServer
from markvault.server.tool_call import ToolCall
from markvault.types import MAX_PAGE_CHARS, MIN_PAGE_CHARS
from markvault.vault import Vault

T = TypeVar("T")
COMPLETE_WAIT_SECONDS = 0.25


def _hints(
    *, read_only: bool, destructive: bool = False, open_world: bool = False
) -> ToolAnnotations:
    """A tool's annotations: only a tool that reads is idempotent."""
    return ToolAnnotations(
        read_only_hint=read_only,
        destructive_hint=destructive,
        idempotent_hint=read_only,
        open_world_hint=open_world,
    )


READ_ONLY = _hints(read_only=True)
WRITE = _hints(read_only=False)
# Moves and deletes change where a note is; both are guarded by the note's hash and a
# delete goes to a restorable trash, but a client should still ask first.
DESTRUCTIVE = _hints(read_only=False, destructive=True)
# `sync` commits, pulls and pushes with the vault's git remote: it reaches past the vault.
SYNC = _hints(read_only=False, open_world=True)


class VaultService:
    """The server's one vault, used by one tool call at a time."""

    def __init__(self, vault: Vault, live: LiveServer | None = None) -> None:
        self.vault = vault
        self.live = live
        self._lock = threading.Lock()

    async def run(self, ctx: Context, what: str, fn: Callable[[Vault, ToolCall], T]) -> T:
        """A tool's work in a worker thread, as ``call`` runs it, reporting to the client
        while it runs (``tool_call``): ``fn`` gets the vault and the ``ToolCall``, which is
        the facade's ``progress`` and takes log lines. A refused change (stale hash, a
        merge under way) is also logged for the person watching the client."""
        tool_call = ToolCall(ctx, self.live, what)

        def work(call: ToolCall) -> T:
            try:
                return self.call(lambda v: fn(v, call))
            except ToolError as exc:
                if isinstance(exc.__cause__, ConflictError | RefusedError):
                    call.log("warning", f"{what} refused: {exc}")
                raise

        return await tool_call.run(work)

    def call(self, fn: Callable[[Vault], T]) -> T:
        """Run a tool's work; our errors become tool errors the model can act on."""
        return self._locked(fn, lambda exc: ToolError(str(exc)))

    def read(self, fn: Callable[[Vault], T]) -> T:
        """Run a resource read; our errors become resource errors with their message."""
        return self._locked(fn, _resource_error)

    def _locked(self, fn: Callable[[Vault], T], error: Callable[[MarkvaultError], Exception]) -> T:
        with self._lock:
            try:
                return fn(self.vault)
            except MarkvaultError as exc:
                raise error(exc) from exc

    def complete(self, what: str, prefix: str, limit: int) -> Completions:
        """Completions (``completion``); nothing while a long call holds the vault,
        rather than a keystroke that waits for it."""
        if not self._lock.acquire(timeout=COMPLETE_WAIT_SECONDS):
            return {"values": [], "total": 0}
        try:
            return self.vault.complete(what, prefix, limit)
        finally:
            self._lock.release()


def open_answer(answer: Mapping[str, Any]) -> dict[str, Any]:
    """A typed answer as the open object of a tool that gives one of several: MCP wants
    one object schema per tool, and a union of them would be wrapped in ``{"result": ...}``
    (the keys and their order are the answer's own)."""
    return dict(answer)


def check_page_chars(max_chars: int, what: str) -> None:
    """A read's page size within bounds, or a tool error that says how to read the rest."""
    if not MIN_PAGE_CHARS <= max_chars <= MAX_PAGE_CHARS:
        raise ToolError(
            f"max_chars must be {MIN_PAGE_CHARS:,}..{MAX_PAGE_CHARS:,}; "
            f"read long {what} page by page with lines."
        )


def _resource_error(exc: MarkvaultError) -> Exception:
    if isinstance(exc, NotFoundError):
        return ResourceNotFoundError(str(exc))
    return ResourceError(str(exc))
