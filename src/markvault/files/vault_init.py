"""`vault init`: make a folder a vault ready for markvault, git and Obsidian.

It only adds: the kind folders, the templates (in ``.markvault/templates/``, hidden so
never indexed, inside the vault so they travel with it), ``.markvault.toml`` and a
``.gitignore``. Whatever already exists, an Obsidian vault's notes and settings
included, is left byte for byte; an existing ``.gitignore`` is reported with the lines it
lacks instead of being edited.
"""

from __future__ import annotations

import dataclasses
import os
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from markvault.config import CONFIG_FILE
from markvault.errors import ConfigError
from markvault.files.atomic import TEMP_PREFIX
from markvault.files.vault_files import VaultFiles
from markvault.git.repo import exclude_trash, find_repo
from markvault.markdown.parse import FOLDER_KINDS
from markvault.resources import VAULT_TEMPLATES, packaged_templates, starter_vault, walk_files
from markvault.types import TRASH_DIR

GITIGNORE = ".gitignore"
# What must not be committed, one entry per line (comments explain each group).
GITIGNORE_TEXT = f"""\
# Written by `vault init`. Files markvault or Obsidian keep in the vault that must not
# be committed. (markvault's index is not here: it lives in your cache directory.)

# Deleted notes: `vault delete` and Obsidian move them here. Left out of git, a delete
# syncs as a delete; restore from here on the machine where you deleted. (`vault sync`
# keeps the trash out even without this line, unless [sync] trash = true.)
{TRASH_DIR}/

# markvault's half-written files (a write in progress or cut short by a crash).
{TEMP_PREFIX}*

# Obsidian's window layout and recent files on this device: they change with every
# click and would conflict between machines.
.obsidian/workspace.json
.obsidian/workspace-mobile.json

# Operating system litter.
.DS_Store
Thumbs.db
"""

CONFIG_TEXT = """\
# markvault settings for this vault. They travel with it in git; a flag or an
# environment variable (MARKVAULT_INDEX, MARKVAULT_MODEL) overrides them.

# The index is derived data and lives in your cache directory. To keep it somewhere
# else, give a folder outside the vault (relative paths start at the vault).
# index_dir = "../notes-index"

# The embedding model: the packaged all-MiniLM-L6-v2, or a local sentence-transformers
# folder. Changing it re-embeds the vault.
# model = "all-MiniLM-L6-v2"

# Folders an agent's `store_document` (MCP) may copy files from; with none listed it
# refuses every path. `vault store` at the command line reads any ordinary path.
# document_roots = ["~/docs"]

[sync]
# How `vault sync` combines this machine's commits with the other machines':
# "merge" (a merge commit when both changed) or "rebase" (this machine's commits
# replayed on top).
pull = "merge"
# Sync on its own while `vault mcp` or `vault watch` runs: `quiet` seconds after the
# last change, and every `interval` seconds to bring in the other machines' notes.
auto = false
# interval = 300
# quiet = 30

[credentials]
# What a write holding a credential (a cloud key, a token, a private key, a password)
# gets, from an agent or a command: "redact" (each replaced by [REDACTED], and the
# result says so) or "refuse" (nothing written). `vault sync` never commits one, and
# `vault check` lists those already in the vault. A known false positive is let through
# by its note and the fingerprint `vault check` prints ("*" for any note):
# allow = [{ note = "notes/AWS examples.md", fingerprint = "aws-access-key:1f0c2a9e4b7d3c10" }]
mode = "redact"
"""


@dataclass
class InitReport:
    vault: Path
    created: list[str] = field(default_factory=list)  # vault-relative; folders end in "/"
    kept: list[str] = field(default_factory=list)  # setup files that existed, untouched
    gitignore_missing: list[str] = field(default_factory=list)  # entries a kept one lacks
    notes_found: int = 0  # Markdown files there before
    obsidian: bool = False  # an Obsidian vault (it has .obsidian/)
    git_repo: Path | None = None  # the repository the vault is in, if any

    def to_json(self) -> dict[str, Any]:
        """Every field, paths as text."""
        return {
            key: str(value) if isinstance(value, Path) else value
            for key, value in dataclasses.asdict(self).items()
        }


