"""Retrieval quality in CI (issues 6 and 11): the reduced form of ``python -m bench.eval``.

Without the model: keyword search on Cranfield (40 queries spread over the 225, all
1,400 documents) and on CACM (all 52 judged queries, 3,204 documents) must not fall more
than 0.005 nDCG@10 below the bm25s reference on the same queries; on our own sets,
keyword search must find each known item (MRR@10 >= 0.95 per language). With the
model (marked ``model``, small vaults only): hybrid must not fall below the better of
keyword and vector by more than 0.01 on the starter vault and the conversation
sessions, nor more than 0.02 below keyword in any language of the multilingual set.
On LongMemEval (issue 33), one question of each type, one vault each: keyword search
must not fall below stemmed bm25s on recall_all@10, nor more than 0.005 on nDCG@10.
Plus the harness's own pieces (SMART parsing, gains, metrics) and the generated data
matching its generators.

The collections are read from ``../shared/eval`` beside the repository (or
``MARKVAULT_SHARED_EVAL``); without them those comparisons are skipped, and say so.
"""

from __future__ import annotations

import json
import math
import re
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:  # bench/ is not installed; the harness is bench/eval/
    sys.path.insert(0, str(REPO))

from bench.eval import (  # noqa: E402
    conversation,
    gen_conversations,
    gen_long_notes,
    gen_mixed,
    known_item,
    longmemeval,
    metrics,
    runner,
    sets,
    smart,
)
from bench.eval.reference import ReferenceBM25, ReferenceSetup  # noqa: E402

SUBSET = {"cranfield": 40, "cacm": None}
TOLERANCE = 0.005  # issue 11: keyword >= stemmed bm25s - 0.005
KNOWN_ITEM_GOAL = 0.95  # issue 11: keyword MRR@10 in every language
HYBRID_SLACK = 0.01  # issue 11: hybrid >= the better of keyword and vector - 0.01
LANGUAGE_SLACK = 0.02  # issue 11: hybrid never more than 0.02 below keyword per language


def _run(s: sets.EvalSet, tmp_path: Path, modes: tuple[str, ...], queries: int | None = None):
    chosen = runner.subset(s.queries, queries)
    built = runner.build_files(s.files, tmp_path, vectors=modes != ("keyword",))
    try:
        runs = {mode: runner.run_mode(built.vault, chosen, mode) for mode in modes}
    finally:
        built.vault.close()
    for run in runs.values():
        assert not run.errors
    return chosen, runs


# ---- the comparisons ----------------------------------------------------------------


@pytest.mark.parametrize("name", list(SUBSET))
def test_keyword_ndcg_is_not_below_bm25s(name: str, tmp_path: Path) -> None:
    if not sets.collection_available(name):
        pytest.skip(f"no {name} collection under {sets.SHARED_EVAL} (set MARKVAULT_SHARED_EVAL)")
    s = sets.from_collection(sets.load_catalogued(name))
    queries, runs = _run(s, tmp_path, ("keyword",), SUBSET[name])
    relevant = {q.key: s.levels["documents"][q.key] for q in queries}
    expected = metrics.evaluate(
        ReferenceBM25(s.documents, ReferenceSetup()).run(queries, runner.LIMIT), relevant
    )
    got = metrics.evaluate(runs["keyword"].ranked, relevant)
    assert got.queries == expected.queries == len(queries)
    assert got.ndcg10 >= expected.ndcg10 - TOLERANCE, (
        f"{name}: markvault keyword nDCG@10 {got.ndcg10:.4f} is more than {TOLERANCE} below "
        f"bm25s's {expected.ndcg10:.4f} on {len(queries)} queries "
        f"(Recall@100 {got.recall100:.4f} vs {expected.recall100:.4f})"
    )


def _mrr_by_group(s: sets.EvalSet, run: runner.ModeRun, level: str) -> dict[str, float]:
    ranked = run.keys(level, s.judge)
    rows = metrics.per_query(ranked, s.levels[level])
    return {group: sum(rows[k][2] for k in keys) / len(keys) for group, keys in s.groups.items()}


