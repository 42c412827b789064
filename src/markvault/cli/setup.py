"""`vault init`, `vault trust` and `vault check`."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

import click

from markvault.display import fold
from markvault.errors import RefusedError

if TYPE_CHECKING:
    from markvault.credentials.scan import CheckReport  # imported by `vault check` only

from markvault.cli.app import emit_json, json_option, main, settings_of

# ---- init -----------------------------------------------------------------------------


@main.command("init")
@click.argument("folder", required=False, metavar="[DIR]")
@click.option("--starter", is_flag=True, help="Also copy the starter notes (a tour of markvault).")
@json_option("Print what was done as JSON.")
@click.pass_context
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
@json_option()
@click.pass_context
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

    settings = settings_of(ctx)
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
@json_option("Print every finding as JSON.")
@click.pass_context
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

    settings = settings_of(ctx)
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
