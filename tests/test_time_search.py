"""Time words in a search (issue 33): notes dated in the window the query names rank
first, nothing is filtered out, and the result says which window it read; through the
facade, the CLI (``--at``) and the MCP tool (``as_of``)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import anyio
import pytest
from click.testing import CliRunner
from mcp import Client

from markvault import UsageError, Vault
from markvault.cli.main import main
from markvault.server.tools import build_server
from markvault.types.search import SearchRequest

from .conftest import OpenVault, WriteNotes

ASKED = "2026-03-12"  # a Thursday: "last Tuesday" is 2026-03-10


def session(day: str, text: str) -> str:
    return f"---\nkind: session\ncreated: {day}\n---\n# Chat of {day}\n\n## Transcript\n\n{text}\n"


FILLER = " We also talked about lunch, the weather, new office chairs and the team offsite." * 3

# Every session talks about the deploy; most more often than the one of each window.
SESSIONS: dict[str, str | bytes] = {
    **{
        f"sessions/{day}.md": session(
            day, "We decided the deploy plan. The deploy needs a decision on the deploy freeze."
        )
        for day in ("2026-03-02", "2026-03-04", "2026-03-06", "2026-03-09", "2026-03-11")
    },
    "sessions/2026-03-10.md": session(
        "2026-03-10", "Decided: the deploy waits for QA, and so does the deploy plan." + FILLER
    ),
    "sessions/2026-02-25.md": session(
        "2026-02-25", "The deploy moved to Friday: the deploy plan changed. Lunch was late."
    ),
    # The time words themselves, but another day: they must not win by keyword.
    "sessions/2026-01-20.md": session(
        "2026-01-20", "Last Tuesday, last Tuesday, the deploy last Tuesday: we decided."
    ),
    # A note dated by the frontmatter key people use.
    "notes/retro.md": (
        "---\ndate: 2026-03-10\n---\n# Retro\n\nWhat we decided in the deploy retro."
        + FILLER
        + "\n"
    ),
}


@pytest.fixture
def dated(write: WriteNotes, open_vault: OpenVault) -> Vault:
    write(SESSIONS)
    v = open_vault()
    v.reindex(vectors=False)
    return v


def ids(v: Vault, query: str, **kw: object) -> list[str]:
    return [h.path for h in v.search(SearchRequest(query, mode="keyword", **kw)).hits]  # type: ignore[arg-type]


def test_the_window_named_ranks_first_and_is_reported(dated: Vault) -> None:
    plain = dated.search(
        SearchRequest("what did we decide about the deploy", mode="keyword", limit=20)
    )
    assert plain.time is None
    assert plain.hits[0].path != "sessions/2026-03-10.md"  # the window is what moves it

    result = dated.search(
        SearchRequest(
            "what did we decide about the deploy last Tuesday",
            mode="keyword",
            limit=20,
            as_of=ASKED,
        )
    )
    assert result.time == {
        "text": "last Tuesday",
        "start": "2026-03-10",
        "end": "2026-03-10",
        "asked_at": ASKED,
    }
    # The two notes of that day (one dated by its frontmatter `date`) come first.
    assert {h.path for h in result.hits[:2]} == {"sessions/2026-03-10.md", "notes/retro.md"}
    assert [h.scores["time"] for h in result.hits[:2]] == [1.0, 1.0]
    # A soft signal, not a filter: every note the words find is still there.
    assert {h.path for h in result.hits} == {h.path for h in plain.hits}
    assert result.to_json()["time"]["start"] == "2026-03-10"


def test_time_words_are_not_searched_as_words(dated: Vault) -> None:
    """A note that says "last Tuesday" three times, written another day, gains nothing
    from those words."""
    found = ids(dated, "what did we decide about the deploy last Tuesday", as_of=ASKED)
    assert set(found[:2]) == {"sessions/2026-03-10.md", "notes/retro.md"}
    # From 2026-02-01, "last Tuesday" is 2026-01-27: no note of that day.
    assert ids(dated, "the deploy last Tuesday", as_of="2026-02-01")[0] != (
        "sessions/2026-01-20.md"
    )


@pytest.mark.parametrize(
    ("words", "expected"),
    [
        ("two weeks ago", "sessions/2026-02-25.md"),
        ("in February", "sessions/2026-02-25.md"),
        ("on 2026-02-25", "sessions/2026-02-25.md"),
        ("yesterday", "sessions/2026-03-11.md"),
    ],
)
def test_other_windows(dated: Vault, words: str, expected: str) -> None:
    assert ids(dated, f"the deploy {words}", as_of=ASKED)[0] == expected


def test_asked_at_defaults_to_today_and_must_be_a_date(dated: Vault) -> None:
    result = dated.search(SearchRequest("deploy yesterday", mode="keyword"))
    assert result.time is not None and result.time["asked_at"] is not None
    with pytest.raises(UsageError) as bad:
        dated.search(SearchRequest("deploy yesterday", mode="keyword", as_of="last week"))
    assert "ISO" in (bad.value.hint or "")


def test_a_phrase_is_searched_as_written(dated: Vault) -> None:
    result = dated.search(SearchRequest('"deploy last Tuesday"', mode="keyword", as_of=ASKED))
    assert result.time is None
    assert result.hits[0].path == "sessions/2026-01-20.md"


def test_cli_at_and_json(dated: Vault, vault_dir: Path) -> None:
    dated.close()
    index = str(vault_dir.parent / "index")
    base = ["--vault", str(vault_dir), "--index", index, "search"]
    runner = CliRunner()
    query = "what did we decide about the deploy last Tuesday"
    out = runner.invoke(main, [*base, query, "--mode", "keyword", "--at", ASKED, "--json"])
    assert out.exit_code == 0, out.output
    data = json.loads(out.stdout)
    assert data["time"]["start"] == "2026-03-10"
    assert data["hits"][0]["path"] in {"sessions/2026-03-10.md", "notes/retro.md"}
    text = runner.invoke(main, [*base, "deploy last Tuesday", "--mode", "keyword", "--at", ASKED])
    assert "'last Tuesday' = 2026-03-10" in text.stderr
    bad = runner.invoke(main, [*base, "deploy", "--at", "someday"])
    assert bad.exit_code != 0 and "ISO" in bad.output + bad.stderr
    assert "Traceback" not in bad.output + bad.stderr


@pytest.mark.anyio
async def test_mcp_search_takes_as_of(dated: Vault) -> None:
    with anyio.fail_after(60):
        async with Client(build_server(dated)) as client:
            result = await client.call_tool(
                "search",
                {"query": "deploy last Tuesday", "mode": "keyword", "as_of": ASKED},
            )
            text = result.content[0].text
            assert not result.is_error, text
            assert "time: 'last Tuesday' = 2026-03-10" in text
            full = await client.call_tool(
                "search",
                {
                    "query": "deploy last Tuesday",
                    "mode": "keyword",
                    "as_of": ASKED,
                    "format": "full",
                },
            )
            data = json.loads(full.content[0].text)
            assert data["time"]["asked_at"] == ASKED


UPDATED: dict[str, str | bytes] = {
    "notes/Invoice PDFs.md": (
        "---\ncreated: 2026-02-10\n---\n# Invoice PDFs\n\n"
        "The invoices use the Inter font. Font size 10 pt; the font file is in billing/.\n"
    ),
    "sessions/2026-02-20.md": session("2026-02-20", "The invoice totals were rounded wrong."),
    "sessions/2026-03-05.md": session(
        "2026-03-05", "We switched the invoice font to IBM Plex Sans: invoices use it."
    ),
}


def test_now_ranks_the_newest_matching_note_up_and_says_so(
    write: WriteNotes, open_vault: OpenVault
) -> None:
    """A value a later session changed: "now" lifts that session above the note that
    first held the value; without it, the note's words win. Nothing is filtered out."""
    write(UPDATED)
    v = open_vault()
    v.reindex(vectors=False)
    assert ids(v, "which font do the invoices use", as_of=ASKED)[0] == "notes/Invoice PDFs.md"
    result = v.search(SearchRequest("which font do the invoices use now", mode="keyword"))
    assert [h.path for h in result.hits][:2] == ["sessions/2026-03-05.md", "notes/Invoice PDFs.md"]
    assert result.time is not None and result.time["newest"] is True
    assert result.time["text"] == "now" and result.time["start"] is None
    # "currently" reads the same; a named day says more than "now" does.
    assert ids(v, "which font do the invoices currently use")[0] == "sessions/2026-03-05.md"
    named = v.search(SearchRequest("invoice font now, since February 1", mode="keyword"))
    assert named.time is not None and "newest" not in named.time


def test_now_moves_nothing_where_the_notes_share_one_day(
    write: WriteNotes, open_vault: OpenVault
) -> None:
    write({p: re.sub(r"created: [0-9-]+", "created: 2026-03-05", t) for p, t in UPDATED.items()})
    v = open_vault()
    v.reindex(vectors=False)
    plain = v.search(SearchRequest("which font do the invoices use", mode="keyword"))
    now = v.search(SearchRequest("which font do the invoices use now", mode="keyword"))
    assert [h.path for h in now.hits] == [h.path for h in plain.hits]
    assert [h.score for h in now.hits] == [h.score for h in plain.hits]
