"""Edits of a note's text that touch only the bytes concerned. Pure, no I/O.

A person's file is never round-tripped through a YAML or Markdown library: the
BOM, line endings, a missing final newline, comments, key order and quoting all
survive. Frontmatter keys are changed line by line (``frontmatter.set_keys``); sections
are found by the headings markdown-it sees (so a ``#`` inside a code fence is not a
heading). A section runs from its heading to the next heading of its level or higher
(:func:`section_end`): one rule for the edit tools and for session notes.
"""

from __future__ import annotations

from collections.abc import Sequence

from markvault.errors import ConflictError, UsageError
from markvault.markdown.frontmatter import is_plain_key, set_keys, split_frontmatter
from markvault.markdown.parse import parse_note
from markvault.types.edits import OPS, Edit
from markvault.types.notes import Section


def apply_edit(text: str, edit: Edit, path: str = "note") -> str:
    """The new text of a note after ``edit``.

    Raises:
        UsageError: the edit is malformed or its target is not in the note.
        ConflictError: ``replace_text`` found another number of matches than expected.
        RefusedError: frontmatter that cannot be edited key by key.
    """
    bom = "\ufeff" if text.startswith("\ufeff") else ""
    body = text[len(bom) :]
    nl = "\r\n" if "\r\n" in body else "\n"
    result = _apply(body, edit, nl, path)
    return bom + result


def _apply(text: str, edit: Edit, nl: str, path: str) -> str:
    _, _, body_line = split_frontmatter(text)
    lines = text.splitlines(keepends=True)
    head = "".join(lines[: body_line - 1])  # frontmatter block, byte for byte
    body = "".join(lines[body_line - 1 :])
    new_text = _norm(edit.text, nl)

    if edit.op == "append":
        if not body:
            return head + new_text
        sep = "" if body.endswith(("\n", "\r")) else nl
        ends_with_newline = body.endswith(("\n", "\r"))
        added = new_text + (nl if ends_with_newline and not new_text.endswith(nl) else "")
        return head + body + sep + added
    if edit.op == "prepend":
        return head + new_text + ("" if new_text.endswith(nl) else nl) + body
    if edit.op in ("replace_section", "insert_before", "insert_after"):
        return head + _section_edit(text, body_line, body, edit, new_text, nl, path)
    if edit.op == "replace_text":
        if not edit.find:
            raise UsageError("replace_text needs the text to find.")
        found = body.count(edit.find)
        if found != edit.count:
            raise ConflictError(
                f"Expected {edit.count} occurrence(s) of the text in {path}, found {found}.",
                "Read the note again and quote a passage that occurs exactly that often.",
            )
        return head + body.replace(edit.find, _norm(edit.text, nl))
    if edit.op in ("set_key", "remove_key"):
        key = (edit.key or "").strip()
        if not is_plain_key(key):
            raise UsageError(
                f"Bad frontmatter key {edit.key!r}.", "Give a plain key such as 'tags'."
            )
        value = edit.value if edit.op == "set_key" else None
        return set_keys(text, {key: value}, where=path)
    raise UsageError(f"Unknown edit {edit.op!r}.", f"Use one of: {', '.join(OPS)}.")


def _norm(text: str, nl: str) -> str:
    return text.replace("\r\n", "\n").replace("\n", nl)


def _section_edit(
    text: str, body_line: int, body: str, edit: Edit, new_text: str, nl: str, path: str
) -> str:
    if not edit.heading:
        raise UsageError(f"{edit.op} needs a heading.", 'Example: heading="Open items".')
    wanted = edit.heading.strip()
    level = len(wanted) - len(wanted.lstrip("#")) if wanted.startswith("#") else 0
    name = wanted.lstrip("#").strip().casefold()
    sections = parse_note(path, text).sections
    matches = [s for s in sections if s.text.casefold() == name and (not level or s.level == level)]
    if not matches:
        raise UsageError(
            f"No heading {edit.heading!r} in {path}.",
            "Headings there: " + ", ".join(repr(s.text) for s in sections[:20]) or "none",
        )
    if len(matches) > 1:
        raise UsageError(
            f"{len(matches)} headings named {edit.heading!r} in {path}.",
            "Add the level, e.g. '## Notes', or edit by replace_text.",
        )
    target = matches[0]
    stop = section_end(sections, sections.index(target))
    lines = body.splitlines(keepends=True)
    first = target.line - body_line  # index of the heading line within body lines
    end = (stop - body_line) if stop is not None else len(lines)
    block = new_text if new_text.endswith(nl) or not new_text else new_text + nl
    if edit.op == "insert_before":
        return "".join(lines[:first]) + block + "".join(lines[first:])
    # Keep the blank line(s) that separate this section from the next one.
    tail = end
    while tail > first + 1 and not lines[tail - 1].strip():
        tail -= 1
    at_end_without_newline = tail == len(lines) and not body.endswith(("\n", "\r"))
    if at_end_without_newline and block.endswith(nl):
        block = block[: -len(nl)]  # the file had no final newline: keep it that way
    if edit.op == "insert_after":
        if at_end_without_newline:
            return "".join(lines[:tail]) + nl + block
        return "".join(lines[:tail]) + block + "".join(lines[tail:])
    # replace_section: keep the heading line, replace what follows up to the next section
    if first + 1 == len(lines) and block and not lines[first].endswith(("\n", "\r")):
        block = nl + block  # the heading was the last line, without a newline
    start = first + 1
    while start < tail and not lines[start].strip():
        start += 1  # keep the blank line(s) under the heading
    return "".join(lines[:start]) + block + "".join(lines[tail:])


def section_end(sections: Sequence[Section], index: int) -> int | None:
    """The line (1-based) of the heading that ends ``sections[index]``'s section: the
    next heading of its level or higher; ``None`` when it runs to the note's end."""
    level = sections[index].level
    return next((s.line for s in sections[index + 1 :] if s.level <= level), None)


def section_spans(text: str) -> dict[tuple[int, str], tuple[int, int]]:
    """(level, casefolded heading) -> character range [start, stop) of the last such
    section (see :func:`section_end`)."""
    sections = parse_note("note.md", text).sections
    offsets = [0]
    for line in text.split("\n"):
        offsets.append(offsets[-1] + len(line) + 1)
    spans: dict[tuple[int, str], tuple[int, int]] = {}
    for i, section in enumerate(sections):
        stop = section_end(sections, i)
        spans[(section.level, section.text.casefold())] = (
            offsets[section.line - 1],
            len(text) if stop is None else min(offsets[stop - 1], len(text)),
        )
    return spans


def replace_section(text: str, heading: str, section: str) -> str:
    """``text`` with the last ``## heading`` section replaced by ``section``.

    ``section`` includes its heading line. The section runs to the next heading of
    level 1 or 2 (so a person's ``## Notes`` after it is kept). Without such a
    section, ``section`` is appended.
    """
    span = section_spans(text).get((2, heading.casefold()))
    if span is None:
        return text.rstrip("\n") + "\n\n" + section
    start, stop = span
    after = text[stop:]
    return text[:start] + section + ("\n" + after if after else "")
