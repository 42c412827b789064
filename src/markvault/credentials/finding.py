"""A credential found in a text: where it is (never what it is), its fingerprint, and
the text with it redacted.

- **A fingerprint never contains the secret**: ``<rule>:<16 hex>`` from a salted,
  slow hash (PBKDF2), so a short password cannot be read back from an allowlist
  entry by a quick dictionary run. It is stable, so an allowlist entry survives edits.
- **One marker**, ``[REDACTED]``, visible in the note; the result of the write says
  what was redacted and where. Redacting is idempotent: the marker is never a finding.
"""

from __future__ import annotations

import hashlib
import secrets as _secrets
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from markvault.answers.writing import RedactedFinding

REDACTED = "[REDACTED]"
NAME_REDACTED = "REDACTED"  # in a file name: brackets would break a [[wikilink]] to it


_FINGERPRINT_ITERATIONS = 10_000
_FINGERPRINT_SALT = b"markvault credential fingerprint v1:"
_SHOWN_IN_SENTENCE = 5  # findings named in a result sentence before "and N more"


@dataclass(frozen=True)
class Finding:
    """One credential in a text. Holds where it is, never what it is."""

    rule: str  # stable id, e.g. "github-token"
    kind: str  # for people, e.g. "GitHub token"
    start: int  # span of the secret in the scanned text (the value, not its key)
    end: int
    line: int  # 1-based
    column: int  # 1-based
    fingerprint: str = ""  # "<rule>:<16 hex>"; filled by scan(), empty from find()
    part: str | None = None  # "title", "file name"...; None: the text itself

    @property
    def where(self) -> str:
        return self.part or f"line {self.line}"

    def to_dict(self) -> RedactedFinding:
        return {
            "kind": self.kind,
            "rule": self.rule,
            "line": self.line,
            "column": self.column,
            "where": self.where,
            "fingerprint": self.fingerprint,
        }


_fingerprints: dict[bytes, str] = {}
_CACHE_KEY = _secrets.token_bytes(16)  # cache keys mean nothing outside this process


def fingerprint(rule: str, secret: str) -> str:
    """``<rule>:<16 hex>``: stable across runs and machines, never the secret."""
    data = secret.encode("utf-8", "surrogatepass")
    key = hashlib.blake2b(rule.encode() + b"\0" + data, key=_CACHE_KEY).digest()
    cached = _fingerprints.get(key)
    if cached is None:
        digest = hashlib.pbkdf2_hmac(
            "sha256", data, _FINGERPRINT_SALT + rule.encode(), _FINGERPRINT_ITERATIONS
        )
        cached = f"{rule}:{digest[:8].hex()}"
        if len(_fingerprints) > 4096:
            _fingerprints.clear()
        _fingerprints[key] = cached
    return cached


def redact_and_relocate(
    text: str, findings: Sequence[Finding], marker: str = REDACTED
) -> tuple[str, list[Finding]]:
    """``text`` redacted, and each finding moved onto its marker there (line, column,
    span): a private key block's lines are gone, so later lines move up."""
    out: list[str] = []
    moved: list[Finding] = []
    last = length = 0
    line, line_start = 1, 0  # in the output
    for f in sorted(findings, key=lambda f: f.start):
        before = text[last : f.start]
        out.append(before)
        newlines = before.count("\n")
        if newlines:
            line += newlines
            line_start = length + before.rfind("\n") + 1
        length += len(before)
        moved.append(
            replace(
                f,
                start=length,
                end=length + len(marker),
                line=line,
                column=length - line_start + 1,
            )
        )
        out.append(marker)
        length += len(marker)
        last = f.end
    out.append(text[last:])
    return "".join(out), moved


def names_of(findings: Sequence[Finding]) -> str:
    named = [f"{f.kind}, {f.where}" for f in findings[:_SHOWN_IN_SENTENCE]]
    if len(findings) > _SHOWN_IN_SENTENCE:
        named.append(f"and {len(findings) - _SHOWN_IN_SENTENCE} more")
    return "; ".join(named)


def count_of(findings: Sequence[Finding]) -> str:
    return f"{len(findings)} credential{'' if len(findings) == 1 else 's'}"


def describe(findings: Sequence[Finding], verb: str = "redacted") -> str:
    """``1 credential redacted: GitHub token, line 3`` (empty for no findings)."""
    return f"{count_of(findings)} {verb}: {names_of(findings)}" if findings else ""
