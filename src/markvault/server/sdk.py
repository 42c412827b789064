"""The three places where markvault reaches past ``MCPServer``'s public surface (mcp 2.3).

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
