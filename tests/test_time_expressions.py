"""Time expressions in queries (issue 33): what each reads as, relative to an asked date."""

from __future__ import annotations

import datetime as dt

import pytest

from markvault.search import time_expressions as te
from markvault.search import time_signal
from markvault.search.time_words import MAX_QUERY_CHARS

D = dt.date
TUESDAY = D(2023, 4, 18)  # a Tuesday
MONDAY = D(2023, 4, 17)


def window(query: str, asked: D = TUESDAY, language: str | None = None) -> tuple:
    found = te.find(query, asked, language)
    assert len(found) == 1, (query, found)
    w = found[0]
    assert query[w.span[0] : w.span[1]] == w.text
    return w.text, w.start, w.end


@pytest.mark.parametrize(
    ("query", "text", "start", "end"),
    [
        ("what did we decide yesterday", "yesterday", D(2023, 4, 17), D(2023, 4, 17)),
        ("notes from today", "today", TUESDAY, TUESDAY),
        ("what happened last night", "last night", D(2023, 4, 17), D(2023, 4, 17)),
        ("the call this morning", "this morning", TUESDAY, TUESDAY),
        ("the day before yesterday", "the day before yesterday", D(2023, 4, 16), D(2023, 4, 16)),
        ("what did we decide last Tuesday", "last Tuesday", D(2023, 4, 11), D(2023, 4, 11)),
        ("lunch last Friday", "last Friday", D(2023, 4, 14), D(2023, 4, 14)),
        ("the meeting on Monday", "Monday", MONDAY, MONDAY),
        ("review this Tuesday", "this Tuesday", TUESDAY, TUESDAY),
        ("last week's retro", "last week", D(2023, 4, 10), D(2023, 4, 16)),
        ("done this week", "this week", D(2023, 4, 17), TUESDAY),
        ("shoes I cleaned last month", "last month", D(2023, 3, 1), D(2023, 3, 31)),
        ("budget this month", "this month", D(2023, 4, 1), TUESDAY),
        ("goals from last year", "last year", D(2022, 1, 1), D(2022, 12, 31)),
        ("the hike last weekend", "last weekend", D(2023, 4, 15), D(2023, 4, 16)),
        ("earlier this week", "earlier this week", D(2023, 4, 17), D(2023, 4, 17)),
        ("the bug from two weeks ago", "two weeks ago", D(2023, 4, 1), D(2023, 4, 7)),
        ("3 weeks ago", "3 weeks ago", D(2023, 3, 25), D(2023, 3, 31)),
        ("a week ago", "a week ago", D(2023, 4, 8), D(2023, 4, 14)),
        ("a fortnight ago", "a fortnight ago", D(2023, 4, 1), D(2023, 4, 7)),
        ("five days ago", "five days ago", D(2023, 4, 13), D(2023, 4, 13)),
        ("a couple of days ago", "a couple of days ago", D(2023, 4, 16), D(2023, 4, 16)),
        ("two months ago", "two months ago", D(2023, 2, 1), D(2023, 2, 28)),
        ("a year ago", "a year ago", D(2022, 1, 1), D(2022, 12, 31)),
        ("in the past 3 weeks", "in the past 3 weeks", D(2023, 3, 28), TUESDAY),
        ("over the last month", "over the last month", D(2023, 3, 18), TUESDAY),
        ("the past week", "the past week", D(2023, 4, 11), TUESDAY),
        ("last 10 days", "last 10 days", D(2023, 4, 8), TUESDAY),
        ("trip in March", "March", D(2023, 3, 1), D(2023, 3, 31)),
        ("trip in May", "May", D(2022, 5, 1), D(2022, 5, 31)),  # May 2023 is to come
        ("trip in April", "April", D(2023, 4, 1), D(2023, 4, 30)),
        ("in March 2021", "March 2021", D(2021, 3, 1), D(2021, 3, 31)),
        ("in Sept 2022", "Sept 2022", D(2022, 9, 1), D(2022, 9, 30)),
        ("last March", "last March", D(2023, 3, 1), D(2023, 3, 31)),
        ("early March", "early March", D(2023, 3, 1), D(2023, 3, 10)),
        ("late February", "late February", D(2023, 2, 21), D(2023, 2, 28)),
        ("early March 2021", "early March 2021", D(2021, 3, 1), D(2021, 3, 10)),
        ("the last week of March", None, D(2023, 3, 25), D(2023, 3, 31)),
        ("the first week of May 2022", None, D(2022, 5, 1), D(2022, 5, 7)),
        ("mid-January", "mid-January", D(2023, 1, 11), D(2023, 1, 20)),
        ("notes since May", "since May", D(2022, 5, 1), TUESDAY),
        ("since March 2023", "since March 2023", D(2023, 3, 1), TUESDAY),
        ("before 2023-03-05", "before 2023-03-05", None, D(2023, 3, 4)),
        ("after 2023-03-05", "after 2023-03-05", D(2023, 3, 6), TUESDAY),
        ("until March", "until March", None, D(2023, 3, 31)),
        ("since last week", "since last week", D(2023, 4, 10), TUESDAY),
        ("in 2021", "2021", D(2021, 1, 1), D(2021, 12, 31)),
        ("before 2021", "before 2021", None, D(2020, 12, 31)),
        ("on 2023/02/14", "2023/02/14", D(2023, 2, 14), D(2023, 2, 14)),
        ("2022-11", "2022-11", D(2022, 11, 1), D(2022, 11, 30)),
        ("on May 20", "May 20", D(2022, 5, 20), D(2022, 5, 20)),
        ("on April 2nd", "April 2nd", D(2023, 4, 2), D(2023, 4, 2)),
        ("the 3rd of March", "the 3rd of March", D(2023, 3, 3), D(2023, 3, 3)),
        ("March 5th, 2021", "March 5th, 2021", D(2021, 3, 5), D(2021, 3, 5)),
        ("between March and May", "between March and May", D(2022, 3, 1), D(2022, 5, 31)),
        ("between 2023-01-02 and 2023-01-09", None, D(2023, 1, 2), D(2023, 1, 9)),
        ("from March 3 to March 10", "from March 3 to March 10", D(2023, 3, 3), D(2023, 3, 10)),
    ],
)
def test_english_expressions(query: str, text: str | None, start: D | None, end: D | None) -> None:
    got = window(query)
    assert got[1:] == (start, end), (query, got)
    if text is not None:
        assert got[0] == text


