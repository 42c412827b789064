"""The owner's change feed, end to end: a file written by another program (an editor,
not markvault) reaches MCP clients as resource notifications, in both protocol eras,
over stdio and HTTP, from the server that owns the index and from one that asks it over
the owner's socket. Real `vault mcp` processes, the SDK's real clients, events awaited."""

from __future__ import annotations

import os
import re
import subprocess
import threading
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from anyio.streams.text import TextReceiveStream
from mcp import Client, types
from mcp.client.streamable_http import streamable_http_client
from mcp.client.subscriptions import Subscription
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.subscriptions import ResourcesListChanged, ResourceUpdated

from markvault import Vault
from markvault.config import Settings
from markvault.indexing.change_feed import ChangeFeed, FeedQueue
from markvault.indexing.feed_items import ChangeBatch, FeedItem, NoteChange
from markvault.runtime.shared_host import connect

from .conftest import WriteNotes, stdio_server, vault_argv

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning"),
]

# How long a test waits for an event. The promise (a change heard within 2 s) is
# measured by bench/bench_feed.py; a test that timed it would fail on a loaded machine
# (a server's start loads the model in the background, on the same two cores).
DELIVERY_SECONDS = 20.0
STARTUP_SECONDS = 120.0  # a `vault mcp` process imports the SDK and opens the index

ALPHA = "vault://note/alpha"
# ALPHA_HEARD_AGAIN: `edit_alpha` writes in place, as many editors do (truncate, then
# write). A sync that reads the file between the two indexes a half-written note, and the
# next one the whole note: two real changes, so ALPHA may be heard twice. The helpers
# allow that repeat, and only that, before the changes that follow.
LATER = "vault://note/later"  # a note that does not exist yet


@pytest.fixture
def notes() -> dict[str, str]:
    return {
        "notes/alpha.md": "---\nid: alpha\n---\n# Alpha\n\nquokka\n",
        "notes/other.md": "---\nid: other\n---\n# Other\n\nnumbat\n",
    }


class Inbox:
    """What a handshake-era client hears, in order."""

    def __init__(self) -> None:
        self._send, self._receive = anyio.create_memory_object_stream[Any](1000)

    async def handler(self, message: Any) -> None:
        if not isinstance(message, Exception):
            self._send.send_nowait(message)

    async def next(self, kind: type) -> Any:
        while True:
            message = await self._receive.receive()
            if isinstance(message, kind):
                return message


def edit_alpha(vault_dir: Path) -> None:
    """An edit by another program: a plain write, no markvault involved."""
    path = vault_dir / "notes/alpha.md"
    path.write_text(path.read_text() + "\nA line from an editor.\n", encoding="utf-8")


def add_later(vault_dir: Path) -> None:
    (vault_dir / "notes/later.md").write_text("---\nid: later\n---\n# Later\n", encoding="utf-8")


async def tool(client: Client, name: str, **args: Any) -> Any:
    result = await client.call_tool(name, args)
    assert not result.is_error, result.content
    return result.structured_content


async def current_era_hears(events: Subscription, vault_dir: Path) -> None:
    """A listen stream on ALPHA and LATER hears an edit, then a new note (updated and
    list_changed), each within ``DELIVERY_SECONDS`` of the write."""
    edit_alpha(vault_dir)
    with anyio.fail_after(DELIVERY_SECONDS):
        assert await anext(events) == ResourceUpdated(uri=ALPHA)
    add_later(vault_dir)
    wanted = {ResourceUpdated(uri=LATER), ResourcesListChanged()}
    heard: set[Any] = set()
    with anyio.fail_after(DELIVERY_SECONDS):
        while not wanted <= heard:
            event = await anext(events)
            if event != ResourceUpdated(uri=ALPHA):  # see ALPHA_HEARD_AGAIN
                heard.add(event)
    assert heard == wanted


async def handshake_era_hears(inbox: Inbox, vault_dir: Path) -> None:
    """A client subscribed to ALPHA and LATER hears the same through the handshake era's
    notifications."""
    edit_alpha(vault_dir)
    with anyio.fail_after(DELIVERY_SECONDS):
        told = await inbox.next(types.ResourceUpdatedNotification)
    assert told.params.uri == ALPHA
    add_later(vault_dir)
    with anyio.fail_after(DELIVERY_SECONDS):
        told = await inbox.next(types.ResourceUpdatedNotification)
        while told.params.uri == ALPHA:  # see ALPHA_HEARD_AGAIN
            told = await inbox.next(types.ResourceUpdatedNotification)
        await inbox.next(types.ResourceListChangedNotification)
    assert told.params.uri == LATER


@asynccontextmanager
async def listening(client: Client) -> AsyncIterator[Subscription]:
    async with client.listen(
        resource_subscriptions=[ALPHA, LATER], resources_list_changed=True
    ) as events:
        yield events


async def subscribed(client: Client) -> None:
    for uri in (ALPHA, LATER):
        await client.subscribe_resource(uri)


# -- over stdio, one server that owns the index ------------------------------------------------


