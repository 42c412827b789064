"""Builds the ONNX model files ``encoder.py`` runs: export, int8 quantization, the check.

Done once per machine and model, by the measurement that chooses the encoder
(``encoder_choice.py``, in a process of its own), from the local model folder (torch and
transformers are imported only here):

1. **Export** the transformer with torch's tracing exporter (fp32; its vectors match
   sentence-transformers' to a cosine of 1.0000).
2. **int8** (backend ``onnx-int8``): the linear layers that read a LayerNorm output or the
   attention context (query/key/value, attention output, feed-forward input: two thirds
   of the model's multiply-adds) get int8 weights per output channel, with activations
   quantized per batch at run time (ONNX Runtime's dynamic quantization). BERT-style
   models carry a few activation channels tens of times larger than the rest, which
   would take a per-tensor int8 range for themselves; those are first scaled down and
   the matching weight rows up by the same factors (SmoothQuant, Xiao et al. 2023: an
   exact rewrite in fp32, factors from a few built-in calibration sentences). The
   feed-forward output projections stay fp32: their input, the GELU activations, loses
   too much at 8 bits even smoothed. Measured on 500 real chunks: cosine to fp32 0.9989
   on average (0.9969 without smoothing, 0.9928 with every layer quantized).
   That is on CPUs with VNNI. Without it (AVX2 only), ONNX Runtime's u8s8 kernels add
   pairs of 8-bit products into 16 bits, which saturates: the same file measured a
   cosine of 0.9606. So there are three int8 variants, and the measurement keeps the
   ones that pass here (on an AVX2-only AMD EPYC: ``onnx-int8`` 0.9606, ``-rr`` 0.9981,
   ``-u8`` 0.9986 on CHECK_TEXTS; per-channel and smoothing kept in all):
   ``onnx-int8`` (int8 weights, full range), ``onnx-int8-rr`` (7-bit weights,
   ``reduce_range``: no saturation), ``onnx-int8-u8`` (uint8 weights: the u8u8 path).
   Quantizing the feed-forward outputs too fails the check without VNNI (0.986-0.988).
   The word-embedding table (30,522 x 384 floats, two thirds of the fp32 file) is stored
   as int8 rows with a scale each, gathered and scaled per token: the file halves (69 to
   34 MB), so a process that embeds one query opens it in about half the time, and the
   check's cosine moves by 0.00003 (0.99858 to 0.99855 on the AVX2-only EPYC).
3. **Check**: the new file's vectors of CHECK_TEXTS against torch's; below
   ``MIN_CHECK_COSINE`` it is discarded.

Written in a temporary folder ``.export-<pid>-*`` and renamed into place, so a concurrent
export or an interrupted one never leaves a half-written model behind; a folder whose
process is gone (killed mid-export) is removed by the next process that looks.
"""

from __future__ import annotations

import contextlib
import inspect
import json
import logging
import os
import re
import shutil
import tempfile
import time
import warnings
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from markvault.embed.encoder import EncoderUnavailable, ModelLayout, OnnxEncoder

OPSET = 17
QUIET_LOGGERS = ("torch", "onnx", "onnxruntime", "onnxscript", "transformers")
SMOOTH_ALPHA = 0.5  # SmoothQuant's migration strength: half the range moves to the weights
# A fresh export must reproduce torch's vectors this closely on CHECK_TEXTS, or it is
# not used (int8 measured at 0.995 or more on these, fp32 at 1.0000).
MIN_CHECK_COSINE = {"onnx": 0.9999, "onnx-int8": 0.99, "onnx-int8-rr": 0.99, "onnx-int8-u8": 0.99}
# (weight type, reduce_range) of each int8 variant (see the module docstring).
INT8_VARIANTS = {
    "onnx-int8": ("QInt8", False),
    "onnx-int8-rr": ("QInt8", True),
    "onnx-int8-u8": ("QUInt8", False),
}
CHECK_TEXTS = (
    "How do I connect Claude Code to this vault?",
    "The watcher keeps the index in step with the files.",
    "ERR_7731 means the upstream gateway closed the socket; retry with backoff.",
    "Knead the dough for ten minutes, then let it rise until doubled.",
    "Vektoren werden in Gruppen gespeichert, damit ein Abbruch nichts verliert.",
    "def tokenize(text: str) -> list[str]:\n    return text.split()",
)
# Where the large activation channels are: any text shows them (they are a property of
# the model), a few kinds of text set their ranges.
CALIBRATION_TEXTS = (
    "Meeting notes > Decisions\nWe keep the index outside the vault and rebuild it on demand.",
    "# Install\n\n1. `pip install markvault`\n2. `vault init ~/notes`\n3. `vault mcp install`",
    "| flag | meaning |\n| --- | --- |\n| --json | output for scripts |",
    "Traceback (most recent call last): File \"sync.py\", line 42, in run: KeyError: 'path'",
    "See [[Project Alpha#Risks]] and https://example.org/docs/setup?lang=en for details.",
    "The Treaty of Westphalia (1648) ended the Thirty Years' War in the Holy Roman Empire.",
    "Tomatoes need deep watering twice a week; stake them early and pinch the suckers.",
    "SELECT chunk_id, sum(tf) FROM postings WHERE termid IN (4, 8, 15) GROUP BY chunk_id;",
    "Le modèle lit au plus 256 morceaux de mots ; le reste du texte est invisible.",
    "TODO: ask Maria about the Q3 budget, then update the roadmap and the risk register.",
)


