"""Prefix lookup of names for completions: order, totals, case, and the edges."""

from __future__ import annotations

from collections import Counter

from markvault.index.prefix_lookup import NameIndex, count_lookup

ROWS = [  # id, title, date
    ("alpha", "Alpha quokka", "2026-01-02"),
    ("alpine", "Alpine lakes", "2026-03-01"),
    ("other", "Notes on the  alps", "2026-05-01"),
    ("undated", "Alp without a date", ""),
    ("alp", "Exact", "2020-01-01"),
    ("zeta", "Zeta", "2026-06-01"),
]
IDS = [r[0] for r in ROWS]
NAMES = NameIndex(IDS, IDS, [r[1] for r in ROWS], [r[2] for r in ROWS])


def test_best_first_newest_first_within_a_rank() -> None:
    values, total = NAMES.lookup("ALP", 100)
    # the id typed whole; ids starting so (newest first); titles; a title word
    assert values == ["alp", "alpine", "alpha", "undated", "other"]
    assert total == 5


def test_limit_keeps_the_total() -> None:
    assert NAMES.lookup("alp", 2) == (["alp", "alpine"], 5)


def test_empty_prefix_lists_everything_newest_first() -> None:
    values, total = NAMES.lookup("", 3)
    assert values == ["zeta", "other", "alpine"] and total == 6


def test_no_match_and_no_names() -> None:
    assert NAMES.lookup("nothing", 100) == ([], 0)
    assert NameIndex([], [], [], []).lookup("a", 100) == ([], 0)


def test_values_can_differ_from_the_keys_they_are_found_by() -> None:
    sessions = NameIndex(["5f0c2a9e"], ["5f0c2a9e-1b7d-4c3e"], ["Rounding"], ["2025-03-04"])
    assert sessions.lookup("5F0C2A9E-1B", 100) == (["5f0c2a9e"], 1)
    assert sessions.lookup("round", 100) == (["5f0c2a9e"], 1)


def test_a_word_must_start_where_typed() -> None:
    assert NAMES.lookup("lps", 100) == ([], 0)  # inside a word: no
    assert NAMES.lookup("lakes", 100) == (["alpine"], 1)


def test_counted_names_most_used_first() -> None:
    topics = Counter({"zoology": 3, "zoo-ops": 5, "Art": 1})
    assert count_lookup(topics, "zo", 100) == (["zoo-ops", "zoology"], 2)
    assert count_lookup(topics, "art", 100) == (["Art"], 1)
    assert count_lookup(topics, "", 1) == (["zoo-ops"], 3)


def test_several_words_typed_match_where_they_follow_one_another() -> None:
    assert NAMES.lookup("on the", 100) == (["other"], 1)
    assert NAMES.lookup("on the  alps", 100) == (["other"], 1)  # spaces as typed
    assert NAMES.lookup("the lakes", 100) == ([], 0)
