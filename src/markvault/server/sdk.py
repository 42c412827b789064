"""The places where markvault reaches past ``MCPServer``'s public surface (mcp 2.3).

- Handlers ``MCPServer`` does not wrap: ``resources/subscribe``, ``resources/unsubscribe``
  and ``logging/setLevel`` are spec methods of the handshake era that the SDK leaves to
  the lowlevel ``Server.add_request_handler`` (its own docs say so), and ``MCPServer``
  keeps that server private.
- ``resources.listChanged`` for handshake-era clients: the lowlevel server declares it
  only from ``NotificationOptions`` passed to ``create_initialization_options``, which
  ``MCPServer`` and the HTTP transport call without any.
- The ``Connection`` a request came on: the SDK keeps per-connection state and teardown
  there (``Connection.exit_stack`` runs when the client goes), but hands handlers only
  the per-request ``ServerSession`` around it (SDK TODO L54).
- One answer format per protocol era over HTTP: the session manager's single
  ``json_response`` flag decides for both eras, but they need opposite answers.
  Current-era requests must be answered as an SSE stream when the tool sends progress or
  log lines (in JSON mode the SDK drops them: a JSON body holds only the result), while
  handshake-era sessions must answer each POST with one JSON body (an SSE answer makes
  the conformance suite's ``server-sse-polling`` call its ``test_reconnection`` fixture
  tool). So the manager is built with ``json_response=False`` and each handshake-era
  session's transport is switched to JSON as it is admitted (``_admit_session``).

The tests of both protocol eras go through these paths; an SDK release that moves them
fails there, not in front of a user.
"""

from __future__ import annotations

from typing import Any

from mcp.server.connection import Connection
from mcp.server.lowlevel import NotificationOptions, Server
from mcp.server.mcpserver import MCPServer
from mcp.server.models import InitializationOptions
from mcp.server.session import ServerSession
from mcp.server.streamable_http import StreamableHTTPServerTransport


def lowlevel(server: MCPServer) -> Server[Any]:
    """The lowlevel ``Server`` under ``server`` (the SDK's own client reaches it so too)."""
    return server._lowlevel_server


def connection_of(session: ServerSession) -> Connection:
    """The connection (stdio pipe, HTTP session) the request of ``session`` came on."""
    connection: Connection = session._connection
    return connection


def declare_resources_list_changed(server: MCPServer) -> None:
    """Make the ``initialize`` answer say ``resources.listChanged: true``.

    Only the handshake era reads it; the current era derives it from
    ``subscriptions/listen`` being served.
    """
    low = lowlevel(server)
    create = low.create_initialization_options

    def with_list_changed(
        notification_options: NotificationOptions | None = None,
        experimental_capabilities: dict[str, dict[str, Any]] | None = None,
        extensions: dict[str, dict[str, Any]] | None = None,
    ) -> InitializationOptions:
        options = notification_options or NotificationOptions(resources_changed=True)
        return create(options, experimental_capabilities, extensions)

    setattr(low, "create_initialization_options", with_list_changed)  # noqa: B010


def json_answers_for_handshake_sessions(server: MCPServer) -> None:
    """Answer handshake-era sessions' POSTs with one JSON body, while current-era
    requests keep the SSE answers of the manager's ``json_response=False`` (see the
    module's docstring). Call after ``streamable_http_app``."""
    manager = server.session_manager
    admit = manager._admit_session

    def admit_answering_json(requestor: Any) -> StreamableHTTPServerTransport | None:
        transport = admit(requestor)
        if transport is not None:
            transport.is_json_response_enabled = True
        return transport

    setattr(manager, "_admit_session", admit_answering_json)  # noqa: B010
