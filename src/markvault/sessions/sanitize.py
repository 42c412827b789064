"""Text as it may appear in a session note: sanitised while a transcript is read.

Every string that can reach a note goes through :func:`sanitize`: ``<private>`` spans
are dropped, secrets become ``[REDACTED]`` (the credential gate's rules), control
characters and ANSI escapes go, base64 blobs become placeholders. A
:class:`~markvault.sessions.session.Session` therefore never holds a secret, whoever
renders it (CLI, MCP, tests).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from markvault.credentials import detection as credentials
from markvault.credentials.policy import sift

_ANSI = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)?|[@-Z\\-_])")
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\ufeff]")
_SURROGATE = re.compile(r"[\ud800-\udfff]")
_PRIVATE = re.compile(r"<private>.*?(?:</private>|\Z)|</private>", re.IGNORECASE | re.DOTALL)
_BASE64 = re.compile(r"(?:data:[\w.+/-]+;base64,)?[A-Za-z0-9+/]{200,}={0,2}")


@dataclass
class RedactionCounter:
    """Counts redactions across one transcript (reported, never stored with the secret)."""

    redactions: int = 0


def sanitize(
    text: str,
    counter: RedactionCounter | None = None,
    gated: bool = False,
    allowed: frozenset[str] = frozenset(),
) -> str:
    """Text as it may appear in a note: private spans gone, secrets redacted (unless
    ``gated``: the caller passes the text through the credential gate itself; or
    ``allowed``: fingerprints the vault's allowlist lets through), clean.

    Order matters: ``<private>`` spans go first so that nothing inside them is ever
    processed further; secrets are redacted before base64 blobs are collapsed so a
    token inside a long blob cannot survive by being cut.
    """
    counter = counter if counter is not None else RedactionCounter()
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    text = text.replace("\u2028", "\n").replace("\u2029", "\n")
    text = _SURROGATE.sub("\ufffd", _CONTROL.sub("", _ANSI.sub("", text)))
    text = _PRIVATE.sub("", text)
    if not gated:
        text = redact(text, counter, allowed)
    return _BASE64.sub(_base64_placeholder, text)


def _base64_placeholder(m: re.Match[str]) -> str:
    """Encoded data uses most of its alphabet; a run of one letter or of hex digits is text."""
    blob = m.group()
    if len(set(blob[:400])) < 24:
        return blob
    return f"[base64 data, {len(blob)} chars]"


def redact(
    text: str, counter: RedactionCounter | None = None, allowed: frozenset[str] = frozenset()
) -> str:
    """``text`` with every credential the gate finds (credentials/detection.py) redacted, except
    those whose fingerprint is ``allowed`` (fingerprints are slow: only taken then)."""
    findings, _ = sift(credentials.find(text), allowed, text)
    if counter is not None:
        counter.redactions += len(findings)
    return credentials.redact(text, findings) if findings else text


def one_line(text: str, limit: int) -> str:
    """Whitespace collapsed, at most ``limit`` characters, cut at a word if one is near."""
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    cut = text[: limit - 1]
    space = cut.rfind(" ")
    if space > limit * 0.6:
        cut = cut[:space]
    return cut.rstrip() + "…"
