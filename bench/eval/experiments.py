"""Ranking experiments: one change at a time, measured on every collection and set.

Nothing here edits ``src/``. Each experiment swaps a function or constant of markvault
for the length of one run (``runner.patched``) and reruns the modes it affects on every
set; the report gives its nDCG@10 difference from the same mode's baseline per set and
level, with a paired randomization test's p-value (most differences on a few dozen
queries are noise). Two kinds:

- **ablations** undo one of the changes of issue 11 (query term frequency, stop words,
  their language, notes as the BM25 document, score fusion, the language check), and
  "issue 6" undoes all of them at once: the before figures, from the same run;
- **alternatives** that were measured and not kept (other fusion functions, weights
  and normalizations, another chunk to show).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

import markvault.index.bm25
import markvault.index.keyword
import markvault.search.fusion
import markvault.search.language
import markvault.search.searcher
from markvault.index.filters import sql_string
from markvault.markdown.tokens import latin_share

from . import runner

Patch = Callable[[], contextlib.AbstractContextManager[None]]
Rows = Sequence[tuple[int, float]]

_ORIGINAL = {
    "scored_sql": markvault.index.bm25.scored_sql,
    "note_scores": markvault.index.bm25.note_scores,
    "bm25": markvault.index.keyword.KeywordIndex.bm25,
    "convex": markvault.search.fusion.convex,
}


@dataclass(frozen=True)
class Experiment:
    name: str
    modes: tuple[str, ...]  # the modes it changes
    patch: Patch
    kind: str = "ablation"  # or "alternative"


# ---- the changes undone ----------------------------------------------------------------


def _no_query_tf(found: Any, terms: Sequence[str], k1: float, b: float, **kw: Any) -> str:
    return _ORIGINAL["scored_sql"](found, list(dict.fromkeys(terms)), k1, b, **kw)


def _no_query_tf_notes(found: Any, terms: Sequence[str], *args: Any) -> Any:
    return _ORIGINAL["note_scores"](found, list(dict.fromkeys(terms)), *args)


def _chunks_alone(self: Any, *args: Any, per_note: bool = False, **kw: Any) -> Any:
    return _ORIGINAL["bm25"](self, *args, per_note=False, **kw)


def _script_only(model: str, text: str, language: str | None) -> bool:
    """Issue 6's check: only text mostly in another script skips the English model."""
    from markvault.config import DEFAULT_MODEL_NAMES

    return model not in DEFAULT_MODEL_NAMES or latin_share(text) >= 0.5


def _rrf_chunks(keyword: Rows, vector: Rows, *args: Any, **kw: Any) -> Any:
    """Issue 6's hybrid: reciprocal rank fusion (k = 60) of the two chunk lists."""
    return markvault.search.fusion.rrf({"keyword": keyword, "vector": vector})


def _rrf_notes(
    keyword: Rows, vector: Rows, note_of: Mapping[int, str], cosine: Any, chunk_bm25: Any, **_: Any
) -> Any:
    """Reciprocal rank fusion (k = 60) of the two lists seen as notes (their best
    chunks); the chunk shown chosen as convex() does."""
    ranks: dict[str, float] = {}
    for rows in (keyword, vector):
        seen: list[str] = []
        for cid, _ in rows:
            note = note_of.get(cid)
            if note is not None and note not in seen:
                seen.append(note)
        for rank, note in enumerate(seen, start=1):
            ranks[note] = ranks.get(note, 0.0) + 1 / (markvault.search.fusion.RRF_K + rank)
    shown = _ORIGINAL["convex"](keyword, vector, note_of, cosine, chunk_bm25)
    order = {note: i for i, note in enumerate(sorted(ranks, key=lambda n: (-ranks[n], n)))}
    rows = [(c, ranks[note_of[c]], r, s) for c, _, r, s in shown if note_of.get(c) in order]
    return sorted(rows, key=lambda f: order[note_of[f[0]]])


