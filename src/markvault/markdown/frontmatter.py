"""Frontmatter rules, in one place: where the block is, how its YAML reads, how keys are
set and removed, and how templates fill it.

The block is located by hand so that line numbers stay exact (python-frontmatter strips
the body), then loaded with PyYAML in one pass (composed once, measured, then built: what
python-frontmatter's YAML handler does, less a second parse) with a loader that reads
YAML the way people mean it in notes:

- only ``true``/``false`` are booleans (``draft: no`` stays the string "no");
- numbers with leading zeros stay strings (``id: 0123`` is "0123", not octal 83);
- dates come back as ISO strings;
- aliases/anchors are allowed, but a document that would expand past
  ``MAX_YAML_NODES`` (an alias bomb) is refused before it is built;
- ``!!python/...`` tags are unknown to the safe loader and are a parse error.

A person's file is never round-tripped through a YAML library: keys are set and
removed line by line (``set_keys``), so comments, key order, quoting, unknown keys, the
BOM and line endings all survive, and a key is written as markvault always writes one
(``yaml_line``: one line, flow style).
"""

from __future__ import annotations

import datetime as dt
import json
import math
import re
from collections.abc import Mapping, Sequence
from typing import Any

import yaml

from markvault.errors import RefusedError

MAX_YAML_NODES = 10_000

_YAML_BASE: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class NoteYamlLoader(_YAML_BASE):  # type: ignore[valid-type,misc]
    """Safe loader with YAML 1.2-style booleans and integers."""


_BOOL = "tag:yaml.org,2002:bool"
_INT = "tag:yaml.org,2002:int"
_NULL = "tag:yaml.org,2002:null"
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

_FENCE_OPEN = re.compile(r"^---[ \t]*$")
# The closing line, found in the whole text (a line's trailing "\r"s are no part of it).
_FENCE_CLOSE_LINE = re.compile(r"^(?:---|\.\.\.)[ \t]*\r*$", re.M)
# A top-level key's line: "key:" or "key: value" (not a list item "- a: b", not a comment).
_TOP_KEY = re.compile(r"^(?!-\s)([^\s#:][^:]*?)\s*:(?:\s|$)")
_LINE = re.compile(r"[^\n]*\n|[^\n]+\Z")


def split_frontmatter(text: str) -> tuple[str | None, str, int]:
    """(frontmatter text or None, body, 1-based line where the body starts)."""
    if not text.startswith("---"):
        return None, text, 1
    nl = text.find("\n")
    if nl < 0 or not _FENCE_OPEN.match(text[:nl].rstrip("\r")):
        return None, text, 1
    # The first closing line, found without splitting the whole note into lines.
    close = _FENCE_CLOSE_LINE.search(text, nl + 1)
    if close is None:
        return None, text, 1
    at = close.start()
    end = text.find("\n", at)
    body = text[end + 1 :] if end >= 0 else ""
    return text[nl + 1 : at - 1], body, text.count("\n", 0, at) + 2


def load_frontmatter(fm_text: str) -> tuple[dict[str, Any], str | None]:
    """(mapping, problem). Never raises: bad YAML yields ({}, reason)."""
    if not fm_text.strip():
        return {}, None
    flat = _flat_mapping(fm_text)
    return (flat, None) if flat is not None else _load_yaml(fm_text)


def _load_yaml(fm_text: str) -> tuple[dict[str, Any], str | None]:
    """``load_frontmatter`` through PyYAML: what ``_flat_mapping`` is held to."""
    # Composed once: the node tree is measured (alias bombs) and then built into values,
    # which is all yaml.load (and python-frontmatter's YAML handler) does after composing.
    loader = NoteYamlLoader(fm_text)
    try:
        node = loader.get_single_node()
        if node is not None and _may_expand(fm_text) and _expanded_size(node) > MAX_YAML_NODES:
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


# A key PyYAML reads as the plain text it is (unless an implicit resolver claims it).
_FLAT_KEY = re.compile(r"\w[\w ./-]{0,99}(?<! )")
_CLAIMED = object()  # a plain scalar PyYAML reads as a number or a date


