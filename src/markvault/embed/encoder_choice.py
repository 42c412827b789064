"""Which encoder runs on this machine: measured once, remembered.

The fastest way to run the model differs from CPU to CPU, and so does what stays
faithful: int8 that matches torch to a cosine of 0.999 on a CPU with VNNI measured 0.96 on
an AVX2-only one. So nothing is assumed. The first process that needs vectors measures,
in a process of its own (``python -m markvault.embed.encoder_choice``, so torch's memory and
any crash stay there):

1. the reference: sentence-transformers' own torch model, its vectors of a fixed set of
   sentences (``encoder_export.CHECK_TEXTS``);
2. each candidate (the int8 variants and fp32 ONNX, ``encoder.ONNX_BACKENDS``): exported,
   its vectors of the same sentences compared with torch's; one below the fidelity bar
   (``encoder_export.MIN_CHECK_COSINE``) is discarded, with its cosine;
3. the faithful ones and torch, timed on a fixed batch of texts of mixed lengths, each
   ONNX one with every core on each batch and with one core per batch and the batches
   side by side; the fastest is kept, with its thread layout (within ``TIE_MARGIN``,
   the first in the candidates' order, so that timing noise never flips the verdict).

The verdict, failures included, is written (atomically) to ``verdict-<key>.json`` in the
encoder cache (``encoder.default_cache_dir()``, beside the exports, never in a vault).
The key is what decides the outcome: the CPU's model and its relevant flags, the core
count, the versions of onnxruntime, onnx, torch, transformers and sentence-transformers,
the model's files and the export version. Any other process on the machine reads it and
repeats nothing, not even a failed export; a new CPU, library or model measures again.
Two processes that need a verdict at once take turns (a lock file): one measures.

``MARKVAULT_ENCODER`` narrows the candidates: one backend name is used if it passes its
check (else torch); a comma-separated list is measured as above among those only; ``torch``
skips the measurement. ``MARKVAULT_ENCODER_BAR`` (``backend=cosine,...``) sets the fidelity
bar of some backends: the tests use it to make a candidate fail its check.

A query needs none of this: it reads the verdict and opens the chosen export (or, where
torch won the batch timing, the fastest faithful ONNX export) on one thread.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import platform
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from markvault.embed.encoder import (
    EXPORT_VERSION,
    ONNX_BACKENDS,
    EncoderUnavailable,
    ModelLayout,
    cache_key,
    default_cache_dir,
    export_folder,
    read_layout,
    stay_offline,
)
from markvault.files.atomic import write_replacing

ENV_ENCODER = "MARKVAULT_ENCODER"
ENV_BAR = "MARKVAULT_ENCODER_BAR"
VERDICT_VERSION = 1
LIBRARIES = ("onnxruntime", "onnx", "torch", "transformers", "sentence-transformers")
# The CPU flags that decide which kernels the libraries run (x86 and ARM names).
_FLAGS = "sse4_2 avx avx2 fma f16c avx_vnni avx512f avx512bw avx512vl avx512_vnni avx512vnni"
_MORE_FLAGS = "avx512_bf16 amx_tile amx_int8 amx_bf16 asimd asimddp i8mm sve bf16"
RELEVANT_FLAGS = frozenset(f"{_FLAGS} {_MORE_FLAGS}".split())
TIMING_BATCH = 32
# Candidates timed this close count as equally fast (two runs on one CPU differ by ~1%).
TIE_MARGIN = 0.03
TIMING_ROUNDS = 2
LABELS = {
    "onnx-int8": "onnx int8",
    "onnx-int8-rr": "onnx int8 (7-bit weights)",
    "onnx-int8-u8": "onnx int8 (uint8 weights)",
    "onnx": "onnx fp32",
    "torch": "torch fp32 (sentence-transformers)",
}

Say = Callable[[str], None]


def label(backend: str) -> str:
    return LABELS.get(backend, backend)


@dataclass
class Verdict:
    """What runs here, and why."""

    backend: str
    reason: str
    threads: int | None = None  # intra-op threads of a batch (ONNX)
    parallel: int = 1  # batches run side by side (ONNX)
    query_backend: str | None = None  # the ONNX export a single query uses; None: torch
    candidates: list[dict[str, Any]] = field(default_factory=list)
    path: Path | None = None  # the verdict file; None: nothing was measured

    def describe(self) -> str:
        return f"{label(self.backend)}: {self.reason}"

    def to_json(self) -> dict[str, Any]:
        return {
            "backend": self.backend,
            "reason": self.reason,
            "threads": self.threads,
            "parallel": self.parallel,
            "query_backend": self.query_backend,
            "candidates": self.candidates,
            "verdict_file": str(self.path) if self.path else None,
        }


# ---- the key --------------------------------------------------------------------------------


def cpu_facts() -> dict[str, Any]:
    """The CPU's model name and the flags that decide the libraries' kernels."""
    name, flags = "", list[str]()
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace").split("\n"):
            key, _, value = line.partition(":")
            key = key.strip()
            if key in ("model name", "Model", "cpu model") and not name:
                name = value.strip()
            elif key in ("flags", "Features") and not flags:
                flags = value.split()
            if name and flags:
                break
    if not name and sys.platform == "darwin":
        with contextlib.suppress(OSError, subprocess.SubprocessError):
            name = subprocess.run(
                ["sysctl", "-n", "machdep.cpu.brand_string"],
                capture_output=True,
                text=True,
                timeout=5,
            ).stdout.strip()
    return {
        "cpu": name or platform.processor() or platform.machine(),
        "arch": platform.machine(),
        "flags": sorted(f for f in set(flags) if f in RELEVANT_FLAGS),
        "cores": os.cpu_count() or 1,
    }


def library_versions() -> dict[str, str | None]:
    """The installed version of each of LIBRARIES (None: not installed), read from the
    names of their ``.dist-info`` folders on ``sys.path``, first found wins, as imports
    do. Every process that embeds a query computes the verdict's key, and
    ``importlib.metadata`` costs ~0.15 s to import and parse there; one listing of each
    folder costs a few milliseconds. A library it cannot find so (an egg, a zip) is
    asked of ``importlib.metadata``."""
    wanted = {_dist_name(name): name for name in LIBRARIES}
    versions: dict[str, str | None] = {}
    for folder in sys.path:
        try:
            with os.scandir(folder or ".") as entries:
                names = [e.name for e in entries if e.name.endswith(".dist-info")]
        except OSError:
            continue
        for entry in names:
            dist, _, version = entry[: -len(".dist-info")].partition("-")
            name = wanted.get(_dist_name(dist))
            if name is not None and name not in versions and version:
                versions[name] = version
    for name in LIBRARIES:
        if name not in versions:
            from importlib import metadata

            try:
                versions[name] = metadata.version(name)
            except metadata.PackageNotFoundError:
                versions[name] = None
    return {name: versions[name] for name in LIBRARIES}


def _dist_name(name: str) -> str:
    """A distribution's name as its folder spells it (PEP 503 normalized, ``_`` for ``-``)."""
    return re.sub(r"[-_.]+", "_", name).lower()