def _minmax(
    keyword: Rows, vector: Rows, note_of: Any, cosine: Any, chunk_bm25: Any, **_: Any
) -> Any:
    """Convex combination after min-max normalization: each list's worst score fetched
    becomes 0 (TMM's theoretical minimum of 0 replaced by the observed one)."""
    k_low = min((s for _, s in keyword), default=0.0)
    v_low = min((s for _, s in vector), default=0.0)

    def shifted_cosine(ids: Sequence[int]) -> dict[int, float]:
        return {c: max(s - v_low, 0.0) for c, s in cosine(ids).items()}

    return _ORIGINAL["convex"](
        [(c, s - k_low) for c, s in keyword],
        [(c, s - v_low) for c, s in vector],
        note_of,
        shifted_cosine,
        chunk_bm25,
    )


def _note_scores(
    keyword: Rows, vector: Rows, note_of: Mapping[int, str], cosine: Any
) -> tuple[dict[str, float], dict[str, float]]:
    """Each list's score per note as convex() sees it: a note's BM25, its best cosine
    (exact for the keyword side's notes the vector list did not reach)."""
    kw: dict[str, float] = {}
    for cid, s in keyword:
        note = note_of.get(cid)
        if note is not None:
            kw.setdefault(note, s)
    vec: dict[str, float] = {}
    for cid, s in vector:
        note = note_of.get(cid)
        if note is not None:
            vec[note] = max(vec.get(note, s), s)
    missing = [c for c, _ in keyword if note_of.get(c) is not None and note_of[c] not in vec]
    for cid, s in (cosine(missing) if missing else {}).items():
        note = note_of[cid]
        vec[note] = max(vec.get(note, s), s)
    return kw, vec


def _reordered(
    fused: Mapping[str, float],
    keyword: Rows,
    vector: Rows,
    note_of: Mapping[int, str],
    cosine: Any,
    chunk_bm25: Any,
) -> Any:
    """convex()'s rows (its chunk shown per note) with the notes in the order of ``fused``."""
    shown = _ORIGINAL["convex"](keyword, vector, note_of, cosine, chunk_bm25)
    order = {n: i for i, n in enumerate(sorted(fused, key=lambda n: (-fused[n], n)))}
    rows = [(c, fused[note_of[c]], r, s) for c, _, r, s in shown if note_of.get(c) in order]
    return sorted(rows, key=lambda f: order[note_of[f[0]]])


def _zscores(
    keyword: Rows, vector: Rows, note_of: Any, cosine: Any, chunk_bm25: Any, **_: Any
) -> Any:
    """Convex combination (equal weights) of z-scores, each over its own list's notes; a
    note one list did not return gets that list's lowest."""
    kw, vec = _note_scores(keyword, vector, note_of, cosine)
    if not kw or not vec:
        return _ORIGINAL["convex"](keyword, vector, note_of, cosine, chunk_bm25)

    def z(scores: Mapping[str, float]) -> dict[str, float]:
        values = list(scores.values())
        mean = sum(values) / len(values)
        sd = (sum((v - mean) ** 2 for v in values) / len(values)) ** 0.5 or 1.0
        return {n: (v - mean) / sd for n, v in scores.items()}

    kz, vz = z(kw), z(vec)
    k_low, v_low = min(kz.values()), min(vz.values())
    fused = {n: 0.5 * kz.get(n, k_low) + 0.5 * vz.get(n, v_low) for n in kz.keys() | vz.keys()}
    return _reordered(fused, keyword, vector, note_of, cosine, chunk_bm25)


def _tmm_floor(
    keyword: Rows, vector: Rows, note_of: Any, cosine: Any, chunk_bm25: Any, **_: Any
) -> Any:
    """convex(), but a note the keyword list did not return gets that list's lowest
    BM25 (it scored at most that much) instead of 0."""
    kw, vec = _note_scores(keyword, vector, note_of, cosine)
    if not kw or not vec:
        return _ORIGINAL["convex"](keyword, vector, note_of, cosine, chunk_bm25)
    k_best, k_low = max(kw.values()), min(kw.values())
    v_best = max(vec.values())
    if k_best <= 0 or v_best <= 0:
        return _ORIGINAL["convex"](keyword, vector, note_of, cosine, chunk_bm25)
    fused = {
        n: 0.5 * kw.get(n, k_low) / k_best + 0.5 * max(vec.get(n, 0.0), 0.0) / v_best
        for n in kw.keys() | vec.keys()
    }
    return _reordered(fused, keyword, vector, note_of, cosine, chunk_bm25)


