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
import os
import posixpath
import sys
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from markvault.errors import ConfigError

APP_NAME = "markvault"
TRUST_FILE = "trusted-settings.json"
WIDENING = ("document_roots", "index_dir", "sync.auto", "sync.trash")
HINT = "Read them in .markvault.toml; if they are yours, run `vault trust` on this machine."


def user_config_dir() -> Path:
    """The user's config folder for markvault (XDG on Linux, platformdirs elsewhere)."""
    if sys.platform == "linux" and "ANDROID_DATA" not in os.environ:
        xdg = os.environ.get("XDG_CONFIG_HOME", "")
        if posixpath.isabs(xdg):
            return Path(xdg) / APP_NAME
        home = os.environ.get("HOME", "")
        if not xdg and posixpath.isabs(home):
            return Path(home) / ".config" / APP_NAME
    import platformdirs

    return platformdirs.user_config_path(APP_NAME)


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


def _same(a: Any, b: Any) -> bool:
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
    return {k: v for k, v in wanted.items() if k not in have or not _same(have[k], v)}


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
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".trust-")
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(records, fh, indent=2, sort_keys=True)
        os.replace(tmp, path)
    except OSError as exc:
        raise ConfigError(
            f"Cannot write {path}: {exc.strerror or exc}.", "Check that folder's permissions."
        ) from exc
    return values


def trust_vault(vault_dir: Path) -> dict[str, Any]:
    """:func:`trust` with the vault's settings file as it is now (`vault trust`).

    Raises:
        ConfigError: the settings file is invalid, or the record cannot be written.
    """
    from markvault.config import CONFIG_FILE, Settings, _read_config_file

    Settings.load(vault=vault_dir, env={})  # an invalid file is said before it is trusted
    return trust(vault_dir, _read_config_file(vault_dir / CONFIG_FILE))


def pending(vault_dir: Path) -> dict[str, Any]:
    """The vault file's widening values not trusted here (for `vault status`)."""
    from markvault.config import CONFIG_FILE, _read_config_file

    try:
        return untrusted(vault_dir, _read_config_file(vault_dir / CONFIG_FILE))
    except ConfigError:
        return {}


def _flat(data: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in data.items():
        if isinstance(value, dict):
            out.update(_flat(value, f"{prefix}{key}."))
        else:
            out[f"{prefix}{key}"] = value
    return out


def _parsed(data: bytes | None) -> dict[str, Any]:
    import tomllib

    try:
        return tomllib.loads(data.decode("utf-8")) if data else {}
    except (tomllib.TOMLDecodeError, UnicodeDecodeError):
        return {"(unreadable)": True}


def pulled_notices(vault_dir: Path, before: bytes | None) -> list[str]:
    """What a person is told when a pull changed the vault's settings file: the keys
    that changed, and the widening ones that wait for `vault trust`."""
    from markvault.config import CONFIG_FILE

    try:
        after = (vault_dir / CONFIG_FILE).read_bytes()
    except OSError:
        after = None
    if after == before:
        return []
    old, new = _flat(_parsed(before)), _flat(_parsed(after))
    changed = sorted(k for k in old.keys() | new.keys() if not _same(old.get(k), new.get(k)))
    notices = [f"The pull changed {CONFIG_FILE}: {', '.join(changed) or 'its comments'}."]
    waiting = untrusted(vault_dir, _parsed(after))
    if waiting:
        notices.append(notice(waiting))
    return notices
