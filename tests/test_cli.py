"""The `vault` command line: output forms, exit codes, help, batch mode."""

from __future__ import annotations

import gc
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import click
import pytest
from click.testing import CliRunner, Result

from markvault.cli.app import COMMAND_MODULES
from markvault.cli.main import main

from .conftest import HIT_FIELDS, WriteNotes

COMMANDS = sorted(COMMAND_MODULES)


def run(vault: Path, *args: str, input: str | None = None) -> Result:
    runner = CliRunner()
    index = str(vault.parent / "index")
    return runner.invoke(main, ["--vault", str(vault), "--index", index, *args], input=input)


@pytest.fixture
def small(write: WriteNotes) -> Path:
    vault = write(
        {
            "notes/alpha.md": "---\nid: a1\ntags: [x]\n---\n# Alpha\n\n## Part\n\nquokka here",
            "notes/beta.md": "# Beta\n\nwombat and quokka",
            "knowledge/zoo/gamma.md": "# Gamma\n\n袋鼠 kangaroo",
        }
    )
    assert run(vault, "reindex", "--no-vectors").exit_code == 0
    return vault


def test_every_command_has_help_with_examples() -> None:
    runner = CliRunner()
    assert "Examples" in runner.invoke(main, ["--help"]).output
    for name in COMMANDS:
        result = runner.invoke(main, [name, "--help"])
        assert result.exit_code == 0, name
        assert "Examples:" in result.output, name


def test_every_command_is_in_the_readme() -> None:
    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")
    for name in COMMANDS:
        assert f"vault {name}" in readme, name


def test_search_json_shape(small: Path) -> None:
    result = run(small, "search", "quokka", "--mode", "keyword", "--json")
    assert result.exit_code == 0
    data = json.loads(result.output)
    assert set(data) >= {"query", "mode", "hits", "timings_ms"}
    assert data["mode"] == "keyword"
    hit = data["hits"][0]
    assert set(hit) >= HIT_FIELDS
    assert {h["path"] for h in data["hits"]} == {"notes/alpha.md", "notes/beta.md"}


def test_search_index_format(small: Path) -> None:
    result = run(small, "search", "quokka", "--mode", "keyword", "--path", "notes/alpha*")
    first, snippet = result.stdout.splitlines()[:2]
    assert first.startswith("#") and '| notes/alpha.md | "Alpha > Part" |' in first
    assert "**quokka**" in snippet


def test_exit_codes_and_messages(small: Path) -> None:
    assert run(small, "search", "nothingmatches", "--mode", "keyword").exit_code == 1
    bad = run(small, "search", "quokka", "--limit", "0")
    assert bad.exit_code == 2 and "limit must be" in bad.output
    missing = run(small, "get", "no/such.md")
    assert missing.exit_code == 3 and "No note" in missing.output
    assert run(small, "new", "note", "Alpha2").exit_code == 0
    dup = run(small, "new", "note", "Alpha2")
    assert dup.exit_code == 5 and "already exists" in dup.output
    for result in (bad, missing, dup):
        assert "Traceback" not in result.output


def test_get_note_chunk_and_lines(small: Path) -> None:
    note = json.loads(run(small, "get", "a1", "--json").output)
    assert note["path"] == "notes/alpha.md" and note["hash"]
    chunk_id = note["chunks"][0]["chunk_id"]
    chunk = json.loads(run(small, "get", f"#{chunk_id}", "--json").output)
    assert chunk["path"] == "notes/alpha.md"
    assert run(small, "get", "notes/alpha.md", "--lines", "5:5").stdout.strip() == "# Alpha"
    assert json.loads(run(small, "get", note["uri"], "--json").output)["id"] == "a1"


def test_edit_roundtrip(small: Path) -> None:
    h = json.loads(run(small, "get", "notes/beta.md", "--json").output)["hash"]
    done = run(small, "edit", "notes/beta.md", "--hash", h, "--append", "platypus", "--json")
    assert done.exit_code == 0 and json.loads(done.output)["changed"]
    stale = run(small, "edit", "notes/beta.md", "--hash", h, "--append", "again")
    assert stale.exit_code == 5
    assert json.loads(run(small, "search", "platypus", "--mode", "keyword", "--json").output)[
        "hits"
    ]


