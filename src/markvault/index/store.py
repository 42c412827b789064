"""One open DuckDB file: connecting, its schema and meta table, opening, checking and
rebuilding it, and transactions.

The index is derived data. Whatever is wrong with it (missing, another schema
version, another chunking fingerprint, a corrupt or truncated file) is answered
by rebuilding it from the vault, with a notice, never by a crash or a migration.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

# DuckDB's engine module, which the ``duckdb`` package re-exports (``duckdb.connect`` is
# ``_duckdb.connect``; the errors and the connection class are the same objects too). The
# package's own ``__init__`` adds what markvault never uses, at a price a one-shot
# `vault search` pays on every call: DB-API type objects, one of which is parsed from a
# type name by DuckDB's default in-memory database, opened for it (~16 ms), and its version
# looked up through importlib.metadata (~10 ms). Whatever asks for the package later
# (duckdb_extensions, the engine itself for pandas or fsspec) imports it then, as usual.
import _duckdb as duckdb

from markvault.config import Settings
from markvault.errors import IndexBusyError, MarkvaultError
from markvault.index.filters import sql_string

if TYPE_CHECKING:
    import pyarrow as pa

# 13: notes.ctime_ns and notes.ino (racy.py); 14: attachments' text; 15: chunks.user_turn
SCHEMA_VERSION = "15"
# DuckDB's memory while a sync writes, over what the connection already holds (see
# deferred_checkpoints): a 90 MB vault's first build peaked at 1.2 GB without it.
BUILD_MEMORY_BYTES = 256 * 10**6
WAL_CHECKPOINT_BYTES = 16 * 2**20  # DuckDB's default checkpoint_threshold

_SCHEMA = """
CREATE TABLE meta (key VARCHAR PRIMARY KEY, value VARCHAR);
CREATE TABLE notes (
    path VARCHAR, file VARCHAR, id VARCHAR, title VARCHAR, kind VARCHAR, type VARCHAR,
    tags VARCHAR[], tags_lc VARCHAR[], aliases VARCHAR[], topic VARCHAR, project VARCHAR,
    status VARCHAR, created VARCHAR, updated VARCHAR, valid_until VARCHAR,
    superseded_by VARCHAR, source VARCHAR, files VARCHAR[], concepts VARCHAR[],
    metadata JSON, problems VARCHAR[], hash VARCHAR, mtime_ns BIGINT, size BIGINT,
    ctime_ns BIGINT, ino BIGINT, date VARCHAR, indexed_at TIMESTAMP
);
CREATE TABLE chunks (
    id BIGINT, path VARCHAR, seq INTEGER, heading_path VARCHAR[], start_line INTEGER,
    end_line INTEGER, text VARCHAR, context VARCHAR, hash VARCHAR, note_len INTEGER,
    user_turn BOOLEAN  -- a transcript's user turn (sessions/turns.py)
);
CREATE TABLE links (
    source VARCHAR, target VARCHAR, heading VARCHAR, block VARCHAR, alias VARCHAR,
    embed BOOLEAN, style VARCHAR, line INTEGER, target_name VARCHAR, target_path VARCHAR
);
-- Every file of the vault that is not a note (images, PDFs, canvases): what links and
-- embeds may name besides notes. Never indexed as notes.
CREATE TABLE attachments (path VARCHAR);
CREATE TABLE skipped (path VARCHAR, reason VARCHAR, mtime_ns BIGINT, size BIGINT);
-- Attachments' text (PDFs, Office files: extract.py) by the file's content hash, so a
-- renamed or copied file is never read twice; the attachment itself is a note of kind
-- 'attachment' whose chunks are its pages. status: text, no_text or failed.
CREATE TABLE extracts (
    hash VARCHAR, format VARCHAR, status VARCHAR, reason VARCHAR, total_pages INTEGER,
    chars BIGINT, seconds DOUBLE
);
CREATE TABLE extract_pages (hash VARCHAR, page INTEGER, label VARCHAR, text VARCHAR);
CREATE SEQUENCE chunk_ids START 1;
-- Point lookups of hits and of a note's chunks; a scan would read every chunk's text.
CREATE INDEX chunks_id ON chunks (id);
CREATE INDEX chunks_path ON chunks (path);
CREATE INDEX notes_path ON notes (path);
CREATE INDEX extract_pages_hash ON extract_pages (hash);
"""


class IndexUnusable(Exception):
    """The file is missing, corrupt or from another schema: it must be rebuilt."""


class Store:
    """An open DuckDB file shared by the index's parts. Create with ``Store.open``."""

    def __init__(self, con: duckdb.DuckDBPyConnection, settings: Settings, writable: bool):
        self.con = con
        self.settings = settings
        self.writable = writable
        self.notices: list[str] = []
        self.changes = 0  # transactions run: caches of derived answers key on it
        self._tables: set[tuple[str, str]] | None = None  # (schema, table): has_table
        self._open_transactions = 0  # transaction() blocks open, the outermost first

    @classmethod
    def open(
        cls,
        settings: Settings,
        *,
        write: bool,
        chunk_fingerprint: str,
        ready: Callable[[Store], None],
        discard: str | None = None,
    ) -> Store:
        """Open the index; with ``write``, create or rebuild it when unusable. ``ready``
        finishes a usable store (the keyword index rebuilds itself when marked dirty);
        what it cannot read is answered by a rebuild too. ``discard``: rebuild the file
        there whatever it holds, for this reason (another program replaced or changed it
        under a running owner), keeping what vectors it still has.

        Raises:
            IndexUnusable: read-only open of an index that is missing or must be rebuilt.
            IndexBusyError: another process holds the file for longer than we wait.
        """
        path = settings.db_path
        notices: list[str] = []
        existed = path.exists()
        if not existed:
            if not write:
                raise IndexUnusable("no index yet")
            settings.index_dir.mkdir(parents=True, exist_ok=True)
        con: duckdb.DuckDBPyConnection | None = None
        try:
            con = connect(path, settings, read_only=not write)
            store = cls(con, settings, write)
            if existed and discard:
                raise IndexUnusable(discard)
            if existed:
                store._check(chunk_fingerprint)
            else:
                store._create(chunk_fingerprint)
            ready(store)
        except (IndexUnusable, duckdb.Error) as exc:
            if isinstance(exc, duckdb.Error) and _is_lock_error(exc):
                raise IndexBusyError(
                    f"The index {path} is in use by another markvault process.",
                    "Wait for it to finish (or stop it) and try again.",
                ) from exc
            # Closed before anything else opens the file: DuckDB refuses a second
            # connection with other settings while this one lives.
            if con is not None:
                with contextlib.suppress(Exception):
                    con.close()
            if not write:
                raise IndexUnusable(str(exc)) from exc
            notices.append(f"Rebuilding the index from the vault: {_first_line(exc)}")
            old = path.with_name(path.name + ".old")
            _remove_db(old)
            if path.exists():
                path.replace(old)
            _remove_db(path)
            try:
                con = connect(path, settings, read_only=False)
            except duckdb.Error as again:
                raise MarkvaultError(
                    f"Cannot create the index {path}: {_first_line(again)}",
                    "Check that folder's permissions and free space, or pass --index DIR.",
                ) from again
            store = cls(con, settings, True)
            store._create(chunk_fingerprint)
            ready(store)
            kept = store._adopt_embeddings(old)
            if kept:
                notices.append(f"Kept {kept} vectors of unchanged text from the old index.")
            _remove_db(old)
        store.notices.extend(notices)
        return store

    def _check(self, chunk_fingerprint: str) -> None:
        try:
            meta = dict(self.con.execute("SELECT key, value FROM meta").fetchall())
        except duckdb.CatalogException as exc:
            raise IndexUnusable("the index has no meta table") from exc
        if meta.get("schema_version") != SCHEMA_VERSION:
            raise IndexUnusable(
                f"schema version {meta.get('schema_version')} is not {SCHEMA_VERSION}"
            )
        if meta.get("chunk_fingerprint") != chunk_fingerprint:
            raise IndexUnusable("chunking or tokenizer settings changed")

    def _create(self, chunk_fingerprint: str) -> None:
        self.con.execute("BEGIN")
        self.con.execute(_SCHEMA)
        # A new index has no keyword index yet: ``ready`` builds it.
        self.set_meta(
            schema_version=SCHEMA_VERSION, chunk_fingerprint=chunk_fingerprint, fts_dirty="1"
        )
        self.con.execute("COMMIT")

    def _adopt_embeddings(self, old: Path) -> int:
        """Copy vectors from a replaced index file, if it can still be read.

        Vectors are keyed by the hash of the text the model read, so they stay valid
        across schema and chunking changes; re-embedding a vault takes hours.
        """
        if not old.exists():
            return 0
        try:
            quoted = str(old).replace("'", "''")
            self.con.execute(f"ATTACH '{quoted}' AS old_index (READ_ONLY)")
        except duckdb.Error:
            return 0
        try:
            meta = dict(self.con.execute("SELECT key, value FROM old_index.meta").fetchall())
            dim, model = meta.get("embedding_dim"), meta.get("model")
            if not dim or not model:
                return 0
            with self.transaction():
                self.con.execute(
                    f"CREATE TABLE embeddings AS SELECT hash, model, vec::FLOAT[{int(dim)}] "
                    "AS vec FROM old_index.embeddings"
                )
                self.set_meta(embedding_dim=dim, model=model)
            row = self.con.execute("SELECT count(*) FROM embeddings").fetchone()
            return int(row[0]) if row else 0
        except duckdb.Error:
            return 0
        finally:
            with contextlib.suppress(duckdb.Error):
                self.con.execute("DETACH old_index")

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.con.close()

    # ---- meta, tables, transactions ------------------------------------------------

    def meta(self) -> dict[str, str]:
        return dict(self.con.execute("SELECT key, value FROM meta").fetchall())

    def set_meta(self, **values: str) -> None:
        # One statement of literals: a process's first bound parameter costs DuckDB's
        # client ~10 ms (its pandas check), a one-note sync's largest single statement.
        if not values:
            return
        try:
            rows = ", ".join(f"({_literal(k)}, {_literal(v)})" for k, v in values.items())
        except ValueError:  # a NUL character: no literal
            for key, value in values.items():
                self.con.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", [key, value])
            return
        self.con.execute(f"INSERT OR REPLACE INTO meta VALUES {rows}")

    def insert_rows(
        self, name: str, columns: dict[str, list[Any]], extra: str | None = None
    ) -> None:
        """Insert rows given column by column (as ``insert_table``, ``extra`` SQL after
        them)."""
        with self.rows(columns) as incoming:
            select = ", ".join(columns) + (f", {extra}" if extra else "")
            self.con.execute(f"INSERT INTO {name} SELECT {select} FROM {incoming}")

    @contextlib.contextmanager
    def rows(self, columns: dict[str, list[Any]], name: str = "incoming") -> Iterator[str]:
        """Rows given column by column as a relation for SQL's FROM, named ``name``.

        A few rows go in as literals: registering an Arrow table imports pyarrow and
        numpy (~0.25 s, more than a one-note sync's writes), and bound parameters cost
        DuckDB a pandas import attempt each. Many rows go in as an Arrow table."""
        few = len(_first(columns)) <= LITERAL_ROWS_MAX
        values = _values_sql(columns, name) if few else None
        if values is not None:
            yield values
            return
        import pyarrow as pa

        self.con.register(name, pa.table(columns))
        try:
            yield name
        finally:
            self.con.unregister(name)

    def insert_table(self, name: str, table: pa.Table, extra: str | None = None) -> None:
        columns = ", ".join(table.column_names)
        select = columns + (f", {extra}" if extra else "")
        self.con.register("incoming", table)
        try:
            self.con.execute(f"INSERT INTO {name} SELECT {select} FROM incoming")
        finally:  # a failed insert (a full disk) must not keep the batch's table alive
            self.con.unregister("incoming")

    def has_table(self, name: str, schema: str = "main") -> bool:
        # Asked on every query; tables only appear or vanish in our own writes.
        if self._tables is None:
            self._tables = self._query_tables()
        return (schema, name) in self._tables

    def rows_if_table(self, name: str, sql: str) -> list[tuple[Any, ...]] | None:
        """The rows of ``sql``, a read of the table ``name``; None when there is no such
        table. With the tables not listed yet and no transaction open (a one-shot search),
        the statement is just tried: listing them (``duckdb_tables()``) costs a new
        connection ~2 ms, and a failed statement outside a transaction harms nothing."""
        if self._tables is not None or self._open_transactions:
            return self.con.execute(sql).fetchall() if self.has_table(name) else None
        try:
            return self.con.execute(sql).fetchall()
        except duckdb.CatalogException:
            if self.has_table(name):  # another table is missing: not this one's answer
                raise
            return None

    def forget_tables(self) -> None:
        """Tables appeared or vanished outside a transaction (the keyword rebuild)."""
        self._tables = None

    def _query_tables(self) -> set[tuple[str, str]]:
        # Every table at once, in one statement without parameters: a one-shot `vault
        # search` asks once. duckdb_tables(), not information_schema: binding that view
        # costs a new connection ~8 ms; a bound parameter costs the first statement of a
        # process ~5 ms more (DuckDB's check for pandas values).
        rows = self.con.execute(
            "SELECT schema_name, table_name FROM duckdb_tables() WHERE database_name = "
            "current_database()"
        ).fetchall()
        return {(str(schema), str(table)) for schema, table in rows}

    @contextlib.contextmanager
    def transaction(self) -> Iterator[None]:
        """One transaction; one opened inside another is part of it (a sync writes its
        notes and resolves their links in one: one commit, one sync of the log)."""
        if not self.writable:
            raise MarkvaultError("internal: write on a read-only index")
        if self._open_transactions:
            self._open_transactions += 1
            try:
                yield
            finally:
                self._open_transactions -= 1
                self._tables = None
                self.changes += 1  # caches of what it read may be stale already
            return
        self.con.execute("BEGIN")
        self._open_transactions = 1
        try:
            yield
        except BaseException:
            self.con.execute("ROLLBACK")
            raise
        finally:
            self._open_transactions = 0
            self._tables = None
            self.changes += 1
        self.con.execute("COMMIT")

    @contextlib.contextmanager
    def deferred_checkpoints(self) -> Iterator[None]:
        """Many write transactions in a row (a first build written batch by batch):
        DuckDB checkpoints once, at the end, instead of each time its log passes its
        threshold, which rewrote the growing tables again and again and left the file
        nearly twice its size."""
        if not self.writable:
            yield
            return
        self.con.execute("SET checkpoint_threshold = '1TB'")
        # Until that checkpoint the rows written live in memory: capped, DuckDB spills
        # them to a temporary file rather than holding a large vault's index in RAM. The
        # cap sits above what is held already (a server's vectors), so nothing must go.
        row = self.con.execute(
            "SELECT coalesce(sum(memory_usage_bytes), 0) FROM duckdb_memory()"
        ).fetchone()
        held = int(row[0]) if row else 0
        self.con.execute(f"SET memory_limit = '{held + BUILD_MEMORY_BYTES} bytes'")
        try:
            yield
            self.checkpoint_large_log()
        finally:
            self.con.execute("RESET memory_limit")
            self.con.execute("RESET checkpoint_threshold")

    def checkpoint_large_log(self) -> None:
        """Checkpoint now if the log has passed DuckDB's usual threshold (its next commit
        would checkpoint anyway): under ``deferred_checkpoints``' cap, as it reads the
        spilled rows back. Before a large sort too: the rows in the log are then in the
        file, and the sort's memory evicts nothing to the temporary file for the
        checkpoint to read back (a first build's postings, bench/README.md "tail")."""
        wal = self.settings.db_path.with_name(self.settings.db_path.name + ".wal")
        if wal.exists() and wal.stat().st_size > WAL_CHECKPOINT_BYTES:
            self.con.execute("CHECKPOINT")

    @contextlib.contextmanager
    def one_thread(self) -> Iterator[None]:
        """DuckDB works on one thread meanwhile: while worker processes read a large
        sync's notes, the cores are theirs, and a second DuckDB thread for each batch's
        inserts only competed with them (a cold build of a 90 MB vault spent 6-14% more
        CPU in all with it: bench/README.md, "build"). The rebuild after it sorts on all."""
        self.con.execute("SET threads = 1")
        try:
            yield
        finally:
            self.con.execute("RESET threads")


