"""The forgiving keyword query language: any text is a query, syntax only where meant.

Unit tests of the parse on the queries that used to be refused, and a property test
that neither `vault search` nor the MCP search tool ever fails on any query text.
"""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mcp import Client

from markvault import Vault
from markvault.cli.main import main
from markvault.search.query import parse
from markvault.server.tools import build_server
from markvault.types.search import SearchRequest

from .conftest import OpenVault, WriteNotes

NOTES: dict[str, str | bytes] = {
    "1.md": "red apple pie recipe",
    "2.md": "green apple juice",
    "3.md": "apple pie crust",
    "4.md": "pie chart of data",
    "5.md": "# Text formatting\n\nWhat you see is what you get: WYSIWYG. EL/1, O'Brien.",
}


@pytest.fixture
def notes() -> dict[str, str | bytes]:
    return NOTES


# ---- the parse ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "query",
    [
        "I'm especially interested in \"heuristics, and don't care",  # an odd quote
        "EL1 (EL1 may be given as EL/1; or as EL 1",  # an unclosed parenthesis
        "EL1) what ) about ((this",
        "a AND",
        "AND b",
        "OR",
        "x -5 --verbose -",
        '5" pipe and 6" pipe',  # inch marks are not quotes
    ],
)
def test_invalid_syntax_is_read_as_words(query: str) -> None:
    plan = parse(query)
    assert not plan.constrained and not plan.empty
    assert not plan.narrowing()


def test_apostrophes_are_never_quotes() -> None:
    plan = parse("I'm sure O'Brien's notes don't say \"what you see\"")
    assert plan.narrowing() == ['"what you see"']
    assert "brien" in plan.terms


def test_named_examples() -> None:
    unclosed = parse("I'm especially interested in \"heuristics")
    assert unclosed.terms == ["especi", "interest", "heurist"]
    paren = parse("EL1 (EL1 may be given as EL/1; or")
    assert paren.terms == ["el1", "el1", "may", "given", "el", "1"]
    # A balanced phrase is honoured: matched as written, ranked by its content words.
    phrase = parse('Articles on "what you see is what you get" systems')
    assert phrase.constrained and phrase.narrowing() == ['"what you see is what you get"']
    assert phrase.terms == ["articl", "see", "get", "system"]


def test_syntax_is_honoured_where_clearly_meant() -> None:
    assert parse("cache AND redis").narrowing() == ["cache", "redis"]
    assert parse("cache OR redis").narrowing() == []
    assert parse("cache -redis").constrained and parse("cache -redis").terms == ["cach"]
    assert parse("cache NOT redis").terms == ["cach"]
    assert parse("embed*").prefixes == ["embed"]
    assert parse('x -"a b"').constrained
    # Written all in capitals, AND is a word (a shouted question is not an operator).
    assert not parse("CACHE AND REDIS").constrained
    # Parentheses of prose change nothing: a group of optional words is those words.
    assert not parse("TSS (Time Sharing System)").constrained


@pytest.mark.parametrize("query", ["", "   ", "()", '""', "-only", "NOT only", "*", "- ( ) -"])
def test_nothing_to_look_for_is_an_empty_plan(query: str) -> None:
    assert parse(query).empty


# ---- searching -------------------------------------------------------------------------


def test_a_phrase_or_and_that_matches_nothing_falls_back_to_its_words(vault: Vault) -> None:
    result = vault.search(SearchRequest('"pie apple"', mode="keyword"))
    assert {h.path for h in result.hits} == {"1.md", "2.md", "3.md", "4.md"}
    assert result.relaxed and result.to_json()["relaxed"] is True
    assert any('"pie apple"' in w for w in result.warnings)
    anded = vault.search(SearchRequest("juice AND crust", mode="keyword"))
    assert {h.path for h in anded.hits} == {"2.md", "3.md"} and anded.relaxed
    # Exclusions are not relaxed: what the user removed stays removed.
    assert {
        h.path for h in vault.search(SearchRequest('"pie apple" -juice', mode="keyword")).hits
    } == {
        "1.md",
        "3.md",
        "4.md",
    }
    # A phrase that matches is honoured, and not reported as relaxed.
    exact = vault.search(SearchRequest('"what you see is what you get"', mode="keyword"))
    assert [h.path for h in exact.hits] == ["5.md"] and not exact.relaxed


