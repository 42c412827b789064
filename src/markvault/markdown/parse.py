"""Text -> ParsedNote: frontmatter, title, headings, tags and links. Pure, no I/O.

The frontmatter block is found and read by ``frontmatter.py`` (which says how YAML is
read in notes). Any problem leaves the note indexable: it is reported in ``problems``.
"""

from __future__ import annotations

import posixpath
import re
import unicodedata
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote

from markvault.markdown.frontmatter import load_frontmatter, opens_block, split_frontmatter
from markvault.markdown.outline import Outline, outline, outline_reference
from markvault.types import KINDS
from markvault.types.notes import Link, ParsedNote

if TYPE_CHECKING:
    from markvault.markdown.memo import Recent

_INLINE_CODE = re.compile(r"(`+)(?:(?!\1).)+?\1", re.DOTALL)
# Each link and tag pattern starts with a literal, which the regex engine scans for: an
# embed's "!" before a link's "[" is looked at by hand (a match never ends with "!").
_WIKILINK = re.compile(r"\[\[([^\[\]\n|]*?)(?:\\?\|([^\[\]\n]*))?\]\]")
# Obsidian: a tag starts after whitespace or at line start, has letters, digits,
# _ - / in any script, and is not only digits. (The lookbehind sees the "#" and the
# character before it, not a non-space.)
_TAG = re.compile(r"#(?<!\S#)([^\s!-,.:-@\[-^`{-~]+)")
_TAG_CHARS = re.compile(r"[\w\-/]+")
_MD_LINK = re.compile(  # a link, or after "!" an image: both may name any file in the vault
    r"\[[^\[\]\n]*(?:\[[^\[\]\n]*\][^\[\]\n]*)*\]\(\s*(?:<([^>\n]*)>|([^\s()<>]+))"
    r"(?:\s+(?:\"[^\"\n]*\"|'[^'\n]*'))?\s*\)"
)
_SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:|^//")

FOLDER_KINDS = {
    "notes": "note",
    "sessions": "session",
    "knowledge": "knowledge",
    "documents": "document",
}
STRING_FIELDS = ("id", "title", "type", "topic", "project", "source", "status", "superseded_by")
DATE_FIELDS = ("created", "updated", "valid_until")
LIST_FIELDS = ("tags", "aliases", "files", "concepts")


def parse_note(
    path: str,
    text: str,
    *,
    max_frontmatter_bytes: int = 64 * 1024,
    reference: bool = False,
    shapes: Recent[tuple[str, int], Outline] | None = None,
) -> ParsedNote:
    """Parse one note. ``path`` is vault-relative (POSIX); ``text`` is the decoded file.
    ``reference`` reads the Markdown with markdown-it-py, the parser the fast one is held
    to (tests and bench/profile_index.py compare the two). ``shapes``: outlines of
    recent bodies (see ``outline``)."""
    path = unicodedata.normalize("NFC", path)
    problems: list[str] = []
    if text.startswith("\ufeff"):
        text = text[1:]
    fm_text, body, body_line = split_frontmatter(text)
    if fm_text is None and text.startswith("---") and opens_block(text.split("\n", 1)[0]):
        problems.append("frontmatter has no closing '---': read as body")
    metadata: dict[str, Any] = {}
    if fm_text is not None:
        if len(fm_text.encode("utf-8")) > max_frontmatter_bytes:
            problems.append(
                f"frontmatter over {max_frontmatter_bytes // 1024} KiB: ignored (body indexed)"
            )
        else:
            metadata, problem = load_frontmatter(fm_text)
            if problem:
                problems.append(problem)

    fields = _recognised_fields(metadata, problems)
    shape = outline_reference(body, body_line) if reference else outline(body, body_line, shapes)
    h1 = next((s.text for s in shape.sections if s.level == 1 and s.text), None)
    inline_tags, links = _tags_and_links(shape, path)

    folder_kind = FOLDER_KINDS.get(path.split("/", 1)[0]) if "/" in path else None
    kind = fields.pop("kind", None) or folder_kind or "note"
    if kind not in KINDS:
        problems.append(f"unknown kind {kind!r}: read as 'note' (use one of {', '.join(KINDS)})")
        kind = "note"
    if kind == "knowledge" and not fields.get("topic"):
        parts = path.split("/")
        if len(parts) > 2 and parts[0] == "knowledge":
            fields["topic"] = parts[1]

    stem = posixpath.splitext(posixpath.basename(path))[0]
    title = fields.get("title") or h1 or stem
    tags = _dedupe_casefold([*fields.get("tags", []), *inline_tags])
    fields["tags"] = list(tags)
    return ParsedNote(
        path=path,
        id=fields.get("id") or path,
        title=title,
        kind=kind,
        type=fields.get("type"),
        tags=tags,
        aliases=tuple(fields.get("aliases", [])),
        fields=fields,
        metadata=metadata,
        body=body,
        body_line=body_line,
        sections=tuple(shape.sections),
        links=tuple(links),
        blocks=tuple(shape.blocks),
        frontmatter_title=bool(fields.get("title")),
        problems=tuple(problems),
    )


