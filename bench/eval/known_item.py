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
notes (``sets.multilingual``). The figure is MRR@10 per language and mode.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

DATA_DIR = Path(__file__).resolve().parent / "multilingual"


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
