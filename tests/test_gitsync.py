"""`vault sync` with real git: a bare remote and two clones in temporary folders."""

from __future__ import annotations

import json
import os
import subprocess
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

import markvault.git.sync as gitsync
from markvault import IndexBusyError, RefusedError
from markvault.files.vault_files import content_hash
from markvault.files.vault_init import init_vault
from markvault.git.repo import find_repo
from markvault.git.sync import Change, StagedCommit, SyncOptions, commit_message, sync_vault
from markvault.runtime.local_host import open_local
from markvault.server.tools import build_server
from markvault.types.edits import Edit
from markvault.types.search import SearchRequest

from .conftest import run_cli

Clone = Callable[[str], Path]


def git(cwd: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=True)
    return done.stdout.strip()


def write(vault: Path, rel: str, text: str) -> None:
    (vault / rel).parent.mkdir(parents=True, exist_ok=True)
    (vault / rel).write_text(text, encoding="utf-8")


@pytest.fixture(autouse=True)
def git_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A git configuration of the test's own: the user's global settings (pull.rebase,
    hooks, signing) must not change what is tested."""
    config = tmp_path / "gitconfig"
    config.write_text(
        "[user]\n\tname = Test\n\temail = test@example.org\n[init]\n\tdefaultBranch = main\n",
        encoding="utf-8",
    )
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(config))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")


@pytest.fixture
def clone(tmp_path: Path) -> Clone:
    """A bare remote seeded with an initialised vault and one note; each call clones it
    as another machine (``<tmp>/<name>/vault``, its index in ``<tmp>/<name>/index``)."""
    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "--bare", "-q", str(remote))
    seed = tmp_path / "seed"
    init_vault(seed)
    write(seed, "notes/Alpha.md", "# Alpha\n\nThe first line.\n\nThe second line.\n")
    git(seed, "init", "-q")
    git(seed, "add", "-A")
    git(seed, "commit", "-q", "-m", "seed")
    git(seed, "push", "-q", "-u", str(remote), "main")

    def _clone(name: str) -> Path:
        vault = tmp_path / name / "vault"
        vault.parent.mkdir()
        git(tmp_path, "clone", "-q", str(remote), str(vault))
        return vault

    return _clone


def sync(vault: Path, *args: str) -> tuple[int, dict, str]:
    done = run_cli(vault, "sync", "--json", *args)
    data = json.loads(done.stdout) if done.stdout.strip() else {}
    return done.returncode, data, done.stderr


def test_an_edit_on_one_machine_is_found_by_search_on_the_other(clone: Clone) -> None:
    a, b = clone("a"), clone("b")
    assert run_cli(b, "reindex", "--no-vectors").returncode == 0  # B has an index
    write(a, "notes/Alpha.md", "# Alpha\n\nThe first line.\n\nA zeppelin landed.\n")
    write(a, "notes/Beta.md", "# Beta\n\nAbout quokkas.\n")

    code, done, err = sync(a)
    assert code == 0, err
    assert done["message"].startswith("vault sync from ")
    assert "1 note added, 1 edited" in done["message"].splitlines()[0]
    assert "added:   notes/Beta.md" in done["message"]
    assert done["pushed"] == 1 and done["pulled"] == 0

    code, done, err = sync(b)
    assert code == 0, err
    assert done["pulled"] == 1 and done["changes"] == [] and done["pushed"] == 0
    assert done["changed_paths"] == ["notes/Alpha.md", "notes/Beta.md"]
    assert done["index"]["added"] == 1 and done["index"]["updated"] == 1
    found = run_cli(b, "search", "--mode", "keyword", "zeppelin", "--json")
    assert [h["path"] for h in json.loads(found.stdout)["hits"]] == ["notes/Alpha.md"]
    assert git(b, "log", "-1", "--format=%H") == git(a, "log", "-1", "--format=%H")


def test_the_message_names_moves_deletions_and_other_files_never_temp_files(
    clone: Clone,
) -> None:
    a = clone("a")
    write(a, "notes/Gone.md", "# Gone\n")
    git(a, "add", "-A")
    git(a, "commit", "-q", "-m", "more")
    (a / "notes" / "Alpha.md").rename(a / "notes" / "Renamed.md")
    (a / "notes" / "Gone.md").unlink()
    write(a, "Attachments/pic.png", "png")
    write(a, "notes/.mv-tmp-0123abcd", "half a write")
    code, done, err = sync(a, "--no-push")
    assert code == 0, err
    subject = done["message"].splitlines()[0]
    assert subject.endswith(": 1 note moved, 1 deleted, 1 other file changed"), subject
    assert "moved:   notes/Alpha.md -> notes/Renamed.md" in done["message"]
    assert "notes/.mv-tmp-0123abcd" not in git(a, "ls-files")
    assert done["pushed"] == 0 and done["ahead"] == 2  # --no-push: still to push
    assert (a / "notes" / ".mv-tmp-0123abcd").exists()  # left alone, just not committed


def edited_on_both(clone: Clone) -> tuple[Path, Path]:
    """Two machines change the same line of a note; A has synced, B not yet."""
    a, b = clone("a"), clone("b")
    write(a, "notes/Alpha.md", "# Alpha\n\nThe first line.\n\nWritten on A.\n")
    assert sync(a)[0] == 0
    write(b, "notes/Alpha.md", "# Alpha\n\nThe first line.\n\nWritten on B.\n")
    return a, b


def test_a_conflict_stops_names_the_note_keeps_both_texts_and_refuses_writes(
    clone: Clone, tmp_path: Path
) -> None:
    a, b = edited_on_both(clone)
    code, done, err = sync(b)
    assert code == 5
    assert done["conflicts"] == ["notes/Alpha.md"]
    assert done["pushed"] == 0 and done["commit"]  # B's change is committed, not pushed
    text = (b / "notes" / "Alpha.md").read_text(encoding="utf-8")
    assert "Written on A." in text and "Written on B." in text and "<<<<<<<" in text
    assert find_repo(b) is not None and find_repo(b).operation() == "merge"  # type: ignore[union-attr]
    with (
        open_local(b, tmp_path / "b" / "index") as v,
        pytest.raises(RefusedError, match="merge is in progress"),
    ):
        v.new_note("note", "During the conflict")
    # The human text of the CLI names the note and says what to do.
    human = run_cli(b, "sync")
    assert human.returncode == 5
    assert "notes/Alpha.md" in human.stderr and "still hold conflict markers" in human.stderr

    write(b, "notes/Alpha.md", "# Alpha\n\nThe first line.\n\nWritten on A and on B.\n")
    code, done, err = sync(b)
    assert code == 0, err
    assert done["finished"] == "merge" and done["pushed"] == 2  # B's commit and the merge
    code, done, err = sync(a)
    assert code == 0, err
    assert "Written on A and on B." in (a / "notes" / "Alpha.md").read_text(encoding="utf-8")


def test_a_rebase_conflict_keeps_both_texts_and_refuses_writes_until_resolved(
    clone: Clone, tmp_path: Path
) -> None:
    _, b = edited_on_both(clone)
    write(b, "notes/Other.md", "# Other\n\nNo conflict here.\n")

    code, done, _ = sync(b, "--rebase")
    assert code == 5 and done["conflicts"] == ["notes/Alpha.md"]
    repo = find_repo(b)
    assert repo is not None and repo.operation() == "rebase"
    text = (b / "notes" / "Alpha.md").read_text(encoding="utf-8")
    assert "Written on A." in text and "Written on B." in text
    with (
        open_local(b, tmp_path / "b" / "index") as v,
        pytest.raises(RefusedError, match="rebase is in progress"),
    ):
        v.new_note("note", "During the rebase")

    write(b, "notes/Alpha.md", "# Alpha\n\nThe first line.\n\nWritten on B after A.\n")
    code, done, err = sync(b)
    assert code == 0, err
    assert done["finished"] == "rebase" and done["pushed"] == 1
    assert repo.operation() is None
    assert git(b, "rev-list", "--count", "HEAD") == "3"  # seed, A's, B's replayed: no merge


def test_no_repository_and_no_upstream_are_clear_errors(tmp_path: Path) -> None:
    vault = tmp_path / "plain" / "vault"
    init_vault(vault)
    done = run_cli(vault, "sync")
    assert done.returncode == 2 and "not in a git repository" in done.stderr
    assert "git -C" in done.stderr and "Traceback" not in done.stderr
    git(vault, "init", "-q")
    done = run_cli(vault, "sync")
    assert done.returncode == 2 and "has no upstream" in done.stderr
    assert "push -u origin main" in done.stderr
    assert git(vault, "status", "--porcelain")  # nothing was committed


def test_dry_run_commits_fetches_and_stages_nothing(clone: Clone) -> None:
    a = clone("a")
    write(a, "notes/New.md", "# New\n")
    index_before = (a / ".git" / "index").read_bytes()
    head = git(a, "rev-parse", "HEAD")
    code, done, err = sync(a, "--dry-run")
    assert code == 0, err
    assert [c["path"] for c in done["changes"]] == ["notes/New.md"]
    assert done["commit"] is None and done["ahead"] == 1 and done["behind"] == 0
    assert (a / ".git" / "index").read_bytes() == index_before
    assert git(a, "rev-parse", "HEAD") == head
    assert git(a, "status", "--porcelain") == "?? notes/New.md"


def test_a_commit_check_can_refuse_and_nothing_is_committed(clone: Clone) -> None:
    """The hook point for the credential scan: a check sees the staged bytes."""
    a = clone("a")
    write(a, "notes/Keys.md", "# Keys\n\ntoken = sk-live-123\n")
    seen: list[tuple[str, bytes]] = []

    def no_tokens(staged: StagedCommit) -> None:
        for change in staged.changes:
            data = staged.read(change)
            seen.append((change.path, data))
            if b"sk-live-" in data:
                raise RefusedError(f"{change.path} holds a credential.", "Remove it.")

    head = git(a, "rev-parse", "HEAD")
    with pytest.raises(RefusedError, match="holds a credential"):
        sync_vault(a, SyncOptions(), checks=(no_tokens,))
    assert seen == [("notes/Keys.md", b"# Keys\n\ntoken = sk-live-123\n")]
    assert git(a, "rev-parse", "HEAD") == head
    assert git(a, "diff", "--cached", "--name-only") == ""  # the git index is as it was
    # The default check: a note still holding conflict markers is never committed.
    write(a, "notes/Keys.md", "# Keys\n<<<<<<< HEAD\nmine\n=======\ntheirs\n>>>>>>> x\n")
    done = run_cli(a, "sync")
    assert done.returncode == 6 and "conflict markers" in done.stderr


def test_staged_blobs_are_read_through_one_batch_exactly(clone: Clone) -> None:
    """Both commit checks read staged bytes through `git cat-file --batch`: every kind
    of content (empty, binary, with newlines at the end, large) comes back exact, and in
    the order asked, deleted files as empty."""
    a = clone("a")
    contents = {
        "notes/Empty.md": b"",
        "notes/Crlf.md": b"# Crlf\r\n\r\nline\r\n\n\n",
        "notes/Big.md": b"word " * 200_000,
        "image.png": bytes(range(256)) * 40,
    }
    for rel, data in contents.items():
        (a / rel).parent.mkdir(parents=True, exist_ok=True)
        (a / rel).write_bytes(data)
    git(a, "add", "-A")
    repo = find_repo(a)
    assert repo is not None
    staged_git = gitsync.Git(repo, a, interactive=False)
    changes = gitsync._staged_changes(staged_git)
    staged = StagedCommit(staged_git, changes)
    read = list(staged.blobs(reversed(changes)))
    assert [c.path for c, _ in read] == [c.path for c in reversed(changes)]
    assert {c.path: data for c, data in read} == {c.path: staged.read(c) for c in changes}
    assert {c.path: data for c, data in read if c.path in contents} == contents
    gone = Change("deleted", "notes/Gone.md", None, None)
    assert list(staged.blobs([gone])) == [(gone, b"")]


def test_a_vault_in_a_subfolder_commits_only_the_vault(tmp_path: Path) -> None:
    remote, project = tmp_path / "remote.git", tmp_path / "project"
    git(tmp_path, "init", "--bare", "-q", str(remote))
    init_vault(project / "docs" / "vault")
    write(project, "src/app.py", "print(1)\n")
    write(project, ".gitignore", "docs/index/\n")  # where run_cli puts the vault's index
    git(project, "init", "-q")
    git(project, "add", "-A")
    git(project, "commit", "-q", "-m", "start")
    git(project, "remote", "add", "origin", str(remote))
    git(project, "push", "-q", "-u", "origin", "main")
    vault = project / "docs" / "vault"
    write(project, "src/app.py", "print(2)\n")
    write(vault, "notes/Design.md", "# Design\n")
    code, done, err = sync(vault)
    assert code == 0, err
    assert [c["path"] for c in done["changes"]] == ["notes/Design.md"]
    assert git(project, "show", "--name-only", "--format=", "HEAD") == "docs/vault/notes/Design.md"
    assert git(project, "status", "--porcelain") == "M src/app.py"


def test_sync_waits_for_a_markvault_write_in_flight(
    clone: Clone, monkeypatch: pytest.MonkeyPatch
) -> None:
    a = clone("a")
    write(a, "notes/New.md", "# New\n")
    repo = find_repo(a)
    assert repo is not None
    monkeypatch.setattr(gitsync, "LOCK_WAIT_SECONDS", 0.2)
    in_flight = repo.writes_lock(exclusive=False, timeout=1)  # what a write holds
    with in_flight, pytest.raises(RefusedError, match="write kept the vault busy"):
        sync_vault(a, SyncOptions())
    assert git(a, "status", "--porcelain") == "?? notes/New.md"
    assert sync_vault(a, SyncOptions()).pushed == 1


def test_an_edit_through_markvault_then_sync(clone: Clone, tmp_path: Path) -> None:
    a = clone("a")
    with open_local(a, tmp_path / "a" / "index") as v:
        v.reindex(vectors=False)
        old = (a / "notes" / "Alpha.md").read_bytes()
        v.edit_note("notes/Alpha.md", [Edit("append", "Appended by an agent.")], content_hash(old))
    report = sync_vault(a, SyncOptions())
    assert [(c.status, c.path) for c in report.changes] == [("edited", "notes/Alpha.md")]
    assert report.pushed == 1


def test_searches_and_writes_go_on_while_sync_waits_on_the_network(
    clone: Clone, tmp_path: Path
) -> None:
    """While git fetches, the owner lends its turn: a search and a write run at once,
    a second sync is turned away, and the sync finishes after them. The remote's
    upload-pack waits on a FIFO, so the fetch is held open exactly as long as needed."""
    a = clone("a")
    started, go = tmp_path / "fetch-started", tmp_path / "fetch-go"
    os.mkfifo(started)
    os.mkfifo(go)
    script = tmp_path / "slow-upload-pack"
    script.write_text(
        f"#!/bin/sh\necho started > '{started}'\ncat '{go}' > /dev/null\n"
        'exec git-upload-pack "$@"\n',
        encoding="utf-8",
    )
    script.chmod(0o755)
    git(a, "config", "remote.origin.uploadpack", str(script))
    write(a, "notes/Beta.md", "# Beta\n\nA walrus on the ice.\n")
    with open_local(a, tmp_path / "a" / "index") as v:
        v.reindex(vectors=False)
        done: list[Any] = []
        syncing = threading.Thread(target=lambda: done.append(v.sync()), daemon=True)
        syncing.start()
        waiting = threading.Thread(target=started.read_text, daemon=True)
        waiting.start()
        waiting.join(60)
        try:
            assert not waiting.is_alive(), "the sync never reached its fetch"
            found = v.search(SearchRequest("walrus", mode="keyword"))
            assert [h.path for h in found.hits] == ["notes/Beta.md"] and not found.warnings
            old = (a / "notes" / "Alpha.md").read_bytes()
            v.edit_note("notes/Alpha.md", [Edit("append", "Written mid-fetch.")], content_hash(old))
            with pytest.raises(IndexBusyError, match="already running"):
                v.sync()
        finally:
            threading.Thread(target=go.write_text, args=("go\n",), daemon=True).start()
            syncing.join(60)
    assert done and done[0]["pushed"] == 1 and done[0]["commit"]
    assert "Written mid-fetch." in (a / "notes" / "Alpha.md").read_text(encoding="utf-8")


@pytest.mark.anyio
async def test_the_sync_tool_brings_what_another_machine_pushed_and_search_finds_it(
    clone: Clone, tmp_path: Path
) -> None:
    a, b = clone("a"), clone("b")
    write(a, "notes/Gamma.md", "# Gamma\n\nA narwhal surfaced.\n")
    assert sync(a)[0] == 0
    with open_local(b, tmp_path / "b" / "index") as v:
        v.reindex(vectors=False)
        async with Client(build_server(v)) as client:
            result = await client.call_tool("sync", {"message": "From the agent"})
        assert not result.is_error, result.content
        done = result.structured_content
        assert done is not None and done["pulled"] == 1 and done["index"]["added"] == 1
        assert [h.path for h in v.search(SearchRequest("narwhal", mode="keyword")).hits] == [
            "notes/Gamma.md"
        ]


def test_commit_message_counts() -> None:
    changes = [
        Change("added", "notes/a.md", None, "1"),
        Change("added", "notes/b.md", None, "2"),
        Change("edited", "notes/c.md", None, "3"),
        Change("deleted", "knowledge/x/d.md", None, None),
        Change("added", ".markvault/templates/note.md", None, "4"),
    ]
    text = commit_message(changes)
    assert text.splitlines()[0].endswith(
        ": 2 notes added, 1 edited, 1 deleted, 1 other file changed"
    )
    assert commit_message(changes, "Workshop notes").splitlines()[0] == "Workshop notes"
    assert "deleted: knowledge/x/d.md" in text
