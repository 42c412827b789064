"""`vault sessions`: import, list, projects, show and summarize."""

from __future__ import annotations

import json
import sys
from typing import Any

import click

from markvault.cli.app import (
    TerminalProgress,
    emit_json,
    json_option,
    main,
    open_vault,
    paging_options,
    say_problems,
    say_saved,
)
from markvault.cli.notes import print_item
from markvault.display import fold
from markvault.errors import UsageError
from markvault.types.sessions import SessionQuery
from markvault.vault import parse_lines


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
@json_option("Print the report as JSON.")
@click.option("-q", "--quiet", is_flag=True, help="No progress output.")
@click.pass_context
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
        say_problems(report, "failed")
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
@paging_options(20)
@json_option()
@click.pass_context
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
@json_option()
@click.pass_context
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
@json_option()
@click.pass_context
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
        print_item(result)
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
@json_option()
@click.pass_context
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
        data = _summary_from_json(from_json)
    result = open_vault(ctx).save_session_summary(ref, data, expected_hash)
    if as_json:
        emit_json(result)
    else:
        say_saved(result, "summary saved" if result["changed"] else "unchanged (same summary)")


SUMMARY_EXAMPLE = 'Example: {"overview": "...", "decisions": ["..."], "open_items": []}'


def _summary_from_json(source: str) -> dict[str, Any]:
    """The summary `--from-json` names: a JSON object in a file, or on stdin (``-``)."""
    raw = sys.stdin.read() if source == "-" else _read_text_file(source)
    try:
        data = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise UsageError(f"The summary is not JSON: {exc}.", SUMMARY_EXAMPLE) from None
    if isinstance(data, dict):
        return data
    raise UsageError("The summary must be a JSON object.", SUMMARY_EXAMPLE)


def _read_text_file(path: str) -> str:
    try:
        with open(path, encoding="utf-8") as fh:
            return fh.read()
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"Cannot read {path}: {exc}.") from None
