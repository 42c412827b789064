"""Time in a query: "last Tuesday", "two months ago", "since May" as a window of days.

People ask their memory with time in the question ("what did we decide last Tuesday",
"the bug from two weeks ago", "notes since March 2023"). ``find`` recognises such
expressions relative to the date the question is asked (the "asked at" date; today when
none is given) and turns each into a ``TimeWindow``, first and last day inclusive
(either may be open). Pure and deterministic: no clock is read unless no date is given,
no model, no I/O. Search uses the window as a soft signal (search.py): notes dated
inside it rank higher (time_signal.py), nothing is filtered out, and the result says
which window it read.

English, as written in questions:

- days: ``today``, ``tonight``, ``this morning``, ``yesterday``, ``last night``, ``the day
  before yesterday``; ISO dates (``2023-05-20``, ``2023/05/20``); ``May 20``, ``20 May``,
  ``May 20th, 2023``;
- weekdays: ``last Tuesday`` (the most recent Tuesday before the asked day: asked on a
  Tuesday, a week before), ``on Tuesday``, ``this Tuesday`` (the most recent Tuesday up
  to the asked day, that day included);
- calendar periods: ``last week`` (Monday to Sunday before this week), ``this week``,
  ``last/this month``, ``last/this year``, ``last weekend``, ``earlier this week/month/
  year``; months: ``in March`` (the most recent March up to the asked month), ``March
  2023``, ``2023-03``, ``last March``, ``early/mid/late March``; years: ``in 2023``;
- spans back: ``3 days ago`` (that day), ``two weeks ago`` (the week around that day),
  ``a month ago`` (that calendar month), ``a year ago`` (that year); ``the past 3 weeks``,
  ``in the last month``, ``over the past two days`` (up to the asked day); numbers as
  digits or words up to twenty, ``a``, ``a couple of``, ``a few`` (3);
- bounds: ``since X`` and ``after X`` (to the asked day), ``before X``, ``until X``,
  ``between X and Y``, ``from X to Y``, where X is any day, month or year above.

A bare month name (``May``, ``March`` are words too) counts only after a preposition
or with a day or year; ``how many days ago`` (no number) is not a time. Other
languages, the cheap part: German, French, Spanish and Italian words for today,
yesterday and the day before, last week/month/year and "N days/weeks/months/years ago"
(``vor 3 Tagen``, ``il y a deux semaines``, ``hace 3 días``, ``3 giorni fa``).
"""

from __future__ import annotations

import calendar
import datetime as dt
import functools
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import NamedTuple

from markvault.search.time_words import (
    MONTHS,
    NOW_PHRASES,
    NUMBERS,
    UNITS,
    WEEKDAYS,
    may_name_a_time,
)

Date = dt.date


@dataclass(frozen=True)
class TimeWindow:
    """Days from ``start`` to ``end``, both included; None is open on that side.
    ``newest``: no days named, but "now" ("currently", "my current"): the newest of the
    notes that match hold the answer."""

    start: Date | None
    end: Date | None
    text: str  # the words as written in the query
    span: tuple[int, int]  # where they are in it
    newest: bool = False

    def contains(self, day: Date) -> bool:
        return (self.start is None or self.start <= day) and (self.end is None or day <= self.end)

    def distance(self, day: Date) -> int:
        """Days from ``day`` to the window (0 inside)."""
        if self.start is not None and day < self.start:
            return (self.start - day).days
        if self.end is not None and day > self.end:
            return (day - self.end).days
        return 0

    @property
    def days(self) -> int | None:
        """How many days it spans (None when open)."""
        if self.start is None or self.end is None:
            return None
        return (self.end - self.start).days + 1

    def to_json(self) -> dict[str, str | bool | None]:
        out: dict[str, str | bool | None] = {
            "text": self.text,
            "start": self.start.isoformat() if self.start else None,
            "end": self.end.isoformat() if self.end else None,
        }
        if self.newest:
            out["newest"] = True
        return out


# ---- calendar arithmetic ---------------------------------------------------------------


