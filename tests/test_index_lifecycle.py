"""An owner that survives its index (issue 31): `vault watch` and `vault mcp` as real
processes, their index folder deleted or its file overwritten, replaced or deleted under
them; they rebuild it from the vault, keep answering and say so."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, StdioServerParameters, types

from markvault.config import Settings
from markvault.runtime.local_host import open_local
from markvault.runtime.owner import lock_path
from markvault.types.search import SearchRequest

from .conftest import WriteNotes, vault_argv

DEADLINE = 60.0  # seconds a rebuild may take on a loaded two-core machine


def _argv(vault: Path, index: Path, *args: str) -> list[str]:
    return vault_argv(vault, *args, index_dir=index)


def _cli(vault: Path, index: Path, *args: str, **kw: Any) -> subprocess.CompletedProcess[str]:
    argv = _argv(vault, index, *args)
    return subprocess.run(argv, capture_output=True, text=True, timeout=120, **kw)


def _status(vault: Path, index: Path, **kw: Any) -> dict[str, Any]:
    done = _cli(vault, index, "status", "--json", **kw)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)  # type: ignore[no-any-return]


def _await(what: str, ready: Any) -> Any:
    """Poll ``ready`` until it returns something true, within ``DEADLINE``."""
    deadline = time.monotonic() + DEADLINE
    while True:
        found = ready()
        if found:
            return found
        assert time.monotonic() < deadline, f"not within {DEADLINE} s: {what}"
        time.sleep(0.1)


def _hits(vault: Path, index: Path, query: str) -> list[dict[str, Any]]:
    done = _cli(vault, index, "search", query, "--mode", "keyword", "--json")
    assert done.returncode in (0, 1), done.stderr  # 1: no hits
    return json.loads(done.stdout)["hits"]  # type: ignore[no-any-return]


@pytest.fixture
def watching(write: WriteNotes, vault_dir: Path, tmp_path: Path) -> Iterator[tuple[Path, int]]:
    """`vault watch` running on a one-note vault, owning its (indexed) index."""
    write({"a.md": "# A\n\nquokka\n"})
    index = tmp_path / "index"
    proc = subprocess.Popen(
        _argv(vault_dir, index, "watch"),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        _await(
            "vault watch owns the index",
            lambda: _status(vault_dir, index)["owner"]["owner_pid"] == proc.pid,
        )
        _await("a.md indexed", lambda: _hits(vault_dir, index, "quokka"))
        yield index, proc.pid
    finally:
        proc.terminate()
        _, err = proc.communicate(timeout=30)
        assert "Traceback" not in err, err


def test_vault_watch_survives_its_index_folder_deleted(
    watching: tuple[Path, int], vault_dir: Path, tmp_path: Path
) -> None:
    index, pid = watching
    settings = Settings.load(vault=vault_dir, index=index)
    shutil.rmtree(index)
    (vault_dir / "b.md").write_text("# B\n\nwombat\n")
    # Without a call to wake it, the owner notices, rebuilds and takes its lock back:
    # a process with another TMPDIR finds the owner through the lock file alone.
    _await("the owner lock is back", lock_path(settings).exists)
    other_tmp = tmp_path / "other-tmp"
    other_tmp.mkdir()
    status = _status(vault_dir, index, env={**os.environ, "TMPDIR": str(other_tmp)})
    assert status["owner"]["owner_pid"] == pid  # not a second owner
    hits = _await("the new note is searchable", lambda: _hits(vault_dir, index, "wombat"))
    assert hits[0]["path"] == "b.md"
    assert _hits(vault_dir, index, "quokka")[0]["path"] == "a.md"  # nothing lost
    status = _status(vault_dir, index)
    assert status["notes"] == 2
    assert status["index_rebuilt"]["reason"] == "the index file was deleted"


def test_vault_watch_rebuilds_an_index_file_replaced_or_overwritten(
    watching: tuple[Path, int], vault_dir: Path, tmp_path: Path
) -> None:
    index, _ = watching
    db = index / f"{vault_dir.name}.duckdb"
    # Replaced: another vault's index (a valid file, another inode) put in its place.
    other = tmp_path / "other-vault"
    other.mkdir()
    (other / "x.md").write_text("# X\n\nplatypus\n")
    other_index = tmp_path / "other-index"
    assert _cli(other, other_index, "reindex", "--no-vectors").returncode == 0
    os.replace(other_index / "other-vault.duckdb", db)
    (vault_dir / "b.md").write_text("# B\n\nwombat\n")
    _await("the new note is searchable", lambda: _hits(vault_dir, index, "wombat"))
    assert not _hits(vault_dir, index, "platypus")  # the stranger's notes are gone
    rebuilt = _status(vault_dir, index)["index_rebuilt"]
    assert rebuilt["reason"] == "the index file was replaced by another file"
    # Overwritten in place (same inode): garbage over every byte.
    with open(db, "r+b") as fh:
        fh.write(os.urandom(db.stat().st_size))
    (vault_dir / "c.md").write_text("# C\n\nnumbat\n")
    _await("the next note is searchable", lambda: _hits(vault_dir, index, "numbat"))
    status = _status(vault_dir, index)
    assert status["notes"] == 3
    assert status["index_rebuilt"]["reason"] == "the index file was changed by another program"


def test_vault_mcp_keeps_answering_through_an_overwritten_index(
    write: WriteNotes, vault_dir: Path, tmp_path: Path
) -> None:
    write({"a.md": "# A\n\nquokka\n"})
    index = tmp_path / "index"
    argv = _argv(vault_dir, index, "mcp")
    logs: list[str] = []

    async def on_log(params: types.LoggingMessageNotificationParams) -> None:
        logs.append(str(params.data))

    async def tool(client: Client, name: str, **args: Any) -> Any:
        result = await client.call_tool(name, args)
        assert not result.is_error, result.content
        data = result.structured_content
        return result.content[0].text if data is None or list(data) == ["result"] else data

    async def go() -> None:
        server = StdioServerParameters(command=argv[0], args=argv[1:], env=dict(os.environ))
        client = Client(server, mode="legacy", logging_callback=on_log, log_level="info")
        async with client:
            with anyio.fail_after(DEADLINE):  # the first build answers "busy" meanwhile
                while "a.md" not in await tool(client, "search", query="quokka", mode="keyword"):
                    await anyio.sleep(0.1)
            db = index / f"{vault_dir.name}.duckdb"
            with open(db, "r+b") as fh:  # another program writes over it in place
                fh.write(b"\0" * db.stat().st_size)
            made = await tool(client, "create_note", kind="note", title="Numbat", content="numbat")
            assert made["path"] == "notes/Numbat.md"
            assert any("rebuilt" in w for w in made.get("warnings", [])), json.dumps(made)
            got = await tool(client, "get", ref=made["id"])
            assert "numbat" in json.dumps(got)
            text = await tool(client, "search", query="quokka OR numbat", mode="keyword")
            assert "a.md" in text and "Numbat.md" in text
            status = await tool(client, "status")
            assert status["notes"] == 2 and status["index_rebuilt"]
            with anyio.fail_after(10):
                while not any("index was rebuilt" in line for line in logs):
                    await anyio.sleep(0.05)  # the log message travels apart from answers

    anyio.run(go)


def test_a_write_reports_success_when_the_index_went_during_it(
    write: WriteNotes, vault_dir: Path, tmp_path: Path
) -> None:
    """The index folder deleted after the call's turn began (the turn's check passed):
    the note is written, said so, with a warning, and indexed."""
    write({"a.md": "# A\n\nquokka\n"})
    index = tmp_path / "index"
    with open_local(vault_dir, index) as vault:
        vault.reindex(vectors=False)
        core = vault.host.core()
        shutil.rmtree(index)
        made = core.writer.new_note("note", "Numbat", content="numbat")
        assert (vault_dir / made["path"]).exists()
        assert made["warnings"] and "deleted" in made["warnings"][0]
        assert [h.path for h in vault.search(SearchRequest("numbat", mode="keyword")).hits] == [
            made["path"]
        ]
        assert vault.status()["notes"] == 2
