"""`vault watch` and `vault mcp` (stdio or --http; install, token): the long-running processes."""

from __future__ import annotations

import time

import click

from markvault.cli.app import (
    PORTS,
    emit_json,
    json_option,
    main,
    open_vault,
    scope_option,
    settings_of,
)
from markvault.http_settings import HTTP_DEFAULTS as HTTP
from markvault.http_settings import HttpOptions
from markvault.runtime.shared_host import connect
from markvault.types.reindex import ReindexReport


@main.command()
@click.option(
    "--poll/--events",
    "poll",
    default=None,
    help="Force polling, or file events (default: events, polling where they do not arrive).",
)
@json_option("One JSON line per sync.")
@click.option("-q", "--quiet", is_flag=True, help="Print nothing but errors.")
@click.pass_context
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

    settings = settings_of(ctx)
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


@main.group(invoke_without_command=True)
@click.option("--http", "use_http", is_flag=True, help="Serve streamable HTTP, not stdio.")
@click.option("--host", default=HTTP.host, show_default=True, help="Address for --http.")
@click.option("--port", type=PORTS, default=HTTP.port, show_default=True, help="0: any free port.")
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
@click.option("--max-body", type=int, default=HTTP.max_body, show_default=True, help="Bytes.")
@click.option(
    "--write-rate",
    type=int,
    default=HTTP.write_rate,
    show_default=True,
    help="Write tool calls allowed per minute over HTTP.",
)
@click.pass_context
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

    options = HttpOptions(
        host, port, allow_remote, max_body, write_rate, allow_hosts, allow_origins
    )
    check_bind(host, allow_remote)  # before the vault is opened
    serve_http(build_server(open_vault(ctx)), options)


@mcp.command("install")
@scope_option("local: you, this project; project: .mcp.json, shared; user: you, everywhere.", "-s")
@click.option("--http", "use_http", is_flag=True, help="Register `vault mcp --http`, not stdio.")
@click.option("--host", default=HTTP.host, show_default=True, help="Where --http listens.")
@click.option("--port", type=PORTS, default=HTTP.port, show_default=True, help="Its port.")
@click.pass_context
def mcp_install(ctx: click.Context, scope: str, use_http: bool, host: str, port: int) -> None:
    """Register this vault's MCP server with Claude Code (`claude mcp add`).

    Without `claude` on PATH, prints the command and the .mcp.json entry instead.
    """
    from pathlib import Path

    from markvault.server.install import check_scope, install, plan

    obj = ctx.find_root().obj
    settings = settings_of(ctx)
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
def mcp_token(rotate: bool) -> None:
    """Print the bearer token that `vault mcp --http` requires (made on first use)."""
    from markvault.server.http import load_or_create_token, rotate_token, token_path

    click.echo(rotate_token() if rotate else load_or_create_token())
    click.echo(f"(kept in {token_path()}, outside the vault)", err=True)
