"""The `vault` group and what its commands share: errors as exit codes, progress,
opening the vault, JSON output."""

from __future__ import annotations

import contextlib
import dataclasses
import gc
import importlib
import json
import os
import select
import sys
import time
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, TypeVar

import click

from markvault.config import ENV_INDEX, ENV_MODEL, ENV_VAULT, Settings, chosen
from markvault.display import shown
from markvault.errors import MarkvaultError
from markvault.runtime.shared_host import connect
from markvault.vault import Vault

if TYPE_CHECKING:
    from markvault.answers.writing import CredentialReport

F = TypeVar("F", bound=Callable[..., Any])
# Set by ``run``: this process is one `vault` command and ends with it (not a caller
# that runs commands in its own process, as the tests' CliRunner does).
_COMMAND_PROCESS = False


def _fail(message: str, code: int) -> None:
    click.echo(click.style("Error: ", fg="red", bold=True) + shown(message), err=True)
    sys.exit(code)


@contextlib.contextmanager
def _errors_as_exit_codes() -> Iterator[None]:
    """Expected failures become a message and an exit code, never a traceback: around
    every command, as the group invokes it (and after its vault is closed)."""
    try:
        yield
    except MarkvaultError as exc:
        _fail(str(exc), exc.exit_code)
    except BrokenPipeError:
        if _reader_gone():
            raise  # `| head` closed early: _quiet_pipes ends the command
        _fail("The connection to the index owner broke. Retry the command.", 1)
    except OSError as exc:
        where = f" ({exc.filename})" if exc.filename else ""
        _fail(f"{exc.strerror or exc}{where}. Check the path and its permissions.", 1)
    except KeyboardInterrupt:
        _fail("interrupted; the vault is unchanged and the index stays usable.", 130)


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


# Each command's modules (``cli/<module>.py``, which register it on the group when
# imported): a command imports its own, `vault --help` all of them (tests/test_cli.py
# holds this map to what the modules register).
COMMAND_MODULES: dict[str, tuple[str, ...]] = {
    "check": ("setup",),
    "delete": ("writes",),
    "edit": ("notes",),
    "get": ("notes",),
    "init": ("setup",),
    "learn": ("writes",),
    "map": ("context",),
    "mcp": ("serve",),
    "move": ("writes",),
    "new": ("notes",),
    "recent": ("context",),
    "reindex": ("search",),
    "related": ("context",),
    "search": ("search",),
    "sessions": ("sessions", "session_hooks"),
    "status": ("notes",),
    "store": ("writes",),
    "sync": ("sync",),
    "timeline": ("context",),
    "topics": ("context",),
    "trash": ("writes",),
    "trust": ("setup",),
    "watch": ("serve",),
}


