"""Keyword, vector, hybrid and deep search over an open index; hits collapsed to notes.

Keyword search ranks notes by BM25 (index/bm25.py), vector search chunks by cosine. Hybrid
fuses the two by their normalized scores, then fuses again with the vector side steered
by its first answer's top notes (feedback.py), deep search the query's own lists (weighted
highest) and those of the variants the calling model wrote by rank, unless the keyword
result is already decisive (fusion.py). Each hit reports its ranks and scores per list.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import functools
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from markvault.embed.embedder import Embedder
from markvault.errors import UsageError
from markvault.identity import citation_key, note_uri
from markvault.index import Index
from markvault.markdown.tokens import tokenize, word_spans
from markvault.search import feedback, fusion, language, time_signal
from markvault.search import query as query_lang
from markvault.search.time_words import may_name_a_time
from markvault.types.search import Filters, Hit, SearchRequest, SearchResult

if TYPE_CHECKING:
    import numpy as np

    from markvault.search.time_expressions import TimeWindow

MODES = ("keyword", "vector", "hybrid", "deep")
ORDERS = ("relevance", "date")
MAX_LIMIT = 1000
CANDIDATES = 50  # chunks a list brings, at least (candidate_depth)
FUSED_CANDIDATES = 200  # chunks each fused list brings, whatever the page
MAX_QUERY_CHARS = 4000
SNIPPET_CHARS = 180
# Deep search: the caller's variants of the query, and how much the original counts.
MAX_VARIANTS = 8
VARIANT_KINDS = ("lex", "vec", "hyde")
ORIGINAL_WEIGHT = 2.0
DECISIVE_RATIO = 1.5  # top keyword score over the runner-up's that skips the variants
DECISIVE_WINDOW = 20  # keyword hits looked at for the runner-up from another note
NOTHING_TO_LOOK_FOR = (
    "the query has no word to search for (NOT and -word only remove results): "
    "nothing found; add a word"
)

Fused = fusion.Fused


def chunk_uri(chunk_id: int) -> str:
    return f"vault://chunk/{chunk_id}"


class Searcher:
    def __init__(
        self,
        index: Index,
        model: str,
        embedder: Callable[[], Embedder],
        model_wait: float | None = None,
    ) -> None:
        """``model_wait``: seconds to wait for a model loading in the background before
        answering from keywords alone; None loads it here and now."""
        self.index = index
        self.model = model
        self._embedder = embedder
        self.model_wait = model_wait

    def search(self, request: SearchRequest) -> SearchResult:
        """Search; raises UsageError for a bad mode, limit, order, variant, query syntax
        or ``as_of``.

        ``request.variants`` (deep mode only) are rewrites of the query written by the
        caller; ``order`` "date" sorts the matching notes newest first; ``min_score``
        drops hits scoring below it (BM25 for keyword, cosine for vector, the fused score
        for hybrid: at most 1, fusion.py; RRF for deep). Time words in the query ("last
        Tuesday", "since May": time_expressions.py), read relative to ``as_of`` (the
        "asked at" date, ISO; today when None), rank notes dated in their window higher
        and are not searched as words; ``SearchResult.time`` says what was read.
        """
        query, mode, filters = request.query, request.mode, request.filters
        limit, offset, order = request.limit, request.offset, request.order
        full_text, variants, min_score = request.full_text, request.variants, request.min_score
        parsed_variants = check_request(query, mode, limit, offset, order, variants)
        asked = time_signal.asked_date(request.as_of)
        filters.check()
        run = _Run(time.perf_counter())

        plan: query_lang.Plan | None = query_lang.parse(query)
        window, plan = _time_window(query, plan, asked)
        if plan is not None and plan.pasted:
            run.warnings.append(
                f"read as plain words: the query has {plan.pasted} operators, phrases and "
                f"groups (pasted text?); at most {query_lang.MAX_SYNTAX} are read as syntax"
            )
        run.lap("parse")
        if plan is not None and plan.empty:
            if mode != "vector":
                run.warnings.append(NOTHING_TO_LOOK_FOR)
                run.timings["total"] = (time.perf_counter() - run.began) * 1000
                return SearchResult(query, mode, [], run.timings, 0, run.warnings)
            plan = None  # the model reads the text as written
        wanted = candidate_depth(mode, offset, limit, order, min_score)
        lists, weights = self._lists(query, plan, mode, filters, wanted, parsed_variants, run)
        plan = run.plan or plan
        fused = self._fuse(lists, weights, mode, run)
        if mode == "hybrid" and order == "relevance":
            run.lap("fuse")
            fused = self._second_look(fused, lists, query, plan, filters, wanted, run)
        if min_score is not None:
            fused = [f for f in fused if f[1] >= min_score]
        if window is not None and order == "relevance":
            fused = self._time_boost(fused, window, run)
        run.lap("fuse")
        hits, total_notes = self._hits(fused, query, plan, (offset, limit), full_text, order, run)
        run.lap("fetch")
        run.timings["total"] = (time.perf_counter() - run.began) * 1000
        result = SearchResult(query, mode, hits, run.timings, total_notes, run.warnings)
        result.counts = {name: len(rows) for name, rows in lists.items()}
        result.shortcut = run.shortcut
        result.relaxed = run.plan is not None
        if window is not None:
            asked_at = (asked or dt.date.today()).isoformat()
            result.time = {**window.to_json(), "asked_at": asked_at}
        return result

    def _time_boost(self, fused: list[Fused], window: TimeWindow, run: _Run) -> list[Fused]:
        """Notes dated in (or near) ``window`` raised, or for "now" the newest of the
        first matching notes (time_signal.boost)."""
        paths = self._chunk_paths([f[0] for f in fused], run)
        if window.newest:
            first = list(dict.fromkeys(p for f in fused if (p := paths.get(f[0]))))
            days = self.index.reads.note_days(sorted(first[: time_signal.NEWEST_DEPTH]))
            place = time_signal.newest_fit(days)
            return time_signal.boost(
                fused, paths.get, lambda p: place.get(p, 0.0), time_signal.NEWEST_WEIGHT
            )
        days = self.index.reads.note_days(sorted(set(paths.values())))
        fit: dict[str, float] = {}

        def fit_of(path: str) -> float:
            if path not in fit:
                fit[path] = time_signal.closeness(window, days.get(path, []))
            return fit[path]

        return time_signal.boost(fused, paths.get, fit_of)

    def _lists(
        self,
        query: str,
        plan: query_lang.Plan | None,
        mode: str,
        filters: Filters,
        wanted: int,
        parsed_variants: list[tuple[str, str]],
        run: _Run,
    ) -> tuple[dict[str, list[tuple[int, float]]], dict[str, float]]:
        """The ranked lists ``mode`` fuses (keyword, vector, and deep search's variants'),
        and deep search's weight for each."""
        lists: dict[str, list[tuple[int, float]]] = {}
        weights: dict[str, float] = {}
        if mode in ("keyword", "hybrid", "deep") and plan is not None:
            rows = self._keyword(plan, filters, wanted, run.warnings, run)
            if not rows and plan.constrained and plan.narrowing():
                # Phrases and required words never empty what the words would fill.
                relaxed = plan.relaxed()
                rows = self._keyword(relaxed, filters, wanted, run.warnings, run)
                if rows:
                    plan = run.relax(plan, relaxed)
            lists["keyword"] = rows
            run.lap("keyword")
        vectors_usable = mode != "keyword" and self._vectors_usable(
            query, plan.language if plan else None, mode, run.warnings
        )
        if vectors_usable:
            text = plan.text if plan else query
            rows = self._vector(text, filters, wanted, plan, run)
            if not rows and mode == "vector" and plan and plan.constrained and plan.narrowing():
                relaxed = plan.relaxed()
                rows = self._vector(text, filters, wanted, relaxed, run)
                if rows:
                    plan = run.relax(plan, relaxed)
            lists["vector"] = rows
        if mode != "deep":
            return lists, weights
        weights = dict.fromkeys(lists, ORIGINAL_WEIGHT)
        chunk_paths = functools.partial(self._chunk_paths, run=run)
        if parsed_variants and decisive(lists.get("keyword", []), plan, self.index, chunk_paths):
            run.warnings.append("strong keyword match: variants skipped (the top hit is far ahead)")
            run.shortcut = True
            return lists, weights
        for n, (kind, text) in enumerate(parsed_variants, start=1):
            self._variant(n, kind, text, filters, wanted, vectors_usable, lists, run)
            weights.update({name: 1.0 for name in lists if name not in weights})
        return lists, weights

    def _vectors_usable(self, query: str, lang: str | None, mode: str, warnings: list[str]) -> bool:
        """Whether the vector side can run; raises for vector mode when it cannot."""
        if mode != "vector" and not language.model_reads(self.model, query, lang):
            # An English model's vector for a Chinese, Russian or Spanish query is
            # noise, and fusing it in would push good keyword hits down.
            warnings.append(
                f"{self.model} reads English only: vector side skipped for this query "
                "(configure a multilingual model with --model or .markvault.toml)"
            )
            return False
        done, total = self.index.vectors.counts(self.model)
        if done == 0:
            if mode == "vector":
                raise UsageError(
                    "The index has no vectors yet.",
                    "Run `vault reindex` (without --no-vectors) first.",
                )
            warnings.append("no vectors in the index: keyword results only")
            return False
        if not self._model_ready(warnings):
            if mode == "vector":
                raise UsageError(
                    "The embedding model is still loading.",
                    "Retry in a few seconds, or search with mode keyword.",
                )
            return False
        if done < total:
            warnings.append(f"{total - done} chunks have no vector yet")
        return True

    def _variant(
        self,
        n: int,
        kind: str,
        text: str,
        filters: Filters,
        wanted: int,
        vectors_usable: bool,
        lists: dict[str, list[tuple[int, float]]],
        run: _Run,
    ) -> None:
        """Run deep search's ``n``-th variant in the mode its kind calls for."""
        if kind in ("lex", "auto"):
            plan = query_lang.parse(text)
            if plan.empty:
                run.warnings.append(f"variant {n} skipped: it has no word to search for")
                return
            lists[f"v{n}:keyword"] = self._keyword(plan, filters, wanted, run.warnings)
            run.lap(f"v{n}:keyword")
        if kind in ("vec", "hyde", "auto") and vectors_usable:
            rows = self._vector(text, filters, wanted, None, run, stage=f"v{n}:vector")
            lists[f"v{n}:vector"] = rows

    def _model_ready(self, warnings: list[str]) -> bool:
        embedder = self._embedder()
        if self.model_wait is None or embedder.loaded or embedder.wait(self.model_wait):
            return True
        if embedder.load_error:
            warnings.append(f"the embedding model failed to load: {embedder.load_error}")
        else:
            warnings.append("the embedding model is still loading: keyword results only")
        return False

    def _keyword(
        self,
        plan: query_lang.Plan,
        filters: Filters,
        wanted: int,
        warnings: list[str],
        run: _Run | None = None,
    ) -> list[tuple[int, float]]:
        """Chunks ranked by their note's and their own BM25 (index/bm25.py); ``run``, if
        given, receives each one's own BM25 and its note's path."""
        terms = list(plan.terms)
        prefix_terms: dict[str, list[str]] = {}
        for prefix in plan.prefixes:
            prefix_terms[prefix] = self.index.keyword.terms_with_prefix(prefix)
            if not prefix_terms[prefix]:
                warnings.append(f"no word starts with {prefix!r}")
            terms.extend(prefix_terms[prefix])
        scores, notes = (run.chunk_bm25, run.chunk_notes) if run else (None, None)
        if not plan.constrained:
            return self.index.keyword.bm25(
                terms, filters, wanted, per_note=True, chunk_scores=scores, chunk_notes=notes
            )
        known = self.index.keyword.term_ids(terms + query_lang.leaf_tokens(plan.root))
        ids = {t: v[0] for t, v in known.items()}
        prefix_ids = {p: [ids[t] for t in ts if t in ids] for p, ts in prefix_terms.items()}
        condition, exact = query_lang.presence_sql(plan.root, ids, prefix_ids)
        verify = None if exact else functools.partial(query_lang.matches, plan.root)
        return self.index.keyword.bm25(
            terms,
            filters,
            wanted,
            condition,
            verify,
            per_note=True,
            chunk_scores=scores,
            chunk_notes=notes,
        )

    def _fuse(
        self,
        lists: dict[str, list[tuple[int, float]]],
        weights: dict[str, float],
        mode: str,
        run: _Run,
    ) -> list[Fused]:
        if len(lists) <= 1:
            return [f for name, rows in lists.items() for f in fusion.single(name, rows)]
        if mode != "hybrid":
            return fusion.rrf(lists, weights)
        keyword, vector = lists["keyword"], lists["vector"]
        note_of = self._chunk_paths([c for c, _ in keyword] + [c for c, _ in vector], run)
        return fusion.convex(
            keyword, vector, note_of, run.cosine, run.chunk_bm25, cosine_floor=run.typical_cosine()
        )

    def _second_look(
        self,
        fused: list[Fused],
        lists: dict[str, list[tuple[int, float]]],
        query: str,
        plan: query_lang.Plan | None,
        filters: Filters,
        wanted: int,
        run: _Run,
    ) -> list[Fused]:
        """Hybrid's fusion again, its vector side scored against the query's vector
        moved toward the chunks the first answer's top notes show (feedback.py)."""
        if not lists.get("keyword") or not lists.get("vector") or run.query_vector is None:
            return fused  # one list alone: nothing fused to learn from
        note_of = self._chunk_paths([f[0] for f in fused], run)  # read by fusion already
        shown = feedback.first_shown(fused, note_of.get)
        vectors = self.index.vectors.vectors_of(self.model, shown)
        if not len(vectors):
            return fused
        moved = feedback.moved_query(run.query_vector, vectors)
        text = plan.text if plan else query
        rows = self._vector(text, filters, wanted, plan, run, "feedback", moved)
        second = self._fuse({**lists, "vector": rows}, {}, "hybrid", run)
        note_of = self._chunk_paths([f[0] for f in second], run)
        return feedback.with_first_chunks(fused, second, note_of.get)

    def _vector(
        self,
        text: str,
        filters: Filters,
        wanted: int,
        plan: query_lang.Plan | None,
        run: _Run,
        stage: str = "vector",
        moved: np.ndarray | None = None,
    ) -> list[tuple[int, float]]:
        """The ``wanted`` chunks closest to ``text`` (or to the vector ``moved``, hybrid's
        second look) that pass ``filters`` and ``plan``'s required and excluded words."""
        import numpy as np  # the vector side's alone: a keyword search never loads numpy

        load_ms = embed_ms = 0.0
        if moved is None:
            embedder = self._embedder()
            if not embedder.loaded:
                started = time.perf_counter()
                embedder.load()
                load_ms = (time.perf_counter() - started) * 1000
                run.timings["load_model"] = load_ms
            started = time.perf_counter()
            qv = embedder.encode_query(text or " ")
            # The query's embedding is reported on its own, not inside the stage.
            embed_ms = (time.perf_counter() - started) * 1000
            run.timings["embed_query"] = run.timings.get("embed_query", 0.0) + embed_ms
            if stage == "vector":
                run.query_vector = qv
        else:
            qv = moved
        ids, scores = self.index.vectors.scores(self.model, qv, follow_up=moved is not None)
        if stage in ("vector", "feedback"):
            run.keep_cosines(ids, scores)
        if not filters.is_empty():
            mask = np.isin(ids, self.index.reads.chunk_ids_matching(filters))
            scores = np.where(mask, scores, -np.inf)
        elif not filters.include_expired and len(expired := self.index.reads.expired_chunk_ids()):
            scores = np.where(np.isin(ids, expired, invert=True), scores, -np.inf)
        constrained = plan is not None and plan.constrained
        # Required and excluded words bind the vector side too: take more, check them.
        k = min(wanted * 4 if constrained else wanted, len(ids))
        ranked: list[tuple[int, float]] = []
        if k > 0:
            top = np.argpartition(-scores, k - 1)[:k]
            # Ties (copies of a text) by chunk id: the same order at any depth k.
            top = top[np.lexsort((ids[top], -scores[top]))]
            ranked = [(int(ids[i]), float(scores[i])) for i in top if np.isfinite(scores[i])]
        if plan is not None and constrained:
            tokens = self.index.keyword.chunk_tokens([cid for cid, _ in ranked])
            ranked = [r for r in ranked if query_lang.matches(plan.root, tokens.get(r[0], ""))]
        run.lap(stage)
        run.timings[stage] -= embed_ms + load_ms
        return ranked[:wanted]

    def _chunk_paths(self, ids: Sequence[int], run: _Run) -> dict[int, str]:
        """The note path of each chunk id, read only for those the run has not seen."""
        known = run.chunk_notes
        missing = [cid for cid in ids if cid not in known]
        if missing:  # remembered: fusion reads the vector side's, the hits need them again
            known.update(self.index.reads.chunk_paths(missing))
        return {cid: known[cid] for cid in ids if cid in known}

    def _hits(
        self,
        fused: list[Fused],
        query: str,
        plan: query_lang.Plan | None,
        page_at: tuple[int, int],
        full_text: bool,
        sort: str,
        run: _Run,
    ) -> tuple[list[Hit], int]:
        offset, limit = page_at
        # Collapse to notes on (id, path) alone; full details only for the page shown.
        paths = self._chunk_paths([f[0] for f in fused], run)
        extra: dict[str, int] = {}
        order: list[Fused] = []
        for item in fused:
            path = paths.get(item[0])
            if path is None:
                continue
            if path in extra:
                extra[path] += 1
                continue
            extra[path] = 0
            order.append(item)
        if sort == "date":
            dates = self.index.reads.note_dates([paths[item[0]] for item in order])
            # Newest first; relevance breaks ties (sorted() is stable).
            order.sort(key=lambda item: dates.get(paths[item[0]]) or "", reverse=True)
        page = order[offset : offset + limit]
        details = self.index.reads.chunk_details([item[0] for item in page])
        query_tokens = set(plan.terms) if plan else set(tokenize(query))
        hits: list[Hit] = []
        bad = self.index.reads.unsound_among([row["path"] for row in details.values()])
        for cid, score, ranks, scores in page:
            row = details[cid]
            # An attachment's chunk holds its page number where a note's holds lines.
            at = (row["start_line"] or None) if row["kind"] == "attachment" else None
            hits.append(
                Hit(
                    id=row["note_id"],
                    path=row["path"],
                    title=row["title"],
                    kind=row["kind"],
                    type=row["type"],
                    chunk_id=cid,
                    heading_path=list(row["heading_path"] or []),
                    lines=[row["start_line"], row["end_line"]],
                    score=score,
                    ranks=ranks,
                    scores=scores,
                    snippet=snippet(row["text"], query_tokens, plan.prefixes if plan else []),
                    hash=row["hash"],
                    uri=note_uri(citation_key(row["note_id"], row["path"], bad))
                    + (f"#page={at}" if at else ""),
                    more_chunks=extra[row["path"]],
                    text=row["text"] if full_text else None,
                    page=at,
                )
            )
        return hits, len(order)


