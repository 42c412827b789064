"""Filters as SQL: which notes a search or a listing may return (``model.Filters``)."""

from __future__ import annotations

import datetime as dt
import json
from typing import Any

from markvault.types.search import SCOPES, Filters

# The SQL of each search scope (``model.SCOPES``) over ``chunks c``: "sessions" is
# note-level; the others pick chunks, so their SQL needs ``chunks c`` joined (see
# ``Filters.notes_only``).
SCOPE_SQL: dict[str, str] = {
    "sessions": "",
    # A transcript's user turns, marked as the chunks are stored (sessions/turns.py).
    "prompts": "c.user_turn",
    # "### Decisions" of a summary, or "## Decisions" of a hand-written session note.
    "decisions": "lower(c.heading_path[-1]) = 'decisions'",
    "outcomes": "lower(c.heading_path[-1]) = 'outcomes'",
    "open_items": "lower(c.heading_path[-1]) = 'open items'",
}
assert tuple(SCOPE_SQL) == SCOPES


def current_sql(today: str) -> str:
    """A note is current unless its `valid_until` date (before ``today``, an ISO date)
    has passed or it was superseded. The day goes in as a literal: a process's first
    bound parameter costs DuckDB's Python client ~5 ms, and a plain search binds none."""
    return (
        f"NOT ((coalesce(n.valid_until, '') >= '0' AND n.valid_until < {sql_string(today)}) "
        "OR coalesce(n.superseded_by, '') <> '' OR lower(coalesce(n.status, '')) = 'superseded')"
    )


def sql_string(text: str) -> str:
    """``text`` as a SQL string literal. Keys go into queries as literals, not bound
    parameters: DuckDB's Python client tries to import pandas for every parameter
    (~0.4 ms each when it is absent), and answers an IN list of constants from an ART
    index where a bound list or a join scans the table."""
    return "'" + text.replace("'", "''") + "'"


def filters_sql(filters: Filters) -> tuple[str, list[Any]]:
    """A WHERE condition over ``notes n`` for ``filters``, and its parameters; a
    chunk-level ``scope`` (prompts, decisions, ...) also needs ``chunks c`` joined."""
    parts: list[str] = ["TRUE"]
    params: list[Any] = []
    if filters.scope is not None:
        filters.check()
        parts.append("lower(n.kind) = 'session'")
        if SCOPE_SQL[filters.scope]:
            parts.append(f"({SCOPE_SQL[filters.scope]})")
    if filters.attachments in ("exclude", "only"):
        parts.append(
            ("" if filters.attachments == "only" else "NOT ")
            + "coalesce(n.kind = 'attachment', false)"
        )
    for column, values in (
        ("kind", filters.kinds),
        ("type", filters.types),
        ("topic", filters.topics),
        ("project", filters.projects),
    ):
        if values:
            parts.append(f"lower(n.{column}) IN (SELECT unnest(?))")
            params.append([v.lower() for v in values])
    for tag in filters.tags:
        tag = tag.lower().lstrip("#")
        parts.append("len(list_filter(n.tags_lc, t -> t = ? OR starts_with(t, ?))) > 0")
        params += [tag, tag + "/"]
    if filters.path_glob:
        parts.append("n.path GLOB ?")
        params.append(filters.path_glob)
    if filters.since:
        parts.append("n.date >= ?")
        params.append(filters.since)
    if filters.until:
        # A bare date includes that whole day.
        parts.append("n.date <= ?")
        params.append(filters.until + ("T99" if len(filters.until) == 10 else ""))
    for key, value in filters.meta.items():
        # The value equals a scalar, or is one item of a list.
        parts.append(
            "(json_extract_string(n.metadata, ?) = ? OR "
            "list_contains(json_extract_string(n.metadata, ?), ?))"
        )
        path = "$." + json.dumps(key)
        params += [path, value, path + "[*]", value]
    for concept in filters.concepts:
        parts.append("list_contains(list_transform(n.concepts, c -> lower(c)), ?)")
        params.append(concept.lower())
    if filters.files:
        # A referenced path matches exactly, by its tail ("x.py" for "src/x.py"), or
        # as a glob ("src/*.py").
        ors = []
        for pattern in filters.files:
            pattern = pattern.strip().lstrip("./")
            ors.append("len(list_filter(n.files, f -> f = ? OR ends_with(f, ?) OR f GLOB ?)) > 0")
            params += [pattern, "/" + pattern, pattern]
        parts.append("(" + " OR ".join(ors) + ")")
    if not filters.include_expired:
        parts.append(current_sql(dt.date.today().isoformat()))
    return " AND ".join(parts), params