def candidates_asked(env: dict[str, str] | None = None) -> tuple[list[str], bool]:
    """(ONNX candidates, whether one was named alone) from ``MARKVAULT_ENCODER``."""
    value = (env if env is not None else os.environ).get(ENV_ENCODER, "").strip().lower()
    names = [n.strip() for n in value.split(",") if n.strip()]
    if names == ["torch"]:
        return [], True
    chosen = [n for n in names if n in ONNX_BACKENDS]
    if not chosen:  # unset, "auto" or nothing we know: all
        return list(ONNX_BACKENDS), False
    return chosen, len(chosen) == 1


def fidelity_bars(env: dict[str, str] | None = None) -> dict[str, float]:
    from markvault.embed.encoder_export import MIN_CHECK_COSINE

    bars = dict(MIN_CHECK_COSINE)
    for item in (env if env is not None else os.environ).get(ENV_BAR, "").split(","):
        name, _, value = item.partition("=")
        with contextlib.suppress(ValueError):
            if name.strip() in bars:
                bars[name.strip()] = float(value)
    return bars


def verdict_key(layout: ModelLayout, candidates: Sequence[str], alone: bool) -> str:
    facts = {
        "version": VERDICT_VERSION,
        "export": EXPORT_VERSION,
        "machine": cpu_facts(),
        "libraries": library_versions(),
        "model": cache_key(layout, "model"),
        "candidates": list(candidates),
        "alone": alone,
        "bars": {k: v for k, v in fidelity_bars().items() if k in candidates},
        "python": platform.python_version(),
    }
    digest = hashlib.sha256(json.dumps(facts, sort_keys=True).encode()).hexdigest()[:16]
    return f"{layout.path.name or 'model'}-{digest}"


# ---- the verdict, read or made ------------------------------------------------------------


