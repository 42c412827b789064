"""`vault mcp install`: register the vault's MCP server with Claude Code.

Claude Code starts stdio servers itself, from a command line it stores, so the line must
work from any folder and any shell: absolute paths to this very ``vault`` executable and
to the vault. When ``claude`` is not installed we run nothing and hand back the command
and the ``.mcp.json`` entry to print, so the user can register it wherever they like.

The builders are pure (they take every path they need), so tests check their output
exactly; ``install`` is the one place that runs a program.
"""

from __future__ import annotations

import json
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from markvault.errors import ConfigError, UsageError

Scope = Literal["local", "project", "user"]
SCOPES: tuple[Scope, ...] = ("local", "project", "user")
SERVER_NAME = "markvault"
TOKEN_ENV_VAR = "MARKVAULT_HTTP_TOKEN"
"""What a shared ``.mcp.json`` names instead of the token: Claude Code expands
``${VAR}`` there, and a token must not be committed to a repository."""
CLAUDE_TIMEOUT = 60.0


def vault_command(argv0: str | None = None, python: str | None = None) -> list[str]:
    """The absolute command that runs this installation's ``vault`` CLI.

    Prefers the script we were started as, then the one installed beside this Python
    (a venv's bin/); else ``python -m markvault.cli``, which always works. ``PATH`` is
    not searched: another program called ``vault`` (HashiCorp's) is common.
    """
    argv0 = sys.argv[0] if argv0 is None else argv0
    python = sys.executable if python is None else python
    started_as = Path(argv0)
    if started_as.stem == "vault" and started_as.is_file():
        return [str(started_as.resolve())]
    beside = Path(python).parent / ("vault.exe" if sys.platform == "win32" else "vault")
    if beside.is_file():
        return [str(beside.absolute())]
    return [str(Path(python).absolute()), "-m", "markvault.cli"]


def server_argv(
    vault_dir: Path,
    *,
    command: list[str] | None = None,
    index_dir: Path | None = None,
    model: str | None = None,
) -> list[str]:
    """The stdio server's command line: ``<vault> --vault <abs dir> [--index D] [--model M] mcp``.

    Pass ``index_dir`` and ``model`` when they were chosen explicitly: Claude Code may
    start the server with another environment than the shell that installed it.
    """
    argv = [*(command or vault_command()), "--vault", str(vault_dir.resolve())]
    if index_dir is not None:
        argv += ["--index", str(index_dir.resolve())]
    if model is not None:
        argv += ["--model", model]
    return [*argv, "mcp"]


def check_scope(scope: str) -> Scope:
    if scope not in SCOPES:
        raise UsageError(f"Unknown scope {scope!r}.", f"Use one of: {', '.join(SCOPES)}.")
    return scope


def stdio_add_argv(
    server: list[str], scope: Scope = "local", *, name: str = SERVER_NAME
) -> list[str]:
    """``claude mcp add --scope S markvault -- <server argv>``.

    Options go before the name; ``--`` keeps the server's own flags from being read
    as claude's.
    """
    check_scope(scope)
    return ["claude", "mcp", "add", "--scope", scope, name, "--", *server]


def bearer_value(token: str | None, scope: Scope) -> str:
    """The Authorization header value to store: the token, except in a project's shared
    ``.mcp.json``, which gets ``${MARKVAULT_HTTP_TOKEN}`` for Claude Code to expand."""
    if token is None or scope == "project":
        return f"Bearer ${{{TOKEN_ENV_VAR}}}"
    return f"Bearer {token}"


def http_add_argv(
    url: str, token: str | None, scope: Scope = "local", *, name: str = SERVER_NAME
) -> list[str]:
    """``claude mcp add --scope S --transport http markvault URL --header "Authorization: ..."``.

    ``--header`` takes several values, so it comes after the name and URL, which it
    would otherwise swallow.
    """
    check_scope(scope)
    header = f"Authorization: {bearer_value(token, scope)}"
    options = ["--scope", scope, "--transport", "http"]
    return ["claude", "mcp", "add", *options, name, url, "--header", header]


