"""The credential gate's detection: every credential in a text, by every rule.

Every path that writes note text (MCP tools, CLI commands, transcript import,
templates) and every path that carries notes away (``vault sync``, ``vault check``)
asks this module (through ``policy`` for what a vault allows); no other module than
the rule tables (``token_rules``, ``key_value_rules``) holds a secret pattern.

**Our own focused rules, not detect-secrets.** detect-secrets (Yelp) is line-based,
configured through process-global settings (unsafe in the threaded index owner),
reports lines but not spans (nothing to redact with), needs ``requests``, and its hex
high-entropy plugin flags exactly what must pass here: content hashes and git SHAs
(measured on 2,000 generated notes, 11.7 MB: it flagged 100 of 150 quoted
``"hash": "<hex>"`` lines, and scanned 0.05 MB/s where these rules scan 13 MB/s, both
under the same load). Its last release is from 2024. Two families of rules run: token
rules (formats that identify themselves) and key-value rules (a secret named by its
key); where they overlap, the union is one finding.
"""

from __future__ import annotations

import string
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from markvault.credentials.finding import (
    NAME_REDACTED,
    REDACTED,
    Finding,
    fingerprint,
    redact_and_relocate,
)
from markvault.credentials.key_value_rules import assignment_findings
from markvault.credentials.token_rules import TOKEN_RULES, glued_shape

_SHORTEST_TOKEN = 12  # characters: no self-identifying token is shorter


_ASCII_LOWER = str.maketrans(string.ascii_uppercase, string.ascii_lowercase)


# ---- scanning ------------------------------------------------------------------------


def find(text: str, *, tokens_only: bool = False, code: bool = False) -> list[Finding]:
    """Every credential in ``text``, in order, overlaps merged; no fingerprints (fast).
    ``tokens_only``: only tokens that name themselves and private keys (for the text
    runs of a binary file, where a ``key = value`` means nothing). ``code``: a source
    or minified file, where a tokenizer's token fields and a minifier's one-letter
    names are code, so a value named by its key counts only when it looks random.

    Where two rules match overlapping text (``API_KEY=sk-proj-...``) the union is one
    finding, named by the first rule in table order (token rules before key-value).
    """
    if not text:
        return []
    lowered = text.lower()
    if len(lowered) != len(text):  # a few letters lower to two characters ("İ")
        lowered = text.translate(_ASCII_LOWER)
    # Self-identifying tokens are long words: looking for their prefixes among the long
    # words only (a small share of prose) spares a pass over the text per keyword.
    words = [w for w in lowered.split() if len(w) >= _SHORTEST_TOKEN]
    long_words = " ".join(words)
    longest = max(map(len, words), default=0)
    spans: list[tuple[int, int, int, str, str]] = []  # start, end, priority, rule, kind
    for priority, rule in enumerate(TOKEN_RULES):
        if tokens_only and not (rule.in_long_word or rule.id == "private-key"):
            continue
        if rule.min_word > longest:
            continue
        haystack = long_words if rule.in_long_word else lowered
        if not any(k in haystack for k in rule.keywords):
            continue
        for m in rule.pattern.finditer(text):
            secret = m.group(rule.group)
            glued = rule.glued and m.start() > 0 and text[m.start() - 1].isalnum()
            if secret and rule.accept(secret) and not (glued and not glued_shape(secret)):
                spans.append((m.start(rule.group), m.end(rule.group), priority, rule.id, rule.kind))
    tail = len(TOKEN_RULES)
    assigned = () if tokens_only else assignment_findings(text, lowered, code)
    for rule_id, kind, start, end in assigned:
        spans.append((start, end, tail, rule_id, kind))
    return _merged(text, spans)


def _merged(text: str, spans: list[tuple[int, int, int, str, str]]) -> list[Finding]:
    spans.sort(key=lambda s: (s[0], -s[1]))
    merged: list[list[Any]] = []
    for start, end, priority, rule, kind in spans:
        if merged and start < merged[-1][1]:
            last = merged[-1]
            last[1] = max(last[1], end)
            if priority < last[2]:
                last[2:] = [priority, rule, kind]
        else:
            merged.append([start, end, priority, rule, kind])
    findings = []
    for start, end, _, rule, kind in merged:
        line = text.count("\n", 0, start) + 1
        column = start - (text.rfind("\n", 0, start) + 1) + 1
        findings.append(Finding(rule, kind, start, end, line, column))
    return findings


def scan(text: str, part: str | None = None, *, code: bool = False) -> list[Finding]:
    """:func:`find` with fingerprints; ``part`` labels where the text came from
    (``"title"``) in place of a line number."""
    return [
        replace(f, fingerprint=fingerprint(f.rule, text[f.start : f.end]), part=part)
        for f in find(text, code=code)
    ]


def scan_tokens(text: str) -> list[Finding]:
    """:func:`scan` with ``tokens_only`` (see :func:`find`)."""
    return [
        replace(f, fingerprint=fingerprint(f.rule, text[f.start : f.end]))
        for f in find(text, tokens_only=True)
    ]


def redact(text: str, findings: Sequence[Finding] | None = None, marker: str = REDACTED) -> str:
    """``text`` with each finding's span replaced by ``marker``."""
    return redact_and_relocate(text, find(text) if findings is None else findings, marker)[0]


def unsecret(name: str) -> str:
    """``name`` (a note's path or title) with every credential replaced, the allowlist
    aside: how a message shows a name, never with the secret in it."""
    return redact(name, marker=NAME_REDACTED)