def test_batch_mode(small: Path) -> None:
    too_long = "x " * 2001
    lines = f'quokka\n{{"id": "q2", "query": "袋鼠"}}\n{{"id": "bad", "query": "{too_long}"}}\n'
    result = run(small, "search", "--batch", "-", "--mode", "keyword", input=lines)
    out = [json.loads(line) for line in result.stdout.splitlines()]
    assert len(out) == 3
    assert out[0]["hits"] and "id" not in out[0]
    assert out[1]["id"] == "q2" and out[1]["hits"][0]["path"] == "knowledge/zoo/gamma.md"
    assert out[2]["id"] == "bad" and "characters long" in out[2]["error"]


def test_status(small: Path) -> None:
    info = json.loads(run(small, "status", "--json").output)
    assert info["notes"] == 3 and info["by_kind"] == {"note": 2, "knowledge": 1}
    assert info["pending"] == {"new": 0, "changed": 0, "deleted": 0}
    (small / "notes" / "new.md").write_text("x", encoding="utf-8")
    assert json.loads(run(small, "status", "--json").output)["pending"]["new"] == 1
    text = run(small, "status").output
    assert "pending" in text
    # No owner runs here: the watcher and automatic sync say so, and how to start them.
    assert "watcher  none running (`vault watch`" in text
    assert "sync     automatic sync off (`[sync] auto = true`" in text
    assert info["watcher"] is None and info["autosync"] == {"on": False, "running": None}
    # A command other than status syncs a small change first (core/freshness.py).
    fresh = json.loads(run(small, "search", "quokka", "--mode", "keyword", "--json").stdout)
    assert not any("behind" in w for w in fresh["warnings"])
    assert json.loads(run(small, "status", "--json").output)["pending"]["new"] == 0


def test_new_note_from_template(small: Path) -> None:
    result = run(small, "new", "knowledge", "Kangaroos hop", "--topic", "zoo", "--tags", "a,b")
    path = Path(result.output.strip())
    assert path == small / "knowledge" / "zoo" / "Kangaroos hop.md"
    text = path.read_text(encoding="utf-8")
    assert "{{" not in text and 'title: "Kangaroos hop"' in text and "tags: [a, b]" in text
    assert run(small, "new", "knowledge", "No topic").exit_code == 2


def test_reindex_reports_skipped_files(small: Path) -> None:
    (small / "bad.md").write_bytes(b"\xff\xfe\x00binary")
    result = run(small, "reindex", "--no-vectors", "--json")
    assert result.exit_code == 1
    assert json.loads(result.output)["errors"][0]["path"] == "bad.md"


def test_vault_from_environment(small: Path) -> None:
    env = {"MARKVAULT_VAULT": str(small), "MARKVAULT_INDEX": str(small.parent / "index")}
    result = CliRunner().invoke(main, ["search", "wombat", "--mode", "keyword"], env=env)
    assert result.exit_code == 0 and "notes/beta.md" in result.output
    # A flag beats the environment (config.py's order); an empty variable is unset.
    away = {**env, "MARKVAULT_VAULT": str(small.parent / "nope"), "MARKVAULT_MODEL": ""}
    argv = ["--vault", str(small), "search", "wombat", "--mode", "keyword"]
    result = CliRunner().invoke(main, argv, env=away)
    assert result.exit_code == 0 and "notes/beta.md" in result.output
    result = CliRunner().invoke(main, ["status", "--json"], env=away)
    assert result.exit_code == 2 and "No vault folder" in result.output


def test_missing_vault_is_a_clear_error(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["--vault", str(tmp_path / "nope"), "status"])
    assert result.exit_code == 2 and "No vault folder" in result.output