def add_months(day: Date, months: int) -> Date:
    """``day`` moved by whole months, kept within the month (Jan 31 + 1 = Feb 28/29)."""
    index = day.year * 12 + day.month - 1 + months
    year, month = divmod(index, 12)
    last = calendar.monthrange(year, month + 1)[1]
    return Date(year, month + 1, min(day.day, last))


def month_window(year: int, month: int) -> tuple[Date, Date]:
    return Date(year, month, 1), Date(year, month, calendar.monthrange(year, month)[1])


def week_start(day: Date) -> Date:
    """The Monday of ``day``'s week (ISO weeks)."""
    return day - dt.timedelta(days=day.weekday())


# ---- words (time_words.py) -------------------------------------------------------------


def _alternation(words: Sequence[str]) -> str:
    return "|".join(re.escape(w) for w in sorted(words, key=len, reverse=True))


_NOW = "|".join(
    r"\s+".join(re.escape(word) for word in phrase.split())
    for phrase in sorted(NOW_PHRASES, key=len, reverse=True)
)
_AFTER_WEEKDAY = (
    r"and|or|at|with|when|about|for|in|we|i|you|they|he|she|did|was|were|"
    r"morning|afternoon|evening|night|last|this"
)
_MONTH = rf"(?P<month>{_alternation(list(MONTHS))})\.?"
_WEEKDAY = rf"(?P<weekday>{_alternation(list(WEEKDAYS))})"
_NUMBER = rf"(?P<n>\d{{1,3}}|{_alternation(list(NUMBERS))})"
_EN_UNIT = r"(?P<unit>days?|weeks?|fortnights?|months?|years?)"
_ANY_UNIT = rf"(?P<unit>{_alternation(list(UNITS))})"
_YEAR = r"(?P<year>(?:19|20)\d\d)"
_DAY = r"(?P<day>[0-3]?\d)(?:st|nd|rd|th)?"


def _number(text: str) -> int:
    text = text.lower()
    return int(text) if text.isdigit() else NUMBERS[text]


# ---- the expressions -------------------------------------------------------------------

Point = tuple[Date | None, Date | None]  # a day, month, year or span: first and last day
Days = tuple[Date, Date]  # a closed one
Handler = Callable[[re.Match[str], Date], Point | None]


def _span_back(n: int, unit: str, asked: Date) -> Days:
    """``n`` units ago: that day, the week around it, that month or that year."""
    if unit == "day":
        day = asked - dt.timedelta(days=n)
        return day, day
    if unit in ("week", "fortnight"):
        day = asked - dt.timedelta(days=n * (14 if unit == "fortnight" else 7))
        return day - dt.timedelta(days=3), day + dt.timedelta(days=3)
    if unit == "month":
        day = add_months(asked, -n)
        return month_window(day.year, day.month)
    return Date(asked.year - n, 1, 1), Date(asked.year - n, 12, 31)


def _rolling(n: int, unit: str, asked: Date) -> Days:
    """The past ``n`` units, up to the asked day."""
    if unit == "month":
        return add_months(asked, -n), asked
    if unit == "year":
        return add_months(asked, -12 * n), asked
    days = {"day": 1, "week": 7, "fortnight": 14}[unit] * n
    return asked - dt.timedelta(days=days), asked


def _calendar(unit: str, back: int, asked: Date) -> Days:
    """This (``back`` 0) or the previous (1) calendar week, month or year."""
    if unit in ("week", "fortnight"):
        start = week_start(asked) - dt.timedelta(days=7 * back)
        return start, (asked if back == 0 else start + dt.timedelta(days=6))
    if unit == "month":
        day = add_months(asked.replace(day=1), -back)
        first, last = month_window(day.year, day.month)
        return first, (asked if back == 0 else last)
    year = asked.year - back
    return Date(year, 1, 1), (asked if back == 0 else Date(year, 12, 31))


def _recent_month(month: int, asked: Date, back: int = 0) -> Days:
    """The most recent ``month`` up to the asked month (``back``: that many more years)."""
    year = asked.year if month <= asked.month else asked.year - 1
    return month_window(year - back, month)


