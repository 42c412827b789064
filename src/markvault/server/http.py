"""The MCP server over streamable HTTP, for clients that cannot spawn ``vault mcp``.

Unlike stdio, a port can be reached by anything on the machine (or the network), so
every request passes, in this order:

1. a Host check (421): stops DNS rebinding, where a web page on ``evil.example`` that
   resolves to 127.0.0.1 would otherwise talk to us;
2. an Origin check (403): browsers always send Origin, so a page on a foreign site is
   refused; non-browser clients send none and pass;
3. a bearer token (401): the token lives in a 0600 file outside the vault (a vault is
   shared and often synced, a token must not be);
4. a body size limit (413), counted on the stream too, not only on Content-Length;
5. a rate limit on write tools (429), so a runaway agent cannot rewrite the vault in a
   loop faster than a person can notice.

Checks 1-3 run before the body is read, so an unauthenticated client cannot make the
server buffer anything. The SDK's own Host/Origin/size checks stay on behind ours with
the same settings; two equal fences cost nothing.

Clients of the handshake era (protocol 2025-11-25 and before) get a session
(``Mcp-Session-Id``): a session is what ``resources/subscribe`` and ``logging/setLevel``
belong to, and its GET stream is where the server's notifications reach the client
(resource changes, log messages, progress). A restart forgets the sessions; clients
then get 404 and initialize again, as the protocol says. Sessions are bounded in number
and end after an idle half hour. Each answer to a session's POST is one JSON body, not
an SSE stream: the tools answer once, and what a client hears besides comes on the GET
stream. Clients of the current protocol (2026-07-28) need no session: each request
stands alone, and what belongs to it rides its own answer, which becomes an SSE stream
when there is any (a tool's progress and log lines before its result; a
``subscriptions/listen`` stream's events) and stays one JSON body otherwise.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hmac
import ipaddress
import json
import logging
import math
import os
import secrets
import socket
import sys
import time
from collections.abc import Awaitable, Callable, Collection, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from mcp.server.mcpserver import MCPServer
from mcp.server.transport_security import RequestBodyLimitMiddleware, TransportSecuritySettings
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS
from starlette.datastructures import Headers
from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from markvault.errors import ConfigError, UsageError
from markvault.files.atomic import write_new
from markvault.http_settings import HTTP_DEFAULTS, HttpOptions, token_path
from markvault.server.sdk import json_answers_for_handshake_sessions

if TYPE_CHECKING:
    import uvicorn

logger = logging.getLogger(__name__)

MCP_PATH = "/mcp"
MAX_CONNECTIONS = 64
"""Concurrent connections uvicorn accepts before answering 503: one user, a few agents."""
MAX_SESSIONS = 256
"""Handshake-era sessions open at once; a client past that gets 503 until one ends."""
SESSION_IDLE_SECONDS = 1800.0
"""A session with no request and no open GET stream for this long is forgotten."""
LOOPBACK_NAMES = ("localhost", "127.0.0.1", "[::1]")
RATE_LIMIT_ERROR = -32000
"""JSON-RPC "server error" code carried in the 429 body (MCP defines none for rate limits)."""

TOKEN_HINT = "Send 'Authorization: Bearer <token>'; `vault mcp token` prints it."


# -- the token ---------------------------------------------------------------------------


def load_or_create_token(path: Path | None = None) -> str:
    """The token in ``path`` (default ``token_path()``), created on first use.

    Creation is atomic and exclusive (write a temp file, then hard-link it into place),
    so two servers starting at once agree on one token and no reader sees half a file.
    """
    path = path or token_path()
    if not path.exists():
        _create_token_file(path, secrets.token_urlsafe(32))
    return _read_token(path)


def rotate_token(path: Path | None = None) -> str:
    """Replace the token (after a leak): running servers keep the old one until restarted."""
    path = path or token_path()
    path.unlink(missing_ok=True)
    return load_or_create_token(path)


def _create_token_file(path: Path, token: str) -> None:
    # A new folder is made 0700; an existing one is left alone (it may be shared, /tmp).
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    # Never overwrites: a file another process got there first with is theirs to use.
    with contextlib.suppress(FileExistsError):
        write_new(path, (token + "\n").encode("ascii"), mode=0o600)


def _read_token(path: Path) -> str:
    if os.name == "posix" and path.stat().st_mode & 0o077:
        raise ConfigError(
            f"The token file {path} can be read by other users, so the token may have leaked.",
            f"Run `vault mcp token --rotate`, or `chmod 600 {path}` if you are sure it did not.",
        )
    token = path.read_text(encoding="ascii").strip()
    if len(token) < 32:
        raise ConfigError(
            f"The token file {path} holds no usable token.",
            "Delete it; a new token is created on the next start.",
        )
    return token


# -- where we listen and who may talk to us -------------------------------------------


def is_loopback(host: str) -> bool:
    """True for names and addresses that only this machine can reach."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def check_bind(host: str, allow_remote: bool) -> None:
    """Refuse to listen beyond loopback unless asked to: the vault is private by default."""
    if not is_loopback(host) and not allow_remote:
        raise UsageError(
            f"Refusing to listen on {host}: other machines could reach the vault.",
            "Use --host 127.0.0.1, or pass --allow-remote if you mean it (the bearer "
            "token is still required; prefer a VPN or an SSH tunnel).",
        )