# What a keyword search of a ready index never needs: the model, the sync (parsing,
# chunking, worker processes), the session pipeline, the writers, Arrow, numpy (the vector
# side's), the ignore rules' parser (no ignore file here), the watcher, the duckdb
# package around the engine (index/store.py says why), logging (only a listener's
# failure logs) and, in a vault without git, subprocess (GNU find is spawned directly:
# core/freshness.py).
NOT_FOR_KEYWORD_SEARCH = (
    "subprocess",
    "duckdb",
    "importlib.metadata",
    "logging",
    "torch",
    "numpy",
    "pathspec",
    "sentence_transformers",
    "onnxruntime",
    "pyarrow",
    "markdown_it",
    "multiprocessing",
    "watchfiles",
    "yaml",
    "markvault.indexing.reconcile",
    "markvault.indexing.note_reading",
    "markvault.markdown.parse",
    "markvault.sessions.transcript_reader",
    "markvault.sessions.session_note",
    "markvault.sessions.session_summary",
    "markvault.credentials.detection",
    "markvault.core.writing",
    "markvault.core.session_import",
    "markvault.core.session_notes",
    "markvault.core.context",
    "markvault.index.sessions",
    "markvault.answers",  # the faces' TypedDicts: annotations only in the core
    "typing_extensions",
    "secrets",
    "decimal",  # DuckDB imports it for a bound string: keys go in as literals
    # the values a keyword search never builds (a dataclass costs ~1 ms to define)
    "markvault.types.notes",
    "markvault.types.edits",
    "markvault.types.sessions",
    "markvault.types.reindex",
    "markvault.markdown.chunk",
    "markvault.indexing.feed_items",  # made when something is sent on the feed
    "markvault.search.time_expressions",  # a query without time words: one scan
    "markvault.cli.notes",  # the other commands' modules
    "markvault.cli.serve",
    "markvault.cli.sessions",
)
# `vault --help` opens no vault: no index layer, no DuckDB, no core.
# (It lists every command: their modules are loaded, and the values their options name.)
NOT_FOR_HELP = (
    *(
        m
        for m in NOT_FOR_KEYWORD_SEARCH
        if not m.startswith(("markvault.cli.", "markvault.types."))
    ),
    "_duckdb",
    "markvault.index",
    "markvault.core",
)


def _loaded_by_cli(args: list[str], modules: tuple[str, ...]) -> tuple[str, str]:
    """Run the console script's main with ``args`` in a new process: its output, and
    which of ``modules`` it imported (a line "LOADED=a,b" on stderr)."""
    code = (
        "import sys; from markvault.cli.main import main\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        f"heavy = {modules!r}\n"
        "print('LOADED=' + ','.join(m for m in heavy if m in sys.modules), file=sys.stderr)\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code, *args],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONWARNINGS": "ignore"},
        timeout=60,
        check=False,
    )
    return proc.stdout, proc.stderr


def test_keyword_search_process_imports_only_what_it_uses(small: Path) -> None:
    """The console script's keyword path stays light: no model, no sync, no sessions."""
    index = str(small.parent / "index")
    # Notes written within the timestamp window of the sync that recorded them are read
    # again by the next one (indexing/racy.py), which a search then runs: dated an hour
    # back and recorded again, the index is clean whatever the machine's speed.
    hour_ago = time.time() - 3600
    for note in small.rglob("*.md"):
        os.utime(note, (hour_ago, hour_ago))
    assert run(small, "reindex", "--no-vectors").exit_code == 0
    args = ["--vault", str(small), "--index", index, "search", "quokka", "--mode", "keyword"]
    out, err = _loaded_by_cli(args, NOT_FOR_KEYWORD_SEARCH)
    assert "notes/alpha.md" in out
    assert "LOADED=\n" in err, err


def test_a_search_in_the_callers_process_leaves_its_collector_on(small: Path) -> None:
    """A `vault search` process stops Python's cycle collector once its index is there
    (it ends with the answer); a caller running the command in its own process does not
    end with it, and keeps its collector."""
    assert run(small, "reindex", "--no-vectors").exit_code == 0
    assert run(small, "search", "quokka", "--mode", "keyword").exit_code == 0
    assert gc.isenabled()


