"""The MCP server through real clients: in memory, and over stdio as Claude Code runs it."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest
from mcp import Client

from markvault import Vault
from markvault.server.tools import WRITE_TOOLS, build_server

from .conftest import stdio_server

pytestmark = pytest.mark.anyio


@pytest.fixture
def notes() -> dict[str, str]:
    return {"notes/a.md": "---\nid: a\n---\n# Alpha\n\n## Open items\n\n- quokka census\n"}


async def test_tools_are_listed_with_hints(vault: Vault) -> None:
    async with Client(build_server(vault)) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
    assert set(tools) == {
        "search",
        "get",
        "status",
        "create_note",
        "edit_note",
        "move_note",
        "delete_note",
        "restore_note",
        "learn_knowledge",
        "store_document",
        "list_topics",
        "recent",
        "timeline",
        "related",
        "vault_map",
        "list_sessions",
        "read_session",
        "save_session_summary",
        "import_sessions",
        "sync",
    }
    for name in (
        "search",
        "get",
        "status",
        "list_topics",
        "recent",
        "timeline",
        "related",
        "list_sessions",
        "read_session",
    ):
        assert tools[name].annotations.read_only_hint is True, name
    for name in WRITE_TOOLS:
        assert tools[name].annotations.read_only_hint is False, name
    assert tools["delete_note"].annotations.destructive_hint is True
    assert tools["move_note"].annotations.destructive_hint is True
    assert tools["edit_note"].annotations.destructive_hint is False
    for tool in tools.values():
        assert len(tool.description or "") > 80, tool.name  # a manual, not a label
    assert "Example" in (tools["search"].description or "")


async def test_search_get_edit_roundtrip(vault: Vault, vault_dir: Path) -> None:
    with anyio.fail_after(30):
        async with Client(build_server(vault)) as client:
            found = await client.call_tool("search", {"query": "quokka", "mode": "keyword"})
            line = found.content[0].text.splitlines()[1]
            assert "notes/a.md" in line and "vault://note/a" in line
            note = (await client.call_tool("get", {"ref": "vault://note/a"})).structured_content
            assert note is not None and note["path"] == "notes/a.md"
            edited = await client.call_tool(
                "edit_note",
                {
                    "ref": "a",
                    "hash": note["hash"],
                    "op": "replace_section",
                    "heading": "Open items",
                    "text": "- platypus count",
                },
            )
            assert not edited.is_error
            stale = await client.call_tool(
                "edit_note", {"ref": "a", "hash": note["hash"], "op": "append", "text": "x"}
            )
            assert stale.is_error and "changed since it was read" in stale.content[0].text
            again = await client.call_tool("search", {"query": "platypus", "mode": "keyword"})
            assert "notes/a.md" in again.content[0].text
    assert "- platypus count" in (vault_dir / "notes" / "a.md").read_text(encoding="utf-8")


async def test_bad_arguments_are_tool_errors_not_tracebacks(vault: Vault) -> None:
    async with Client(build_server(vault)) as client:
        bad = await client.call_tool("search", {"query": "x", "mode": "keyword", "limit": 0})
        assert bad.is_error and "limit must be" in bad.content[0].text
        missing = await client.call_tool("get", {"ref": "nope"})
        assert missing.is_error and "No note" in missing.content[0].text
        assert "Traceback" not in bad.content[0].text + missing.content[0].text


async def test_create_note_and_resource(vault: Vault) -> None:
    async with Client(build_server(vault)) as client:
        made = await client.call_tool(
            "create_note",
            {
                "kind": "knowledge",
                "title": "Quokkas smile",
                "topic": "zoo",
                "content": "They are marsupials.",
            },
        )
        data = made.structured_content
        assert data is not None and data["path"] == "knowledge/zoo/Quokkas smile.md"
        resource = await client.read_resource(data["uri"])
        assert "They are marsupials." in resource.contents[0].text
        dup = await client.call_tool(
            "create_note", {"kind": "knowledge", "title": "Quokkas smile", "topic": "zoo"}
        )
        assert dup.is_error and "already exists" in dup.content[0].text


async def test_stdio_server_as_claude_code_starts_it(vault: Vault, vault_dir: Path) -> None:
    vault.close()
    params = stdio_server(vault_dir)
    with anyio.fail_after(60):
        async with Client(params) as client:
            result = await client.call_tool("search", {"query": "quokka", "mode": "keyword"})
            assert "notes/a.md" in result.content[0].text
