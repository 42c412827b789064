"""The MCP server over streamable HTTP: a real uvicorn server on a loopback port, the SDK's
real HTTP client, and raw requests for each refusal (421, 403, 401, 413, 429)."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp import Client, types
from mcp.client.streamable_http import streamable_http_client
from mcp.server.subscriptions import InMemorySubscriptionBus
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.subscriptions import ResourceUpdated

from markvault.errors import ConfigError, UsageError
from markvault.http_settings import HttpOptions
from markvault.runtime.local_host import open_local
from markvault.server.http import (
    TokenBucket,
    allowed_hosts,
    bind_socket,
    build_http_app,
    check_bind,
    count_write_calls,
    load_or_create_token,
    origin_allowed,
    rotate_token,
    token_path,
    uvicorn_server,
    write_tools_of,
)
from markvault.server.live import LiveServer, NoteChange
from markvault.server.tools import WRITE_TOOLS, build_server

TRANSCRIPTS = Path(__file__).parent / "fixtures" / "claude"
MAX_BODY = 64 * 1024
WRITE_RATE = 2
NOTE = "---\nid: a\n---\n# Alpha\n\n## Open items\n\n- quokka census\n"


@dataclass
class Running:
    port: int
    token: str
    live: LiveServer

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"

    def headers(self, **extra: str) -> dict[str, str]:
        base = {
            "Authorization": f"Bearer {self.token}",
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
        }
        return base | {k.replace("_", "-"): v for k, v in extra.items()}

    def post(self, body: Any, headers: dict[str, str] | None = None) -> httpx2.Response:
        return httpx2.post(
            self.url, content=json.dumps(body), headers=headers or self.headers(), timeout=30
        )

    def session(self) -> dict[str, str]:
        """Initialize a handshake-era session; the headers every later request sends."""
        reply = self.post(INITIALIZE)
        assert reply.status_code == 200, reply.text
        headers = self.headers(
            mcp_session_id=reply.headers["mcp-session-id"],
            mcp_protocol_version=HANDSHAKE_VERSION,
        )
        initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        assert self.post(initialized, headers).status_code == 202
        return headers


HANDSHAKE_VERSION = "2025-11-25"
MODERN_VERSION = "2026-07-28"
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 0,
    "method": "initialize",
    "params": {
        "protocolVersion": HANDSHAKE_VERSION,
        "capabilities": {},
        "clientInfo": {"name": "raw-http-test", "version": "0"},
    },
}


def call(name: str, arguments: dict[str, Any], request_id: int = 1) -> dict[str, Any]:
    params = {"name": name, "arguments": arguments}
    return {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}


def modern(body: dict[str, Any]) -> dict[str, Any]:
    """``body`` as a current-era (2026-07-28) request: it carries its own envelope."""
    envelope = {
        "io.modelcontextprotocol/protocolVersion": MODERN_VERSION,
        "io.modelcontextprotocol/clientCapabilities": {},
    }
    return body | {"params": body["params"] | {"_meta": envelope}}


@contextmanager
def serving(root: Path, write_rate: int) -> Iterator[Running]:
    """A server on a loopback port (its lifespan loads the model in the background)."""
    (root / "vault" / "notes").mkdir(parents=True)
    (root / "vault" / "notes" / "a.md").write_text(NOTE, encoding="utf-8")
    vault = open_local(root / "vault", root / "index")
    vault.reindex(vectors=False)
    token = load_or_create_token(root / "config" / "http-token")
    sock = bind_socket("127.0.0.1", 0)
    port = sock.getsockname()[1]
    live = LiveServer(InMemorySubscriptionBus())
    options = HttpOptions(port=port, max_body=MAX_BODY, write_rate=write_rate)
    app = build_http_app(build_server(vault, live), token=token, options=options)
    server = uvicorn_server(app)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    # The socket listens already: this first request waits in its queue until the server
    # answers (401: no token), whenever it has started.
    first = httpx2.post(f"http://127.0.0.1:{port}/mcp", content=b"{}", timeout=60)
    assert first.status_code == 401 and server.started
    yield Running(port, token, live)
    server.should_exit = True
    thread.join(30)
    sock.close()


@pytest.fixture(scope="module")
def running(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Running]:
    """One server for the module's refusal checks (a low write rate, to see the 429)."""
    with serving(tmp_path_factory.mktemp("http"), WRITE_RATE) as server:
        yield server