async def test_an_editor_write_reaches_a_listening_client(vault: Vault, vault_dir: Path) -> None:
    vault.close()
    with anyio.fail_after(STARTUP_SECONDS):
        async with Client(stdio_server(vault_dir)) as client, listening(client) as events:
            assert (await tool(client, "status"))["owner"]["this_process_owns"]
            await current_era_hears(events, vault_dir)


async def test_an_editor_write_reaches_a_subscribed_handshake_client(
    vault: Vault, vault_dir: Path
) -> None:
    vault.close()
    inbox = Inbox()
    server = stdio_server(vault_dir)
    with anyio.fail_after(STARTUP_SECONDS):
        async with Client(server, mode="legacy", message_handler=inbox.handler) as client:
            await subscribed(client)
            await handshake_era_hears(inbox, vault_dir)
            await client.unsubscribe_resource(ALPHA)
            edit_alpha(vault_dir)  # no longer heard; a write to LATER still is
            (vault_dir / "notes/later.md").write_text("# Later, again\n", encoding="utf-8")
            with anyio.fail_after(DELIVERY_SECONDS):
                told = await inbox.next(types.ResourceUpdatedNotification)
            assert told.params.uri == LATER


# -- two servers, one owner: the second hears the first's feed over the socket -----------------


@pytest.mark.parametrize("era", ["current", "handshake"])
async def test_a_server_that_asks_the_owner_hears_its_changes(
    vault: Vault, vault_dir: Path, era: str
) -> None:
    vault.close()
    inbox = Inbox()
    with anyio.fail_after(STARTUP_SECONDS):
        async with AsyncExitStack() as stack:
            owner = await stack.enter_async_context(Client(stdio_server(vault_dir)))
            assert (await tool(owner, "status"))["owner"]["this_process_owns"]
            options: dict[str, Any] = (
                {"mode": "legacy", "message_handler": inbox.handler} if era == "handshake" else {}
            )
            other = await stack.enter_async_context(Client(stdio_server(vault_dir), **options))
            assert not (await tool(other, "status"))["owner"]["this_process_owns"]
            owner_events = await stack.enter_async_context(listening(owner))
            if era == "current":
                other_events = await stack.enter_async_context(listening(other))
                await current_era_hears(other_events, vault_dir)
            else:
                await subscribed(other)
                await handshake_era_hears(inbox, vault_dir)
            with anyio.fail_after(DELIVERY_SECONDS):  # the owner's own clients heard it too
                assert await anext(owner_events) == ResourceUpdated(uri=ALPHA)
            # A write through the second server runs in the owner and is heard at both.
            await tool(other, "create_note", kind="note", title="From an agent")
            with anyio.fail_after(DELIVERY_SECONDS):
                while await anext(owner_events) != ResourcesListChanged():
                    pass


# -- the feed itself, in one process and across two ------------------------------------------


def test_a_sync_tells_what_it_added_changed_moved_and_removed(
    vault: Vault, vault_dir: Path
) -> None:
    heard: list[FeedItem] = []
    stop = vault.host.watch_changes(heard.append)
    edit_alpha(vault_dir)
    (vault_dir / "notes/other.md").rename(vault_dir / "notes/moved.md")
    add_later(vault_dir)
    vault.reindex(vectors=False)
    stop()
    (batch,) = [item for item in heard if isinstance(item, ChangeBatch)]
    kinds = {(n.kind, n.path, n.id, n.old_path) for n in batch.notes}
    assert kinds == {
        ("changed", "notes/alpha.md", "alpha", None),
        ("moved", "notes/moved.md", "other", "notes/other.md"),
        ("added", "notes/later.md", "later", None),
    }
    (vault_dir / "notes/later.md").unlink()
    heard.clear()
    vault.reindex(vectors=False)
    assert heard == []  # unsubscribed: nothing more


def test_a_rebuild_says_changes_were_lost(vault: Vault) -> None:
    heard: list[FeedItem] = []
    vault.host.watch_changes(heard.append)
    vault.reindex(full=True, vectors=False)
    assert heard == [ChangeBatch(lost="the index was rebuilt")]


def test_a_process_that_asks_the_owner_follows_its_feed(
    write: WriteNotes, vault: Vault, vault_dir: Path
) -> None:
    """A second host (this process, a client of the owner over its socket) hears what
    the owner's syncs publish; unsubscribing and closing leave the owner no follower."""
    vault.close()
    settings = Settings.load(vault=vault_dir, index=vault_dir.parent / "index")
    owner = connect(settings)
    asker = connect(settings)
    try:
        assert owner.host.runs_here and not asker.host.runs_here
        feed: ChangeFeed = owner.host.local.feed  # type: ignore[union-attr]
        heard: list[FeedItem] = []
        got = threading.Event()

        def listener(item: FeedItem) -> None:
            heard.append(item)
            got.set()

        asker.host.watch_changes(listener)
        assert feed.wait_for_listeners(1, 30)  # the asker's follower
        write({"notes/third.md": "---\nid: third\n---\n# Third\n"})
        asker.refresh()  # runs in the owner; its sync publishes
        assert got.wait(10)
        (batch,) = heard
        assert isinstance(batch, ChangeBatch)
        assert [(n.kind, n.id) for n in batch.notes] == [("added", "third")]
    finally:
        asker.close()
        assert feed.wait_for_listeners(0, 30)  # the asker's follower let go
        owner.close()


