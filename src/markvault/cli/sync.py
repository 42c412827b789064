"""`vault sync`: git's round trip, then the index."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

import click

from markvault.cli.app import emit_json, json_option, main, open_vault
from markvault.errors import ConflictError

if TYPE_CHECKING:
    from markvault.answers.sync import SyncAnswer


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
@json_option("Print what was done as JSON.")
@click.pass_context
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