@pytest.fixture(scope="module")
def live_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Running]:
    """A server for subscriptions, progress and log lines (writes not limited away)."""
    with serving(tmp_path_factory.mktemp("http-live"), 60) as server:
        yield server


# -- through the SDK's real client -----------------------------------------------------------


def test_sdk_client_lists_tools_and_searches(running: Running) -> None:
    async def go() -> tuple[set[str], str]:
        http = create_mcp_http_client(headers={"Authorization": f"Bearer {running.token}"})
        transport = streamable_http_client(running.url, http_client=http)
        with anyio.fail_after(60):
            async with http, Client(transport) as client:
                tools = {t.name for t in (await client.list_tools()).tools}
                found = await client.call_tool("search", {"query": "quokka", "mode": "keyword"})
                return tools, found.content[0].text  # type: ignore[union-attr]

    tools, text = anyio.run(go)
    assert {"search", "get", "status", "create_note", "edit_note"} <= tools
    assert "notes/a.md" in text and "vault://note/a" in text


@pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning")
def test_handshake_client_hears_its_subscription_and_progress_over_http(
    live_server: Running, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Over HTTP the handshake era's notifications ride the session's GET stream."""
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(TRANSCRIPTS))
    heard: list[Any] = []
    got_update = anyio.Event()
    progress: list[float] = []
    logs: list[str] = []

    async def on_message(message: Any) -> None:
        heard.append(message)
        if isinstance(message, types.ResourceUpdatedNotification):
            got_update.set()

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append(value)

    async def on_log(params: types.LoggingMessageNotificationParams) -> None:
        logs.append(str(params.data))

    async def go() -> None:
        http = create_mcp_http_client(headers={"Authorization": f"Bearer {live_server.token}"})
        transport = streamable_http_client(live_server.url, http_client=http)
        client = Client(
            transport, mode="legacy", message_handler=on_message, logging_callback=on_log
        )
        with anyio.fail_after(60):
            async with http, client:
                await client.subscribe_resource("vault://note/a")
                await anyio.to_thread.run_sync(  # another thread, as the owner's feed will
                    live_server.live.publish, [NoteChange("changed", "notes/a.md", id="a")]
                )
                await got_update.wait()
                await client.set_logging_level("info")
                result = await client.call_tool(
                    "import_sessions", {}, progress_callback=on_progress
                )
                assert not result.is_error, result.content

    anyio.run(go)
    updates = [m for m in heard if isinstance(m, types.ResourceUpdatedNotification)]
    assert updates[0].params.uri == "vault://note/a"
    assert progress and progress == sorted(set(progress))
    assert any("unreadable transcript lines skipped" in line for line in logs)


def test_current_era_client_listens_over_http(live_server: Running) -> None:
    async def go() -> Any:
        http = create_mcp_http_client(headers={"Authorization": f"Bearer {live_server.token}"})
        transport = streamable_http_client(live_server.url, http_client=http)
        with anyio.fail_after(60):
            async with (
                http,
                Client(transport) as client,
                client.listen(resource_subscriptions=["vault://note/a"]) as events,
            ):
                await anyio.to_thread.run_sync(
                    live_server.live.publish, [NoteChange("changed", "notes/a.md", id="a")]
                )
                return await anext(events)

    assert anyio.run(go) == ResourceUpdated(uri="vault://note/a")


def test_current_era_call_reports_progress_and_logs_over_http(
    live_server: Running, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A current-era request's progress and opted-in log lines ride its own answer, an
    SSE stream (a JSON body has room for the result only)."""
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(TRANSCRIPTS))
    progress: list[tuple[float, str | None]] = []
    logs: list[str] = []

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append((value, message))

    async def on_log(params: types.LoggingMessageNotificationParams) -> None:
        logs.append(str(params.data))

    async def go() -> None:
        http = create_mcp_http_client(headers={"Authorization": f"Bearer {live_server.token}"})
        transport = streamable_http_client(live_server.url, http_client=http)
        client = Client(transport, logging_callback=on_log, log_level="info")
        with anyio.fail_after(60):
            async with http, client:
                result = await client.call_tool(
                    "import_sessions", {}, progress_callback=on_progress
                )
                assert not result.is_error, result.content
                stale = {"ref": "a", "hash": "0" * 16, "op": "append", "text": "x"}
                assert (await client.call_tool("edit_note", stale)).is_error

    anyio.run(go)
    values = [v for v, _ in progress]
    assert values and values == sorted(set(values))
    assert any(m and m.startswith("Importing sessions") for _, m in progress)
    assert any("edit_note refused" in line for line in logs)


