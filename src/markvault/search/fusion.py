"""Fusing rankings: hybrid search's convex combination, deep search's rank fusion.

**Hybrid** ranks notes by a convex combination of the two lists' normalized scores
(Bruch, Gai and Ingber, "An Analysis of Fusion Functions for Hybrid Retrieval", ACM
TOIS 2023), each list mapped so that its best note scores 1 and a note unrelated to the
query scores 0:

    fused(note) = w * bm25(note) / best bm25
                + (1 - w) * (cosine(note) - typical) / (best cosine - typical)

with ``w`` = ``KEYWORD_WEIGHT`` (equal weights). A note's BM25 is its own (index/bm25.py), its
cosine that of its closest chunk. What an unrelated note scores is 0 for BM25 (none of
the query's words: most of the vault), but not for cosine: every chunk has some
similarity to the query, so ``typical`` is the query's median cosine over all the
vault's chunks (``typical_cosine``), measured per query rather than assumed. Without
it a cosine scale starting at 0 squeezes the vector side's differences into the top of
its range, and the vector list counted for less than the keyword list wherever its
typical cosine was high (bench/eval/RESULTS.md). Unlike reciprocal rank fusion, scores
keep how far apart the hits are: when one side's list is flat (its first hit barely
better than its fiftieth: nothing to offer), it barely reorders the other's, and a
clear winner on either side stays near the top. Measured against RRF on every
collection and set in bench/eval/RESULTS.md. A note only one list found gets its exact
cosine when the keyword side found it (the vector side scores every chunk), and 0 for
BM25 otherwise (none of the query's words, or fewer than the last one fetched).

The chunk shown for a note is the one the same combination scores best, chunk by
chunk: its own BM25 (over the best chunk's) and its cosine (on the same scale as the
note's).

**Deep** search fuses many lists (the query's own and the caller's variants, ``lex:``
keyword and ``vec:``/``hyde:`` vector) by weighted reciprocal rank fusion: each list
adds weight / (``RRF_K`` + rank) (Cormack, Clarke and Büttcher, SIGIR 2009).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np

KEYWORD_WEIGHT = 0.5
RRF_K = 60
TYPICAL_SAMPLE = 10_000  # cosines the typical one is taken from

Rows = Sequence[tuple[int, float]]  # (chunk id, score), best first
Fused = tuple[int, float, dict[str, int], dict[str, float]]  # chunk, score, ranks, scores


def single(name: str, rows: Rows) -> list[Fused]:
    """One list as it is."""
    return [(cid, score, {name: i + 1}, {name: score}) for i, (cid, score) in enumerate(rows)]


def rrf(lists: Mapping[str, Rows], weights: Mapping[str, float] | None = None) -> list[Fused]:
    """Weighted reciprocal rank fusion of chunk lists: each adds weight / (RRF_K + rank)."""
    fused: dict[int, list[Any]] = {}
    for name, rows in lists.items():
        weight = (weights or {}).get(name, 1.0)
        for rank, (cid, score) in enumerate(rows, start=1):
            entry = fused.setdefault(cid, [0.0, {}, {}])
            entry[0] += weight / (RRF_K + rank)
            entry[1][name] = rank
            entry[2][name] = score
    ordered = sorted(fused.items(), key=lambda kv: (-kv[1][0], kv[0]))
    return [(cid, v[0], v[1], v[2]) for cid, v in ordered]


def typical_cosine(cosines: np.ndarray) -> float:
    """What a chunk unrelated to the query scores: the median of its cosines with every
    chunk, never below 0 (cosine's floor in the combination). Over an evenly strided
    sample of at most ``TYPICAL_SAMPLE`` of them: exact on smaller vaults, on larger ones
    within a fraction of a percentile of it, in constant time."""
    import numpy as np  # the vector side's: a keyword search never loads numpy

    step = -(-len(cosines) // TYPICAL_SAMPLE)
    sample = cosines[::step] if step > 1 else cosines
    sample = sample[np.isfinite(sample)]
    if not len(sample):
        return 0.0
    # np.median's value by partition: np.median itself imports numpy.ma (~20 ms).
    half = len(sample) // 2
    if len(sample) % 2:
        median = float(np.partition(sample, half)[half])
    else:
        low, high = np.partition(sample, [half - 1, half])[half - 1 : half + 1]
        median = (float(low) + float(high)) / 2
    return max(median, 0.0)


class _Side:
    """One list seen by note: its score, rank and chunks (best first)."""

    def __init__(self, rows: Rows, note_of: Mapping[int, str], best_of_note: bool) -> None:
        self.score: dict[str, float] = {}
        self.rank: dict[str, int] = {}
        self.chunks: dict[str, list[int]] = {}
        for cid, value in rows:
            note = note_of.get(cid)
            if note is None:
                continue
            self.chunks.setdefault(note, []).append(cid)
            if note not in self.score:
                self.rank[note] = len(self.rank) + 1
                self.score[note] = value
            elif best_of_note:
                self.score[note] = max(self.score[note], value)


def convex(
    keyword: Rows,
    vector: Rows,
    note_of: Mapping[int, str],
    cosine: Callable[[Sequence[int]], dict[int, float]],
    chunk_bm25: Mapping[int, float],
    *,
    cosine_floor: float = 0.0,
) -> list[Fused]:
    """Hybrid fusion (see the module docstring), one entry per chunk: each note's chunk
    to show first, then its other chunks, with the note's fused score.

    ``keyword``: chunks ordered by their note's BM25 (the note's score on each chunk);
    ``vector``: chunks by cosine; ``note_of``: chunk -> note; ``cosine``: exact cosine
    of given chunks (for keyword hits the vector list did not reach); ``chunk_bm25``:
    the keyword chunks' own BM25, to choose the chunk shown; ``cosine_floor``: what an
    unrelated chunk scores (``typical_cosine``), the vector side's 0.
    """
    kw = _Side(keyword, note_of, best_of_note=False)
    vec = _Side(vector, note_of, best_of_note=True)
    cos = dict(vector)
    missing = [c for n, cs in kw.chunks.items() for c in cs if c not in cos]
    cos.update(cosine(missing) if missing else {})
    for note, chunks in kw.chunks.items():
        if note not in vec.score:
            vec.score[note] = max(cos.get(c, 0.0) for c in chunks)
    kw_best = max(kw.score.values(), default=0.0)
    vec_best = max(vec.score.values(), default=0.0)
    # A floor at or above the best (every chunk alike) would leave no scale: 0 then.
    floor = cosine_floor if 0.0 < cosine_floor < vec_best else 0.0
    vec_span = vec_best - floor
    w = KEYWORD_WEIGHT if kw_best > 0 and vec_span > 0 else (1.0 if kw_best > 0 else 0.0)

    def vector_part(cosine: float) -> float:
        # Below the floor goes below 0: order kept, such a note pulled down.
        return (max(cosine, 0.0) - floor) / vec_span if vec_span > 0 else 0.0

    def combined(keyword_score: float, cosine: float) -> float:
        k = keyword_score / kw_best if kw_best > 0 else 0.0
        return w * k + (1 - w) * vector_part(cosine)

    fused = {
        note: combined(kw.score.get(note, 0.0), vec.score.get(note, 0.0))
        for note in kw.score.keys() | vec.score.keys()
    }
    chunk_best = max(chunk_bm25.values(), default=0.0)
    # The keyword side returns a note's best few chunks; its others score at most as
    # much as the last of those (they would otherwise count as matching nothing).
    least = {note: min(chunk_bm25.get(c, 0.0) for c in cs) for note, cs in kw.chunks.items()}

    def chunk_score(cid: int) -> float:
        own = chunk_bm25.get(cid, least.get(note_of.get(cid, ""), 0.0))
        k = own / chunk_best if chunk_best > 0 else 0.0
        return w * k + (1 - w) * vector_part(cos.get(cid, 0.0))

    out: list[Fused] = []
    for note in sorted(fused, key=lambda n: (-fused[n], n)):
        ranks = {
            name: side.rank[note]
            for name, side in (("keyword", kw), ("vector", vec))
            if note in side.rank
        }
        scores = {"keyword": kw.score[note]} if note in kw.score else {}
        if note in vec.score:
            scores["vector"] = vec.score[note]
        chunks = list(dict.fromkeys(kw.chunks.get(note, []) + vec.chunks.get(note, [])))
        chunks.sort(key=lambda c: (-chunk_score(c), c))
        out += [(c, fused[note], ranks, scores) for c in chunks]
    return out
