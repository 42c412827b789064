"""Credentials already in the vault's files: `vault check` over the whole vault, and the
check `vault sync` runs on exactly what it is about to commit (gitsync.DEFAULT_CHECKS).

Both use the write gate's rules (credentials.py) and the vault's allowlist
(``[credentials] allow`` in ``.markvault.toml``, by note and fingerprint). Neither
rewrites a file: a note a person wrote is theirs to fix, so these report and refuse,
where the write gate redacts. The mode (redact or refuse) is for writes; a sync always
refuses, since a commit cannot be taken back once pushed.

Scanned: text files that are synced and read by people or tools (Markdown, plain text,
JSON, TOML, YAML, .env and ini files), hidden ones too (an Obsidian plugin's settings
in ``.obsidian/`` are where API keys end up). Not scanned: git's own folder, the trash,
markvault's half-written files, and code or binaries (minified plugin code is all
high-entropy strings, and says nothing about the user's secrets).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from markvault.config import read_credential_settings
from markvault.credentials.rules import (
    CredentialPolicy,
    CredentialRefused,
    Finding,
    refusal,
    scan,
    unsecret,
)
from markvault.files.vault_files import TEMP_PREFIX, TRASH_DIR

SCANNED_SUFFIXES = frozenset(
    [
        ".md",
        ".markdown",
        ".txt",
        ".text",
        ".json",
        ".toml",
        ".yaml",
        ".yml",
        ".env",
        ".ini",
        ".cfg",
        ".conf",
        ".properties",
        ".csv",
        ".canvas",
    ]
)
SCANNED_NAMES = frozenset({".env", ".netrc", ".npmrc", ".pypirc"})  # no suffix of their own
MAX_SCANNED_BYTES = 20 * 1024 * 1024  # larger files are named as skipped, not read
_NEVER = frozenset({".git", TRASH_DIR})
_SHOWN_NOTES = 5  # notes named in a sync's refusal before "and N more"


def is_scanned(path: str) -> bool:
    """Whether a vault-relative path is a file the scans read."""
    parts = path.split("/")
    name = parts[-1]
    if any(p in _NEVER for p in parts[:-1]) or name.startswith(TEMP_PREFIX):
        return False
    return name in SCANNED_NAMES or os.path.splitext(name)[1].lower() in SCANNED_SUFFIXES


@dataclass(frozen=True)
class FileFindings:
    """What one file holds: credentials to act on, and those the allowlist lets through."""

    path: str  # as messages show it: a credential in the file's name replaced
    found: tuple[Finding, ...]
    allowed: tuple[Finding, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "credentials": [f.to_dict() for f in self.found],
            "allowed": [f.to_dict() for f in self.allowed],
        }


@dataclass
class CheckReport:
    """A scan of the vault: every file read, what was found, what could not be read."""

    vault: Path
    files: int = 0
    bytes: int = 0
    notes: list[FileFindings] = field(default_factory=list)  # files with any finding
    skipped: list[str] = field(default_factory=list)  # too large, or not UTF-8 text

    @property
    def found(self) -> list[FileFindings]:
        return [n for n in self.notes if n.found]

    @property
    def credentials(self) -> int:
        return sum(len(n.found) for n in self.notes)

    @property
    def allowed(self) -> int:
        return sum(len(n.allowed) for n in self.notes)

    def to_json(self) -> dict[str, Any]:
        return {
            "vault": str(self.vault),
            "files": self.files,
            "bytes": self.bytes,
            "credentials": self.credentials,
            "allowed": self.allowed,
            "notes": [n.to_json() for n in self.notes],
            "skipped": self.skipped,
        }


def policy_of(vault_dir: Path) -> CredentialPolicy:
    """The vault's policy as its settings file says now.

    Raises:
        ConfigError: the settings file is invalid.
    """
    return CredentialPolicy.of(read_credential_settings(vault_dir))


def scan_file(policy: CredentialPolicy, path: str, text: str) -> FileFindings:
    """The credentials in a file's text and in its path (a note named after a key)."""
    findings = scan(path, part="file name") + scan(text)
    allowed = tuple(f for f in findings if policy.allows(path, f))
    found = tuple(f for f in findings if f not in allowed)
    return FileFindings(unsecret(path), found, allowed)


def vault_files(vault_dir: Path) -> Iterator[str]:
    """The vault-relative paths of the files the scans read, in a stable order; symlinks
    are not followed (what they point at is not in the vault)."""
    for folder, dirs, names in os.walk(vault_dir):
        dirs[:] = sorted(d for d in dirs if d not in _NEVER)
        rel = Path(folder).relative_to(vault_dir).as_posix()
        for name in sorted(names):
            path = name if rel == "." else f"{rel}/{name}"
            if is_scanned(path) and not (Path(folder) / name).is_symlink():
                yield path


def check_vault(vault_dir: Path, policy: CredentialPolicy | None = None) -> CheckReport:
    """Scan every file of the vault :func:`is_scanned` names.

    Raises:
        ConfigError: the settings file is invalid.
    """
    policy = policy or policy_of(vault_dir)
    report = CheckReport(vault_dir)
    for path in vault_files(vault_dir):
        try:
            data = _read(vault_dir / path)
        except OSError:
            report.skipped.append(path)
            continue
        if data is None:
            report.skipped.append(path)
            continue
        report.files += 1
        report.bytes += len(data)
        text = data.decode("utf-8", errors="replace")
        checked = scan_file(policy, path, text)
        if checked.found or checked.allowed:
            report.notes.append(checked)
    return report


def _read(path: Path) -> bytes | None:
    """The file's bytes; None for one too large or not text (a NUL byte)."""
    if path.stat().st_size > MAX_SCANNED_BYTES:
        return None
    data = path.read_bytes()
    return data if _is_text(data) else None


def _is_text(data: bytes) -> bool:
    """Small enough to scan, and text: no NUL byte in its first 8 KiB."""
    return len(data) <= MAX_SCANNED_BYTES and b"\0" not in data[:8192]


def refuse_to_commit(vault_dir: Path, staged: Iterable[tuple[str, bytes]]) -> None:
    """Refuse a commit whose staged files (vault-relative path, staged bytes) hold a
    credential the allowlist does not name.

    Raises:
        CredentialRefused: some files hold one (the message names each, with its
            findings; the hint says how to remove or allow one).
        ConfigError: the settings file is invalid.
    """
    policy = policy_of(vault_dir)
    found = [
        checked
        for path, data in staged
        if is_scanned(path) and _is_text(data)
        for checked in [scan_file(policy, path, data.decode("utf-8", errors="replace"))]
        if checked.found
    ]
    if not found:
        return
    first = refusal(found[0].path, found[0].found, "nothing was committed")
    if len(found) == 1:
        raise first
    named = "; ".join(
        f"{n.path} ({', '.join(f'{f.kind}, {f.where}' for f in n.found)})"
        for n in found[:_SHOWN_NOTES]
    )
    more = f"; and {len(found) - _SHOWN_NOTES} more" if len(found) > _SHOWN_NOTES else ""
    raise CredentialRefused(
        f"Refused: {len(found)} notes hold credentials: {named}{more}; nothing was committed.",
        f"{first.hint} (`vault check` lists every one with its fingerprint)",
        [f for n in found for f in n.found],
    )