def test_current_era_answer_without_notifications_is_json(running: Running) -> None:
    headers = running.headers(
        mcp_protocol_version=MODERN_VERSION, mcp_method="tools/call", mcp_name="status"
    )
    reply = running.post(modern(call("status", {})), headers)
    assert reply.status_code == 200, reply.text
    assert reply.headers["content-type"].startswith("application/json")
    # A current-era client must take an SSE answer too; one that cannot is told so.
    refused = running.post(modern(call("status", {})), headers | {"Accept": "application/json"})
    assert refused.status_code == 406
    assert "text/event-stream" in refused.json()["error"]["message"]


def test_sdk_client_without_token_is_told_why(running: Running) -> None:
    async def go() -> None:
        with anyio.fail_after(60):
            async with Client(running.url) as client:
                await client.list_tools()

    with pytest.raises(Exception) as caught:
        anyio.run(go)
    assert "Missing bearer token" in repr(caught.value)  # the client shows our message


# -- raw HTTP: the refusals -----------------------------------------------------------------


def test_tools_call_in_a_session_is_answered_with_json(running: Running) -> None:
    headers = running.session()
    reply = running.post(call("search", {"query": "quokka", "mode": "keyword"}), headers)
    assert reply.status_code == 200, reply.text
    assert reply.headers["content-type"].startswith("application/json")
    assert "notes/a.md" in reply.json()["result"]["content"][0]["text"]


def test_current_protocol_needs_no_session(running: Running) -> None:
    headers = running.headers(
        mcp_protocol_version=MODERN_VERSION, mcp_method="tools/call", mcp_name="search"
    )
    reply = running.post(modern(call("search", {"query": "quokka", "mode": "keyword"})), headers)
    assert reply.status_code == 200, reply.text
    assert "mcp-session-id" not in reply.headers
    assert "notes/a.md" in reply.json()["result"]["content"][0]["text"]


def test_handshake_call_without_a_session_is_told_to_initialize(running: Running) -> None:
    reply = running.post(call("search", {"query": "quokka", "mode": "keyword"}))
    assert reply.status_code == 400
    assert "session" in reply.json()["error"]["message"].lower()


def test_bad_host_is_421_even_before_auth(running: Running) -> None:
    body = call("status", {})
    for headers in (
        running.headers(Host=f"evil.example:{running.port}"),
        running.headers(Host="127.0.0.1:1"),  # right name, wrong port
        {"Host": f"evil.example:{running.port}", "Content-Type": "application/json"},
    ):
        assert running.post(body, headers).status_code == 421
    session = running.session()
    assert running.post(body, session | {"Host": f"localhost:{running.port}"}).status_code == 200


def test_bad_origin_is_403(running: Running) -> None:
    body = call("status", {})
    for origin in ("http://evil.example", "null", f"http://localhost.evil.example:{running.port}"):
        assert running.post(body, running.headers(Origin=origin)).status_code == 403, origin
    session = running.session()
    for origin in ("http://localhost:5173", "http://127.0.0.1", "https://[::1]:8443"):
        assert running.post(body, session | {"Origin": origin}).status_code == 200, origin


