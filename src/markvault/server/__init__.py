"""The MCP face: `vault mcp`, the server Claude Code and other MCP clients talk to.

A thin adapter over the facade (``vault.Vault``), like the CLI: no SQL, no file I/O.

- ``tools``       the server: its tools, resources and instructions (``build_server``)
- ``tool_call``   one tool call as the client sees it: progress, cancellation, log lines
- ``live``        what the server tells clients unasked: subscriptions (both protocol
                  eras), log levels
- ``completion``  ``completion/complete`` for templates and prompt arguments
- ``prompts``     the prompts
- ``sdk``         the places that reach past ``MCPServer``'s public surface, and why
- ``http``        `vault mcp --http`: streamable HTTP and its checks
- ``install``     `vault mcp install`: registers the server with Claude Code

Importing this package imports nothing: `vault mcp install` and `vault --help` never
load the SDK.
"""
