"""One identity per note: a path always names its own note, a citation URI always reads
the note it came from, and an id that names no note of its own (another note's path,
shared with another note, written as a path) is reported and never stands for another
note, in reads, writes, listings and over MCP."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

from markvault import Vault
from markvault.errors import UsageError
from markvault.server.tools import build_server
from markvault.types.search import SearchRequest

NOTES: dict[str, str | bytes] = {
    "notes/Target.md": "---\nid: tgt\ncreated: 2026-01-01\n---\n# Target\n\nzebra real.\n",
    # Each of these claims another note's place, by its path with and without ".md".
    "notes/Impostor.md": "---\nid: notes/Target.md\n---\n# Impostor\n\nzebra fake.\n",
    "notes/Shadow.md": "---\nid: notes/Plain\n---\n# Shadow\n\nzebra shadow.\n",
    "notes/Plain.md": "# Plain\n\nzebra plain, no id of its own. [[Target]]\n",
    # Two notes with one id.
    "notes/One.md": "---\nid: same\n---\n# One\n\nzebra one.\n",
    "notes/Two.md": "---\nid: same\n---\n# Two\n\nzebra two.\n",
    "notes/Fine.md": "---\nid: fine\n---\n# Fine\n\nzebra fine.\n",
}
CLAIMING = {"notes/Impostor.md", "notes/Shadow.md", "notes/One.md", "notes/Two.md"}


@pytest.fixture
def notes() -> dict[str, str | bytes]:
    return NOTES


def test_a_path_names_its_own_note(vault: Vault) -> None:
    for path in NOTES:
        for ref in (path, path[: -len(".md")], " " + path, "vault://note/" + path):
            assert vault.get(ref)["path"] == path, ref


def test_every_citation_reads_the_note_it_came_from(vault: Vault) -> None:
    hits = vault.search(SearchRequest("zebra", mode="keyword", limit=50)).hits
    assert {h.path for h in hits} == set(NOTES)
    for hit in hits:
        assert vault.get(hit.uri)["path"] == hit.path, hit.uri
    for path in NOTES:
        note = vault.get(path)
        assert vault.get(note["uri"])["path"] == path
        for chunk in note["chunks"]:
            assert vault.get(vault.get(chunk["uri"])["note_uri"])["path"] == path
    listings: list[dict[str, Any]] = vault.recent(days=100000, limit=100)["notes"]
    listings += vault.related("notes/Plain.md", 1, 50)["related"]
    for item in listings:
        assert vault.get(item["uri"])["path"] == item["path"], item
    # An id of its own still names its note.
    assert vault.get("tgt")["path"] == "notes/Target.md"
    assert vault.get("fine")["uri"] == "vault://note/fine"


def test_an_id_several_notes_share_names_none(vault: Vault) -> None:
    with pytest.raises(UsageError, match=r"notes/One\.md, notes/Two\.md"):
        vault.get("same")
    with pytest.raises(UsageError, match="shared"):
        vault.get("vault://note/same")


def test_ids_that_name_no_note_of_their_own_are_reported(vault: Vault) -> None:
    problems = {p["path"]: p["problem"] for p in vault.status()["problems"]}
    assert set(problems) == CLAIMING
    assert "path of another note (notes/Target.md)" in problems["notes/Impostor.md"]
    assert "path of another note (notes/Plain.md)" in problems["notes/Shadow.md"]
    assert "also the id of notes/Two.md" in problems["notes/One.md"]
    report = vault.reindex(vectors=False)
    assert {w["path"] for w in report.warnings} == CLAIMING


def test_an_id_written_as_a_path_is_reported(write: Any, open_vault: Any) -> None:
    write({"notes/A.md": "---\nid: elsewhere/Nothing.md\n---\n# A\n"})
    v = open_vault()
    v.reindex(vectors=False)
    (problem,) = v.status()["problems"]
    assert problem["path"] == "notes/A.md" and "looks like a file's path" in problem["problem"]


@pytest.mark.parametrize("change", ["edit", "move", "delete"])
def test_writes_by_path_act_on_that_path(vault: Vault, vault_dir: Path, change: str) -> None:
    impostor = (vault_dir / "notes/Impostor.md").read_bytes()
    target = vault.get("notes/Target.md")
    if change == "edit":
        vault.edit_note("notes/Target.md", [], target["hash"])  # no change: still resolves
        from markvault.types.edits import Edit

        vault.edit_note("notes/Target.md", [Edit("append", "more")], target["hash"])
        assert "more" in (vault_dir / "notes/Target.md").read_text()
    elif change == "move":
        vault.move_note("notes/Target.md", "notes/Moved.md", target["hash"])
        assert (vault_dir / "notes/Moved.md").exists()
    else:
        vault.delete_note("notes/Target.md", target["hash"])
        assert (vault_dir / ".trash/notes/Target.md").exists()
    assert (vault_dir / "notes/Impostor.md").read_bytes() == impostor


@pytest.mark.anyio
async def test_over_mcp_a_path_and_a_citation_read_their_note(vault: Vault) -> None:
    with anyio.fail_after(60):
        async with Client(build_server(vault)) as client:
            result = await client.call_tool("get", {"ref": "notes/Target.md"})
            assert result.structured_content["path"] == "notes/Target.md"
            index = await client.call_tool("search", {"query": "zebra", "mode": "keyword"})
            text = index.content[0].text
            assert "vault://note/notes/Impostor.md" in text
            got = await client.read_resource("vault://note/notes/Impostor.md")
            assert "zebra fake" in got.contents[0].text
            target = result.structured_content
            done = await client.call_tool(
                "delete_note", {"ref": "notes/Target.md", "hash": target["hash"]}
            )
            assert not done.is_error and done.structured_content["path"] == "notes/Target.md"


@pytest.mark.anyio
async def test_a_move_that_breaks_links_reports_them(vault: Vault, vault_dir: Path) -> None:
    """A completed move is a success, whether or not links to the note break."""
    async with Client(build_server(vault)) as client:
        target = vault.get("notes/Target.md")
        moved = await client.call_tool(
            "move_note", {"ref": "tgt", "hash": target["hash"], "to": "archive/Elsewhere.md"}
        )
        assert not moved.is_error, moved.content[0].text
        assert moved.structured_content["broken_links"] == [
            {"source": "notes/Plain.md", "line": 3, "target": "Target"}
        ]
    assert (vault_dir / "archive/Elsewhere.md").exists()


def test_vault_check_reports_what_the_index_reports(vault: Vault, vault_dir: Path) -> None:
    """Two homes of one rule (the index's query, and the files' read for `vault check`)
    held equal, over every kind of finding and the notes they leave alone."""
    from click.testing import CliRunner

    from markvault.cli.main import main
    from markvault.files.identity_check import check_identities

    (vault_dir / "notes/Looks.md").write_text("---\nid: Other.MD\n---\n# L\n", encoding="utf-8")
    (vault_dir / "notes/Self.md").write_text("---\nid: notes/Self\n---\n# S\n", encoding="utf-8")
    (vault_dir / "notes/Num.md").write_text("---\nid: 7\n---\n# N\n", encoding="utf-8")
    (vault_dir / "notes/Seven.md").write_text("---\nid: 7\n---\n# N\n", encoding="utf-8")
    vault.reindex(vectors=False)
    from_index = vault.status()["problems"]
    vault.close()
    assert check_identities(vault_dir) == from_index
    assert {p["path"] for p in from_index} == CLAIMING | {
        "notes/Looks.md",
        "notes/Num.md",
        "notes/Seven.md",
    }
    index = str(vault_dir.parent / "index")
    result = CliRunner().invoke(main, ["--vault", str(vault_dir), "--index", index, "check"])
    assert result.exit_code == 0, result.output
    assert "id  notes/Impostor.md: frontmatter id 'notes/Target.md'" in result.output
