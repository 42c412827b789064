"""``completion/complete``: what a client offers while a person types an argument.

The note template (``vault://note/{note_id}``) completes note ids, matched against ids
and titles; the topic template (``knowledge://{topic}``) topics; a prompt argument by
what its name says it names (``note``, ``topic``, ``project``, ``session``). Best
matches first (an id typed whole, then ids, then titles that start so, then titles with
a word that does; newest first within each), at most 100, with the total. Anything
else - an unknown prompt or template, an argument that names nothing in the vault -
gets an empty list, never an error: a client asks on every keystroke.
"""

from __future__ import annotations

from collections.abc import Callable, Collection

import anyio.to_thread
from mcp.server.mcpserver import MCPServer
from mcp.types import (
    Completion,
    CompletionArgument,
    CompletionContext,
    PromptReference,
    ResourceTemplateReference,
)

from markvault.answers.reading import Completions
from markvault.errors import MarkvaultError

MAX_VALUES = 100  # the protocol's limit per answer
TEMPLATE_ARGUMENTS = {
    ("vault://note/{note_id}", "note_id"): "note",
    ("knowledge://{topic}", "topic"): "topic",
}
PROMPT_ARGUMENTS = ("note", "topic", "project", "session")

Lookup = Callable[[str, str, int], Completions]
"""(what: note/topic/project/session, prefix, limit) -> {"values": [...], "total": n}"""


def completes(
    ref: PromptReference | ResourceTemplateReference, argument: str, prompts: Collection[str]
) -> str | None:
    """What ``argument`` of ``ref`` names in the vault, or None when nothing."""
    if isinstance(ref, ResourceTemplateReference):
        return TEMPLATE_ARGUMENTS.get((ref.uri, argument))
    if ref.name in prompts and argument in PROMPT_ARGUMENTS:
        return argument
    return None


def register_completions(server: MCPServer, lookup: Lookup, prompts: Collection[str]) -> None:
    """Serve ``completion/complete`` on ``server`` from ``lookup`` (a vault call that
    blocks: it runs in a worker thread)."""

    @server.completion()
    async def complete(
        ref: PromptReference | ResourceTemplateReference,
        argument: CompletionArgument,
        context: CompletionContext | None,
    ) -> Completion | None:
        what = completes(ref, argument.name, prompts)
        if what is None:
            return None  # the SDK answers an empty list
        try:
            found = await anyio.to_thread.run_sync(lookup, what, argument.value, MAX_VALUES)
        except MarkvaultError:  # an index being built, a vault gone: nothing to offer
            return None
        values = [str(v) for v in found["values"]][:MAX_VALUES]
        total = int(found["total"])
        return Completion(values=values, total=total, has_more=total > len(values))
