"""`vault reindex` and `vault search`: the filter options, declared once, and how hits
are printed."""

from __future__ import annotations

import functools
import json
import sys
from collections.abc import Iterator
from typing import Any

import click

from markvault.cli.app import (
    F,
    TerminalProgress,
    emit_json,
    json_option,
    main,
    open_vault,
    say_problems,
)
from markvault.display import fold
from markvault.errors import UsageError
from markvault.types.search import SCOPES, Filters, SearchRequest, SearchResult

RANK_LABELS = {"keyword": "kw", "vector": "vec"}  # how a hit's ranks are shown

# ---- reindex --------------------------------------------------------------------------


@main.command()
@click.option("--full", is_flag=True, help="Rebuild from nothing (re-embeds everything).")
@click.option("--no-vectors", is_flag=True, help="Keyword index only: fast, no model load.")
@json_option("Print the summary as JSON.")
@click.option("-q", "--quiet", is_flag=True, help="No progress output.")
@click.pass_context
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
        say_problems(report, "skipped")
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
        from markvault.search.time_signal import time_line

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
@click.option(
    "--min-score",
    type=float,
    help="Drop hits scoring below this (BM25 for keyword, cosine for vector, "
    "the fused score for hybrid: 0 to 1, RRF for deep).",
)
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
@json_option("Same as --format json.")
@click.option("--batch", metavar="FILE", help="Queries from FILE (or - for stdin); JSON lines out.")
@click.pass_context
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
    then higher, read against --at (default today); "now" and "currently" the
    newest that match.
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
    vault = open_vault(ctx, look_ahead=not batch, embed_ahead=not batch and mode != "keyword")
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