def test_first_reindex_of_a_few_notes_imports_no_arrow(small: Path) -> None:
    """A new index's keyword rebuild at open has no chunks to insert: a first build of a
    few notes (rows go in as SQL literals) never imports pyarrow or numpy (~0.2 s)."""
    index = str(small.parent / "fresh-index")
    args = ["--vault", str(small), "--index", index, "reindex", "--no-vectors"]
    out, err = _loaded_by_cli(args, ("pyarrow", "numpy"))
    assert "added" in out, out + err
    assert "LOADED=\n" in err, err


def test_help_imports_no_index_layer() -> None:
    out, err = _loaded_by_cli(["--help"], NOT_FOR_HELP)
    assert "Examples" in out
    assert "LOADED=\n" in err, err


def test_move_delete_trash_restore(small: Path) -> None:
    note = json.loads(run(small, "get", "a1", "--json").output)
    moved = run(small, "move", "a1", "archive/", "--hash", note["hash"], "--json")
    assert moved.exit_code == 0, moved.output
    assert json.loads(moved.output)["path"] == "archive/alpha.md"
    stale = run(small, "delete", "a1", "--hash", "0" * 32)
    assert stale.exit_code == 5 and "changed since it was read" in stale.output
    gone = run(small, "delete", "a1", "--hash", note["hash"], "--json")
    trash_path = json.loads(gone.output)["trash_path"]
    assert (small / trash_path).is_file() and not (small / "archive/alpha.md").exists()
    listed = json.loads(run(small, "trash", "--json").output)
    assert [t["restores_to"] for t in listed] == ["archive/alpha.md"]
    back = run(small, "trash", "restore", trash_path)
    assert back.exit_code == 0 and (small / "archive/alpha.md").is_file()
    assert run(small, "search", "quokka", "--mode", "keyword", "--kind", "note").exit_code == 0


def test_a_rename_lists_the_links_it_left_pointing_nowhere(write: WriteNotes) -> None:
    """`vault move` to a new name lists each link elsewhere that named the old one, with
    the note it is in."""
    vault = write(
        {
            "notes/Old name.md": "# Old name\n",
            "notes/Linker.md": "# Linker\n\nSee [[Old name]].\n",
        }
    )
    note = json.loads(run(vault, "get", "notes/Old name.md", "--json").output)
    moved = run(
        vault, "move", "notes/Old name.md", "notes/New name.md", "--hash", note["hash"], "--json"
    )
    assert moved.exit_code == 0, moved.output
    assert json.loads(moved.output)["broken_links"] == [
        {"source": "notes/Linker.md", "line": 3, "target": "Old name"}
    ]


def test_get_of_several_names_what_the_size_budget_left_out(write: WriteNotes) -> None:
    """`vault get A B #C` where A fills the budget: the note and the chunk after it are
    named, not shown (a chunk by its ref: it has no path)."""
    vault = write(
        {
            "notes/long.md": "# Long\n\n" + "word " * 150 + "\n",
            "notes/short.md": "# Short\n\nshort text\n",
        }
    )
    short = json.loads(run(vault, "get", "notes/short.md", "--json").output)
    chunk = f"#{short['chunks'][0]['chunk_id']}"
    shown = run(vault, "get", "notes/long.md", "notes/short.md", chunk, "--max-chars", "500")
    assert shown.exit_code == 0, shown.output
    assert "notes/short.md  (not shown: over the size budget" in shown.output
    assert f"{chunk}  (not shown: over the size budget" in shown.output