def _weekday_before(weekday: int, asked: Date, *, strictly: bool) -> Date:
    days = (asked.weekday() - weekday) % 7
    if days == 0 and strictly:
        days = 7
    return asked - dt.timedelta(days=days)


def _safe_date(year: int, month: int, day: int) -> Date | None:
    try:
        return Date(year, month, day)
    except ValueError:
        return None


def _h_iso_day(m: re.Match[str], asked: Date) -> Point | None:
    day = _safe_date(int(m["y"]), int(m["m"]), int(m["d"]))
    return (day, day) if day else None


def _h_iso_month(m: re.Match[str], asked: Date) -> Point | None:
    month = int(m["m"])
    return month_window(int(m["y"]), month) if 1 <= month <= 12 else None


def _h_month_day(m: re.Match[str], asked: Date) -> Point | None:
    month, day = MONTHS[m["month"].lower()], int(m["day"])
    if m["year"]:
        found = _safe_date(int(m["year"]), month, day)
    else:
        found = _safe_date(asked.year, month, day)
        if found is not None and found > asked:
            found = _safe_date(asked.year - 1, month, day)
        elif found is None and month == 2 and day == 29:  # the most recent Feb 29
            year = asked.year - 1
            while not calendar.isleap(year):
                year -= 1
            found = Date(year, 2, 29)
    return (found, found) if found else None


def _h_month_year(m: re.Match[str], asked: Date) -> Point | None:
    start, end = month_window(int(m["year"]), MONTHS[m["month"].lower()])
    return _part_of_month(start, end, m.groupdict().get("part"))


def _part_of_month(start: Date, end: Date, part: str | None) -> Days:
    """Early (1-10), mid (11-20) or late (21-) in the month, or all of it."""
    part = (part or "").lower()
    if part == "early":
        return start, start + dt.timedelta(days=9)
    if part in ("mid", "middle of"):
        return start + dt.timedelta(days=10), start + dt.timedelta(days=19)
    if part == "late":
        return start + dt.timedelta(days=20), end
    return start, end


def _h_month(m: re.Match[str], asked: Date) -> Point | None:
    month = MONTHS[m["month"].lower()]
    which = (m.groupdict().get("which") or "").lower()
    if which == "last":
        # "last March" asked in May: this year's March? English says the one before
        # the most recent when asked in March itself; otherwise the most recent.
        start, end = _recent_month(month, asked)
        if start.month == asked.month and start.year == asked.year:
            start, end = _recent_month(month, asked, back=1)
    elif which == "this":
        start, end = month_window(asked.year, month)
    else:
        start, end = _recent_month(month, asked)
    return _part_of_month(start, end, m.groupdict().get("part"))


def _h_week_of_month(m: re.Match[str], asked: Date) -> Point | None:
    month = MONTHS[m["month"].lower()]
    year = m.groupdict().get("year")
    start, end = month_window(int(year), month) if year else _recent_month(month, asked)
    if m["edge"].lower() == "first":
        return start, start + dt.timedelta(days=6)
    return end - dt.timedelta(days=6), end


def _h_year(m: re.Match[str], asked: Date) -> Point | None:
    year = int(m["year"])
    return Date(year, 1, 1), Date(year, 12, 31)


def _h_day_offset(offset: int) -> Handler:
    def handler(m: re.Match[str], asked: Date) -> Point | None:
        day = asked - dt.timedelta(days=offset)
        return day, day

    return handler


def _h_weekday(m: re.Match[str], asked: Date) -> Point | None:
    which = (m.groupdict().get("which") or "").lower()
    day = _weekday_before(WEEKDAYS[m["weekday"].lower()], asked, strictly=which in _LAST_WORDS)
    return day, day


def _h_calendar(m: re.Match[str], asked: Date) -> Point | None:
    which = m["which"].lower()
    return _calendar(_unit(m["unit"]), 0 if which in ("this", "earlier this") else 1, asked)


def _h_earlier(m: re.Match[str], asked: Date) -> Point | None:
    start, _ = _calendar(_unit(m["unit"]), 0, asked)
    return start, max(start, asked - dt.timedelta(days=1))


