"""What agents and people meet: tools that refuse arguments they do not take, content
where a person would put it, templates' placeholders kept out of the index, and a
merge left open said plainly by status and search."""

from __future__ import annotations

import json
import re
import subprocess
from importlib.resources import files
from pathlib import Path
from typing import Any

import anyio
import pytest
from click.testing import CliRunner
from mcp import Client

from markvault import Vault
from markvault.cli.main import main
from markvault.markdown.template_text import placeholders
from markvault.markdown.tokens import tokenize
from markvault.server.tools import build_server
from markvault.types.search import SearchRequest

from .conftest import WriteNotes, run_cli

NOTES: dict[str, str | bytes] = {
    "notes/Alpha.md": "---\nid: alpha\n---\n# Alpha\n\nThe quokka text.\n",
}


@pytest.fixture
def notes() -> dict[str, str | bytes]:
    return NOTES


@pytest.mark.anyio
async def test_every_tool_refuses_an_argument_it_does_not_take(
    vault: Vault, vault_dir: Path
) -> None:
    before = sorted(p.relative_to(vault_dir) for p in vault_dir.rglob("*"))
    with anyio.fail_after(60):
        async with Client(build_server(vault)) as client:
            tools = (await client.list_tools()).tools
            assert len(tools) > 15
            for tool in tools:
                schema = tool.input_schema
                assert schema.get("additionalProperties") is False, tool.name
                known = list(schema.get("properties", {}))
                result = await client.call_tool(tool.name, {"bogus_argument": 1})
                text = result.content[0].text
                assert result.is_error, tool.name
                assert "'bogus_argument'" in text and "Nothing was done" in text, text
                assert ", ".join(known) in text or not known, text
            # The case an agent met: `body` for `content` wrote a template-only note.
            made = await client.call_tool(
                "create_note", {"kind": "note", "title": "Misnamed", "body": "The text."}
            )
            assert made.is_error and "content" in made.content[0].text
    assert sorted(p.relative_to(vault_dir) for p in vault_dir.rglob("*")) == before


def test_every_cli_command_refuses_leftover_arguments(vault: Vault, vault_dir: Path) -> None:
    vault.close()
    base = ["--vault", str(vault_dir), "--index", str(vault_dir.parent / "index")]
    for args in (["status", "extra"], ["topics", "x"], ["map", "y"], ["reindex", "z"]):
        result = CliRunner().invoke(main, [*base, *args])
        assert result.exit_code == 2 and "unexpected extra argument" in result.output, args


def _body(path: Path) -> str:
    text = path.read_text(encoding="utf-8")
    return text.split("\n---\n", 1)[1]


@pytest.mark.anyio
@pytest.mark.parametrize("kind", ["note", "knowledge", "session", "document"])
async def test_content_goes_where_a_person_puts_it(
    vault: Vault, vault_dir: Path, kind: str
) -> None:
    content = "First line of the content.\n\nSecond paragraph."
    async with Client(build_server(vault)) as client:
        args: dict[str, Any] = {"kind": kind, "title": f"A {kind}", "content": content}
        if kind in ("knowledge", "document"):
            args["topic"] = "zoo"
        if kind == "session":
            args["project"] = "mv"
        made = await client.call_tool("create_note", args)
        assert not made.is_error, made.content[0].text
        path = vault_dir / made.structured_content["path"]
    body = _body(path)
    lines = [line for line in body.splitlines() if line.strip()]
    title_at = lines.index(f"# A {kind}")
    # Right after the title, or after the template's own line ("Session on ...").
    assert "First line of the content." in lines[title_at + 1 : title_at + 3], body
    before_content = body.split("First line of the content.")[0]
    assert "## " not in before_content, body  # under no heading of the template


@pytest.mark.anyio
async def test_placeholders_never_reach_the_index(vault: Vault) -> None:
    async with Client(build_server(vault)) as client:
        await client.call_tool("create_note", {"kind": "note", "title": "Empty one"})
        await client.call_tool(
            "create_note", {"kind": "session", "title": "Empty session", "project": "mv"}
        )
        await client.call_tool(
            "create_note", {"kind": "document", "title": "Empty doc", "topic": "zoo"}
        )
        await client.call_tool(
            "create_note",
            {"kind": "knowledge", "title": "Empty point", "topic": "zoo", "content": "Quokka."},
        )
    assert placeholders()
    words = set()
    for comment in placeholders():
        words.update(w.strip(".,:;()`'\"") for w in comment.split() if len(w) > 5)
    folder = files("markvault") / "templates"
    # What a template holds besides its comments (headings, "Session on ...") is
    # searchable, and so are the titles.
    headings = {
        term
        for kind in ("note", "knowledge", "session", "document")
        for term in tokenize(
            re.sub("<!--.*?-->", "", (folder / f"{kind}.md").read_text("utf-8"), flags=re.S)
        )
    }
    headings |= set(tokenize("Decisions Outcomes Open items Empty one session doc point"))
    for word in sorted(w for w in words if w.isalpha() and not set(tokenize(w)) & headings):
        result = vault.search(SearchRequest(word, mode="keyword", limit=50))
        assert not result.hits, (word, [(h.path, h.snippet) for h in result.hits])
    for hit in vault.search(SearchRequest("quokka OR empty", mode="keyword", limit=50)).hits:
        assert "<!--" not in hit.snippet


def git(cwd: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=True)
    return done.stdout.strip()


def test_status_and_search_during_an_open_merge(
    write: WriteNotes, vault_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = tmp_path / "gitconfig"
    config.write_text("[user]\n\tname = T\n\temail = t@example.org\n", encoding="utf-8")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(config))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    write({"notes/Plan.md": "# Plan\n\nThe quokka plan is small.\n"})
    git(vault_dir, "init", "-q", "-b", "one")
    git(vault_dir, "add", "-A")
    git(vault_dir, "commit", "-q", "-m", "base")
    git(vault_dir, "checkout", "-q", "-b", "two")
    write({"notes/Plan.md": "# Plan\n\nThe quokka plan is large.\n"})
    git(vault_dir, "commit", "-q", "-am", "two")
    git(vault_dir, "checkout", "-q", "one")
    write({"notes/Plan.md": "# Plan\n\nThe quokka plan is medium.\n"})
    git(vault_dir, "commit", "-q", "-am", "one")
    merged = subprocess.run(["git", "merge", "two"], cwd=vault_dir, capture_output=True)
    assert merged.returncode != 0  # the conflict is left open

    status = run_cli(vault_dir, "status")
    assert status.returncode == 0, status.stderr
    assert "merge in progress; conflict markers in: notes/Plan.md" in status.stdout
    data = json.loads(run_cli(vault_dir, "status", "--json").stdout)
    assert data["git_operation"]["operation"] == "merge"
    assert data["git_operation"]["conflicts"] == ["notes/Plan.md"]

    found = run_cli(vault_dir, "search", "quokka", "--mode", "keyword")
    assert found.returncode == 0, found.stderr
    lines = found.stdout.splitlines()
    assert len(lines) == 2 and lines[0].startswith("#"), found.stdout  # one hit, one line
    assert "notes/Plan.md" in lines[0]