def test_store_reads_hidden_files_only_when_asked(
    small: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`vault store ~/.aws/credentials.txt` is refused; a person may insist; a relative
    path is the caller's, whichever process owns the index."""
    monkeypatch.chdir(small.parent)
    (small.parent / "plain.md").write_text("# Plain\n\nA document.\n")
    assert json.loads(run(small, "store", "plain.md", "--json").output)["title"] == "Plain"
    hidden = small.parent / ".aws"
    hidden.mkdir()
    (hidden / "credentials.txt").write_text("[default]\nregion = eu-west-1\n")
    refused = run(small, "store", str(hidden / "credentials.txt"))
    assert refused.exit_code == 6 and "--allow-hidden" in refused.output
    assert not (small / "documents/credentials.md").exists()
    stored = run(small, "store", str(hidden / "credentials.txt"), "--allow-hidden", "--json")
    assert json.loads(stored.output)["path"] == "documents/credentials.md"


def test_knowledge_and_context_commands(small: Path) -> None:
    learned = run(small, "learn", "zoo", "-", "--tags", "x", input="Numbats eat termites.\n")
    assert learned.exit_code == 0 and "knowledge/zoo/Numbats eat termites.md" in learned.output
    (small.parent / "doc.txt").write_text("A plain text document about platypus.")
    stored = run(small, "store", str(small.parent / "doc.txt"), "--topic", "zoo", "--json")
    assert json.loads(stored.output)["path"] == "documents/zoo/doc.md"
    not_text = run(small, "store", "/etc/hostname")  # any ordinary path, but text only
    assert not_text.exit_code == 6 and "not a Markdown, text or JSON file" in not_text.output
    topics = json.loads(run(small, "topics", "--json").output)
    assert topics[0]["topic"] == "zoo" and topics[0]["documents"] == 1
    recent = json.loads(run(small, "recent", "--days", "1", "--json").output)
    assert recent["total"] == 5
    timeline = run(small, "timeline", "-q", "platypus", "--json")
    assert json.loads(timeline.output)["anchor"]["note"]["path"] == "documents/zoo/doc.md"
    assert run(small, "timeline").exit_code == 2
    assert run(small, "related", "a1", "--json").exit_code == 0
    unlinked = run(small, "related", "a1", "--to", "notes/beta.md")
    assert unlinked.exit_code == 1 and "No chain of links" in unlinked.output
    shape = json.loads(run(small, "map", "--json").output)
    assert shape["orphan_count"] == 5
    several = json.loads(run(small, "get", "a1", "notes/beta.md", "--json").output)
    assert [n["path"] for n in several["notes"]] == ["notes/alpha.md", "notes/beta.md"]
    assert run(small, "get").exit_code == 2


def test_titles_and_topics_that_yaml_would_misread(small: Path) -> None:
    """Quotes, backslashes, ': ', '#', 'true' and numbers stay text in the frontmatter."""
    made = run(
        small,
        "new",
        "knowledge",
        'Say "hi": C:\\temp #1',
        "--topic",
        "c#: 2024",
        "--tags",
        "true,a b",
    )
    assert made.exit_code == 0, made.output
    rel = Path(made.output.strip()).relative_to(small).as_posix()
    note = json.loads(run(small, "get", rel, "--json").output)
    assert note["title"] == 'Say "hi": C:\\temp #1'
    assert note["metadata"]["topic"] == "c#: 2024" and note["tags"] == ["true", "a b"]


def test_deep_search_from_the_command_line(small: Path) -> None:
    result = run(
        small, "search", "quokka", "--mode", "deep", "--variant", "lex: kangaroo", "--json"
    )
    data = json.loads(result.output)
    assert data["mode"] == "deep" and {"keyword", "v1:keyword"} <= set(data["counts"])
    assert {h["path"] for h in data["hits"]} == {
        "notes/alpha.md",
        "notes/beta.md",
        "knowledge/zoo/gamma.md",
    }


def test_each_command_is_found_in_the_modules_the_group_imports_for_it() -> None:
    """``COMMAND_MODULES`` (a command imports only its own modules) names every command
    the modules register, each with the module that defines it."""
    import importlib

    for module in {m for mods in COMMAND_MODULES.values() for m in mods}:
        importlib.import_module(f"markvault.cli.{module}")
    registered = {name: cmd.callback.__module__ for name, cmd in main.commands.items()}
    assert set(registered) == set(COMMAND_MODULES)
    for name, module in registered.items():
        assert module.removeprefix("markvault.cli.") == COMMAND_MODULES[name][0], name
    listed = main.list_commands(click.Context(main))
    assert listed == sorted(COMMAND_MODULES)
