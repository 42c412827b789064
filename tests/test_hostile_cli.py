"""Every command of the CLI, driven with hostile arguments: huge and negative numbers,
NaN, text with control characters, NUL, lone surrogates (bytes that are not UTF-8, as
Python hands them over from argv), paths that climb out. Each run ends with one of the
exit codes errors.py names (a usage error is 2) and never with a traceback."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import click
import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from markvault.cli.main import main

# Commands that run until stopped (a server, a watcher) are driven with the options
# that end them at once (below); `init` and the hook installers write where their
# argument says, so their arguments are kept inside the test's folder.
ENDLESS = {("watch",), ("mcp",)}
WRITE_ANYWHERE = {("init",), ("sessions", "hook", "install"), ("sessions", "hook", "uninstall")}
EXIT_CODES = {0, 1, 2, 3, 4, 5, 6}


def _commands(
    group: click.Group, path: tuple[str, ...] = ()
) -> Iterator[tuple[tuple[str, ...], click.Command]]:
    ctx = click.Context(group)
    for name in group.list_commands(ctx):  # click's API: the group imports them lazily
        command = group.get_command(ctx, name)
        assert command is not None, name
        if isinstance(command, click.Group):
            yield from _commands(command, (*path, name))
        yield (*path, name), command


COMMANDS = [(path, cmd) for path, cmd in _commands(main) if path not in ENDLESS]

NUMBERS = st.one_of(
    st.integers().map(str),
    st.sampled_from(["99999999999", "-1", "0", "nan", "inf", "-inf", "1e309", "2**64", "9" * 40]),
)
SURROGATES = st.characters(min_codepoint=0xDC80, max_codepoint=0xDCFF)
TEXT = st.lists(
    st.one_of(
        st.characters(codec="utf-8"),
        SURROGATES,
        st.sampled_from(["\x00", "\n", "\r", "\x1b]52;c;aGk=\x07", "\u202e", "/", ".."]),
    ),
    max_size=12,
).map("".join)
VALUES = st.one_of(NUMBERS, TEXT, st.sampled_from(["notes/A.md", "#1", "vault://note/a", "-"]))


@pytest.fixture(scope="module")
def place(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("hostile")
    vault = root / "vault"
    (vault / "notes").mkdir(parents=True)
    (vault / "notes/A.md").write_text("---\nid: a\n---\n# A\n\nquokka [[B]]\n", encoding="utf-8")
    (vault / "sessions/p").mkdir(parents=True)
    (vault / "sessions/p/s.md").write_text(
        "---\nkind: session\nsession_id: abcd1234\n---\n# S\n\nquokka\n", encoding="utf-8"
    )
    (root / "home").mkdir()
    result = CliRunner().invoke(main, [*_base(root), "reindex", "--no-vectors"])
    assert result.exit_code == 0, result.output
    return root


def _base(root: Path) -> list[str]:
    return ["--vault", str(root / "vault"), "--index", str(root / "index")]


def _env(root: Path) -> dict[str, str]:
    # No model (hybrid answers from keywords), and a home of the test's own.
    return {"MARKVAULT_MODEL": "no-such-model", "HOME": str(root / "home")}


def _check(root: Path, argv: list[str]) -> None:
    cwd = os.getcwd()
    os.chdir(root / "home")  # relative paths land in the test's folder
    try:
        result = CliRunner().invoke(main, [*_base(root), *argv], env=_env(root), input="")
    finally:
        os.chdir(cwd)
    shown = f"vault {argv!r} -> {result.exit_code}\n{result.output}"
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise AssertionError(shown) from result.exception
    assert result.exit_code in EXIT_CODES, shown
    assert "Traceback" not in result.output, shown


@st.composite
def invocations(draw: st.DrawFn) -> list[str]:
    path, command = draw(st.sampled_from(COMMANDS))
    options = [p for p in command.params if isinstance(p, click.Option) and p.name != "help"]
    words: list[str] = []
    for _ in range(draw(st.integers(0, 4))):
        if options and draw(st.integers(0, 3)):
            option = draw(st.sampled_from(options))
            words.append(option.opts[0])
            if option.is_flag:
                continue
            numeric = isinstance(option.type, click.types.IntParamType | click.types.FloatParamType)
            words.append(draw(NUMBERS if numeric else VALUES))
        else:
            words.append(draw(VALUES))
    if path in WRITE_ANYWHERE:
        words = [w.replace("/", "_").replace("..", "__").lstrip("~") for w in words]
    return [*path, *words]


@settings(
    max_examples=300,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(argv=invocations())
@example(argv=["sessions", "list", "--offset", "9" * 40])  # past the index's integers
def test_no_command_prints_a_traceback(place: Path, argv: list[str]) -> None:
    _check(place, argv)


@pytest.mark.parametrize(
    "argv",
    [
        ["recent", "--days", "99999999999"],
        ["recent", "--days", "nan"],
        ["mcp", "--http", "--port", "99999"],
        ["mcp", "--http", "--port", "-1"],
        ["mcp", "install", "--port", "70000"],
        ["get", "\udcff"],
        ["new", "note", "caf\udce9"],
        ["learn", "zoo", "\udcff"],
        ["move", "notes/A.md", "\udcff.md", "--hash", "x"],
        ["search", "quokka", "--mode", "keyword", "--tag", "\udcff"],
    ],
)
def test_known_hostile_arguments_are_usage_errors(place: Path, argv: list[str]) -> None:
    cwd = os.getcwd()
    os.chdir(place / "home")
    try:
        result = CliRunner().invoke(main, [*_base(place), *argv], env=_env(place))
    finally:
        os.chdir(cwd)
    assert result.exit_code == 2, (argv, result.output, result.exception)
    assert "Traceback" not in result.output
