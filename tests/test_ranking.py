"""Keyword ranking: the query's language, its function words, repeated terms."""

from __future__ import annotations

import datetime as dt

import pytest

from markvault.config import DEFAULT_MODEL
from markvault.index import bm25
from markvault.markdown.tokens import normalize, word_tokens
from markvault.search import language, query
from markvault.sessions import turns
from markvault.sessions.session import Event, Session
from markvault.sessions.session_note import render_transcript
from markvault.types.search import Filters, SearchRequest

from .conftest import OpenVault, WriteNotes


def words(text: str) -> list[str]:
    return [w for w, _ in word_tokens(text)]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("what articles are there on the use of computers in banking", "en"),
        ("Lo más apreciado es el socarrat, la capa de arroz que queda pegada al fondo", "es"),
        ("Poi l'impasto deve riposare almeno mezz'ora avvolto nella pellicola", "it"),
        ("Die Straße ist für Fußgänger gesperrt, aber nicht für Fahrräder", "de"),
        ("Les vendangeurs commencent tôt le matin, avant que la chaleur ne monte", "fr"),
        # Too little evidence to name a language: one function word, or none.
        ("die hard", None),
        ("duckdb fts rebuild", None),
        ("the index", None),
    ],
)
def test_language_from_function_words(text: str, expected: str | None) -> None:
    assert language.detect(words(text)) == expected


def test_stop_words_are_folded_like_text() -> None:
    assert normalize("más") in language.stopwords("es")
    assert "what" in language.stopwords("en") and "would" in language.stopwords("en")


def test_a_long_question_ranks_by_its_content_words() -> None:
    plan = query.parse("What articles are there on the use of computers in banking?")
    assert plan.terms == ["articl", "use", "comput", "bank"]
    assert plan.language == "en"
    # The embedding model still reads the whole question.
    assert plan.text.startswith("What articles are there")


def test_repeated_words_are_kept_and_function_words_only_when_nothing_else() -> None:
    assert query.parse("parallel sorting and parallel merging").terms == [
        "parallel",
        "sort",
        "parallel",
        "merg",
    ]
    assert query.parse("the who").terms == ["the", "who"]
    # A phrase keeps its words; so does a required one.
    assert query.parse('"to be or not to be" hamlet').terms[:2] == ["to", "be"]
    assert "the" in query.parse("the AND index").terms


def test_spanish_function_words_are_dropped_by_spanish_rules() -> None:
    plan = query.parse("la capa de arroz que queda pegada al fondo")
    assert plan.language == "es"
    assert "la" not in plan.terms and "que" not in plan.terms and "arroz" in plan.terms


@pytest.mark.parametrize(
    ("model", "text", "lang", "reads"),
    [
        (DEFAULT_MODEL, "how to rebuild the index", "en", True),
        (DEFAULT_MODEL, "duckdb", None, True),
        (DEFAULT_MODEL, "la capa de arroz que queda pegada al fondo", "es", False),
        (DEFAULT_MODEL, "机器学习是人工智能的一个分支", None, False),
        ("/models/multilingual-e5-small", "la capa de arroz que queda pegada", "es", True),
        ("/models/multilingual-e5-small", "机器学习是人工智能的一个分支", None, True),
    ],
)
def test_which_queries_the_model_reads(
    model: str, text: str, lang: str | None, reads: bool
) -> None:
    assert language.model_reads(model, text, lang) is reads


def test_a_repeated_query_word_weighs_as_often_as_it_is_asked(
    write: WriteNotes, open_vault: OpenVault
) -> None:
    write({"a.md": "# one\n\nalpha notes here\n", "b.md": "# two\n\nbeta notes here\n"})
    v = open_vault()
    v.reindex(vectors=False)
    once = {h.path: h.score for h in v.search(SearchRequest("alpha beta", mode="keyword")).hits}
    assert once["a.md"] == pytest.approx(once["b.md"])
    twice = v.search(SearchRequest("alpha beta beta", mode="keyword")).hits
    assert [h.path for h in twice] == ["b.md", "a.md"]
    assert twice[0].score == pytest.approx(2 * twice[1].score)