def _cosine_minmax(
    keyword: Rows, vector: Rows, note_of: Any, cosine: Any, chunk_bm25: Any, **_: Any
) -> Any:
    """convex(), but cosine min-max normalized over its list (BM25's minimum of 0 is
    reached by any note without the query's words; cosine's 0 is not): (cos - lowest) /
    (best - lowest); BM25 still over its best."""
    kw, vec = _note_scores(keyword, vector, note_of, cosine)
    if not kw or not vec:
        return _ORIGINAL["convex"](keyword, vector, note_of, cosine, chunk_bm25)
    k_best = max(kw.values())
    v_best = max(vec.values())
    v_low = min(s for _, s in vector) if vector else 0.0
    if k_best <= 0 or v_best <= v_low:
        return _ORIGINAL["convex"](keyword, vector, note_of, cosine, chunk_bm25)
    fused = {
        n: 0.5 * kw.get(n, 0.0) / k_best
        + 0.5 * max(vec.get(n, v_low) - v_low, 0.0) / (v_best - v_low)
        for n in kw.keys() | vec.keys()
    }
    return _reordered(fused, keyword, vector, note_of, cosine, chunk_bm25)


def _topk_mean(k: int) -> Callable[..., Any]:
    def fuse(
        keyword: Rows, vector: Rows, note_of: Any, cosine: Any, chunk_bm25: Any, **_: Any
    ) -> Any:
        """convex(), each list divided by the mean of its best k notes instead of its best
        (one outlier at the top no longer flattens the rest of its list)."""
        kw, vec = _note_scores(keyword, vector, note_of, cosine)
        if not kw or not vec:
            return _ORIGINAL["convex"](keyword, vector, note_of, cosine, chunk_bm25)
        k_top = sorted(kw.values(), reverse=True)[:k]
        v_top = sorted(vec.values(), reverse=True)[:k]
        k_norm, v_norm = sum(k_top) / len(k_top), sum(v_top) / len(v_top)
        if k_norm <= 0 or v_norm <= 0:
            return _ORIGINAL["convex"](keyword, vector, note_of, cosine, chunk_bm25)
        fused = {
            n: 0.5 * kw.get(n, 0.0) / k_norm + 0.5 * max(vec.get(n, 0.0), 0.0) / v_norm
            for n in kw.keys() | vec.keys()
        }
        return _reordered(fused, keyword, vector, note_of, cosine, chunk_bm25)

    return fuse


def _raw_cosine(
    keyword: Rows, vector: Rows, note_of: Any, cosine: Any, chunk_bm25: Any, **_: Any
) -> Any:
    """convex(), but cosine kept on its own theoretical scale (over 1, not over the best
    hit); BM25, unbounded, still over its best."""
    kw, vec = _note_scores(keyword, vector, note_of, cosine)
    if not kw or not vec or max(kw.values()) <= 0:
        return _ORIGINAL["convex"](keyword, vector, note_of, cosine, chunk_bm25)
    k_best = max(kw.values())
    fused = {
        n: 0.5 * kw.get(n, 0.0) / k_best + 0.5 * max(vec.get(n, 0.0), 0.0)
        for n in kw.keys() | vec.keys()
    }
    return _reordered(fused, keyword, vector, note_of, cosine, chunk_bm25)


