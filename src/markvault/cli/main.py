"""The `vault` command line: thin commands over ``Vault``; no SQL, no file I/O."""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import gc
import json
import os
import select
import sys
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar, cast

import click

from markvault.answers.context import TimelineNote
from markvault.answers.reading import AttachmentPage, ChunkView, NoteView
from markvault.answers.sessions import SessionPage
from markvault.answers.status import AutoSyncStatus, WatcherStatus
from markvault.answers.sync import SyncAnswer
from markvault.answers.writing import CredentialReport, NoteCreated, NoteMoved, NoteRestored
from markvault.config import Settings
from markvault.display import fold, shown
from markvault.errors import ConflictError, MarkvaultError, RefusedError, UsageError
from markvault.runtime.shared_host import connect
from markvault.search.time_signal import time_line
from markvault.types import (
    PAGE_CHARS,
    SCOPES,
    Edit,
    Filters,
    Op,
    ReindexReport,
    SearchRequest,
    SearchResult,
    SessionQuery,
)
from markvault.vault import Vault, parse_lines

if TYPE_CHECKING:
    from markvault.credentials.scan import CheckReport  # imported by `vault check` only

F = TypeVar("F", bound=Callable[..., Any])
RANK_LABELS = {"keyword": "kw", "vector": "vec"}
# Set by ``run``: this process is one `vault` command and ends with it (not a caller
# that runs commands in its own process, as the tests' CliRunner does).
_COMMAND_PROCESS = False


def _fail(message: str, code: int) -> None:
    click.echo(click.style("Error: ", fg="red", bold=True) + shown(message), err=True)
    sys.exit(code)