def stdio_mcp_json(server: list[str], *, name: str = SERVER_NAME) -> dict[str, Any]:
    """The ``.mcp.json`` entry for the stdio server."""
    return {"mcpServers": {name: {"command": server[0], "args": server[1:]}}}


def http_mcp_json(url: str, *, name: str = SERVER_NAME) -> dict[str, Any]:
    """The ``.mcp.json`` entry for the HTTP server; the token comes from the environment."""
    headers = {"Authorization": bearer_value(None, "project")}
    return {"mcpServers": {name: {"type": "http", "url": url, "headers": headers}}}


def shell_line(argv: list[str], *, secret: str | None = None) -> str:
    """``argv`` quoted for a POSIX shell, with ``secret`` shown as ``$(vault mcp token)``
    so that printing the line does not print the token."""
    line = shlex.join(argv)
    if secret:
        line = line.replace(secret, "'\"$(vault mcp token)\"'")
    return line


@dataclass
class Registration:
    """What ``install`` did (``ran``) or what the user should do (the rest)."""

    argv: list[str]
    mcp_json: dict[str, Any]
    ran: bool = False
    output: str = ""
    secret: str | None = field(default=None, repr=False)

    @property
    def command_line(self) -> str:
        return shell_line(self.argv, secret=self.secret)

    def instructions(self) -> str:
        """The text to print: what was registered, or how to register by hand."""
        if self.ran:
            line = shlex.join(self.argv)
            if self.secret:
                line = line.replace(self.secret, "<token>")
            return f"Registered with Claude Code: {line}\n{self.output}".rstrip()
        return (
            "`claude` is not on PATH. Register the server with:\n\n"
            f"  {self.command_line}\n\n"
            "or add this to .mcp.json at the root of your project:\n\n"
            f"{json.dumps(self.mcp_json, indent=2)}"
        )


def plan(
    vault_dir: Path,
    scope: Scope = "local",
    *,
    http_url: str | None = None,
    token: str | None = None,
    command: list[str] | None = None,
    index_dir: Path | None = None,
    model: str | None = None,
) -> Registration:
    """The registration for a stdio server, or for an HTTP one when ``http_url`` is set
    (the HTTP server already knows its vault, so ``vault_dir`` and the rest are unused)."""
    if http_url is None:
        server = server_argv(vault_dir, command=command, index_dir=index_dir, model=model)
        return Registration(stdio_add_argv(server, scope), stdio_mcp_json(server))
    argv = http_add_argv(http_url, token, scope)
    return Registration(argv, http_mcp_json(http_url), secret=token)


def find_claude() -> str | None:
    return shutil.which("claude")


def install(
    registration: Registration, *, claude: str | None = None, cwd: Path | None = None
) -> Registration:
    """Run ``claude mcp add`` if ``claude`` (default: found on PATH) exists.

    ``cwd`` is the project that local and project scopes refer to (project scope writes
    ``.mcp.json`` there). Without claude, returns the registration unchanged for
    printing. A refusal by claude (the name exists already, say) is a ConfigError.
    """
    claude = claude or find_claude()
    if claude is None:
        return registration
    argv = [claude, *registration.argv[1:]]
    try:
        done = subprocess.run(
            argv, cwd=cwd, capture_output=True, text=True, timeout=CLAUDE_TIMEOUT, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise ConfigError(
            f"Could not run {claude}: {exc}.",
            f"Register by hand: {registration.command_line}",
        ) from exc
    output = (done.stdout + done.stderr).strip()
    if registration.secret:  # claude echoes the headers it stored
        output = output.replace(registration.secret, "<token>")
    if done.returncode != 0:
        raise ConfigError(
            f"`claude mcp add` failed (exit {done.returncode}): {output or 'no output'}",
            f"If the name is taken: claude mcp remove {SERVER_NAME} --scope "
            f"{registration.argv[4]}, then run this again.",
        )
    registration.ran, registration.output = True, output
    return registration
