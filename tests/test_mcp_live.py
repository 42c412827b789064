"""The live server through the SDK's real client, in both protocol eras: subscriptions
fed by the process's change bus, log levels and log lines, progress and cancellation,
and completions. In memory (handshake era: mode="legacy"; current era: the default) and
over stdio."""

from __future__ import annotations

import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import pytest
from mcp import Client, types
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.subscriptions import InMemorySubscriptionBus
from mcp.shared.subscriptions import ResourcesListChanged, ResourceUpdated

from markvault import Vault
from markvault.config import Settings
from markvault.runtime.local_host import open_local
from markvault.runtime.shared_host import connect
from markvault.server.live import LiveServer, NoteChange, affected
from markvault.server.tool_call import CallCancelled, ToolCall
from markvault.server.tools import build_server

from .conftest import REPO, WriteNotes, stdio_server

pytestmark = [
    pytest.mark.anyio,
    # The handshake era's methods are deprecated at the current one; serving them is the point.
    pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning"),
]
TRANSCRIPTS = REPO / "tests" / "fixtures" / "claude"
# Completions list newest first within a rank: dated, or the files' mtimes (written in
# the same second, or not) would decide which "alp" comes first.
NOTES = {
    "notes/alpha.md": (
        "---\nid: alpha\ntitle: Alpha quokka\nupdated: 2026-01-02\n---\n# Alpha quokka\n\nText.\n"
    ),
    "notes/alpine.md": (
        "---\nid: alpine-lakes\nupdated: 2026-01-01\n---\n# Alpine lakes\n\nText.\n"
    ),
    "notes/other.md": "---\nid: other\n---\n# Notes on the alps\n\nText.\n",
    "knowledge/zoology/q.md": "---\nid: q1\ntopic: zoology\nkind: knowledge\n---\n# Q\n",
    "knowledge/zoo-ops/z.md": "---\nid: z1\ntopic: zoo-ops\nkind: knowledge\n---\n# Z\n",
}


@pytest.fixture
def notes() -> dict[str, str]:
    return NOTES


class Inbox:
    """The notifications a client hears, in order."""

    def __init__(self) -> None:
        self._send, self._receive = anyio.create_memory_object_stream[Any](1000)
        self.logs: list[types.LoggingMessageNotificationParams] = []

    async def handler(self, message: Any) -> None:
        if not isinstance(message, Exception):
            self._send.send_nowait(message)

    async def on_log(self, params: types.LoggingMessageNotificationParams) -> None:
        self.logs.append(params)

    async def next(self, kind: type, skip: tuple[type, ...] = ()) -> Any:
        with anyio.fail_after(10):
            while True:
                message = await self._receive.receive()
                if isinstance(message, kind):
                    return message
                assert isinstance(message, skip), f"expected {kind.__name__}, got {message!r}"


@asynccontextmanager
async def handshake(vault: Vault, inbox: Inbox) -> AsyncIterator[tuple[Client, LiveServer]]:
    live = LiveServer(InMemorySubscriptionBus())
    server = build_server(vault, live)
    client = Client(
        server, mode="legacy", message_handler=inbox.handler, logging_callback=inbox.on_log
    )
    async with client:
        yield client, live


def changed(note_id: str, path: str, kind: str = "changed", **more: Any) -> NoteChange:
    return NoteChange(kind, path, id=note_id, **more)  # type: ignore[arg-type]


# -- subscriptions -------------------------------------------------------------------------


async def test_handshake_era_declares_subscribe_list_changed_logging_completions(
    vault: Vault,
) -> None:
    async with handshake(vault, Inbox()) as (client, _):
        caps = client.server_capabilities
    assert caps.resources is not None
    assert caps.resources.subscribe is True and caps.resources.list_changed is True
    assert caps.logging is not None and caps.completions is not None


