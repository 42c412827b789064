"""`vault mcp install`: the command lines and .mcp.json it builds, and a run against a fake
`claude` (an external program) that records its arguments."""

from __future__ import annotations

import json
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from markvault.cli.main import main
from markvault.errors import ConfigError, UsageError
from markvault.server.install import (
    find_claude,
    http_add_argv,
    install,
    plan,
    server_argv,
    shell_line,
    stdio_add_argv,
    stdio_mcp_json,
    vault_command,
)

TOKEN = "s3cret-token-0123456789abcdefghijklmnopqrstuvw"
FAKE_CLAUDE = """#!{python}
import json, os, sys
with open(os.environ["FAKE_CLAUDE_LOG"], "a") as fh:
    fh.write(json.dumps({{"argv": sys.argv[1:], "cwd": os.getcwd()}}) + "\\n")
if os.environ.get("FAKE_CLAUDE_FAIL"):
    sys.stderr.write("MCP server markvault already exists in local config\\n")
    sys.exit(1)
print("Added stdio MCP server markvault; headers: " + " ".join(sys.argv[1:]))
"""


@pytest.fixture
def fake_claude(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A `claude` on PATH (and nothing else) that logs each call to a file."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    claude = bin_dir / "claude"
    claude.write_text(FAKE_CLAUDE.format(python=sys.executable))
    claude.chmod(claude.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", str(bin_dir))
    monkeypatch.setenv("FAKE_CLAUDE_LOG", str(tmp_path / "claude.log"))
    return tmp_path / "claude.log"


def calls(log: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in log.read_text().splitlines()]


def test_vault_command_prefers_the_running_script(tmp_path: Path) -> None:
    script = tmp_path / "venv" / "bin" / "vault"
    script.parent.mkdir(parents=True)
    script.write_text("#!/bin/sh\n")
    python = str(script.parent / "python")
    assert vault_command(str(script), python) == [str(script.resolve())]
    # started some other way (pytest, python -m): the script beside this python
    assert vault_command("/usr/bin/pytest", python) == [str(script)]
    # no script anywhere: python -m always works
    alone = str(tmp_path / "bare" / "python")
    assert vault_command("/usr/bin/pytest", alone) == [alone, "-m", "markvault.cli"]


def test_python_m_fallback_really_runs_the_cli() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "markvault.cli", "--help"], capture_output=True, text=True
    )
    assert done.returncode == 0 and "mcp" in done.stdout


def test_stdio_argv_and_json(tmp_path: Path) -> None:
    vault = tmp_path / "my vault"
    server = server_argv(vault, command=["/opt/mv/bin/vault"])
    assert server == ["/opt/mv/bin/vault", "--vault", str(vault.resolve()), "mcp"]
    assert stdio_add_argv(server, "user") == [
        "claude", "mcp", "add", "--scope", "user", "markvault", "--", *server,
    ]  # fmt: skip
    assert stdio_mcp_json(server) == {
        "mcpServers": {"markvault": {"command": "/opt/mv/bin/vault", "args": server[1:]}}
    }
    with pytest.raises(UsageError, match="local, project, user"):
        stdio_add_argv(server, "global")  # type: ignore[arg-type]


def test_explicit_index_and_model_are_kept(tmp_path: Path) -> None:
    server = server_argv(tmp_path, command=["v"], index_dir=Path("idx"), model="m")
    assert server == [
        "v", "--vault", str(tmp_path), "--index", str(Path("idx").resolve()), "--model", "m", "mcp",
    ]  # fmt: skip


def test_http_argv_keeps_the_token_out_of_shared_files() -> None:
    url = "http://127.0.0.1:8765/mcp"
    assert http_add_argv(url, TOKEN, "user") == [
        "claude", "mcp", "add", "--scope", "user", "--transport", "http",
        "markvault", url, "--header", f"Authorization: Bearer {TOKEN}",
    ]  # fmt: skip
    # project scope writes .mcp.json, which is committed: name an env var instead
    assert http_add_argv(url, TOKEN, "project")[-1] == (
        "Authorization: Bearer ${MARKVAULT_HTTP_TOKEN}"
    )
    reg = plan(Path("."), "local", http_url=url, token=TOKEN)
    assert TOKEN not in reg.command_line and TOKEN not in reg.instructions()
    assert reg.mcp_json["mcpServers"]["markvault"]["type"] == "http"