def _time_window(
    query: str, plan: query_lang.Plan | None, asked: dt.date | None
) -> tuple[TimeWindow | None, query_lang.Plan | None]:
    """The query's time window, and its plan: as it is, or with the time words left out
    of the keyword terms when ``time_signal.LEAVE_OUT_WORDS`` says so (and something is
    left)."""
    if not may_name_a_time(query):
        return None, plan  # most queries: the expressions are never loaded
    from markvault.search import time_expressions as times

    found = time_signal.outside_quotes(
        query, times.find(query, asked, plan.language if plan else None)
    )
    window = times.combined(found)
    # "now" stays a word too: a session that changed a value tends to say "current".
    if window is None or window.newest or plan is None or not time_signal.LEAVE_OUT_WORDS:
        return window, plan
    try:
        rest = query_lang.parse(times.without(query, found))
    except UsageError:
        return window, plan
    if not (rest.terms or rest.prefixes):
        return window, plan
    # The embedding model reads the question whole: time words are context there.
    return window, dataclasses.replace(rest, text=plan.text)


def candidate_depth(mode: str, offset: int, limit: int, order: str, min_score: float | None) -> int:
    """Chunks each ranked list brings: five per hit up to the page's end, and more where
    the order depends on it. Sorting by date or cutting at a score needs every match.
    Fusion (hybrid, deep) scores a note by the lists it is in, so deeper lists reorder
    its top: their depth is ``FUSED_CANDIDATES`` whatever the page, which makes pages up
    to ``FUSED_CANDIDATES / 5`` hits slices of one ranking. A single list keeps its order
    at any depth (the keyword side's, up to its fixed pool of bm25.NOTE_POOL chunks)."""
    depth = max(CANDIDATES, (offset + limit) * 5)
    if order == "date" or min_score is not None:
        depth = max(depth, MAX_LIMIT)
    if mode in ("hybrid", "deep"):
        depth = max(depth, FUSED_CANDIDATES)
    return depth