def test_note_frequencies_kept_in_place_equal_a_rebuild(
    write: WriteNotes, open_vault: OpenVault
) -> None:
    """vocab.ndf (notes holding a term) is kept up to date edit by edit, like df."""
    write({"a.md": "# a\n\nalpha beta\n\n## two\n\nalpha\n", "b.md": "# b\n\nbeta gamma\n"})
    v = open_vault()
    v.reindex(vectors=False)
    write({"b.md": "# b\n\nalpha alpha\n\n## more\n\nalpha delta\n", "c.md": "# c\n\ngamma\n"})
    v.reindex(vectors=False)
    index = v.host.core().keeper.open_index(write=True)
    assert not index.keyword.dirty()
    query = "SELECT term, df, ndf FROM vocab ORDER BY term"
    in_place = index.store.con.execute(query).fetchall()
    index.keyword.rebuild()
    assert index.store.con.execute(query).fetchall() == in_place
    assert dict((t, n) for t, _, n in in_place)["alpha"] == 2  # in a.md and b.md


def test_a_note_is_ranked_by_all_its_chunks_and_shows_its_best(
    write: WriteNotes, open_vault: OpenVault
) -> None:
    """Evidence spread over a note's sections counts: a session whose turns mention the
    words one each outranks a note that names one of them once, and the hit shows the
    chunk that matches best."""
    write(
        {
            "session.md": "# Maya and Tom\n\n## 19:02 Maya\n\nWe adopted a beagle.\n\n"
            "## 19:03 Tom\n\nA puppy! What is her name?\n\n## 19:04 Maya\n\n"
            "Biscuit, from the shelter on Elm Street.\n",
            "other.md": "# Beagles\n\nThe beagle is a small hound.\n",
        }
    )
    v = open_vault()
    v.reindex(vectors=False)
    hits = v.search(SearchRequest("beagle puppy shelter Biscuit", mode="keyword")).hits
    assert [h.path for h in hits] == ["session.md", "other.md"]
    assert hits[0].heading_path[-1] == "19:04 Maya"


def test_query_terms_are_sql_literals_that_cannot_break_out(
    write: WriteNotes, open_vault: OpenVault
) -> None:
    """term_ids puts terms into its SQL as literals (parameters cost a pandas import
    attempt each): a quote in a term is a character, never the end of the string."""
    write({"a.md": "# a\n\nalpha\n"})
    v = open_vault()
    v.reindex(vectors=False)
    index = v.host.core().keeper.open_index(write=False)
    found = index.keyword.term_ids(["alpha", "it's", "x') OR 1=1 --", "''"])
    assert set(found) == {"alpha"}


@pytest.mark.parametrize(
    ("heading_path", "said"),
    [
        (("Fix the build", "Transcript", "14:05 User"), True),
        (("Fix the build", "Transcript", "2026-03-02 09:10 User"), True),  # a later day
        (("Fix the build", "Transcript", "User"), True),  # no time
        (("Fix the build", "Transcript", "14:06 Assistant"), False),
        (("Fix the build", "Transcript", "14:07 Context compacted"), False),
        (("Notes", "User"), False),  # not a transcript
        (("Fix the build", "Transcript", "14:05 User feedback"), False),
        (("Fix the build", "Transcript", "١٤:٠٥ User"), False),  # never written so
        ((), False),
    ],
)
def test_a_user_turn_is_read_from_its_heading(heading_path: tuple[str, ...], said: bool) -> None:
    assert turns.is_user_turn(heading_path) is said


def test_the_transcript_writer_and_the_reader_agree() -> None:
    """Every heading render_transcript writes over a prompt reads back as a user turn,
    and no other."""
    day = dt.datetime(2026, 3, 1, 14, 5, tzinfo=dt.UTC)
    events = (
        Event("prompt", day, "fix the build"),
        Event("text", day + dt.timedelta(minutes=1), "Done."),
        Event("prompt", day + dt.timedelta(days=1), "and the docs"),
        Event("text", None, "Done too."),
        Event("prompt", None, "thanks"),
    )
    session = Session("s1", "proj", "/work", "main", day, None, 3, (), {}, (), (), events)
    text = render_transcript(session)
    headings = [line[4:] for line in text.splitlines() if line.startswith("### ")]
    said = [turns.is_user_turn(("Title", turns.TRANSCRIPT, h)) for h in headings]
    assert said == [True, False, True, False, True], headings