def _recognised_fields(meta: dict[str, Any], problems: list[str]) -> dict[str, Any]:
    fields: dict[str, Any] = {}
    for key in STRING_FIELDS:
        value = meta.get(key)
        if value is None or value == "":
            continue
        if isinstance(value, (dict, list)):
            problems.append(f"frontmatter {key!r} should be text, got a {type(value).__name__}")
            continue
        fields[key] = str(value).strip()
    if "type" in fields:
        fields["type"] = fields["type"].lower()
    kind = meta.get("kind")
    if isinstance(kind, str) and kind.strip():
        fields["kind"] = kind.strip().lower()
    for key in DATE_FIELDS:
        value = meta.get(key)
        if value not in (None, ""):
            fields[key] = str(value)
    for key in LIST_FIELDS:
        value = meta.get(key)
        if value in (None, ""):
            continue
        if isinstance(value, str):
            items: Iterable[Any] = value.split(",")
        elif isinstance(value, list):
            items = value
        else:
            items = [value]
        cleaned = [str(v).strip() for v in items if v not in (None, "") and str(v).strip()]
        if key == "tags":
            cleaned = [t.lstrip("#") for t in cleaned if t.lstrip("#")]
        fields[key] = cleaned
    return fields


def _tags_and_links(shape: Outline, path: str) -> tuple[list[str], list[Link]]:
    tagged: list[str] = []  # the runs outside headings that may hold a tag
    links: list[Link] = []
    folder = posixpath.dirname(path)
    for content, first, in_heading in shape.inlines:
        # Each pattern needs its marker; most blocks have none, and a substring test
        # is far cheaper than a regular-expression scan that finds nothing.
        if "`" in content:
            content = _INLINE_CODE.sub(_blank, content)
        if "[[" in content:
            for m in _WIKILINK.finditer(content):
                at = m.start()
                line = first + content.count("\n", 0, at)
                bang = at > 0 and content[at - 1] == "!"
                links.append(_wikilink(bang, m.group(1), m.group(2), line))
        if not in_heading and "#" in content:
            tagged.append(content)
        if "](" not in content:
            continue
        for m in _MD_LINK.finditer(content):
            at = m.start()
            line = first + content.count("\n", 0, at)
            bang = at > 0 and content[at - 1] == "!"
            link = _markdown_link(m.group(1) or m.group(2) or "", folder, line, bang)
            if link:
                links.append(link)
    # One scan of all the runs, a line apart: a tag ends at a line's end and may start
    # after one, as at a run's start and end.
    found = _TAG.findall("\n".join(tagged)) if tagged else []
    return [tag for tag in map(_clean_tag, found) if tag], links


def _blank(m: re.Match[str]) -> str:
    return " " * len(m.group())


def _clean_tag(raw: str) -> str | None:
    m = _TAG_CHARS.match(raw)
    if not m:
        return None
    tag = m.group().strip("/")
    if not tag or tag.replace("/", "").isdigit():
        return None
    return tag


def _wikilink(bang: bool, inner: str, alias: str | None, line: int) -> Link:
    target, heading, block = inner.strip(), None, None
    if "#" in target:
        target, _, rest = target.partition("#")
        if rest.startswith("^"):
            block = rest[1:] or None
        else:
            heading = rest or None
    elif "^" in target:
        target, _, block = target.partition("^")
    return Link(
        target=target.strip(),
        heading=heading,
        block=block,
        alias=alias.strip() if alias else None,
        embed=bang,
        style="wiki",
        line=line,
    )


def _markdown_link(href: str, folder: str, line: int, bang: bool = False) -> Link | None:
    """The link to ``href`` written in a note in ``folder``, or None for no vault file."""
    if not href or _SCHEME.match(href) or href.startswith("#"):
        return None
    target, _, fragment = unquote(href).partition("#")
    base = "" if target.startswith("/") else folder
    joined = posixpath.normpath(posixpath.join(base, target.lstrip("/")))
    if not target.strip() or joined == ".." or joined.startswith("../"):
        return None  # no file, or one outside the vault
    return Link(
        target=joined,
        heading=None if fragment.startswith("^") else (fragment or None),
        block=fragment[1:] if fragment.startswith("^") else None,
        alias=None,
        embed=bang,
        style="markdown",
        line=line,
    )


def _dedupe_casefold(items: Iterable[str]) -> tuple[str, ...]:
    seen: set[str] = set()
    out: list[str] = []
    for item in items:
        key = item.casefold()
        if key not in seen:
            seen.add(key)
            out.append(item)
    return tuple(out)
