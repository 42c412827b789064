"""markvault: file-first memory for people and AI coding agents.

The vault (Markdown files) is the truth; the DuckDB index beside it is derived
and disposable. ``Vault`` (vault.py) is the one facade both the CLI and the MCP
server use.

The names below are loaded on first use (PEP 562): every ``markvault.*`` import runs
this file first, and a one-shot command should not pay for the whole facade.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # "X as X": re-exported, for type checkers
    from markvault.config import Settings as Settings
    from markvault.errors import ConfigError as ConfigError
    from markvault.errors import ConflictError as ConflictError
    from markvault.errors import IndexBusyError as IndexBusyError
    from markvault.errors import MarkvaultError as MarkvaultError
    from markvault.errors import NotFoundError as NotFoundError
    from markvault.errors import RefusedError as RefusedError
    from markvault.errors import UsageError as UsageError
    from markvault.types.edits import Edit as Edit
    from markvault.types.reindex import ReindexReport as ReindexReport
    from markvault.types.search import Filters as Filters
    from markvault.types.search import Hit as Hit
    from markvault.types.search import SearchResult as SearchResult
    from markvault.vault import Vault as Vault

_HOMES = {
    "ConfigError": "markvault.errors",
    "ConflictError": "markvault.errors",
    "IndexBusyError": "markvault.errors",
    "MarkvaultError": "markvault.errors",
    "NotFoundError": "markvault.errors",
    "RefusedError": "markvault.errors",
    "UsageError": "markvault.errors",
    "Edit": "markvault.types.edits",
    "Filters": "markvault.types.search",
    "Hit": "markvault.types.search",
    "SearchResult": "markvault.types.search",
    "ReindexReport": "markvault.types.reindex",
    "Settings": "markvault.config",
    "Vault": "markvault.vault",
}

__all__ = sorted(_HOMES)


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'markvault' has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value  # once: the next access is a plain lookup
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_HOMES})
