"""markvault: file-first memory for people and AI coding agents.

The vault (Markdown files) is the truth; the DuckDB index beside it is derived
and disposable. ``Vault`` (vault.py) is the one facade both the CLI and the MCP
server use.
"""

from markvault.config import Settings
from markvault.errors import (
    ConfigError,
    ConflictError,
    IndexBusyError,
    MarkvaultError,
    NotFoundError,
    RefusedError,
    UsageError,
)
from markvault.types import Edit, Filters, Hit, ReindexReport, SearchResult
from markvault.vault import Vault

__all__ = [
    "ConfigError",
    "ConflictError",
    "Edit",
    "Filters",
    "Hit",
    "IndexBusyError",
    "MarkvaultError",
    "NotFoundError",
    "RefusedError",
    "ReindexReport",
    "SearchResult",
    "Settings",
    "UsageError",
    "Vault",
]