def _h_weekend(m: re.Match[str], asked: Date) -> Point | None:
    saturday = week_start(asked) + dt.timedelta(days=5)
    if m["which"].lower() in _LAST_WORDS and saturday + dt.timedelta(days=1) >= asked:
        saturday -= dt.timedelta(days=7)
    return saturday, saturday + dt.timedelta(days=1)


def _h_ago(m: re.Match[str], asked: Date) -> Point | None:
    return _span_back(_number(m["n"]), _unit(m["unit"]), asked)


def _h_rolling(m: re.Match[str], asked: Date) -> Point | None:
    n = _number(m["n"]) if m.groupdict().get("n") else 1
    return _rolling(n, _unit(m["unit"]), asked)


def _unit(word: str) -> str:
    return UNITS[word.lower()]


def _h_foreign_calendar(unit: str) -> Handler:
    def handler(m: re.Match[str], asked: Date) -> Point | None:
        return _calendar(unit, 1, asked)

    return handler


_LAST_WORDS = ("last", "past", "previous")

# (pattern, handler): a *point* is a day, month, year or span that bounds can take.
_POINTS: list[tuple[str, Handler]] = [
    (r"(?P<y>(?:19|20)\d\d)[-/.](?P<m>[01]?\d)[-/.](?P<d>[0-3]?\d)", _h_iso_day),
    (r"(?P<y>(?:19|20)\d\d)-(?P<m>[01]\d)(?![-/.]?\d)", _h_iso_month),
    (rf"{_MONTH}\s+{_DAY}(?:,?\s+{_YEAR})?(?![\d:])", _h_month_day),
    (rf"(?:the\s+)?{_DAY}\s+(?:of\s+)?{_MONTH}(?:,?\s+{_YEAR})?", _h_month_day),
    (rf"(?:(?P<part>early|middle of|late|mid)(?:\s+|-))?{_MONTH},?\s+{_YEAR}", _h_month_year),
    (
        rf"(?:the\s+)?(?P<edge>first|last)\s+week\s+of\s+{_MONTH}(?:,?\s+{_YEAR})?",
        _h_week_of_month,
    ),
    # the day before yesterday, today, yesterday: in English, German, French, Spanish,
    # Italian ("hier" is read apart: it is German for "here")
    (
        r"the\s+day\s+before\s+yesterday"
        r"|vorgestern|avant-hier|anteayer|antier|l'altro\s*ieri|altroieri",
        _h_day_offset(2),
    ),
    (
        r"today|tonight|this\s+(?:morning|afternoon|evening)|heute|aujourd'hui|hoy|oggi",
        _h_day_offset(0),
    ),
    (r"yesterday|last\s+night|gestern|ayer|ieri", _h_day_offset(1)),
    (rf"(?P<which>last|past|previous|this)\s+{_WEEKDAY}", _h_weekday),
    (r"(?P<which>last|past|previous|this)\s+weekend", _h_weekend),
    (r"earlier\s+this\s+(?P<unit>week|month|year)", _h_earlier),
    (
        rf"(?:(?:in|over|during|within|for)\s+)?the\s+(?:last|past|previous)\s+{_NUMBER}\s+{_EN_UNIT}",
        _h_rolling,
    ),
    (
        r"(?:(?:in|over|during|within|for)\s+the\s+(?:last|past|previous)|the\s+past)\s+"
        r"(?P<unit>week|fortnight|month|year)",
        _h_rolling,
    ),
    (rf"(?:last|past)\s+{_NUMBER}\s+{_EN_UNIT}", _h_rolling),
    (r"(?P<which>last|past|previous|this)\s+(?P<unit>week|month|year)", _h_calendar),
    (rf"{_NUMBER}\s+{_EN_UNIT}\s+ago", _h_ago),
    (
        rf"(?:(?P<which>last|this)\s+|(?P<part>early|middle of|late|mid)(?:\s+|-)){_MONTH}",
        _h_month,
    ),
    # German, French, Spanish, Italian: N units ago, last week, month, year
    (rf"(?:vor|il\s+y\s+a|hace)\s+{_NUMBER}\s+{_ANY_UNIT}", _h_ago),
    (rf"{_NUMBER}\s+{_ANY_UNIT}\s+fa", _h_ago),
    (
        r"(?:letzte|vergangene)n?\s+woche|la\s+semaine\s+(?:dernière|passée)"
        r"|la\s+semana\s+pasada|la\s+settimana\s+scorsa",
        _h_foreign_calendar("week"),
    ),
    (
        r"(?:letzten|vergangenen)\s+monat|le\s+mois\s+(?:dernier|passé)"
        r"|el\s+mes\s+pasado|il\s+mese\s+scorso",
        _h_foreign_calendar("month"),
    ),
    (
        r"(?:letztes|vergangenes)\s+jahr|l'année\s+(?:dernière|passée)|l'an\s+dernier"
        r"|el\s+año\s+pasado|l'anno\s+scorso",
        _h_foreign_calendar("year"),
    ),
]
# Points that need a preposition before them (a bare month or year is often not a time).
_AFTER_PREPOSITION: list[tuple[str, Handler]] = [
    (rf"{_MONTH}(?!\s*\d)", _h_month),
    (_YEAR, _h_year),
    # "on Friday" but not "on Friday afternoons" (a habit, not a day)
    (rf"{_WEEKDAY}(?=\s*(?:$|[?.!,;:)]|(?:{_AFTER_WEEKDAY})(?!\w)))", _h_weekday),
]
_PREPOSITIONS = r"in|during|on|since|before|after|until|till|by|from|between|of|through"
_BOUNDS = {
    "since": "from",
    "after": "after",
    "before": "before",
    "until": "to",
    "till": "to",
    "by": "to",
    "up to": "to",
}