def handle_errors(fn: F) -> F:
    """Expected failures become a message and an exit code, never a traceback."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except MarkvaultError as exc:
            _fail(str(exc), exc.exit_code)
        except BrokenPipeError:
            if _reader_gone():
                raise  # `| head` closed early: _QuietPipes ends the command
            _fail("The connection to the index owner broke. Retry the command.", 1)
        except OSError as exc:
            where = f" ({exc.filename})" if exc.filename else ""
            _fail(f"{exc.strerror or exc}{where}. Check the path and its permissions.", 1)
        except KeyboardInterrupt:
            _fail("interrupted; the vault is unchanged and the index stays usable.", 130)

    return wrapper  # type: ignore[return-value]


# Exit status of a command whose reader went away, as a shell reports one killed by
# SIGPIPE (128 + 13); Python ignores SIGPIPE, so the write fails instead.
READER_GONE_STATUS = 141


def _reader_gone() -> bool:
    """Whether stdout or stderr is a pipe whose reader has closed it (`| head -1`)."""
    for fd in (1, 2):
        try:
            poller = select.poll()
            poller.register(fd, select.POLLOUT)
            if any(event & select.POLLERR for _, event in poller.poll(0)):
                return True
        except (OSError, ValueError, AttributeError):  # closed fd; no poll() here
            return True
    return False


@contextlib.contextmanager
def _quiet_pipes() -> Iterator[None]:
    """Output piped into `head`, `less` or `grep -q` that closes early ends the command
    silently with status 141. The vault still closes cleanly (the context's close
    callbacks run on the way out), unlike a process killed by SIGPIPE."""
    try:
        yield
    except BrokenPipeError:
        if not _reader_gone():
            raise
        devnull = os.open(os.devnull, os.O_WRONLY)
        for fd in (1, 2):  # later writes and the flush at exit go nowhere, quietly
            os.dup2(devnull, fd)
        os.close(devnull)
        raise SystemExit(READER_GONE_STATUS) from None


class _QuietPipes(click.Group):
    def make_context(self, *args: Any, **kwargs: Any) -> click.Context:
        with _quiet_pipes():  # `vault --help | head -1`
            _refuse_undecodable(kwargs.get("args", args[1] if len(args) > 1 else []))
            return super().make_context(*args, **kwargs)

    def invoke(self, ctx: click.Context) -> Any:
        with _quiet_pipes():
            return super().invoke(ctx)


PORTS = click.IntRange(0, 65535)  # 0: any free port
MAX_DAYS = 100 * 366  # `recent --days`: a date further back is no date


class _Span(click.FloatRange):
    """A float range that refuses NaN (which every range comparison lets through)."""

    def convert(self, value: Any, param: Any, ctx: Any) -> Any:
        number = super().convert(value, param, ctx)
        if number != number:
            self.fail(f"{value!r} is not a number.", param, ctx)
        return number


def _refuse_undecodable(args: list[str]) -> None:
    """Python hands bytes that are not UTF-8 over as lone surrogates (surrogateescape):
    no note, path or query holds one, and the index cannot store one. A usage error
    (exit 2) names the argument. (A NUL, which no command line can carry, but a caller
    in Python can, is refused too: no path holds one.)"""
    for number, arg in enumerate(args, 1):
        if isinstance(arg, str) and "\0" in arg:
            raise click.UsageError(f"Argument {number} holds a NUL character.")
        if isinstance(arg, str) and any("\udc80" <= c <= "\udcff" for c in arg):
            raw = os.fsencode(arg)
            raise click.UsageError(
                f"Argument {number} ({raw!r}) is not valid UTF-8. Pass text in UTF-8."
            )


class TerminalProgress:
    """A progress bar on a terminal; a few plain lines otherwise, with the rate
    (``Embedding chunks: 500/2779, 21.3 chunks/s``). A stage whose label ends in "…" is
    one slow step (the model's first load, a one-time measurement): always announced."""

    def __init__(self, quiet: bool = False) -> None:
        self.quiet = quiet
        self.tty = sys.stderr.isatty()
        self._bar: Any = None
        self._label = ""
        self._total = 0
        self._done = 0
        self._next_report = 0
        self._started = 0.0

    def _rate(self) -> str:
        seconds = time.perf_counter() - self._started
        unit = self._label.split()[-1] if " " in self._label else ""  # "Embedding chunks"
        return f"{self._done / seconds:.1f} {unit}/s" if self._done and seconds > 0 else ""

    def start(self, label: str, total: int) -> None:
        self._label, self._total, self._done = label, total, 0
        self._started = time.perf_counter()
        if self.quiet or total == 0:
            return
        if label.endswith("…"):
            click.echo(label, err=True)
            self._next_report = total + 1
        elif self.tty:
            self._bar = click.progressbar(
                length=total,
                label=label,
                file=sys.stderr,
                width=30,
                show_pos=True,
                item_show_func=lambda rate: rate,
            )
            self._bar.__enter__()
        elif total >= 200:  # short runs need no progress lines in logs
            click.echo(f"{label}: 0/{total}", err=True)
            self._next_report = max(1, total // 10)
        else:
            self._next_report = total + 1

    def advance(self, n: int) -> None:
        self._done += n
        if self._bar is not None:
            self._bar.update(n, self._rate())
        elif not self.quiet and self._total and self._done >= self._next_report:
            rate = self._rate()
            click.echo(
                f"{self._label}: {self._done}/{self._total}" + (f", {rate}" if rate else ""),
                err=True,
            )
            self._next_report += max(1, self._total // 10)

    def finish(self) -> None:
        if self._bar is not None:
            self._bar.__exit__(None, None, None)
            self._bar = None


@click.group(
    cls=_QuietPipes,
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
)
@click.option(
    "--vault",
    "vault_dir",
    metavar="DIR",
    envvar="MARKVAULT_VAULT",
    help="The vault folder (env MARKVAULT_VAULT; default ./vault).",
)
@click.option(
    "--index",
    "index_dir",
    metavar="DIR",
    envvar="MARKVAULT_INDEX",
    help="Where the index lives (default: a folder for this vault in your cache directory).",
)
@click.option(
    "--model",
    metavar="NAME",
    envvar="MARKVAULT_MODEL",
    help="Embedding model: all-MiniLM-L6-v2 (default) or a local folder.",
)
@click.version_option(package_name="markvault")
@click.pass_context
def main(
    ctx: click.Context, vault_dir: str | None, index_dir: str | None, model: str | None
) -> None:
    """markvault: search and keep a Markdown vault, for people and coding agents.

    \b
    Examples:
      vault reindex                       build or refresh the index of ./vault
      vault search "hybrid search"        keyword + meaning, best notes first
      vault --vault ~/notes status        another vault
    """
    ctx.obj = {"vault": vault_dir, "index": index_dir, "model": model}


def open_vault(
    ctx: click.Context,
    *,
    index_lock_wait: float | None = None,
    look_ahead: bool = False,
    walk_ahead: bool = False,
) -> Vault:
    """The vault: this process owns its index, or asks the process that does (see
    shared.py), so any number of commands and servers can run at once.
    ``index_lock_wait``: how long to wait for the DuckDB file's lock (as the owner);
    ``look_ahead``: the command is one search, made now; ``walk_ahead``: its first call
    syncs the whole vault, now (``shared.connect``)."""
    obj = ctx.find_root().obj
    settings = Settings.load(vault=obj["vault"], index=obj["index"], model=obj["model"])
    if index_lock_wait is not None:
        settings = dataclasses.replace(settings, index_lock_wait=index_lock_wait)
    if look_ahead and _COMMAND_PROCESS and settings.db_path.exists():
        # The process ends once it has answered: Python's cycle collector is stopped for
        # the rest of it. What it allocates from here (the index layer's modules, the
        # search's rows) lives to the end or is freed by its reference count, and each
        # collection would walk the imports' ~100k objects again (~2-3 ms of a search
        # on big). Not when the index is missing: the search builds it first.
        gc.disable()
    vault = connect(settings, look_ahead=look_ahead, walk_ahead=walk_ahead)
    ctx.call_on_close(vault.close)
    return vault


def emit_json(data: Any) -> None:
    click.echo(json.dumps(data, ensure_ascii=False, indent=None, default=str))


# ---- reindex --------------------------------------------------------------------------


@main.command()
@click.option("--full", is_flag=True, help="Rebuild from nothing (re-embeds everything).")
@click.option("--no-vectors", is_flag=True, help="Keyword index only: fast, no model load.")
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON.")
@click.option("-q", "--quiet", is_flag=True, help="No progress output.")
@click.pass_context
@handle_errors
def reindex(ctx: click.Context, full: bool, no_vectors: bool, as_json: bool, quiet: bool) -> None:
    """Bring the index in step with the vault's files.

    Incremental by content hash: unchanged files are not read, unchanged text is
    not re-embedded, renamed files keep their vectors. A bad file is reported and
    skipped. Exit code 0, or 1 when some files were skipped.

    \b
    Examples:
      vault reindex
      vault reindex --no-vectors --json
      vault reindex --full
    """
    vault = open_vault(ctx, walk_ahead=True)
    report = vault.reindex(
        full=full, vectors=not no_vectors, progress=TerminalProgress(quiet=quiet or as_json)
    )
    if as_json:
        emit_json(report.to_json())
    else:
        for notice in report.notices:
            click.echo(notice, err=True)
        for item in report.errors:
            click.echo(click.style("skipped ", fg="red") + item["message"], err=True)
        for item in report.warnings:
            click.echo(
                click.style("warning ", fg="yellow") + fold(f"{item['path']}: {item['message']}")
                if not item["message"].startswith(item["path"])
                else click.style("warning ", fg="yellow") + fold(item["message"]),
                err=True,
            )
        click.echo(
            f"{report.notes} notes, {report.chunks} chunks · {report.added} added, "
            f"{report.updated} updated, {report.renamed} renamed, {report.removed} removed, "
            f"{report.unchanged} unchanged · "
            + (
                f"{report.embedded} embedded, {report.reused} reused · "
                if report.vectors
                else "no vectors · "
            )
            + f"{len(report.errors)} errors · {report.seconds:.2f} s"
        )
    if report.errors:
        sys.exit(1)


# ---- search ---------------------------------------------------------------------------


_FILTER_OPTIONS = (
    click.option(
        "--kind", multiple=True, help="note, session, knowledge or document (repeatable)."
    ),
    click.option("--type", "type_", multiple=True, help="decision, bugfix, ... (repeatable)."),
    click.option("--tag", multiple=True, help="Required tag; 'a' also matches 'a/b' (repeatable)."),
    click.option("--topic", multiple=True, help="Knowledge topic (repeatable)."),
    click.option("--project", multiple=True, help="Project (repeatable)."),
    click.option(
        "--path", "path_glob", metavar="GLOB", help="Vault-relative path glob, e.g. 'notes/*'."
    ),
    click.option("--since", metavar="DATE", help="Updated/created on or after (ISO date)."),
    click.option("--until", metavar="DATE", help="Updated/created on or before (ISO date)."),
    click.option(
        "--meta", multiple=True, metavar="KEY=VALUE", help="Any frontmatter key (repeatable)."
    ),
    click.option("--concept", multiple=True, help="Required concept (repeatable)."),
    click.option(
        "--file", "files", multiple=True, metavar="PATH", help="Notes about this code path or glob."
    ),
    click.option(
        "--include-expired", is_flag=True, help="Also notes past valid_until, or superseded."
    ),
    click.option(
        "--scope",
        type=click.Choice(SCOPES),
        help="Session notes only, or only their user prompts, decisions, outcomes or open items.",
    ),
    click.option(
        "--attachments",
        type=click.Choice(["include", "exclude", "only"]),
        default="include",
        show_default=True,
        help="PDFs and Office files among the hits (--type pdf, docx, ... picks formats).",
    ),
)


def filter_options(command: F) -> F:
    """The search filters as options, declared once: the command receives them as one
    ``filters: Filters`` argument (a bad --meta is a usage error, exit 2)."""

    @functools.wraps(command)
    def with_filters(*args: Any, **kwargs: Any) -> Any:
        pairs: dict[str, str] = {}
        for item in kwargs.pop("meta"):
            key, sep, value = item.partition("=")
            if not sep or not key:
                raise UsageError(
                    f"Bad --meta {item!r}.", "Use --meta KEY=VALUE, e.g. --meta reviewed=true."
                )
            pairs[key.strip()] = value.strip()
        filters = Filters(
            kinds=list(kwargs.pop("kind")),
            types=list(kwargs.pop("type_")),
            tags=list(kwargs.pop("tag")),
            topics=list(kwargs.pop("topic")),
            projects=list(kwargs.pop("project")),
            path_glob=kwargs.pop("path_glob"),
            since=kwargs.pop("since"),
            until=kwargs.pop("until"),
            meta=pairs,
            concepts=list(kwargs.pop("concept")),
            files=list(kwargs.pop("files")),
            include_expired=kwargs.pop("include_expired"),
            scope=kwargs.pop("scope"),
            attachments=kwargs.pop("attachments"),
        )
        return command(*args, filters=filters, **kwargs)

    for option in reversed(_FILTER_OPTIONS):
        with_filters = option(with_filters)
    return with_filters  # type: ignore[return-value]


def _print_result(result: SearchResult, fmt: str) -> None:
    if fmt == "json":
        emit_json(result.to_json())
        return
    for w in result.warnings:
        click.echo(click.style("note: ", fg="yellow") + fold(w), err=True)
    if result.time:
        click.echo(click.style("time: ", fg="yellow") + fold(time_line(result.time)), err=True)
    for hit in result.hits:  # every value from a note folded: one hit, one line (display.py)
        heading = fold(" > ".join(hit.heading_path) or hit.title)
        more = f"  (+{hit.more_chunks} more)" if hit.more_chunks else ""
        ranks = " ".join(f"{RANK_LABELS.get(k, k)}#{v}" for k, v in hit.ranks.items())
        click.echo(
            click.style(f"#{hit.chunk_id}", fg="cyan")
            + f' | {fold(hit.path)} | "{heading}" | {hit.score:.4f}'
            + click.style(f"  [{ranks}]{more}", dim=True)
        )
        click.echo("    " + _styled_snippet(fold(hit.snippet)))
        if fmt == "full" and hit.text is not None:
            click.echo(
                click.style(f"    lines {hit.lines[0]}-{hit.lines[1]} · {fold(hit.uri)}", dim=True)
            )
            for line in hit.text.splitlines():
                click.echo("    │ " + fold(line))
            click.echo()
    if not sys.stdout.isatty():
        return  # piped (`| head -1`): the hits alone, nothing on stderr
    shown = f"{len(result.hits)} of {result.total} notes" if result.hits else "no matches"
    click.echo(
        click.style(
            f"{shown} · {result.mode} · {result.timings_ms.get('total', 0):.0f} ms", dim=True
        ),
        err=True,
    )


def _styled_snippet(text: str) -> str:
    if not sys.stdout.isatty():
        return text
    parts = text.split("**")
    return "".join(click.style(p, bold=True) if i % 2 else p for i, p in enumerate(parts))


def _batch_queries(source: str) -> Iterator[tuple[str | None, str]]:
    stream = sys.stdin if source == "-" else open(source, encoding="utf-8")  # noqa: SIM115
    with stream:
        for n, raw in enumerate(stream, start=1):
            line = raw.strip()
            if not line:
                continue
            if line.startswith("{"):
                try:
                    obj = json.loads(line)
                    yield (None if obj.get("id") is None else str(obj["id"])), str(obj["query"])
                except (json.JSONDecodeError, KeyError, AttributeError) as exc:
                    raise UsageError(
                        f'Line {n} of the batch is not {{"id", "query"}} JSON: {exc}.'
                    ) from exc
            else:
                yield None, line


@main.command()
@click.argument("query", required=False)
@click.option(
    "--mode",
    type=click.Choice(["keyword", "vector", "hybrid", "deep"]),
    default="hybrid",
    show_default=True,
    help="Keyword (BM25), vector (meaning), both fused, or deep (with --variant).",
)
@click.option(
    "--variant",
    "variants",
    multiple=True,
    metavar="TEXT",
    help="Deep mode: a rewrite of the query; prefix lex:, vec: or hyde: (repeatable, max 8).",
)
@click.option(
    "--order",
    type=click.Choice(["relevance", "date"]),
    default="relevance",
    show_default=True,
    help="Best first, or newest first.",
)
@click.option("--min-score", type=float, help="Drop hits scoring below this.")
@click.option(
    "--at",
    "as_of",
    metavar="DATE",
    help="When the question is asked (ISO date; default today): what time words such as "
    "'last Tuesday' are read against.",
)
@click.option("--limit", default=10, show_default=True, type=int, help="Notes to return.")
@click.option("--offset", default=0, show_default=True, type=int, help="Notes to skip (paging).")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["index", "full", "json"]),
    default="index",
    show_default=True,
    help="One line per hit, full chunk text, or JSON.",
)
@click.option("--json", "as_json", is_flag=True, help="Same as --format json.")
@click.option("--batch", metavar="FILE", help="Queries from FILE (or - for stdin); JSON lines out.")
@click.pass_context
@handle_errors
@filter_options
def search(
    ctx: click.Context,
    query: str | None,
    mode: str,
    variants: tuple[str, ...],
    filters: Filters,
    order: str,
    min_score: float | None,
    as_of: str | None,
    limit: int,
    offset: int,
    fmt: str,
    as_json: bool,
    batch: str | None,
) -> None:
    """Search the vault; the best chunk of each note, best notes first.

    \b
    Keyword syntax:  word  "exact phrase"  prefix*  a AND b  a OR b  NOT a  -a  ( )
    Plain words are ranked by BM25 and any of them may match. Time words
    ("yesterday", "last Tuesday", "two weeks ago", "since May") rank notes dated
    then higher, read against --at (default today).
    Exit code 0 with results, 1 with none.

    \b
    Examples:
      vault search "how are notes chunked"
      vault search --mode keyword '"reciprocal rank" -vector'
      vault search duckdb --kind knowledge --tag search --since 2026-01-01
      vault search 机器学习 --format json
      vault search "rank fusion" --mode deep --variant "lex: RRF" --variant "hyde: we merge lists"
      vault search lock --file index.py --order date --include-expired
      vault search "decimal money" --scope decisions      decisions of session summaries
      vault search "what did we decide last Tuesday" --at 2026-03-12
      vault search invoice --attachments only --type pdf  in PDFs only, page cited
      printf 'bm25\\nhnsw\\n' | vault search --batch - --mode keyword
    """
    fmt = "json" if as_json else fmt
    request = SearchRequest(
        query or "",
        mode=mode,
        filters=filters,
        limit=limit,
        offset=offset,
        full_text=fmt == "full",
        variants=variants,
        order=order,
        min_score=min_score,
        as_of=as_of,
    )
    vault = open_vault(ctx, look_ahead=not batch)
    if batch:
        if query:
            raise UsageError("Give a query or --batch, not both.")
        for item in vault.search_batch(_batch_queries(batch), request):
            emit_json(item)
        return
    if not query:
        raise UsageError("No query given.", 'Example: vault search "hybrid search"')
    result = vault.search(request, progress=TerminalProgress(quiet=fmt == "json"))
    _show_search(result, fmt)


def _show_search(result: SearchResult, fmt: str) -> None:
    """Print a search's result; exit 1 when nothing was found. Whether the index is
    behind the files was settled before the search ran (core/freshness.py): a small
    change is synced first, a large one named in the result's warnings."""
    _print_result(result, fmt)
    if not result.hits:
        sys.exit(1)


# ---- get, status, new -----------------------------------------------------------------


@main.command()
@click.argument("refs", nargs=-1)
@click.option("--pattern", metavar="GLOB", help="Every note whose path matches, e.g. 'notes/*'.")
@click.option("--lines", metavar="A:B", help="Only lines A to B of the note (1-based).")
@click.option(
    "--max-chars",
    type=int,
    default=None,
    help="Cut long notes here (default: whole notes; 20000 for several).",
)
@click.option("--json", "as_json", is_flag=True, help="Print JSON with metadata, links and hash.")
@click.pass_context
@handle_errors
def get(
    ctx: click.Context,
    refs: tuple[str, ...],
    pattern: str | None,
    lines: str | None,
    max_chars: int | None,
    as_json: bool,
) -> None:
    """Show notes by id, path or URI, or chunks by #ID.

    An attachment (PDF, Office file, ...) shows its text by page: --lines A:B are its
    pages, as is '#page=A-B' after its path (its hits' URIs cite their page so).

    \b
    Examples:
      vault get notes/Welcome.md
      vault get mv-welcome --lines 1:20
      vault get 'papers/rrf.pdf#page=3'
      vault get '#42'
      vault get vault://note/mv-welcome --json
      vault get --pattern 'knowledge/duckdb/*'
    """
    vault = open_vault(ctx)
    if len(refs) == 1 and not pattern:
        whole = vault.settings.max_note_bytes  # a person reading in a terminal gets it all
        item = vault.get(refs[0], parse_lines(lines), max_chars or whole)
        if as_json:
            emit_json(item)
        else:
            _print_item(item)
        return
    if lines:
        raise UsageError("--lines is for one note.", "Pass a single REF with --lines.")
    many = vault.get_many(refs, pattern, max_chars or PAGE_CHARS)
    if as_json:
        emit_json(many)
        return
    for entry in many["notes"]:
        if "error" in entry:
            click.echo(click.style("Error: ", fg="red") + entry["error"], err=True)
        elif "omitted" in entry:
            name = entry["path"] if "path" in entry else entry["ref"]
            click.echo(click.style(fold(f"{name}  (not shown: {entry['omitted']})"), dim=True))
        else:
            _print_item(entry)
            click.echo()


def _print_item(item: NoteView | ChunkView | AttachmentPage | SessionPage) -> None:
    where = f"{item['path']}:{item['lines'][0]}-{item['lines'][1]}"
    label = f"#{item['chunk_id']} " if "chunk_id" in item else ""
    click.echo(
        click.style(fold(f"{label}{item['title']}"), bold=True)
        + click.style(fold(f"  {where} · {item['kind']} · hash {item['hash']}"), dim=True),
        err=True,
    )
    click.echo(shown(item["text"]) if sys.stdout.isatty() else item["text"])
    next_lines = None if "chunk_id" in item else item["next_lines"]
    if next_lines:
        click.echo(click.style(f"… continues: --lines {next_lines}", fg="yellow"), err=True)


@main.command()
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_context
@handle_errors
def status(ctx: click.Context, as_json: bool) -> None:
    """Counts, model, vectors, index size and what changed since the last sync.

    \b
    Examples:
      vault status
      vault status --json | jq .pending
    """
    info = open_vault(ctx).status()
    if as_json:
        emit_json(info)
        return
    vec = info["vectors"]
    pending = info["pending"]
    lines = [
        f"vault    {info['vault']}",
        f"index    {info['index']} ({info['index_bytes'] / 1048576:.1f} MiB; "
        f"{info.get('index_origin', '?')}), last sync {info['last_sync']}",
        f"notes    {info['notes']} · chunks {info['chunks']} · other files {info['files']} "
        f"· skipped files {info['skipped_files']}",
        f"links    {info['links']}: {info['links_to_notes']} to notes, "
        f"{info['links_to_files']} to files, {info['unresolved_links']} unresolved",
        "kinds    " + ", ".join(f"{k} {v}" for k, v in info["by_kind"].items()),
        "types    " + ", ".join(f"{k} {v}" for k, v in info["by_type"].items()),
        f"model    {info['model']} (dim {info['dimension'] or '?'}) · "
        f"vectors {vec['embedded']}/{vec['total']}"
        + (" ready" if vec["ready"] else " — run `vault reindex`"),
        f"encoder  {_encoder_line(info.get('encoder'))}",
        f"pending  {pending['new']} new, {pending['changed']} changed, "
        f"{pending['deleted']} deleted"
        + (" — run `vault reindex`" if any(pending.values()) else ""),
    ]
    lines += [_watcher_line(info["watcher"]), _autosync_line(info["autosync"])]
    git = info.get("git_operation")
    if git:  # a merge or rebase left open: no write until it ends
        held = ", ".join(map(fold, git["conflicts"])) or "none left"
        lines.append(f"git      {git['operation']} in progress; conflict markers in: {held}")
        lines.append(f"         {git['hint']}")
    if "attachments" in info:  # PDFs, Office files, ... whose text is indexed
        att = info["attachments"]
        lines.insert(4, f"attached {att['total']} with text to index: {att['extracted']} read, "
                     f"{att['without_text']} without text, {att['failed']} failed")  # fmt: skip
    click.echo("\n".join(lines))
    _print_untrusted(info["vault"])
    for p in info["problems"][:20]:
        click.echo(click.style("problem  ", fg="yellow") + fold(f"{p['path']}: {p['problem']}"))


def _print_untrusted(vault: str) -> None:
    """The vault file's widening settings this machine has not trusted (trust.py)."""
    from pathlib import Path

    from markvault.config import pending
    from markvault.trust import notice

    if waiting := pending(Path(vault)):
        click.echo(click.style("trust    ", fg="yellow") + notice(waiting), err=True)


def _encoder_line(encoder: dict[str, Any] | None) -> str:
    if not encoder:
        return "unknown"
    return encoder.get("describe") or encoder["reason"]


def _watcher_line(watcher: WatcherStatus | None) -> str:
    if watcher is None:
        return "watcher  none running (`vault watch` or `vault mcp` keeps the index in step)"
    state = "ready" if watcher["ready"] else "starting" if watcher["running"] else "stopped"
    mode = "polling" if watcher["mode"] == "polling" else "file events"
    return f"watcher  {mode}, {state}" + (
        f" · last error: {watcher['last_error']}" if watcher.get("last_error") else ""
    )


def _autosync_line(autosync: AutoSyncStatus) -> str:
    running = autosync["running"]
    if not autosync["on"]:
        return "sync     automatic sync off (`[sync] auto = true` in .markvault.toml turns it on)"
    if running is None:
        return "sync     automatic, in the owner (`vault watch` or `vault mcp`): none running"
    every, quiet = running["interval_s"], running["quiet_s"]
    line = f"sync     automatic every {every:g} s and {quiet:g} s after a change"
    last = running["last"]
    if last is None:
        return line + "; not run yet"
    if not last["ok"]:
        what = last.get("message") or "conflict in " + ", ".join(last["conflicts"])
        return line + f"; last {running['last_at']} failed: {what}"
    done = f"{last['committed']} committed, {last['pulled']} pulled, {last['pushed']} pushed"
    return line + f"; last {running['last_at']}: {done}"


# `vault edit` option -> the edit it asks for.
EDIT_OPTIONS: dict[str, Op] = {
    "append": "append",
    "prepend": "prepend",
    "section": "replace_section",
    "before": "insert_before",
    "after": "insert_after",
    "find": "replace_text",
    "set_pair": "set_key",
    "unset": "remove_key",
}


def _edit_from_options(options: dict[str, Any]) -> Edit:
    """The one change the `vault edit` options describe."""
    text, count = options.pop("text"), options.pop("count")
    chosen = {name: value for name, value in options.items() if value is not None}
    if len(chosen) != 1:
        raise UsageError(
            "Give exactly one change.",
            "One of --append, --prepend, --replace-section, --insert-before, --insert-after, "
            "--replace, --set or --unset.",
        )
    ((name, value),) = chosen.items()
    op = EDIT_OPTIONS[name]
    if op in ("append", "prepend"):
        return Edit(op, sys.stdin.read() if value == "-" else value)
    if op == "remove_key":
        return Edit(op, key=value)
    if op == "set_key":
        key, sep, raw = value.partition("=")
        if not sep:
            raise UsageError(
                f"Bad --set {value!r}.", "Use --set KEY=VALUE, e.g. --set 'tags=[a, b]'."
            )
        from markvault.markdown.frontmatter import (
            parse_yaml_value,  # YAML is loaded by the edits that need it
        )

        return Edit(op, key=key.strip(), value=parse_yaml_value(raw))
    if text is None:
        raise UsageError("This change needs --text TEXT (or --text - to read stdin).")
    new = sys.stdin.read() if text == "-" else text
    if op == "replace_text":
        return Edit(op, new, find=value, count=count)
    return Edit(op, new, heading=value)


@main.command()
@click.argument("ref")
@click.option(
    "--hash", "expected", required=True, help="The note's current hash (from get/search)."
)
@click.option("--append", metavar="TEXT", help="Add TEXT at the end (- reads stdin).")
@click.option(
    "--prepend", metavar="TEXT", help="Add TEXT at the start of the body (- reads stdin)."
)
@click.option(
    "--replace-section",
    "section",
    metavar="HEADING",
    help="Replace the section's content with --text.",
)
@click.option(
    "--insert-before", "before", metavar="HEADING", help="Insert --text before the heading."
)
@click.option(
    "--insert-after", "after", metavar="HEADING", help="Insert --text at the end of the section."
)
@click.option(
    "--replace", "find", metavar="OLD", help="Replace OLD with --text; must occur --count times."
)
@click.option("--text", metavar="TEXT", help="New content for the options above (- reads stdin).")
@click.option("--count", default=1, show_default=True, help="Occurrences --replace must find.")
@click.option(
    "--set", "set_pair", metavar="KEY=VALUE", help="Set a frontmatter key (VALUE is YAML)."
)
@click.option("--unset", metavar="KEY", help="Remove a frontmatter key.")
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
@click.pass_context
@handle_errors
def edit(ctx: click.Context, ref: str, expected: str, as_json: bool, **options: Any) -> None:
    """Change one note, touching only the bytes concerned; print its new hash.

    The change is refused (exit 5) when the note's hash is not --hash: someone
    edited it since you read it. Line endings, BOM, comments and key order survive.

    \b
    Examples:
      vault edit notes/Ideas.md --hash 3f2a... --append "- another idea"
      vault edit mv-welcome --hash 3f2a... --set 'tags=[start, guide]'
      vault edit mv-welcome --hash 3f2a... --replace-section "Open items" --text "- none"
      vault edit notes/x.md --hash 3f2a... --replace "teh" --text "the" --count 2
    """
    change = _edit_from_options(options)
    result = open_vault(ctx).edit_note(ref, [change], expected)
    if as_json:
        emit_json(result)
    else:
        state = "changed" if result["changed"] else "unchanged (the edit changed nothing)"
        click.echo(f"{result['path']} {state} · hash {result['hash']}")
        _say_redacted(result)


@main.command()
@click.argument("kind", type=click.Choice(["note", "session", "knowledge", "document"]))
@click.argument("title")
@click.option("--topic", help="Topic (required for knowledge): knowledge/<topic>/.")
@click.option("--tags", default="", help="Comma-separated tags, e.g. search,duckdb.")
@click.option("--project", help="Project the note belongs to.")
@click.option("--json", "as_json", is_flag=True, help="Print path, id, hash and title as JSON.")
@click.pass_context
@handle_errors
def new(
    ctx: click.Context,
    kind: str,
    title: str,
    topic: str | None,
    tags: str,
    project: str | None,
    as_json: bool,
) -> None:
    """Create a note from templates/KIND.md in the kind's folder; print its path.

    Never overwrites: an existing file of that name is an error (exit 5). A
    credential in the title, topic, project, tags or template is redacted (said on
    stderr), or refused (exit 6) when the vault's [credentials] mode is "refuse".

    \b
    Examples:
      vault new note "Why we chose DuckDB" --tags duckdb,decision
      vault new knowledge "BM25 saturates term frequency" --topic search
      vault new session "Refactor the indexer" --project markvault
    """
    vault = open_vault(ctx)
    result = vault.new_note(kind, title, topic=topic, tags=tags.split(","), project=project)
    if as_json:
        emit_json(result)
        return
    click.echo(str(vault.settings.vault_dir / result["path"]))
    _say_redacted(result)


# ---- move, delete, trash, knowledge, context ------------------------------------------


def _print_changed(data: NoteCreated | NoteMoved | NoteRestored, as_json: bool, verb: str) -> None:
    if as_json:
        emit_json(data)
        return
    click.echo(
        f"{verb} {fold(data.get('path'))}"
        + (f"  (hash {data['hash']})" if data.get("hash") else "")
    )
    _say_redacted(data)


def _say_redacted(result: CredentialReport) -> None:
    """What the credential gate redacted in a write, on stderr (stdout stays the
    result a script reads)."""
    if result.get("credentials"):
        click.echo(click.style(f"{result['credentials']}.", fg="yellow"), err=True)


def _print_notes(
    notes: Sequence[Mapping[str, Any]], extra: Callable[[Any], str] | None = None
) -> None:
    """One line per note of any listing (``answers.ListedNote`` and its kin): date,
    path, title (and what ``extra`` adds)."""
    for note in notes:
        date = str(note.get("at") or note.get("date") or "")[:16]
        more = extra(note) if extra else ""
        click.echo(
            click.style(f"{date:16}", dim=True)
            + f"  {fold(note['path'])}  "
            + click.style(fold(note.get("title") or ""), bold=True)
            + (click.style(f"  {fold(more)}", dim=True) if more else "")
        )


@main.command()
@click.argument("ref")
@click.argument("to")
@click.option("--hash", "expected_hash", required=True, help="The note's current hash.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_context
@handle_errors
def move(ctx: click.Context, ref: str, to: str, expected_hash: str, as_json: bool) -> None:
    """Move or rename a note (TO: a path, or a folder ending in /); never overwrites.

    Links in other notes that no longer resolve are listed.

    \b
    Examples:
      vault move notes/Draft.md "notes/Final plan.md" --hash 1f2e...
      vault move mv-welcome archive/ --hash 1f2e...
    """
    result = open_vault(ctx).move_note(ref, to, expected_hash)
    _print_changed(result, as_json, "moved to")
    if not as_json:
        for link in result.get("broken_links", []):
            click.echo(
                click.style("broken  ", fg="yellow")
                + fold(f"{link['source']}:{link['line']} [[{link['target']}]]")
            )


@main.command()
@click.argument("ref")
@click.option("--hash", "expected_hash", required=True, help="The note's current hash.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_context
@handle_errors
def delete(ctx: click.Context, ref: str, expected_hash: str, as_json: bool) -> None:
    """Move a note into the vault's .trash/ folder (restore with `vault trash restore`).

    \b
    Examples:
      vault delete notes/Old.md --hash 1f2e...
    """
    result = open_vault(ctx).delete_note(ref, expected_hash)
    if as_json:
        emit_json(result)
    else:
        click.echo(fold(f"{result['path']} → {result['trash_path']}"))


@main.group(invoke_without_command=True)
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_context
@handle_errors
def trash(ctx: click.Context, as_json: bool) -> None:
    """List deleted notes, newest first; `vault trash restore PATH` brings one back.

    \b
    Examples:
      vault trash
      vault trash restore ".trash/notes/Old.md"
    """
    if ctx.invoked_subcommand is not None:
        return
    items = open_vault(ctx).trash()
    if as_json:
        emit_json(items)
        return
    for item in items:
        click.echo(fold(f"{item['deleted']}  {item['trash_path']}  → {item['restores_to']}"))
    if not items:
        click.echo("The trash is empty.", err=True)


@trash.command("restore")
@click.argument("trash_path")
@click.option("--to", help="Restore to this path instead of where it was.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_context
@handle_errors
def trash_restore(ctx: click.Context, trash_path: str, to: str | None, as_json: bool) -> None:
    """Bring a note back from the trash; never overwrites."""
    _print_changed(open_vault(ctx).restore_note(trash_path, to), as_json, "restored")


@main.command()
@click.argument("topic")
@click.argument("content")
@click.option("--tags", default="", help="Comma-separated tags.")
@click.option("--title", help="Title (default: the content's first line).")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_context
@handle_errors
def learn(
    ctx: click.Context, topic: str, content: str, tags: str, title: str | None, as_json: bool
) -> None:
    """Write a knowledge point under knowledge/TOPIC/ (CONTENT - reads stdin).

    \b
    Examples:
      vault learn duckdb "The fts index does not update in place."
      git log -1 --format=%B | vault learn release -
    """
    if content == "-":
        content = sys.stdin.read()
    result = open_vault(ctx).learn_knowledge(topic, content, tags.split(","), title)
    _print_changed(result, as_json, "learned")


@main.command()
@click.argument("path")
@click.option("--topic", help="File it under documents/TOPIC/.")
@click.option("--title", help="Title (default: the file's title or name).")
@click.option(
    "--allow-hidden", is_flag=True, help="Read a file in a hidden folder (~/.config...) too."
)
@click.option(
    "--as-markdown", is_flag=True, help="A PDF or Office file: store its text as a note instead."
)
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_context
@handle_errors
def store(
    ctx: click.Context,
    path: str,
    topic: str | None,
    title: str | None,
    allow_hidden: bool,
    as_markdown: bool,
    as_json: bool,
) -> None:
    """Copy a document into documents/ and make it searchable.

    Markdown, text and JSON become notes. A PDF, Word (.docx), PowerPoint (.pptx),
    Excel (.xlsx), HTML or EPUB file is copied as it is and its text indexed by page
    (--as-markdown: its text becomes a Markdown note instead). Any ordinary path you
    name is read; a hidden file or folder (such as ~/.aws or .env) only with
    --allow-hidden. (Agents, through MCP, may read only the folders listed in
    document_roots in .markvault.toml.)

    \b
    Examples:
      vault store docs/api.md --topic api
      vault store ~/papers/rrf.pdf --topic search
    """
    # Absolute here: the process that owns the index may run in another folder.
    source = os.path.abspath(os.path.expanduser(path))
    result = open_vault(ctx).store_document(
        source,
        topic,
        title,
        by_person=True,
        allow_hidden=allow_hidden,
        as_markdown=as_markdown,
    )
    _print_changed(result, as_json, "stored")
    if result.get("problem") and not as_json:  # a stored file whose text is not all read
        click.echo(click.style(f"{result['path']}: {result['problem']}", fg="yellow"), err=True)


@main.command()
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_context
@handle_errors
def topics(ctx: click.Context, as_json: bool) -> None:
    """Topics of knowledge points and documents, with counts.

    \b
    Examples:
      vault topics
      vault topics --json | jq '.[0]'
    """
    rows = open_vault(ctx).topics()
    if as_json:
        emit_json(rows)
        return
    for row in rows:
        click.echo(
            f"{fold(row['topic']):24} {row['knowledge']:5} knowledge {row['documents']:5} documents"
            + click.style(f"  last {str(row['last_changed'])[:10]}", dim=True)
        )


@main.command()
@click.option("--days", type=_Span(0, MAX_DAYS), default=7, show_default=True, help="How far back.")
@click.option("--since", metavar="DATE", help="From this ISO date or time instead.")
@click.option("--until", metavar="DATE", help="Up to this ISO date or time.")
@click.option("--kind", multiple=True, help="note, session, knowledge or document.")
@click.option("--project", multiple=True, help="Project (repeatable).")
@click.option("--limit", default=20, show_default=True, type=int)
@click.option("--offset", default=0, show_default=True, type=int)
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_context
@handle_errors
def recent(
    ctx: click.Context,
    days: float,
    since: str | None,
    until: str | None,
    kind: tuple[str, ...],
    project: tuple[str, ...],
    limit: int,
    offset: int,
    as_json: bool,
) -> None:
    """Notes created or changed lately, newest first.

    \b
    Examples:
      vault recent --days 2
      vault recent --since 2026-11-01 --kind session --project markvault
    """
    filters = Filters(kinds=list(kind), projects=list(project), include_expired=True)
    result = open_vault(ctx).recent(
        since=since, until=until, days=days, filters=filters, limit=limit, offset=offset
    )
    if as_json:
        emit_json(result)
        return
    _print_notes(result["notes"], lambda n: n["event"])
    click.echo(
        click.style(
            f"{len(result['notes'])} of {result['total']} since {result['since']}", dim=True
        ),
        err=True,
    )


@main.command()
@click.argument("anchor", required=False)
@click.option("--query", "-q", help="Anchor on the best match of this query instead.")
@click.option("--before", default=5, show_default=True, type=int)
@click.option("--after", default=5, show_default=True, type=int)
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_context
@handle_errors
def timeline(
    ctx: click.Context,
    anchor: str | None,
    query: str | None,
    before: int,
    after: int,
    as_json: bool,
) -> None:
    """Notes in time order around ANCHOR (note, session id or ISO time) or a query.

    \b
    Examples:
      vault timeline mv-welcome
      vault timeline 2026-11-01 --after 10
      vault timeline -q "switched to DuckDB"
    """
    result = open_vault(ctx).timeline(anchor, query=query, before=before, after=after)
    if as_json:
        emit_json(result)
        return
    _print_timeline(result["before"])
    centre = result["anchor"]["note"]
    if centre:
        click.echo(click.style("▶ ", fg="cyan"), nl=False)
        _print_timeline([centre])
    else:
        click.echo(click.style(f"▶ {result['anchor']['value']}", fg="cyan"))
    _print_timeline(result["after"])


SUMMARY_LABELS = {"decisions": "decision", "outcomes": "outcome", "open_items": "open"}


def _print_timeline(notes: Sequence[TimelineNote]) -> None:
    """Notes one per line; a session's decisions, outcomes and open items under it."""
    for note in notes:
        _print_notes([note])
        for key, label in SUMMARY_LABELS.items():
            for item in cast("list[str]", note.get(key, [])):
                click.echo(" " * 18 + click.style(f"{label}: ", fg="yellow") + fold(item))


@main.command()
@click.argument("ref")
@click.option("--depth", default=1, show_default=True, type=int, help="Links away (1-3).")
@click.option("--to", help="Show the shortest link path to this note instead.")
@click.option("--limit", default=50, show_default=True, type=int)
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_context
@handle_errors
def related(
    ctx: click.Context, ref: str, depth: int, to: str | None, limit: int, as_json: bool
) -> None:
    """Notes linked to or from REF, or the chain of links from REF to another note.

    \b
    Examples:
      vault related notes/Welcome.md --depth 2
      vault related mv-welcome --to documents/glossary.md
    """
    vault = open_vault(ctx)
    if to:
        chain = vault.link_path(ref, to)
        if as_json:
            emit_json(chain)
            return
        if not chain["connected"]:
            click.echo(fold(f"No chain of links between {chain['from']} and {chain['to']}."))
            sys.exit(1)
        arrows = {"out": "→ links to", "in": "← linked from"}
        for step in chain["path"]:
            label = arrows.get(step["direction"], "") if step["direction"] else ""
            click.echo(f"{label:14} {fold(step['path'])}")
        return
    result = vault.related(ref, depth, limit)
    if as_json:
        emit_json(result)
        return
    marks = {"out": "→", "in": "←", "both": "↔"}
    _print_notes(result["related"], lambda n: f"{marks[n['direction']]} {n['distance']}")


@main.command("map")
@click.option("--depth", type=int, help="Group folders to this many levels.")
@click.option("--top", default=10, show_default=True, type=int, help="How many to list.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_context
@handle_errors
def vault_map(ctx: click.Context, depth: int | None, top: int, as_json: bool) -> None:
    """Folders, links between them, most linked notes, orphans and broken links.

    \b
    Examples:
      vault map --depth 1
      vault map --json | jq .broken_links
    """
    info = open_vault(ctx).vault_map(depth, top)
    if as_json:
        emit_json(info)
        return
    click.echo(click.style("folders", bold=True))
    for f in info["folders"]:
        click.echo(
            f"  {f['folder']:32} {f['notes']:5} notes {f['files']:5} files "
            f"{f['links_inside']:6} links inside"
        )
    click.echo(click.style("links between folders", bold=True))
    for e in info["links_between"][:top]:
        click.echo(f"  {e['from']} → {e['to']}: {e['links']}")
    click.echo(click.style("most linked", bold=True))
    for n in info["most_linked"]:
        click.echo(f"  {n['backlinks']:5}  {fold(n['path'])}")
    click.echo(click.style(f"orphans ({info['orphan_count']})", bold=True))
    for path in info["orphans"][:top]:
        click.echo(f"  {fold(path)}")
    if info["files"]:
        click.echo(click.style(f"files other than notes ({info['files']})", bold=True))
        for n in info["most_linked_files"]:
            click.echo(f"  {n['backlinks']:5}  {fold(n['path'])}")
        click.echo(click.style(f"orphan files ({info['orphan_file_count']})", bold=True))
        for path in info["orphan_files"][:top]:
            click.echo(f"  {fold(path)}")
    click.echo(click.style(f"broken links ({info['broken_link_count']})", bold=True))
    for link in info["broken_links"][:top]:
        click.echo(fold(f"  {link['source']}:{link['line']} [[{link['target']}]]"))


# ---- sessions -------------------------------------------------------------------------

# A hook must not hold Claude Code up: wait this long for an index another process holds
# (a running `vault mcp`), then leave the refresh to the next reindex.
HOOK_LOCK_WAIT = 1.0
MAX_HOOK_INPUT = 1024 * 1024


@main.group()
def sessions() -> None:
    """Claude Code sessions as notes: import, list, read, summarise, capture by hooks.

    Each session becomes one note under sessions/<project>/ with its transcript; a
    summary written into the note (by you or an agent) survives every re-import.

    \b
    Examples:
      vault sessions import                          every transcript in ~/.claude/projects
      vault sessions import --project ~/code/shop --since 2026-03-01
      vault sessions list --project shop --no-summary
      vault sessions show 5f0c2a9e --query rounding
      vault sessions hook install --scope user       capture every session from now on
    """


@sessions.command("import")
@click.option(
    "--project",
    metavar="DIR",
    help="Only sessions started in this folder (Claude Code's working directory).",
)
@click.option("--since", metavar="DATE", help="Only transcripts written to on or after DATE.")
@click.option(
    "--source",
    metavar="PATH",
    help="Claude Code's projects folder (default ~/.claude/projects), one project's "
    "folder, or one .jsonl transcript.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@click.option("-q", "--quiet", is_flag=True, help="No progress output.")
@click.pass_context
@handle_errors
def sessions_import(
    ctx: click.Context,
    project: str | None,
    since: str | None,
    source: str | None,
    as_json: bool,
    quiet: bool,
) -> None:
    """Import Claude Code transcripts as session notes (idempotent, incremental).

    A session already imported is updated only when its transcript grew; the note's
    summary and your edits are kept. Malformed lines are skipped and counted.
    Exit code 0; 1 when some transcripts could not be imported; 4 when the notes were
    written but another process held the index (run `vault reindex` later).

    \b
    Examples:
      vault sessions import
      vault sessions import --project "$PWD" --since 2026-03-01
      vault sessions import --source ~/backup/claude/projects --json
      vault sessions import --source ~/.claude/projects/-home-me-shop/5f0c2a9e.jsonl
    """
    vault = open_vault(ctx)
    report = vault.import_sessions(
        source, project=project, since=since, progress=TerminalProgress(quiet=quiet or as_json)
    )
    if as_json:
        emit_json(report.to_json())
    else:
        for notice in report.notices:
            click.echo(notice, err=True)
        for item in report.errors:
            click.echo(click.style("failed ", fg="red") + item["message"], err=True)
        skipped = report.malformed_lines + report.oversized_lines
        click.echo(
            f"{report.transcripts} transcripts ({report.read} read) · {report.new} new, "
            f"{report.updated} updated, "
            f"{report.unchanged} unchanged"
            + (f", {report.empty} empty" if report.empty else "")
            + f" · {skipped} malformed lines skipped · {report.failed} failed · "
            f"index {report.index} · {report.seconds:.2f} s"
        )
    if report.failed:
        sys.exit(1)
    if report.index == "busy":
        sys.exit(4)


@sessions.command("list")
@click.option("--project", help="Project name (the working folder's name).")
@click.option("--cwd", metavar="DIR", help="Only sessions started in this folder.")
@click.option(
    "--summary/--no-summary",
    "summarized",
    default=None,
    help="Only sessions with (or without) a summary.",
)
@click.option("--since", metavar="DATE", help="Active on or after DATE.")
@click.option("--until", metavar="DATE", help="Active on or before DATE.")
@click.option("--limit", default=20, show_default=True, type=int)
@click.option("--offset", default=0, show_default=True, type=int)
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_context
@handle_errors
def sessions_list(
    ctx: click.Context,
    project: str | None,
    cwd: str | None,
    summarized: bool | None,
    since: str | None,
    until: str | None,
    limit: int,
    offset: int,
    as_json: bool,
) -> None:
    """Session notes, newest first.

    \b
    Examples:
      vault sessions list
      vault sessions list --project shop-app --limit 5
      vault sessions list --no-summary --since 2026-03-01 --json
    """
    query = SessionQuery(project, cwd, summarized, since, until, limit, offset)
    result = open_vault(ctx).list_sessions(query)
    if as_json:
        emit_json(result)
        return
    for s in result["sessions"]:
        mark = click.style("✓ summary", fg="green") if s["has_summary"] else "         "
        click.echo(
            click.style(f"{str(s['started'] or '')[:16]:16}", dim=True)
            + f"  {fold((s['session_id'] or '')[:8]):8}  {mark}  "
            + click.style(fold(s["title"] or ""), bold=True)
            + click.style(
                fold(f"  {s['project']} · {s['turns'] or 0} turns · {s['path']}"), dim=True
            )
        )
    click.echo(
        click.style(f"{len(result['sessions'])} of {result['total']} sessions", dim=True),
        err=True,
    )


@sessions.command("projects")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_context
@handle_errors
def sessions_projects(ctx: click.Context, as_json: bool) -> None:
    """Projects with their sessions, summaries, other notes and last activity.

    \b
    Examples:
      vault sessions projects
      vault sessions projects --json | jq '.projects[0]'
    """
    result = open_vault(ctx).session_projects()
    if as_json:
        emit_json(result)
        return
    for p in result["projects"]:
        click.echo(
            f"{fold(p['project']):24} {p['sessions']:5} sessions ({p['summarized']} summarised) "
            f"{p['notes']:5} notes"
            + click.style(f"  last active {str(p['last_active'] or '')[:10]}", dim=True)
        )


@sessions.command("show")
@click.argument("ref")
@click.option("--lines", metavar="A:B", help="Only lines A to B of the note.")
@click.option("--query", "-q", help="Show the lines that hold these words, with line numbers.")
@click.option("--max-chars", type=int, default=None, help="Cut the page here.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_context
@handle_errors
def sessions_show(
    ctx: click.Context,
    ref: str,
    lines: str | None,
    query: str | None,
    max_chars: int | None,
    as_json: bool,
) -> None:
    """Read a session (by session id, its first 8 characters, note id or path).

    \b
    Examples:
      vault sessions show 5f0c2a9e
      vault sessions show 5f0c2a9e --query "rounding decimal"
      vault sessions show 5f0c2a9e --lines 40:90
    """
    vault = open_vault(ctx)
    result = vault.read_session(
        ref,
        lines=parse_lines(lines),
        query=query,
        max_chars=max_chars or vault.settings.max_note_bytes,
    )
    if as_json:
        emit_json(result)
        return
    if "matches" not in result:
        _print_item(result)
        return
    click.echo(
        click.style(fold(result["title"]), bold=True)
        + click.style(fold(f"  {result['path']} · hash {result['hash']}"), dim=True),
        err=True,
    )
    for m in result["matches"]:
        under = fold(f"  [{m['under']}]") if m["under"] else ""
        click.echo(
            click.style(f"{m['line']:6}", fg="cyan")
            + f"  {fold(m['text'])}"
            + click.style(under, dim=True)
        )
    some = " (some of the words)" if result["match"] == "some" else ""
    click.echo(
        click.style(f"{len(result['matches'])} of {result['total_matches']} lines{some}", dim=True),
        err=True,
    )
    if not result["matches"]:
        sys.exit(1)


@sessions.command("summarize")
@click.argument("ref")
@click.option("--hash", "expected_hash", required=True, help="The note's current hash.")
@click.option("--overview", help="Two or three sentences: what the session did.")
@click.option("--decision", "decisions", multiple=True, help="A decision, with its reason.")
@click.option("--outcome", "outcomes", multiple=True, help="What changed.")
@click.option("--open-item", "open_items", multiple=True, help="What is left.")
@click.option("--tag", "tags", multiple=True, help="A tag to add to the note.")
@click.option(
    "--from-json",
    "from_json",
    metavar="FILE",
    help='The summary as JSON ({"overview", "decisions", ...}); - reads stdin.',
)
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_context
@handle_errors
def sessions_summarize(
    ctx: click.Context,
    ref: str,
    expected_hash: str,
    overview: str | None,
    decisions: tuple[str, ...],
    outcomes: tuple[str, ...],
    open_items: tuple[str, ...],
    tags: tuple[str, ...],
    from_json: str | None,
    as_json: bool,
) -> None:
    """Write a session's summary into its note (the transcript is kept); print the new hash.

    Refused (exit 5) when --hash is not the note's current hash.

    \b
    Examples:
      vault sessions summarize 5f0c2a9e --hash 3f2a... --overview "Fixed rounding." \\
          --decision "Decimal for money" --open-item "invoice.py still rounds floats"
      echo '{"overview": "...", "decisions": ["..."]}' | vault sessions summarize 5f0c2a9e \\
          --hash 3f2a... --from-json -
    """
    data: dict[str, Any] = {
        "overview": overview or "",
        "decisions": list(decisions),
        "outcomes": list(outcomes),
        "open_items": list(open_items),
        "tags": list(tags),
    }
    if from_json:
        if overview or decisions or outcomes or open_items or tags:
            raise UsageError("Give the summary as options or --from-json, not both.")
        raw = sys.stdin.read() if from_json == "-" else _read_text_file(from_json)
        try:
            data = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise UsageError(
                f"The summary is not JSON: {exc}.",
                'Example: {"overview": "...", "decisions": ["..."], "open_items": []}',
            ) from None
        if not isinstance(data, dict):
            raise UsageError("The summary must be a JSON object.")
    result = open_vault(ctx).save_session_summary(ref, data, expected_hash)
    if as_json:
        emit_json(result)
    else:
        state = "summary saved" if result["changed"] else "unchanged (same summary)"
        click.echo(f"{result['path']} {state} · hash {result['hash']}")
        _say_redacted(result)


def _read_text_file(path: str) -> str:
    try:
        with open(path, encoding="utf-8") as fh:
            return fh.read()
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"Cannot read {path}: {exc}.") from None


@sessions.group("hook")
def sessions_hook() -> None:
    """Capture sessions automatically: Claude Code hooks that import each session.

    The hooks (SessionEnd and PreCompact) run `vault sessions hook run`, which reads
    Claude Code's hook input and imports that one session: nothing is sent anywhere and
    no language model is called.

    \b
    Examples:
      vault sessions hook install                  this project, just you (local scope)
      vault sessions hook install --scope user     every project
      vault sessions hook status
      vault sessions hook uninstall --scope user
    """


SCOPE_HELP = (
    "local: .claude/settings.local.json of the project (you only); project: "
    ".claude/settings.json (shared); user: ~/.claude/settings.json (every project)."
)


def _hook_command(ctx: click.Context) -> str:
    """The command the hooks run: this installation's `vault` with absolute paths (Claude
    Code runs hooks from the session's folder, with its own environment)."""
    import shlex

    from markvault.config import Settings
    from markvault.server.install import vault_command

    obj = ctx.find_root().obj
    settings = Settings.load(obj["vault"], obj["index"], obj["model"])
    argv = [*vault_command(), "--vault", str(settings.vault_dir.resolve())]
    if obj["index"]:
        argv += ["--index", str(settings.index_dir.resolve())]
    return shlex.join([*argv, "sessions", "hook", "run"])


@sessions_hook.command("install")
@click.option(
    "--scope",
    type=click.Choice(["local", "project", "user"]),
    default="local",
    show_default=True,
    help=SCOPE_HELP,
)
@click.option("--project", "project_dir", metavar="DIR", help="The project (default: here).")
@click.pass_context
@handle_errors
def hook_install(ctx: click.Context, scope: str, project_dir: str | None) -> None:
    """Add the SessionEnd and PreCompact hooks to Claude Code's settings (idempotent).

    Only the hook entries are added; the rest of the file is kept byte for byte, and
    `vault sessions hook uninstall` removes exactly them.

    \b
    Examples:
      vault --vault ~/notes sessions hook install
      vault --vault ~/notes sessions hook install --scope user
    """
    from pathlib import Path

    from markvault.sessions.claude_hooks import install

    command = _hook_command(ctx)
    change = install(scope, Path(project_dir or Path.cwd()), command)
    verbs = {
        "installed": "installed",
        "updated": "updated (it ran another command)",
        "unchanged": "already installed",
    }
    click.echo(f"SessionEnd and PreCompact hooks {verbs[change.action]} in {change.path}")
    click.echo(click.style(f"they run: {command}", dim=True))


@sessions_hook.command("uninstall")
@click.option(
    "--scope",
    type=click.Choice(["local", "project", "user"]),
    default="local",
    show_default=True,
    help=SCOPE_HELP,
)
@click.option("--project", "project_dir", metavar="DIR", help="The project (default: here).")
@handle_errors
def hook_uninstall(scope: str, project_dir: str | None) -> None:
    """Remove exactly the hooks `install` added; nothing else in the file changes.

    \b
    Examples:
      vault sessions hook uninstall
      vault sessions hook uninstall --scope user
    """
    from pathlib import Path

    from markvault.sessions.claude_hooks import uninstall

    change = uninstall(scope, Path(project_dir or Path.cwd()))
    if change.action == "absent":
        click.echo(f"No markvault hooks in {change.path}; nothing changed.")
    else:
        gone = " (the file held nothing else and was deleted)" if change.deleted_file else ""
        click.echo(f"Removed the markvault hooks from {change.path}{gone}")


@sessions_hook.command("status")
@click.option("--project", "project_dir", metavar="DIR", help="The project (default: here).")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_context
@handle_errors
def hook_status(ctx: click.Context, project_dir: str | None, as_json: bool) -> None:
    """Which markvault hooks are installed, in every scope, and whether they import
    into this vault.

    \b
    Examples:
      vault sessions hook status
      vault sessions hook status --json
    """
    from pathlib import Path

    from markvault.sessions.claude_hooks import EVENTS, SCOPES, installed, settings_path

    expected = _hook_command(ctx)
    project = Path(project_dir or Path.cwd())
    scopes: list[dict[str, Any]] = []
    for scope in SCOPES:
        entry: dict[str, Any] = {"scope": scope, "path": str(settings_path(scope, project))}
        try:
            hooks = installed(scope, project)
            entry.update(
                hooks=hooks,
                events=[e for e in EVENTS if hooks.get(e)],
                this_vault=bool(hooks) and all(c == expected for cs in hooks.values() for c in cs),
                error=None,
            )
        except MarkvaultError as exc:
            entry.update(hooks={}, events=[], this_vault=False, error=str(exc))
        scopes.append(entry)
    if as_json:
        emit_json({"command": expected, "scopes": scopes})
        return
    for entry in scopes:
        if entry["error"]:
            state = click.style(f"unreadable: {entry['error']}", fg="red")
        elif not entry["events"]:
            state = click.style("not installed", dim=True)
        else:
            where = "this vault" if entry["this_vault"] else "another vault or command"
            state = click.style(", ".join(entry["events"]), fg="green") + f" → {where}"
        click.echo(f"{entry['scope']:8} {entry['path']}  {state}")


@sessions_hook.command("run")
@click.pass_context
def hook_run(ctx: click.Context) -> None:
    """Import the session named by Claude Code's hook input on stdin (run by the hooks).

    Never blocks Claude Code: exit 0 whenever the import succeeded or failed for an
    expected reason (message on stderr, which Claude Code logs); 1 only for an
    unexpected error (shown by Claude Code, which carries on). Never exit 2, which
    would block a compaction.

    \b
    Examples:
      echo '{"transcript_path": "/home/me/.claude/projects/-p/5f0c.jsonl"}' \\
          | vault sessions hook run
    """
    from markvault.sessions.claude_hooks import parse_hook_input

    try:
        hook = parse_hook_input(sys.stdin.buffer.read(MAX_HOOK_INPUT))
        vault = open_vault(ctx, index_lock_wait=HOOK_LOCK_WAIT)
        report = vault.import_sessions(hook.transcript_path)
        done = report.sessions[0] if report.sessions else None
        if report.errors:
            click.echo(f"markvault: session not imported: {report.errors[0]['message']}", err=True)
        elif done is not None:
            where = f" → {done['path']}" if done["path"] else ""
            click.echo(
                f"markvault: session {hook.session_id[:8]} {done['action']}{where}", err=True
            )
        for notice in report.notices:
            click.echo(f"markvault: {notice}", err=True)
    except MarkvaultError as exc:
        click.echo(f"markvault: session not imported: {exc}", err=True)
    except Exception as exc:  # a hook must never show Claude Code a traceback
        click.echo(
            f"markvault: session not imported (unexpected {type(exc).__name__}: {exc}). "
            "Retry with `vault sessions import --source <transcript>`.",
            err=True,
        )
        sys.exit(1)


@main.command()
@click.option(
    "--poll/--events",
    "poll",
    default=None,
    help="Force polling, or file events (default: events, polling where they do not arrive).",
)
@click.option("--json", "as_json", is_flag=True, help="One JSON line per sync.")
@click.option("-q", "--quiet", is_flag=True, help="Print nothing but errors.")
@click.pass_context
@handle_errors
def watch(ctx: click.Context, poll: bool | None, as_json: bool, quiet: bool) -> None:
    """Keep the index in step with the vault until stopped (Ctrl-C).

    Edits, renames and deletions made by any editor, git or sync tool are indexed
    within a second; a checkout is indexed once git is done. `vault mcp` servers
    watch on their own: this command is for when none runs. If another process
    owns the index, this waits and takes over when it stops.

    \b
    Examples:
      vault watch
      vault --vault ~/notes watch --poll      # network drives that send no events
      vault watch --json | jq .seconds
    """
    import signal
    import threading

    from markvault.indexing.watch_batches import WatchBatch

    obj = ctx.find_root().obj
    settings = Settings.load(vault=obj["vault"], index=obj["index"], model=obj["model"])
    if not quiet:
        click.echo(f"Waiting to own the index of {settings.vault_dir} …", err=True)
    vault = connect(settings, must_own=True)
    ctx.call_on_close(vault.close)

    def report(batch: WatchBatch, result: ReindexReport) -> None:
        try:
            if as_json:
                emit_json({"full": batch.full, "reasons": list(batch.reasons), **result.to_json()})
            elif not quiet and (result.added or result.updated or result.renamed or result.removed):
                click.echo(
                    f"{time.strftime('%H:%M:%S')}  {result.added} added, {result.updated} "
                    f"updated, {result.renamed} renamed, {result.removed} removed · "
                    f"{result.seconds:.2f} s"
                )
        except BrokenPipeError:  # `vault watch --json | head -1`: the reader is gone
            reader_gone.set()
            stop.set()

    stop = threading.Event()
    reader_gone = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    vault.host.on_sync(report)
    if not quiet:
        click.echo(f"Watching {settings.vault_dir} (Ctrl-C to stop).", err=True)
    try:
        vault.host.watch_forever(stop, poll=poll)
    except KeyboardInterrupt:
        pass
    if reader_gone.is_set():
        raise BrokenPipeError  # ends quietly (_quiet_pipes), the vault closed on the way
    if not quiet:
        click.echo("Stopped.", err=True)


# Defaults of `vault mcp --http`, as in server/http.py: `vault --help` never imports the SDK.
HTTP_PORT, HTTP_MAX_BODY, HTTP_WRITE_RATE = 8765, 4 * 1024 * 1024, 30


@main.group(invoke_without_command=True)
@click.option("--http", "use_http", is_flag=True, help="Serve streamable HTTP, not stdio.")
@click.option("--host", default="127.0.0.1", show_default=True, help="Address for --http.")
@click.option("--port", type=PORTS, default=HTTP_PORT, show_default=True, help="0: any free port.")
@click.option("--allow-remote", is_flag=True, help="Allow a --host beyond loopback.")
@click.option(
    "--allow-host",
    "allow_hosts",
    multiple=True,
    metavar="NAME[:PORT]",
    help="Another Host header to accept, e.g. the machine's LAN name (repeatable).",
)
@click.option(
    "--allow-origin",
    "allow_origins",
    multiple=True,
    metavar="URL",
    help="A web origin besides localhost that may call the server (repeatable).",
)
@click.option("--max-body", type=int, default=HTTP_MAX_BODY, show_default=True, help="Bytes.")
@click.option(
    "--write-rate",
    type=int,
    default=HTTP_WRITE_RATE,
    show_default=True,
    help="Write tool calls allowed per minute over HTTP.",
)
@click.pass_context
@handle_errors
def mcp(
    ctx: click.Context,
    use_http: bool,
    host: str,
    port: int,
    allow_remote: bool,
    allow_hosts: tuple[str, ...],
    allow_origins: tuple[str, ...],
    max_body: int,
    write_rate: int,
) -> None:
    """Serve the vault to Claude Code and other MCP clients (stdio, or --http).

    Tools: search, get, status, create_note, edit_note, ...; resource vault://note/{id}.
    Over HTTP, clients send the bearer token that `vault mcp token` prints.

    \b
    Examples:
      vault --vault ~/notes mcp install          register with Claude Code
      claude mcp add markvault -- vault --vault /path/to/vault mcp
      vault --vault ~/notes mcp --http --port 8765
    """
    if ctx.invoked_subcommand is not None:
        return
    if not use_http:
        from markvault.server.tools import serve_stdio  # the SDK is imported only for this command

        serve_stdio(open_vault(ctx))
        return
    from markvault.server.http import check_bind, serve_http
    from markvault.server.tools import build_server

    check_bind(host, allow_remote)  # before the vault is opened
    serve_http(
        build_server(open_vault(ctx)),
        host=host,
        port=port,
        allow_remote=allow_remote,
        max_body=max_body,
        write_rate=write_rate,
        extra_hosts=allow_hosts,
        extra_origins=allow_origins,
    )


@mcp.command("install")
@click.option(
    "-s",
    "--scope",
    type=click.Choice(["local", "project", "user"]),
    default="local",
    show_default=True,
    help="local: you, this project; project: .mcp.json, shared; user: you, everywhere.",
)
@click.option("--http", "use_http", is_flag=True, help="Register `vault mcp --http`, not stdio.")
@click.option("--host", default="127.0.0.1", show_default=True, help="Where --http listens.")
@click.option("--port", type=PORTS, default=HTTP_PORT, show_default=True, help="Its port.")
@click.pass_context
@handle_errors
def mcp_install(ctx: click.Context, scope: str, use_http: bool, host: str, port: int) -> None:
    """Register this vault's MCP server with Claude Code (`claude mcp add`).

    Without `claude` on PATH, prints the command and the .mcp.json entry instead.
    """
    from pathlib import Path

    from markvault.config import Settings
    from markvault.server.install import check_scope, install, plan

    obj = ctx.find_root().obj
    settings = Settings.load(obj["vault"], obj["index"], obj["model"])
    if use_http:
        from markvault.server.http import http_url, load_or_create_token

        registration = plan(
            settings.vault_dir,
            check_scope(scope),
            http_url=http_url(host, port),
            token=load_or_create_token(),
        )
    else:
        registration = plan(
            settings.vault_dir,
            check_scope(scope),
            index_dir=settings.index_dir if obj["index"] else None,
            model=obj["model"],
        )
    click.echo(install(registration, cwd=Path.cwd()).instructions())


@mcp.command("token")
@click.option("--rotate", is_flag=True, help="Replace it; then restart servers, re-register.")
@handle_errors
def mcp_token(rotate: bool) -> None:
    """Print the bearer token that `vault mcp --http` requires (made on first use)."""
    from markvault.server.http import load_or_create_token, rotate_token, token_path

    click.echo(rotate_token() if rotate else load_or_create_token())
    click.echo(f"(kept in {token_path()}, outside the vault)", err=True)


# ---- init -----------------------------------------------------------------------------


@main.command("init")
@click.argument("folder", required=False, metavar="[DIR]")
@click.option("--starter", is_flag=True, help="Also copy the starter notes (a tour of markvault).")
@click.option("--json", "as_json", is_flag=True, help="Print what was done as JSON.")
@click.pass_context
@handle_errors
def init(ctx: click.Context, folder: str | None, starter: bool, as_json: bool) -> None:
    """Make DIR a vault: kind folders, templates, settings and a .gitignore.

    DIR defaults to --vault, else the current folder; it is created if needed. Only
    missing files are added: an existing vault (an Obsidian one too) keeps every file
    byte for byte, and an existing .gitignore is not edited (the lines it lacks are
    listed instead). Templates go to .markvault/templates/ (hidden, so never indexed;
    inside the vault, so they travel with it in git). The index lives in your cache
    directory, not in the vault.

    \b
    Examples:
      vault init ~/notes
      vault init                          # the current folder, e.g. an Obsidian vault
      vault init ~/markvault-tour --starter
    """
    import textwrap
    from pathlib import Path

    from markvault.files.vault_init import GITIGNORE, init_vault, next_steps

    obj = ctx.find_root().obj
    report = init_vault(Path(folder or obj["vault"] or "."), starter=starter)
    steps = next_steps(report)
    if as_json:
        emit_json({**report.to_json(), "next_steps": [cmd for cmd, _ in steps]})
        return
    what = "Obsidian vault" if report.obsidian else "folder"
    n = report.notes_found
    found = f" with {n} note{'' if n == 1 else 's'}" if n else ""
    click.echo(f"Vault ready: {report.vault} ({what}{found}).")
    for label, items in (("added", report.created), ("kept", report.kept)):
        if items:
            text = ", ".join(items) + ("" if label == "added" else " (already there, unchanged)")
            click.echo(
                textwrap.fill(text, 96, initial_indent=f"  {label:<6} ", subsequent_indent=" " * 9)
            )
    if report.gitignore_missing:
        click.echo(f"  {GITIGNORE} lacks these lines; add them so they are not committed:")
        for line in report.gitignore_missing:
            click.echo(f"           {line}")
    click.echo("\nNext steps:")
    width = max(len(cmd) for cmd, _ in steps)
    for cmd, why in steps:
        click.echo(f"  {cmd.ljust(width)}   {why}")


# ---- trust ----------------------------------------------------------------------------


@main.command("trust")
@click.option("--show", is_flag=True, help="Only say what is trusted and what is not.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_context
@handle_errors
def trust_command(ctx: click.Context, show: bool, as_json: bool) -> None:
    """Trust, on this machine, the settings of .markvault.toml that widen what markvault
    or an agent may do: document_roots, index_dir (outside the vault's parent folder),
    [sync] auto and [sync] trash.

    The settings file travels with the vault in git, so another machine (or anyone who
    can push to the remote) can change it. Until you run this command here, those
    settings stay at their defaults and `vault status` and `vault sync` say so. Read
    them first; the record is kept in your config folder, outside the vault and git.

    \b
    Examples:
      vault trust --show
      vault trust
    """
    from markvault import trust
    from markvault.config import pending, trust_vault

    obj = ctx.find_root().obj
    settings = Settings.load(vault=obj["vault"], index=obj["index"], model=obj["model"])
    waiting = pending(settings.vault_dir)
    trusted = trust.trusted_values(settings.vault_dir) if show else trust_vault(settings.vault_dir)
    if as_json:
        emit_json({"vault": str(settings.vault_dir), "trusted": trusted,
                   "untrusted": waiting if show else {}})  # fmt: skip
        return
    for line in trust.describe(trusted):
        click.echo(f"trusted    {line}")
    for line in trust.describe(waiting if show else {}):
        click.echo(f"untrusted  {line}")
    if not show:
        click.echo(
            f"{len(trusted)} widening setting(s) trusted on this machine."
            if trusted
            else "No widening setting in .markvault.toml: nothing to trust.",
            err=True,
        )


# ---- check ----------------------------------------------------------------------------


@main.command("check")
@click.option("--json", "as_json", is_flag=True, help="Print every finding as JSON.")
@click.pass_context
@handle_errors
def check(ctx: click.Context, as_json: bool) -> None:
    """Scan the whole vault for credentials: cloud keys, tokens, private keys, passwords.

    Reads every file, whatever its name, encoding or size (hidden ones too, such as an
    Obsidian plugin's settings; never .git, nor the trash unless [sync] trash commits
    it): text with the rules every write passes, binaries for tokens and key structure,
    key and credential files (id_rsa, *.pem, .env, .npmrc...) by what they are, every
    file's name; and lists each credential with its file, line and fingerprint. Nothing is
    changed. A known false positive is let through by adding its note and fingerprint
    to [credentials] allow in .markvault.toml; `vault sync` refuses to commit the rest.
    Exit codes: 0 none found (allowed ones do not count); 6 credentials found; 2 bad
    settings.

    \b
    Examples:
      vault check
      vault check --json | jq '.notes[].path'
    """
    from markvault.credentials.scan import check_vault
    from markvault.files.identity_check import check_identities

    obj = ctx.find_root().obj
    settings = Settings.load(vault=obj["vault"], index=obj["index"], model=obj["model"])
    report = check_vault(settings.vault_dir, trash=settings.sync.trash)
    identities = check_identities(settings.vault_dir)  # ids that name no note of their own
    if as_json:
        emit_json({**report.to_json(), "identities": identities})
    else:
        _print_check(report)
        for item in identities:
            click.echo(fold(f"id  {item['path']}: {item['problem']}"), err=True)
    if report.credentials:
        sys.exit(RefusedError.exit_code)


def _print_check(report: CheckReport) -> None:
    for note in report.notes:
        for finding in note.found:
            where = f"{finding.part}:" if finding.part else f"{finding.line}:{finding.column}:"
            click.echo(f"{note.path}:{where} {finding.kind}  {finding.fingerprint}")
    for path in report.skipped:
        click.echo(f"skipped {path} (could not be read)", err=True)
    size = f"{report.bytes / 1e6:.1f} MB" if report.bytes >= 1e5 else f"{report.bytes:,} bytes"
    summary = f"{report.files} files ({size}) checked: "
    allowed = f", {report.allowed} allowed" if report.allowed else ""
    if not report.credentials:
        click.echo(summary + f"no credentials{allowed}.", err=True)
        return
    notes = len(report.found)
    click.echo(
        summary + f"{report.credentials} credential{'s' if report.credentials > 1 else ''} "
        f"in {notes} file{'s' if notes > 1 else ''}{allowed}. Remove them (a password "
        "manager is their place), or, for a false positive, allow it in .markvault.toml: "
        '[credentials] allow = [{ note = "<path>", fingerprint = "<fingerprint>" }]',
        err=True,
    )


# ---- sync -----------------------------------------------------------------------------


@main.command("sync")
@click.option("-m", "--message", metavar="TEXT", help="The commit's subject (changes are listed).")
@click.option("--no-push", is_flag=True, help="Commit and pull, but do not push.")
@click.option("--dry-run", is_flag=True, help="Show what would be committed; change nothing.")
@click.option(
    "--rebase/--merge",
    "rebase",
    default=None,
    help="How to combine with the upstream (default: [sync] pull in .markvault.toml, or merge).",
)
@click.option("--json", "as_json", is_flag=True, help="Print what was done as JSON.")
@click.pass_context
@handle_errors
def sync(
    ctx: click.Context,
    message: str | None,
    no_push: bool,
    dry_run: bool,
    rebase: bool | None,
    as_json: bool,
) -> None:
    """Commit the vault's changes, pull the other machines', push, refresh the index.

    The vault must be in a git repository whose branch has an upstream. The commit
    message says what changed (notes added, edited, moved, deleted); only the vault's
    folder is committed, never markvault's temporary files. No markvault write runs
    while git changes the files. On a conflict it stops and names the notes: both
    versions stay in each file between git's <<<<<<< and >>>>>>> lines, and markvault
    writes nothing in the vault until you keep the text you want and run `vault sync`
    again. Exit codes: 0 done; 1 git failed (network, access); 2 no repository or no
    upstream; 5 conflict; 6 a check refused the commit.

    \b
    Examples:
      vault sync
      vault sync -m "Notes from the workshop" --no-push
      vault sync --dry-run
    """
    vault = open_vault(ctx)
    done = vault.sync(
        message=message,
        push=not no_push,
        dry_run=dry_run,
        pull=None if rebase is None else ("rebase" if rebase else "merge"),
        # git may ask for a passphrase on this terminal only when it runs here (not in a
        # running `vault mcp` that owns the index).
        interactive=sys.stdin.isatty() and vault.host.runs_here,
    )
    if as_json:
        emit_json(done)
    else:
        _print_sync(done)
    if done["conflicts"]:
        sys.exit(ConflictError.exit_code)


def _print_sync(report: SyncAnswer) -> None:
    from markvault.git.sync import Change, commit_message

    upstream, indexed = report["upstream"], report["index"]
    if report["finished"]:
        click.echo(f"Finished the {report['finished']} stopped by the last sync.")
    if report["changes"]:
        changes = [Change(c["status"], c["path"], c["from"], None) for c in report["changes"]]
        summary = commit_message(changes).splitlines()
        verb = "Would commit" if report["dry_run"] else f"Committed {(report['commit'] or '')[:8]}"
        click.echo(f"{verb}: {summary[0].split(': ', 1)[1]}")
        for line in summary[2:]:
            click.echo(f"  {line}")
    elif not report["conflicts"]:
        click.echo("Nothing to commit.")
    if report["dry_run"]:
        click.echo(
            f"Then pull ({report['behind']} commits behind {upstream} as of the last "
            f"fetch) and push ({report['ahead']} ahead)."
        )
    if report["pulled"]:
        click.echo(
            f"Pulled {report['pulled']} commit(s) from {upstream}: "
            f"{len(report['changed_paths'])} file(s) changed."
        )
    if report["pushed"]:
        click.echo(f"Pushed {report['pushed']} commit(s) to {upstream}.")
    if indexed is not None:
        click.echo(
            f"Index updated: {indexed['added']} added, {indexed['updated']} updated, "
            f"{indexed['renamed']} renamed, {indexed['removed']} removed."
        )
    for notice in report["notices"]:
        click.echo(notice, err=True)
    if report["conflicts"]:
        click.echo(
            click.style("Conflict: ", fg="red", bold=True)
            + f"combining with {upstream or 'the upstream'} stopped on "
            f"{len(report['conflicts'])} file(s):",
            err=True,
        )
        for path in report["conflicts"]:
            click.echo(f"  {path}", err=True)
        click.echo(
            "Both versions are in each file, between <<<<<<< and >>>>>>> lines. Keep the "
            "text you want, delete those lines, then run `vault sync` again (or give up with "
            "`git merge --abort` / `git rebase --abort`). Until then markvault writes "
            "nothing in this vault.",
            err=True,
        )
    elif not (report["dry_run"] or report["pulled"] or report["pushed"] or report["changes"]):
        click.echo(f"Up to date with {upstream}.")


def run() -> None:
    """The `vault` command: the console script and `python -m markvault.cli`."""
    global _COMMAND_PROCESS
    _COMMAND_PROCESS = True
    try:
        main()
    except SystemExit as exc:
        _exit_at_once(exc.code)
        raise


def _exit_at_once(code: object) -> None:
    """End the process as soon as the command is done (its vault closed by the context's
    close callbacks). With no other thread, the exit handlers run as the interpreter
    would run them (logging, process pools, temporary folders), and its teardown of
    every module loaded is skipped: ~30 ms of a one-shot `vault search`, DuckDB's
    included. With a daemon thread still at work (the model loading in the background,
    or being exported with torch on first use) the interpreter's exit would wait seconds
    for it and could abort in the libraries' C++ teardown ("terminate called ...").
    Nothing of ours is left to flush: files are written whole, the index is closed."""
    import atexit
    import threading

    others = [t for t in threading.enumerate() if t is not threading.main_thread()]
    if not others:
        atexit._run_exitfuncs()
    elif not any(t.daemon for t in others):
        return  # the usual way out, which waits for them
    if isinstance(code, str):  # sys.exit("message"): printed as the interpreter would
        print(code, file=sys.stderr)
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):  # a reader already gone: nothing to say
            stream.flush()
    os._exit(code if isinstance(code, int) else 0 if code is None else 1)


if __name__ == "__main__":
    run()