async def test_handshake_subscription_hears_its_note_until_unsubscribed(vault: Vault) -> None:
    inbox = Inbox()
    async with handshake(vault, inbox) as (client, live):
        await client.subscribe_resource("vault://note/alpha")
        await client.subscribe_resource("vault://note/not-yet")  # a note still to come
        await client.subscribe_resource("knowledge://zoology")
        await live.deliver([changed("other", "notes/other.md")])  # not subscribed
        await live.deliver([changed("alpha", "notes/alpha.md")])
        first = await inbox.next(types.ResourceUpdatedNotification)
        assert first.params.uri == "vault://note/alpha"  # nothing came for "other"

        await live.deliver([changed("not-yet", "notes/not-yet.md", "added")])
        born = await inbox.next(types.ResourceUpdatedNotification)
        assert born.params.uri == "vault://note/not-yet"
        await inbox.next(types.ResourceListChangedNotification)

        await live.deliver([changed("q1", "knowledge/zoology/q.md", topic="zoology")])
        topic = await inbox.next(types.ResourceUpdatedNotification)
        assert topic.params.uri == "knowledge://zoology"

        await client.unsubscribe_resource("vault://note/alpha")
        await live.deliver([changed("alpha", "notes/alpha.md")])  # unsubscribed: silence
        await live.deliver([changed("not-yet", "notes/not-yet.md")])
        after = await inbox.next(types.ResourceUpdatedNotification)
        assert after.params.uri == "vault://note/not-yet"


async def test_moves_and_removals_tell_old_and_new_names(vault: Vault) -> None:
    inbox = Inbox()
    async with handshake(vault, inbox) as (client, live):
        # Subscribed by path, spelled with an escape: matched by what it names.
        await client.subscribe_resource("vault://note/notes/Old%20name.md")
        move = NoteChange(
            "moved", "notes/New name.md", id="n1", old_path="notes/Old name.md", old_id="n1"
        )
        await live.deliver([move])
        told = await inbox.next(types.ResourceUpdatedNotification)
        assert told.params.uri == "vault://note/notes/Old%20name.md"  # as subscribed
        await inbox.next(types.ResourceListChangedNotification)


def test_a_changed_id_changes_the_list_an_edit_does_not() -> None:
    uris, listed = affected([changed("new-id", "notes/a.md", old_id="old-id")])
    assert listed and {"vault://note/new-id", "vault://note/old-id"} <= uris
    assert affected([changed("a", "notes/a.md", old_id="a")])[1] is False


async def test_a_closed_session_leaves_nothing_behind(vault: Vault) -> None:
    inbox = Inbox()
    async with handshake(vault, inbox) as (client, live):
        await client.subscribe_resource("vault://note/alpha")
        assert live.peers == 1
    assert live.peers == 0


async def test_changes_published_from_other_threads_arrive(vault: Vault) -> None:
    inbox = Inbox()
    async with handshake(vault, inbox) as (client, live):
        await client.subscribe_resource("vault://note/alpha")
        thread = threading.Thread(target=live.publish, args=([changed("alpha", "a.md")],))
        thread.start()
        told = await inbox.next(types.ResourceUpdatedNotification)
        thread.join()
        assert told.params.uri == "vault://note/alpha"


async def test_current_era_listen_hears_notes_and_list_changes(vault: Vault) -> None:
    live = LiveServer(InMemorySubscriptionBus())
    with anyio.fail_after(30):
        async with Client(build_server(vault, live)) as client:
            caps = client.server_capabilities
            assert caps.resources is not None and caps.resources.subscribe is True
            async with client.listen(
                resource_subscriptions=["vault://note/alpha", "vault://note/not-yet"],
                resources_list_changed=True,
            ) as events:
                await live.deliver([changed("other", "notes/other.md")])
                await live.deliver([changed("alpha", "notes/alpha.md")])
                assert await anext(events) == ResourceUpdated(uri="vault://note/alpha")
                await live.deliver([changed("not-yet", "notes/not-yet.md", "added")])
                assert await anext(events) == ResourceUpdated(uri="vault://note/not-yet")
                assert await anext(events) == ResourcesListChanged()


# -- logging ----------------------------------------------------------------------------------


