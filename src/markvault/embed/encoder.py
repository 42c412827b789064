"""Sentence embeddings through ONNX Runtime: the model exported once per machine, cached
beside the indexes.

sentence-transformers runs the model in torch fp32. The same network exported to ONNX
and run by ONNX Runtime, with most of its weight matrices in int8, encodes about three
times faster on a CPU at the same retrieval quality (``bench/bench_embed.py``). Nothing
is downloaded: the first use exports the local model folder (the packaged default or a
folder the user named) with torch into ``<cache>/markvault/encoders/<key>/model.onnx``
(``encoder_export.py``), beside the default index folders and shared by every vault and
process (the key names the model's files and the backend); every later process loads
only onnxruntime and the fast tokenizer, never torch.

Backends (``MARKVAULT_ENCODER``; by default ``auto``: the fastest one that is faithful on
this machine, measured once and remembered, ``encoder_choice.py``):

- ``onnx-int8``, ``onnx-int8-rr``, ``onnx-int8-u8``: int8 variants (``encoder_export.py``).
  Their vectors differ from fp32 ones by a cosine of about 0.999 where they pass their
  check, so they are stored under the same model name: an index embedded by one backend
  is searched by another without re-embedding.
- ``onnx``: the fp32 network in ONNX Runtime (cosine 1.0000 to torch's vectors).
- ``torch``: sentence-transformers itself.

A model the exporter does not understand (not Transformer + mean or CLS pooling), a
missing onnxruntime, or exports whose vectors disagree with torch's on a fixed set of
sentences leave ``torch``; ``Embedder.reason`` says why.

Texts are tokenized once, sorted by token count and batched so that a batch pads only
to lengths close to its own.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

ENV_ENCODER = "MARKVAULT_ENCODER"
INT8_BACKENDS = ("onnx-int8", "onnx-int8-rr", "onnx-int8-u8")
ONNX_BACKENDS = (*INT8_BACKENDS, "onnx")
BACKENDS = (*ONNX_BACKENDS, "torch")
DEFAULT_BACKEND = "auto"  # measured once per machine (encoder_choice.py)
# Changing how models are exported or quantized changes this, and so the cache key.
EXPORT_VERSION = "3"
# Texts are batched by length so that little padding is computed; a batch holds at most
# this many tokens (batch size times its longest text) besides the batch size limit.
MAX_BATCH_TOKENS = 8192


@dataclass(frozen=True)
class ModelLayout:
    """What the exporter needs to know of a sentence-transformers folder."""

    path: Path
    pooling: str  # "mean" or "cls"
    max_tokens: int
    lower_case: bool
    dim: int


def backend_choice(env: dict[str, str] | None = None) -> str:
    """The backend asked for in the environment, or ``auto`` (measured)."""
    value = (env if env is not None else os.environ).get(ENV_ENCODER, "").strip().lower()
    return value if value in BACKENDS else DEFAULT_BACKEND


# Nothing may reach a hub at run time, and the libraries' progress bars are noise.
OFFLINE_ENV = {
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "HF_HUB_DISABLE_PROGRESS_BARS": "1",
    "TRANSFORMERS_VERBOSITY": "error",
    "TOKENIZERS_PARALLELISM": "false",
}


def stay_offline() -> None:
    """Set OFFLINE_ENV (where not set already) before torch or transformers load."""
    for key, value in OFFLINE_ENV.items():
        os.environ.setdefault(key, value)


def default_cache_dir() -> Path:
    """``encoders/`` in the user's cache folder, beside the default index folders."""
    import platformdirs

    from markvault.user_folders import APP_NAME

    return platformdirs.user_cache_path(APP_NAME) / "encoders"