@pytest.mark.parametrize(
    ("query", "asked", "start", "end"),
    [
        # "last Monday" on a Monday is a week before; "on Monday" is that day.
        ("last Monday", MONDAY, D(2023, 4, 10), D(2023, 4, 10)),
        ("on Monday", MONDAY, MONDAY, MONDAY),
        ("last Sunday", D(2023, 4, 16), D(2023, 4, 9), D(2023, 4, 9)),
        # month boundaries and leap years
        ("yesterday", D(2024, 3, 1), D(2024, 2, 29), D(2024, 2, 29)),
        ("yesterday", D(2023, 3, 1), D(2023, 2, 28), D(2023, 2, 28)),
        ("yesterday", D(2024, 1, 1), D(2023, 12, 31), D(2023, 12, 31)),
        ("last month", D(2024, 3, 31), D(2024, 2, 1), D(2024, 2, 29)),
        ("last month", D(2023, 1, 5), D(2022, 12, 1), D(2022, 12, 31)),
        ("a month ago", D(2024, 3, 31), D(2024, 2, 1), D(2024, 2, 29)),
        ("over the past month", D(2024, 3, 31), D(2024, 2, 29), D(2024, 3, 31)),
        ("last week", D(2024, 1, 3), D(2023, 12, 25), D(2023, 12, 31)),
        ("this week", D(2023, 4, 23), MONDAY, D(2023, 4, 23)),
        ("in December", D(2024, 1, 10), D(2023, 12, 1), D(2023, 12, 31)),
        ("on Feb 29", D(2023, 6, 1), D(2020, 2, 29), D(2020, 2, 29)),
        ("on Feb 29", D(2024, 3, 1), D(2024, 2, 29), D(2024, 2, 29)),
        ("a year ago", D(2024, 2, 29), D(2023, 1, 1), D(2023, 12, 31)),
        ("last weekend", D(2023, 4, 15), D(2023, 4, 8), D(2023, 4, 9)),  # asked on a Saturday
        ("last weekend", MONDAY, D(2023, 4, 15), D(2023, 4, 16)),
        ("earlier this month", D(2023, 4, 1), D(2023, 4, 1), D(2023, 4, 1)),
        ("between November and February", D(2023, 3, 1), D(2022, 11, 1), D(2023, 2, 28)),
        ("last March", D(2023, 3, 20), D(2022, 3, 1), D(2022, 3, 31)),
    ],
)
def test_edges(query: str, asked: D, start: D | None, end: D | None) -> None:
    assert window(query, asked)[1:] == (start, end)


