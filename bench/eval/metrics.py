"""Ranking metrics over one query's ranked document ids and its judged gains.

Definitions (the usual ones, stated because small choices move the numbers):

- **nDCG@k**: DCG = sum over ranks i = 1..k of gain(doc_i) / log2(i + 1), with the
  gain linear in the grade (Cranfield: 5 - grade). It is divided by the DCG of the
  ideal ranking of *all* judged relevant documents of the query (their gains sorted
  in descending order, cut at k), not of the relevant documents that were retrieved.
- **Recall@k**: relevant documents among the first k, over all relevant documents.
- **MRR@k**: 1 / rank of the first relevant document within the first k, else 0.

"Relevant" means any judgment with a gain above 0 (Cranfield: grades 1-4, of any
degree); unjudged documents count as not relevant. Queries without a relevant
document are left out of every average (none in Cranfield).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

NDCG_K = 10
RECALL_K = 100
MRR_K = 10


def dcg(gains: Sequence[float]) -> float:
    return sum(g / math.log2(i + 2) for i, g in enumerate(gains))


def ndcg_at(ranked: Sequence[str], judged: Mapping[str, int], k: int) -> float:
    """nDCG@k against the ideal ordering of every judged relevant document."""
    ideal = dcg(sorted(judged.values(), reverse=True)[:k])
    if ideal == 0:
        return 0.0
    return dcg([judged.get(doc, 0) for doc in ranked[:k]]) / ideal


def recall_at(ranked: Sequence[str], judged: Mapping[str, int], k: int) -> float:
    if not judged:
        return 0.0
    return len(set(ranked[:k]) & judged.keys()) / len(judged)


def mrr_at(ranked: Sequence[str], judged: Mapping[str, int], k: int) -> float:
    for i, doc in enumerate(ranked[:k], start=1):
        if judged.get(doc, 0) > 0:
            return 1.0 / i
    return 0.0


@dataclass(frozen=True)
class Scores:
    """Mean metrics of one run over the queries it was scored on."""

    ndcg10: float
    recall100: float
    mrr10: float
    queries: int

    def as_dict(self) -> dict[str, float | int]:
        return {
            "ndcg@10": round(self.ndcg10, 4),
            "recall@100": round(self.recall100, 4),
            "mrr@10": round(self.mrr10, 4),
            "queries": self.queries,
        }


def per_query(
    run: Mapping[str, Sequence[str]], relevant: Mapping[str, Mapping[str, int]]
) -> dict[str, tuple[float, float, float]]:
    """query key -> (nDCG@10, Recall@100, MRR@10) for each judged query in ``run``.

    A judged query missing from ``run`` scores 0: a search that failed counts as a miss.
    """
    return {
        key: (
            ndcg_at(run.get(key, []), judged, NDCG_K),
            recall_at(run.get(key, []), judged, RECALL_K),
            mrr_at(run.get(key, []), judged, MRR_K),
        )
        for key, judged in relevant.items()
        if judged
    }


def evaluate(run: Mapping[str, Sequence[str]], relevant: Mapping[str, Mapping[str, int]]) -> Scores:
    """Mean nDCG@10, Recall@100 and MRR@10 of ``run`` (query key -> ranked doc ids)."""
    rows = per_query(run, relevant)
    n = len(rows)
    if n == 0:
        return Scores(0.0, 0.0, 0.0, 0)
    return Scores(
        ndcg10=sum(r[0] for r in rows.values()) / n,
        recall100=sum(r[1] for r in rows.values()) / n,
        mrr10=sum(r[2] for r in rows.values()) / n,
        queries=n,
    )


def paired_p_value(
    a: Sequence[float], b: Sequence[float], *, rounds: int = 10_000, seed: int = 6
) -> float:
    """Two-sided p-value of a paired randomization test on mean(a) - mean(b).

    Per-query differences get random signs ``rounds`` times; the p-value is the share
    of those whose mean is at least as far from 0 as the observed one. Cranfield's
    differences between settings are often a few thousandths of nDCG, well inside
    query-to-query noise; this says which ones are not. Seeded: reruns agree.
    """
    diffs = np.asarray(a, dtype=float) - np.asarray(b, dtype=float)
    if diffs.size == 0 or not diffs.any():
        return 1.0
    observed = abs(diffs.mean())
    signs = np.random.default_rng(seed).choice([-1.0, 1.0], size=(rounds, diffs.size))
    means = np.abs((signs * diffs).mean(axis=1))
    return float((np.count_nonzero(means >= observed - 1e-12) + 1) / (rounds + 1))
