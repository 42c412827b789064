"""The trust boundary of store_document, on a home folder laid out as a new user's:
a vault at ~/notes, credentials in ~/.aws, documents in ~/docs."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from markvault.config import Settings
from markvault.errors import NotFoundError, RefusedError
from markvault.files.document_sources import DocumentSources


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    for rel, text in {
        "notes/notes/a.md": "# A\n",
        ".aws/credentials.txt": "[default]\n",
        ".config/markvault/http-token": "t0ken\n",
        "docs/api.md": "# API\n",
        "docs/.env.md": "SECRET=1\n",
        "docs/.private/plan.md": "# Plan\n",
        "docs/sub/deep.md": "# Deep\n",
        "other/readme.md": "# Other\n",
        "config.json": "{}\n",
    }.items():
        path = home / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    (home / "index").mkdir()
    (home / "index" / "notes.duckdb").write_text("not really a database\n")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    monkeypatch.delenv("MARKVAULT_TOKEN_FILE", raising=False)
    return home


def sources(home: Path, roots: str = "") -> DocumentSources:
    env = {"MARKVAULT_DOCUMENT_ROOTS": roots} if roots else {}
    return DocumentSources.of(Settings.load(vault=home / "notes", index=home / "index", env=env))


def refused(sources: DocumentSources, path: str | Path, **kwargs: bool) -> str:
    with pytest.raises(RefusedError) as caught:
        sources.check(path, **kwargs)
    return str(caught.value)


def test_with_nothing_configured_an_agent_may_read_nothing(home: Path) -> None:
    agent = sources(home)
    for path in ("docs/api.md", home / "docs/api.md", home / ".aws/credentials.txt", "/nope"):
        message = refused(agent, path)
        assert "no folder is allowed" in message
        assert 'document_roots = ["~/docs"]' in message and "MARKVAULT_DOCUMENT_ROOTS" in message


def test_an_agent_reads_only_ordinary_files_inside_the_roots(home: Path) -> None:
    agent = sources(home, str(home / "docs"))
    assert agent.check(home / "docs/api.md") == home / "docs/api.md"
    assert agent.check(home / "docs/sub/../sub/deep.md") == home / "docs/sub/deep.md"
    assert "outside the folders" in refused(agent, home / "other/readme.md")
    assert "outside the folders" in refused(agent, home / "docs/../config.json")
    assert "hidden" in refused(agent, home / "docs/.env.md")
    assert "hidden" in refused(agent, home / "docs/.private/plan.md")
    with pytest.raises(NotFoundError):
        agent.check(home / "docs/none.md")


def test_the_home_folder_as_a_root_still_keeps_hidden_folders_and_our_files(home: Path) -> None:
    agent = sources(home, str(home))
    assert agent.check(home / "config.json") == home / "config.json"
    assert "hidden" in refused(agent, home / ".aws/credentials.txt")
    assert "hidden" in refused(agent, home / ".config/markvault/http-token")
    assert "markvault's own files" in refused(agent, home / "index/notes.duckdb")
    assert "inside the vault" in refused(agent, home / "notes/notes/a.md")
    assert "hidden" in refused(agent, home / "notes/.markvault.toml")


def test_the_token_file_is_never_read_wherever_it_is(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MARKVAULT_TOKEN_FILE", str(home / "docs/token.txt"))
    (home / "docs/token.txt").write_text("t0ken\n")
    agent = sources(home, str(home / "docs"))
    assert "markvault's own files" in refused(agent, home / "docs/token.txt")


def test_symlinks_may_not_lead_out_of_a_root(home: Path) -> None:
    agent = sources(home, str(home / "docs"))
    (home / "docs/creds.md").symlink_to(home / ".aws/credentials.txt")
    (home / "docs/elsewhere").symlink_to(home / "other")
    (home / "docs/alias.md").symlink_to(home / "docs/api.md")
    (home / "other/into-docs.md").symlink_to(home / "docs/api.md")
    message = refused(agent, home / "docs/creds.md")
    assert "outside the folders" in message and "symbolic links" in message
    assert "outside the folders" in refused(agent, home / "docs/elsewhere/readme.md")
    assert agent.check(home / "docs/alias.md") == home / "docs/api.md"
    # Lands inside a root: the file is one the user allowed, whatever the way in.
    assert agent.check(home / "other/into-docs.md") == home / "docs/api.md"


def test_a_person_reads_any_ordinary_path_but_hidden_ones_only_when_asked(home: Path) -> None:
    person = sources(home)  # nothing configured: a person needs no roots
    assert person.check(home / "other/readme.md", by_person=True) == home / "other/readme.md"
    assert person.check("/etc/hostname", by_person=True) == Path("/etc/hostname").resolve()
    message = refused(person, home / ".aws/credentials.txt", by_person=True)
    assert "hidden" in message and "--allow-hidden" in message
    assert "hidden" in refused(person, "~/.aws/credentials.txt", by_person=True)
    (home / "creds.txt").symlink_to(home / ".aws/credentials.txt")
    assert "hidden" in refused(person, home / "creds.txt", by_person=True)
    allowed = person.check(home / ".aws/credentials.txt", by_person=True, allow_hidden=True)
    assert allowed == home / ".aws/credentials.txt"
    assert "markvault's own files" in refused(person, home / "index/notes.duckdb", by_person=True)
    assert "inside the vault" in refused(person, home / "notes/notes/a.md", by_person=True)
    with pytest.raises(NotFoundError):
        person.check(home / "missing.md", by_person=True)


def test_relative_paths_and_bad_bytes(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(home / "docs")
    agent = sources(home, str(home / "docs"))
    assert agent.check("sub/deep.md") == home / "docs/sub/deep.md"
    assert "hidden" in refused(agent, "sub/../.env.md")
    assert "NUL" in refused(agent, "api\x00.md")
    fifo = home / "docs/pipe.md"
    os.mkfifo(fifo)
    with pytest.raises(NotFoundError):  # never opened: a FIFO would block the reader
        agent.check(fifo)


def test_a_loop_of_symlinks_is_refused_not_a_crash(home: Path) -> None:
    agent = sources(home, str(home / "docs"))
    (home / "docs/loop").symlink_to(home / "docs/loop")
    assert "loop" in refused(agent, home / "docs/loop/readme.md")