def check_request(
    query: str, mode: str, limit: int, offset: int, order: str, variants: Sequence[str]
) -> list[tuple[str, str]]:
    """Raise UsageError for a bad mode, page, order, query length or variant; the parsed
    variants otherwise."""
    if mode not in MODES:
        raise UsageError(f"Unknown mode {mode!r}.", f"Use one of: {', '.join(MODES)}.")
    if not 1 <= limit <= MAX_LIMIT or offset < 0:
        raise UsageError(
            f"limit must be 1..{MAX_LIMIT} and offset 0 or more.",
            "Page through results with offset.",
        )
    if order not in ORDERS:
        raise UsageError(f"Unknown order {order!r}.", f"Use one of: {', '.join(ORDERS)}.")
    if variants and mode != "deep":
        raise UsageError("Variants are for deep search.", 'Pass mode="deep" with them.')
    if len(query) > MAX_QUERY_CHARS:
        raise UsageError(
            f"The query is {len(query):,} characters long (at most {MAX_QUERY_CHARS:,}).",
            "Search with the few words or sentences that matter.",
        )
    return parse_variants(variants)


def parse_variants(variants: Sequence[str]) -> list[tuple[str, str]]:
    """(kind, text) for each deep-search variant: ``lex:`` runs as keywords, ``vec:`` and
    ``hyde:`` (a hypothetical answer passage) by meaning, an unmarked one both ways."""
    if len(variants) > MAX_VARIANTS:
        raise UsageError(
            f"{len(variants)} variants given; deep search takes at most {MAX_VARIANTS}.",
            "Keep the most different rewrites.",
        )
    parsed: list[tuple[str, str]] = []
    for raw in variants:
        kind, sep, rest = raw.partition(":")
        kind = kind.strip().lower()
        if sep and kind in VARIANT_KINDS:
            text = rest.strip()
        else:
            kind, text = "auto", raw.strip()
        if not text:
            raise UsageError("A variant is empty.", 'Example: "lex: duckdb fts rebuild".')
        if len(text) > MAX_QUERY_CHARS:
            raise UsageError(
                f"A variant is {len(text):,} characters long (at most {MAX_QUERY_CHARS:,}).",
                "Shorten the hypothetical passage to a paragraph.",
            )
        parsed.append((kind, text))
    return parsed