class _VaultGroup(click.Group):
    """The `vault` group: refuses arguments no path or query holds, ends quietly when its
    reader goes away, and turns every command's expected failures into exit codes. Its
    commands are imported when named (``COMMAND_MODULES``)."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*COMMAND_MODULES, *self.commands})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        for module in COMMAND_MODULES.get(cmd_name, ()):
            importlib.import_module(f"markvault.cli.{module}")
        return super().get_command(ctx, cmd_name)

    def make_context(self, *args: Any, **kwargs: Any) -> click.Context:
        with _quiet_pipes():  # `vault --help | head -1`
            _refuse_undecodable(kwargs.get("args", args[1] if len(args) > 1 else []))
            return super().make_context(*args, **kwargs)

    def invoke(self, ctx: click.Context) -> Any:
        with _quiet_pipes(), _errors_as_exit_codes():
            return super().invoke(ctx)


PORTS = click.IntRange(0, 65535)  # 0: any free port
MAX_DAYS = 100 * 366  # `recent --days`: a date further back is no date


class Span(click.FloatRange):
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
    cls=_VaultGroup,
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
)
@click.option(
    "--vault",
    "vault_dir",
    metavar="DIR",
    help=f"The vault folder (env {ENV_VAULT}; default ./vault).",
)
@click.option(
    "--index",
    "index_dir",
    metavar="DIR",
    help=f"Where the index lives (env {ENV_INDEX}; default: a folder for this vault in your "
    "cache directory).",
)
@click.option(
    "--model",
    metavar="NAME",
    help=f"Embedding model (env {ENV_MODEL}): all-MiniLM-L6-v2 (default) or a local folder.",
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
    # flag > environment, as config.py decides (the vault file and defaults come after)
    ctx.obj = {
        "vault": chosen(vault_dir, ENV_VAULT),
        "index": chosen(index_dir, ENV_INDEX),
        "model": chosen(model, ENV_MODEL),
    }


def settings_of(ctx: click.Context) -> Settings:
    """The settings of the vault this command works on (``--vault``, ``--index``, ...)."""
    obj = ctx.find_root().obj
    return Settings.load(vault=obj["vault"], index=obj["index"], model=obj["model"])


def open_vault(
    ctx: click.Context,
    *,
    index_lock_wait: float | None = None,
    look_ahead: bool = False,
    walk_ahead: bool = False,
    embed_ahead: bool = False,
) -> Vault:
    """The vault: this process owns its index, or asks the process that does (see
    shared.py), so any number of commands and servers can run at once.
    ``index_lock_wait``: how long to wait for the DuckDB file's lock (as the owner);
    ``look_ahead``: the command is one search, made now; ``walk_ahead``: its first call
    syncs the whole vault, now; ``embed_ahead``: that search embeds its query
    (``shared_host.connect``)."""
    settings = settings_of(ctx)
    if index_lock_wait is not None:
        settings = dataclasses.replace(settings, index_lock_wait=index_lock_wait)
    if look_ahead and _COMMAND_PROCESS and settings.db_path.exists():
        # The process ends once it has answered: Python's cycle collector is stopped for
        # the rest of it. What it allocates from here (the index layer's modules, the
        # search's rows) lives to the end or is freed by its reference count, and each
        # collection would walk the imports' ~100k objects again (~2-3 ms of a search
        # on big). Not when the index is missing: the search builds it first.
        gc.disable()
    vault = connect(settings, look_ahead=look_ahead, walk_ahead=walk_ahead, embed_ahead=embed_ahead)
    ctx.call_on_close(vault.close)
    return vault


def emit_json(data: Any) -> None:
    click.echo(json.dumps(data, ensure_ascii=False, indent=None, default=str))


def say_redacted(result: CredentialReport) -> None:
    """What the credential gate redacted in a write, on stderr (stdout stays the
    result a script reads)."""
    if result.get("credentials"):
        click.echo(click.style(f"{result['credentials']}.", fg="yellow"), err=True)


def json_option(text: str = "Print JSON.") -> Callable[[F], F]:
    """``--json`` (``as_json``): the answer as JSON for scripts, not text for people."""
    return click.option("--json", "as_json", is_flag=True, help=text)


def scope_option(text: str, *flags: str) -> Callable[[F], F]:
    """``--scope``: which Claude Code settings a change goes to (`mcp install`, `sessions
    hook install/uninstall`)."""
    return click.option(
        *flags,
        "--scope",
        type=click.Choice(["local", "project", "user"]),
        default="local",
        show_default=True,
        help=text,
    )


def paging_options(limit: int) -> Callable[[F], F]:
    """``--limit`` and ``--offset`` of a listing."""

    def decorate(command: F) -> F:
        command = click.option("--offset", default=0, show_default=True, type=int)(command)
        return click.option("--limit", default=limit, show_default=True, type=int)(command)

    return decorate


def say_problems(report: Any, failed: str) -> None:
    """A long run's notices and the items it could not do (``failed``: "skipped"), on
    stderr."""
    for notice in report.notices:
        click.echo(notice, err=True)
    for item in report.errors:
        click.echo(click.style(f"{failed} ", fg="red") + item["message"], err=True)


def say_saved(result: Any, state: str) -> None:
    """The one line of a write that may have changed nothing: path, what happened, hash."""
    click.echo(f"{result['path']} {state} · hash {result['hash']}")
    say_redacted(result)