_FLAGS = re.IGNORECASE


class _Patterns(NamedTuple):
    point: list[tuple[re.Pattern[str], Handler]]
    prep: list[tuple[re.Pattern[str], Handler]]
    bound_word: re.Pattern[str]
    between: re.Pattern[str]
    join: re.Pattern[str]
    after_join: re.Pattern[str]
    bare: list[tuple[re.Pattern[str], Handler]]
    french_hier: re.Pattern[str]
    now: re.Pattern[str]


@functools.cache
def _patterns() -> _Patterns:
    """The expressions, compiled on the first query that may name a time (``may_name_a_time``):
    compiling them costs ~25 ms, which a search without one never pays."""
    return _Patterns(
        point=[(re.compile(rf"(?<!\w)(?:{p})(?!\w)", _FLAGS), h) for p, h in _POINTS],
        prep=[
            (re.compile(rf"(?<!\w)(?P<prep>{_PREPOSITIONS})\s+(?:{p})(?!\w)", _FLAGS), h)
            for p, h in _AFTER_PREPOSITION
        ],
        bound_word=re.compile(rf"(?<!\w)(?P<word>{_alternation(list(_BOUNDS))})\s+$", _FLAGS),
        between=re.compile(r"(?<!\w)(?P<word>between|from)\s+$", _FLAGS),
        join=re.compile(r"^\s+(?:and|to|until|till|through)\s+$", _FLAGS),
        after_join=re.compile(r"\s+(?:and|to|until|till|through)\s+", _FLAGS),
        bare=[(re.compile(rf"(?:{p})(?!\w)", _FLAGS), h) for p, h in _AFTER_PREPOSITION],
        french_hier=re.compile(r"(?<!\w)hier(?!\w)", _FLAGS),
        now=re.compile(rf"(?<!\w)(?:{_NOW})(?!\w)", _FLAGS),
    )


@dataclass(frozen=True)
class _Found:
    start: int
    end: int
    point: Point