def test_shell_line_survives_a_shell(tmp_path: Path) -> None:
    vault = tmp_path / "it's a vault"
    argv = stdio_add_argv(server_argv(vault, command=["/x/vault"]))
    echoed = subprocess.run(
        ["sh", "-c", f"printf '%s\\n' {shell_line(argv)}"], capture_output=True, text=True
    ).stdout.splitlines()
    assert echoed == argv
    # the printed HTTP line fetches the token when pasted instead of showing it
    reg = plan(tmp_path, "user", http_url="http://127.0.0.1:9/mcp", token=TOKEN)
    script = f"vault() {{ echo {TOKEN}; }}; printf '%s\\n' {reg.command_line}"
    echoed = subprocess.run(["sh", "-c", script], capture_output=True, text=True).stdout
    assert echoed.splitlines() == reg.argv


def test_without_claude_the_plan_is_returned_for_printing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # no claude here
    assert find_claude() is None
    reg = install(plan(tmp_path, "project", command=["/x/vault"]))
    assert not reg.ran
    text = reg.instructions()
    assert "not on PATH" in text and reg.command_line in text
    assert json.loads(text[text.index("{") :]) == reg.mcp_json


def test_install_runs_claude_from_path(fake_claude: Path, tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    reg = install(plan(tmp_path / "vault", "project", command=["/x/vault"]), cwd=project)
    assert reg.ran and "Added" in reg.output
    [logged] = calls(fake_claude)
    assert logged["argv"] == reg.argv[1:]
    assert logged["cwd"] == str(project)  # project scope writes .mcp.json there


def test_install_with_an_injected_claude_and_http(fake_claude: Path, tmp_path: Path) -> None:
    claude = str(tmp_path / "bin" / "claude")
    reg = plan(tmp_path, "user", http_url="http://127.0.0.1:9/mcp", token=TOKEN)
    done = install(reg, claude=claude)
    [logged] = calls(fake_claude)
    assert logged["argv"][-1] == f"Authorization: Bearer {TOKEN}"  # type: ignore[index]
    assert TOKEN not in done.output and "<token>" in done.output


def test_claude_refusal_is_a_config_error(
    fake_claude: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_CLAUDE_FAIL", "1")
    with pytest.raises(ConfigError, match="already exists") as caught:
        install(plan(tmp_path, "local", command=["/x/vault"]))
    assert "claude mcp remove markvault --scope local" in str(caught.value)


# -- the CLI ------------------------------------------------------------------------------


def test_cli_install_registers_this_vault(
    fake_claude: Path, vault_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(vault_dir.parent)
    result = CliRunner().invoke(main, ["--vault", str(vault_dir), "mcp", "install", "-s", "user"])
    assert result.exit_code == 0, result.output
    [logged] = calls(fake_claude)
    argv = logged["argv"]
    assert argv[:6] == ["mcp", "add", "--scope", "user", "markvault", "--"]  # type: ignore[index]
    assert argv[-3:] == ["--vault", str(vault_dir.resolve()), "mcp"]  # type: ignore[index]
    assert Path(argv[6]).name in ("vault", "python", "python3")  # type: ignore[index]


def test_cli_install_http_and_token(
    fake_claude: Path, vault_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MARKVAULT_TOKEN_FILE", str(tmp_path / "token"))
    runner = CliRunner()
    token = runner.invoke(main, ["mcp", "token"]).stdout.strip()
    assert token == (tmp_path / "token").read_text().strip()
    args = ["--vault", str(vault_dir), "mcp", "install", "--http", "--port", "9999"]
    result = runner.invoke(main, args)
    assert result.exit_code == 0, result.output
    assert token not in result.output
    [logged] = calls(fake_claude)
    assert logged["argv"][-3:] == [  # type: ignore[index]
        "http://127.0.0.1:9999/mcp",
        "--header",
        f"Authorization: Bearer {token}",
    ]
