"""The multilingual known-item check: does a sentence from a note find that note?

Data: one JSON file per language in ``bench/eval/multilingual/``::

    {"language": "zh", "name": "Chinese",
     "notes": [{"id": "zh-01", "title": "...", "text": "...",
                "query": "...", "query_from": "verbatim" | "edited"}, ...]}

Each note is several sentences of natural text on its own topic (topics recur across
languages, and a few notes of one language share a subject, so a query has look-alike
competitors). Each query is one sentence of its note, copied (``verbatim``) or lightly
changed (``edited``: a word swapped, reordered or dropped, another inflection), the way
someone half-remembers what they wrote. The note it came from is the one right answer.

All languages go into one vault, so a query also competes with the other languages'
notes. The figure is MRR@10 per language and mode (and the share found at rank 1).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from markvault import Vault

from . import runner
from .metrics import mrr_at

DATA_DIR = Path(__file__).resolve().parent / "multilingual"
MODES = ("keyword", "vector", "hybrid")
GOAL = 0.8  # issue 6: keyword and hybrid MRR@10 >= 0.8 in every language


@dataclass(frozen=True)
class Note:
    note_id: str
    language: str
    title: str
    text: str
    query: str
    query_from: str


def load(data_dir: Path = DATA_DIR) -> dict[str, list[Note]]:
    """{language code: notes}, in file name order."""
    out: dict[str, list[Note]] = {}
    for path in sorted(data_dir.glob("*.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        lang = data["language"]
        out[lang] = [
            Note(n["id"], lang, n["title"], n["text"], n["query"], n.get("query_from", "verbatim"))
            for n in data["notes"]
        ]
    return out


def note_text(note: Note) -> str:
    front = (
        f"id: {json.dumps(note.note_id)}\n"
        f"title: {json.dumps(note.title, ensure_ascii=False)}\n"
        f"lang: {note.language}\n"
    )
    return f"---\n{front}---\n\n{note.text.strip()}\n"


def vault_files(notes: dict[str, list[Note]]) -> dict[str, str]:
    return {f"{lang}/{n.note_id}.md": note_text(n) for lang, ns in notes.items() for n in ns}


@dataclass(frozen=True)
class LanguageScores:
    notes: int
    mrr10: dict[str, float]  # mode -> MRR@10
    top1: dict[str, float]  # mode -> share of queries whose note ranks first
    misses: dict[str, list[str]]  # mode -> ids of notes not in the top 10

    def as_dict(self) -> dict[str, Any]:
        return {
            "notes": self.notes,
            "mrr@10": {m: round(v, 4) for m, v in self.mrr10.items()},
            "top1": {m: round(v, 4) for m, v in self.top1.items()},
            "misses": self.misses,
        }


def score_language(
    vault: Vault,
    notes: Sequence[Note],
    modes: Sequence[str],
    rewrite: Callable[[str], str] = runner.plain_query,
) -> LanguageScores:
    mrr: dict[str, float] = {}
    top1: dict[str, float] = {}
    misses: dict[str, list[str]] = {}
    for mode in modes:
        values = []
        for note in notes:
            hits = vault.search(rewrite(note.query), mode=mode, limit=10).hits
            values.append(mrr_at([h.id for h in hits], {note.note_id: 1}, 10))
        mrr[mode] = sum(values) / len(values)
        top1[mode] = sum(1 for v in values if v == 1.0) / len(values)
        misses[mode] = [n.note_id for n, v in zip(notes, values, strict=True) if v == 0.0]
    return LanguageScores(len(notes), mrr, top1, misses)


def run(
    workdir: Path,
    modes: Sequence[str] = MODES,
    data_dir: Path = DATA_DIR,
    rewrite: Callable[[str], str] = runner.plain_query,
) -> dict[str, LanguageScores]:
    """Index every language's notes in one vault and score each language's queries.

    The vault is kept in ``workdir``: a second call (another ``rewrite``) reindexes
    nothing.
    """
    notes = load(data_dir)
    vectors = any(m != "keyword" for m in modes)
    built = runner.build_files(vault_files(notes), workdir, vectors=vectors)
    try:
        return {lang: score_language(built.vault, ns, modes, rewrite) for lang, ns in notes.items()}
    finally:
        built.vault.close()
