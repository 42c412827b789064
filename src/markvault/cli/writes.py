"""`vault move`, `vault delete`, `vault trash`, `vault learn` and `vault store`."""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING

import click

from markvault.cli.app import emit_json, json_option, main, open_vault, say_redacted
from markvault.display import fold

if TYPE_CHECKING:
    from markvault.answers.writing import NoteCreated, NoteMoved, NoteRestored


def _print_changed(data: NoteCreated | NoteMoved | NoteRestored, as_json: bool, verb: str) -> None:
    if as_json:
        emit_json(data)
        return
    click.echo(
        f"{verb} {fold(data.get('path'))}"
        + (f"  (hash {data['hash']})" if data.get("hash") else "")
    )
    say_redacted(data)


@main.command()
@click.argument("ref")
@click.argument("to")
@click.option("--hash", "expected_hash", required=True, help="The note's current hash.")
@json_option()
@click.pass_context
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
@json_option()
@click.pass_context
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
@json_option()
@click.pass_context
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
@json_option()
@click.pass_context
def trash_restore(ctx: click.Context, trash_path: str, to: str | None, as_json: bool) -> None:
    """Bring a note back from the trash; never overwrites."""
    _print_changed(open_vault(ctx).restore_note(trash_path, to), as_json, "restored")


@main.command()
@click.argument("topic")
@click.argument("content")
@click.option("--tags", default="", help="Comma-separated tags.")
@click.option("--title", help="Title (default: the content's first line).")
@json_option()
@click.pass_context
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
@json_option()
@click.pass_context
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