def _flat_mapping(fm_text: str) -> dict[str, Any] | None:
    """The mapping of frontmatter made only of ``key: value`` lines and ``- item`` lists
    under a key without a value, read without PyYAML (several times faster), or None: let
    PyYAML read it. Each value is what PyYAML returns, as only plain scalars are taken (no
    quotes, flow, tags, anchors, comments, tabs or multi-line values) and resolved by the
    loader's own implicit resolvers; a number or a date is left to PyYAML."""
    if "\t" in fm_text or _may_expand(fm_text) or not fm_text.replace("\n", "").isprintable():
        return None  # a control, format or unusual space character: PyYAML's own rules
    out: dict[str, Any] = {}
    items: list[Any] | None = None  # the block list of the last key, if it has no value
    key = ""
    for line in fm_text.split("\n"):
        if line[:1] == "-":  # "- item" (or "-")
            item = _plain(line[2:]) if line[1:2] == " " else _CLAIMED if line[1:] else None
            if items is None or item is _CLAIMED:
                return None
            items.append(item)
            out[key] = items
            continue
        name, colon, rest = line.partition(":")
        if not colon:
            if line.strip(" "):
                return None
            continue  # a blank line: the list above may go on after it
        value = _plain(rest) if rest[:1] == " " else _CLAIMED if rest else None
        if value is _CLAIMED or not _FLAT_KEY.fullmatch(name) or _plain(name) != name:
            return None
        key = name
        # Only a key with nothing after it takes a list: "d: null" is a value already.
        items = [] if not rest.strip(" ") else None
        out[key] = value
    return out


def _plain(text: str) -> Any:
    """What PyYAML reads from a plain scalar: its text, a boolean, None, or ``_CLAIMED``
    (a number, a date, or text that would not be a plain scalar on one line)."""
    text = text.strip(" ")
    if not text:
        return None
    if " #" in text or ": " in text or text[-1] == ":":
        return _CLAIMED  # a comment, a mapping inside, or an error
    if not (text[0].isalnum() or text[0] in "_./("):
        return _CLAIMED  # quoted, a list, a tag, an anchor, a block scalar ...
    for tag, rx in NoteYamlLoader.yaml_implicit_resolvers.get(text[0], ()):
        if rx.match(text):
            return text.lower() == "true" if tag == _BOOL else None if tag == _NULL else _CLAIMED
    return text


def parse_yaml_value(raw: str) -> Any:
    """A single YAML value as a note would read it (``no`` stays text); text if invalid."""
    try:
        return to_json_value(yaml.load(raw, Loader=NoteYamlLoader))
    except yaml.YAMLError:
        return raw


def _may_expand(fm_text: str) -> bool:
    """Whether the document could pass ``MAX_YAML_NODES``: only through an alias (``*``)
    or by its length. YAML makes under two nodes per character ("?" is a mapping with an
    empty key and value: three nodes from one character, so the bound takes three), and
    most frontmatter is far shorter, so most notes skip the measuring walk."""
    return "*" in fm_text or len(fm_text) * 3 > MAX_YAML_NODES


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


def opens_block(first_line: str) -> bool:
    """Whether a note's first line opens a frontmatter block (``---``)."""
    return bool(_FENCE_OPEN.match(first_line.rstrip("\r")))


def read_frontmatter(text: str) -> dict[str, Any]:
    """The frontmatter mapping of a note's text; empty when it has none or it is bad."""
    fm_text, _, _ = split_frontmatter(text.lstrip("\ufeff"))
    return load_frontmatter(fm_text)[0] if fm_text is not None else {}


# ---- keys, line by line ---------------------------------------------------------------


def yaml_line(key: str, value: Any, nl: str = "\n") -> str:
    """``key: value`` on one line (flow style), as markvault writes every key."""
    dumped = yaml.safe_dump(
        {key: value}, default_flow_style=True, allow_unicode=True, sort_keys=False, width=10**6
    ).strip()
    # safe_dump wraps a mapping in braces: {key: value}
    if dumped.startswith("{") and dumped.endswith("}"):
        dumped = dumped[1:-1]
    return dumped + nl


def is_plain_key(key: str) -> bool:
    """Whether ``key`` can be found and written as a top-level key line."""
    return bool(key) and bool(_TOP_KEY.match(key + ":"))


def key_spans(lines: Sequence[str]) -> dict[str, list[tuple[int, int]]]:
    """Top-level key -> its [start, stop) ranges of ``lines`` (the block's lines between
    its fences), block values included; a key written twice has two ranges."""
    spans: dict[str, list[tuple[int, int]]] = {}
    i = 0
    while i < len(lines):
        m = _TOP_KEY.match(lines[i])
        if not m:
            i += 1
            continue
        j = i + 1
        while (
            j < len(lines)
            and (lines[j][:1] in (" ", "\t", "-") or not lines[j].strip())
            and not lines[j].startswith("---")
        ):
            j += 1
        while j > i + 1 and not lines[j - 1].strip():
            j -= 1  # blank lines after the value belong to nobody
        spans.setdefault(m.group(1).strip().strip("'\""), []).append((i, j))
        i = j
    return spans


