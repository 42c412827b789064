"""The owner's protocol on the wire: JSON lines, and the values the facade passes.

A request is ``{"id", "method", "args", "kwargs"}``; the answer ``{"id", "result"}``,
``{"id", "error"}`` or ``{"id", "declined": true}`` (the owner was closing and did not
run it), with ``{"id", "progress"}`` lines before the answer of a long call. While a call
runs its caller may send ``{"id", "cancel": true}``: the work stops at its next progress
step and the answer is a ``CallCancelled`` error. ``watch_changes`` turns a connection
into a follower of the owner's change feed: after its answer, ``{"id", "event"}`` lines
until the connection closes. Values that
are not JSON (filters, edits, paths, search results, reports) travel as
``{"__type__": ...}`` objects; errors keep their class, message and hint.
"""

from __future__ import annotations

import dataclasses
import importlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from markvault import errors
from markvault.errors import MarkvaultError
from markvault.types.search import Hit, SearchResult

MAX_LINE = 256 * 1024 * 1024
PROGRESS = "__progress__"  # a ``progress`` argument: the owner relays its events

# Plain dataclasses that cross the wire as their fields, rebuilt on the other side: each
# name with its module, imported when a value of it arrives (a search's client then
# never defines the classes of edits, sessions or the change feed).
_PLAIN: dict[str, str] = {
    "Filters": "markvault.types.search",
    "SearchRequest": "markvault.types.search",
    "SessionQuery": "markvault.types.sessions",
    "SessionImportReport": "markvault.types.sessions",
    "Edit": "markvault.types.edits",
    "ReindexReport": "markvault.types.reindex",
    # the owner's change feed (change_feed.py)
    "ChangeBatch": "markvault.indexing.feed_items",
    "NoteChange": "markvault.indexing.feed_items",
    "OwnerEvent": "markvault.indexing.feed_items",
}


def dumps(message: dict[str, Any]) -> bytes:
    return json.dumps(message, ensure_ascii=False, default=str).encode() + b"\n"


def encode(value: Any) -> Any:
    """Python values -> JSON values, tagging the types the facade takes and returns."""
    if isinstance(value, SearchResult):
        data: dict[str, Any] = dict(value.to_json())
        data["hits"] = [dict(h.to_json(), text=h.text) for h in value.hits]
        return {"__type__": "SearchResult", **data}
    if type(value).__name__ in _PLAIN and dataclasses.is_dataclass(value):
        fields = {f.name: encode(getattr(value, f.name)) for f in dataclasses.fields(value)}
        return {"__type__": type(value).__name__, **fields}
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return encode(dataclasses.asdict(value))  # read as a mapping on the other side
    if isinstance(value, Path):
        return {"__type__": "Path", "value": str(value)}
    if isinstance(value, dict):
        return {str(k): encode(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset | Iterator):
        return [encode(v) for v in value]
    return value


def decode(value: Any) -> Any:
    if isinstance(value, list):
        return [decode(v) for v in value]
    if not isinstance(value, dict):
        return value
    kind = value.get("__type__")
    if kind is None:
        return {k: decode(v) for k, v in value.items()}
    data = {k: decode(v) for k, v in value.items() if k != "__type__"}
    if kind == "Path":
        return Path(data["value"])
    if kind == "SearchResult":
        return SearchResult(
            data["query"],
            data["mode"],
            [_hit(h) for h in data["hits"]],
            data["timings_ms"],
            data["total"],
            data["warnings"],
            data.get("counts", {}),
            data.get("shortcut", False),
            data.get("relaxed", False),
            data.get("time"),
        )
    home = _PLAIN.get(kind)
    if home is None:
        raise ValueError(f"unknown value type {kind!r} on the wire")
    cls = getattr(importlib.import_module(home), kind)
    names = {f.name for f in dataclasses.fields(cls)}
    return cls(**{k: v for k, v in data.items() if k in names})


_HIT_FIELDS = {f.name for f in dataclasses.fields(Hit)}


def _hit(data: dict[str, Any]) -> Hit:
    return Hit(**{k: v for k, v in data.items() if k in _HIT_FIELDS})


def error_json(exc: MarkvaultError) -> dict[str, Any]:
    return {
        "type": type(exc).__name__,
        "message": exc.message,
        "hint": exc.hint,
        "exit_code": exc.exit_code,
    }


def raise_error(data: dict[str, Any]) -> None:
    """Raise the error an answer carries, as the class it had in the owner."""
    cls = getattr(errors, str(data.get("type")), None)
    if not (isinstance(cls, type) and issubclass(cls, MarkvaultError)):
        # A class of another module (credentials.CredentialRefused, gitsync.SyncError):
        # its base here with the same exit code, so a command still exits as it would.
        cls = _BY_EXIT_CODE.get(int(data.get("exit_code") or 1), MarkvaultError)
    raise cls(data.get("message", "the index owner failed"), data.get("hint"))


_BY_EXIT_CODE: dict[int, type[MarkvaultError]] = {}
for _cls in (getattr(errors, name) for name in dir(errors)):
    if isinstance(_cls, type) and issubclass(_cls, MarkvaultError) and _cls is not MarkvaultError:
        _BY_EXIT_CODE.setdefault(_cls.exit_code, _cls)
