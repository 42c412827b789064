"""Text -> ParsedNote: frontmatter, title, headings, tags and links. Pure, no I/O.

Frontmatter is located by hand so that line numbers stay exact (python-frontmatter
strips the body), then loaded with PyYAML (all python-frontmatter's YAML handler
does) in one pass, with a loader that reads YAML the way people mean it in notes:

- only ``true``/``false`` are booleans (``draft: no`` stays the string "no");
- numbers with leading zeros stay strings (``id: 0123`` is "0123", not octal 83);
- dates come back as ISO strings;
- aliases/anchors are allowed, but a document that would expand past
  ``MAX_YAML_NODES`` (an alias bomb) is refused before it is built;
- ``!!python/...`` tags are unknown to the safe loader and are a parse error.

Any problem leaves the note indexable: it is reported in ``problems``.
"""

from __future__ import annotations

import datetime as dt
import math
import posixpath
import re
import unicodedata
from collections.abc import Iterable
from typing import Any
from urllib.parse import unquote

import yaml
from markdown_it import MarkdownIt
from markdown_it.token import Token

from .model import KINDS, Block, Link, ParsedNote, Section

MAX_YAML_NODES = 10_000

_YAML_BASE: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class NoteYamlLoader(_YAML_BASE):  # type: ignore[valid-type,misc]
    """Safe loader with YAML 1.2-style booleans and integers."""


