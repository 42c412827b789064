"""A stand-in for the embedding model, for tests of what is built around it: fusion,
deep search, the model loading in the background, background embedding.

``HashEmbedder`` is small and deterministic: a text's vector counts its search tokens
(``text.tokenize``, so stemmed as the index stems) hashed into ``dim`` buckets, after
mapping words through a small thesaurus, so that "car" and "automobile" mean the same
while sharing no keyword. The real model stays in the ``model``-marked tests.
"""

from __future__ import annotations

import threading
import time
import zlib
from collections.abc import Sequence
from typing import Any

import numpy as np

from markvault.markdown.tokens import tokenize

NAME = "hash-embedder"
# Words the fake reads as one meaning (by their stems, as tokenize gives them).
SYNONYMS = {"automobil": "car", "vehicl": "car", "sedan": "car", "mend": "repair", "fix": "repair"}


class HashEmbedder:
    """A model that is loaded at once, or when ``release`` is set (see the module). As
    the real one, its batch model is open once it has embedded, or once a background
    load finished. ``seconds_per_encode``: a slow CPU's time for each call."""

    def __init__(
        self,
        name: str = NAME,
        dim: int = 64,
        release: threading.Event | None = None,
        seconds_per_encode: float = 0.0,
    ):
        self.name = name
        self.load_error: str | None = None
        self._dim = dim
        self._release = release
        self._loaded = threading.Event()
        self._batch_open = threading.Event()
        self.seconds_per_encode = seconds_per_encode
        self.encoded: list[str] = []  # every text embedded, in order

    @property
    def loaded(self) -> bool:
        return self._loaded.is_set()

    @property
    def batch_ready(self) -> bool:
        return self._batch_open.is_set()

    @property
    def dim(self) -> int:
        return self._dim

    def start_loading(self) -> None:
        def load_and_open() -> None:
            self.load()
            self._batch_open.set()

        threading.Thread(target=load_and_open, name="load-fake-model", daemon=True).start()

    def wait(self, timeout: float) -> bool:
        return self._loaded.wait(timeout)

    def load(self) -> Any:
        if self._release is not None:
            self._release.wait()
        self._loaded.set()
        return self

    def prepare(self, progress: Any) -> None:
        """Nothing to say: the fake loads at once (or when released, on first use)."""

    def encode(self, texts: Sequence[str], batch_size: int = 64) -> np.ndarray:
        self.load()
        if self.seconds_per_encode:
            time.sleep(self.seconds_per_encode)  # the slow CPU's work, not a wait
        self._batch_open.set()
        self.encoded.extend(texts)
        out = np.zeros((len(texts), self._dim), dtype=np.float32)
        for row, text in enumerate(texts):
            for token in tokenize(text):
                word = SYNONYMS.get(token, token)
                out[row, zlib.crc32(word.encode()) % self._dim] += 1.0
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return out / np.where(norms == 0, 1.0, norms)

    def encode_query(self, text: str) -> np.ndarray:
        return self.encode([text])[0]