def test_missing_or_wrong_token_is_401(running: Running) -> None:
    body = call("status", {})
    no_token = {"Content-Type": "application/json", "Accept": "application/json"}
    for headers, says in (
        (no_token, "Missing bearer token"),
        (running.headers(Authorization="Bearer " + "x" * 43), "Wrong bearer token"),
        (running.headers(Authorization=f"Basic {running.token}"), "Wrong bearer token"),
    ):
        reply = running.post(body, headers)
        assert reply.status_code == 401
        assert reply.headers["www-authenticate"].startswith("Bearer")
        assert says in reply.json()["error"]["message"]
        assert running.token not in reply.text


def test_oversized_body_is_413(running: Running) -> None:
    huge = call("search", {"query": "q" * (MAX_BODY + 1)})
    assert running.post(huge).status_code == 413
    data = json.dumps(huge).encode()

    def chunks() -> Iterator[bytes]:  # no Content-Length: the stream itself is counted
        for i in range(0, len(data), 8192):
            yield data[i : i + 8192]

    reply = httpx2.post(running.url, content=chunks(), headers=running.headers(), timeout=30)
    assert reply.status_code == 413


def test_write_tools_are_rate_limited(running: Running) -> None:
    headers = running.session()

    def create(i: int) -> httpx2.Response:
        arguments = {"kind": "note", "title": f"Rate {i}"}
        return running.post(call("create_note", arguments, i), headers)

    replies = [create(i) for i in range(1, WRITE_RATE + 2)]
    assert [r.status_code for r in replies[:WRITE_RATE]] == [200] * WRITE_RATE
    limited = replies[-1]
    assert limited.status_code == 429
    assert int(limited.headers["retry-after"]) >= 1
    error = limited.json()
    assert error["id"] == WRITE_RATE + 1 and "Too many write calls" in error["error"]["message"]
    # reads are never limited
    read = call("search", {"query": "quokka", "mode": "keyword"})
    assert running.post(read, headers).status_code == 200


def test_write_tools_are_found_from_the_servers_annotations(open_vault: Any) -> None:
    server = build_server(open_vault())
    found = anyio.run(write_tools_of(server))
    names = {t.name for t in anyio.run(server.list_tools)}
    assert {"create_note", "edit_note"} <= found
    assert not {"search", "get", "status"} & found
    assert WRITE_TOOLS & names <= found  # no known write tool is marked read-only


# -- binding ----------------------------------------------------------------------------------


def test_non_loopback_bind_needs_allow_remote(open_vault: Any) -> None:
    server = build_server(open_vault())
    for host in ("0.0.0.0", "192.168.1.10", "::", "example.com"):
        with pytest.raises(UsageError, match="allow-remote"):
            build_http_app(server, token="t" * 43, options=HttpOptions(host))
    for host in ("127.0.0.1", "localhost", "::1", "127.0.0.2"):
        check_bind(host, allow_remote=False)
    build_http_app(server, token="t" * 43, options=HttpOptions("0.0.0.0", allow_remote=True))