def _note_and_passage_cosine(
    keyword: Rows, vector: Rows, note_of: Any, cosine: Any, chunk_bm25: Any, **_: Any
) -> Any:
    """convex(), but a note's cosine, like its BM25, half the note's (the mean over the
    chunks either list reached) and half its best chunk's."""
    kw, vec = _note_scores(keyword, vector, note_of, cosine)
    if not kw or not vec:
        return _ORIGINAL["convex"](keyword, vector, note_of, cosine, chunk_bm25)
    chunks: dict[str, set[int]] = {}
    for cid, _ in [*keyword, *vector]:
        if note_of.get(cid) is not None:
            chunks.setdefault(note_of[cid], set()).add(cid)
    cos = dict(vector)
    missing = [c for cs in chunks.values() for c in cs if c not in cos]
    cos.update(cosine(missing) if missing else {})
    vec = {
        n: 0.5 * max(cos.get(c, 0.0) for c in cs) + 0.5 * sum(cos.get(c, 0.0) for c in cs) / len(cs)
        for n, cs in chunks.items()
    }
    k_best, v_best = max(kw.values()), max(vec.values())
    if k_best <= 0 or v_best <= 0:
        return _ORIGINAL["convex"](keyword, vector, note_of, cosine, chunk_bm25)
    fused = {
        n: 0.5 * kw.get(n, 0.0) / k_best + 0.5 * max(vec.get(n, 0.0), 0.0) / v_best
        for n in kw.keys() | vec.keys()
    }
    return _reordered(fused, keyword, vector, note_of, cosine, chunk_bm25)


def _keyword_chunk_shown(
    keyword: Rows, vector: Rows, note_of: Mapping[int, str], cosine: Any, chunk_bm25: Any, **_: Any
) -> Any:
    """convex(), but each note shows the chunk keyword search ranks best in it."""
    fused = _ORIGINAL["convex"](keyword, vector, note_of, cosine, chunk_bm25)
    best: dict[str, int] = {}
    for cid, _ in keyword:
        best.setdefault(note_of.get(cid, ""), cid)
    out: list[Any] = []
    for note in dict.fromkeys(note_of.get(f[0], "") for f in fused):
        rows = [f for f in fused if note_of.get(f[0], "") == note]
        first = best.get(note)
        rows.sort(key=lambda f: f[0] != first)
        out += rows
    return out


@contextlib.contextmanager
def _patches(*items: tuple[Any, dict[str, Any]]) -> Iterator[None]:
    with contextlib.ExitStack() as stack:
        for target, values in items:
            stack.enter_context(runner.patched(target, **values))
        yield


NO_QTF = (markvault.index.bm25, {"scored_sql": _no_query_tf, "note_scores": _no_query_tf_notes})
NO_STOP = (markvault.search.language, {"query_stopwords": lambda language: frozenset()})
CHUNKS = (markvault.index.keyword.KeywordIndex, {"bm25": _chunks_alone})
RRF_CHUNKS = (markvault.search.fusion, {"convex": _rrf_chunks})
SCRIPT_ONLY = (markvault.search.language, {"model_reads": _script_only})
NO_COSINE_FLOOR = (markvault.search.fusion, {"typical_cosine": lambda cosines: 0.0})


def _cosine_floor_at(statistic: Callable[[np.ndarray], float]) -> Patch:
    def typical(cosines: np.ndarray) -> float:
        finite = cosines[np.isfinite(cosines)]
        return max(float(statistic(finite)), 0.0) if len(finite) else 0.0

    return lambda: _patches((markvault.search.fusion, {"typical_cosine": typical}))


