"""Hybrid search's second look: the vector side asked again, steered by the first answer.

A question whose answer is spread over several notes ("how many plants did I buy this
month", over sessions weeks apart) names the topic in a few words; the query's vector
finds the note that says it most plainly and misses the others, which say it in
their own words. The first fused answer knows more than the query does: its top notes
show what the answer looks like. So hybrid search scores the vector side a second time
against the query's vector moved toward the chunks its first ``FEEDBACK_NOTES`` notes
show (Rocchio, "Relevance feedback in information retrieval", 1971; on dense retrievers,
Li et al., "Pseudo Relevance Feedback with Deep Language Models and Dense Retrievers:
Successes and Pitfalls", ACM TOIS 2023):

    moved = (query + FEEDBACK_WEIGHT * mean(shown chunks' vectors)) / its length

and fuses again with the same keyword list. Notes are ranked by the second fusion; the
chunk shown for each note is still the one that best matches the query itself (the
first fusion's choice), since the moved vector finds notes, not the words asked for.

Why two notes and the fused first answer: the keyword list's top chunks steer the
vector side towards keyword's mistakes where keyword is weak (dialogue: −0.04 nDCG@10),
the vector list's own top towards the vector side's (CACM, long-note sections); three
notes bring in the third's topic, one note pulls only towards itself. Measured on every
collection in bench/eval/RESULTS.md ("hybrid's second look").
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np

    from markvault.search.fusion import Fused

FEEDBACK_NOTES = 2  # first notes of the fused answer whose shown chunks steer the query
FEEDBACK_WEIGHT = 0.3  # their mean vector's weight against the query's (unit) vector


def first_shown(fused: Sequence[Fused], note_of: Callable[[int], str | None]) -> list[int]:
    """The chunk each of the first ``FEEDBACK_NOTES`` notes of ``fused`` shows (its
    first entry: fusion lists a note's chunks best first)."""
    seen: set[str] = set()
    shown: list[int] = []
    for entry in fused:
        note = note_of(entry[0])
        if note is None or note in seen:
            continue
        seen.add(note)
        shown.append(entry[0])
        if len(shown) == FEEDBACK_NOTES:
            break
    return shown


def moved_query(query: np.ndarray, shown: np.ndarray) -> np.ndarray:
    """The query's unit vector moved toward the mean of ``shown`` (rows of unit
    vectors), as a unit vector of the query's type."""
    import numpy as np  # the vector side's: a keyword search never loads numpy

    moved = query.astype(np.float32) + FEEDBACK_WEIGHT * shown.astype(np.float32).mean(axis=0)
    length = float(np.linalg.norm(moved))
    return (moved / length if length > 0 else query).astype(query.dtype, copy=False)


def with_first_chunks(
    first: Sequence[Fused], second: Sequence[Fused], note_of: Callable[[int], str | None]
) -> list[Fused]:
    """``second``'s notes, scores and ranks, each note's chunks in ``first``'s order
    (what the query itself matches best shown first); chunks only ``second`` holds
    follow, in its order."""
    place = {entry[0]: i for i, entry in enumerate(first)}
    by_note: dict[str | None, list[Fused]] = {}
    for entry in second:
        by_note.setdefault(note_of(entry[0]), []).append(entry)
    out: list[Fused] = []
    for entries in by_note.values():
        out += sorted(entries, key=lambda e: place.get(e[0], len(place)))
    return out
