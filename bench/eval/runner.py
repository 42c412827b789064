"""markvault over a collection: build the vault and index, run the queries per mode.

Everything goes through markvault's public API (``open_local``, ``reindex``,
``search``), except that experiments change a module constant or function
(``markvault.index.keyword.BM25_K1``, ...) for the duration of one run (``patched``): the
point is to measure a setting before anyone changes ``src/``.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

from markvault import Vault
from markvault.runtime.local_host import open_local
from markvault.types.search import SearchRequest, SearchResult

from .metrics import Scores, evaluate
from .notes import write_vault
from .smart import Query
from .variants import variants as make_variants

LIMIT = 100  # notes per query: enough for Recall@100


@dataclass
class Built:
    """An indexed vault and what building it cost."""

    vault: Vault
    notes: int
    chunks: int
    seconds: float
    embedded: int
    settings: dict[str, Any] = field(default_factory=dict)


def build_files(
    files: dict[str, str], workdir: Path, *, vectors: bool, max_pieces: int | None = None
) -> Built:
    """Write ``files`` as the vault ``workdir/vault`` and bring ``workdir/index`` up to date.

    A ``workdir`` that already holds this vault is reused: unchanged notes are not
    re-read and their vectors are kept (embedding Cranfield takes minutes).
    ``max_pieces`` sets the chunk size through the vault's ``.markvault.toml``.
    """
    vault_dir = workdir / "vault"
    write_vault(vault_dir, files)
    config = vault_dir / ".markvault.toml"
    if max_pieces is None:
        config.unlink(missing_ok=True)
    else:
        config.write_text(f"[chunk]\nmax_pieces = {max_pieces}\n", encoding="utf-8")
    vault = open_local(vault_dir, workdir / "index")
    started = time.perf_counter()
    report = vault.reindex(vectors=vectors)
    seconds = time.perf_counter() - started
    if report.errors:
        raise RuntimeError(f"reindex reported errors: {report.errors[:3]}")
    return Built(
        vault=vault,
        notes=report.notes,
        chunks=report.chunks,
        seconds=seconds,
        embedded=report.embedded,
        settings={
            "model": vault.settings.model,
            "max_pieces": vault.settings.chunk.max_pieces,
        },
    )


def deep_search(vault: Vault, query: str, variants: Sequence[str], limit: int) -> SearchResult:
    """Deep search: the query plus ``variants`` (``kind: text`` strings, see variants.py)."""
    return vault.search(SearchRequest(query, mode="deep", limit=limit, variants=list(variants)))


Hit = tuple[str, int, int]  # note id, first and last line of the chunk shown


@dataclass
class ModeRun:
    """One mode's hits per query, and what happened along the way."""

    mode: str
    hits: dict[str, list[Hit]]
    seconds: float
    errors: dict[str, str] = field(default_factory=dict)
    shortcuts: int = 0  # deep: queries whose variants were skipped as decisive
    warnings: dict[str, int] = field(default_factory=dict)  # warning text -> queries

    @property
    def ranked(self) -> dict[str, list[str]]:
        """Note ids per query, best first."""
        return {key: [h[0] for h in hits] for key, hits in self.hits.items()}

    def keys(self, level: str, judge: Callable[[str, str, int, int], str]) -> dict[str, list[str]]:
        """What each hit is judged as at ``level`` (see ``sets.EvalSet``)."""
        return {key: [judge(level, *hit) for hit in hits] for key, hits in self.hits.items()}

    def scores(self, relevant: dict[str, dict[str, int]]) -> Scores:
        return evaluate(self.ranked, relevant)


def run_mode(
    vault: Vault,
    queries: Sequence[Query],
    mode: str,
    *,
    limit: int = LIMIT,
) -> ModeRun:
    """Every query through ``vault.search`` in ``mode``, exactly as the collection
    writes it (quotes, parentheses and all: what a user types). Deep mode gets
    ``variants.variants`` of the query. A query markvault refuses is recorded with its
    message and scores 0.
    """
    out = ModeRun(mode, {}, 0.0)
    started = time.perf_counter()
    for q in queries:
        text = q.text
        try:
            if mode == "deep":
                vs = make_variants(q.text)
                result = deep_search(vault, text, vs, limit)
                out.shortcuts += int(result.shortcut)
            else:
                result = vault.search(SearchRequest(text, mode=mode, limit=limit))
        except Exception as exc:  # a refused query is a figure, not a crash
            out.errors[q.key] = f"{type(exc).__name__}: {exc}"
            continue
        out.hits[q.key] = [(hit.id, hit.lines[0], hit.lines[1]) for hit in result.hits]
        for warning in result.warnings:
            out.warnings[warning] = out.warnings.get(warning, 0) + 1
    out.seconds = time.perf_counter() - started
    return out


@contextlib.contextmanager
def patched(module: ModuleType, **values: Any) -> Iterator[None]:
    """Set module constants (e.g. ``BM25_K1``) for one experiment, then restore them.

    Raises AttributeError for a name the module lacks, so a renamed constant in
    ``src/`` cannot silently turn an experiment into a rerun of the baseline.
    """
    old = {name: getattr(module, name) for name in values}
    try:
        for name, value in values.items():
            setattr(module, name, value)
        yield
    finally:
        for name, value in old.items():
            setattr(module, name, value)


def subset(queries: Sequence[Query], n: int | None) -> list[Query]:
    """``n`` queries spread evenly over the list (all when ``n`` is None or too big).

    Evenly spaced rather than the first ``n``: neighbouring Cranfield queries are often
    about the same subject, so a prefix would be a narrower sample.
    """
    if n is None or n >= len(queries):
        return list(queries)
    step = len(queries) / n
    return [queries[int(i * step)] for i in range(n)]
