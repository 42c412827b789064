"""Ranking experiments: one setting changed at a time, measured against the baseline.

Nothing here edits ``src/``. A setting is changed in one of four ways:

- a module constant patched for the duration of one run (``runner.patched``):
  BM25's k1 and b (``markvault.index.keyword``), RRF's k and deep search's weights
  (``markvault.search``);
- a module function wrapped the same way: ``markvault.query.parse`` by
  ``parse_keeping_text``, to try embedding the query as written;
- the query text rewritten before it is searched (what a change to query parsing
  would do): stopwords removed, or ``split_words``;
- a different vault, in a separate keyword-only index: a chunk size in the vault's
  own ``.markvault.toml`` (``[chunk] max_pieces``), or notes without a frontmatter
  title (markvault adds a frontmatter title to every chunk's tokens twice, as the
  title and as the heading context; Cranfield's text repeats it a third time).

Each result carries its difference in nDCG@10 from the same mode's baseline and the
paired randomization test's p-value, because on 225 queries most differences are
noise.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import regex
from bm25s.stopwords import STOPWORDS_EN

import markvault.index.keyword
import markvault.query
import markvault.search
from markvault import Vault

from . import runner
from .metrics import Scores, paired_p_value, per_query
from .notes import collection_files
from .smart import Collection, Query
from .variants import STOPWORDS

_MODULES = {"index": markvault.index.keyword, "query": markvault.query, "search": markvault.search}
_ORIGINAL_PARSE = markvault.query.parse
_CJK = r"\p{Han}\p{Hiragana}\p{Katakana}\p{Hangul}ー"
# markvault.text's segmentation: CJK runs, and words of every other script.
_SEGMENT = regex.compile(rf"([{_CJK}]+)|[\p{{L}}\p{{N}}\p{{M}}--[{_CJK}]]+", regex.V1)


def split_words(text: str) -> str:
    """A query rewrite that makes every search token a word of its own.

    markvault's parser turns an unquoted word that yields several tokens into a
    *phrase*: a Chinese or Japanese sentence (no spaces: one word, many bigrams) must
    then occur verbatim, and "boundary-layer" must be adjacent. This rewrite writes
    each CJK bigram and each hyphen- or apostrophe-joined part as its own word (the
    bigrams overlap, as markvault's do), so BM25 ranks by all of them with no
    adjacency required: what the parser would do if only quotes made phrases.
    """
    out: list[str] = []
    for match in _SEGMENT.finditer(runner.plain_query(text)):
        cjk = match.group(1)
        if cjk and len(cjk) > 1:
            out.extend(cjk[i : i + 2] for i in range(len(cjk) - 1))
        else:
            out.append(match.group())
    return " ".join(out) or text


def parse_keeping_text(query: str) -> markvault.query.Plan:
    """``markvault.query.parse``, but the plan's ``text`` (what the embedding model
    reads) is the query as written instead of its stemmed, case-folded tokens.

    The harness sends plain words (``runner.plain_query``), so there is no operator
    to strip and the query itself is the right text.
    """
    plan = _ORIGINAL_PARSE(query)
    plan.text = query
    return plan


def parse_split_keeping_text(query: str) -> markvault.query.Plan:
    """Both fixes at once: keyword terms as ``split_words`` makes them (no implicit
    phrases), and the embedding model reads the query as written (unsplit)."""
    plan = _ORIGINAL_PARSE(split_words(query))
    plan.text = query
    return plan


def without_stopwords(words: frozenset[str]) -> Callable[[str], str]:
    """A query rewrite that drops ``words`` (case-insensitive), then ``plain_query``."""

    def rewrite(text: str) -> str:
        kept = [w for w in text.split() if w.lower() not in words]
        return runner.plain_query(" ".join(kept) or text)

    return rewrite


@dataclass(frozen=True)
class Experiment:
    name: str
    group: str
    mode: str
    params: dict[str, Any]
    # module key in _MODULES -> {constant: value}
    patches: dict[str, dict[str, Any]] = field(default_factory=dict)
    rewrite: Callable[[str], str] | None = None
    # A separate keyword-only vault and index: this chunk size, or notes without titles.
    max_pieces: int | None = None
    titles: bool = True

    def available(self) -> bool:
        """False when ``src/`` lacks a patched constant (e.g. deep search not merged)."""
        return all(
            hasattr(_MODULES[mod], name) for mod, consts in self.patches.items() for name in consts
        )


def default_experiments() -> list[Experiment]:
    """The experiments the full run makes (about ten minutes on 2 cores with vectors)."""
    out: list[Experiment] = []
    for k1 in (0.9, 1.2, 1.5, 2.0):
        for b in (0.5, 0.75, 0.9):
            if (k1, b) != (markvault.index.keyword.BM25_K1, markvault.index.keyword.BM25_B):
                out.append(
                    Experiment(
                        f"BM25 k1={k1} b={b}",
                        "bm25",
                        "keyword",
                        {"k1": k1, "b": b},
                        {"index": {"BM25_K1": k1, "BM25_B": b}},
                    )
                )
    en33 = frozenset(STOPWORDS_EN)
    for mode in ("keyword", "hybrid"):
        out.append(
            Experiment(
                "query stopwords removed (bm25s 'en', 33 words)",
                "query",
                mode,
                {"stopwords": "bm25s STOPWORDS_EN"},
                rewrite=without_stopwords(en33),
            )
        )
        out.append(
            Experiment(
                "query stopwords removed (179 words + question words)",
                "query",
                mode,
                {"stopwords": "bm25s STOPWORDS_EN_PLUS + variants.STOPWORDS"},
                rewrite=without_stopwords(STOPWORDS),
            )
        )
    out.append(
        Experiment(
            "one chunk per note (max_pieces=100000)",
            "chunking",
            "keyword",
            {"max_pieces": 100_000},
            max_pieces=100_000,
        )
    )
    out.append(
        Experiment(
            "no frontmatter title (title tokens once, from the text)",
            "chunking",
            "keyword",
            {"frontmatter_title": False},
            titles=False,
        )
    )
    for mode in ("keyword", "hybrid"):
        out.append(
            Experiment(
                "unquoted multi-token words as separate terms (split_words)",
                "query",
                mode,
                {"rewrite": "split_words"},
                rewrite=split_words,
            )
        )
    for mode in ("vector", "hybrid", "deep"):
        out.append(
            Experiment(
                "embed the query as written (not its stemmed tokens)",
                "query",
                mode,
                {"plan.text": "query as written"},
                {"query": {"parse": parse_keeping_text}},
            )
        )
    for k in (10, 30, 100):
        out.append(
            Experiment(f"RRF k={k}", "fusion", "hybrid", {"rrf_k": k}, {"search": {"RRF_K": k}})
        )
    for k in (10, 30, 100):
        out.append(
            Experiment(
                f"embed the query as written + RRF k={k}",
                "combined",
                "hybrid",
                {"plan.text": "query as written", "rrf_k": k},
                {"query": {"parse": parse_keeping_text}, "search": {"RRF_K": k}},
            )
        )
    out.append(
        Experiment(
            "deep: never skip variants",
            "deep",
            "deep",
            {"decisive_ratio": "inf"},
            {"search": {"DECISIVE_RATIO": math.inf}},
        )
    )
    for w in (1.0, 3.0):
        out.append(
            Experiment(
                f"deep: original weight {w}",
                "deep",
                "deep",
                {"original_weight": w},
                {"search": {"ORIGINAL_WEIGHT": w}},
            )
        )
    return out


@dataclass
class ExperimentResult:
    experiment: Experiment
    scores: Scores
    delta_ndcg10: float
    p_value: float
    seconds: float
    errors: int

    def as_dict(self) -> dict[str, Any]:
        e = self.experiment
        return {
            "name": e.name,
            "group": e.group,
            "mode": e.mode,
            "params": e.params,
            **self.scores.as_dict(),
            "delta_ndcg@10": round(self.delta_ndcg10, 4),
            "p_value": round(self.p_value, 4),
            "seconds": round(self.seconds, 1),
            "errors": self.errors,
        }


def run_experiment(
    exp: Experiment,
    vault: Vault,
    collection: Collection,
    queries: Sequence[Query],
    baseline: runner.ModeRun,
    workdir: Path,
) -> ExperimentResult:
    """One experiment, compared query by query with ``baseline`` (same mode, same queries)."""
    relevant = runner.relevant_for(collection, queries)
    target = vault
    if exp.max_pieces is not None or not exp.titles:
        files = collection_files(collection.documents, titles=exp.titles)
        where = (
            workdir
            / f"variant-{exp.max_pieces or 'default'}-{'titles' if exp.titles else 'untitled'}"
        )
        target = runner.build_files(files, where, vectors=False, max_pieces=exp.max_pieces).vault
    try:
        with contextlib.ExitStack() as stack:
            for module, constants in exp.patches.items():
                stack.enter_context(runner.patched(_MODULES[module], **constants))
            run = runner.run_mode(
                target, queries, exp.mode, rewrite=exp.rewrite or runner.plain_query
            )
    finally:
        if target is not vault:
            target.close()
    mine = per_query(run.ranked, relevant)
    base = per_query(baseline.ranked, relevant)
    keys = sorted(mine)
    scores = run.scores(relevant)
    return ExperimentResult(
        experiment=exp,
        scores=scores,
        delta_ndcg10=scores.ndcg10 - baseline.scores(relevant).ndcg10,
        p_value=paired_p_value([mine[k][0] for k in keys], [base[k][0] for k in keys]),
        seconds=run.seconds,
        errors=len(run.errors),
    )
