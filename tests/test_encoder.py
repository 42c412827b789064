"""The ONNX encoder: model layouts, the export cache, faithfulness to torch, fallbacks."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from markvault.embed import encoder
from markvault.embed.embedder import SentenceEmbedder, model_path
from markvault.embed.encoder import EncoderUnavailable, backend_choice, cache_key, read_layout

TEXTS = [
    "How do I connect Claude Code to this vault?",
    "x",
    "Tomatoes need deep watering twice a week; stake them early. " * 12,
    "## Install\n\n1. `pip install markvault`\n2. `vault init ~/notes`",
    "Der Index liegt neben dem Tresor und wird bei Bedarf neu gebaut.",
    "SELECT chunk_id, sum(tf) FROM postings GROUP BY chunk_id",
    "",
]


def fake_model(root: Path, pooling: str = "mean") -> Path:
    """The files a sentence-transformers folder describes itself with (no weights)."""
    root.mkdir(parents=True)
    modules = [
        {"path": path, "type": f"sentence_transformers.models.{kind}"}
        for path, kind in (("", "Transformer"), ("1_Pooling", "Pooling"), ("2", "Normalize"))
    ]
    (root / "modules.json").write_text(json.dumps(modules))
    (root / "1_Pooling").mkdir()
    (root / "1_Pooling" / "config.json").write_text(
        json.dumps({"word_embedding_dimension": 8, f"pooling_mode_{pooling}_tokens": True})
    )
    (root / "sentence_bert_config.json").write_text(json.dumps({"max_seq_length": 64}))
    (root / "config.json").write_text(json.dumps({"hidden_size": 8}))
    (root / "tokenizer.json").write_text("{}")
    return root


def test_backend_comes_from_the_environment_with_a_safe_default() -> None:
    assert backend_choice({}) == encoder.DEFAULT_BACKEND
    assert backend_choice({"MARKVAULT_ENCODER": "torch"}) == "torch"
    assert backend_choice({"MARKVAULT_ENCODER": " ONNX "}) == "onnx"
    assert backend_choice({"MARKVAULT_ENCODER": "gpu-please"}) == encoder.DEFAULT_BACKEND


def test_layout_of_a_mean_pooling_model(tmp_path: Path) -> None:
    layout = read_layout(fake_model(tmp_path / "m"))
    assert layout is not None
    assert (layout.pooling, layout.max_tokens, layout.dim, layout.lower_case) == (
        "mean",
        64,
        8,
        False,
    )


def test_unsupported_layouts_are_declined(tmp_path: Path) -> None:
    assert read_layout(fake_model(tmp_path / "max", pooling="max")) is None
    assert read_layout(tmp_path / "nothing-here") is None
    broken = fake_model(tmp_path / "broken")
    (broken / "modules.json").write_text("not json")
    assert read_layout(broken) is None
    with pytest.raises(EncoderUnavailable, match="mean or CLS"):
        encoder.load(broken, tmp_path / "cache", "onnx-int8")
    with pytest.raises(EncoderUnavailable, match="not an ONNX backend"):
        encoder.load(broken, tmp_path / "cache", "torch")


def test_cache_key_follows_the_model_files_and_backend(tmp_path: Path) -> None:
    root = fake_model(tmp_path / "m")
    layout = read_layout(root)
    assert layout is not None
    before = cache_key(layout, "onnx-int8")
    assert before == cache_key(layout, "onnx-int8")
    assert before != cache_key(layout, "onnx")
    (root / "config.json").write_text(json.dumps({"hidden_size": 8, "changed": True}))
    assert cache_key(layout, "onnx-int8") != before


# ---- the real packaged model ----------------------------------------------------------------


@pytest.fixture(scope="module")
def plain_vectors() -> np.ndarray:
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(model_path("all-MiniLM-L6-v2"), device="cpu")
    return np.asarray(model.encode(TEXTS, normalize_embeddings=True), np.float32)


@pytest.mark.model
def test_default_encoder_is_faithful_to_torch_and_keeps_order(
    encoder_cache: Path, plain_vectors: np.ndarray
) -> None:
    embedder = SentenceEmbedder("all-MiniLM-L6-v2", encoder_cache)
    got = embedder.encode(TEXTS, batch_size=2)  # mixed lengths: sorted and padded inside
    # int8 where it passes its check on this CPU, else the fp32 export: never torch.
    assert embedder.backend in ("onnx-int8", "onnx"), embedder.fallback_reason
    assert embedder.dim == 384 and got.shape == (len(TEXTS), 384)
    assert np.allclose(np.linalg.norm(got, axis=1), 1.0, atol=1e-5)
    cosine = (got * plain_vectors).sum(axis=1)
    assert cosine.min() > 0.99, cosine
    # A query alone (one-thread session) gets the vector it gets in a batch of one.
    alone = embedder.encode_query(TEXTS[0])
    assert float(alone @ embedder.encode(TEXTS[:1], batch_size=1)[0]) > 0.9999
    check = json.loads(next(encoder_cache.glob(f"*-{embedder.backend}-*/check.json")).read_text())
    assert check["backend"] == embedder.backend and check["min_cosine"] > 0.99


@pytest.mark.model
def test_fp32_onnx_matches_torch(
    tmp_path: Path, plain_vectors: np.ndarray, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MARKVAULT_ENCODER", "onnx")
    # What a process closed mid-export left is removed by the next export; a folder
    # another process may be exporting into right now is not.
    abandoned, under_way = tmp_path / "cache" / ".export-old", tmp_path / "cache" / ".export-new"
    for work in (abandoned, under_way):
        (work / "fp32.onnx").parent.mkdir(parents=True)
        (work / "fp32.onnx").write_bytes(b"half")
    hour_ago = time.time() - 3600
    os.utime(abandoned, (hour_ago, hour_ago))
    embedder = SentenceEmbedder("all-MiniLM-L6-v2", tmp_path / "cache")
    cosine = (embedder.encode(TEXTS) * plain_vectors).sum(axis=1)
    assert embedder.backend == "onnx" and cosine.min() > 0.9999
    assert not abandoned.exists() and under_way.exists()


@pytest.mark.model
def test_torch_backend_on_request(
    encoder_cache: Path, plain_vectors: np.ndarray, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MARKVAULT_ENCODER", "torch")
    embedder = SentenceEmbedder("all-MiniLM-L6-v2", encoder_cache)
    cosine = (embedder.encode(TEXTS) * plain_vectors).sum(axis=1)
    assert embedder.backend == "torch" and cosine.min() > 0.9999
    assert embedder.encode_query(TEXTS[0]).shape == (384,)


@pytest.mark.model
def test_a_model_the_exporter_cannot_serve_falls_back_to_torch(tmp_path: Path) -> None:
    folder = tmp_path / "model"
    shutil.copytree(model_path("all-MiniLM-L6-v2"), folder)
    pooling = folder / "1_Pooling" / "config.json"
    config = json.loads(pooling.read_text())
    config.update(pooling_mode_mean_tokens=False, pooling_mode_max_tokens=True)
    pooling.write_text(json.dumps(config))
    embedder = SentenceEmbedder(str(folder), tmp_path / "cache")
    vectors = embedder.encode(TEXTS[:2])
    assert embedder.backend == "torch" and "mean or CLS" in (embedder.fallback_reason or "")
    assert vectors.shape == (2, 384)
    assert not (tmp_path / "cache").exists()


@pytest.mark.model
def test_a_new_process_uses_the_cached_export_without_torch(
    encoder_cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # fp32: an export that passes its check on every CPU (int8 does not everywhere).
    monkeypatch.setenv("MARKVAULT_ENCODER", "onnx")
    SentenceEmbedder("all-MiniLM-L6-v2", encoder_cache).load()  # exported by now
    code = (
        "import sys; from pathlib import Path; "
        "from markvault.embed.embedder import SentenceEmbedder; "
        f"e = SentenceEmbedder('all-MiniLM-L6-v2', Path({str(encoder_cache)!r})); "
        "v = e.encode_query('hello'); "
        "print(e.backend, v.shape[0], 'torch' in sys.modules)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["onnx", "384", "False"]


@pytest.mark.model
def test_exporting_prints_nothing_on_stdout(tmp_path: Path) -> None:
    """An MCP server's stdout is its protocol stream: the export must stay silent there."""
    code = (
        "from pathlib import Path; from markvault.embed.embedder import SentenceEmbedder; "
        f"SentenceEmbedder('all-MiniLM-L6-v2', Path({str(tmp_path / 'cache')!r})).load()"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout == ""
    assert len(list((tmp_path / "cache").glob("*/model.onnx"))) == 1
    assert not list((tmp_path / "cache").glob(".export-*"))  # no leftovers


@pytest.mark.model
def test_a_damaged_export_is_made_again(tmp_path: Path, plain_vectors: np.ndarray) -> None:
    cache = tmp_path / "cache"
    SentenceEmbedder("all-MiniLM-L6-v2", cache).load()
    model_file = next(cache.glob("*/model.onnx"))
    model_file.write_bytes(model_file.read_bytes()[:1000])  # as after a full disk
    embedder = SentenceEmbedder("all-MiniLM-L6-v2", cache)
    cosine = (embedder.encode(TEXTS) * plain_vectors).sum(axis=1)
    assert embedder.backend in ("onnx-int8", "onnx") and cosine.min() > 0.99
    assert model_file.stat().st_size > 1000


def test_an_index_folder_that_cannot_hold_the_export_means_torch(tmp_path: Path) -> None:
    blocked = tmp_path / "file-not-folder"
    blocked.write_text("")
    layout = read_layout(model_path("all-MiniLM-L6-v2"))
    assert layout is not None
    with pytest.raises(EncoderUnavailable, match="cannot write"):
        encoder.load(layout.path, blocked / "encoders", "onnx-int8")