# Rows up to this many go into SQL as literals (see ``Store.rows``).
LITERAL_ROWS_MAX = 256


def _first(columns: dict[str, list[Any]]) -> list[Any]:
    return next(iter(columns.values()), [])


def _values_sql(columns: dict[str, list[Any]], name: str) -> str | None:
    """``columns`` as ``(VALUES ...) AS name(...)``, or None when a value has no
    literal here (a NUL character, a type other than str, int, bool, None or a list
    of str): those rows go in through Arrow, as large ones do."""
    names = ", ".join(f'"{c}"' for c in columns)
    try:
        cells = [[_literal(v) for v in values] for values in columns.values()]
    except ValueError:
        return None
    if not _first(columns):  # VALUES needs a row: one of NULLs that WHERE false drops
        nulls = ", ".join("NULL" for _ in columns)
        return f"(SELECT * FROM (VALUES ({nulls})) AS {name}({names}) WHERE false) AS {name}"
    rows = ", ".join("(" + ", ".join(row) + ")" for row in zip(*cells, strict=True))
    return f"(VALUES {rows}) AS {name}({names})"


def _literal(value: Any) -> str:
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str) and "\x00" not in value:
        return sql_string(value)
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return "[" + ", ".join(_literal(v) for v in value) + "]::VARCHAR[]"
    raise ValueError(f"no SQL literal for {type(value).__name__}")