def default_experiments() -> list[Experiment]:
    kw_and_hybrid = ("keyword", "hybrid")
    return [
        Experiment(
            "issue 6: all of the below undone",
            ("keyword", "hybrid"),
            lambda: _patches(NO_QTF, NO_STOP, CHUNKS, RRF_CHUNKS, SCRIPT_ONLY),
        ),
        Experiment("no query term frequency", kw_and_hybrid, lambda: _patches(NO_QTF)),
        Experiment("no stop words", kw_and_hybrid, lambda: _patches(NO_STOP)),
        Experiment(
            "no language detection (English stop words; vectors fused for all Latin text)",
            kw_and_hybrid,
            lambda: _patches((markvault.search.language, {"detect": lambda words: None})),
        ),
        Experiment("chunks scored alone (not notes)", kw_and_hybrid, lambda: _patches(CHUNKS)),
        Experiment(
            "fusion: cosine over its best from 0 (no typical floor)",
            ("hybrid",),
            lambda: _patches(NO_COSINE_FLOOR),
        ),
        Experiment("fusion: RRF k=60 over chunks", ("hybrid",), lambda: _patches(RRF_CHUNKS)),
        Experiment(
            "vectors fused for every Latin-script language",
            ("hybrid",),
            lambda: _patches(SCRIPT_ONLY),
        ),
        Experiment(
            "fusion: RRF k=60 over notes",
            ("hybrid",),
            lambda: _patches((markvault.search.fusion, {"convex": _rrf_notes})),
            "alternative",
        ),
        *(
            Experiment(
                f"fusion: keyword weight {w}",
                ("hybrid",),
                lambda w=w: _patches((markvault.search.fusion, {"KEYWORD_WEIGHT": w})),
                "alternative",
            )
            for w in (0.3, 0.4, 0.6, 0.7)
        ),
        Experiment(
            "fusion: min-max normalization",
            ("hybrid",),
            lambda: _patches((markvault.search.fusion, {"convex": _minmax})),
            "alternative",
        ),
        Experiment(
            "fusion: show keyword's best chunk",
            ("hybrid",),
            lambda: _patches((markvault.search.fusion, {"convex": _keyword_chunk_shown})),
            "alternative",
        ),
        Experiment(
            "fusion: z-scores, missing at the list's lowest",
            ("hybrid",),
            lambda: _patches((markvault.search.fusion, {"convex": _zscores})),
            "alternative",
        ),
        Experiment(
            "fusion: notes keyword missed at its lowest BM25",
            ("hybrid",),
            lambda: _patches((markvault.search.fusion, {"convex": _tmm_floor})),
            "alternative",
        ),
        Experiment(
            "fusion: cosine min-max, BM25 over its best",
            ("hybrid",),
            lambda: _patches((markvault.search.fusion, {"convex": _cosine_minmax})),
            "alternative",
        ),
        Experiment(
            "fusion: cosine over 1 (its theoretical best), BM25 over its best",
            ("hybrid",),
            lambda: _patches((markvault.search.fusion, {"convex": _raw_cosine})),
            "alternative",
        ),
        Experiment(
            "fusion: a note's cosine half its mean chunk's, half its best's",
            ("hybrid",),
            lambda: _patches((markvault.search.fusion, {"convex": _note_and_passage_cosine})),
            "alternative",
        ),
        *(
            Experiment(
                f"fusion: each list over its top-{k} mean",
                ("hybrid",),
                lambda k=k: _patches((markvault.search.fusion, {"convex": _topk_mean(k)})),
                "alternative",
            )
            for k in (3, 10)
        ),
        Experiment(
            "fusion: typical cosine the mean, not the median",
            ("hybrid",),
            _cosine_floor_at(np.mean),
            "alternative",
        ),
        Experiment(
            "fusion: typical cosine the 25th percentile, not the median",
            ("hybrid",),
            _cosine_floor_at(lambda c: np.percentile(c, 25)),
            "alternative",
        ),
    ]


# ---- issue 33: conversational memory (LongMemEval and every other set) ---------------


def _top_time_boost(fused: Any, note_of: Any, fit: Any, weight: Any = None) -> Any:
    """The first form of time_signal.boost: each note gains its fit times the top
    hit's score, so every note of the window ranks above every note outside it."""
    scale = max((abs(f[1]) for f in fused), default=0.0) or 1.0
    out = []
    for cid, score, ranks, scores in fused:
        note = note_of(cid)
        value = fit(note) if note is not None else 0.0
        out.append((cid, score + scale * value, ranks, {**scores, "time": value}))
    out.sort(key=lambda f: -f[1])
    return out


def _bm25_setting(name: str, constant: str, value: float, kind: str = "alternative") -> Experiment:
    """One of index/bm25.py's constants set to ``value``: keyword and hybrid change."""
    return Experiment(
        name,
        ("keyword", "hybrid"),
        lambda: _patches((markvault.index.bm25, {constant: value})),
        kind,
    )


def _time_setting(name: str, constant: str, value: float, kind: str = "ablation") -> Experiment:
    """One of search/time_signal.py's constants set to ``value``: every mode changes."""
    import markvault.search.time_signal as time_signal

    return Experiment(
        name,
        ("keyword", "vector", "hybrid"),
        lambda: _patches((time_signal, {constant: value})),
        kind,
    )


