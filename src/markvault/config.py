"""Settings, read in one place: flag > environment > vault file > default.

The vault file is ``<vault>/.markvault.toml`` so that settings which change what
the index means (the embedding model, chunk size) travel with the vault in git.

The index is derived data, so by default it lives in the user's cache directory
(``~/.cache/markvault/indexes/<vault name>-<hash of its path>/`` on Linux, through
platformdirs), one folder per vault, never in or beside the vault.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

from markvault.errors import ConfigError
from markvault.user_folders import user_cache_dir

DEFAULT_MODEL = "all-MiniLM-L6-v2"
# The names the packaged default model answers to. It reads English (Latin script)
# only: its vectors for a query in another script are noise (see search.py).
DEFAULT_MODEL_NAMES = frozenset({DEFAULT_MODEL, "sentence-transformers/" + DEFAULT_MODEL})
CONFIG_FILE = ".markvault.toml"

ENV_VAULT = "MARKVAULT_VAULT"
ENV_INDEX = "MARKVAULT_INDEX"
ENV_MODEL = "MARKVAULT_MODEL"
ENV_DOCUMENT_ROOTS = "MARKVAULT_DOCUMENT_ROOTS"
PULL_MODES = ("merge", "rebase")
ORIGIN_CACHE = "default: your cache directory"
ORIGIN_GIVEN = "set by --index or MARKVAULT_INDEX"
ORIGIN_CONFIG = f"set by index_dir in {CONFIG_FILE}"


@dataclass(frozen=True)
class ChunkParams:
    """What decides chunk boundaries; part of the index fingerprint."""

    # Estimated word pieces per chunk. all-MiniLM-L6-v2 reads 256; the estimate is
    # conservative and the heading context is prepended, so aim below that.
    max_pieces: int = 200


@dataclass(frozen=True)
class SyncSettings:
    """`vault sync` (the ``[sync]`` table of ``.markvault.toml``)."""

    # How commits from the upstream are combined with this machine's: a merge commit,
    # or this machine's commits replayed on top of them.
    pull: Literal["merge", "rebase"] = "merge"
    # Automatic sync by the process that owns the index (`vault mcp`, `vault watch`):
    # off by default. On, it syncs ``quiet`` seconds after the last change to the vault
    # (so a note being written is committed once it is done), and every ``interval``
    # seconds anyway (to bring in the other machines' changes).
    auto: bool = False
    interval: float = 300.0
    quiet: float = 30.0
    # Commit the trash (``.trash/``) too. Off: `vault sync` keeps it out of git whatever
    # ``.gitignore`` says, so a deleted note (maybe deleted for what it held) is never
    # pushed. A widening setting: it counts only once trusted on this machine (trust.py).
    trash: bool = False


@dataclass(frozen=True)
class CredentialSettings:
    """The credential gate (the ``[credentials]`` table; credentials/policy.py applies it).

    .. code-block:: toml

        [credentials]
        mode = "refuse"
        allow = [{ note = "notes/AWS.md", fingerprint = "aws-access-key:1f0c2a9e4b7d3c10" }]
    """

    # What a write holding a credential gets: "redact" (the default: each one replaced
    # by [REDACTED], the result says so) or "refuse" (nothing written; exit 6).
    mode: Literal["redact", "refuse"] = "redact"
    # Known false positives kept by every write, `vault check` and `vault sync`:
    # (note path, or "*" for any note; fingerprint as `vault check` prints it).
    allow: frozenset[tuple[str, str]] = frozenset()


@dataclass(frozen=True)
class AttachmentLimits:
    """What reading one attachment's text may take (extract.py): a file past a limit is
    listed with the reason, never a hang. ``inline_seconds``: how long a sync made
    before an answer (a write, a watcher's hint, a command's look at what changed) spends
    starting extractions; the rest wait for the next sync (`vault reindex` reads all)."""

    enabled: bool = True
    seconds: float = 60.0
    max_bytes: int = 200 * 2**20
    max_pages: int = 1000
    max_chars: int = 5_000_000
    max_unpacked_bytes: int = 256 * 2**20  # what an Office file's zip may unpack to
    memory_bytes: int = 2**30
    inline_seconds: float = 5.0


def chosen(
    flag: str | os.PathLike[str] | None, variable: str, env: Mapping[str, str] | None = None
) -> str | None:
    """What the caller chose for a setting: the flag's value, else the environment
    variable's (flag > environment; an empty one is unset). None: neither is set, so the
    vault file or the default decides (``Settings.load``)."""
    env = os.environ if env is None else env
    return str(flag) if flag else env.get(variable) or None


@dataclass(frozen=True)
class Settings:
    vault_dir: Path
    index_dir: Path
    # Why the index is where it is, said by `vault status`.
    index_origin: str = ORIGIN_CACHE
    model: str = DEFAULT_MODEL
    chunk: ChunkParams = field(default_factory=ChunkParams)
    # Files over these sizes are skipped and reported: a 50 MB note or a 1 MB frontmatter
    # block must not stall indexing or the server.
    max_note_bytes: int = 5 * 1024 * 1024
    max_frontmatter_bytes: int = 64 * 1024
    embed_batch: int = 64
    # How long to wait for another process's lock on the DuckDB file before saying so
    # (a Claude Code hook waits less: it must never hold a session up).
    index_lock_wait: float = 10.0
    # Folders an agent's `store_document` may copy files from; empty: none (a person's
    # `vault store` reads any ordinary path). See document_sources.py.
    document_roots: tuple[Path, ...] = ()
    sync: SyncSettings = field(default_factory=SyncSettings)
    credentials: CredentialSettings = field(default_factory=CredentialSettings)
    # Widening settings of the vault file left at their default because this machine has
    # not trusted them (trust.py), as ``key = value`` lines for a notice.
    untrusted: tuple[str, ...] = ()
    attachments: AttachmentLimits = field(default_factory=AttachmentLimits)

    @property
    def db_path(self) -> Path:
        return self.index_dir / f"{self.vault_dir.name or 'vault'}.duckdb"

    @property
    def extension_dir(self) -> Path:
        return self.index_dir / "extensions"

    @classmethod
    def load(
        cls,
        vault: str | os.PathLike[str] | None = None,
        index: str | os.PathLike[str] | None = None,
        model: str | None = None,
        env: dict[str, str] | None = None,
    ) -> Settings:
        """Resolve settings for one vault.

        Raises:
            ConfigError: the vault folder does not exist, the config file is invalid,
                or the index folder would be inside the vault.
        """
        env = dict(os.environ) if env is None else env
        vault_dir = Path(chosen(vault, ENV_VAULT, env) or "vault").expanduser()
        if not vault_dir.is_dir():
            raise ConfigError(
                f"No vault folder at {vault_dir}.",
                "Pass --vault DIR or set MARKVAULT_VAULT to a folder of Markdown notes.",
            )
        vault_dir = vault_dir.resolve()
        file_cfg = _read_config_file(vault_dir / CONFIG_FILE)
        from markvault import trust  # the trust record is read only for a file that needs it

        distrust = trust.untrusted(vault_dir, file_cfg)

        given_index = chosen(index, ENV_INDEX, env)
        index_value = given_index or (
            None if "index_dir" in distrust else file_cfg.get("index_dir")
        )
        if index_value:
            given = bool(given_index)
            index_dir = Path(str(index_value)).expanduser()
            if not index_dir.is_absolute():
                index_dir = (Path.cwd() if given else vault_dir) / index_dir
            origin = ORIGIN_GIVEN if given else ORIGIN_CONFIG
        else:
            index_dir, origin = default_index_dir(vault_dir), ORIGIN_CACHE
        index_dir = index_dir.resolve()
        if index_dir == vault_dir or vault_dir in index_dir.parents:
            raise ConfigError(
                f"The index folder {index_dir} is inside the vault {vault_dir}.",
                "The index is derived data: put it outside the vault with --index DIR.",
            )

        settings = cls(
            vault_dir=vault_dir,
            index_dir=index_dir,
            index_origin=origin,
            model=str(chosen(model, ENV_MODEL, env) or file_cfg.get("model") or DEFAULT_MODEL),
            sync=_sync_settings(file_cfg.get("sync", {}), vault_dir / CONFIG_FILE),
            credentials=credential_settings(file_cfg.get("credentials"), vault_dir / CONFIG_FILE),
        )
        settings = replace(
            settings,
            sync=replace(
                settings.sync,
                auto=settings.sync.auto and "sync.auto" not in distrust,
                trash=settings.sync.trash and "sync.trash" not in distrust,
            ),
        )
        file_roots = file_cfg.get("document_roots", [])
        roots = (
            env.get(ENV_DOCUMENT_ROOTS, "").split(os.pathsep)
            if env.get(ENV_DOCUMENT_ROOTS)
            else file_roots
        )
        if not isinstance(file_roots, list) or not all(isinstance(r, str) for r in file_roots):
            roots = file_roots  # reported below, trusted or not
        elif not env.get(ENV_DOCUMENT_ROOTS) and "document_roots" in distrust:
            roots = []
        if not isinstance(roots, list) or not all(isinstance(r, str) for r in roots):
            raise ConfigError(
                f"document_roots in {vault_dir / CONFIG_FILE} must be a list of folders.",
                'Example: document_roots = ["~/docs", ".."]',
            )
        if roots:
            settings = replace(
                settings,
                document_roots=tuple(
                    (vault_dir / Path(r).expanduser()).resolve() for r in roots if r
                ),
            )
        overridden = {"document_roots"} if env.get(ENV_DOCUMENT_ROOTS) else set()
        if index or env.get(ENV_INDEX):
            overridden.add("index_dir")
        shown = {k: v for k, v in distrust.items() if k not in overridden}
        if shown:
            settings = replace(settings, untrusted=tuple(trust.describe(shown)))
        chunk_cfg = file_cfg.get("chunk", {})
        if chunk_cfg:
            try:
                settings = replace(settings, chunk=ChunkParams(**chunk_cfg))
            except TypeError as exc:
                raise ConfigError(
                    f"Bad [chunk] table in {vault_dir / CONFIG_FILE}: {exc}.",
                    "Allowed key: max_pieces.",
                ) from exc
        return settings


def default_index_dir(vault_dir: Path) -> Path:
    """The index folder of a vault that names none: in the user's cache directory, one
    folder per vault, named after the vault and keyed by its resolved path (two vaults
    called `notes` get two folders)."""
    resolved = vault_dir.resolve()
    digest = hashlib.blake2b(str(resolved).encode(), digest_size=6).hexdigest()
    name = re.sub(r"[^\w.-]+", "-", resolved.name).strip("-.")[:40] or "vault"
    return user_cache_dir() / "indexes" / f"{name}-{digest}"


def _sync_settings(table: Any, path: Path) -> SyncSettings:
    example = 'Example: [sync] pull = "rebase", auto = true, interval = 300, quiet = 30'
    if not isinstance(table, dict):
        raise ConfigError(f"[sync] in {path} must be a table.", example)
    unknown = set(table) - {"pull", "auto", "interval", "quiet", "trash"}
    if unknown:
        raise ConfigError(
            f"Unknown key(s) in [sync] of {path}: {', '.join(sorted(unknown))}.",
            "Allowed keys: pull, auto, interval, quiet, trash.",
        )
    pull = table.get("pull", "merge")
    if pull not in PULL_MODES:
        raise ConfigError(
            f"[sync] pull in {path} is {pull!r}.", 'Use "merge" (the default) or "rebase".'
        )
    auto, trash = table.get("auto", False), table.get("trash", False)
    if not isinstance(auto, bool) or not isinstance(trash, bool):
        raise ConfigError(f"[sync] auto and trash in {path} must be true or false.", example)
    seconds = {}
    for key, least in (("interval", 1.0), ("quiet", 0.0)):
        value = table.get(key, getattr(SyncSettings, key))
        if isinstance(value, bool) or not isinstance(value, int | float) or value < least:
            raise ConfigError(
                f"[sync] {key} in {path} must be a number of seconds, at least {least:g}.",
                example,
            )
        seconds[key] = float(value)
    return SyncSettings(pull=pull, auto=auto, trash=trash, **seconds)


CREDENTIALS_EXAMPLE = (
    '[credentials]\nmode = "redact"    # or "refuse"\n'
    'allow = [{ note = "notes/x.md", fingerprint = "github-token:0123abcd4567ef89" }]'
)


def credential_settings(table: Any, path: Path | str = CONFIG_FILE) -> CredentialSettings:
    """The ``[credentials]`` table (None: the defaults).

    Raises:
        ConfigError: a table of another shape.
    """
    if table is None:
        return CredentialSettings()
    if not isinstance(table, dict) or set(table) - {"mode", "allow"}:
        raise ConfigError(
            f"Bad [credentials] table in {path} (keys: mode, allow).",
            f"Example:\n{CREDENTIALS_EXAMPLE}",
        )
    mode = table.get("mode", "redact")
    if mode not in ("redact", "refuse"):
        raise ConfigError(
            f"credentials.mode in {path} is {mode!r}.", 'Use "redact" (the default) or "refuse".'
        )
    entries = table.get("allow", [])
    if not isinstance(entries, list) or not all(
        isinstance(e, dict)
        and isinstance(e.get("note"), str)
        and isinstance(e.get("fingerprint"), str)
        for e in entries
    ):
        raise ConfigError(
            f"credentials.allow in {path} must be a list of {{ note, fingerprint }}.",
            f"Example:\n{CREDENTIALS_EXAMPLE}",
        )
    return CredentialSettings(
        mode, frozenset((e["note"], e["fingerprint"].strip()) for e in entries)
    )


def read_credential_settings(vault_dir: Path) -> CredentialSettings:
    """The ``[credentials]`` table of a vault's settings file as it is now (a long-running
    server sees an allowlist entry added after it started).

    Raises:
        ConfigError: the file or its table is invalid.
    """
    path = vault_dir / CONFIG_FILE
    return credential_settings(_read_config_file(path).get("credentials"), path)


def _read_config_file(path: Path) -> dict[str, Any]:
    if not path.is_file():
        return {}
    import tomllib  # only a vault with a settings file pays for the TOML parser

    try:
        with path.open("rb") as fh:
            return tomllib.load(fh)
    except (tomllib.TOMLDecodeError, OSError) as exc:
        raise ConfigError(
            f"Cannot read {path}: {exc}.", "Fix the TOML syntax or remove the file."
        ) from exc


# ---- this machine's trust in the vault's settings file (trust.py keeps the record) ----


def trust_vault(vault_dir: Path) -> dict[str, Any]:
    """:func:`trust.trust` with the vault's settings file as it is now (`vault trust`).

    Raises:
        ConfigError: the settings file is invalid, or the record cannot be written.
    """
    from markvault import trust  # the record is read only for a file that needs it

    Settings.load(vault=vault_dir, env={})  # an invalid file is said before it is trusted
    return trust.trust(vault_dir, _read_config_file(vault_dir / CONFIG_FILE))


def pending(vault_dir: Path) -> dict[str, Any]:
    """The vault file's widening values not trusted here (for `vault status`)."""
    from markvault import trust  # the record is read only for a file that needs it

    try:
        return trust.untrusted(vault_dir, _read_config_file(vault_dir / CONFIG_FILE))
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
    from markvault import trust  # the record is read only for a file that needs it

    try:
        after = (vault_dir / CONFIG_FILE).read_bytes()
    except OSError:
        after = None
    if after == before:
        return []
    old, new = _flat(_parsed(before)), _flat(_parsed(after))
    changed = sorted(k for k in old.keys() | new.keys() if not trust.same(old.get(k), new.get(k)))
    notices = [f"The pull changed {CONFIG_FILE}: {', '.join(changed) or 'its comments'}."]
    waiting = trust.untrusted(vault_dir, _parsed(after))
    if waiting:
        notices.append(trust.notice(waiting))
    return notices