def host_port(host: str, port: int) -> str:
    """``host:port`` as it appears in a Host header or URL (IPv6 in brackets)."""
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def http_url(host: str, port: int) -> str:
    return f"http://{host_port(host, port)}{MCP_PATH}"


def allowed_hosts(host: str, port: int, extra: Iterable[str] = ()) -> frozenset[str]:
    """Host header values we answer to: the bound address, loopback names, and ``extra``.

    ``extra`` names the machine as remote clients call it (``nas.lan`` or ``nas.lan:8765``);
    a missing port means ours. Bare names are allowed on port 80, where clients omit it.
    """
    # Loopback names are always fine: a browser sends them only when it connects to
    # this machine itself, which a rebinding attack cannot arrange.
    names = {host_port(host, port).lower()} | {f"{name}:{port}" for name in LOOPBACK_NAMES}
    for name in extra:
        name = name.lower().strip()
        names.add(name if _has_port(name) else f"{name}:{port}")
    if port == 80:
        names |= {n.rsplit(":", 1)[0] for n in list(names)}
    return frozenset(names)


def _has_port(name: str) -> bool:
    return name.rsplit(":", 1)[-1].isdigit() and (not name.startswith("[") or "]:" in name)


def origin_allowed(origin: str, extra: Collection[str] = ()) -> bool:
    """Loopback web origins (any port) and those listed in ``extra`` may call us."""
    normalized = origin.strip().rstrip("/").lower()
    if normalized in {o.strip().rstrip("/").lower() for o in extra}:
        return True
    try:
        parts = urlsplit(normalized)
        parts.port  # noqa: B018 - raises ValueError on a malformed port
    except ValueError:
        return False
    return parts.scheme in ("http", "https") and is_loopback(parts.hostname or "")


def sdk_security(hosts: Collection[str], origins: Collection[str]) -> TransportSecuritySettings:
    """The SDK's DNS-rebinding settings, matching our guard (it runs behind it)."""
    loopback = [
        f"{scheme}://{name}{port}"
        for scheme in ("http", "https")
        for name in LOOPBACK_NAMES
        for port in ("", ":*")
    ]
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=sorted(hosts),
        allowed_origins=loopback + [o.rstrip("/") for o in origins],
    )


# -- responses -----------------------------------------------------------------------------


def error_response(
    status: int,
    message: str,
    *,
    request_id: Any = None,
    code: int = -32600,
    headers: dict[str, str] | None = None,
) -> Response:
    """A refusal as a JSON-RPC error body: MCP clients show its message to the user.

    (The SDK's client reads a JSON-RPC error from any non-2xx reply; Claude Code's
    shows the body text. A bare status would surface only as "HTTP 4xx".)
    """
    body = {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}}
    return Response(
        json.dumps(body), status_code=status, media_type="application/json", headers=headers
    )


# -- middleware ----------------------------------------------------------------------------


class GuardMiddleware:
    """Host (421), Origin (403) and bearer token (401) checks, before any body is read."""

    def __init__(
        self, app: ASGIApp, *, token: str, hosts: Collection[str], origins: Collection[str] = ()
    ) -> None:
        self.app = app
        self._token = token.encode()
        self.hosts = frozenset(h.lower() for h in hosts)
        self.origins = tuple(origins)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self.app(scope, receive, send)
            return
        if scope["type"] != "http":  # no websockets here
            await send({"type": "websocket.close", "code": 1008})
            return
        headers = Headers(scope=scope)
        refusal = self.refusal(headers) or accept_refusal(scope["method"], headers)
        if refusal is not None:
            await refusal(scope, receive, send)
            return
        await self.app(scope, receive, send)

    def refusal(self, headers: Headers) -> Response | None:
        """The response that refuses this request, or None to let it through."""
        host = headers.get("host", "").lower()
        if host not in self.hosts:
            logger.warning("refused Host %r", host[:100])
            return error_response(421, f"Host {host[:100]!r} is not served here.")
        origin = headers.get("origin")
        if origin is not None and not origin_allowed(origin, self.origins):
            logger.warning("refused Origin %r", origin[:100])
            return error_response(403, f"Origin {origin[:100]!r} may not call this server.")
        return self._auth_refusal(headers.get("authorization"))

    def _auth_refusal(self, authorization: str | None) -> Response | None:
        scheme, _, given = (authorization or "").partition(" ")
        if scheme.lower() == "bearer" and hmac.compare_digest(given.strip().encode(), self._token):
            return None
        what = "Wrong bearer token." if authorization else "Missing bearer token."
        challenge = 'Bearer realm="markvault"'
        if authorization:
            challenge += ', error="invalid_token"'
        return error_response(401, f"{what} {TOKEN_HINT}", headers={"WWW-Authenticate": challenge})


