"""The error tree. Every message says what happened and what to do next.

    MarkvaultError                 base; ``exit_code`` is what the CLI exits with
    ├── ConfigError                bad settings or vault location (exit 2)
    ├── UsageError                 bad arguments: query syntax, reference form (exit 2)
    ├── NotFoundError              no note or chunk by that reference (exit 3)
    ├── IndexBusyError             another process holds the index (exit 4)
    ├── ConflictError              the note changed or exists already (exit 5)
    ├── RefusedError               unsafe path, unreadable or oversized file (exit 6)
    ├── SyncError                  git failed in `vault sync`: network, access (exit 1)
    ├── SyncConflict               a merge or rebase waits for conflicted notes (exit 5)
    └── CallCancelled              the caller cancelled the call (exit 130)

The CLI turns these into ``click.ClickException``; the MCP server into ``ToolError``.
"""

from __future__ import annotations


class MarkvaultError(Exception):
    """Base class: an expected failure with a message meant for a person or a model."""

    exit_code = 1

    def __init__(self, message: str, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        return f"{self.message} {self.hint}" if self.hint else self.message


class ConfigError(MarkvaultError):
    exit_code = 2


class UsageError(MarkvaultError):
    exit_code = 2


class NotFoundError(MarkvaultError):
    exit_code = 3


class IndexBusyError(MarkvaultError):
    exit_code = 4


class ConflictError(MarkvaultError):
    exit_code = 5


class RefusedError(MarkvaultError):
    exit_code = 6


class SyncError(MarkvaultError):
    """git failed (network, credentials, a hook); the message carries git's own words."""

    exit_code = 1


class SyncConflict(MarkvaultError):
    """A merge or rebase waits for files still holding conflict markers."""

    exit_code = 5


class CallCancelled(MarkvaultError):
    """Raised into a call's work at its next progress step once its caller cancelled it;
    what it wrote by then is whole, as after any interrupted sync."""

    exit_code = 130