def set_keys(
    text: str,
    values: Mapping[str, Any],
    *,
    only_missing: Mapping[str, Any] | None = None,
    order: Sequence[str] = (),
    where: str = "the note",
    hint: str = "Fix it by hand; the note's body can still be edited.",
) -> str:
    """``text`` (a note without its BOM, any line endings) with frontmatter keys set line
    by line; every other byte stays as it was.

    ``values`` are written (``None`` removes the key); ``only_missing`` only where the key
    is absent. A key already there keeps its place and its first lines (a repeat of it
    goes: YAML would read the last one); a new key goes last. A note without frontmatter
    gets a block, its keys in ``order``.

    Raises:
        RefusedError: the frontmatter is not a YAML mapping (``hint`` says what to do).
    """
    nl = "\r\n" if "\r\n" in text else "\n"
    fm_text, _, body_line = split_frontmatter(text)
    if fm_text is None:
        new = {k: v for k, v in {**(only_missing or {}), **values}.items() if v is not None}
        if not new:
            return text
        keys = sorted(new, key=lambda k: order.index(k) if k in order else len(order))
        return "---" + nl + "".join(yaml_line(k, new[k], nl) for k in keys) + "---" + nl + text
    meta, problem = load_frontmatter(fm_text)
    if problem or (fm_text.strip() and not meta and not _TOP_KEY.match(fm_text.lstrip())):
        raise RefusedError(
            f"The frontmatter of {where} cannot be edited key by key "
            f"({problem or 'not a mapping'}).",
            hint,
        )
    lines = _LINE.findall(text)
    block, rest = lines[1 : body_line - 2], lines[body_line - 2 :]
    spans = key_spans(block)
    added: list[str] = []
    for key, value in values.items():
        line = [] if value is None else [yaml_line(key, value, nl)]
        if key in spans:
            block = _replace_spans(block, spans[key], line)
            spans = key_spans(block)
        else:
            added += line
    for key, value in (only_missing or {}).items():
        if key not in meta and key not in spans and value is not None:
            added.append(yaml_line(key, value, nl))
    return "".join([lines[0], *block, *added, *rest])


def _replace_spans(lines: list[str], spans: list[tuple[int, int]], new: list[str]) -> list[str]:
    """The first span becomes ``new``; later repeats of the key are dropped."""
    out = list(lines)
    for n, (start, stop) in reversed(list(enumerate(spans))):
        out[start:stop] = new if n == 0 else []
    return out


# ---- templates ----------------------------------------------------------------------

_PLACEHOLDER = re.compile(r"\{\{\s*(\w+)\s*\}\}")
# In frontmatter a placeholder may sit in quotes: "{{title}}".
_YAML_PLACEHOLDER = re.compile(r"\"?\{\{\s*(\w+)\s*\}\}\"?")
# Values YAML reads back unchanged without quotes (no ": ", " #", flow or quote marks).
_PLAIN_YAML = re.compile(r"^[\w][\w.+/-]*(?:[ :T][\w.+/:-]+)*$")
# ... and that YAML would not read as a boolean, null or number.
_YAML_SPECIAL = re.compile(
    r"^(true|false|null|~|[-+]?[\d._]+(e[-+]?\d+)?|0x[0-9a-f]+|0o[0-7]+|[-+]?\.(inf|nan))$",
    re.IGNORECASE,
)


def fill_template(template: str, values: dict[str, Any]) -> str:
    """A template with its placeholders filled: in the frontmatter as YAML scalars that
    survive any title (quotes, backslashes, ": ", "#"), in the body as plain text."""
    fm_text, _, body_line = split_frontmatter(template)

    def plain(m: re.Match[str]) -> str:
        value = values.get(m.group(1))
        if value is None:
            return m.group(0)
        return ", ".join(value) if isinstance(value, list) else str(value)

    def yaml_scalar(m: re.Match[str]) -> str:
        value = values.get(m.group(1))
        if value is None:
            return m.group(0)
        quoted = m.group(0).startswith('"')
        if value == "":
            return '""' if quoted else ""
        if isinstance(value, list):
            items = [v if _plain_yaml(v) else json.dumps(v, ensure_ascii=False) for v in value]
            return "[" + ", ".join(items) + "]"
        if not quoted and _plain_yaml(value):
            return str(value)
        # A JSON string is a valid YAML double-quoted scalar, escapes included.
        return json.dumps(value, ensure_ascii=False)

    if fm_text is None:
        return _PLACEHOLDER.sub(plain, template)
    lines = template.split("\n")
    head = "\n".join(lines[: body_line - 1])
    rest = "\n".join(lines[body_line - 1 :])
    return _YAML_PLACEHOLDER.sub(yaml_scalar, head) + "\n" + _PLACEHOLDER.sub(plain, rest)


def _plain_yaml(value: str) -> bool:
    return bool(_PLAIN_YAML.match(value)) and not _YAML_SPECIAL.match(value)
