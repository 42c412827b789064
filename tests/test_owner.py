"""Many processes on one vault: one owns the index, the others ask it; when the owner
dies, another takes over: real `vault mcp` processes started at once and killed."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

from markvault import Vault
from markvault.config import Settings
from markvault.errors import CallCancelled
from markvault.runtime.shared_host import OwnerLostError, connect
from markvault.types.search import SearchRequest

from .conftest import WriteNotes, run_cli, stdio_server

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def call(client: Client, tool: str, **args: Any) -> Any:
    result = await client.call_tool(tool, args)
    assert not result.is_error, result.content[0].text
    data = result.structured_content
    return result.content[0].text if data is None or list(data) == ["result"] else data


async def test_five_servers_and_the_cli_share_one_index(write: WriteNotes, vault_dir: Path) -> None:
    write({"notes/a.md": "# Alpha\n\nquokka census\n"})
    with anyio.fail_after(240):
        async with AsyncExitStack() as stack:
            clients = [
                await stack.enter_async_context(Client(stdio_server(vault_dir))) for _ in range(5)
            ]
            owners = []
            for client in clients:
                status = await call(client, "status")
                assert status["notes"] == 1
                owners.append(status["owner"])
            assert sum(o["this_process_owns"] for o in owners) == 1
            assert len({o["owner_pid"] for o in owners}) == 1

            made = await call(
                clients[3], "create_note", kind="note", title="Numbat", content="numbat"
            )
            for client in clients:  # visible everywhere at once: there is one index
                assert "Numbat.md" in await call(client, "search", query="numbat", mode="keyword")
            found = run_cli(vault_dir, "search", "numbat", "--mode", "keyword", "--json")
            assert found.returncode == 0, found.stderr
            assert json.loads(found.stdout)["hits"][0]["id"] == made["id"]

            # kill -9 the owner: the others take over, nothing is lost, no lock error.
            owner_pid = owners[0]["owner_pid"]
            survivors = [
                c for c, o in zip(clients, owners, strict=True) if not o["this_process_owns"]
            ]
            os.kill(owner_pid, signal.SIGKILL)
            # Calls made right away, while a standby takes over, are answered promptly.
            started = time.monotonic()
            for client in survivors:
                text = await call(client, "search", query="numbat OR quokka", mode="keyword")
                assert "Numbat.md" in text and "notes/a.md" in text
            assert time.monotonic() - started < 20
            # The new owner watches the files.
            (vault_dir / "notes/by-hand.md").write_text("# By hand\n\nplatypus\n")
            deadline = time.monotonic() + 30
            while (
                "by-hand.md"
                not in run_cli(vault_dir, "search", "platypus", "--mode", "keyword").stdout
            ):
                assert time.monotonic() < deadline, "the new owner does not watch"
                await anyio.sleep(0.1)  # no event reaches this test from the new owner
            new_owners = {(await call(c, "status"))["owner"]["owner_pid"] for c in survivors}
            assert len(new_owners) == 1 and owner_pid not in new_owners


def test_a_process_that_owns_the_index_serves_the_next(write: WriteNotes, vault_dir: Path) -> None:
    write({"a.md": "apple"})
    settings = Settings.load(vault=vault_dir, index=vault_dir.parent / "index")
    with connect(settings) as first:
        first.reindex(vectors=False)
        assert first.host.owner_info()["this_process_owns"]
        # Another TMPDIR (an MCP client may start servers with a bare environment)
        # still finds this owner: its socket is named in the lock file.
        other_tmp = vault_dir.parent / "other-tmp"
        other_tmp.mkdir()
        result = run_cli(
            vault_dir, "status", "--json", env={**os.environ, "TMPDIR": str(other_tmp)}
        )
        assert result.returncode == 0, result.stderr
        status = json.loads(result.stdout)
        assert status["owner"] == {
            "owner_pid": os.getpid(),
            "this_process_owns": False,
            "clients": None,
        }
    # The owner has gone: the next command owns the index itself.
    assert json.loads(run_cli(vault_dir, "status", "--json").stdout)["owner"]["this_process_owns"]


def test_commands_started_at_once_never_see_a_lock_error(
    write: WriteNotes, vault_dir: Path
) -> None:
    """Six processes race to open a vault with no index yet."""
    write({f"n{i}.md": f"note {i} about walrus" for i in range(20)})
    index = str(vault_dir.parent / "index")
    base = [sys.executable, "-m", "markvault.cli", "--vault", str(vault_dir), "--index", index]
    procs = [
        subprocess.Popen(
            [*base, "search", "walrus", "--mode", "keyword", "--json", "--limit", "50"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(6)
    ]
    for proc in procs:
        out, err = proc.communicate(timeout=180)
        assert proc.returncode == 0, err
        assert "lock" not in err.lower()
        assert len(json.loads(out)["hits"]) == 20


def test_reads_during_a_long_sync_are_answered_not_left_waiting(
    write: WriteNotes, vault_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A cold start of a large vault: while the owner builds (here: holds the index for a
    long sync), a search from another process is answered at once, marked as building."""
    import threading

    from markvault.errors import IndexBusyError
    from markvault.runtime import local_host as host_module

    monkeypatch.setattr(host_module, "BUSY_ANSWER_SECONDS", 0.2)
    write({"a.md": "apple"})
    settings = Settings.load(vault=vault_dir, index=vault_dir.parent / "index")
    with connect(settings) as first:
        first.reindex(vectors=False)
        local = first.host.local  # type: ignore[attr-defined]
        assert local is not None
        building, release = threading.Event(), threading.Event()

        def long_sync() -> None:
            with local.calls:
                local.core().keeper.activity = ("Reading notes", 1200, 20000)
                building.set()
                release.wait(30)
                local.core().keeper.activity = None

        worker = threading.Thread(target=long_sync)
        worker.start()
        building.wait(10)
        try:
            with connect(settings) as second:
                assert not second.host.owner_info()["this_process_owns"]
                started = time.monotonic()
                result = second.search(SearchRequest("apple", mode="keyword"))
                assert time.monotonic() - started < 5
                assert result.hits == []
                assert "being built (reading notes: 1,200 of 20,000)" in result.warnings[0]
                with pytest.raises(IndexBusyError, match="being built"):
                    second.get("a.md")
        finally:
            release.set()
            worker.join()
        assert [h.path for h in first.search(SearchRequest("apple", mode="keyword")).hits] == [
            "a.md"
        ]


