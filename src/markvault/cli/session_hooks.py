"""`vault sessions hook`: the Claude Code hooks that capture sessions."""

from __future__ import annotations

import sys
from typing import Any

import click

from markvault.cli.app import emit_json, json_option, open_vault, scope_option, settings_of
from markvault.cli.sessions import sessions
from markvault.errors import MarkvaultError

# A hook must not hold Claude Code up: wait this long for an index another process holds
# (a running `vault mcp`), then leave the refresh to the next reindex.
HOOK_LOCK_WAIT = 1.0
MAX_HOOK_INPUT = 1024 * 1024


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

    from markvault.server.install import vault_command

    obj = ctx.find_root().obj
    settings = settings_of(ctx)
    argv = [*vault_command(), "--vault", str(settings.vault_dir.resolve())]
    if obj["index"]:
        argv += ["--index", str(settings.index_dir.resolve())]
    return shlex.join([*argv, "sessions", "hook", "run"])


@sessions_hook.command("install")
@scope_option(SCOPE_HELP)
@click.option("--project", "project_dir", metavar="DIR", help="The project (default: here).")
@click.pass_context
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
@scope_option(SCOPE_HELP)
@click.option("--project", "project_dir", metavar="DIR", help="The project (default: here).")
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
@json_option()
@click.pass_context
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