def decisive(
    keyword: list[tuple[int, float]],
    plan: query_lang.Plan | None,
    index: Index,
    chunk_paths: Callable[[Sequence[int]], dict[int, str]],
) -> bool:
    """Whether the keyword result already settles the question: its top hit holds every
    query word and scores far above the best chunk of any other note, so variants would
    only add noise. ``chunk_paths``: each chunk's note path (the run has most already)."""
    if not keyword or plan is None or not plan.terms:
        return False
    head = keyword[:DECISIVE_WINDOW]
    paths = chunk_paths([cid for cid, _ in head])
    top_id, top_score = head[0]
    runner_up = next((score for cid, score in head[1:] if paths.get(cid) != paths.get(top_id)), 0.0)
    if top_score < DECISIVE_RATIO * runner_up:
        return False
    tokens = set(index.keyword.chunk_tokens([top_id]).get(top_id, "").split())
    return all(term in tokens for term in plan.terms)


class _Run:
    """Timings and warnings gathered while one search runs."""

    def __init__(self, began: float) -> None:
        self.began = self._clock = began
        self.timings: dict[str, float] = {}
        self.warnings: list[str] = []
        self.shortcut = False
        self._cosines: tuple[np.ndarray, np.ndarray] | None = None
        self.query_vector: np.ndarray | None = None  # the query's own, for feedback
        self.chunk_bm25: dict[int, float] = {}  # the query's keyword chunks' own BM25
        self.chunk_notes: dict[int, str] = {}  # note paths of chunks read while ranking
        self.plan: query_lang.Plan | None = None  # the relaxed query, when it was

    def relax(self, plan: query_lang.Plan, relaxed: query_lang.Plan) -> query_lang.Plan:
        """Note that ``plan``'s phrases and required words matched nothing, and that
        ``relaxed`` (its words) answers instead; returns ``relaxed``."""
        self.plan = relaxed
        self.warnings.append(
            f"nothing matches {' and '.join(plan.narrowing())} as written: "
            "results for any of the query's words instead, ranked"
        )
        return relaxed

    def keep_cosines(self, ids: np.ndarray, scores: np.ndarray) -> None:
        """Keep the query's cosine with every chunk, for fusion to look up."""
        self._cosines = (ids, scores)

    def cosine(self, chunk_ids: Sequence[int]) -> dict[int, float]:
        """The query's cosine with each of ``chunk_ids`` that has a vector."""
        if self._cosines is None or not chunk_ids:
            return {}
        import numpy as np  # loaded already: cosines come from the vector side

        from markvault.index.vectors import find_sorted

        ids, scores = self._cosines
        at, found = find_sorted(ids, chunk_ids)
        return {
            int(c): float(scores[i])
            for c, i, ok in zip(chunk_ids, at, found, strict=True)
            if ok and np.isfinite(scores[i])
        }

    def typical_cosine(self) -> float:
        """What a chunk unrelated to the query scores (fusion.typical_cosine)."""
        return 0.0 if self._cosines is None else fusion.typical_cosine(self._cosines[1])

    def lap(self, stage: str) -> None:
        """Add the time since the last lap to ``stage`` (a stage may run twice)."""
        now = time.perf_counter()
        self.timings[stage] = self.timings.get(stage, 0.0) + (now - self._clock) * 1000
        self._clock = now