def _session(title: str, user: str, assistant: str) -> str:
    """A session note as sessions.render_transcript writes one."""
    return (
        f"---\nkind: session\n---\n# {title}\n\n## Transcript\n\n"
        f"### 10:00 User\n\n> {user}\n\n### 10:01 Assistant\n\n> {assistant}\n"
    )


USER_SAID = {
    # The person's own fact, in their turn.
    "sessions/said.md": _session(
        "Weekend plans",
        "I adopted a beagle named Biscuit from the Elm Street shelter.",
        "Congratulations! Puppies need a routine: meals, walks and sleep at set times.",
    ),
    # The same words, a little more of them, in the assistant's answer to a question.
    "sessions/answered.md": _session(
        "Dog names",
        "What are popular names for a dog?",
        "Popular names include Biscuit, Max and Luna. A beagle from a shelter often "
        "keeps the shelter's name: Elm Street's shelter named a beagle Biscuit.",
    ),
    "notes/beagles.md": "# Beagles\n\nThe beagle is a small scent hound.\n",
}


MIXED = {
    # What the person wrote down by hand: the fact asked for.
    "notes/staging.md": "# Staging database\n\nThe staging Postgres we share with the "
    "billing team.\n\n## Facts\n\n- It listens on port 5433, through the bastion host.\n"
    "- Nightly snapshots are kept for 14 days.\n",
    # Sessions on the same topic, whose user turns name it again and again.
    **{
        f"sessions/staging-{n}.md": _session(
            f"Staging {n}",
            f"Why would {task} take so long on the staging Postgres?",
            f"{task.capitalize()} on a staging database is slow when the tables are "
            "large; a connection pooler in front of the staging database helps, and so "
            "does a port of the settings from production.",
        )
        for n, task in enumerate(["vacuum", "a migration", "a restore"])
    },
}


@pytest.mark.parametrize("weight", [bm25.USER_TURN_WEIGHT, 0.0], ids=["weighed", "not"])
def test_what_the_user_said_outranks_the_same_words_in_an_answer(
    write: WriteNotes, open_vault: OpenVault, monkeypatch: pytest.MonkeyPatch, weight: float
) -> None:
    """A session's user turns count on their own (index/bm25.py): the session where the
    person said it ranks above one whose assistant turn holds a little more of the same
    words, which wins when user turns are not weighed; a note that matches one word
    stays below both."""
    monkeypatch.setattr(bm25, "USER_TURN_WEIGHT", weight)
    write(USER_SAID)
    v = open_vault()
    v.reindex(vectors=False)
    hits = v.search(SearchRequest("beagle Biscuit Elm Street shelter", mode="keyword")).hits
    order = [h.path for h in hits]
    if weight:
        assert order[:2] == ["sessions/said.md", "sessions/answered.md"]
    else:
        assert order[:2] == ["sessions/answered.md", "sessions/said.md"]
    assert order[2] == "notes/beagles.md"


@pytest.mark.parametrize(
    ("notes", "query", "best"),
    [
        (USER_SAID, "beagle Biscuit Elm Street shelter", "sessions/said.md"),
        (MIXED, "which port do I use to reach the staging postgres", "notes/staging.md"),
    ],
    ids=["sessions", "notes-and-sessions"],
)
def test_user_turns_weigh_alike_on_every_scoring_path(
    write: WriteNotes, open_vault: OpenVault, notes: dict[str, str], query: str, best: str
) -> None:
    """A first search (SQL, the pool read with the scores), a warm one (numpy, the
    chunks' notes looked up, then kept as arrays) and a filtered one (the pool read on
    its own) know the same user turns and the same transcripts: the same hits with the
    same scores."""
    write(notes)
    v = open_vault()
    v.reindex(vectors=False)
    keyword = v.host.core().keeper.open_index(write=True).keyword
    runs = []
    for arrays in (False, True, True):
        keyword.arrays = arrays
        runs.append(v.search(SearchRequest(query, mode="keyword")).hits)
    runs.append(
        v.search(
            SearchRequest(query, mode="keyword", filters=Filters(kinds=["session", "note"]))
        ).hits
    )
    first = [(h.path, h.chunk_id) for h in runs[0]]
    assert first[0] == (best, first[0][1])
    for hits in runs[1:]:
        assert [(h.path, h.chunk_id) for h in hits] == first
        assert [h.score for h in hits] == pytest.approx([h.score for h in runs[0]], abs=1e-9)