@pytest.mark.parametrize(
    ("query", "language", "start", "end"),
    [
        ("was haben wir gestern entschieden", None, MONDAY, MONDAY),
        ("vorgestern", None, D(2023, 4, 16), D(2023, 4, 16)),
        ("vor 3 Tagen", None, D(2023, 4, 15), D(2023, 4, 15)),
        ("vor zwei Wochen", None, D(2023, 4, 1), D(2023, 4, 7)),
        ("letzte Woche", None, D(2023, 4, 10), D(2023, 4, 16)),
        ("letzten Monat", None, D(2023, 3, 1), D(2023, 3, 31)),
        ("il y a deux semaines", None, D(2023, 4, 1), D(2023, 4, 7)),
        ("la semaine dernière", None, D(2023, 4, 10), D(2023, 4, 16)),
        ("le mois dernier", None, D(2023, 3, 1), D(2023, 3, 31)),
        ("qu'avons-nous décidé hier", "fr", MONDAY, MONDAY),
        ("aujourd'hui", None, TUESDAY, TUESDAY),
        ("hace 3 días", None, D(2023, 4, 15), D(2023, 4, 15)),
        ("ayer", None, MONDAY, MONDAY),
        ("la semana pasada", None, D(2023, 4, 10), D(2023, 4, 16)),
        ("el año pasado", None, D(2022, 1, 1), D(2022, 12, 31)),
        ("3 giorni fa", None, D(2023, 4, 15), D(2023, 4, 15)),
        ("ieri", None, MONDAY, MONDAY),
        ("il mese scorso", None, D(2023, 3, 1), D(2023, 3, 31)),
    ],
)
def test_other_languages(query: str, language: str | None, start: D, end: D) -> None:
    assert window(query, language=language)[1:] == (start, end)


@pytest.mark.parametrize(
    "query",
    [
        "How many days ago did I watch the Super Bowl?",  # asks for a time, names none
        "How many weeks ago did I meet my aunt?",
        "May I ask what the plan is?",
        "what did we decide before the migration",  # an event, not a date
        "the 2023 budget review",  # a bare year is often a name or a number
        "march of the penguins",
        "wir sind hier",  # German "here", not French "yesterday"
        "error 2023-02-30 in the log",  # no such day
        "a few things to do",
        "the last days of disco",
        "",
    ],
)
def test_not_times(query: str) -> None:
    assert te.find(query, TUESDAY) == []


def test_several_expressions_combine_to_one_window_and_leave_the_words() -> None:
    query = "what did I do yesterday and on Friday"
    found = te.find(query, TUESDAY)
    assert [w.text for w in found] == ["yesterday", "Friday"]
    both = te.combined(found)
    assert both is not None and (both.start, both.end) == (D(2023, 4, 14), MONDAY)
    assert te.without(query, found).split() == ["what", "did", "I", "do", "and", "on"]
    assert te.combined([]) is None


def test_window_membership_and_distance() -> None:
    (w,) = te.find("last week", TUESDAY)
    assert w.contains(D(2023, 4, 10)) and w.contains(D(2023, 4, 16))
    assert not w.contains(D(2023, 4, 17))
    assert w.distance(D(2023, 4, 18)) == 2 and w.distance(D(2023, 4, 8)) == 2
    assert w.days == 7
    (open_end,) = te.find("before 2021", TUESDAY)
    assert open_end.days is None and open_end.contains(D(1999, 1, 1))
    assert open_end.to_json() == {"text": "before 2021", "start": None, "end": "2020-12-31"}