def accept_refusal(method: str, headers: Headers) -> Response | None:
    """406 for a current-era POST that cannot take an SSE answer, saying why (the SDK's
    own 406 has no body). Its answer is a stream whenever the call reports progress or
    log lines, so the protocol has clients accept both."""
    version = headers.get("mcp-protocol-version")
    if method != "POST" or version is None or version in HANDSHAKE_PROTOCOL_VERSIONS:
        return None
    accept = headers.get("accept", "").lower()
    if "text/event-stream" in accept and ("application/json" in accept or "*/*" in accept):
        return None
    return error_response(
        406,
        f"Protocol {version[:20]} needs 'Accept: application/json, text/event-stream': "
        "an answer is an SSE stream when the call reports progress or log lines.",
    )


class TokenBucket:
    """``rate`` calls per minute, with bursts of up to ``rate``; ``take`` never blocks."""

    def __init__(self, rate: int, clock: Callable[[], float] = time.monotonic) -> None:
        if rate <= 0:
            raise UsageError(f"The write rate must be positive, not {rate}.")
        self.capacity = float(rate)
        self.per_second = rate / 60.0
        self.tokens = float(rate)
        self.clock = clock
        self.stamp = clock()

    def take(self, n: int = 1) -> float:
        """Take ``n`` tokens and return 0, or take none and return the seconds to wait."""
        now = self.clock()
        self.tokens = min(self.capacity, self.tokens + (now - self.stamp) * self.per_second)
        self.stamp = now
        if n > self.capacity:
            return math.inf
        if self.tokens >= n:
            self.tokens -= n
            return 0.0
        return (n - self.tokens) / self.per_second


WriteTools = Collection[str] | Callable[[], Awaitable[Collection[str]]]


class WriteRateLimitMiddleware:
    """429 for ``tools/call`` of a write tool beyond the bucket; everything else passes.

    Runs behind the body limit, so reading the whole body here is bounded. The body is
    replayed unchanged to the app. All state lives on the event loop's one thread.
    """

    def __init__(self, app: ASGIApp, *, bucket: TokenBucket, write_tools: WriteTools) -> None:
        self.app = app
        self.bucket = bucket
        self._write_tools = write_tools
        self._resolved: frozenset[str] | None = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "POST":
            await self.app(scope, receive, send)
            return
        body, replay = await _buffer_body(receive)
        writes, request_id = count_write_calls(body, await self.write_tools())
        wait = self.bucket.take(writes) if writes else 0.0
        if wait:
            retry = max(1, math.ceil(min(wait, 3600)))
            limit = int(self.bucket.capacity)
            message = (
                f"Too many write calls: at most {limit} a minute. Retry in {retry} s, "
                "or restart the server with a higher --write-rate."
            )
            response = error_response(
                429,
                message,
                request_id=request_id,
                code=RATE_LIMIT_ERROR,
                headers={"Retry-After": str(retry)},
            )
            await response(scope, replay, send)
            return
        await self.app(scope, replay, send)

    async def write_tools(self) -> frozenset[str]:
        if self._resolved is None:
            tools = self._write_tools
            self._resolved = frozenset(await tools() if callable(tools) else tools)
        return self._resolved


async def _buffer_body(receive: Receive) -> tuple[bytes, Receive]:
    """Read the whole request body; return it and a ``receive`` that replays it."""
    chunks: list[bytes] = []
    pending: list[Message] = []
    while True:
        message = await receive()
        if message["type"] != "http.request":
            pending.append(message)  # http.disconnect: pass it on after the body
            break
        chunks.append(message.get("body", b""))
        if not message.get("more_body", False):
            break
    body = b"".join(chunks)
    pending.insert(0, {"type": "http.request", "body": body, "more_body": False})

    async def replay() -> Message:
        return pending.pop(0) if pending else await receive()

    return body, replay