_BOOL = "tag:yaml.org,2002:bool"
_INT = "tag:yaml.org,2002:int"
NoteYamlLoader.yaml_implicit_resolvers = {
    first: [(tag, rx) for tag, rx in resolvers if tag not in (_BOOL, _INT)]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
NoteYamlLoader.add_implicit_resolver(
    _BOOL, re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"), list("tTfF")
)
NoteYamlLoader.add_implicit_resolver(
    _INT, re.compile(r"^(?:[-+]?(?:0|[1-9][0-9_]*)|0x[0-9a-fA-F]+)$"), list("-+0123456789")
)

# Block structure only: inline parsing would cost a third of indexing time, and tags and
# links are read from each block's inline source with the patterns below.
_md = MarkdownIt("commonmark", {"html": True}).enable("table").disable("inline")

_FENCE_OPEN = re.compile(r"^---[ \t]*$")
_FENCE_CLOSE = re.compile(r"^(?:---|\.\.\.)[ \t]*$")
_INLINE_CODE = re.compile(r"(`+)(?:(?!\1).)+?\1", re.DOTALL)
_WIKILINK = re.compile(r"(!?)\[\[([^\[\]\n|]*?)(?:\\?\|([^\[\]\n]*))?\]\]")
# Obsidian: a tag starts after whitespace or at line start, has letters, digits,
# _ - / in any script, and is not only digits. ("Not after a non-space" says the same as
# "after a space or at a line start", and lets the engine look for "#" first.)
_TAG = re.compile(r"(?<!\S)#([^\s!-,.:-@\[-^`{-~]+)")
_TAG_CHARS = re.compile(r"[\w\-/]+")
_MD_LINK = re.compile(
    r"(?<!!)\[(?:[^\[\]\n]|\[[^\[\]\n]*\])*\]\(\s*(?:<([^>\n]*)>|([^\s()<>]+))"
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


def parse_note(path: str, text: str, *, max_frontmatter_bytes: int = 64 * 1024) -> ParsedNote:
    """Parse one note. ``path`` is vault-relative (POSIX); ``text`` is the decoded file."""
    path = unicodedata.normalize("NFC", path)
    problems: list[str] = []
    if text.startswith("\ufeff"):
        text = text[1:]
    fm_text, body, body_line = split_frontmatter(text)
    if fm_text is None and text.startswith("---") and _FENCE_OPEN.match(text.split("\n", 1)[0]):
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
    tokens = _md.parse(body)
    sections, h1, code_lines, blocks = _structure(tokens, body_line)
    inline_tags, links = _tags_and_links(tokens, body_line, path)

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
        sections=tuple(sections),
        links=tuple(links),
        code_lines=frozenset(code_lines),
        blocks=tuple(blocks),
        frontmatter_title=bool(fields.get("title")),
        problems=tuple(problems),
    )


def split_frontmatter(text: str) -> tuple[str | None, str, int]:
    """(frontmatter text or None, body, 1-based line where the body starts)."""
    if not text.startswith("---"):
        return None, text, 1
    lines = text.split("\n")
    if not _FENCE_OPEN.match(lines[0].rstrip("\r")):
        return None, text, 1
    for i in range(1, len(lines)):
        if _FENCE_CLOSE.match(lines[i].rstrip("\r")):
            fm = "\n".join(lines[1:i])
            return fm, "\n".join(lines[i + 1 :]), i + 2
    return None, text, 1


def load_frontmatter(fm_text: str) -> tuple[dict[str, Any], str | None]:
    """(mapping, problem). Never raises: bad YAML yields ({}, reason)."""
    if not fm_text.strip():
        return {}, None
    # Composed once: the node tree is measured (alias bombs) and then built into values,
    # which is what yaml.load does after composing.
    loader = NoteYamlLoader(fm_text)
    try:
        node = loader.get_single_node()
        if node is not None and _expanded_size(node) > MAX_YAML_NODES:
            return {}, f"frontmatter unsafe: aliases expand past {MAX_YAML_NODES} nodes; ignored"
        data = loader.construct_document(node) if node is not None else None
    except yaml.YAMLError as exc:
        reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        return {}, f"invalid YAML frontmatter ({reason}); ignored"
    except (RecursionError, ValueError, TypeError) as exc:
        return {}, f"invalid YAML frontmatter ({type(exc).__name__}); ignored"
    finally:
        loader.dispose()
    if data is None:
        return {}, None
    if not isinstance(data, dict):
        return {}, f"frontmatter is a {type(data).__name__}, not a mapping; ignored"
    return {str(k): to_json_value(v) for k, v in data.items()}, None


def parse_yaml_value(raw: str) -> Any:
    """A single YAML value as a note would read it (``no`` stays text); text if invalid."""
    try:
        return to_json_value(yaml.load(raw, Loader=NoteYamlLoader))
    except yaml.YAMLError:
        return raw


def _expanded_size(root: yaml.Node) -> int:
    """Node count with aliases expanded, computed without expanding them."""
    memo: dict[int, int] = {}

    def size(node: yaml.Node, depth: int) -> int:
        if depth > 100:
            return MAX_YAML_NODES + 1
        key = id(node)
        if key in memo:
            return memo[key]
        memo[key] = MAX_YAML_NODES + 1  # a cycle counts as unbounded
        if isinstance(node, yaml.SequenceNode):
            total = 1 + sum(size(child, depth + 1) for child in node.value)
        elif isinstance(node, yaml.MappingNode):
            total = 1 + sum(size(k, depth + 1) + size(v, depth + 1) for k, v in node.value)
        else:
            total = 1
        memo[key] = min(total, MAX_YAML_NODES + 1)
        return memo[key]

    return size(root, 0)


def to_json_value(value: Any) -> Any:
    """YAML value -> JSON-safe value: dates as ISO strings, keys as strings."""
    if isinstance(value, (dt.date, dt.datetime, dt.time)):
        return value.isoformat()
    if isinstance(value, dict):
        return {str(k): to_json_value(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set)):
        return [to_json_value(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, bytes):
        return value.hex()
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    return str(value)


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


def _structure(
    tokens: list[Token], body_line: int
) -> tuple[list[Section], str | None, set[int], list[Block]]:
    sections: list[Section] = []
    blocks: list[Block] = []
    h1: str | None = None
    code: set[int] = set()
    for i, tok in enumerate(tokens):
        if tok.level != 0 or not tok.map or tok.nesting == -1:
            continue
        start, end = body_line + tok.map[0], body_line + tok.map[1] - 1
        if tok.type == "heading_open":
            text = tokens[i + 1].content.strip()
            level = int(tok.tag[1])
            sections.append(Section(level, text, start))
            blocks.append(Block("heading", start, end, level, text))
            if level == 1 and h1 is None and text:
                h1 = text
        elif tok.type in ("fence", "code_block"):
            code.update(range(start, end + 1))
            blocks.append(Block("code", start, end))
        else:
            blocks.append(Block("text", start, end))
    return sections, h1, code, blocks


def _tags_and_links(tokens: list[Token], body_line: int, path: str) -> tuple[list[str], list[Link]]:
    tags: list[str] = []
    links: list[Link] = []
    in_heading = False
    for tok in tokens:
        if tok.type == "heading_open":
            in_heading = True
        elif tok.type == "heading_close":
            in_heading = False
        elif tok.type == "inline" and tok.map:
            first = body_line + tok.map[0]
            content = tok.content
            # Each pattern needs its marker; most blocks have none, and a substring test
            # is far cheaper than a regular-expression scan that finds nothing.
            if "`" in content:
                content = _INLINE_CODE.sub(lambda m: " " * len(m.group()), content)
            if "[[" in content:
                for m in _WIKILINK.finditer(content):
                    line = first + content.count("\n", 0, m.start())
                    links.append(_wikilink(m.group(1), m.group(2), m.group(3), line))
            if not in_heading and "#" in content:
                for m in _TAG.finditer(content):
                    tag = _clean_tag(m.group(1))
                    if tag:
                        tags.append(tag)
            if "](" not in content:
                continue
            for m in _MD_LINK.finditer(content):
                line = first + content.count("\n", 0, m.start())
                link = _markdown_link(m.group(1) or m.group(2) or "", path, line)
                if link:
                    links.append(link)
    return tags, links


def _clean_tag(raw: str) -> str | None:
    m = _TAG_CHARS.match(raw)
    if not m:
        return None
    tag = m.group().strip("/")
    if not tag or tag.replace("/", "").isdigit():
        return None
    return tag


def _wikilink(bang: str, inner: str, alias: str | None, line: int) -> Link:
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
        embed=bool(bang),
        style="wiki",
        line=line,
    )


def _markdown_link(href: str, source: str, line: int) -> Link | None:
    if not href or _SCHEME.match(href) or href.startswith("#"):
        return None
    target, _, fragment = unquote(href).partition("#")
    if not target.lower().endswith(".md"):
        return None
    base = "" if target.startswith("/") else posixpath.dirname(source)
    joined = posixpath.normpath(posixpath.join(base, target.lstrip("/")))
    return Link(
        target=joined,
        heading=None if fragment.startswith("^") else (fragment or None),
        block=fragment[1:] if fragment.startswith("^") else None,
        alias=None,
        embed=False,
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
