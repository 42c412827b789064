"""`vault check`'s look at note identities: every note's frontmatter id read from the
files (no index needed), judged by ``identity.id_problems``."""

from __future__ import annotations

from pathlib import Path

from markvault.files.vault_files import VaultFiles
from markvault.identity import id_problems
from markvault.markdown.frontmatter import load_frontmatter, split_frontmatter

MAX_READ = 64 * 1024  # the frontmatter is at the start; a longer one is not read as one


def check_identities(vault_dir: Path) -> list[dict[str, str]]:
    """The notes whose id does not name them (``identity``), as the index would report
    them."""
    files = VaultFiles(vault_dir)
    notes: list[tuple[str, str]] = []
    for path, stat in sorted(files.scan()[0].items()):
        try:
            with open(vault_dir / stat.file, "rb") as fh:
                head = fh.read(MAX_READ).decode("utf-8", errors="replace")
        except OSError:
            continue
        fm_text, _, _ = split_frontmatter(head.lstrip("\ufeff"))
        meta, _ = load_frontmatter(fm_text or "")
        value = meta.get("id")  # read as parse.py reads it
        note_id = "" if value is None or isinstance(value, dict | list) else str(value).strip()
        notes.append((note_id or path, path))
    return id_problems(notes)