async def test_set_level_decides_what_a_handshake_client_hears(vault: Vault) -> None:
    inbox = Inbox()
    async with handshake(vault, inbox) as (client, live):
        assert (await client.set_logging_level("error")).model_dump(exclude_none=True) == {}
        await live.broadcast_log("warning", "skipped notes/x.md: not UTF-8")
        await live.broadcast_log("error", "cannot read notes/y.md: permission denied")
        heard = await inbox.next(types.LoggingMessageNotification)
        assert heard.params.level == "error" and "notes/y.md" in heard.params.data
        assert heard.params.logger == "markvault"


async def test_a_refused_change_is_logged_for_the_user(vault: Vault) -> None:
    inbox = Inbox()
    async with handshake(vault, inbox) as (client, _):
        result = await client.call_tool(
            "edit_note", {"ref": "alpha", "hash": "0" * 16, "op": "append", "text": "x"}
        )
        assert result.is_error
        heard = await inbox.next(types.LoggingMessageNotification)
    assert heard.params.level == "warning" and "edit_note refused" in heard.params.data
    assert "Text." not in heard.params.data  # paths and reasons, never a note's text


async def test_a_sync_conflict_and_a_skipped_file_are_logged_for_the_user(
    vault: Vault, vault_dir: Path
) -> None:
    """The owner's news (feed.OwnerEvent) reaches a handshake-era client as log lines:
    paths and reasons, never the notes' text."""
    inbox = Inbox()
    async with handshake(vault, inbox) as (client, _):
        await client.set_logging_level("warning")
        (vault_dir / "notes/alpha.md").write_text(
            "# Alpha\n\n<<<<<<< HEAD\nmine secret-ish text\n=======\ntheirs\n>>>>>>> origin\n",
            encoding="utf-8",
        )
        (vault_dir / "notes/bad.md").write_bytes(b"# Bad\n\xff\xfe not UTF-8\n")
        await anyio.to_thread.run_sync(vault.refresh)  # as the owner's watcher would
        notes_changed = (types.ResourceListChangedNotification,)  # alpha's id changed
        heard = [await inbox.next(types.LoggingMessageNotification, notes_changed) for _ in "12"]
    by_path = {("alpha" if "alpha" in h.params.data else "bad"): h.params for h in heard}
    assert by_path["alpha"].level == "warning" and "conflict" in by_path["alpha"].data
    assert "notes/bad.md" in by_path["bad"].data
    assert all("secret-ish" not in h.params.data for h in heard)


@pytest.mark.parametrize("era", ["handshake", "current"])
async def test_import_logs_and_reports_progress(
    vault: Vault, monkeypatch: pytest.MonkeyPatch, era: str
) -> None:
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(TRANSCRIPTS))
    inbox = Inbox()
    seen: list[tuple[float, float | None, str | None]] = []

    async def progress(value: float, total: float | None, message: str | None) -> None:
        seen.append((value, total, message))

    # Handshake era: logging/setLevel. Current era: the request's own log-level opt-in.
    options: dict[str, Any] = {"mode": "legacy"} if era == "handshake" else {"log_level": "info"}
    client = Client(build_server(vault), logging_callback=inbox.on_log, **options)
    with anyio.fail_after(60):
        async with client:
            if era == "handshake":
                await client.set_logging_level("info")
            result = await client.call_tool("import_sessions", {}, progress_callback=progress)
    assert not result.is_error, result.content
    data = result.structured_content or {}
    assert data["new"] == 1 and data["sessions"][0]["action"] == "new"
    assert any("unreadable transcript lines skipped" in str(log.data) for log in inbox.logs)
    values = [v for v, _, _ in seen]
    assert values and values == sorted(set(values))  # progress only increases
    assert any(m and m.startswith("Importing sessions") for _, _, m in seen)


async def test_current_era_logs_only_what_the_request_opted_in_to(
    vault: Vault, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(TRANSCRIPTS))
    inbox = Inbox()
    with anyio.fail_after(60):
        async with Client(build_server(vault), logging_callback=inbox.on_log) as client:
            result = await client.call_tool("import_sessions", {})
    assert not result.is_error and inbox.logs == []


# -- progress heartbeats and cancellation ---------------------------------------------------