def read_layout(model_dir: str | Path) -> ModelLayout | None:
    """The folder's layout when it is Transformer + mean/CLS pooling (+ Normalize)."""
    path = Path(model_dir)
    try:
        modules = json.loads((path / "modules.json").read_text(encoding="utf-8"))
        kinds = [m["type"].rsplit(".", 1)[-1] for m in modules]
        if kinds[:2] != ["Transformer", "Pooling"] or kinds[2:] not in ([], ["Normalize"]):
            return None
        pooling_dir = path / modules[1]["path"]
        pooling = json.loads((pooling_dir / "config.json").read_text(encoding="utf-8"))
        st_config = json.loads((path / "sentence_bert_config.json").read_text(encoding="utf-8"))
        config = json.loads((path / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError, KeyError, IndexError, TypeError):
        return None
    if pooling.get("pooling_mode_mean_tokens"):
        mode = "mean"
    elif pooling.get("pooling_mode_cls_token"):
        mode = "cls"
    else:
        return None
    others = [k for k, v in pooling.items() if k.startswith("pooling_mode_") and v]
    if len(others) != 1 or not (path / "tokenizer.json").is_file():
        return None
    max_tokens = int(st_config.get("max_seq_length") or config.get("max_position_embeddings", 512))
    return ModelLayout(
        path=path,
        pooling=mode,
        max_tokens=max_tokens,
        lower_case=bool(st_config.get("do_lower_case")),
        dim=int(pooling.get("word_embedding_dimension") or config["hidden_size"]),
    )


def cache_key(layout: ModelLayout, backend: str) -> str:
    """Identifies an export: the model's files (names, sizes, times), backend, version."""
    files = sorted(
        (str(p.relative_to(layout.path)), st.st_size, st.st_mtime_ns)
        for p in layout.path.rglob("*")
        if p.is_file() and p.suffix in (".json", ".safetensors", ".bin", ".txt")
        for st in [p.stat()]
    )
    data = json.dumps([EXPORT_VERSION, backend, files])
    name = layout.path.name or "model"
    return f"{name}-{backend}-{hashlib.sha256(data.encode()).hexdigest()[:12]}"


class OnnxEncoder:
    """Encodes texts with an exported model; the interface ``embed.Embedder`` uses.

    ``threads``: each run's intra-op threads; ``parallel``: how many batches run at once
    (a session runs concurrent calls). Both are measured per machine (encoder_choice.py):
    on few cores, one thread per batch and the batches side by side wastes less in
    synchronisation than every batch split over the cores. The sessions are opened on
    first use: a process that embeds one query opens only the one-thread session."""

    def __init__(
        self,
        layout: ModelLayout,
        onnx_file: Path,
        backend: str,
        threads: int | None = None,
        parallel: int = 1,
    ) -> None:
        import onnxruntime as ort
        from tokenizers import Tokenizer

        self.layout = layout
        self.backend = backend
        self.onnx_file = onnx_file
        self.threads = threads or os.cpu_count() or 1
        self.parallel = max(1, parallel)
        self._tokenizer = Tokenizer.from_file(str(layout.path / "tokenizer.json"))
        self._tokenizer.no_padding()
        self._tokenizer.enable_truncation(layout.max_tokens)
        self._ort = ort
        self._session: Any = None
        self._query_session: Any = None  # one thread: a single short text gains nothing
        self._query_lock = threading.Lock()
        self._inputs: set[str] = set()

    @property
    def session(self) -> Any:
        """The batch session (opened on first use; a damaged file raises here)."""
        with self._query_lock:
            if self._session is None:
                self._session = self._open_session(self.threads)
        return self._session

    def _open_session(self, threads: int, optimize: bool = True) -> Any:
        session = self._new_session(threads, optimize)
        self._inputs = {i.name for i in session.get_inputs()}
        return session

    def _new_session(self, threads: int, optimize: bool = True) -> Any:
        options = self._ort.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        levels = self._ort.GraphOptimizationLevel
        options.graph_optimization_level = (
            levels.ORT_ENABLE_ALL if optimize else levels.ORT_DISABLE_ALL
        )
        if not optimize:  # nor are the weights repacked for the kernels (~35 ms)
            options.add_session_config_entry("session.disable_prepacking", "1")
        # Idle worker threads must not spin: the index and other processes share the cores.
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        return self._ort.InferenceSession(
            str(self.onnx_file), options, providers=["CPUExecutionProvider"]
        )

    def get_sentence_embedding_dimension(self) -> int:
        return self.layout.dim

    def encode(
        self,
        texts: Sequence[str],
        batch_size: int = 32,
        normalize_embeddings: bool = True,
        convert_to_numpy: bool = True,
        show_progress_bar: bool = False,
    ) -> np.ndarray:
        """Unit vectors (or raw pooled ones) of ``texts``, in order."""
        return self._encode(self.session, texts, batch_size, normalize_embeddings, self.parallel)

    def encode_one(self, text: str) -> np.ndarray:
        """One text (a query) on a single-threaded session. Its graph is not optimized
        and its weights not repacked: both cost more time at opening (~0.1 s together,
        on an AVX2 EPYC) than they save on one short text, and the vector differs by
        less than 1e-4."""
        return self._encode(self.open_query_session(), [text], 1, True)[0]

    def open_query_session(self) -> Any:
        """The single-threaded session ``encode_one`` runs (opened on first use)."""
        with self._query_lock:
            if self._query_session is None:
                self._query_session = self._open_session(threads=1, optimize=False)
            return self._query_session

    def _encode(
        self,
        session: Any,
        texts: Sequence[str],
        batch_size: int,
        normalize: bool,
        parallel: int = 1,
    ) -> np.ndarray:
        # The same text twice (a repeated boilerplate chunk) is embedded once.
        unique = list(dict.fromkeys(texts))
        out = np.zeros((len(unique), self.layout.dim), np.float32)
        if not unique:
            return np.zeros((len(texts), self.layout.dim), np.float32)
        inputs = [t.lower() for t in unique] if self.layout.lower_case else unique
        encodings = self._tokenizer.encode_batch(inputs)
        lengths = np.array([len(e.ids) for e in encodings])
        # Longest first, so a batch pads only to lengths close to its own.
        order = np.argsort(-lengths, kind="stable")
        batches: list[tuple[np.ndarray, int]] = []
        start = 0
        while start < len(order):
            longest = int(lengths[order[start]]) or 1
            size = max(1, min(batch_size, MAX_BATCH_TOKENS // longest))
            batches.append((order[start : start + size], longest))
            start += size

        def run(batch: tuple[np.ndarray, int]) -> None:
            rows, width = batch
            out[rows] = self._run(session, [encodings[i] for i in rows], width)

        if parallel > 1 and len(batches) > 1:
            from concurrent.futures import ThreadPoolExecutor

            with ThreadPoolExecutor(parallel, thread_name_prefix="encode") as pool:
                list(pool.map(run, batches))
        else:
            for batch in batches:
                run(batch)
        if normalize:
            norms = np.linalg.norm(out, axis=1, keepdims=True)
            out /= np.maximum(norms, 1e-12)
        if len(unique) == len(texts):
            return out
        where = {t: i for i, t in enumerate(unique)}
        return out[[where[t] for t in texts]]

    def features(self, texts: Sequence[str]) -> dict[str, np.ndarray]:
        """The model's inputs for ``texts`` (one batch, padded to its longest)."""
        self.session  # noqa: B018  (opened: its input names decide the features)
        encodings = self._tokenizer.encode_batch(list(texts))
        return self._feed(encodings, max(len(e.ids) for e in encodings))

    def _feed(self, encodings: list[Any], width: int) -> dict[str, np.ndarray]:
        ids = np.zeros((len(encodings), width), np.int64)
        mask = np.zeros_like(ids)
        for row, enc in enumerate(encodings):
            ids[row, : len(enc.ids)] = enc.ids
            mask[row, : len(enc.ids)] = 1
        feed = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in self._inputs:
            feed["token_type_ids"] = np.zeros_like(ids)
        return feed

    def _run(self, session: Any, encodings: list[Any], width: int) -> np.ndarray:
        feed = self._feed(encodings, width)
        hidden = session.run(None, feed)[0]
        if self.layout.pooling == "cls":
            return np.asarray(hidden[:, 0], np.float32)
        weights = feed["attention_mask"][..., None].astype(np.float32)
        return np.asarray((hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9))


def load(
    model_dir: str | Path,
    cache_dir: Path | None,
    backend: str,
    threads: int | None = None,
    parallel: int = 1,
) -> OnnxEncoder:
    """The ONNX encoder of ``model_dir`` from its export in ``cache_dir`` (made by the
    measurement, ``encoder_choice.py``), its file checked by opening it.

    Raises:
        EncoderUnavailable: not an ONNX backend, no onnxruntime, the model cannot be
            exported, or its export is missing or damaged.
    """
    if backend not in ONNX_BACKENDS:
        raise EncoderUnavailable(f"backend {backend!r} is not an ONNX backend")
    try:
        import onnxruntime  # noqa: F401
    except ImportError as exc:
        raise EncoderUnavailable("onnxruntime is not installed") from exc
    layout = read_layout(model_dir)
    if layout is None:
        raise EncoderUnavailable("the model is not a Transformer with mean or CLS pooling")
    onnx_file = export_folder(layout, cache_dir, backend) / "model.onnx"
    if not onnx_file.is_file():
        raise EncoderUnavailable(f"the {backend} export is missing ({onnx_file})")
    return OnnxEncoder(layout, onnx_file, backend, threads, parallel)


def export_folder(layout: ModelLayout, cache_dir: Path | None, backend: str) -> Path:
    """Where ``backend``'s export of the model is kept."""
    return (cache_dir or default_cache_dir()) / cache_key(layout, backend)


class EncoderUnavailable(Exception):
    """The fast encoder cannot serve this model here; sentence-transformers will."""
