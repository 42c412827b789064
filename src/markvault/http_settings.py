"""How `vault mcp --http` listens and what it allows, and where its bearer token lives.

Apart from config.py: only `vault mcp --http` (and its help) reads these, and every other
command would define their class for nothing.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from markvault.user_folders import APP_NAME

TOKEN_ENV = "MARKVAULT_TOKEN_FILE"


@dataclass(frozen=True)
class HttpOptions:
    """How `vault mcp --http` listens and what it allows: the one home of its defaults,
    here so that `vault mcp --help` shows them without loading the SDK (server/http.py)."""

    host: str = "127.0.0.1"
    port: int = 8765  # 0: any free port
    allow_remote: bool = False
    """A host beyond loopback is refused unless this is set (`--allow-remote`)."""
    max_body: int = 4 * 1024 * 1024
    """Bytes a request body may hold."""
    write_rate: int = 30
    """Write tool calls allowed per minute (and as a burst)."""
    extra_hosts: tuple[str, ...] = ()
    """More Host headers to accept (``nas.lan`` or ``nas.lan:8765``)."""
    extra_origins: tuple[str, ...] = ()
    """Web origins besides localhost that may call the server."""


HTTP_DEFAULTS = HttpOptions()


def token_path() -> Path:
    """Where `vault mcp --http`'s bearer token lives: a per-user config file, never in a vault."""
    override = os.environ.get(TOKEN_ENV)
    if override:
        return Path(override).expanduser()
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base).expanduser() / APP_NAME / "http-token"