def test_asked_at_defaults_to_today_and_takes_a_datetime() -> None:
    (w,) = te.find("yesterday")
    assert w.start == dt.date.today() - dt.timedelta(days=1)
    (w,) = te.find("yesterday", dt.datetime(2023, 4, 18, 23, 59))
    assert w.start == MONDAY


def test_a_habit_is_not_a_day() -> None:
    assert te.find("we stop merging on Friday afternoons", TUESDAY) == []
    assert [w.text for w in te.find("what did we ship on Friday?", TUESDAY)] == ["Friday"]
    assert [w.text for w in te.find("the call on Friday afternoon", TUESDAY)] == ["Friday"]


def test_closeness_is_one_inside_and_fades_outside() -> None:
    (day,) = te.find("last Tuesday", TUESDAY)
    assert time_signal.closeness(day, [D(2023, 4, 11)]) == 1.0
    assert time_signal.closeness(day, [D(2023, 4, 12)]) == pytest.approx(time_signal.OUTSIDE / 2)
    assert time_signal.closeness(day, [D(2023, 4, 13)]) == 0.0
    assert time_signal.closeness(day, []) == 0.0
    # the best of a note's dates counts
    assert time_signal.closeness(day, [D(2020, 1, 1), D(2023, 4, 11)]) == 1.0


def test_a_passage_is_not_read_for_dates() -> None:
    """Past MAX_QUERY_CHARS a query is a passage, and its dates are not the question's
    (and reading them would cost a long query time)."""
    passage = "the deploy last Tuesday " + "and more words " * (MAX_QUERY_CHARS // 15)
    assert len(passage) > MAX_QUERY_CHARS
    assert te.find(passage, TUESDAY) == []
    assert te.find(passage[:MAX_QUERY_CHARS], TUESDAY)[0].text == "last Tuesday"


@pytest.mark.parametrize(
    ("query", "text"),
    [
        ("which font do the invoices use now", "now"),
        ("what is my current highest score", "my current"),
        ("what is the current connection limit", "the current"),
        ("which bus did I take most  recently", "most  recently"),
        ("the latest plan for the deploy", "latest"),
        ("Where do I CURRENTLY keep the sneakers", "CURRENTLY"),
        ("what do we run these days", "these days"),
        ("was nutzen wir jetzt", "jetzt"),
        ("qué usamos actualmente", "actualmente"),
    ],
)
def test_now_reads_as_the_newest_notes(query: str, text: str) -> None:
    (window,) = te.find(query, TUESDAY)
    assert (window.text, window.start, window.end, window.newest) == (text, None, None, True)
    assert query[window.span[0] : window.span[1]] == text
    assert window.to_json() == {"text": text, "start": None, "end": None, "newest": True}


@pytest.mark.parametrize(
    "query",
    ["alternating current densities", "the currentness of data", "snow nowhere", "know-how"],
)
def test_words_that_only_contain_now_are_not_now(query: str) -> None:
    assert te.find(query, TUESDAY) == []


def test_days_named_say_more_than_now() -> None:
    (window,) = te.find("what do we use now, since last Tuesday", TUESDAY)
    assert not window.newest and window.text == "since last Tuesday"


def test_the_newest_get_their_place_in_time() -> None:
    d = D
    days = {
        "updated.md": [d(2026, 2, 1), d(2026, 2, 16)],  # its newest date counts
        "old.md": [d(2026, 2, 11)],
        "new.md": [d(2026, 2, 21)],
        "undated.md": [],
    }
    assert time_signal.newest_fit(days) == {"updated.md": 0.5, "old.md": 0.0, "new.md": 1.0}
    assert time_signal.newest_fit({"a.md": [d(2026, 2, 1)], "b.md": [d(2026, 2, 1)]}) == {}
    line = time_signal.time_line({"text": "now", "newest": True, "asked_at": "2026-03-12"})
    assert line == "'now' = now (asked 2026-03-12; the newest matching notes ranked up)"
