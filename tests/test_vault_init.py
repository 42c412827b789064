"""`vault init`: a new vault, and an existing Obsidian vault left byte for byte."""

from __future__ import annotations

import json
import os
import tomllib
from pathlib import Path

from click.testing import CliRunner

from markvault import Settings
from markvault.cli.main import main
from markvault.files.vault_init import GITIGNORE_TEXT, init_vault
from markvault.runtime.local_host import open_local

from .conftest import checksums


def _init(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, ["init", *args])
    return result.exit_code, result.output


def test_a_new_vault_has_folders_templates_settings_and_a_gitignore(tmp_path: Path) -> None:
    vault = tmp_path / "deep" / "notes"
    code, out = _init(str(vault))
    assert code == 0, out
    for folder in ("notes", "sessions", "knowledge", "documents"):
        assert (vault / folder).is_dir()
    for kind in ("note", "session", "knowledge", "document"):
        assert (vault / ".markvault" / "templates" / f"{kind}.md").is_file()
    config = tomllib.loads((vault / ".markvault.toml").read_text(encoding="utf-8"))
    assert config == {"sync": {"pull": "merge", "auto": False}, "credentials": {"mode": "redact"}}
    settings = Settings.load(vault=vault, env={})
    assert settings.credentials.mode == "redact" and not settings.credentials.allow
    assert settings.sync.pull == "merge" and vault not in settings.index_dir.parents
    ignore = (vault / ".gitignore").read_text(encoding="utf-8").splitlines()
    assert {".trash/", ".mv-tmp-*", ".obsidian/workspace.json"} <= set(ignore)
    assert "vault --vault" in out and "mcp install" in out and "git -C" in out


def test_templates_travel_with_the_vault_and_are_never_indexed(tmp_path: Path) -> None:
    vault = tmp_path / "notes"
    init_vault(vault)
    template = vault / ".markvault" / "templates" / "note.md"
    template.write_text(
        template.read_text(encoding="utf-8").replace("## Context", "## Our own heading"),
        encoding="utf-8",
    )
    with open_local(vault, tmp_path / "index") as v:
        made = vault / v.new_note("note", "Alpha")["path"]
        assert "## Our own heading" in made.read_text(encoding="utf-8")
        report = v.reindex(vectors=False)
        assert report.notes == 1  # the new note; no template
        assert v.status()["notes"] == 1


def test_an_existing_obsidian_vault_keeps_every_file_byte_for_byte(tmp_path: Path) -> None:
    vault = tmp_path / "Obsidian Vault"
    files = {
        ".obsidian/app.json": '{"attachmentFolderPath": "Attachments"}\n',
        ".obsidian/workspace.json": "{}\n",
        ".gitignore": ".obsidian/workspace.json\n",
        ".markvault.toml": 'model = "all-MiniLM-L6-v2"\n',
        "notes/Existing.md": "---\ntags: [x]\n---\n# Existing\n\nSee [[Daily]].\n",
        "Daily.md": "# Daily\r\n\r\nCRLF kept\r\n",
        "Attachments/pic.png": "\x89PNG fake",
        "templates/note.md": "# {{title}} from Obsidian's own templates\n",
    }
    for rel, text in files.items():
        (vault / rel).parent.mkdir(parents=True, exist_ok=True)
        (vault / rel).write_text(text, encoding="utf-8", newline="")
    before = checksums(vault)
    times = {rel: os.stat(vault / rel).st_mtime_ns for rel in files}

    code, out = _init(str(vault), "--json")
    assert code == 0, out
    data = json.loads(out)
    assert data["obsidian"] is True and data["notes_found"] == 3
    assert set(data["kept"]) >= {".gitignore", ".markvault.toml"}
    assert ".trash/" in data["gitignore_missing"]
    assert ".obsidian/workspace.json" not in data["gitignore_missing"]
    after = checksums(vault)
    assert {rel: after[rel] for rel in before} == before
    assert {rel: os.stat(vault / rel).st_mtime_ns for rel in files} == times
    added = set(after) - set(before)
    assert added == {
        f".markvault/templates/{k}.md" for k in ("note", "session", "knowledge", "document")
    }
    # A templates/ folder of Obsidian's is not markvault's: the vault's own wins.
    with open_local(vault, tmp_path / "index") as v:
        text = (vault / v.new_note("note", "Mine")["path"]).read_text(encoding="utf-8")
    assert "from Obsidian's own templates" not in text and text.startswith("---\nid: n-")


def test_init_again_adds_nothing_and_the_starter_notes_come_on_request(tmp_path: Path) -> None:
    vault = tmp_path / "tour"
    first = init_vault(vault, starter=True)
    assert "notes/Welcome.md" in first.created
    assert not (vault / ".markvault.toml").read_text(encoding="utf-8").startswith("index_dir")
    second = init_vault(vault, starter=True)
    assert second.created == [] and ".gitignore" in second.kept
    assert second.gitignore_missing == []
    assert second.notes_found >= 20


def test_a_file_is_not_a_vault(tmp_path: Path) -> None:
    target = tmp_path / "file.md"
    target.write_text("x", encoding="utf-8")
    code, out = _init(str(target))
    assert code == 2 and "is a file" in out


def test_gitignore_text_is_a_list_of_patterns_with_comments() -> None:
    patterns = [x for x in GITIGNORE_TEXT.splitlines() if x and not x.startswith("#")]
    assert patterns and all(" " not in p for p in patterns)