def count_write_calls(body: bytes, write_tools: Collection[str]) -> tuple[int, Any]:
    """How many write tool calls a JSON-RPC body (one message or a batch) holds,
    and the id of the first, for the error reply. Unparseable bodies count 0: the SDK
    answers those with a parse error."""
    try:
        parsed = json.loads(body)
    except ValueError:
        return 0, None
    messages = parsed if isinstance(parsed, list) else [parsed]
    count, first_id = 0, None
    for msg in messages:
        if not isinstance(msg, dict) or msg.get("method") != "tools/call":
            continue
        params = msg.get("params")
        if isinstance(params, dict) and params.get("name") in write_tools:
            if count == 0:
                first_id = msg.get("id")
            count += 1
    return count, first_id


def write_tools_of(server: MCPServer) -> Callable[[], Awaitable[frozenset[str]]]:
    """The server's tools not marked read-only, looked up on first use: new write tools
    are limited without anyone remembering to list them here."""

    async def lookup() -> frozenset[str]:
        tools = await server.list_tools()
        return frozenset(
            t.name for t in tools if not (t.annotations and t.annotations.read_only_hint)
        )

    return lookup


# -- the app and the server ------------------------------------------------------------------


def build_http_app(
    server: MCPServer,
    *,
    token: str,
    options: HttpOptions = HTTP_DEFAULTS,
    write_tools: Collection[str] | None = None,
) -> ASGIApp:
    """The guarded ASGI app serving ``server`` at ``/mcp``; its lifespan runs the server's.

    ``write_tools`` None means: every tool the server does not mark read-only.
    """
    check_bind(options.host, options.allow_remote)
    if options.max_body <= 0:
        raise UsageError(f"The body size limit must be positive, not {options.max_body}.")
    hosts = allowed_hosts(options.host, options.port, options.extra_hosts)
    inner = server.streamable_http_app(
        streamable_http_path=MCP_PATH,
        stateless_http=False,
        json_response=False,  # current era: SSE when a call reports; handshake: JSON (sdk.py)
        session_idle_timeout=SESSION_IDLE_SECONDS,
        max_sessions=MAX_SESSIONS,
        max_request_body_size=options.max_body,
        transport_security=sdk_security(hosts, options.extra_origins),
        host=options.host,
    )
    json_answers_for_handshake_sessions(server)
    tools: WriteTools = write_tools if write_tools is not None else write_tools_of(server)
    bucket = TokenBucket(options.write_rate)
    limited = WriteRateLimitMiddleware(inner, bucket=bucket, write_tools=tools)
    sized = RequestBodyLimitMiddleware(limited, options.max_body)
    return GuardMiddleware(sized, token=token, hosts=hosts, origins=options.extra_origins)


def bind_socket(host: str, port: int) -> socket.socket:
    """Listen on ``host:port`` now, so a busy port is a clear error and port 0 a real one."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(128)
    except OSError as exc:
        sock.close()
        raise UsageError(
            f"Cannot listen on {host_port(host, port)}: {exc.strerror or exc}.",
            "Pick another --port (0 picks a free one), or stop what holds this one.",
        ) from exc
    sock.set_inheritable(True)
    return sock


def uvicorn_server(app: ASGIApp, log_level: str = "warning") -> uvicorn.Server:
    """A uvicorn server for ``app`` on sockets the caller binds (see ``bind_socket``)."""
    import uvicorn  # an mcp dependency; imported only when serving

    config = uvicorn.Config(
        app,
        log_level=log_level,
        lifespan="on",
        proxy_headers=False,  # no proxy is trusted to say who the client is
        server_header=False,
        limit_concurrency=MAX_CONNECTIONS,
        timeout_graceful_shutdown=5,
    )
    return uvicorn.Server(config)


def serve_http(
    server: MCPServer,
    options: HttpOptions = HTTP_DEFAULTS,
    *,
    write_tools: Collection[str] | None = None,
    log_level: str = "warning",
) -> None:
    """Serve until interrupted. Prints the URL and where the token is, never the token."""
    check_bind(options.host, options.allow_remote)
    token = load_or_create_token()
    sock = bind_socket(options.host, options.port)
    port = sock.getsockname()[1]  # the one bound: port 0 picks a free one
    listening = dataclasses.replace(options, port=port)
    app = build_http_app(server, token=token, options=listening, write_tools=write_tools)
    print(announcement(options.host, port), file=sys.stderr, flush=True)
    try:
        uvicorn_server(app, log_level).run(sockets=[sock])
    finally:
        sock.close()


def announcement(host: str, port: int) -> str:
    return (
        f"markvault: MCP over streamable HTTP at {http_url(host, port)}\n"
        f"  Clients must send 'Authorization: Bearer <token>'. `vault mcp token` prints the "
        f"token (kept in {token_path()}).\n"
        f"  Claude Code: vault mcp install --http --port {port}"
    )
