"""Settings that widen what markvault or an agent may do count only once trusted on
this machine.

``.markvault.toml`` travels with the vault in git: anyone who can push to the remote
(or a careless edit on another machine) can change it, and the next `vault sync` brings
the change here. Most settings are harmless to receive that way. These are not: each
widens what an agent may read or what markvault does beyond the vault.

- ``document_roots``: folders an agent's ``store_document`` may copy files from
  (``["/"]`` would let it copy any private file into a synced vault);
- ``index_dir``: where the index, which holds the full text of every note, is written
  (a folder beside the vault, inside the vault's parent folder, needs no trust: that
  is the usual ``"../notes-index"``);
- ``[sync] auto``: commit and push without a person running `vault sync`;
- ``[sync] trash``: commit the trash (deleted notes, perhaps deleted for what they held).

Such a value in the file applies only when this machine's trust record holds the same
value for this vault: ``vault trust`` (run by the person, after reading the values)
records them, in the user's config folder, outside the vault and outside git. Until
then markvault uses the default, and says so (`vault status`, `vault sync`, the
refusal of ``store_document``). A flag or an environment variable
(``MARKVAULT_DOCUMENT_ROOTS``, ``MARKVAULT_INDEX``) is set on this machine, so it needs
no trust.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from markvault.errors import ConfigError
from markvault.files.atomic import write_replacing
from markvault.user_folders import user_config_dir

TRUST_FILE = "trusted-settings.json"
WIDENING = ("document_roots", "index_dir", "sync.auto", "sync.trash")
HINT = "Read them in .markvault.toml; if they are yours, run `vault trust` on this machine."


def trust_path() -> Path:
    return user_config_dir() / TRUST_FILE


def widening_values(file_cfg: Mapping[str, Any]) -> dict[str, Any]:
    """The widening settings a vault file sets to something other than the default."""
    sync = file_cfg.get("sync")
    sync = sync if isinstance(sync, dict) else {}
    found: dict[str, Any] = {}
    if file_cfg.get("document_roots"):
        found["document_roots"] = file_cfg["document_roots"]
    if file_cfg.get("index_dir"):
        found["index_dir"] = file_cfg["index_dir"]
    if sync.get("auto") is True:
        found["sync.auto"] = True
    if sync.get("trash") is True:
        found["sync.trash"] = True
    return found


def _key(vault_dir: Path) -> str:
    return str(vault_dir.resolve())


def _read_all() -> dict[str, Any]:
    path = trust_path()
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, ValueError):
        return {}  # unreadable: nothing is trusted, the notice says how to trust again
    return data if isinstance(data, dict) else {}


def trusted_values(vault_dir: Path) -> dict[str, Any]:
    entry = _read_all().get(_key(vault_dir))
    return entry if isinstance(entry, dict) else {}


def same(a: Any, b: Any) -> bool:
    """Whether two settings values are equal as TOML would write them."""
    return json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


def untrusted(vault_dir: Path, file_cfg: Mapping[str, Any]) -> dict[str, Any]:
    """The widening values of the vault file that this machine has not trusted."""
    wanted = widening_values(file_cfg)
    index_dir = wanted.get("index_dir")
    if isinstance(index_dir, str) and _beside(vault_dir, index_dir):
        del wanted["index_dir"]
    if not wanted:
        return {}
    have = trusted_values(vault_dir)
    return {k: v for k, v in wanted.items() if k not in have or not same(have[k], v)}


def _beside(vault_dir: Path, index_dir: str) -> bool:
    """Whether an index folder stays in the vault's parent folder (``"../index"``)."""
    parent = vault_dir.resolve().parent
    try:
        where = (vault_dir / Path(index_dir).expanduser()).resolve()
    except (OSError, RuntimeError):
        return False
    return parent in where.parents


def describe(values: Mapping[str, Any]) -> list[str]:
    """``document_roots = ["/"]``, as the file would say it."""
    return [f"{key} = {json.dumps(value)}" for key, value in values.items()]


def notice(values: Mapping[str, Any]) -> str:
    """What a person is told about settings that are not applied."""
    if not values:
        return ""
    return (
        "Not applied until trusted on this machine (.markvault.toml travels with git): "
        + "; ".join(describe(values))
        + ". "
        + HINT
    )


def trust(vault_dir: Path, file_cfg: Mapping[str, Any]) -> dict[str, Any]:
    """Record the vault file's widening values as trusted on this machine (replacing the
    earlier record for this vault); returns them.

    Raises:
        ConfigError: the trust record cannot be written.
    """
    values = widening_values(file_cfg)
    records = _read_all()
    if values:
        records[_key(vault_dir)] = values
    else:
        records.pop(_key(vault_dir), None)
    path = trust_path()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        data = json.dumps(records, indent=2, sort_keys=True).encode("utf-8")
        write_replacing(path, data, mode=0o600)
    except OSError as exc:
        raise ConfigError(
            f"Cannot write {path}: {exc.strerror or exc}.", "Check that folder's permissions."
        ) from exc
    return values
