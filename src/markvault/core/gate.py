"""The credential gate where the core writes: every title, name, frontmatter value and
note text a write brings passes the vault's policy (credentials/policy.py, ``[credentials]`` in
``.markvault.toml``) before anything is named or written, and the write's result says
what was redacted. Every write path of the core (create, edit, move, restore, learn,
store, session summaries) goes through ``CredentialGate.write``; transcript import
redacts on its own, always (sessions/sanitize.py, with the allowlist's fingerprints from
core/session_import.py), so that automatic capture never loses a session to refuse mode.

An edit answers only for what it adds: a credential already in the note (a person's,
or an allowed one) is left as it is, to ``vault check`` and ``vault sync``.

The rules module is imported on the first write, not with the core: a process that
only searches never compiles its patterns.
"""

from __future__ import annotations

import collections
from collections.abc import Iterable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from markvault.config import CONFIG_FILE, Settings, read_credential_settings

if TYPE_CHECKING:
    from markvault.answers.writing import CredentialReport
    from markvault.credentials.finding import Finding
    from markvault.credentials.policy import CredentialPolicy
    from markvault.types.edits import Edit


class CredentialGate:
    """The vault's credential policy, as it is in ``.markvault.toml`` now."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self._config = settings.vault_dir / CONFIG_FILE
        self._stamp = _stamp(self._config)
        self._policy: CredentialPolicy | None = None

    def policy(self) -> CredentialPolicy:
        """The policy, read again when the settings file changed since (an allowlist
        entry added while a server runs counts at once).

        Raises:
            ConfigError: the settings file became invalid.
        """
        from markvault.credentials.policy import CredentialPolicy

        stamp = _stamp(self._config)
        if self._policy is None or stamp != self._stamp:
            changed = stamp != self._stamp
            source = (
                read_credential_settings(self.settings.vault_dir)
                if changed
                else self.settings.credentials
            )
            self._policy, self._stamp = CredentialPolicy.of(source), stamp
        return self._policy

    def write(self, note: str) -> GatedWrite:
        """A gate for one write to ``note`` (vault-relative; for a new note, the path its
        title would give it)."""
        return GatedWrite(self.policy(), note)


def unsecret(name: str) -> str:
    """``name`` with every credential replaced (the allowlist aside): how a new note's
    path is shown in messages and matched in the allowlist, never with the secret."""
    from markvault.credentials.detection import unsecret

    return unsecret(name)


def _stamp(path: Path) -> tuple[int, int] | None:
    try:
        st = path.stat()
    except OSError:
        return None
    return st.st_mtime_ns, st.st_size


class GatedWrite:
    """One write's pass through the gate: what it redacted, for its result.

    Each method returns what to write instead of what it was given; in refuse mode it
    raises ``credentials.CredentialRefused`` (exit 6) and nothing is written.
    """

    def __init__(self, policy: CredentialPolicy, note: str) -> None:
        self.policy = policy
        self.note = note
        self.redacted: list[Finding] = []

    def name(self, value: str, part: str) -> str:
        """A title, topic, project, tag, frontmatter key or file name, checked before
        anything is named after it (a file is never named after a key)."""
        from markvault.credentials.finding import NAME_REDACTED, REDACTED

        if not value:
            return value
        marker = NAME_REDACTED if part == "file name" else REDACTED
        checked = self.policy.check(value, note=self.note, part=part, marker=marker)
        self.redacted.extend(checked.redacted)
        return checked.text

    def names(self, values: Iterable[str], part: str) -> list[str]:
        return [self.name(v, part) for v in values]

    def value(self, key: str, value: Any) -> Any:
        """A frontmatter value (``set_key``), read with its key: a short value under an
        ``api_token`` key is a secret where it alone is not. Lists and mappings item by
        item."""
        from markvault.credentials.detection import scan

        if isinstance(value, str):
            label = f"{key}: "
            findings = [
                replace(f, start=f.start - len(label), end=f.end - len(label))
                for f in scan(label + value, part=f"key {key}")
                if f.start >= len(label)
            ]
            checked = self.policy.check(value, note=self.note, findings=findings)
            self.redacted.extend(checked.redacted)
            return checked.text
        if isinstance(value, list):
            return [self.value(key, v) for v in value]
        if isinstance(value, dict):
            return {
                self.name(str(k), f"key {key}"): self.value(str(k), v) for k, v in value.items()
            }
        return value

    def edits(self, edits: Sequence[Edit]) -> list[Edit]:
        """The edits with their frontmatter keys and values checked (their text is
        checked in the note they make, by ``text``)."""
        return [
            replace(e, key=self.name(e.key, "frontmatter key"), value=self.value(e.key, e.value))
            if e.op == "set_key" and e.key
            else e
            for e in edits
        ]

    def text(self, new: str, old: str = "") -> str:
        """The note's whole new text, with what this write adds to ``old`` checked (a
        new note: all of it). Findings name the lines of the text written."""
        from markvault.credentials.detection import find
        from markvault.credentials.finding import fingerprint

        added = _added(find(new), new, old)
        if not added:
            return new
        fingerprinted = [
            replace(f, fingerprint=fingerprint(f.rule, new[f.start : f.end])) for f in added
        ]
        checked = self.policy.check(new, note=self.note, findings=fingerprinted)
        self.redacted.extend(checked.redacted)
        return checked.text

    def report(self) -> CredentialReport:
        """What a write's result carries: nothing when nothing was redacted, else
        ``credentials`` (a sentence) and ``redacted`` (where, what, fingerprint; never
        the secret)."""
        from markvault.credentials.finding import describe

        if not self.redacted:
            return {}
        return {
            "credentials": describe(self.redacted),
            "redacted": [f.to_dict() for f in self.redacted],
        }


def _added(found: list[Finding], new: str, old: str) -> list[Finding]:
    """The findings of ``new`` that its writer added to ``old``: inside the span that
    changed (the texts' common start and end stay as they were), and more often there
    than the same secret was in the span it replaced. ``old`` is scanned only when the
    changed span of ``new`` holds a finding (most edits add none)."""
    if not old or not found:
        return found
    from markvault.credentials.detection import find
    from markvault.credentials.finding import fingerprint

    start = _common_prefix(old, new)
    tail = _common_prefix(old[start:][::-1], new[start:][::-1])
    new_end, old_end = len(new) - tail, len(old) - tail
    inside = [f for f in found if f.end > start and f.start < new_end]
    if not inside:
        return []
    before = [f for f in find(old) if f.end > start and f.start < old_end]
    counts = collections.Counter(fingerprint(f.rule, old[f.start : f.end]) for f in before)
    return [
        f
        for f in inside
        if sum(1 for g in inside if _same(g, f, new))
        > counts[fingerprint(f.rule, new[f.start : f.end])]
    ]


def _same(a: Finding, b: Finding, text: str) -> bool:
    return a.rule == b.rule and text[a.start : a.end] == text[b.start : b.end]


def _common_prefix(a: str, b: str) -> int:
    """Length of the common start of ``a`` and ``b`` (slices compared in C, halving)."""
    low, high = 0, min(len(a), len(b))
    while low < high:
        mid = (low + high + 1) // 2
        if a[:mid] == b[:mid]:
            low = mid
        else:
            high = mid - 1
    return low
