"""Fresh on every read: with no watcher, a command syncs what changed on disk before it
answers (a pull, an edit in another editor); with a watcher, a pull is seen at once.
Real git (a bare remote and two clones), the CLI as its own process, `vault mcp` over
stdio."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

import markvault.core.freshness as freshness
import markvault.files.find_walk as find_walk
from markvault.config import Settings
from markvault.runtime.shared_host import connect
from markvault.types.search import SearchRequest

from .conftest import run_cli, stdio_server
from .test_gitsync import Clone, clone, git, git_config, write

__all__ = ["clone", "git_config"]  # fixtures used here


def found(vault: Path, word: str, env: dict[str, str] | None = None) -> list[str]:
    done = run_cli(vault, "search", "--mode", "keyword", word, "--json", env=env)
    assert done.returncode in (0, 1), done.stderr  # 1: no match
    return [h["path"] for h in json.loads(done.stdout)["hits"]]


def push_from(vault: Path, message: str) -> None:
    git(vault, "add", "-A")
    git(vault, "commit", "-q", "-m", message)
    git(vault, "push", "-q")


def test_a_search_right_after_git_pull_finds_the_new_text(clone: Clone) -> None:
    a, b = clone("a"), clone("b")
    assert run_cli(b, "reindex", "--no-vectors").returncode == 0
    write(a, "notes/Alpha.md", "# Alpha\n\nA zeppelin landed.\n")
    write(a, "notes/Beta.md", "# Beta\n\nAbout quokkas.\n")
    push_from(a, "two notes")
    git(b, "pull", "-q")
    assert found(b, "zeppelin") == ["notes/Alpha.md"]
    assert found(b, "quokkas") == ["notes/Beta.md"]
    (a / "notes" / "Beta.md").unlink()
    push_from(a, "one gone")
    git(b, "pull", "-q")
    assert found(b, "quokkas") == []


def test_edits_not_committed_and_put_back_are_seen(clone: Clone) -> None:
    b = clone("b")
    assert run_cli(b, "reindex", "--no-vectors").returncode == 0
    assert found(b, "narwhal") == []
    # An edit in place (as Obsidian writes) and a new note, neither committed.
    with (b / "notes" / "Alpha.md").open("a", encoding="utf-8") as f:
        f.write("\nA narwhal surfaced.\n")
    write(b, "notes/New.md", "# New\n\nNarwhal again.\n")
    assert sorted(found(b, "narwhal")) == ["notes/Alpha.md", "notes/New.md"]
    git(b, "checkout", "--", "notes/Alpha.md")  # the edit put back: clean again
    assert found(b, "narwhal") == ["notes/New.md"]
    (b / "notes" / "New.md").rename(b / "notes" / "Renamed.md")  # not committed either
    assert found(b, "narwhal") == ["notes/Renamed.md"]
    (b / "notes" / "Renamed.md").unlink()
    assert found(b, "narwhal") == []


def test_notes_git_ignores_are_seen_too(clone: Clone) -> None:
    b = clone("b")
    write(b, ".git/info/exclude", "private/\n")  # kept out of git, indexed by markvault
    write(b, "private/Diary.md", "# Diary\n\nNothing yet.\n")
    assert run_cli(b, "reindex", "--no-vectors").returncode == 0
    assert found(b, "okapi") == []
    write(b, "private/Diary.md", "# Diary\n\nAn okapi.\n")
    assert found(b, "okapi") == ["private/Diary.md"]


@pytest.mark.parametrize("finder", ["find", "no find"])
def test_a_vault_without_git_is_checked_by_a_stat_walk(tmp_path: Path, finder: str) -> None:
    """Each search runs on the index while the disk is looked at (GNU find where it is
    on the PATH, else a walk in Python), and again once what changed is synced: each
    change made just before a search is in its answer."""
    env = None
    if finder == "no find":
        (tmp_path / "bin").mkdir()
        env = {**os.environ, "PATH": str(tmp_path / "bin")}
    vault = tmp_path / "plain" / "vault"
    write(vault, "notes/a.md", "# A\n\nFirst text.\n")
    assert run_cli(vault, "reindex", "--no-vectors").returncode == 0
    assert found(vault, "walrus", env) == []  # the walk's sum is recorded
    write(vault, "notes/a.md", "# A\n\nA walrus now.\n")  # in place: no folder changes
    assert found(vault, "walrus", env) == ["notes/a.md"]
    write(vault, "notes/b.md", "# B\n\nA walrus too.\n")
    assert sorted(found(vault, "walrus", env)) == ["notes/a.md", "notes/b.md"]
    (vault / "notes" / "a.md").unlink()
    assert found(vault, "walrus", env) == ["notes/b.md"]
    (vault / "notes" / "b.md").rename(vault / "notes" / "c.md")
    assert found(vault, "walrus", env) == ["notes/c.md"]
    (vault / "notes").rename(vault / "kept")
    assert found(vault, "walrus", env) == ["kept/c.md"]
    assert found(vault, "walrus", env) == ["kept/c.md"]  # nothing changed: same answer


def test_finds_digest_changes_when_the_walks_sum_does(tmp_path: Path) -> None:
    """GNU find's digest sees what ``stat_sum`` sees (a note's edit, a link's target's
    edit, a folder's rename) and not what it leaves out (hidden files, the index)."""
    vault, index = tmp_path / "vault", tmp_path / "vault" / "index"
    write(vault, "notes/a.md", "# A\n")
    write(tmp_path, "elsewhere/t.md", "# T\n")
    (vault / "notes" / "t.md").symlink_to(tmp_path / "elsewhere" / "t.md")
    write(index, "db", "x")
    write(vault, ".hidden/x.md", "x")

    def both() -> tuple[str | None, list[int]]:
        return (
            find_walk.find_digest(str(vault), str(index)),
            freshness.stat_sum(str(vault), {str(index)}),
        )

    before = both()
    assert before[0] is not None
    write(vault, ".hidden/x.md", "xy")  # what is in a hidden folder or the index
    write(index, "db", "xy")
    assert both() == before
    write(vault, "notes/a.md", "# A, longer\n")
    after = both()
    assert after[0] != before[0] and after[1] != before[1]
    write(tmp_path, "elsewhere/t.md", "# T, longer\n")
    assert both()[0] != after[0] and both()[1] != after[1]
    after = both()
    # A rename shows in the sum by its folder's mtime (unless within the clock's tick),
    # in find's lines by the paths themselves.
    (vault / "notes").rename(vault / "kept")
    assert both()[0] != after[0]
    # A vault whose path is a link is walked all the same.
    (tmp_path / "link").symlink_to(vault)
    through = find_walk.find_digest(str(tmp_path / "link"), str(index))
    write(vault, "kept/a.md", "# A, longer still\n")
    assert find_walk.find_digest(str(tmp_path / "link"), str(index)) != through


