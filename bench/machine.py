"""The machine a benchmark ran on, in one line, for every bench script's output.

    machine: AMD EPYC · x86_64 · 2 cores · avx avx2 f16c fma sse4_2 (no VNNI) · load 1.20
    · encoder onnx-int8-rr (measured here: ...)

A figure means little without it: the encoder markvault runs, and how fast, is chosen per
CPU (docs/embeddings.md). The encoder part reads the verdict this machine already has for
the packaged model (never measures); ``backend`` names another when a script forced one.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

try:  # run as a script from bench/ or as part of the bench package
    from markvault.embed import encoder_choice
except ImportError:  # pragma: no cover - the sources next to bench/
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))
    from markvault.embed import encoder_choice


def cpu_summary() -> str:
    facts = encoder_choice.cpu_facts()
    flags = facts["flags"]
    vnni = any("vnni" in f for f in flags) or "asimddp" in flags
    return (
        f"{facts['cpu']} · {facts['arch']} · {facts['cores']} cores · "
        f"{' '.join(flags) or 'no flags read'}{'' if vnni else ' (no VNNI)'}"
    )


def encoder_summary(backend: str | None = None) -> str:
    if backend is None and os.environ.get(encoder_choice.ENV_ENCODER):
        backend = os.environ[encoder_choice.ENV_ENCODER]
    try:
        from markvault.config import DEFAULT_MODEL
        from markvault.embed.embedder import model_path

        verdict = encoder_choice.peek(model_path(DEFAULT_MODEL))
    except Exception as exc:  # the line must print whatever the install
        return f"encoder unknown ({type(exc).__name__})"
    if verdict is None:
        return f"encoder {backend or 'auto'} (not measured on this machine yet)"
    chosen = verdict.backend if backend in (None, "auto") else backend
    threads = f", {verdict.threads} threads x {verdict.parallel}" if verdict.threads else ""
    return f"encoder {chosen}{threads} (this machine's verdict: {verdict.describe()})"


def machine_line(backend: str | None = None) -> str:
    """``machine: <cpu> · <flags> · load <1 min> · encoder <backend> (<why>)``."""
    load = f"load {os.getloadavg()[0]:.2f}" if hasattr(os, "getloadavg") else "load ?"
    return f"machine: {cpu_summary()} · {load} · {encoder_summary(backend)}"


if __name__ == "__main__":
    print(machine_line())