@pytest.mark.parametrize("name", ["multilingual", "starter", "long-notes"])
def test_keyword_finds_known_items_in_every_language(name: str, tmp_path: Path) -> None:
    s = sets.OWN_SETS[name]()
    _, runs = _run(s, tmp_path, ("keyword",))
    below = {
        group: round(mrr, 3)
        for group, mrr in _mrr_by_group(s, runs["keyword"], "note").items()
        if mrr < KNOWN_ITEM_GOAL
    }
    assert not below, f"{name}: keyword MRR@10 below {KNOWN_ITEM_GOAL}: {below}"


@pytest.mark.model
@pytest.mark.parametrize(("name", "level"), [("starter", "note"), ("conversations", "session")])
def test_hybrid_is_not_below_the_better_of_its_inputs(
    name: str, level: str, tmp_path: Path
) -> None:
    s = sets.OWN_SETS[name]()
    _, runs = _run(s, tmp_path, ("keyword", "vector", "hybrid"))
    ndcg = {
        mode: metrics.evaluate(run.keys(level, s.judge), s.levels[level]).ndcg10
        for mode, run in runs.items()
    }
    best = max(ndcg["keyword"], ndcg["vector"])
    assert ndcg["hybrid"] >= best - HYBRID_SLACK, ndcg


@pytest.mark.model
def test_hybrid_keeps_keyword_results_in_every_language(tmp_path: Path) -> None:
    s = sets.OWN_SETS["multilingual"]()
    _, runs = _run(s, tmp_path, ("keyword", "hybrid"))
    keyword = _mrr_by_group(s, runs["keyword"], "note")
    hybrid = _mrr_by_group(s, runs["hybrid"], "note")
    worse = {
        g: (round(keyword[g], 3), round(hybrid[g], 3))
        for g in keyword
        if hybrid[g] < keyword[g] - LANGUAGE_SLACK
    }
    assert not worse, f"hybrid below keyword (keyword, hybrid): {worse}"


# ---- the data sets match their generators and are well formed ---------------------------


def test_generated_sets_match_their_generators() -> None:
    """The committed data is exactly what the generators write (they are deterministic)."""
    for module, path in (
        (gen_conversations, gen_conversations.OUT),
        (gen_long_notes, gen_long_notes.OUT),
        (gen_mixed, gen_mixed.OUT),
    ):
        assert json.loads(path.read_text(encoding="utf-8")) == module.build(), path.name


def test_mixed_questions_name_notes_that_hold_their_answers() -> None:
    """Every judged note of the mixed set is in its vault; a note question's answer is a
    hand-written note, the others' a session imported as a transcript with user turns."""
    s = sets.OWN_SETS["mixed"]()
    ids = {}
    for path, text in s.files.items():
        match = re.search(r"^id: (\S+)$", text, re.MULTILINE)
        assert match, path
        ids[match.group(1)] = text
    by_type = {key: kind for kind, keys in s.groups.items() for key in keys}
    assert set(s.groups) == {"note", "said", "update", "several"}
    for key, judged in s.levels["note"].items():
        assert judged and set(judged) <= set(ids), key
        sessions = [i for i in judged if "### " in ids[i] and " User\n" in ids[i]]
        expected = {"note": 0, "said": 1, "update": 1, "several": 3}[by_type[key]]
        assert len(sessions) == expected, key


