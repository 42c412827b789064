"""Credentials already in the vault's files: `vault check` over the whole vault, and the
check `vault sync` runs on exactly what it is about to commit (gitsync.DEFAULT_CHECKS),
its commit message included.

Both use the write gate's rules (detection.py) and the vault's allowlist
(``[credentials] allow`` in ``.markvault.toml``, by note and fingerprint). Neither
rewrites a file: a note a person wrote is theirs to fix, so these report and refuse,
where the write gate redacts. The mode (redact or refuse) is for writes; a sync always
refuses, since a commit cannot be taken back once pushed.

Scanned: every file, whatever its name, suffix, encoding or size (secret_files.py says
how: text by content, binaries by their printable runs and structure, key files and
credential files by what they are, every file's name). Not scanned: git's own folder,
markvault's half-written files, and the trash unless ``[sync] trash = true`` commits it.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from markvault.config import read_credential_settings
from markvault.credentials.detection import scan, unsecret
from markvault.credentials.finding import Finding
from markvault.credentials.policy import CredentialPolicy, CredentialRefused, refusal
from markvault.credentials.secret_files import scan_file_bytes
from markvault.files.atomic import TEMP_PREFIX
from markvault.files.walk import GIT_DIR, enters_checked, walk_files
from markvault.types import TRASH_DIR

READ_CHUNK = 1024 * 1024  # bytes read from a file at a time: any size in bounded memory
_NEVER = frozenset({GIT_DIR})
_SHOWN_NOTES = 5  # notes named in a sync's refusal before "and N more"
MESSAGE = "the commit message"  # how a refusal names it, and its allowlist "note"


def is_scanned(path: str, trash: bool = True) -> bool:
    """Whether a vault-relative path is a file the scans read: every file but git's own
    and markvault's half-written ones (and the trash's, unless ``trash``)."""
    parts = path.split("/")
    never = _NEVER if trash else _NEVER | {TRASH_DIR}
    return not any(p in never for p in parts[:-1]) and not parts[-1].startswith(TEMP_PREFIX)


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
    skipped: list[str] = field(default_factory=list)  # could not be read

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


def scan_file(policy: CredentialPolicy, path: str, data: bytes | Iterable[bytes]) -> FileFindings:
    """The credentials in a file (its bytes, whole or in chunks) and in its path."""
    chunks = [data] if isinstance(data, bytes) else data
    findings = scan_file_bytes(path, chunks).findings
    return _judged(policy, path, findings)


def _judged(policy: CredentialPolicy, path: str, findings: list[Finding]) -> FileFindings:
    found, allowed = policy.sift(path, findings)
    return FileFindings(unsecret(path), found, allowed)


def vault_files(vault_dir: Path, trash: bool = False) -> Iterator[str]:
    """The vault-relative paths of the files the scans read, in a stable order (the
    vault's walk, walk.py); symlinks are not followed (what they point at is not in
    the vault)."""
    for rel_dir, entry in walk_files(str(vault_dir), "", enters_checked(trash)):
        path = rel_dir + entry.name
        if is_scanned(path) and not entry.is_symlink():
            yield path


def check_vault(
    vault_dir: Path, policy: CredentialPolicy | None = None, trash: bool = False
) -> CheckReport:
    """Scan every file of the vault (the trash too with ``trash``: it is committed).

    Raises:
        ConfigError: the settings file is invalid.
    """
    policy = policy or policy_of(vault_dir)
    report = CheckReport(vault_dir)
    for path in vault_files(vault_dir, trash):
        try:
            with (vault_dir / path).open("rb") as fh:
                scanned = scan_file_bytes(path, iter(functools.partial(fh.read, READ_CHUNK), b""))
        except OSError:
            report.skipped.append(path)
            continue
        report.files += 1
        report.bytes += scanned.size
        checked = _judged(policy, path, scanned.findings)
        if checked.found or checked.allowed:
            report.notes.append(checked)
    return report


def refuse_message(vault_dir: Path, message: str | None) -> None:
    """Refuse a commit message holding a credential (``vault sync -m``, MCP ``sync``).

    Raises:
        CredentialRefused: it holds one the allowlist does not name.
        ConfigError: the settings file is invalid.
    """
    if not message:
        return
    policy = policy_of(vault_dir)
    found, _ = policy.sift(MESSAGE, scan(message))
    if found:
        error = refusal(MESSAGE, found, "nothing was committed")
        raise CredentialRefused(
            error.message,
            'Write the message without it (`vault sync -m "..."`); a commit message is '
            "pushed with the notes and stays in the remote's history.",
            found,
        )


def refuse_to_commit(
    vault_dir: Path, staged: Iterable[tuple[str, bytes | Iterable[bytes]]]
) -> None:
    """Refuse a commit whose staged files (vault-relative path, staged bytes whole or in
    chunks) hold a credential the allowlist does not name.

    Raises:
        CredentialRefused: some files hold one (the message names each, with its
            findings; the hint says how to remove or allow one).
        ConfigError: the settings file is invalid.
    """
    policy = policy_of(vault_dir)
    found = [
        checked
        for path, data in staged
        if is_scanned(path)
        for checked in [scan_file(policy, path, data)]
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
