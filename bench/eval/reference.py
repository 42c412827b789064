"""The baseline: BM25 from the ``bm25s`` library over the same documents.

Setup, chosen to be comparable to markvault's keyword search (stated in the report):

- text: each note's title and body (``notes.searchable_text``), i.e. what markvault
  reads, with the title once (markvault adds the title to every chunk's tokens);
- tokenizer: bm25s's own (lower case, words of 2+ word characters), English
  stopwords from bm25s (``"en"``, 33 words), English Snowball stemmer (PyStemmer,
  the stemmer markvault uses);
- scoring: ``method="lucene"`` (Lucene's IDF ln(1 + (N - df + 0.5) / (df + 0.5)),
  the one markvault computes), k1 = 1.2 and b = 0.75 (markvault's values; bm25s's
  default k1 is 1.5), one document per note (markvault scores chunks and keeps each
  note's best chunk).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

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

    def describe(self) -> str:
        stop = f"stopwords {self.stopwords!r}" if self.stopwords else "no stopwords"
        return (
            f"bm25s {bm25s.__version__} method={METHOD} k1={self.k1} b={self.b}, "
            f"{stop}, English Snowball stemmer"
        )


class ReferenceBM25:
    """A bm25s index of a collection's documents, searched one query at a time."""

    def __init__(self, documents: Sequence[Document], setup: ReferenceSetup) -> None:
        self.setup = setup
        self.doc_ids = [d.doc_id for d in documents]
        self._stemmer = Stemmer.Stemmer("english")
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