def temp_folder(cache: Path) -> Path:
    """A new ``.export-<pid>-*`` work folder in ``cache`` (stale ones removed first)."""
    cache.mkdir(parents=True, exist_ok=True)
    remove_abandoned_exports(cache)
    return Path(tempfile.mkdtemp(prefix=f".export-{os.getpid()}-", dir=cache))


def make_variant(layout: ModelLayout, fp32: Path, backend: str, target: Path) -> None:
    """``backend``'s model file from the fp32 export ``fp32``."""
    target.parent.mkdir(parents=True, exist_ok=True)
    if backend == "onnx":
        shutil.copyfile(fp32, target)
    else:
        smooth_and_quantize(layout, fp32, target, backend)


def check(layout: ModelLayout, model_file: Path, backend: str, reference: np.ndarray) -> float:
    """The least cosine between the file's vectors of CHECK_TEXTS and torch's."""
    got = OnnxEncoder(layout, model_file, backend, threads=1).encode(list(CHECK_TEXTS))
    return float((got * reference).sum(axis=1).min())


def install(work: Path, folder: Path, backend: str, cosine: float) -> None:
    """Move a checked export from ``work`` into its place. One already there (damaged,
    or from an older measurement) is moved aside first and removed: a process that has
    it open keeps reading its file."""
    (work / "check.json").write_text(
        json.dumps({"backend": backend, "min_cosine": round(cosine, 5)}), encoding="utf-8"
    )
    work.chmod(0o755)
    if folder.exists():
        aside = Path(tempfile.mkdtemp(prefix=f".export-{os.getpid()}-old-", dir=folder.parent))
        with contextlib.suppress(OSError):
            folder.rename(aside / "replaced")
        shutil.rmtree(aside, ignore_errors=True)
    with contextlib.suppress(OSError):  # another process got there first: fine
        work.rename(folder)
    if not (folder / "model.onnx").is_file():
        raise EncoderUnavailable(f"could not write the exported model to {folder}")


# An export takes well under this; a ``.export-*`` folder older than it was left by a
# process that ended mid-export, whatever its name says.
ABANDONED_EXPORT_SECONDS = 3600


def remove_abandoned_exports(cache: Path) -> None:
    """Remove the work folders of exports whose process is gone (``.export-<pid>-*``),
    or that are older than an export takes."""
    now = time.time()
    for work in cache.glob(".export-*"):
        with contextlib.suppress(OSError):
            owner = work.name.split("-")[1]
            gone = owner.isdigit() and not _alive(int(owner))
            if gone or now - work.stat().st_mtime > ABANDONED_EXPORT_SECONDS:
                shutil.rmtree(work)


def remove_outdated_exports(cache: Path, layout: ModelLayout) -> list[str]:
    """Remove this model's exports that the current code no longer loads (made by an
    older export recipe, or of the model's files as they were before): each is 30-90 MB,
    and an upgrade would otherwise leave them behind for good. Called after a
    measurement, which has just made the current ones. Returns the names removed."""
    from markvault.embed.encoder import ONNX_BACKENDS, cache_key

    name = layout.path.name or "model"
    backends = "|".join(re.escape(b) for b in sorted(ONNX_BACKENDS, key=len, reverse=True))
    pattern = re.compile(rf"{re.escape(name)}-(?:{backends})-[0-9a-f]{{12}}")
    current = {cache_key(layout, b) for b in ONNX_BACKENDS}
    removed: list[str] = []
    for folder in sorted(cache.iterdir()) if cache.is_dir() else []:
        if pattern.fullmatch(folder.name) and folder.name not in current:
            with contextlib.suppress(OSError):
                shutil.rmtree(folder)
                removed.append(folder.name)
    return removed


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process
        return True
    return True