def _query_coverage(share: float, depth: int = 20, sessions_only: bool = False) -> Patch:
    """Coverage of the query in the top ``depth`` notes (issue 33's "several sessions for
    one question"): chosen greedily by (1 - share) x score over the best's + share x the
    IDF-weighted part of the query's terms it holds that the notes above it do not.
    ``sessions_only``: only transcripts (notes with a user turn) move, among the places
    transcripts hold; every other note keeps its place."""
    import math

    import markvault.search.query as query_lang
    from markvault.markdown.tokens import chunk_words

    searcher = markvault.search.searcher.Searcher
    original = searcher.search

    def search(self: Any, request: Any) -> Any:
        result = original(self, request)
        plan = query_lang.parse(request.query)
        hits = result.hits
        terms = list(dict.fromkeys(plan.terms)) if plan is not None else []
        if len(hits) < 2 or len(terms) < 2:
            return result
        known = self.index.keyword.term_ids(terms)
        notes = self.index.reads.note_and_chunk_counts()[0] or 1
        weight = {t: math.log(1 + notes / (1 + v[2])) for t, v in known.items()}
        total = sum(weight.values())
        if not total:
            return result
        top = hits[:depth]
        paths = ", ".join(sql_string(h.path) for h in top)
        rows = self.index.keyword.con.execute(
            f"SELECT c.path, n.title, c.context, c.text FROM chunks c JOIN notes n "
            f"ON n.path = c.path WHERE c.path IN ({paths})"
        ).fetchall()
        held: dict[str, set[str]] = {}
        for path, title, context, text in rows:
            held.setdefault(path, set()).update(
                t for t in chunk_words(title, context, text) if t in weight
            )
        best = max(abs(h.score) for h in top) or 1.0
        movable = {h.path for h in top}
        if sessions_only:
            movable = self.index.reads.transcripts(movable)
        chosen: list[Any] = []
        covered: set[str] = set()
        left = [h for h in top if h.path in movable]
        for slot in top:
            if slot.path not in movable:
                chosen.append(slot)
                covered |= held.get(slot.path, set())
                continue

            def gain(h: Any, covered: set[str] = covered) -> float:
                new = held.get(h.path, set()) - covered
                return (1 - share) * h.score / best + share * sum(weight[t] for t in new) / total

            pick = max(left, key=gain)
            chosen.append(pick)
            covered |= held.get(pick.path, set())
            left.remove(pick)
        result.hits = chosen + hits[depth:]
        return result

    return lambda: _patches((searcher, {"search": search}))


def _user_turns_only(pool: Any, transcripts: Any) -> set[int]:
    """``bm25.persons_words`` before hand-written notes counted: the user turns alone."""
    return markvault.index.bm25.user_turns(pool)


def _no_second_look(searcher: Any, fused: Any, *args: Any) -> Any:
    """``Searcher._second_look`` before 2026-11-30: the first fusion stands."""
    return fused


def _vector_feedback(weight: float, top: int = 3) -> Patch:
    """Rocchio feedback on the vector side alone, instead of hybrid's second look: the
    query's vector plus ``weight`` x the mean of its ``top`` closest chunks' vectors,
    renormalized, then every chunk scored against that."""
    import markvault.index.vectors as vectors

    original = vectors.VectorIndex.scores

    def scores(self: Any, model: str, query: Any, *, follow_up: bool = False) -> Any:
        ids, first = original(self, model, query, follow_up=follow_up)
        if len(first) <= top:
            return ids, first
        matrix_ids, matrix = self.matrix(model)
        assert np.array_equal(matrix_ids, ids)
        best = np.argpartition(-first, top - 1)[:top]
        moved = query + weight * matrix[best].mean(axis=0)
        moved = moved / (np.linalg.norm(moved) or 1.0)
        return ids, matrix @ moved.astype(matrix.dtype)

    searcher = markvault.search.searcher.Searcher
    return lambda: _patches(
        (vectors.VectorIndex, {"scores": scores}), (searcher, {"_second_look": _no_second_look})
    )


def _second_look_setting(name: str, constant: str, value: int | float) -> Experiment:
    """One of search/feedback.py's constants set to ``value``: hybrid changes."""
    import markvault.search.feedback as feedback

    return Experiment(
        name, ("hybrid",), lambda: _patches((feedback, {constant: value})), "alternative"
    )


