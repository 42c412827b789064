"""The encoder: model layouts, the export cache, the measured choice and its verdicts,
faithfulness to torch, fallbacks, clean-up after a killed export."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from markvault.embed import encoder, encoder_choice
from markvault.embed.embedder import SentenceEmbedder, model_path
from markvault.embed.encoder import EncoderUnavailable, backend_choice, cache_key, read_layout
from markvault.embed.encoder_choice import decide

from .conftest import vault_argv

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


def test_outdated_exports_of_the_model_go_and_nothing_else(tmp_path: Path) -> None:
    from markvault.embed.encoder_export import remove_outdated_exports

    layout = read_layout(fake_model(tmp_path / "model"))
    assert layout is not None
    cache = tmp_path / "cache"
    current = [cache_key(layout, b) for b in ("onnx", "onnx-int8-u8")]
    older = ["model-onnx-0123456789ab", "model-onnx-int8-rr-fedcba987654"]
    others = ["other-onnx-0123456789ab", "model-onnx-not-an-export", "verdict-model-1.json"]
    for name in [*current, *older, *others]:
        (cache / name).mkdir(parents=True)
        (cache / name / "model.onnx").write_bytes(b"x")
    assert sorted(remove_outdated_exports(cache, layout)) == sorted(older)
    assert sorted(p.name for p in cache.iterdir()) == sorted([*current, *others])
    assert remove_outdated_exports(tmp_path / "missing", layout) == []


def test_the_fastest_faithful_candidate_is_chosen_and_failures_are_named() -> None:
    results: list[dict[str, Any]] = [
        {"backend": "onnx-int8", "status": "unfaithful", "cosine": 0.9606},
        {"backend": "onnx-int8-rr", "status": "ok", "cosine": 0.998, "seconds": 2.0,
         "texts_per_s": 8.0, "threads": 1, "parallel": 2},
        {"backend": "onnx-int8-u8", "status": "failed", "error": "RuntimeError: boom"},
        {"backend": "onnx", "status": "ok", "cosine": 1.0, "seconds": 3.0, "texts_per_s": 5.3,
         "threads": 2, "parallel": 1},
        {"backend": "torch", "status": "ok", "cosine": 1.0, "seconds": 4.0, "texts_per_s": 4.0},
    ]  # fmt: skip
    verdict = decide(results, alone=False)
    assert (verdict.backend, verdict.threads, verdict.parallel) == ("onnx-int8-rr", 1, 2)
    assert verdict.query_backend == "onnx-int8-rr"
    assert "onnx int8 disagreed with torch on this CPU, cosine 0.961" in verdict.reason
    assert "onnx int8 (uint8 weights) failed: RuntimeError: boom" in verdict.reason
    # Where torch is fastest, it embeds the chunks and the fastest faithful export the
    # queries (no torch import for one short text).
    results[1]["seconds"] = results[3]["seconds"] = 9.0
    verdict = decide(results, alone=False)
    assert verdict.backend == "torch" and verdict.query_backend in ("onnx-int8-rr", "onnx")
    # Within the timing's noise, the first in the candidates' order: a second
    # measurement of the same CPU picks the same encoder.
    results[1]["seconds"], results[3]["seconds"] = 2.04, 2.0
    assert decide(results, alone=False).backend == "onnx-int8-rr"
    results[1]["seconds"] = 2.1
    assert decide(results, alone=False).backend == "onnx"
    assert "to within 3%" in decide(results, alone=False).reason
    # One backend named alone is used when faithful, whatever the timing.
    assert decide(results[3:], alone=True).backend == "onnx"
    # Nothing faithful but torch: torch, and no ONNX query.
    only = decide([results[0], {**results[4]}], alone=False)
    assert (only.backend, only.query_backend) == ("torch", None)
    assert only.describe().startswith("torch fp32 (sentence-transformers): onnx int8 disagreed")


def test_library_versions_are_the_installed_ones_first_on_the_path_winning(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from importlib import metadata

    def installed(name: str) -> str | None:
        try:
            return metadata.version(name)
        except metadata.PackageNotFoundError:
            return None

    assert encoder_choice.library_versions() == {
        name: installed(name) for name in encoder_choice.LIBRARIES
    }
    # A folder earlier on the path shadows the installed copy, as it would for imports.
    (tmp_path / "Sentence_Transformers-9.9.1.dist-info").mkdir()
    monkeypatch.setattr(sys, "path", [str(tmp_path), *sys.path])
    assert encoder_choice.library_versions()["sentence-transformers"] == "9.9.1"


def test_the_verdict_key_follows_what_decides_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    layout = read_layout(fake_model(tmp_path / "m"))
    assert layout is not None
    facts = encoder_choice.cpu_facts()
    assert facts["cpu"] and set(facts["flags"]) <= encoder_choice.RELEVANT_FLAGS
    assert set(encoder_choice.library_versions()) == set(encoder_choice.LIBRARIES)
    key = encoder_choice.verdict_key(layout, ["onnx", "onnx-int8"], False)
    assert key == encoder_choice.verdict_key(layout, ["onnx", "onnx-int8"], False)
    assert key != encoder_choice.verdict_key(layout, ["onnx"], True)
    monkeypatch.setenv("MARKVAULT_ENCODER_BAR", "onnx=0.5")
    assert key != encoder_choice.verdict_key(layout, ["onnx", "onnx-int8"], False)
    (layout.path / "config.json").write_text(json.dumps({"hidden_size": 8, "other": 1}))
    monkeypatch.delenv("MARKVAULT_ENCODER_BAR")
    assert key != encoder_choice.verdict_key(layout, ["onnx", "onnx-int8"], False)


def test_candidates_and_bars_come_from_the_environment() -> None:
    every = list(encoder.ONNX_BACKENDS)
    assert encoder_choice.candidates_asked({}) == (every, False)
    assert encoder_choice.candidates_asked({"MARKVAULT_ENCODER": "auto"}) == (every, False)
    assert encoder_choice.candidates_asked({"MARKVAULT_ENCODER": "torch"}) == ([], True)
    assert encoder_choice.candidates_asked({"MARKVAULT_ENCODER": "onnx"}) == (["onnx"], True)
    both = {"MARKVAULT_ENCODER": "onnx-int8-rr, onnx"}
    assert encoder_choice.candidates_asked(both) == (["onnx-int8-rr", "onnx"], False)
    bars = encoder_choice.fidelity_bars({"MARKVAULT_ENCODER_BAR": "onnx=1.5,nonsense=2,onnx-int8"})
    assert bars["onnx"] == 1.5 and "nonsense" not in bars and bars["onnx-int8"] < 1


def test_a_cache_that_cannot_be_written_means_torch_with_the_reason(tmp_path: Path) -> None:
    blocked = tmp_path / "file-not-folder"
    blocked.write_text("")
    embedder = SentenceEmbedder("all-MiniLM-L6-v2", blocked / "encoders")
    embedder.load()  # nothing to measure with: torch, loaded on first encode only
    assert embedder.backend == "torch" and "cannot write" in (embedder.reason or "")


def test_status_says_the_encoder_is_not_measured_yet(vault_dir: Path, tmp_path: Path) -> None:
    from .conftest import run_cli

    (vault_dir / "a.md").write_text("# A\n\nalpha\n")
    # A cache of its own: the session's may hold a verdict another test measured.
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "fresh-cache")}
    done = run_cli(vault_dir, "status", env=env)
    assert done.returncode == 0, done.stderr
    assert "encoder  not measured on this machine yet" in done.stdout
    info = json.loads(run_cli(vault_dir, "status", "--json", env=env).stdout)
    assert info["encoder"]["backend"] is None


# ---- the real packaged model ----------------------------------------------------------------


@pytest.fixture(scope="module")
def plain_vectors() -> np.ndarray:
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(model_path("all-MiniLM-L6-v2"), device="cpu")
    return np.asarray(model.encode(TEXTS, normalize_embeddings=True), np.float32)


class Steps:
    """A Progress that keeps the labels it was given (what a first load says)."""

    def __init__(self) -> None:
        self.labels: list[str] = []

    def start(self, label: str, total: int) -> None:
        self.labels.append(label)

    def advance(self, n: int) -> None:
        pass

    def finish(self) -> None:
        pass


def in_new_process(code: str, env: dict[str, str] | None = None) -> list[str]:
    """Run ``code`` (which prints one JSON value) in a new Python; returns that value."""
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        timeout=900,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout)


@pytest.mark.model
def test_the_measured_encoder_is_faithful_to_torch_and_keeps_order(
    encoder_cache: Path, plain_vectors: np.ndarray
) -> None:
    embedder = SentenceEmbedder("all-MiniLM-L6-v2", encoder_cache)
    got = embedder.encode(TEXTS, batch_size=2)  # mixed lengths: sorted and padded inside
    verdict = embedder.verdict
    assert verdict is not None and verdict.path is not None and verdict.path.is_file()
    # Every candidate was checked and the faithful ones timed; the fastest was kept.
    checked = {c["backend"]: c for c in verdict.candidates}
    assert set(checked) == {*encoder.ONNX_BACKENDS, "torch"}
    timed = [c for c in checked.values() if c["status"] == "ok" and "seconds" in c]
    assert embedder.backend == min(timed, key=lambda c: c["seconds"])["backend"]
    for c in checked.values():
        if c["status"] == "ok":
            assert c["cosine"] >= c.get("bar", 1.0) - 1e-9
    assert embedder.dim == 384 and got.shape == (len(TEXTS), 384)
    assert np.allclose(np.linalg.norm(got, axis=1), 1.0, atol=1e-5)
    cosine = (got * plain_vectors).sum(axis=1)
    assert cosine.min() > 0.99, cosine
    # A query alone (one-thread session) gets the vector it gets in a batch of one.
    alone = embedder.encode_query(TEXTS[0])
    assert float(alone @ embedder.encode(TEXTS[:1], batch_size=1)[0]) > 0.9999
    if embedder.backend != "torch":
        check = json.loads(
            next(encoder_cache.glob(f"*-{embedder.backend}-*/check.json")).read_text()
        )
        assert check["backend"] == embedder.backend and check["min_cosine"] > 0.99
    assert not list(encoder_cache.glob(".export-*"))
    # Only faithful exports are kept.
    kept = {json.loads(f.read_text())["backend"] for f in encoder_cache.glob("*/check.json")}
    assert kept == {c["backend"] for c in timed} - {"torch"}


@pytest.mark.model
def test_a_failed_candidate_is_remembered_and_not_tried_again(
    tmp_path: Path, plain_vectors: np.ndarray, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Both candidates made to fail their check (a bar no cosine reaches): the chain ends
    at torch, the verdict says why, and the next process repeats nothing."""
    cache = tmp_path / "cache"
    monkeypatch.setenv("MARKVAULT_ENCODER", "onnx-int8-rr,onnx")
    monkeypatch.setenv("MARKVAULT_ENCODER_BAR", "onnx-int8-rr=1.01,onnx=1.01")
    embedder = SentenceEmbedder("all-MiniLM-L6-v2", cache)
    steps = Steps()
    embedder.prepare(steps)  # what a reindex does first: says each step
    assert steps.labels[0] == "Embedding model: loading…"
    assert "measuring the encoders on this machine" in steps.labels[1]
    assert any("exporting the model to ONNX" in s for s in steps.labels)
    assert any("checking onnx fp32" in s for s in steps.labels)
    assert embedder.backend == "torch"
    reason = embedder.reason or ""
    assert "onnx int8 (7-bit weights) disagreed with torch on this CPU, cosine" in reason
    assert "onnx fp32 disagreed with torch on this CPU, cosine" in reason
    assert (embedder.encode(TEXTS) * plain_vectors).sum(axis=1).min() > 0.9999
    # Nothing failed was kept, and no work folder is left.
    assert not list(cache.glob(".export-*")) and not list(cache.glob("*/model.onnx"))
    verdict_file = embedder.verdict.path
    before = verdict_file.read_text()
    again = in_new_process(
        "import json; from pathlib import Path\n"
        "from markvault.embed.embedder import SentenceEmbedder\n"
        f"e = SentenceEmbedder('all-MiniLM-L6-v2', Path({str(cache)!r}))\n"
        "said = []; e.say = said.append; e.load()\n"
        "print(json.dumps([e.backend, e.reason, said]))"
    )
    assert again == ["torch", reason, []]  # read, not measured: nothing said
    assert verdict_file.read_text() == before  # not written again
    # `vault status` and the MCP status tool read it (a loaded embedder or the file).
    described = encoder_choice.describe(
        SentenceEmbedder("all-MiniLM-L6-v2", cache), lambda: model_path("all-MiniLM-L6-v2")
    )
    assert described["backend"] == "torch" and described["reason"] == reason
    assert described["describe"].startswith("torch fp32 (sentence-transformers): onnx int8")