def export_fp32(layout: ModelLayout, target: Path) -> None:
    """Export the transformer to ``target``."""
    import torch
    from transformers import AutoModel

    model = AutoModel.from_pretrained(str(layout.path), attn_implementation="eager").eval()
    takes_types = "token_type_ids" in inspect.signature(model.forward).parameters

    class Wrapped(torch.nn.Module):
        """Hands the model a ready additive mask: transformers' own mask helpers take
        shortcuts while tracing (an all-ones mask is dropped) that break padded batches."""

        def __init__(self) -> None:
            super().__init__()
            self.model = model

        def forward(self, input_ids: Any, attention_mask: Any, *rest: Any) -> Any:
            floor = float(torch.finfo(torch.float32).min)
            additive = (1.0 - attention_mask[:, None, None, :].to(torch.float32)) * floor
            kwargs = {"token_type_ids": rest[0]} if rest else {}
            return self.model(input_ids=input_ids, attention_mask=additive, **kwargs)[0]

    names = ["input_ids", "attention_mask"] + (["token_type_ids"] if takes_types else [])
    sample = torch.ones(2, 8, dtype=torch.long)
    mask = sample.clone()
    mask[1, 5:] = 0  # a padded row, so that nothing traces the mask away
    args = (sample, mask) + ((torch.zeros_like(sample),) if takes_types else ())
    with torch.no_grad(), _quiet():
        torch.onnx.export(
            Wrapped(),
            args,
            str(target),
            input_names=names,
            output_names=["last_hidden_state"],
            dynamic_axes={n: {0: "batch", 1: "tokens"} for n in [*names, "last_hidden_state"]},
            opset_version=OPSET,
            dynamo=False,
        )


def smooth_and_quantize(
    layout: ModelLayout, source: Path, target: Path, backend: str = "onnx-int8"
) -> None:
    """The int8 model (see the module docstring) of the fp32 export ``source``."""
    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic

    model = onnx.load(str(source))
    weights = {t.name: t for t in model.graph.initializer}
    linear = [n for n in model.graph.node if n.op_type == "MatMul" and n.input[1] in weights]
    chosen = [n for n in linear if not _is_feed_forward_output(n.name)]
    ranges = _activation_ranges(layout, source, sorted({n.input[0] for n in chosen}))
    _smooth(model, chosen, ranges)
    smoothed = target.with_name("fp32-smoothed.onnx")
    onnx.save(model, str(smoothed))
    weight_type, reduce_range = INT8_VARIANTS[backend]
    with _quiet():
        quantize_dynamic(
            str(smoothed),
            str(target),
            weight_type=getattr(QuantType, weight_type),
            per_channel=True,
            reduce_range=reduce_range,
            nodes_to_quantize=[n.name for n in chosen],
        )
    smoothed.unlink()
    quantized = onnx.load(str(target))
    _int8_rows(quantized, _vocabulary_lookup(quantized))
    onnx.save(quantized, str(target))


def _vocabulary_lookup(model: Any) -> Any:
    """The Gather that reads the largest table of the model (the word embeddings)."""
    from onnx import numpy_helper

    tables = {t.name: t for t in model.graph.initializer}
    lookups = [n for n in model.graph.node if n.op_type == "Gather" and n.input[0] in tables]

    def rows(node: Any) -> int:
        return int(numpy_helper.to_array(tables[node.input[0]]).shape[0])

    return max(lookups, key=rows)


def _int8_rows(model: Any, lookup: Any) -> None:
    """Store ``lookup``'s table as int8 rows and a scale per row; the Gather becomes two
    gathers (rows, scales), a cast and a multiply: only the looked-up rows are widened."""
    import onnx
    from onnx import helper, numpy_helper

    graph = model.graph
    name, ids, out = lookup.input[0], lookup.input[1], lookup.output[0]
    table_proto = next(t for t in graph.initializer if t.name == name)
    table = numpy_helper.to_array(table_proto).astype(np.float32)
    scale = np.maximum(np.abs(table).max(axis=1, keepdims=True) / 127, 1e-12)
    rows = np.round(table / scale).clip(-127, 127).astype(np.int8)
    graph.initializer.remove(table_proto)
    graph.initializer.extend(
        [
            numpy_helper.from_array(rows, f"{name}/int8"),
            numpy_helper.from_array(scale.astype(np.float32), f"{name}/scale"),
        ]
    )
    at = list(graph.node).index(lookup)
    graph.node.remove(lookup)
    replacement = [
        helper.make_node("Gather", [f"{name}/int8", ids], [f"{out}/int8"], axis=0),
        helper.make_node("Cast", [f"{out}/int8"], [f"{out}/wide"], to=onnx.TensorProto.FLOAT),
        helper.make_node("Gather", [f"{name}/scale", ids], [f"{out}/scale"], axis=0),
        helper.make_node("Mul", [f"{out}/wide", f"{out}/scale"], [out]),
    ]
    for offset, node in enumerate(replacement):
        graph.node.insert(at + offset, node)