def _slow_tool(server: MCPServer, release: threading.Event, stopped: threading.Event) -> None:
    """A tool whose work waits for the test (no sleeps): beats, then stops on cancel."""

    never = threading.Event()

    @server.tool()
    async def slow(ctx: Context) -> str:
        def work(call: ToolCall) -> str:
            try:
                release.wait(30)  # until the test heard a heartbeat
                call.start("Working", 1000)
                for _ in range(1000):
                    never.wait(0.05)  # a step of real work takes a while
                    call.advance(1)
                return "done"
            except CallCancelled:
                stopped.set()
                raise

        return await ToolCall(ctx, None, "slow").run(work)


async def test_a_long_call_beats_and_stops_when_cancelled(vault: Vault) -> None:
    server = build_server(vault)
    release, stopped = threading.Event(), threading.Event()
    _slow_tool(server, release, stopped)
    beats: list[str | None] = []
    heard = anyio.Event()

    async def progress(value: float, total: float | None, message: str | None) -> None:
        beats.append(message)
        release.set()
        if total is not None:
            heard.set()  # the stage began: cancel now

    with anyio.fail_after(60):
        async with Client(server, mode="legacy") as client:
            async with anyio.create_task_group() as tasks:

                async def call() -> None:
                    await client.call_tool("slow", {}, progress_callback=progress)

                tasks.start_soon(call)
                await heard.wait()
                tasks.cancel_scope.cancel()
            assert await anyio.to_thread.run_sync(stopped.wait, 30)
    assert beats[0] == "slow: 1 s"  # the heartbeat before any stage
    assert any(b and b.startswith("Working: ") for b in beats)


async def test_cancelling_a_tool_call_stops_its_work_in_the_owner(
    write: WriteNotes, vault_dir: Path
) -> None:
    """A server that asks the index owner (another host over the socket) passes the
    client's cancel on: the owner's sync stops at its next step and writes nothing."""
    write(NOTES)
    settings = Settings.load(vault=vault_dir, index=vault_dir.parent / "index")
    with connect(settings) as owner:
        owner.reindex(vectors=False)
        write({f"notes/n{i}.md": f"# Note {i}\n\nwalrus {i}\n" for i in range(2000)})
        asker = connect(settings)  # closed by the server's lifespan
        assert not asker.host.runs_here
        server = build_server(asker)
        stopped = threading.Event()

        @server.tool()
        async def refresh(ctx: Context) -> str:
            def work(call: ToolCall) -> str:
                try:
                    asker.refresh(progress=call)
                except CallCancelled:
                    stopped.set()  # the owner's answer: it stopped
                    raise
                return "done"

            return await ToolCall(ctx, None, "refresh").run(work)

        heard = anyio.Event()

        async def progress(value: float, total: float | None, message: str | None) -> None:
            if total is not None:
                heard.set()  # the owner began reading: cancel now

        with anyio.fail_after(120):
            async with Client(server) as client:
                async with anyio.create_task_group() as tasks:

                    async def call() -> None:
                        await client.call_tool("refresh", {}, progress_callback=progress)

                    tasks.start_soon(call)
                    await heard.wait()
                    tasks.cancel_scope.cancel()
                assert await anyio.to_thread.run_sync(stopped.wait, 60)
        assert owner.pending()["new"] == 2000  # nothing of the cancelled sync was written


# -- completions ---------------------------------------------------------------------------


async def complete(client: Client, ref: Any, name: str, value: str) -> types.Completion:
    return (await client.complete(ref, {"name": name, "value": value})).completion


NOTE_TEMPLATE = types.ResourceTemplateReference(uri="vault://note/{note_id}")


