"""Where documents may be copied from: the trust boundary of ``store_document``.

An agent steered by a prompt-injected page must not be able to copy the user's
secrets into a vault that is synced to a hosted remote. So, through MCP:

- only files inside a folder the user listed (``document_roots`` in ``.markvault.toml``,
  once trusted on this machine with `vault trust` since the file travels with git, or
  ``MARKVAULT_DOCUMENT_ROOTS``); none listed, nothing is read;
- never a hidden file or folder (``~/.aws``, ``.env``, ``.git``), whatever the roots;
- never through a symbolic link that leads out of an allowed folder;
- never markvault's own files: the index, the vault's config, the HTTP token.

A person at the command line chose the file by typing its path, so ``vault store``
reads any ordinary path, but a hidden one only with ``--allow-hidden``. The refusals
for an agent come before any look at the file, so they say nothing about what exists.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from markvault.config import CONFIG_FILE, ENV_DOCUMENT_ROOTS, Settings
from markvault.errors import NotFoundError, RefusedError
from markvault.files.vault_files import resolve_path
from markvault.http_settings import token_path

ALLOW_HINT = (
    'List the folders documents may come from in .markvault.toml, e.g. document_roots = ["~/docs"]'
    f" (or set {ENV_DOCUMENT_ROOTS}); hidden folders are never read."
)


@dataclass(frozen=True)
class DocumentSources:
    roots: tuple[Path, ...]  # resolved; where an agent may read
    vault_dir: Path
    private: tuple[Path, ...]  # resolved files or folders never read
    # document_roots of the settings file that this machine has not trusted (trust.py)
    untrusted: str = ""

    @classmethod
    def of(cls, settings: Settings) -> DocumentSources:
        return cls(
            roots=tuple(r.resolve() for r in settings.document_roots),
            vault_dir=settings.vault_dir.resolve(),
            private=(settings.index_dir.resolve(), (settings.vault_dir / CONFIG_FILE).resolve()),
            untrusted="; ".join(u for u in settings.untrusted if u.startswith("document_roots")),
        )

    def check(
        self, path: str | os.PathLike[str], *, by_person: bool = False, allow_hidden: bool = False
    ) -> Path:
        """The resolved path of a file that may be copied into the vault.

        ``by_person``: typed at the command line (any ordinary path); otherwise an
        agent's request (only inside the roots). ``allow_hidden`` counts only for a person.

        Raises:
            RefusedError: not allowed (the message says why and how to allow it).
            NotFoundError: allowed, but there is no such file.
        """
        if "\x00" in os.fspath(path):
            raise RefusedError("Refused path with a NUL byte.")
        raw = Path(path).expanduser()
        lexical = Path(os.path.normpath(raw if raw.is_absolute() else Path.cwd() / raw))
        full = resolve_path(lexical)
        if by_person:
            if not allow_hidden and (_hidden(lexical.parts) or _hidden(full.parts)):
                raise RefusedError(
                    f"Refused: {lexical} is in a hidden folder or is a hidden file "
                    "(credentials and settings live there).",
                    "Pass --allow-hidden to store it anyway.",
                )
        else:
            self._check_for_agent(lexical, full)
        self._check_not_ours(full, by_person)
        if not full.is_file():
            raise NotFoundError(f"No file at {full}.", "Pass the path of an existing file.")
        return full

    def _check_for_agent(self, lexical: Path, full: Path) -> None:
        if not self.roots and self.untrusted:
            raise RefusedError(
                "Refused: no folder is allowed for documents on this machine: "
                f"{CONFIG_FILE} sets {self.untrusted}, which travels with git and is not "
                "trusted here.",
                "A person reads that setting and, if it is theirs, runs `vault trust`.",
            )
        if not self.roots:
            raise RefusedError(
                "Refused: no folder is allowed for documents, so store_document reads none.",
                ALLOW_HINT,
            )
        root = _containing(full, self.roots)
        if root is None:
            raise RefusedError(
                f"Refused: {lexical} is outside the folders documents may come from "
                f"({', '.join(map(str, self.roots))})"
                + (" once its symbolic links are followed." if lexical != full else "."),
                "Copy it into one of them, or add its folder to document_roots in .markvault.toml.",
            )
        lexical_root = _containing(lexical, self.roots)
        below = full.relative_to(root).parts
        typed = lexical.relative_to(lexical_root).parts if lexical_root else lexical.parts
        if _hidden(below) or _hidden(typed):
            raise RefusedError(
                f"Refused: {lexical} is in a hidden folder or is a hidden file; "
                "store_document never reads those.",
                "Copy the file to an ordinary folder among the document_roots.",
            )

    def _check_not_ours(self, full: Path, by_person: bool) -> None:
        private = self.private if by_person else (*self.private, *_markvault_user_files())
        if _containing(full, private) is not None:
            raise RefusedError(
                f"Refused: {full} is one of markvault's own files (index, settings or token).",
                "Store a document, not markvault's state.",
            )
        if full == self.vault_dir or self.vault_dir in full.parents:
            raise RefusedError(
                f"{full} is already inside the vault.", "Search for it instead of storing it."
            )


def _hidden(parts: Sequence[str]) -> bool:
    return any(p.startswith(".") and p not in (".", "..") for p in parts)


def _containing(path: Path, folders: Iterable[Path]) -> Path | None:
    """The first of ``folders`` that is ``path`` or holds it."""
    for folder in folders:
        if path == folder or folder in path.parents:
            return folder
    return None


def _markvault_user_files() -> tuple[Path, ...]:
    """markvault's files outside the vault that hold a secret: the HTTP bearer token."""
    return (token_path().expanduser().resolve(),)
