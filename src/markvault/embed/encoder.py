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

Backends (``MARKVAULT_ENCODER``):

- ``onnx-int8`` (default): see ``encoder_export.py``. Its vectors differ from fp32 ones by
  a cosine of about 0.999, so they are stored under the same model name: an index
  embedded by one backend is searched by another without re-embedding.
- ``onnx``: the fp32 network in ONNX Runtime (cosine 1.0000 to torch's vectors).
- ``torch``: sentence-transformers itself.

A model the exporter does not understand (not Transformer + mean or CLS pooling), a
missing onnxruntime, or an export whose vectors disagree with torch's on a fixed set of
sentences falls back to ``torch``; ``Embedder.fallback_reason`` says why.

Texts are tokenized once, sorted by token count and batched so that a batch pads only
to lengths close to its own.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

ENV_ENCODER = "MARKVAULT_ENCODER"
BACKENDS = ("onnx-int8", "onnx", "torch")
DEFAULT_BACKEND = "onnx-int8"
# Changing how models are exported or quantized changes this, and so the cache key.
EXPORT_VERSION = "1"
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
    """The backend asked for in the environment, or the default."""
    value = (env if env is not None else os.environ).get(ENV_ENCODER, "").strip().lower()
    return value if value in BACKENDS else DEFAULT_BACKEND


def default_cache_dir() -> Path:
    """``encoders/`` in the user's cache folder, beside the default index folders."""
    import platformdirs

    from markvault.config import APP_NAME

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
    """Encodes texts with an exported model; the interface ``embed.Embedder`` uses."""

    def __init__(self, layout: ModelLayout, onnx_file: Path, backend: str) -> None:
        import onnxruntime as ort
        from tokenizers import Tokenizer

        self.layout = layout
        self.backend = backend
        self.onnx_file = onnx_file
        self._tokenizer = Tokenizer.from_file(str(layout.path / "tokenizer.json"))
        self._tokenizer.no_padding()
        self._tokenizer.enable_truncation(layout.max_tokens)
        self._ort = ort
        self._session = self._open_session(threads=os.cpu_count() or 1)
        self._query_session: Any = None  # one thread: a single short text gains nothing
        self._query_lock = threading.Lock()
        self._inputs = {i.name for i in self._session.get_inputs()}

    def _open_session(self, threads: int) -> Any:
        options = self._ort.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        options.graph_optimization_level = self._ort.GraphOptimizationLevel.ORT_ENABLE_ALL
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
        return self._encode(self._session, texts, batch_size, normalize_embeddings)

    def encode_one(self, text: str) -> np.ndarray:
        """One text (a query) on a single-threaded session."""
        with self._query_lock:
            if self._query_session is None:
                self._query_session = self._open_session(threads=1)
        return self._encode(self._query_session, [text], 1, True)[0]

    def _encode(
        self, session: Any, texts: Sequence[str], batch_size: int, normalize: bool
    ) -> np.ndarray:
        out = np.zeros((len(texts), self.layout.dim), np.float32)
        if not texts:
            return out
        inputs = [t.lower() for t in texts] if self.layout.lower_case else list(texts)
        encodings = self._tokenizer.encode_batch(inputs)
        lengths = np.array([len(e.ids) for e in encodings])
        # Longest first, so a batch pads only to lengths close to its own.
        order = np.argsort(-lengths, kind="stable")
        start = 0
        while start < len(order):
            longest = int(lengths[order[start]]) or 1
            size = max(1, min(batch_size, MAX_BATCH_TOKENS // longest))
            batch = order[start : start + size]
            out[batch] = self._run(session, [encodings[i] for i in batch], longest)
            start += size
        if normalize:
            norms = np.linalg.norm(out, axis=1, keepdims=True)
            out /= np.maximum(norms, 1e-12)
        return out

    def features(self, texts: Sequence[str]) -> dict[str, np.ndarray]:
        """The model's inputs for ``texts`` (one batch, padded to its longest)."""
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


def load(model_dir: str | Path, cache_dir: Path | None, backend: str) -> OnnxEncoder:
    """The ONNX encoder of ``model_dir``, exported into ``cache_dir`` on first use.

    Raises:
        EncoderUnavailable: the model cannot be exported, or its export is not faithful.
    """
    if backend not in ("onnx", "onnx-int8"):
        raise EncoderUnavailable(f"backend {backend!r} is not an ONNX backend")
    try:
        import onnxruntime  # noqa: F401
    except ImportError as exc:
        raise EncoderUnavailable("onnxruntime is not installed") from exc
    layout = read_layout(model_dir)
    if layout is None:
        raise EncoderUnavailable("the model is not a Transformer with mean or CLS pooling")
    folder = (cache_dir or default_cache_dir()) / cache_key(layout, backend)
    onnx_file = folder / "model.onnx"
    if onnx_file.is_file():
        try:
            return OnnxEncoder(layout, onnx_file, backend)
        except Exception:  # a damaged file (a full disk, a crash): exported again below
            shutil.rmtree(folder, ignore_errors=True)
    from markvault.embed.encoder_export import build

    try:
        build(layout, backend, folder)
    except OSError as exc:
        raise EncoderUnavailable(f"cannot write the exported model to {folder}: {exc}") from exc
    return OnnxEncoder(layout, onnx_file, backend)


class EncoderUnavailable(Exception):
    """The fast encoder cannot serve this model here; sentence-transformers will."""