def dict_rows(cur: duckdb.DuckDBPyConnection) -> Iterator[dict[str, Any]]:
    names = [d[0] for d in cur.description or []]
    for row in cur.fetchall():
        yield dict(zip(names, row, strict=True))


# Rows per row group written into an existing index file (DuckDB's default: 122,880). A
# write into a table with ART indexes rewrites at its checkpoint the whole row group its
# rows land in: with the default, a one-note edit on a 6.5k-note vault rewrote all its
# chunks (31 MB); with this, the new rows go to a small row group of their own. 4,096,
# not 8,192: the hub's notes table (6.5k rows, one row group) no longer takes an edit's
# note row into it (one edit 0.83x wall, 0.91x CPU: bench/README); postings re-sorted
# into 2,048-row groups made warm queries' postings step ~1.3x slower, 4,096 not.
ROW_GROUP_ROWS = 4096
DATABASE = "vault_index"  # the index file's name in SQL, as attached


def connect(path: Path, settings: Settings, read_only: bool) -> duckdb.DuckDBPyConnection:
    """The index file, attached to an in-memory database: the row group size is an
    option of ATTACH only (the file does not keep it). A new file gets DuckDB's default:
    its first build writes every row at once, and small row groups cost that build ~15%
    more peak memory and CPU."""
    settings.extension_dir.mkdir(parents=True, exist_ok=True)
    config: dict[str, str | bool | int | float | list[str]] = {
        "extension_directory": str(settings.extension_dir),
        "autoinstall_known_extensions": False,
        "autoload_known_extensions": False,
        # Where spilled rows go: beside the file, as with the file as the main database
        # (in memory it would be the working directory).
        "temp_directory": str(path) + ".tmp",
    }
    if read_only:
        # A read-only open serves one call (a one-shot search): its statements are small
        # and DuckDB's second thread costs more than it gains (start-up, the hand-offs of
        # a ~10 ms statement), and the freshness look's `find` wants the other core.
        config["threads"] = 1
        options = " (READ_ONLY)"
    else:
        options = f" (ROW_GROUP_SIZE {ROW_GROUP_ROWS})" if path.exists() else ""
    attach = f"ATTACH {sql_string(str(path))} AS {DATABASE}{options}"
    deadline = time.monotonic() + settings.index_lock_wait
    delay = 0.05
    while True:
        con = duckdb.connect(":memory:", config=config)
        try:
            # In one call (~0.2 ms less). DuckDB draws a progress bar on stdout for long
            # statements: that would corrupt the MCP server's JSON-RPC stream and scripts'
            # JSON (a session setting: the connect config refuses it).
            con.execute(f"{attach}; USE {DATABASE}; SET enable_progress_bar = false")
            return con
        except duckdb.Error as exc:
            con.close()
            if not _is_lock_error(exc) or time.monotonic() > deadline:
                raise
            time.sleep(delay)  # another process holds the lock; it is released on its exit
            delay = min(delay * 2, 0.5)


def load_extension(con: duckdb.DuckDBPyConnection, name: str) -> None:
    """Load a DuckDB extension from the packaged file (never downloaded)."""
    try:
        con.execute(f"LOAD {name}")
    except duckdb.Error:
        from duckdb_extensions import import_extension  # copies the packaged file only

        import_extension(name, con=con)
        con.execute(f"LOAD {name}")


def _is_lock_error(exc: BaseException) -> bool:
    """Another process holds the file, or another connection of this one has it attached
    (the index is busy, not broken: never rebuilt for it)."""
    text = str(exc).lower()
    return "lock" in text or "already attached" in text


def _remove_db(path: Path) -> None:
    for p in (path, path.with_name(path.name + ".wal")):
        with contextlib.suppress(FileNotFoundError):
            p.unlink()


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