def second_look_experiments() -> list[Experiment]:
    """Hybrid's second look (search/feedback.py): without it, and its two constants."""
    searcher = markvault.search.searcher.Searcher
    return [
        Experiment(
            "second look: off (before 2026-11-30)",
            ("hybrid",),
            lambda: _patches((searcher, {"_second_look": _no_second_look})),
        ),
        *(
            _second_look_setting(f"second look: the first {n} notes", "FEEDBACK_NOTES", n)
            for n in (1, 3)
        ),
        *(
            _second_look_setting(f"second look: weight {w}", "FEEDBACK_WEIGHT", w)
            for w in (0.15, 0.5)
        ),
    ]


def memory_experiments() -> list[Experiment]:
    """Time in the query, the weight of what the user said, how a long note's score is
    built from its chunks (issue 33). Run by ``python -m bench.eval`` with the
    others, and by ``python -m bench.eval.longmemeval``."""
    import markvault.search.time_expressions as times
    import markvault.search.time_signal as time_signal

    modes = ("keyword", "vector", "hybrid")
    return [
        Experiment(
            "time: off (no window read: before issue 33)",
            modes,
            lambda: _patches((times, {"find": lambda query, asked=None, language=None: []})),
        ),
        _time_setting("time: no boost (window read, nothing moved)", "TIME_WEIGHT", 0.0),
        Experiment(
            "time: words kept in the keyword query",
            modes,
            lambda: _patches((time_signal, {"LEAVE_OUT_WORDS": False})),
            "alternative",
        ),
        *(_time_setting(f"time: weight {w}", "TIME_WEIGHT", w, "alternative") for w in (0.25, 0.5)),
        _time_setting("time: 'now' not read (before 2026-11-30)", "NEWEST_WEIGHT", 0.0),
        *(
            _time_setting(f"time: 'now' weight {w}", "NEWEST_WEIGHT", w, "alternative")
            for w in (0.3, 1.0)
        ),
        Experiment(
            "time: a note gains its fit times the top hit's score (not its own)",
            modes,
            lambda: _patches((time_signal, {"boost": _top_time_boost})),
            "alternative",
        ),
        *(
            _bm25_setting(
                f"long notes: note weight {w} (note BM25 against its best chunk's)",
                "NOTE_WEIGHT",
                w,
            )
            for w in (0.3, 0.7)
        ),
        _bm25_setting(
            "user turns: not weighed (before issue 33's dialogue-aware ranking)",
            "USER_TURN_WEIGHT",
            0.0,
            "ablation",
        ),
        *(_bm25_setting(f"user turns: weight {w}", "USER_TURN_WEIGHT", w) for w in (0.25, 1.0)),
        Experiment(
            "user turns: only they count, not a hand-written note's words (before 2026-11-30)",
            ("keyword", "hybrid"),
            lambda: _patches(
                (markvault.index.bm25, {"persons_words": _user_turns_only}),
            ),
            "ablation",
        ),
        *(
            _bm25_setting(
                f"long notes: {n} chunks per note in the keyword list", "CHUNKS_PER_NOTE", n
            )
            for n in (1, 6)
        ),
        *(
            Experiment(
                f"candidates: {depth} chunks per list whatever the limit",
                ("keyword", "hybrid"),
                lambda depth=depth: _patches(
                    (markvault.search.searcher, {"candidate_depth": lambda *a, d=depth: d})
                ),
                "alternative",
            )
            for depth in (50, 200)
        ),
        *(
            Experiment(
                f"several sessions: query coverage {share} "
                f"{'among transcripts ' if sessions_only else ''}in the top 20",
                ("keyword", "hybrid"),
                _query_coverage(share, sessions_only=sessions_only),
                "alternative",
            )
            for share, sessions_only in ((0.3, False), (0.5, False), (0.4, True), (0.5, True))
        ),
        *(
            Experiment(
                f"several sessions: vector feedback {w} (Rocchio, top 3 chunks; no second look)",
                ("hybrid",),
                _vector_feedback(w),
                "alternative",
            )
            for w in (0.3, 0.6)
        ),
        *second_look_experiments(),
    ]