def snippet(text: str, tokens: set[str], prefixes: list[str], width: int = SNIPPET_CHARS) -> str:
    """The line of ``text`` that matches the query best, matched words in **bold**."""
    best_line, best_score = "", -1.0
    starts = tuple(prefixes) or ("\0",)  # str.startswith with a tuple; "\0" never matches
    for line in text.splitlines():
        # Emphasis markers would collide with the ** that mark matches.
        stripped = line.strip().replace("**", "").replace("__", "")
        if not stripped or stripped.startswith(("```", "~~~")):
            continue
        # One tokenizer pass per line to score it; word positions only for the winner.
        score = float(sum(1 for t in tokenize(stripped) if t in tokens or t.startswith(starts)))
        if stripped.startswith("#"):
            score -= 0.5  # a heading is already shown as the heading path
        if score > best_score:
            best_line, best_score = stripped, score
    spans = [
        (s, e)
        for s, e, toks in word_spans(best_line)
        if any(t in tokens or any(t.startswith(p) for p in prefixes) for t in toks)
    ]
    start = 0
    if spans and len(best_line) > width:
        start = max(0, spans[0][0] - width // 4)
    end = start + width
    out: list[str] = ["…" if start > 0 else ""]
    pos = start
    for s, e in spans:
        if s < start or e > end:
            continue
        out.append(best_line[pos:s] + "**" + best_line[s:e] + "**")
        pos = e
    out.append(best_line[pos:end])
    if end < len(best_line):
        out.append("…")
    return "".join(out)