def test_a_look_started_ahead_finds_what_a_look_now_finds(tmp_path: Path) -> None:
    """A one-shot search's look at the disk, started before the index layer loads, plans
    what a look started at the call would; a walk the look does not need is stopped."""
    vault = tmp_path / "vault"
    write(vault, "notes/a.md", "# A\n")
    settings = Settings.load(vault=vault, index=tmp_path / "index")
    ahead = freshness.look_ahead(settings)
    ahead.join()
    assert ahead.error is None and ahead.plan is not None and ahead.plan.walk_all
    walk = find_walk.FindWalk.start(str(vault), str(settings.index_dir))
    if walk is None:
        pytest.skip("no GNU find here")
    assert freshness.look_at_disk(settings, False, walk) == freshness.look_at_disk(settings, False)
    walk = find_walk.FindWalk.start(str(vault), str(settings.index_dir))
    assert walk is not None
    assert freshness.look_at_disk(settings, True, walk) is None  # watched: no walk
    with pytest.raises(ChildProcessError):  # stopped and reaped
        os.waitpid(walk.pid, os.WNOHANG)


def test_a_repository_with_no_commit_yet_is_checked_by_the_walks_sum(tmp_path: Path) -> None:
    """`git init` and nothing committed: there is no commit to diff from, so the check
    keeps the stat walk's sum (not a full comparison with the index on every command)."""
    vault = tmp_path / "fresh" / "vault"
    write(vault, "notes/a.md", "# A\n\nFirst text.\n")
    git(vault, "init", "-q")
    assert run_cli(vault, "reindex", "--no-vectors").returncode == 0
    assert found(vault, "walrus") == []
    (state_file,) = (tmp_path / "fresh").rglob("*.fresh.json")
    assert "walk" in json.loads(state_file.read_text(encoding="utf-8"))
    write(vault, "notes/a.md", "# A\n\nA walrus now.\n")
    assert found(vault, "walrus") == ["notes/a.md"]
    git(vault, "add", "-A")
    git(vault, "commit", "-q", "-m", "first")  # from now on git says what changed
    write(vault, "notes/b.md", "# B\n\nA walrus too.\n")
    assert sorted(found(vault, "walrus")) == ["notes/a.md", "notes/b.md"]
    assert "head" in json.loads(state_file.read_text(encoding="utf-8"))


