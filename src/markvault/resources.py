"""What ships inside markvault, and where a vault's own templates are.

The note templates and the starter vault are package data: ``markvault/templates`` and
``markvault/starter`` in the wheel. In a checkout they are the repository's
``templates/`` and ``vault/`` (``src/markvault/templates`` and ``src/markvault/starter``
are symbolic links to them), so an editable install and a wheel find them the same way,
through the package, wherever the package lives.
"""

from __future__ import annotations

from collections.abc import Iterator
from importlib.resources import files
from importlib.resources.abc import Traversable
from pathlib import Path

from markvault.errors import ConfigError

# A vault's own templates: hidden, so never indexed as notes, and inside the vault, so
# they travel with it through git. `vault init` puts a copy of the packaged ones there.
VAULT_TEMPLATES = ".markvault/templates"
# The older layout (and this repository's): `templates/` in the folder that holds the vault.
SIBLING_TEMPLATES = "templates"


def packaged_templates() -> Traversable:
    """The templates that come with markvault."""
    return files("markvault") / "templates"


def starter_vault() -> Traversable:
    """The bundled starter vault: notes of every kind that explain markvault."""
    return files("markvault") / "starter"


def template_dirs(vault_dir: Path) -> list[Traversable]:
    """Where templates are looked for, first match wins: the vault's own, then a
    ``templates/`` folder beside the vault, then the packaged ones."""
    return [
        vault_dir / VAULT_TEMPLATES,
        vault_dir.parent / SIBLING_TEMPLATES,
        packaged_templates(),
    ]


def read_template(vault_dir: Path, kind: str) -> str:
    """The text of the template for ``kind`` (``note``, ``session``, ...).

    Raises:
        ConfigError: no template for the kind anywhere (an install without its data).
    """
    for folder in template_dirs(vault_dir):
        candidate = folder / f"{kind}.md"
        if candidate.is_file():
            return candidate.read_text(encoding="utf-8")
    raise ConfigError(
        f"No template for kind {kind!r}.",
        f"Add {kind}.md to {vault_dir / VAULT_TEMPLATES}, or reinstall markvault "
        "(its packaged templates are missing).",
    )


def walk_files(root: Traversable, prefix: str = "") -> Iterator[tuple[str, Traversable]]:
    """(relative POSIX path, file) of every file under ``root``, sorted, depth first."""
    for entry in sorted(root.iterdir(), key=lambda e: e.name):
        rel = f"{prefix}{entry.name}"
        if entry.is_dir():
            yield from walk_files(entry, rel + "/")
        elif entry.is_file():
            yield rel, entry