def _is_feed_forward_output(name: str) -> bool:
    """BERT-style naming: ``.../layer.N/output/dense/MatMul`` (not ``attention/output``)."""
    return "/output/dense" in name and "/attention/" not in name


def _activation_ranges(
    layout: ModelLayout, source: Path, tensors: Sequence[str]
) -> dict[str, np.ndarray]:
    """Per-channel absolute maximum of each of ``tensors`` over CALIBRATION_TEXTS."""
    import onnx
    import onnxruntime as ort

    probe = onnx.load(str(source))
    float32 = onnx.TensorProto.FLOAT
    for name in tensors:
        probe.graph.output.append(onnx.helper.make_tensor_value_info(name, float32, None))
    session = ort.InferenceSession(probe.SerializeToString(), providers=["CPUExecutionProvider"])
    runner = OnnxEncoder(layout, source, "onnx", threads=1)
    ranges: dict[str, np.ndarray] = {}
    for text in CALIBRATION_TEXTS:
        outputs = session.run(list(tensors), runner.features([text]))
        for name, value in zip(tensors, outputs, strict=True):
            peak = np.abs(value).reshape(-1, value.shape[-1]).max(axis=0)
            ranges[name] = np.maximum(ranges[name], peak) if name in ranges else peak
    return ranges


def _smooth(model: Any, nodes: Sequence[Any], ranges: dict[str, np.ndarray]) -> None:
    """Divide each input of ``nodes`` by per-channel factors (a Mul before its readers)
    and multiply the weight rows by them: the same function, tamer activations."""
    from onnx import helper, numpy_helper

    graph = model.graph
    weights = {t.name: t for t in graph.initializer}
    readers: dict[str, list[Any]] = {}
    for node in nodes:
        readers.setdefault(node.input[0], []).append(node)
    for tensor, group in readers.items():
        matrices = [numpy_helper.to_array(weights[n.input[1]]) for n in group]
        weight_peak = np.max([np.abs(m).max(axis=1) for m in matrices], axis=0)
        factors = ranges[tensor] ** SMOOTH_ALPHA / np.maximum(weight_peak, 1e-8) ** (
            1 - SMOOTH_ALPHA
        )
        factors = np.clip(factors, 1e-5, 1e5).astype(np.float32)
        inverse, smoothed = f"{tensor}/smooth_scale", f"{tensor}/smoothed"
        graph.initializer.append(numpy_helper.from_array(1.0 / factors, inverse))
        for node, matrix in zip(group, matrices, strict=True):
            scaled = (matrix * factors[:, None]).astype(np.float32)
            weights[node.input[1]].CopyFrom(numpy_helper.from_array(scaled, node.input[1]))
            node.input[0] = smoothed
        first = min(list(graph.node).index(n) for n in group)
        graph.node.insert(first, helper.make_node("Mul", [tensor, inverse], [smoothed]))


@contextlib.contextmanager
def _quiet() -> Iterator[None]:
    """The exporters warn about tracing and log advice; none of it is for users. Only
    their own loggers are quieted: the export may run in a background thread, and a
    process-wide ``logging.disable`` would swallow every other thread's warnings."""
    loggers = [logging.getLogger(name) for name in QUIET_LOGGERS]
    levels = [lg.level for lg in loggers]
    for lg in loggers:
        lg.setLevel(logging.ERROR)
    # onnxruntime's quantizer logs its advice on the root logger itself.
    advice = _DropFrom(("onnxruntime", "onnx"))
    logging.root.addFilter(advice)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            yield
    finally:
        logging.root.removeFilter(advice)
        for lg, level in zip(loggers, levels, strict=True):
            lg.setLevel(level)


class _DropFrom(logging.Filter):
    """Drops the records logged from these packages' files."""

    def __init__(self, packages: Sequence[str]) -> None:
        super().__init__()
        self.parts = tuple(f"{os.sep}{p}{os.sep}" for p in packages)

    def filter(self, record: logging.LogRecord) -> bool:
        return not any(part in record.pathname for part in self.parts)