def init_vault(folder: Path, *, starter: bool = False) -> InitReport:
    """Set ``folder`` up as a vault (creating it if needed), adding only what is missing.

    ``starter`` also copies the bundled starter notes (a tour of markvault), never over
    an existing file.

    Raises:
        ConfigError: ``folder`` is a file, or cannot be created.
    """
    folder = folder.expanduser()
    if folder.exists() and not folder.is_dir():
        raise ConfigError(f"{folder} is a file, not a folder.", "Give a folder for the vault.")
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ConfigError(
            f"Cannot create {folder}: {exc.strerror or exc}.", "Choose a folder you can write."
        ) from exc
    root = folder.resolve()
    files = VaultFiles(root)
    report = InitReport(
        vault=root,
        notes_found=len(files.scan()[0]),
        obsidian=(root / ".obsidian").is_dir(),
    )
    repo = find_repo(root)
    report.git_repo = repo.work_tree if repo else None
    if repo is not None:  # whatever .gitignore says (`vault sync` sees to it as well)
        exclude_trash(repo, root)

    for kind_folder in FOLDER_KINDS:
        path = root / kind_folder
        if not path.exists():
            path.mkdir()
            report.created.append(kind_folder + "/")
    for rel, source in walk_files(packaged_templates()):
        _add(files, report, f"{VAULT_TEMPLATES}/{rel}", source.read_bytes())
    _add(files, report, CONFIG_FILE, CONFIG_TEXT.encode())
    if not _add(files, report, GITIGNORE, GITIGNORE_TEXT.encode()):
        report.gitignore_missing = missing_ignore_entries(root / GITIGNORE)
    if starter:
        for rel, source in walk_files(starter_vault()):
            if rel != CONFIG_FILE:  # the repository's own setting, not this vault's
                _add(files, report, rel, source.read_bytes(), quiet_if_kept=True)
    return report


def _add(
    files: VaultFiles, report: InitReport, rel: str, data: bytes, quiet_if_kept: bool = False
) -> bool:
    if files.create_setup_file(rel, data):
        report.created.append(rel)
        return True
    if not quiet_if_kept:
        report.kept.append(rel)
    return False


def missing_ignore_entries(gitignore: Path) -> list[str]:
    """The entries of markvault's ``.gitignore`` that an existing one does not have
    (compared line by line; a pattern written differently counts as missing)."""
    try:
        have = {line.strip() for line in gitignore.read_text(encoding="utf-8").splitlines()}
    except (OSError, UnicodeDecodeError):
        have = set()
    wanted = [
        line for line in GITIGNORE_TEXT.splitlines() if line.strip() and not line.startswith("#")
    ]
    return [line for line in wanted if line not in have]


def next_steps(report: InitReport) -> list[tuple[str, str]]:
    """(command, what it does) for someone who has just run `vault init`."""
    vault = _shown(report.vault)
    base = f"vault --vault {vault}"
    steps = [
        (f'{base} new note "First note"', "write a note from its template"),
        (f"{base} mcp install", "let Claude Code search and write this vault"),
    ]
    if report.notes_found:
        steps.insert(0, (f"{base} reindex", "index the notes already there"))
    if report.git_repo is None:
        steps.append(
            (
                f"git -C {vault} init && git -C {vault} remote add origin <url>",
                "keep it in git, then `vault sync` commits, pulls and pushes",
            )
        )
    else:
        steps.append((f"{base} sync", "commit, pull and push the vault with git"))
    steps.append((f"export MARKVAULT_VAULT={vault}", "to leave out --vault"))
    return steps


def _shown(path: Path) -> str:
    """``path`` with the home folder as ``~``, quoted for a shell when needed."""
    home = Path(os.path.expanduser("~"))
    text = str(path)
    if path == home or home in path.parents:
        rest = path.relative_to(home).as_posix()
        return "~/" + shlex.quote(rest) if rest != "." else "~"
    return shlex.quote(text)