@pytest.mark.model
def test_fp32_onnx_matches_torch_and_stale_work_folders_go(
    tmp_path: Path, plain_vectors: np.ndarray, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MARKVAULT_ENCODER", "onnx")
    # What a process closed mid-export left is removed by the next one that looks: its
    # process is gone, or (no process named) it is older than an export takes. A folder
    # a live process may be exporting into right now is not.
    ended = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                           capture_output=True, text=True, check=True)  # fmt: skip
    cache = tmp_path / "cache"
    dead, old = cache / f".export-{ended.stdout.strip()}-x", cache / ".export-old"
    live, new = cache / f".export-{os.getppid()}-y", cache / ".export-new"
    for work in (dead, old, live, new):
        (work / "fp32.onnx").parent.mkdir(parents=True)
        (work / "fp32.onnx").write_bytes(b"half")
    two_hours_ago = time.time() - 7200
    os.utime(old, (two_hours_ago, two_hours_ago))
    embedder = SentenceEmbedder("all-MiniLM-L6-v2", cache)
    cosine = (embedder.encode(TEXTS) * plain_vectors).sum(axis=1)
    assert embedder.backend == "onnx" and cosine.min() > 0.9999
    assert "asked for in MARKVAULT_ENCODER" in (embedder.reason or "")
    assert not dead.exists() and not old.exists()
    assert live.exists() and new.exists()


