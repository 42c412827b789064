"""`vault get`, `vault status`, `vault edit` and `vault new`."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

import click

from markvault.cli.app import emit_json, json_option, main, open_vault, say_redacted, say_saved
from markvault.display import fold, shown
from markvault.errors import UsageError
from markvault.types import PAGE_CHARS
from markvault.types.edits import Edit, Op
from markvault.vault import parse_lines

if TYPE_CHECKING:
    from markvault.answers.reading import AttachmentPage, ChunkView, NoteView
    from markvault.answers.sessions import SessionPage
    from markvault.answers.status import AutoSyncStatus, WatcherStatus


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
@json_option("Print JSON with metadata, links and hash.")
@click.pass_context
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
            print_item(item)
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
            print_item(entry)
            click.echo()


def print_item(item: NoteView | ChunkView | AttachmentPage | SessionPage) -> None:
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
@json_option()
@click.pass_context
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
@json_option("Print the result as JSON.")
@click.pass_context
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
        say_saved(
            result, "changed" if result["changed"] else "unchanged (the edit changed nothing)"
        )


@main.command()
@click.argument("kind", type=click.Choice(["note", "session", "knowledge", "document"]))
@click.argument("title")
@click.option("--topic", help="Topic (required for knowledge): knowledge/<topic>/.")
@click.option("--tags", default="", help="Comma-separated tags, e.g. search,duckdb.")
@click.option("--project", help="Project the note belongs to.")
@json_option("Print path, id, hash and title as JSON.")
@click.pass_context
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
    say_redacted(result)