async def test_completions_in_memory(vault: Vault) -> None:
    with anyio.fail_after(30):
        async with Client(build_server(vault)) as client:
            assert client.server_capabilities.completions is not None
            by_id = await complete(client, NOTE_TEMPLATE, "note_id", "alp")
            # ids first, then titles that start so, then a title word ("Notes on the alps")
            assert by_id.values == ["alpha", "alpine-lakes", "other"]
            assert by_id.total == 3 and by_id.has_more is False
            by_title = await complete(client, NOTE_TEMPLATE, "note_id", "Alpine")
            assert by_title.values == ["alpine-lakes"]
            word = await complete(client, NOTE_TEMPLATE, "note_id", "ALPS")
            assert word.values == ["other"]  # a title word's start, any case
            everything = await complete(client, NOTE_TEMPLATE, "note_id", "")
            assert len(everything.values) == everything.total == 5
            # A new note is offered at once (the names are read again after a write).
            made = await client.call_tool("create_note", {"kind": "note", "title": "Alpaca farm"})
            new_id = (made.structured_content or {})["id"]
            assert (await complete(client, NOTE_TEMPLATE, "note_id", "alpa")).values == [new_id]
            topic = types.ResourceTemplateReference(uri="knowledge://{topic}")
            assert (await complete(client, topic, "topic", "zoo")).values == [
                "zoo-ops",
                "zoology",
            ]
            review = types.PromptReference(name="review_topic")
            assert (await complete(client, review, "topic", "zool")).values == ["zoology"]
            # Unknown prompts, templates and arguments: an empty list, not an error.
            for ref, name in (
                (types.PromptReference(name="no_such_prompt"), "topic"),
                (types.ResourceTemplateReference(uri="other://{x}"), "x"),
                (types.PromptReference(name="recall"), "task"),
            ):
                assert (await complete(client, ref, name, "a")).values == []


async def test_session_and_project_completions(
    vault: Vault, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(TRANSCRIPTS))
    vault.import_sessions()
    with anyio.fail_after(30):
        async with Client(build_server(vault)) as client:
            summarize = types.PromptReference(name="summarize_session")
            session = await complete(client, summarize, "session", "5f0c")
            assert session.values == ["5f0c2a9e"]  # the short id read_session takes
            recall = types.PromptReference(name="recall")
            project = await complete(client, recall, "project", "shop")
            assert project.values == ["shop-app"]


async def test_completions_over_stdio(vault: Vault, vault_dir: Path) -> None:
    vault.close()
    with anyio.fail_after(120):
        async with Client(stdio_server(vault_dir)) as client:
            found = await complete(client, NOTE_TEMPLATE, "note_id", "alp")
            assert found.values[:2] == ["alpha", "alpine-lakes"]


async def test_subscribe_and_set_level_over_stdio(vault: Vault, vault_dir: Path) -> None:
    vault.close()
    with anyio.fail_after(120):
        async with Client(stdio_server(vault_dir), mode="legacy") as client:
            caps = client.server_capabilities
            assert caps.resources is not None and caps.resources.list_changed is True
            await client.subscribe_resource("vault://note/alpha")
            await client.unsubscribe_resource("vault://note/alpha")
            await client.set_logging_level("debug")


def test_session_ids_are_cut_to_8_unless_ambiguous(write: WriteNotes, vault_dir: Path) -> None:
    def session(sid: str, title: str) -> str:
        return f"---\nkind: session\nsession_id: {sid}\ntitle: {title}\n---\n# {title}\n"

    write(
        {
            "sessions/p/one.md": session("abcdef12-1111-4000-8000-000000000001", "Rounding fix"),
            "sessions/p/two.md": session("abcdef12-2222-4000-8000-000000000002", "Checkout"),
            "sessions/p/three.md": session("abcdef99-3333-4000-8000-000000000003", "Deploy"),
        }
    )
    v = open_local(vault_dir, vault_dir.parent / "index")
    try:
        v.reindex(vectors=False)
        found = v.complete("session", "ABCDEF", 100)
        assert sorted(found["values"]) == [
            "abcdef12-1111-4000-8000-000000000001",
            "abcdef12-2222-4000-8000-000000000002",
            "abcdef99",
        ]
        assert v.complete("session", "roun", 100)["values"] == [
            "abcdef12-1111-4000-8000-000000000001"
        ]
    finally:
        v.close()


async def test_current_era_listen_is_acknowledged_over_stdio(vault: Vault, vault_dir: Path) -> None:
    vault.close()
    with anyio.fail_after(120):
        async with (
            Client(stdio_server(vault_dir)) as client,
            client.listen(
                resource_subscriptions=["vault://note/alpha"], resources_list_changed=True
            ) as events,
        ):
            assert events.honored.resource_subscriptions == ["vault://note/alpha"]
            assert events.honored.resources_list_changed is True