@pytest.mark.model
def test_torch_backend_on_request(
    tmp_path: Path, plain_vectors: np.ndarray, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MARKVAULT_ENCODER", "torch")
    embedder = SentenceEmbedder("all-MiniLM-L6-v2", tmp_path / "cache")
    cosine = (embedder.encode(TEXTS) * plain_vectors).sum(axis=1)
    assert embedder.backend == "torch" and cosine.min() > 0.9999
    assert embedder.reason == "MARKVAULT_ENCODER=torch"
    assert embedder.encode_query(TEXTS[0]).shape == (384,)
    assert not (tmp_path / "cache").exists()  # nothing measured, nothing written


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
def test_a_new_process_embeds_a_query_without_torch(
    encoder_cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MARKVAULT_ENCODER", "onnx")  # fp32: faithful on every CPU
    SentenceEmbedder("all-MiniLM-L6-v2", encoder_cache).load()  # measured by now
    got = in_new_process(
        "import sys, json; from pathlib import Path\n"
        "from markvault.embed.embedder import SentenceEmbedder\n"
        f"e = SentenceEmbedder('all-MiniLM-L6-v2', Path({str(encoder_cache)!r}))\n"
        "v = e.encode_query('hello')\n"
        "print(json.dumps([e.backend, v.shape[0], 'torch' in sys.modules]))"
    )
    assert got == ["onnx", 384, False]


@pytest.mark.model
def test_an_export_killed_midway_leaves_nothing_and_the_next_process_works(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A real measurement process, killed with SIGKILL while it exports: its work folder
    stays behind, and the next process removes it, measures and embeds. Nothing of the
    measurement is printed on stdout (an MCP server's stdout is its protocol stream)."""
    cache = tmp_path / "cache"
    monkeypatch.setenv("MARKVAULT_ENCODER", "onnx")
    layout = read_layout(model_path("all-MiniLM-L6-v2"))
    assert layout is not None
    argv = [sys.executable, "-m", "markvault.embed.encoder_choice", str(layout.path), str(cache)]
    argv += ["--out", str(cache / "verdict-killed.json"), "--candidates", "onnx", "--alone"]
    child = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    assert child.stdout is not None
    for line in child.stdout:  # what it says, as a first `vault reindex` shows it
        if json.loads(line)["say"] == "exporting the model to ONNX":
            break
    child.send_signal(signal.SIGKILL)
    child.wait()
    assert [p.name.split("-")[1] for p in cache.glob(".export-*")] == [str(child.pid)]
    got = in_new_process(
        "import json; from pathlib import Path\n"
        "from markvault.embed.embedder import SentenceEmbedder\n"
        f"e = SentenceEmbedder('all-MiniLM-L6-v2', Path({str(cache)!r}))\n"
        "v = e.encode(['hello', 'world'])\n"
        "print(json.dumps([e.backend, v.shape[0]]))"
    )
    assert got == ["onnx", 2]
    assert not list(cache.glob(".export-*")) and not (cache / "verdict-killed.json").exists()
    assert len(list(cache.glob("*/model.onnx"))) == 1


@pytest.mark.model
def test_a_damaged_export_is_measured_again(
    tmp_path: Path, plain_vectors: np.ndarray, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MARKVAULT_ENCODER", "onnx")
    cache = tmp_path / "cache"
    SentenceEmbedder("all-MiniLM-L6-v2", cache).load()
    model_file = next(cache.glob("*/model.onnx"))
    model_file.write_bytes(model_file.read_bytes()[:1000])  # as after a full disk
    embedder = SentenceEmbedder("all-MiniLM-L6-v2", cache)
    cosine = (embedder.encode(TEXTS) * plain_vectors).sum(axis=1)
    assert embedder.backend == "onnx" and cosine.min() > 0.9999
    assert model_file.stat().st_size > 1000


@pytest.mark.model
def test_the_query_encoder_loads_ahead_only_where_measured(
    encoder_cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A one-shot hybrid search opens the query's ONNX session in a thread while it
    opens the index: never measuring or exporting (that is the search's own work, with
    progress), and giving the vector made without it."""
    monkeypatch.setenv("MARKVAULT_ENCODER", "onnx")  # fp32: faithful on every CPU
    empty = tmp_path / "nothing-measured"
    fresh = SentenceEmbedder("all-MiniLM-L6-v2", empty)
    assert fresh.start_query_loading() is None  # nothing to open: no thread
    assert not fresh.loaded and not empty.exists()
    SentenceEmbedder("all-MiniLM-L6-v2", encoder_cache).load()  # measured by now
    ended = subprocess.Popen([sys.executable, "-c", "pass"])
    ended.wait()  # its pid: an export's process that is gone
    abandoned = encoder_cache / f".export-{ended.pid}-killed"
    abandoned.mkdir()
    ahead = SentenceEmbedder("all-MiniLM-L6-v2", encoder_cache)
    thread = ahead.start_query_loading()
    assert thread is not None
    thread.join()
    assert ahead.loaded and ahead.backend == "onnx"
    assert ahead.load().query_model()._query_session is not None  # opened by the thread
    assert not abandoned.exists()  # a killed export's work folder goes, as a load's does
    plain = SentenceEmbedder("all-MiniLM-L6-v2", encoder_cache).encode_query("hello there")
    assert np.array_equal(ahead.encode_query("hello there"), plain)


@pytest.mark.model
def test_a_one_shot_hybrid_search_answers_as_a_batch_does(
    encoder_cache: Path, vault_dir: Path, tmp_path: Path
) -> None:
    """The command's search with its query encoder loaded ahead (one query) and without
    (``--batch``) rank the same notes with the same scores."""
    from .conftest import run_cli

    cache = tmp_path / "xdg-cache"
    (cache / "markvault").mkdir(parents=True)
    (cache / "markvault" / "encoders").symlink_to(encoder_cache)
    env = {**os.environ, "XDG_CACHE_HOME": str(cache), "MARKVAULT_ENCODER": "onnx"}
    for name, text in {
        "koala.md": "# Koalas\n\nKoalas sleep most of the day in eucalyptus trees.\n",
        "rust.md": "# Rust\n\nThe borrow checker rejects two mutable references.\n",
        "bread.md": "# Bread\n\nSourdough needs a starter fed with flour and water.\n",
    }.items():
        (vault_dir / name).write_text(text)
    assert run_cli(vault_dir, "reindex", "--quiet", env=env).returncode == 0
    query = "which animal naps in trees"
    one = run_cli(vault_dir, "search", query, "--json", env=env)
    assert one.returncode == 0, one.stderr
    batch = subprocess.run(
        [*vault_argv(vault_dir, "search", "--batch", "-")],
        input=query + "\n",
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert batch.returncode == 0, batch.stderr
    ranked = [(h["path"], round(h["score"], 6)) for h in json.loads(one.stdout)["hits"]]
    batched = json.loads(batch.stdout.splitlines()[0])
    assert ranked[0][0] == "koala.md"
    assert ranked == [(h["path"], round(h["score"], 6)) for h in batched["hits"]]