def test_serve_http_listens_on_loopback_and_never_prints_the_token(
    tmp_path: Path, vault_dir: Path
) -> None:
    (vault_dir / "notes").mkdir()
    (vault_dir / "notes" / "a.md").write_text(NOTE, encoding="utf-8")
    token_file = tmp_path / "cfg" / "token"
    script = (
        "import sys; from markvault.runtime.local_host import open_local;"
        "from markvault.server.tools import build_server;"
        "from markvault.server.http import serve_http;"
        "from markvault.http_settings import HttpOptions;"
        "v = open_local(sys.argv[1], sys.argv[2]); v.reindex(vectors=False);"
        "serve_http(build_server(v), HttpOptions(port=0))"
    )
    env = os.environ | {"MARKVAULT_TOKEN_FILE": str(token_file)}
    proc = subprocess.Popen(
        [sys.executable, "-c", script, str(vault_dir), str(tmp_path / "index")],
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        assert proc.stderr is not None
        announced = ""
        for _ in range(50):  # the announcement, after any warnings from opening the vault
            announced += proc.stderr.readline()
            if "Clients must send" in announced:
                break
        assert "http://127.0.0.1:" in announced, announced
        url = announced.split()[announced.split().index("at") + 1]
        token = token_file.read_text().strip()
        assert token not in announced
        headers = {
            "Authorization": f"Bearer {token}",
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
            "MCP-Protocol-Version": MODERN_VERSION,
            "MCP-Method": "tools/call",
            "MCP-Name": "search",
        }
        body = json.dumps(modern(call("search", {"query": "quokka", "mode": "keyword"})))
        # It listens before it announces: the request waits in the socket's queue.
        reply = httpx2.post(url, content=body, headers=headers, timeout=60)
        assert reply.status_code == 200 and "notes/a.md" in reply.text
    finally:
        proc.terminate()
        proc.wait(30)


def test_busy_port_is_a_usage_error() -> None:
    sock = bind_socket("127.0.0.1", 0)
    try:
        with pytest.raises(UsageError, match="Cannot listen"):
            bind_socket("127.0.0.1", sock.getsockname()[1])
    finally:
        sock.close()


# -- the token file -----------------------------------------------------------------------


def test_token_path_honours_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("MARKVAULT_TOKEN_FILE", raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    assert token_path() == tmp_path / "xdg" / "markvault" / "http-token"
    monkeypatch.setenv("MARKVAULT_TOKEN_FILE", str(tmp_path / "t"))
    assert token_path() == tmp_path / "t"


def test_token_is_created_once_private_and_reused(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    path = tmp_path / "cfg" / "markvault" / "http-token"
    monkeypatch.setenv("MARKVAULT_TOKEN_FILE", str(path))
    token = load_or_create_token()
    assert len(token) >= 43 and load_or_create_token() == token
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert [p.name for p in path.parent.iterdir()] == ["http-token"]  # no temp file left
    assert rotate_token() != token


def test_readable_or_empty_token_file_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "http-token"
    load_or_create_token(path)
    path.chmod(0o644)
    with pytest.raises(ConfigError, match="other users"):
        load_or_create_token(path)
    path.write_text("\n")
    path.chmod(0o600)
    with pytest.raises(ConfigError, match="no usable token"):
        load_or_create_token(path)


# -- the pieces ---------------------------------------------------------------------------


def test_allowed_hosts() -> None:
    assert allowed_hosts("127.0.0.1", 8765) == {
        "127.0.0.1:8765",
        "localhost:8765",
        "[::1]:8765",
    }
    assert "[::1]:9" in allowed_hosts("::1", 9)
    remote = allowed_hosts("0.0.0.0", 8765, ["nas.lan", "10.0.0.2:8765"])
    assert {"nas.lan:8765", "10.0.0.2:8765", "localhost:8765"} <= remote


def test_origin_allowed() -> None:
    assert origin_allowed("http://localhost:3000")
    assert not origin_allowed("http://localhost:bad")
    assert not origin_allowed("file://localhost")
    assert origin_allowed("https://notes.example.com/", ["https://notes.example.com"])


def test_token_bucket_refills() -> None:
    now = [0.0]
    bucket = TokenBucket(30, clock=lambda: now[0])
    assert all(bucket.take() == 0 for _ in range(30))
    assert bucket.take() == pytest.approx(2.0)
    now[0] += 2.0
    assert bucket.take() == 0
    assert bucket.take(31) == float("inf")


def test_count_write_calls_sees_batches_and_ignores_junk() -> None:
    writes = {"create_note", "edit_note"}
    batch = [call("search", {}, 1), call("edit_note", {}, 2), call("create_note", {}, 3)]
    assert count_write_calls(json.dumps(batch).encode(), writes) == (2, 2)
    assert count_write_calls(b"{not json", writes) == (0, None)
    assert count_write_calls(b'{"method": "tools/call", "params": 3}', writes) == (0, None)
    assert HttpOptions().max_body == 4 * 1024 * 1024
