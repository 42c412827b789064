"""The policy a vault sets for credentials (``[credentials]`` in ``.markvault.toml``):
redact (the default) or refuse, and the allowlist of known false positives by note and
fingerprint. The allowlist is applied here and only here (:meth:`CredentialPolicy.sift`,
:func:`sift`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from markvault.config import CredentialSettings
from markvault.credentials.detection import scan
from markvault.credentials.finding import (
    REDACTED,
    Finding,
    count_of,
    describe,
    fingerprint,
    names_of,
    redact_and_relocate,
)
from markvault.errors import RefusedError

Mode = Literal["redact", "refuse"]


# ---- the policy a vault sets ---------------------------------------------------------


class CredentialRefused(RefusedError):
    """Refused to write or sync text holding a credential (the vault's setting)."""

    def __init__(self, message: str, hint: str, findings: Sequence[Finding]) -> None:
        super().__init__(message, hint)
        self.findings = tuple(findings)


@dataclass(frozen=True)
class Checked:
    """What the gate made of one text: the text to write and what it found."""

    text: str
    redacted: tuple[Finding, ...] = ()
    allowed: tuple[Finding, ...] = ()  # kept: the allowlist names them

    @property
    def sentence(self) -> str:
        return describe(self.redacted)


@dataclass(frozen=True)
class CredentialPolicy:
    """A vault's ``[credentials]`` table (config.CredentialSettings) at work: redact (the
    default) or refuse, and an allowlist of known false positives by note and
    fingerprint."""

    mode: Mode = "redact"
    allow: frozenset[tuple[str, str]] = frozenset()  # (note path or "*", fingerprint)

    @classmethod
    def of(cls, settings: CredentialSettings) -> CredentialPolicy:
        return cls(settings.mode, settings.allow)

    def allowed_in(self, note: str) -> frozenset[str]:
        """The fingerprints the allowlist lets through in ``note``: those it names for
        that note, and those it allows anywhere (``"*"``)."""
        return frozenset(fp for where, fp in self.allow if where in (note, "*"))

    def sift(
        self, note: str, findings: Sequence[Finding], text: str = ""
    ) -> tuple[tuple[Finding, ...], tuple[Finding, ...]]:
        """``findings`` of ``text`` in ``note`` sifted by the allowlist (see :func:`sift`)."""
        return sift(findings, self.allowed_in(note), text)

    def check(
        self,
        text: str,
        *,
        note: str,
        part: str | None = None,
        findings: Sequence[Finding] | None = None,
        marker: str = REDACTED,
    ) -> Checked:
        """The text to write: credentials redacted (or refused, in refuse mode),
        allowlisted ones kept. ``findings``: only these (fingerprinted) of the text's,
        e.g. those an edit adds; by default every one. The redacted findings come back
        placed on their markers in the new text.

        Raises:
            CredentialRefused: in refuse mode, a credential not on the allowlist.
        """
        findings = scan(text, part) if findings is None else findings
        if not findings:
            return Checked(text)
        found, allowed = self.sift(note, findings, text)
        if found and self.mode == "refuse":
            raise refusal(note, found)
        redacted, moved = redact_and_relocate(text, found, marker)
        return Checked(redacted, tuple(moved), allowed)


def sift(
    findings: Sequence[Finding], allowed: frozenset[str], text: str = ""
) -> tuple[tuple[Finding, ...], tuple[Finding, ...]]:
    """(to act on, let through): a finding is let through when its fingerprint is one
    ``allowed`` names. A finding without a fingerprint (``find``'s: fingerprints are
    slow) is fingerprinted from ``text``, and only when the allowlist names any."""
    if not allowed:
        return tuple(findings), ()
    found: list[Finding] = []
    let_through: list[Finding] = []
    for f in findings:
        known = f.fingerprint or fingerprint(f.rule, text[f.start : f.end])
        (let_through if known in allowed else found).append(f)
    return tuple(found), tuple(let_through)


def refusal(
    note: str, findings: Sequence[Finding], outcome: str = "nothing was written"
) -> CredentialRefused:
    """The error for ``findings`` in ``note``: what and where, and how to allow one."""
    return CredentialRefused(
        f"Refused: {note} holds {count_of(findings)} ({names_of(findings)}); {outcome}.",
        "Remove it (a credential belongs in a password manager, not in notes). If it is "
        "not a secret, allow it in .markvault.toml: [credentials] allow = "
        f'[{{ note = "{note}", fingerprint = "{findings[0].fingerprint}" }}]',
        findings,
    )
