"""What a template leaves in a note, and where a new note's content goes.

A template's sections hold placeholder comments (``<!-- Why this note exists ... -->``)
that tell a person what to write. They are no content: the index reads a note with
every placeholder blanked (``without_placeholders``, lines kept so that line numbers
stay true), so they never come back as snippets, never count as terms, and a note that
holds only its template is found by its title alone. A comment a person wrote is kept.

``place_content``: the content given with a new note replaces the template's body when
that body is only headings and placeholders (a note, a knowledge point); otherwise (a
session's or document's template, with a line of its own) it goes right after the
title line, never under the template's last heading.
"""

from __future__ import annotations

import functools
import re
from importlib.resources import files

_COMMENT = re.compile(r"<!--.*?-->", re.DOTALL)
_TEMPLATES = ("note", "knowledge", "session", "document")


@functools.cache
def placeholders() -> frozenset[str]:
    """Every placeholder comment of markvault's templates (and of the session note's
    summary), whitespace folded."""
    from markvault.sessions.session_note import SUMMARY_PLACEHOLDER

    found = {_folded(SUMMARY_PLACEHOLDER)}
    folder = files("markvault") / "templates"
    for kind in _TEMPLATES:
        template = folder / f"{kind}.md"
        if template.is_file():
            found.update(
                _folded(m.group(0)) for m in _COMMENT.finditer(template.read_text("utf-8"))
            )
    return frozenset(found)


def _folded(comment: str) -> str:
    return " ".join(comment.split())


def without_placeholders(text: str) -> str:
    """``text`` with every template placeholder comment replaced by the line breaks it
    spanned (nothing else changes)."""
    if "<!--" not in text:
        return text
    known = placeholders()

    def blank(match: re.Match[str]) -> str:
        comment = match.group(0)
        return "\n" * comment.count("\n") if _folded(comment) in known else comment

    return _COMMENT.sub(blank, text)


def place_content(text: str, content: str) -> str:
    """A new note from a filled template ``text`` with ``content`` where a person would
    put it (see the module's docstring)."""
    lines = text.split("\n")
    title = next((i for i, line in enumerate(lines) if line.startswith("# ")), None)
    if title is None:
        return text.rstrip("\n") + "\n\n" + content.strip("\n") + "\n"
    head, rest = lines[: title + 1], "\n".join(lines[title + 1 :])
    body = content.strip("\n") + "\n"
    leftover = _COMMENT.sub("", rest)
    if all(not line.strip() or line.startswith("#") for line in leftover.split("\n")):
        return "\n".join(head) + "\n\n" + body  # only headings and placeholders: replaced
    return "\n".join(head) + "\n\n" + body + "\n" + rest.lstrip("\n")
