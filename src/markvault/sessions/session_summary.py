"""A session note's ``## Summary``: what a session did, written by a person or an agent.

The summary is the one part of a session note that import never regenerates. It is
written (:func:`set_summary`) as an overview and three lists — ``### Decisions``,
``### Outcomes``, ``### Open items`` — each line escaped so that no summary text can
open a heading, a code fence or an HTML block that would swallow the transcript; and
read back (:func:`read_summary`) from such a section or from a note written by hand
from ``templates/session.md``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from markvault.errors import UsageError
from markvault.markdown.edit import replace_section, section_spans
from markvault.markdown.frontmatter import read_frontmatter, set_keys
from markvault.sessions.sanitize import sanitize
from markvault.sessions.session_note import FRONTMATTER_HINT, NOTE_KEY_ORDER

if TYPE_CHECKING:
    from markvault.answers.sessions import SummaryJSON


@dataclass(frozen=True)
class SessionSummary:
    """What a session did, written by a person or an agent into ``## Summary``."""

    overview: str = ""
    decisions: tuple[str, ...] = ()
    outcomes: tuple[str, ...] = ()
    open_items: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()

    def to_dict(self) -> SummaryJSON:
        return {
            "overview": self.overview,
            "decisions": list(self.decisions),
            "outcomes": list(self.outcomes),
            "open_items": list(self.open_items),
            "tags": list(self.tags),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> SessionSummary:
        """From JSON (CLI, MCP); lists may also be given as one string.

        Raises:
            UsageError: unknown keys or values of the wrong type.
        """
        unknown = set(data) - {"overview", "decisions", "outcomes", "open_items", "tags"}
        if unknown:
            raise UsageError(
                f"Unknown summary field(s): {', '.join(sorted(unknown))}.",
                "Use overview, decisions, outcomes, open_items and tags.",
            )
        overview = data.get("overview") or ""
        if not isinstance(overview, str):
            raise UsageError("The summary's overview must be text.")
        return cls(
            overview=overview,
            decisions=_str_list(data, "decisions"),
            outcomes=_str_list(data, "outcomes"),
            open_items=_str_list(data, "open_items"),
            tags=_str_list(data, "tags"),
        )


def _str_list(data: Mapping[str, Any], key: str) -> tuple[str, ...]:
    value = data.get(key) or []
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise UsageError(f"The summary's {key} must be a list of texts.")
    return tuple(v for v in value if v.strip())


_SUBSECTIONS = (("decisions", "Decisions"), ("outcomes", "Outcomes"), ("open_items", "Open items"))
_BLOCK_START = re.compile(r"^([#`~<])")


def render_summary(summary: SessionSummary, gated: bool = False) -> str:
    """The body of ``## Summary``: overview paragraphs, then one list per subsection.

    Paragraphs and items are each put on one line (whitespace collapsed) and a leading
    ``#``, backtick, ``~`` or ``<`` is escaped, so no summary text can open a heading,
    a code fence or an HTML block that would swallow the transcript. Secrets and
    ``<private>`` spans are removed as in transcripts (secrets too unless ``gated``:
    the core's writes leave them to the credential gate, which reports them).

    Raises:
        UsageError: the summary has no content.
    """
    overview = sanitize(summary.overview, gated=gated)
    paragraphs = [_summary_line(p) for p in re.split(r"\n\s*\n", overview)]
    blocks = [p for p in paragraphs if p]
    for attr, title in _SUBSECTIONS:
        items = [_summary_line(sanitize(i, gated=gated)) for i in getattr(summary, attr)]
        items = [item for item in items if item]
        if items:
            blocks += [f"### {title}", "\n".join(f"- {item}" for item in items)]
    if not blocks:
        raise UsageError(
            "The summary is empty.", "Give an overview, or decisions, outcomes or open items."
        )
    return "\n\n".join(blocks) + "\n"


def _summary_line(text: str) -> str:
    line = " ".join(text.split())
    line = re.sub(r"^([-*+])(?=\s)", r"\\\1", line) if line[:1] in "-*+" else line
    return _BLOCK_START.sub(r"\\\1", line)


def set_summary(text: str, summary: SessionSummary, gated: bool = False) -> str:
    """``text`` with its ``## Summary`` section replaced by ``summary``; tags merged.

    The rest of the note — the transcript above all — is kept byte for byte. Without a
    summary section, one is inserted before ``## Transcript`` (or appended). The
    summary's tags are added to the frontmatter ``tags`` (existing ones stay first).

    Raises:
        UsageError: the summary is empty.
        RefusedError: the frontmatter is not valid YAML.
    """
    bom = "\ufeff" if text.startswith("\ufeff") else ""
    body = text[len(bom) :]
    crlf = "\r\n" in body
    if crlf:
        body = body.replace("\r\n", "\n")
    section = "## Summary\n\n" + render_summary(summary, gated)
    spans = section_spans(body)
    if (2, "summary") in spans:
        body = replace_section(body, "Summary", section)
    else:
        span = spans.get((2, "transcript"))
        if span is None:
            body = body.rstrip("\n") + "\n\n" + section
        else:
            body = body[: span[0]] + section + "\n" + body[span[0] :]
    tags = _clean_tags(summary.tags)
    if tags:
        existing = _note_tags(body)
        known = {t.casefold() for t in existing}
        merged = existing + [t for t in tags if t.casefold() not in known]
        if merged != existing:
            body = set_keys(body, {"tags": merged}, order=NOTE_KEY_ORDER, hint=FRONTMATTER_HINT)
    return bom + (body.replace("\n", "\r\n") if crlf else body)


def _clean_tags(tags: Sequence[str]) -> list[str]:
    out: list[str] = []
    seen: set[str] = set()
    for tag in tags:
        clean = re.sub(r"\s+", "-", sanitize(tag).strip().lstrip("#"))
        clean = re.sub(r"[^\w/-]", "", clean).strip("/-")
        if clean and clean.casefold() not in seen:
            seen.add(clean.casefold())
            out.append(clean)
    return out


def _note_tags(text: str) -> list[str]:
    value = read_frontmatter(text).get("tags")
    if isinstance(value, str):
        value = value.split(",")
    if not isinstance(value, list):
        return []
    return [str(v).strip().lstrip("#") for v in value if v is not None and str(v).strip()]


_COMMENT = re.compile(r"<!--.*?-->", re.DOTALL)
_ITEM = re.compile(r"^\s{0,3}(?:[-*+]|\d{1,9}[.)])\s+(.*)$")


def read_summary(text: str) -> SessionSummary | None:
    """The ``## Summary`` section parsed back; ``None`` when it is absent or empty.

    Text before the first ``###`` is the overview; list items under ``### Decisions``,
    ``### Outcomes`` and ``### Open items`` are the lists (other subsections are left
    out); ``tags`` are the note's frontmatter tags. Notes written by hand from
    ``templates/session.md`` keep those lists in level-2 sections (``## Decisions``);
    they are read too when the summary has no such subsection.
    """
    body = text.lstrip("\ufeff").replace("\r\n", "\n")
    spans = section_spans(body)
    parts: dict[str, list[str]] = {"overview": []}
    span = spans.get((2, "summary"))
    if span is not None:
        current = "overview"
        for line in body[span[0] : span[1]].split("\n")[1:]:
            heading = re.match(r"^ {0,3}#{3,6}\s+(.*?)\s*#*\s*$", line)
            if heading:
                name = heading.group(1).casefold()
                current = next((a for a, title in _SUBSECTIONS if title.casefold() == name), "")
                parts.setdefault(current, [])
                continue
            parts.setdefault(current, []).append(line)
    for attr, title in _SUBSECTIONS:
        level2 = spans.get((2, title.casefold()))
        if attr not in parts and level2 is not None:
            parts[attr] = body[level2[0] : level2[1]].split("\n")[1:]
    overview = _COMMENT.sub("", "\n".join(parts["overview"]))
    paragraphs = [_unescape(" ".join(p.split())) for p in re.split(r"\n\s*\n", overview)]
    lists = {attr: tuple(_list_items(parts.get(attr, []))) for attr, _ in _SUBSECTIONS}
    summary = SessionSummary(
        overview="\n\n".join(p for p in paragraphs if p),
        decisions=lists["decisions"],
        outcomes=lists["outcomes"],
        open_items=lists["open_items"],
        tags=tuple(_note_tags(body)),
    )
    if not (summary.overview or summary.decisions or summary.outcomes or summary.open_items):
        return None
    return summary


def _list_items(lines: list[str]) -> list[str]:
    items: list[list[str]] = []
    for line in _COMMENT.sub("", "\n".join(lines)).split("\n"):
        m = _ITEM.match(line)
        if m:
            items.append([m.group(1)])
        elif line.strip() and items:
            items[-1].append(line.strip())  # continuation of the item above
    return [_unescape(" ".join(" ".join(item).split())) for item in items]


def _unescape(line: str) -> str:
    return re.sub(r"^\\([#`~<\-*+])", r"\1", line)


def has_summary(text: str) -> bool:
    """Whether the note's ``## Summary`` holds anything beyond the placeholder comment."""
    return read_summary(text) is not None