def _settled(model_dir: str | Path) -> Verdict | tuple[ModelLayout, list[str], bool]:
    """The verdict where nothing is to measure (torch asked for alone, or a model the
    ONNX encoder cannot run); else the model's layout and the candidates asked for."""
    asked, alone = candidates_asked()
    if alone and not asked:
        return Verdict("torch", f"{ENV_ENCODER}=torch")
    layout = read_layout(model_dir)
    if layout is None:
        return Verdict("torch", "the model is not a Transformer with mean or CLS pooling")
    return layout, asked, alone


def choose(model_dir: str | Path, cache_dir: Path | None = None, say: Say | None = None) -> Verdict:
    """The verdict for this machine and model: read, or measured now (about a minute,
    once; ``say`` hears what is done meanwhile)."""
    settled = _settled(model_dir)
    if isinstance(settled, Verdict):
        return settled
    layout, asked, alone = settled
    import importlib.util

    if importlib.util.find_spec("onnxruntime") is None:
        return Verdict("torch", "onnxruntime is not installed")
    cache = cache_dir or default_cache_dir()
    key = verdict_key(layout, asked, alone)
    target = cache / f"verdict-{key}.json"
    if cache.is_dir():
        from markvault.embed.encoder_export import remove_abandoned_exports

        remove_abandoned_exports(cache)
    found = read_verdict(target, layout, cache)
    if found is not None:
        return found
    try:
        cache.mkdir(parents=True, exist_ok=True)
        with _turn(cache / f".verdict-{key}.lock"):
            found = read_verdict(target, layout, cache)
            if found is not None:
                return found
            if say is not None:
                say("measuring the encoders on this machine (once; about a minute)")
            _measure_elsewhere(layout, cache, asked, alone, target, say)
    except OSError as exc:
        return Verdict("torch", f"cannot write the encoder cache {cache}: {exc}")
    found = read_verdict(target, layout, cache)
    if found is None:
        raise EncoderUnavailable(f"the encoder measurement wrote no verdict to {target}")
    return found


def read_verdict(target: Path, layout: ModelLayout, cache: Path) -> Verdict | None:
    """The verdict in ``target`` when its exports are there, whole (a damaged or removed
    export is measured again)."""
    try:
        data = json.loads(target.read_text(encoding="utf-8"))
        verdict = Verdict(
            backend=data["backend"],
            reason=data["reason"],
            threads=data.get("threads"),
            parallel=int(data.get("parallel") or 1),
            query_backend=data.get("query_backend"),
            candidates=list(data.get("candidates") or []),
            path=target,
        )
    except (OSError, ValueError, KeyError, TypeError):
        return None
    sizes = {c["backend"]: c.get("bytes") for c in verdict.candidates}
    for backend in {verdict.backend, verdict.query_backend or ""} & set(ONNX_BACKENDS):
        model_file = export_folder(layout, cache, backend) / "model.onnx"
        try:
            whole = model_file.stat().st_size == sizes.get(backend)
        except OSError:
            whole = False
        if not whole:
            with contextlib.suppress(OSError):
                target.unlink()
            return None
    return verdict


def peek(model_dir: str | Path, cache_dir: Path | None = None) -> Verdict | None:
    """The verdict already made for this machine and model, if any (never measures)."""
    settled = _settled(model_dir)
    if isinstance(settled, Verdict):
        return settled
    layout, asked, alone = settled
    cache = cache_dir or default_cache_dir()
    return read_verdict(cache / f"verdict-{verdict_key(layout, asked, alone)}.json", layout, cache)


@contextlib.contextmanager
def _turn(lock: Path) -> Iterator[None]:
    import fcntl

    fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def _measure_elsewhere(
    layout: ModelLayout,
    cache: Path,
    candidates: Sequence[str],
    alone: bool,
    target: Path,
    say: Say | None,
) -> None:
    """Run the measurement in a child process; relay what it says."""
    package_root = str(Path(__file__).resolve().parents[2])  # the folder that holds markvault/
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([package_root, *filter(None, [env.get("PYTHONPATH")])])
    argv = [sys.executable, "-m", "markvault.embed.encoder_choice", str(layout.path), str(cache)]
    argv += ["--out", str(target), "--candidates", ",".join(candidates)]
    argv += ["--alone"] if alone else []
    with tempfile.TemporaryFile() as errors:
        child = subprocess.Popen(
            argv, stdout=subprocess.PIPE, stderr=errors, stdin=subprocess.DEVNULL, env=env
        )
        assert child.stdout is not None
        for raw in child.stdout:
            with contextlib.suppress(ValueError, KeyError, TypeError):
                message = json.loads(raw)["say"]
                if say is not None:
                    say(str(message))
        code = child.wait()
        if code != 0:
            errors.seek(0)
            tail = errors.read().decode("utf-8", "replace").strip().splitlines()[-1:]
            raise EncoderUnavailable(
                f"measuring the encoders failed (exit {code}): {' '.join(tail) or 'no message'}"
            )