def test_sessions_weighed_for_their_user_turns_leave_hand_written_notes_their_place(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On the mixed set, weighing what the person said (index/bm25.py) costs the
    questions answered by a hand-written note nothing against not weighing it."""
    from markvault.index import bm25

    s = sets.OWN_SETS["mixed"]()
    notes = {k: s.levels["note"][k] for k in s.groups["note"]}
    chosen = [q for q in s.queries if q.key in notes]
    built = runner.build_files(s.files, tmp_path, vectors=False)
    try:
        weighed = runner.run_mode(built.vault, chosen, "keyword")
        monkeypatch.setattr(bm25, "USER_TURN_WEIGHT", 0.0)
        plain = runner.run_mode(built.vault, chosen, "keyword")
    finally:
        built.vault.close()
    ndcg = {
        name: metrics.evaluate(run.keys("note", s.judge), notes).ndcg10
        for name, run in (("weighed", weighed), ("plain", plain))
    }
    assert ndcg["weighed"] >= ndcg["plain"] - TOLERANCE, ndcg


def test_conversation_questions_point_at_turns() -> None:
    conv = conversation.load(summaries=False)
    turns = {sid: set(lines.values()) for sid, lines in conv.turn_lines.items()}
    for key, judged in conv.relevant["turn"].items():
        assert judged, key
        for turn_key in judged:
            session, turn = turn_key.split("#")
            assert session in conv.relevant["session"][key]
            assert int(turn) in turns[session]


def test_multilingual_set_is_well_formed() -> None:
    notes = known_item.load()
    assert set(notes) == {"de", "es", "fr", "it", "ja", "ko", "ru", "zh"}
    ids = [n.note_id for ns in notes.values() for n in ns]
    assert len(ids) == len(set(ids))
    for ns in notes.values():
        assert 10 <= len(ns) <= 15
        for n in ns:
            # A verbatim query is a sentence of its note; an edited one is not.
            assert (n.query in n.text) == (n.query_from == "verbatim"), n.note_id


def test_starter_questions_name_notes_of_the_bundled_vault(tmp_path: Path) -> None:
    s = sets.OWN_SETS["starter"]()
    built = runner.build_files(s.files, tmp_path, vectors=False)
    try:
        index = built.vault.host.core().keeper.open_index(write=False)
        ids = {r["id"] for r in index.reads.note_briefs()}
    finally:
        built.vault.close()
    for judged in s.levels["note"].values():
        assert set(judged) <= ids, judged


# ---- the harness's pieces -----------------------------------------------------------

DOCS = (
    ".I 1\r\n.T\r\nwing flutter .\r\n.A\r\nsmith,j.\r\n.B\r\nj. ae. 1958\r\n"
    ".W\r\nwing flutter .\r\n  flutter of a wing\r\nin a slipstream .\r\n.A\r\n"
    "stray marker line above\r\n"
    ".I 2\r\n.T\r\nshock waves\r\n.W\r\nshock waves in air .\r\n"
)


def test_smart_records_keep_text_after_a_stray_marker() -> None:
    records = smart.parse_records(DOCS.splitlines(keepends=True))
    assert [r.label for r in records] == ["1", "2"]
    assert records[0].field("A") == "smith,j."
    # The repeated .A is dropped and its line stays in the text.
    assert records[0].field("W").splitlines()[-1] == "stray marker line above"


def test_query_keys_follow_the_judgments_numbering(tmp_path: Path) -> None:
    qry = tmp_path / "q"
    qry.write_text(".I 001\n.W\nwhat is flutter .\n.I 004\n.W\nshock waves\n")
    ordinal = smart.load_queries(qry, smart.QueryIds.ORDINAL)
    label = smart.load_queries(qry, smart.QueryIds.LABEL)
    assert [(q.key, q.label, q.text) for q in ordinal] == [
        ("1", "001", "what is flutter"),
        ("2", "004", "shock waves"),
    ]
    assert [q.key for q in label] == ["1", "4"]


def test_cranfield_gains() -> None:
    gains = [smart.gain_of(g, smart.Gains.CRANFIELD) for g in (1, 2, 3, 4, 5, -1)]
    assert gains == [4, 3, 2, 1, 0, 0]
    with pytest.raises(ValueError):
        smart.gain_of(7, smart.Gains.CRANFIELD)
    assert smart.gain_of(None, smart.Gains.BINARY) == 1
    assert smart.gain_of(-1, smart.Gains.BINARY) == 0


def test_judgments_drop_non_relevant_pairs(tmp_path: Path) -> None:
    qrels = tmp_path / "qrels"
    qrels.write_text("1 184 2 \r\n1 29 -1\r\n1 12 4\r\n2 7 1\r\n\r\n")
    relevant, grades = smart.load_judgments(qrels, smart.Gains.CRANFIELD)
    assert relevant == {"1": {"184": 3, "12": 1}, "2": {"7": 4}}
    assert grades == {"2": 1, "-1": 1, "4": 1, "1": 1}


def test_ndcg_uses_the_ideal_ranking_of_all_judged_documents() -> None:
    judged = {"a": 3, "b": 2, "c": 1}
    assert metrics.ndcg_at(["a", "b", "c"], judged, 10) == pytest.approx(1.0)
    # Only "b" found, at rank 2: DCG 2/log2(3); ideal 3 + 2/log2(3) + 1/2.
    ideal = 3 + 2 / math.log2(3) + 0.5
    assert metrics.ndcg_at(["x", "b"], judged, 10) == pytest.approx(2 / math.log2(3) / ideal)
    # A relevant document past the cutoff counts nothing.
    assert metrics.ndcg_at(["x", "y", "a"], judged, 2) == 0.0


def test_recall_and_mrr() -> None:
    judged = {"a": 1, "b": 4}
    assert metrics.recall_at(["x", "b", "y"], judged, 100) == 0.5
    assert metrics.recall_at(["x", "b", "a"], judged, 2) == 0.5
    assert metrics.mrr_at(["x", "y", "b", "a"], judged, 10) == pytest.approx(1 / 3)
    assert metrics.mrr_at(["x", "y", "b"], judged, 2) == 0.0


def test_evaluate_counts_a_missing_query_as_zero() -> None:
    relevant = {"1": {"a": 1}, "2": {"b": 1}}
    scores = metrics.evaluate({"1": ["a"]}, relevant)
    assert scores.queries == 2
    assert scores.mrr10 == 0.5


# ---- LongMemEval (issue 33) ---------------------------------------------------------------


def _one_question_per_type(data: longmemeval.Data) -> list[longmemeval.Question]:
    first: dict[str, longmemeval.Question] = {}
    for q in data.questions:
        first.setdefault(q.qtype, q)
    return list(first.values())


def test_longmemeval_keyword_is_not_below_bm25s(tmp_path: Path) -> None:
    if not longmemeval.available():
        pytest.skip(f"no LongMemEval data at {longmemeval.DATA} (set MARKVAULT_SHARED_EVAL)")
    data = longmemeval.load()
    questions = _one_question_per_type(data)
    assert {q.qtype for q in questions} == set(longmemeval.TYPES)
    harness = longmemeval.Harness(data, tmp_path, ["keyword"])
    runs = {q.qid: harness.run_question(q) for q in questions}
    assert not any(run.errors for run in runs.values()), {k: r.errors for k, r in runs.items()}
    got, expected = (
        longmemeval.summary({k: r.rankings[system] for k, r in runs.items()}, questions)["all"]
        for system in ("markvault keyword", "bm25s")
    )
    assert got["recall_all@10"] >= expected["recall_all@10"], (got, expected)
    assert got["ndcg@10"] >= expected["ndcg@10"] - TOLERANCE, (got, expected)


def test_longmemeval_session_notes_and_scores() -> None:
    turns = [
        {"role": "user", "content": "# Plan\nI moved to Lisbon in March."},
        {"role": "assistant", "content": "Noted.\n\n## Not a heading of the note"},
    ]
    when = longmemeval.parse_date("2023/05/20 (Sat) 02:21")
    assert when.isoformat() == "2023-05-20T02:21:00"
    text = longmemeval.session_note("s1", turns, when)
    assert "created: 2023-05-20\n" in text and "started: 2023-05-20T02:21:00\n" in text
    assert 'title: "Plan"' in text
    # A turn's own Markdown is quoted: only the note's headings are headings.
    headings = [ln for ln in text.splitlines() if ln.startswith("#")]
    assert headings == ["# Plan", "## Transcript", "### User", "### Assistant"]
    scores = longmemeval.question_scores(["x", "a", "y", "z", "w", "b"], {"a", "b"})
    assert scores["recall_any@5"] == 1.0
    assert scores["recall_all@5"] == 0.0
    assert scores["recall_all@10"] == 1.0
    ideal = 1 + 1 / math.log2(3)
    assert scores["ndcg@10"] == pytest.approx((1 / math.log2(3) + 1 / math.log2(7)) / ideal)
