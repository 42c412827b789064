"""`vault topics`, `vault recent`, `vault timeline`, `vault related` and `vault map`."""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, cast

import click

from markvault.cli.app import (
    MAX_DAYS,
    Span,
    emit_json,
    json_option,
    main,
    open_vault,
    paging_options,
)
from markvault.display import fold
from markvault.types.search import Filters

if TYPE_CHECKING:
    from markvault.answers.context import TimelineNote


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
@json_option()
@click.pass_context
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
@click.option("--days", type=Span(0, MAX_DAYS), default=7, show_default=True, help="How far back.")
@click.option("--since", metavar="DATE", help="From this ISO date or time instead.")
@click.option("--until", metavar="DATE", help="Up to this ISO date or time.")
@click.option("--kind", multiple=True, help="note, session, knowledge or document.")
@click.option("--project", multiple=True, help="Project (repeatable).")
@paging_options(20)
@json_option()
@click.pass_context
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
@json_option()
@click.pass_context
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
@json_option()
@click.pass_context
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
@json_option()
@click.pass_context
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