def test_many_changes_answer_from_the_old_index_with_a_note(
    clone: Clone, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    b = clone("b")
    assert run_cli(b, "reindex", "--no-vectors").returncode == 0
    assert found(b, "first") == ["notes/Alpha.md"]  # the check's state is recorded
    monkeypatch.setattr(freshness, "FRESH_MAX_FILES", 2)
    for n in range(3):
        write(b, f"notes/N{n}.md", f"# N{n}\n\nAn ocelot.\n")
    with connect(Settings.load(vault=b, index=tmp_path / "b" / "index")) as v:
        result = v.search(SearchRequest("ocelot", mode="keyword"))
        assert result.total == 0
        assert any("3 files changed" in w and "vault reindex" in w for w in result.warnings)
        v.reindex(vectors=False)
        assert v.search(SearchRequest("ocelot", mode="keyword")).total == 3


@pytest.mark.anyio
async def test_a_search_through_mcp_right_after_a_pull(clone: Clone) -> None:
    a, b = clone("a"), clone("b")
    assert run_cli(b, "reindex", "--no-vectors").returncode == 0
    with anyio.fail_after(90):
        async with Client(stdio_server(b)) as client:
            before = await client.call_tool("search", {"query": "zeppelin", "mode": "keyword"})
            assert "notes/Alpha.md" not in before.content[0].text
            write(a, "notes/Alpha.md", "# Alpha\n\nA zeppelin landed.\n")
            push_from(a, "zeppelin")
            git(b, "pull", "-q")
            after = await client.call_tool("search", {"query": "zeppelin", "mode": "keyword"})
            assert "notes/Alpha.md" in after.content[0].text


@pytest.mark.anyio
async def test_a_pull_while_an_mcp_server_runs_and_writes(clone: Clone) -> None:
    """The agent writes through `vault mcp` while `vault sync` pulls a change on the same
    machine: the sync runs in the server between two writes, nothing is lost, nothing
    half-written is committed, and both machines end with every note."""
    a, b = clone("a"), clone("b")
    write(a, "notes/Alpha.md", "# Alpha\n\nA zeppelin landed.\n")
    push_from(a, "zeppelin")
    titles = [f"Agent note {n}" for n in range(8)]
    with anyio.fail_after(120):
        async with Client(stdio_server(b)) as client:

            async def agent() -> None:
                for title in titles:
                    made = await client.call_tool(
                        "create_note", {"kind": "note", "title": title, "content": f"ibis {title}"}
                    )
                    assert not made.is_error, made.content

            sync_done: list[dict[str, Any]] = []

            async def pull() -> None:
                done = await anyio.to_thread.run_sync(run_cli, b, "sync", "--json")
                assert done.returncode == 0, done.stderr
                sync_done.append(json.loads(done.stdout))

            async with anyio.create_task_group() as tasks:
                tasks.start_soon(agent)
                tasks.start_soon(pull)
            assert sync_done[0]["pulled"] == 1
            hits = await client.call_tool("search", {"query": "zeppelin", "mode": "keyword"})
            assert "notes/Alpha.md" in hits.content[0].text
            again = run_cli(b, "sync", "--json")  # what the agent wrote after the first
            assert again.returncode == 0, again.stderr
    git(a, "pull", "-q")
    for title in titles:
        assert f"ibis {title}" in (a / "notes" / f"{title}.md").read_text(encoding="utf-8")
    assert git(b, "status", "--porcelain") == ""
    assert ".mv-tmp-" not in git(b, "log", "--all", "--name-only", "--format=")