@pytest.mark.model
def test_the_owner_embeds_a_keyword_only_index_without_holding_it(
    bundled_copy: Path, tmp_path: Path
) -> None:
    """A server that loads the model on a keyword-only index embeds it in small groups
    in the background; other processes' reads are answered meanwhile, not held up."""
    settings = Settings.load(vault=bundled_copy, index=tmp_path / "index")
    with connect(settings) as owner:
        owner.reindex(vectors=False)
        assert owner.status()["vectors"]["embedded"] == 0
        owner.host.start_background(watch=False)
        idle = owner.host.local.backfill_idle  # type: ignore[attr-defined]
        with connect(settings) as other:
            slowest = 0.0
            deadline = time.monotonic() + 300
            while not other.status()["vectors"]["ready"]:
                assert time.monotonic() < deadline, "the backfill did not finish"
                started = time.monotonic()
                result = other.search(SearchRequest("duckdb", mode="keyword"))
                slowest = max(slowest, time.monotonic() - started)
                assert result.hits and not any("being built" in w for w in result.warnings)
                idle.wait(0.2)  # the next search, or the end of the work
            assert slowest < 3.0
            hits = other.search(SearchRequest("how do I connect Claude Code", mode="vector")).hits
            assert hits[0].path == "notes/Connecting Claude Code.md"


class CancelAtFirstStep:
    """The progress of a caller that cancels as soon as the work has begun
    (``client.CancelHook``): what a cancelled MCP tool call does to a call it sent."""

    def __init__(self) -> None:
        self._callbacks: list[Callable[[], None]] = []
        self.cancelled = False

    def on_cancel(self, callback: Callable[[], None]) -> None:
        self._callbacks.append(callback)

    def start(self, label: str, total: int) -> None:
        self.cancelled = True
        for callback in self._callbacks:
            callback()

    def advance(self, n: int) -> None:
        pass

    def finish(self) -> None:
        pass


NEW_NOTES = 600  # a sync of these takes far longer than a cancel takes to arrive


@pytest.fixture
def busy_owner(write: WriteNotes, vault_dir: Path) -> Iterator[tuple[Vault, Settings]]:
    """An owner (this process) whose next sync has ``NEW_NOTES`` new files to read."""
    write({"a.md": "apple"})
    settings = Settings.load(vault=vault_dir, index=vault_dir.parent / "index")
    with connect(settings) as owner:
        owner.reindex(vectors=False)
        write({f"notes/n{i}.md": f"# Note {i}\n\nwalrus {i}\n" for i in range(NEW_NOTES)})
        yield owner, settings


def test_cancelling_a_call_stops_its_work_in_the_owner(busy_owner: tuple[Vault, Settings]) -> None:
    """The caller's cancel crosses the socket: the owner's sync stops at its next step
    (nothing of it is written) and the caller gets CallCancelled, not a report."""
    owner, settings = busy_owner
    with connect(settings) as asker:
        assert not asker.host.runs_here
        progress = CancelAtFirstStep()
        with pytest.raises(CallCancelled):
            asker.refresh(progress=progress)
        assert progress.cancelled
        assert owner.pending()["new"] == NEW_NOTES  # the owner stopped before writing any
        assert asker.refresh()  # the connection is still good for the next call
        assert owner.pending()["new"] == 0


def test_a_caller_that_goes_away_stops_its_call_in_the_owner(
    busy_owner: tuple[Vault, Settings],
) -> None:
    """A caller killed mid-call (its connection drops) wants no answer: the owner's
    work stops at its next step, as if cancelled."""
    owner, settings = busy_owner
    with connect(settings) as asker:
        progress = CancelAtFirstStep()
        sock = asker.host._client._sock  # type: ignore[attr-defined]
        progress.on_cancel(lambda: sock.shutdown(socket.SHUT_RDWR))  # as if killed
        with pytest.raises(OwnerLostError):
            asker.refresh(progress=progress)
    assert owner.pending()["new"] == NEW_NOTES
