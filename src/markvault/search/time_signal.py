"""A query's time window as a signal in search: notes dated inside it (or near it) rank
higher, nothing is filtered out (``boost``, ``closeness``), and the result says which
window it read (``time_line``). The window itself is read by ``time_expressions``.

Pure and deterministic, like ``time_expressions``: the index reads a note's dates with
``note_days``.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from markvault.errors import UsageError

if TYPE_CHECKING:  # a query without time words never loads the expressions
    from markvault.search.time_expressions import TimeWindow

Date = dt.date

# A note inside the window gains this share of its own score (doubled: it passes the
# notes outside that match up to twice as well); a note nearby gains less, a note that
# matches nothing gains nothing, and nothing is removed. Gaining a share of the top
# hit's score instead ranked every note of the window first, related or not: in hybrid
# mode, where every note has a score, that cost LongMemEval (bench/eval/RESULTS.md).
TIME_WEIGHT = 1.0
# The time words are left out of the keyword query: a note written another day that
# says "last Tuesday" three times is not what "the deploy last Tuesday" asks for, and
# with a boost relative to a note's own score they would outweigh it (measured both
# ways on LongMemEval: bench/eval/RESULTS.md). The embedding model still reads them.
LEAVE_OUT_WORDS = True
OPEN_SLACK = 7  # days a note may lie outside an open window and still gain a little
# "now", "currently", "my current" (a window marked ``newest``): among the first
# ``NEWEST_DEPTH`` notes that match, the newest gains this share of its own score, the
# oldest nothing, the others by where their newest date falls between. It lifts the
# session that changed a value above the note that first held it; ranking every recent
# note first would bury the answer under whatever was written last.
NEWEST_WEIGHT = 0.6
NEWEST_DEPTH = 30
OUTSIDE = 0.5  # the most a note just outside the window gains (of what one inside does)


def asked_date(as_of: str | Date | dt.datetime | None) -> Date | None:
    """The "asked at" date of ``as_of`` (an ISO date or date-time), None for today.

    Raises:
        UsageError: ``as_of`` is not an ISO date.
    """
    if as_of is None or isinstance(as_of, Date):
        return as_of.date() if isinstance(as_of, dt.datetime) else as_of
    try:
        return dt.datetime.fromisoformat(as_of.strip()).date()
    except ValueError:
        raise UsageError(
            f"as_of {as_of!r} is not a date.", "Use an ISO date, e.g. 2026-01-31."
        ) from None


def time_line(window: Mapping[str, Any]) -> str:
    """A search result's window for people: 'last Tuesday' = 2026-03-03 (asked 2026-03-12)."""
    start, end = window.get("start"), window.get("end")
    asked = window.get("asked_at")
    if window.get("newest"):
        return f"{window.get('text')!r} = now (asked {asked}; the newest matching notes ranked up)"
    if start == end:
        days = str(start)
    elif start is None:
        days = f"up to {end}"
    elif end is None:
        days = f"from {start}"
    else:
        days = f"{start} to {end}"
    return f"{window.get('text')!r} = {days} (asked {asked}; notes dated then ranked up)"


def outside_quotes(query: str, windows: Sequence[TimeWindow]) -> list[TimeWindow]:
    """The windows not inside a quoted phrase (a phrase is searched as written)."""
    return [w for w in windows if query.count('"', 0, w.span[0]) % 2 == 0]


def closeness(window: TimeWindow, days: Sequence[Date]) -> float:
    """How well a note dated ``days`` fits ``window``, the best of its dates: 1 inside;
    outside, ``OUTSIDE`` falling linearly to 0 within half the window's length (at
    least a day; ``OPEN_SLACK`` days for an open window)."""
    span = window.days
    slack = max(1, span // 2) if span is not None else OPEN_SLACK
    best = 0.0
    for day in days:
        distance = window.distance(day)
        fit = 1.0 if distance == 0 else OUTSIDE * (1.0 - distance / (slack + 1))
        best = max(best, fit)
    return best


def newest_fit(days: Mapping[str, Sequence[Date]]) -> dict[str, float]:
    """Each note's place in time among ``days`` (the first ``NEWEST_DEPTH`` matching
    notes' dates): 1 for the newest, 0 for the oldest and for a note without a date,
    linear between by its newest date. Nothing when they all share one day."""
    newest = {path: max(values) for path, values in days.items() if values}
    if not newest:
        return {}
    first, last = min(newest.values()), max(newest.values())
    if first == last:
        return {}
    return {path: (day - first).days / (last - first).days for path, day in newest.items()}


def note_days(values: Sequence[str | None]) -> list[Date]:
    """The days among a note's date values (ISO strings; others are ignored)."""
    out = []
    for value in values:
        if not value:
            continue
        try:
            out.append(Date.fromisoformat(str(value)[:10]))
        except ValueError:
            continue
    return out


def boost(
    fused: Sequence[tuple[int, float, dict[str, int], dict[str, float]]],
    note_of: Callable[[int], str | None],
    fit: Callable[[str], float],
    weight: float | None = None,
) -> list[tuple[int, float, dict[str, int], dict[str, float]]]:
    """``fused`` (chunk, score, ranks, scores), each chunk's score raised by ``weight``
    times its note's ``fit`` (0-1) times itself (a score below 0 is not raised), in the
    new order (ties keep theirs); each entry's scores gain a ``time`` entry, its note's
    fit."""
    if not fused:
        return []
    weight = TIME_WEIGHT if weight is None else weight
    out = []
    for cid, score, ranks, scores in fused:
        note = note_of(cid)
        value = fit(note) if note is not None else 0.0
        raised = score + weight * value * max(score, 0.0)
        out.append((cid, raised, ranks, {**scores, "time": value}))
    out.sort(key=lambda f: -f[1])
    return out