SHELTER_NOTES = {
    "notes/beagles.md": "# Beagles\n\nA beagle named Biscuit came from the Elm "
    "Street shelter; the beagle is a scent hound.\n",
    "notes/shelters.md": "# Shelters\n\nThe Elm Street shelter takes in dogs.\n",
}


def test_a_vault_without_sessions_scores_as_if_nothing_were_weighed(
    write: WriteNotes, open_vault: OpenVault, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With no user turn among the candidates, the weight of the person's words does not
    apply: every score is exactly the one without it (index/bm25.py)."""
    write(SHELTER_NOTES)
    v = open_vault()
    v.reindex(vectors=False)
    query = SearchRequest("beagle Biscuit Elm Street shelter hound", mode="keyword")
    weighed = [(h.path, h.score) for h in v.search(query).hits]
    monkeypatch.setattr(bm25, "USER_TURN_WEIGHT", 0.0)
    plain = [(h.path, h.score) for h in v.search(query).hits]
    assert [p for p, _ in weighed] == ["notes/beagles.md", "notes/shelters.md"]
    assert weighed == [(p, pytest.approx(s, abs=1e-12)) for p, s in plain]


def test_the_persons_words_raise_a_note_by_a_share_of_its_own_score(
    write: WriteNotes, open_vault: OpenVault, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Beside a session's user turn, a note written by hand is the person's words too:
    each note gains at most USER_TURN_WEIGHT of its own score, as its best chunk of the
    person's words matches the query against the best such chunk's; so a session whose
    user turn names a single word of the query stays below notes that name several
    (index/bm25.py)."""
    write(
        {
            **SHELTER_NOTES,
            "sessions/passing.md": _session(
                "Errands", "Is the shelter open on Sundays?", "Most are; call ahead."
            ),
        }
    )
    v = open_vault()
    v.reindex(vectors=False)
    query = SearchRequest("beagle Biscuit Elm Street shelter hound", mode="keyword")
    hits = v.search(query).hits
    assert [h.path for h in hits] == [
        "notes/beagles.md",
        "notes/shelters.md",
        "sessions/passing.md",
    ]
    weighed = {h.path: h.score for h in hits}
    weight = bm25.USER_TURN_WEIGHT
    monkeypatch.setattr(bm25, "USER_TURN_WEIGHT", 0.0)
    plain = {h.path: h.score for h in v.search(query).hits}
    # The beagles note's chunk is the best of the person's words: it gains the whole share.
    assert weighed["notes/beagles.md"] == pytest.approx((1 + weight) * plain["notes/beagles.md"])
    for path in ("notes/shelters.md", "sessions/passing.md"):
        gain = weighed[path] / plain[path]
        assert 1 < gain < 1 + weight, path


@pytest.mark.parametrize("counted", [True, False], ids=["notes-counted", "only-user-turns"])
def test_a_note_written_by_hand_keeps_its_place_beside_sessions(
    write: WriteNotes, open_vault: OpenVault, monkeypatch: pytest.MonkeyPatch, counted: bool
) -> None:
    """In a vault of hand-written notes and imported sessions on one topic, the note that
    holds the fact stays first: its words are the person's as much as a user turn is.
    Counting only the user turns (markvault before 2026-11-30) put the sessions above it:
    the mixed set of bench/eval measured it on every question type."""
    if not counted:
        monkeypatch.setattr(bm25, "persons_words", lambda pool, transcripts: bm25.user_turns(pool))
    write(MIXED)
    v = open_vault()
    v.reindex(vectors=False)
    hits = v.search(
        SearchRequest("which port do I use to reach the staging postgres", mode="keyword")
    ).hits
    first = hits[0].path
    assert (first == "notes/staging.md") is counted, [h.path for h in hits]