def _points(query: str, asked: Date, language: str | None) -> list[_Found]:
    """Every point in ``query``, earliest and longest first, none overlapping."""
    found: list[_Found] = []
    for regex, handler in _patterns().point:
        for m in regex.finditer(query):
            point = handler(m, asked)
            if point is not None:
                found.append(_Found(m.start(), m.end(), point))
    for regex, handler in _patterns().prep:
        for m in regex.finditer(query):
            point = handler(m, asked)
            if point is not None:
                start = m.end("prep")
                while query[start].isspace():
                    start += 1
                found.append(_Found(start, m.end(), point))
    if language == "fr":  # "hier" is German for "here"
        for m in _patterns().french_hier.finditer(query):
            day = asked - dt.timedelta(days=1)
            found.append(_Found(m.start(), m.end(), (day, day)))
    found.sort(key=lambda f: (f.start, -(f.end - f.start)))
    kept: list[_Found] = []
    for f in found:
        if kept and f.start < kept[-1].end:
            continue
        kept.append(f)
    return kept


def find(
    query: str, asked: Date | dt.datetime | None = None, language: str | None = None
) -> list[TimeWindow]:
    """The time expressions of ``query`` as windows, in the order written.

    ``asked``: when the question is asked (today when None); ``language``: the query's
    language if known (``language.detect``), for words that mean a time in one
    language only.
    """
    if isinstance(asked, dt.datetime):
        asked = asked.date()
    today = asked or Date.today()
    if not may_name_a_time(query):
        return []
    points = _points(query, today, language)
    out: list[TimeWindow] = []
    i = 0
    while i < len(points):
        p = points[i]
        start, end = p.point
        lo = p.start
        cut = max(0, p.start - 16)  # a bound word is right before: look no further back
        before = query[cut : p.start]
        between = _patterns().between.search(before)
        nxt = points[i + 1] if i + 1 < len(points) else None
        if between and not (nxt and _patterns().join.match(query[p.end : nxt.start])):
            nxt = _bare_after_join(query, p.end, today) or nxt
        if between and nxt and _patterns().join.match(query[p.end : nxt.start]):
            lo, end = cut + between.start(), nxt.point[1]
            if start and end and end < start:  # "between November and February"
                start = add_months(start, -12)
            out.append(TimeWindow(start, end, query[lo : nxt.end], (lo, nxt.end)))
            i += 2
            continue
        bound = _patterns().bound_word.search(before)
        if bound:
            lo = cut + bound.start()
            kind = _BOUNDS[bound["word"].lower()]
            if kind == "from":
                end = max(today, start) if start else today
            elif kind == "after":
                start = end + dt.timedelta(days=1) if end else None
                end = max(today, start) if start else today
            elif kind == "before":
                start, end = None, (start - dt.timedelta(days=1)) if start else None
            elif kind == "to":
                start = None
        out.append(TimeWindow(start, end, query[lo : p.end], (lo, p.end)))
        i += 1
    if not out:  # days named say more than "now" does
        now = _patterns().now.search(query)
        if now is not None:
            out.append(TimeWindow(None, None, now[0], now.span(), newest=True))
    return out


def _bare_after_join(query: str, at: int, asked: Date) -> _Found | None:
    """In "between March and May", the bare month, year or weekday after the "and"."""
    m = _patterns().after_join.match(query, at)
    if m is None:
        return None
    for regex, handler in _patterns().bare:
        bare = regex.match(query, m.end())
        if bare:
            point = handler(bare, asked)
            return _Found(bare.start(), bare.end(), point) if point else None
    return None


def combined(windows: Sequence[TimeWindow]) -> TimeWindow | None:
    """One window for a query's expressions: the span from the earliest start to the
    latest end (a question about "March and May" is about those months and between)."""
    if not windows:
        return None
    if len(windows) == 1:
        return windows[0]
    starts = [w.start for w in windows]
    ends = [w.end for w in windows]
    start = None if any(s is None for s in starts) else min(s for s in starts if s)
    end = None if any(e is None for e in ends) else max(e for e in ends if e)
    text = " … ".join(w.text for w in windows)
    return TimeWindow(start, end, text, (windows[0].span[0], windows[-1].span[1]))


def without(query: str, windows: Sequence[TimeWindow]) -> str:
    """``query`` with the words of ``windows`` blanked out (spaces keep offsets)."""
    chars = list(query)
    for w in windows:
        a, b = w.span
        chars[a:b] = " " * (b - a)
    return "".join(chars)