def test_more_syntax_than_a_person_writes_is_read_as_words(vault: Vault) -> None:
    """Pasted code or logs carry operators, quotes and dashes by the dozen: past
    ``MAX_SYNTAX`` the query is its words, all optional, and the result says so; up to
    it, every operator counts."""
    from markvault.search.query import MAX_SYNTAX

    held = " ".join(["-juice", '"pie chart"', "apple AND pie"] + ["-x"] * (MAX_SYNTAX - 4))
    plan = parse(held)
    assert plan.constrained and not plan.pasted
    pasted = held + " -crust"  # one more than MAX_SYNTAX
    plan = parse(pasted)
    assert plan.pasted == MAX_SYNTAX + 1 and not plan.constrained
    assert {"juic", "crust", "pie", "chart", "appl"} <= set(plan.terms)
    # The embedding model reads the words as written, syntax left out.
    assert plan.text.split()[:4] == ["juice", "pie", "chart", "apple"]
    result = vault.search(SearchRequest(pasted, mode="keyword"))
    assert {h.path for h in result.hits} >= {"2.md", "3.md"}  # excluded words are words now
    assert any("read as plain words" in w for w in result.warnings)
    code = 'def f(a: int = 1) -> "x":  # a AND b OR NOT -c\n' * 20
    assert parse(code).pasted and not parse(code).constrained


def test_a_pasted_page_looks_up_its_most_repeated_terms() -> None:
    from markvault.search.query_cost import MAX_LOOKUP, looked_up

    short = ["a", "b", "a"]
    assert looked_up(short) == short
    many = [f"t{i}" for i in range(MAX_LOOKUP + 10)] + ["t5", "t7", "t5"]
    kept = looked_up(many)
    assert len(set(kept)) == MAX_LOOKUP
    assert kept.count("t5") == 3 and kept.count("t7") == 2  # repeats first, then the first written
    assert f"t{MAX_LOOKUP + 9}" not in kept and "t0" in kept
    chinese = "".join(chr(0x4E00 + i) for i in range(4000))
    assert len(set(parse(chinese).terms)) == MAX_LOOKUP


def test_a_query_with_nothing_to_look_for_finds_nothing_and_says_why(vault: Vault) -> None:
    result = vault.search(SearchRequest("-apple", mode="keyword"))
    assert result.hits == [] and "no word to search for" in result.warnings[0]


# ---- never fails: the CLI and the MCP tool ---------------------------------------------

_PIECES = st.sampled_from(
    [
        '"', "'", "(", ")", "-", "--", "*", "AND", "OR", "NOT", "apple", "pie", "I'm",
        "O'Brien", "don't", '5"', '-"', '")', "…", "“", "”", "EL/1;", ":", "\\", "%", "_",
        "{", "}", "[", "]", "~", "^", "+", "|", "&&", "||", "!", "?", "$", "'\"'", "\t", "\n",
        "机器学习", "Größe", "-apple", "pie*", "*pie", "NOT(", "AND)", "\x00", "\u200b",
    ]
)  # fmt: skip
_QUERIES = st.lists(st.one_of(_PIECES, st.text(max_size=6)), min_size=1, max_size=40).flatmap(
    lambda parts: st.lists(
        st.sampled_from(["", " ", "  "]), min_size=len(parts), max_size=len(parts)
    ).map(lambda gaps: "".join(p + g for p, g in zip(parts, gaps, strict=True)))
)


@pytest.fixture
def indexed(write: WriteNotes, open_vault: OpenVault) -> Path:
    vault_dir = write(NOTES)
    v = open_vault()
    v.reindex(vectors=False)
    v.close()
    return vault_dir


@settings(
    max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(queries=st.lists(_QUERIES, min_size=1, max_size=4))
def test_vault_search_never_fails_on_any_query(indexed: Path, queries: list[str]) -> None:
    """Hybrid mode on an index without vectors: the keyword side, then the vector side
    skipped with a warning. ``--`` ends the options, as a shell user writes before a
    query that starts with "-"."""
    runner = CliRunner()
    index = str(indexed.parent / "index")
    for typed in queries:
        # A command line cannot carry a NUL (the kernel ends an argument there; the CLI
        # refuses one as a usage error): a person types what comes before it.
        query = typed.split("\x00", 1)[0]
        if not query:
            continue  # `vault search ""` is no query given: a usage error of the command
        args = ["--vault", str(indexed), "--index", index, "search", "--json", "--", query]
        result = runner.invoke(main, args)
        assert result.exit_code in (0, 1), (query, result.output)
        assert "Traceback" not in result.output
        assert isinstance(json.loads(result.stdout)["hits"], list)


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(queries=st.lists(_QUERIES, min_size=1, max_size=8))
def test_the_mcp_search_tool_never_fails_on_any_query(vault: Vault, queries: list[str]) -> None:
    async def check() -> None:
        async with Client(build_server(vault)) as client:
            for query in queries:
                for mode in ("keyword", "hybrid"):
                    done = await client.call_tool("search", {"query": query, "mode": mode})
                    assert not done.is_error, (query, done.content)

    anyio.run(check)
