"""Every session tool through a real MCP client session: in memory, and over stdio as
`vault mcp` (the same scenario both ways), plus their error paths."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import pytest
from mcp import Client

from markvault import Vault
from markvault.runtime.local_host import open_local
from markvault.server.tools import WRITE_TOOLS, build_server

from .conftest import stdio_server
from .test_mcp_tools import call, error
from .test_sessions import SID
from .test_sessions_import import K_CWD, OTHER_SID, transcripts

pytestmark = pytest.mark.anyio

SESSION_TOOLS = {"list_sessions", "read_session", "save_session_summary"}


@pytest.fixture
def vault(vault_dir: Path, tmp_path: Path) -> Vault:
    (vault_dir / "notes").mkdir()
    (vault_dir / "notes" / "Money.md").write_text(
        "---\nid: money\nproject: shop-app\ncreated: 2025-03-10\n---\n# Money\n\n"
        "Prices are Decimal everywhere.\n",
        encoding="utf-8",
    )
    v = open_local(vault_dir, vault_dir.parent / "index")
    v.import_sessions(transcripts(tmp_path / "projects"))
    return v


async def exercise_session_tools(client: Client) -> None:
    tools = {t.name: t for t in (await client.list_tools()).tools}
    assert set(tools) >= SESSION_TOOLS
    assert tools["list_sessions"].annotations.read_only_hint is True
    assert tools["read_session"].annotations.read_only_hint is True
    assert tools["save_session_summary"].annotations.read_only_hint is False
    assert "save_session_summary" in WRITE_TOOLS
    assert "scope" in json.dumps(tools["search"].input_schema)

    # List: all, a project's recent ones, the ones still to summarise, projects.
    listed = await call(client, "list_sessions")
    assert listed["total"] == 2 and listed["next_offset"] is None
    assert [s["session_id"] for s in listed["sessions"]] == [OTHER_SID, SID]
    recent = await call(client, "list_sessions", project="shop-app", limit=1)
    (shop,) = recent["sessions"]
    assert shop["session_id"] == SID and shop["turns"] == 4 and shop["has_summary"] is False
    by_cwd = await call(client, "list_sessions", cwd=K_CWD)
    assert [s["session_id"] for s in by_cwd["sessions"]] == [OTHER_SID]
    dated = await call(client, "list_sessions", since="2025-03-01", until="2025-03-31")
    assert [s["session_id"] for s in dated["sessions"]] == [SID]
    todo = await call(client, "list_sessions", has_summary=False)
    assert todo["total"] == 2
    projects = await call(client, "list_sessions", group_by="project")
    by_name = {p["project"]: p for p in projects["projects"]}
    assert by_name["shop-app"]["sessions"] == 1 and by_name["shop-app"]["notes"] == 1
    assert by_name["kiosk"]["cwds"] == [K_CWD]

    # Read: search inside the session, then the turn it points at, then pages.
    found = await call(client, "read_session", ref=SID[:8], query="decimal")
    assert found["match"] == "all" and found["session"]["session_id"] == SID
    first = found["matches"][0]
    assert first["under"] == "09:15 Assistant" and "Decimal" in first["text"]
    turn = await call(client, "read_session", ref=SID[:8], lines=first["read"])
    assert turn["text"].startswith("### 09:15 Assistant")
    page = await call(client, "read_session", ref=shop["uri"], max_chars=1000)
    assert len(page["text"]) <= 1000 and page["next_lines"] and page["has_summary"] is False
    rest = await call(client, "read_session", ref=shop["path"], lines=page["next_lines"])
    assert rest["lines"][0] == page["lines"][1] + 1

    # Save a summary with the hash read; the transcript stays.
    saved = await call(
        client,
        "save_session_summary",
        ref=SID,
        hash=page["hash"],
        overview="Fixed the one-cent checkout error.",
        decisions=["Use Decimal for money values: floats lost a cent"],
        outcomes=["src/pricing.py patched"],
        open_items=["invoice.py still rounds floats"],
        tags=["money"],
    )
    assert saved["changed"] is True and saved["hash"] != page["hash"]
    assert saved["summary"]["tags"] == ["claude-code", "money"]
    stale = await error(
        client, "save_session_summary", ref=SID, hash=page["hash"], overview="Again."
    )
    assert "changed since it was read" in stale
    again = await call(client, "read_session", ref=SID, query="invoice")
    assert again["has_summary"] is True
    assert again["summary"]["open_items"] == ["invoice.py still rounds floats"]
    assert again["matches"][0]["under"] == "Open items"
    assert (await call(client, "list_sessions", has_summary=True))["total"] == 1

    # Search restricted to sessions, prompts, decisions.
    everywhere = await call(client, "search", query="decimal", mode="keyword")
    assert "notes/Money.md" in everywhere and "sessions/shop-app/" in everywhere
    sessions_only = await call(client, "search", query="decimal", mode="keyword", scope="sessions")
    assert "notes/Money.md" not in sessions_only and "sessions/shop-app/" in sessions_only
    decisions = json.loads(
        await call(
            client, "search", query="decimal", mode="keyword", scope="decisions", format="full"
        )
    )
    (hit,) = decisions["hits"]
    assert hit["heading_path"][1:] == ["Summary", "Decisions"]
    assert hit["snippet"] == "- Use **Decimal** for money values: floats lost a cent"
    prompts = await call(client, "search", query="printer", mode="keyword", scope="prompts")
    assert '"Why does the kiosk printer jam on receipts? > Transcript > 08:00 User"' in prompts

    # Timelines carry a session's decisions beside the notes.
    around = await call(client, "timeline", anchor=SID, before=0, after=1)
    assert around["anchor"]["note"]["decisions"] == [
        "Use Decimal for money values: floats lost a cent"
    ]
    assert [n["path"] for n in around["after"]] == ["notes/Money.md"]


async def test_session_tools_in_memory(vault: Vault) -> None:
    with anyio.fail_after(60):
        async with Client(build_server(vault)) as client:
            await exercise_session_tools(client)


async def test_session_tools_over_stdio(vault: Vault, vault_dir: Path) -> None:
    vault.close()
    params = stdio_server(vault_dir)
    with anyio.fail_after(120):
        async with Client(params) as client:
            await exercise_session_tools(client)


async def test_session_tool_errors_say_what_to_pass(vault: Vault) -> None:
    async with Client(build_server(vault)) as client:
        assert "No session or note" in await error(client, "read_session", ref="nope")
        assert "not a session note" in await error(client, "read_session", ref="money")
        assert "max_chars" in await error(client, "read_session", ref=SID, max_chars=10)
        assert "max_matches" in await error(client, "read_session", ref=SID, max_matches=0)
        assert "lines" in await error(client, "read_session", ref=SID, lines="a:b")
        assert "no words" in await error(client, "read_session", ref=SID, query="?!")
        assert "limit" in await error(client, "list_sessions", limit=0)
        assert "ISO" in await error(client, "list_sessions", since="last week")
        page = await call(client, "read_session", ref=SID)
        assert "empty" in await error(
            client, "save_session_summary", ref=SID, hash=page["hash"], overview=" "
        )
        assert "hash" in await error(client, "save_session_summary", ref=SID, hash="")
        assert "scope" in await error(client, "search", query="x", scope="everything")