def test_a_reader_that_falls_behind_gets_one_lost_marker() -> None:
    queue = FeedQueue(limit=3)
    for i in range(5):
        queue.put(ChangeBatch((NoteChange("changed", f"{i}.md"),)))
    # The fourth item found the queue full: it and the three before it are one marker.
    assert queue.get() == ChangeBatch(lost="a reader fell behind the change feed")
    assert queue.get() == ChangeBatch((NoteChange("changed", "4.md"),))
    queue.close()
    assert queue.get() is None


# -- over HTTP: `vault mcp --http`, as a user runs it ------------------------------------------


@asynccontextmanager
async def http_server(vault_dir: Path, token_file: Path) -> AsyncIterator[tuple[str, str]]:
    """`vault mcp --http --port 0` in its own process: (its URL, its bearer token)."""
    env = os.environ | {"MARKVAULT_TOKEN_FILE": str(token_file)}
    argv = vault_argv(vault_dir, "mcp", "--http", "--port", "0")
    async with await anyio.open_process(argv, env=env, stdin=subprocess.DEVNULL) as proc:
        try:
            assert proc.stderr is not None
            announced = ""
            async for chunk in TextReceiveStream(proc.stderr):
                announced += chunk
                if "Clients must send" in announced:
                    break
            found = re.search(r"http://127\.0\.0\.1:\d+/mcp", announced)
            assert found, announced
            # It listens before it announces: the first request waits in the socket's queue.
            yield found.group(0), token_file.read_text().strip()
        finally:
            proc.terminate()


async def test_an_editor_write_reaches_clients_over_http(
    vault: Vault, vault_dir: Path, tmp_path: Path
) -> None:
    vault.close()
    inbox = Inbox()
    with anyio.fail_after(STARTUP_SECONDS):
        async with http_server(vault_dir, tmp_path / "token") as (url, token):
            http = create_mcp_http_client(headers={"Authorization": f"Bearer {token}"})
            legacy_http = create_mcp_http_client(headers={"Authorization": f"Bearer {token}"})
            async with (
                http,
                legacy_http,
                Client(streamable_http_client(url, http_client=http)) as client,
                listening(client) as events,
                Client(
                    streamable_http_client(url, http_client=legacy_http),
                    mode="legacy",
                    message_handler=inbox.handler,
                ) as legacy,
            ):
                await subscribed(legacy)
                await current_era_hears(events, vault_dir)
                # The handshake-era client heard the same writes (already made above).
                with anyio.fail_after(DELIVERY_SECONDS):
                    told = await inbox.next(types.ResourceUpdatedNotification)
                    assert told.params.uri == ALPHA
                    told = await inbox.next(types.ResourceUpdatedNotification)
                    assert told.params.uri == LATER


def test_a_follower_moves_to_the_next_owner_and_says_what_it_missed(
    write: WriteNotes, vault: Vault, vault_dir: Path
) -> None:
    vault.close()
    settings = Settings.load(vault=vault_dir, index=vault_dir.parent / "index")
    first = connect(settings)
    asker = connect(settings)
    heard: list[FeedItem] = []
    got = threading.Condition()

    def listener(item: FeedItem) -> None:
        with got:
            heard.append(item)
            got.notify_all()

    try:
        asker.host.watch_changes(listener)
        feed: ChangeFeed = first.host.local.feed  # type: ignore[union-attr]
        assert feed.wait_for_listeners(1, 30)
        first.close()  # the owner goes; the next process to open the vault owns it
        with connect(settings) as second:
            assert second.host.runs_here
            with got:  # the follower found the new owner: changes may have been missed
                assert got.wait_for(lambda: len(heard) == 1, 30)
            assert heard == [ChangeBatch(lost="the index changed owners")]
            write({"notes/fourth.md": "---\nid: fourth\n---\n# Fourth\n"})
            second.refresh()
            with got:
                assert got.wait_for(lambda: len(heard) == 2, 30)
            assert isinstance(heard[1], ChangeBatch)
            assert [(n.kind, n.id) for n in heard[1].notes] == [("added", "fourth")]
    finally:
        asker.close()


def test_a_failing_listener_stops_neither_the_others_nor_the_sender(
    caplog: pytest.LogCaptureFixture,
) -> None:
    feed = ChangeFeed()
    heard: list[FeedItem] = []

    def broken(item: FeedItem) -> None:
        raise RuntimeError("a listener's own bug")

    feed.subscribe(broken)
    feed.subscribe(heard.append)
    feed.lost("the index was rebuilt")
    assert heard == [ChangeBatch(lost="the index was rebuilt")]
    assert "a change feed listener failed" in caplog.text
