"""Keyword, vector and hybrid search over an open index; hits collapsed to notes.

Hybrid is reciprocal rank fusion (RRF): each list contributes 1 / (k + rank),
so neither BM25's nor cosine's score scale decides; each hit reports both ranks.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable
from typing import Any
from urllib.parse import quote

import numpy as np

from . import query as query_lang
from .config import DEFAULT_MODEL_NAMES
from .embed import Embedder
from .errors import UsageError
from .index import Filters, Index
from .model import Hit, SearchResult
from .text import latin_share, tokenize, word_spans

MODES = ("keyword", "vector", "hybrid")
RRF_K = 60
MAX_LIMIT = 1000
SNIPPET_CHARS = 180


def note_uri(note_id: str) -> str:
    return "vault://note/" + quote(note_id, safe="/")


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

    def search(
        self,
        query: str,
        *,
        mode: str = "hybrid",
        filters: Filters | None = None,
        limit: int = 10,
        offset: int = 0,
        full_text: bool = False,
    ) -> SearchResult:
        """Search; raises UsageError for a bad mode, limit or query syntax."""
        if mode not in MODES:
            raise UsageError(f"Unknown mode {mode!r}.", f"Use one of: {', '.join(MODES)}.")
        if not 1 <= limit <= MAX_LIMIT or offset < 0:
            raise UsageError(
                f"limit must be 1..{MAX_LIMIT} and offset 0 or more.",
                "Page through results with offset.",
            )
        filters = filters or Filters()
        filters.check()
        timings: dict[str, float] = {}
        warnings: list[str] = []
        clock = began = time.perf_counter()

        def lap(stage: str) -> None:
            nonlocal clock
            now = time.perf_counter()
            timings[stage] = (now - clock) * 1000
            clock = now

        plan: query_lang.Plan | None
        try:
            plan = query_lang.parse(query)
        except UsageError:
            if mode != "vector":
                raise
            plan = None
        lap("parse")
        wanted = max(50, (offset + limit) * 5)

        lists: dict[str, list[tuple[int, float]]] = {}
        if mode in ("keyword", "hybrid") and plan is not None:
            lists["keyword"] = self._keyword(plan, filters, wanted, warnings)
            lap("keyword")
        if mode == "hybrid" and self.model in DEFAULT_MODEL_NAMES and latin_share(query) < 0.5:
            # An English model's vector for a Chinese or Russian query is noise, and
            # fusing it in would push good keyword hits down.
            warnings.append(
                f"{self.model} reads English only: vector side skipped for this query "
                "(configure a multilingual model with --model or .markvault.toml)"
            )
        elif mode in ("vector", "hybrid"):
            done, total = self.index.embedding_counts(self.model)
            if done == 0:
                if mode == "vector":
                    raise UsageError(
                        "The index has no vectors yet.",
                        "Run `vault reindex` (without --no-vectors) first.",
                    )
                warnings.append("no vectors in the index: keyword results only")
            elif not self._model_ready(warnings):
                if mode == "vector":
                    raise UsageError(
                        "The embedding model is still loading.",
                        "Retry in a few seconds, or search with mode keyword.",
                    )
            else:
                if done < total:
                    warnings.append(f"{total - done} chunks have no vector yet")
                lists["vector"] = self._vector(
                    plan.text if plan else query, filters, wanted, plan, timings
                )
                lap("vector")
                # The query's embedding is reported on its own, not inside "vector".
                timings["vector"] -= timings["embed_query"] + timings.get("load_model", 0.0)

        fused = _fuse(lists) if len(lists) > 1 else _single(lists)
        lap("fuse")
        hits, total_notes = self._hits(fused, query, plan, offset, limit, full_text)
        lap("fetch")
        timings["total"] = (time.perf_counter() - began) * 1000
        return SearchResult(query, mode, hits, timings, total_notes, warnings)

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
        self, plan: query_lang.Plan, filters: Filters, wanted: int, warnings: list[str]
    ) -> list[tuple[int, float]]:
        terms = list(plan.terms)
        prefix_terms: dict[str, list[str]] = {}
        for prefix in plan.prefixes:
            prefix_terms[prefix] = self.index.terms_with_prefix(prefix)
            if not prefix_terms[prefix]:
                warnings.append(f"no word starts with {prefix!r}")
            terms.extend(prefix_terms[prefix])
        if not plan.constrained:
            return self.index.bm25(terms, filters, wanted)
        known = self.index.term_ids(terms + query_lang.leaf_tokens(plan.root))
        ids = {t: v[0] for t, v in known.items()}
        prefix_ids = {p: [ids[t] for t in ts if t in ids] for p, ts in prefix_terms.items()}
        condition, exact = query_lang.presence_sql(plan.root, ids, prefix_ids)
        verify = None if exact else functools.partial(query_lang.matches, plan.root)
        return self.index.bm25(terms, filters, wanted, condition, verify)

    def _vector(
        self,
        text: str,
        filters: Filters,
        wanted: int,
        plan: query_lang.Plan | None,
        timings: dict[str, float],
    ) -> list[tuple[int, float]]:
        embedder = self._embedder()
        if not embedder.loaded:
            started = time.perf_counter()
            embedder.load()
            timings["load_model"] = (time.perf_counter() - started) * 1000
        started = time.perf_counter()
        qv = embedder.encode_query(text or " ")
        timings["embed_query"] = (time.perf_counter() - started) * 1000
        ids, matrix = self.index.vector_matrix(self.model)
        scores = matrix @ qv
        mask = None
        if not filters.is_empty():
            mask = np.isin(ids, self.index.chunk_ids_matching(filters))
        if mask is not None:
            scores = np.where(mask, scores, -np.inf)
        constrained = plan is not None and plan.constrained
        # Required and excluded words bind the vector side too: take more, check them.
        k = min(wanted * 4 if constrained else wanted, len(ids))
        if k == 0:
            return []
        top = np.argpartition(-scores, k - 1)[:k]
        top = top[np.argsort(-scores[top], kind="stable")]
        ranked = [(int(ids[i]), float(scores[i])) for i in top if np.isfinite(scores[i])]
        if plan is not None and constrained:
            tokens = self.index.chunk_tokens([cid for cid, _ in ranked])
            ranked = [r for r in ranked if query_lang.matches(plan.root, tokens.get(r[0], ""))]
        return ranked[:wanted]

    def _hits(
        self,
        fused: list[tuple[int, float, dict[str, int], dict[str, float]]],
        query: str,
        plan: query_lang.Plan | None,
        offset: int,
        limit: int,
        full_text: bool,
    ) -> tuple[list[Hit], int]:
        # Collapse to notes on (id, path) alone; full details only for the page shown.
        paths = self.index.chunk_paths([f[0] for f in fused])
        extra: dict[str, int] = {}
        order: list[tuple[int, float, dict[str, int], dict[str, float]]] = []
        for item in fused:
            path = paths.get(item[0])
            if path is None:
                continue
            if path in extra:
                extra[path] += 1
                continue
            extra[path] = 0
            order.append(item)
        page = order[offset : offset + limit]
        details = self.index.chunk_details([item[0] for item in page])
        query_tokens = set(plan.terms) if plan else set(tokenize(query))
        hits: list[Hit] = []
        for cid, score, ranks, scores in page:
            row = details[cid]
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
                    uri=note_uri(row["note_id"]),
                    more_chunks=extra[row["path"]],
                    text=row["text"] if full_text else None,
                )
            )
        return hits, len(order)


def _single(
    lists: dict[str, list[tuple[int, float]]],
) -> list[tuple[int, float, dict[str, int], dict[str, float]]]:
    if not lists:
        return []
    ((name, rows),) = lists.items()
    return [(cid, score, {name: i + 1}, {name: score}) for i, (cid, score) in enumerate(rows)]


def _fuse(
    lists: dict[str, list[tuple[int, float]]],
) -> list[tuple[int, float, dict[str, int], dict[str, float]]]:
    fused: dict[int, list[Any]] = {}
    for name, rows in lists.items():
        for rank, (cid, score) in enumerate(rows, start=1):
            entry = fused.setdefault(cid, [0.0, {}, {}])
            entry[0] += 1.0 / (RRF_K + rank)
            entry[1][name] = rank
            entry[2][name] = score
    ordered = sorted(fused.items(), key=lambda kv: (-kv[1][0], kv[0]))
    return [(cid, v[0], v[1], v[2]) for cid, v in ordered]


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