# ---- the measurement (in its own process) -------------------------------------------------


def timing_texts() -> list[str]:
    """A fixed batch of texts of mixed lengths (8 to ~250 tokens), like a vault's chunks."""
    from markvault.embed.encoder_export import CALIBRATION_TEXTS

    base = list(CALIBRATION_TEXTS)
    return [" ".join(base[(i + j) % len(base)] for j in range(1 + i % 8)) for i in range(16)]


def measure(
    layout: ModelLayout,
    cache: Path,
    candidates: Sequence[str],
    alone: bool,
    target: Path,
    say: Say,
) -> Verdict:
    """Check and time the candidates; write and return the verdict."""
    import numpy as np

    from markvault.embed import encoder_export as ex
    from markvault.embed.encoder import OnnxEncoder

    bars = fidelity_bars()
    say("loading the model in torch (the reference)")
    from sentence_transformers import SentenceTransformer

    reference_model = SentenceTransformer(str(layout.path), device="cpu")
    reference = np.asarray(
        reference_model.encode(list(ex.CHECK_TEXTS), normalize_embeddings=True), np.float32
    )
    results: list[dict[str, Any]] = []
    work = ex.temp_folder(cache)
    try:
        fp32 = work / "fp32.onnx"
        say("exporting the model to ONNX")
        try:
            with ex._quiet():
                ex.export_fp32(layout, fp32)
            export_error = None
        except Exception as exc:  # whatever the exporter raises means: no ONNX here
            export_error = f"export failed: {type(exc).__name__}: {exc}"
        for backend in candidates:
            entry: dict[str, Any] = {"backend": backend, "bar": bars[backend]}
            results.append(entry)
            if export_error:
                entry.update(status="failed", error=export_error)
                continue
            say(f"making and checking {label(backend)}")
            folder = work / backend
            try:
                ex.make_variant(layout, fp32, backend, folder / "model.onnx")
                cosine = ex.check(layout, folder / "model.onnx", backend, reference)
            except Exception as exc:
                entry.update(status="failed", error=f"{type(exc).__name__}: {exc}")
                continue
            entry["cosine"] = round(cosine, 5)
            if cosine < bars[backend]:
                entry["status"] = "unfaithful"
                continue
            final = export_folder(layout, cache, backend)
            ex.install(folder, final, backend, cosine)
            entry.update(status="ok", bytes=(final / "model.onnx").stat().st_size)
    finally:
        import shutil

        shutil.rmtree(work, ignore_errors=True)
    faithful = [e for e in results if e["status"] == "ok"]
    texts = timing_texts()
    torch_entry: dict[str, Any] = {"backend": "torch", "status": "ok", "cosine": 1.0}
    runs: dict[tuple[str, int, int], Callable[..., Any]] = {}
    if not (alone and faithful):  # one backend named and faithful: no need to time torch
        runs[("torch", 0, 1)] = reference_model.encode
    cores = os.cpu_count() or 1
    layouts = sorted({(cores, 1), (1, cores)})
    for entry in faithful:
        model_file = export_folder(layout, cache, entry["backend"]) / "model.onnx"
        for threads, parallel in layouts:
            runner = OnnxEncoder(layout, model_file, entry["backend"], threads, parallel)
            runs[(entry["backend"], threads, parallel)] = runner.encode
    say(f"timing {len({k[0] for k in runs})} faithful encoders on {len(texts)} texts")
    best: dict[tuple[str, int, int], float] = {}
    for run in runs.values():  # warm: sessions opened, caches filled
        run(texts[:4], batch_size=TIMING_BATCH)
    for _ in range(TIMING_ROUNDS):
        for how, run in runs.items():
            started = time.perf_counter()
            run(texts, batch_size=TIMING_BATCH)
            best[how] = min(best.get(how, float("inf")), time.perf_counter() - started)
    for entry in [*faithful, torch_entry]:
        mine = {k: v for k, v in best.items() if k[0] == entry["backend"]}
        if mine:
            how = min(mine, key=mine.__getitem__)
            entry.update(seconds=round(mine[how], 4), threads=how[1] or None, parallel=how[2])
            entry["texts_per_s"] = round(len(texts) / mine[how], 1)
    results.append(torch_entry)
    verdict = decide(results, alone)
    verdict.path = target
    payload = {**verdict.to_json(), "machine": cpu_facts(), "libraries": library_versions()}
    payload["measured_at"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    payload["pid"] = os.getpid()
    payload.pop("verdict_file")
    _write_atomically(target, json.dumps(payload, indent=1))
    ex.remove_outdated_exports(cache, layout)
    return verdict


def decide(results: list[dict[str, Any]], alone: bool) -> Verdict:
    """The fastest faithful candidate, and the reason in words."""
    timed = [e for e in results if e.get("status") == "ok" and "seconds" in e]
    onnx = [e for e in timed if e["backend"] != "torch"]
    if alone and onnx:
        pick = onnx[0]
    elif timed:
        # Within the timing's noise of the fastest, the first in the candidates' fixed
        # order: two measurements of one CPU then agree (vectors stored by one variant
        # and queries embedded by another would move every figure a little).
        fastest = min(e["seconds"] for e in timed)
        pick = next(e for e in timed if e["seconds"] <= fastest * (1 + TIE_MARGIN))
    else:
        pick = {"backend": "torch"}
    fastest_onnx = min(onnx, key=lambda e: e["seconds"]) if onnx else None
    failed = [e for e in results if e.get("status") in ("failed", "unfaithful")]
    words: list[str] = []
    if alone and onnx:
        words.append(f"asked for in {ENV_ENCODER}, faithful here (cosine {pick['cosine']:.4f})")
    elif len(timed) > 1:
        others = ", ".join(
            f"{label(e['backend'])} {e['texts_per_s']:g}" for e in timed if e is not pick
        )
        words.append(
            f"the fastest faithful one here, to within {TIE_MARGIN:.0%} "
            f"({pick.get('texts_per_s', 0):g} texts/s; {others})"
        )
    for e in failed:
        if e["status"] == "unfaithful":
            words.append(
                f"{label(e['backend'])} disagreed with torch on this CPU, cosine {e['cosine']:.3f}"
            )
        else:
            words.append(f"{label(e['backend'])} failed: {e.get('error', '?')}")
    if not words:
        words.append("the only one measured")
    return Verdict(
        backend=pick["backend"],
        reason="; ".join(words),
        threads=pick.get("threads"),
        parallel=int(pick.get("parallel") or 1),
        query_backend=pick["backend"]
        if pick["backend"] != "torch"
        else (fastest_onnx["backend"] if fastest_onnx else None),
        candidates=results,
    )


def _write_atomically(target: Path, text: str) -> None:
    write_replacing(target, text.encode("utf-8"), mode=0o644)


def describe(embedder: Any, model_dir_of: Callable[[], str]) -> dict[str, Any]:
    """What ``vault status`` says of the encoder: the loaded one's verdict, else the one
    this machine has (never measures; None before the first vector reindex)."""
    verdict = getattr(embedder, "verdict", None) if embedder is not None else None
    if verdict is None:
        try:
            verdict = peek(model_dir_of(), getattr(embedder, "cache_dir", None))
        except Exception:  # a status must answer: the encoder is unknown then
            verdict = None
    if verdict is None:
        return {
            "backend": None,
            "reason": "not measured on this machine yet (the first vector reindex does)",
        }
    return {
        "backend": verdict.backend,
        "reason": verdict.reason,
        "threads": verdict.threads,
        "parallel": verdict.parallel,
        "query_backend": verdict.query_backend,
        "describe": verdict.describe(),
    }


def main(argv: list[str] | None = None) -> int:
    """The measurement's process: says what it does as JSON lines on stdout."""
    import argparse  # the measurement's own process only: a query's never parses arguments

    p = argparse.ArgumentParser(description="Measure the encoders for this machine.")
    p.add_argument("model_dir")
    p.add_argument("cache_dir", type=Path)
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--candidates", required=True)
    p.add_argument("--alone", action="store_true")
    args = p.parse_args(argv)
    stay_offline()
    layout = read_layout(args.model_dir)
    if layout is None:
        print("not a supported model", file=sys.stderr)
        return 2
    out = sys.stdout

    def say(message: str) -> None:
        out.write(json.dumps({"say": message}) + "\n")
        out.flush()

    sys.stdout = sys.stderr  # the libraries' prints must not mix with the messages
    candidates = [c for c in args.candidates.split(",") if c in ONNX_BACKENDS]
    verdict = measure(layout, args.cache_dir, candidates, args.alone, args.out, say)
    say(f"chose {verdict.describe()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
