"""Everything the harness evaluates, in one shape: a vault, queries and judgments.

An ``EvalSet`` is the files of a vault, its queries, and for each *level* of judgment
(a collection's documents; a conversation's sessions and turns; a long note's sections)
which hits are relevant to which query with which gain. A hit is judged by the key its
level gives it (``key``): the note's id, or ``note#turn`` when the hit's chunk holds that
turn. Queries can be grouped (known-item sets by language) for per-group figures.

The sets:

- ``cranfield``, ``cacm``: the SMART collections in ``../shared/eval`` (``catalog``);
- ``conversations``: sessions between two people, summary and dialogue, judged per
  session; ``dialogue``: the same sessions without summaries, per session and per turn
  (``conversation.py``, data from ``gen_conversations.py``);
- ``starter``: known-item questions over the bundled starter vault (``sets/starter.json``);
- ``long-notes``: known-item sentences from sections of long notes, per note and per
  section (``gen_long_notes.py``);
- ``multilingual``: known-item sentences in eight languages (``multilingual/*.json``);
- ``mixed``: hand-written notes and imported agent sessions on the same topics, judged
  per note, by question type (``mixed.py``, data from ``gen_mixed.py``).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from . import conversation, known_item, mixed
from .notes import collection_files
from .smart import Collection, Document, Gains, Query, QueryIds, load_collection

REPO = Path(__file__).resolve().parents[2]
SHARED_EVAL = Path(os.environ.get("MARKVAULT_SHARED_EVAL") or REPO.parent / "shared" / "eval")
SETS_DIR = Path(__file__).resolve().parent / "sets"

Judge = Callable[[str, str, int, int], str]  # (level, note id, first line, last line) -> key


def by_note(level: str, note_id: str, start: int, end: int) -> str:
    return note_id


@dataclass
class EvalSet:
    name: str
    kind: str  # "collection", "conversation", "known-item" or "mixed"
    files: dict[str, str]  # vault path -> note text
    queries: list[Query]
    levels: dict[str, dict[str, dict[str, int]]]  # level -> query key -> {key: gain}
    judge: Judge = by_note
    groups: dict[str, list[str]] = field(default_factory=dict)  # group -> query keys
    # What the reference systems index, one document per note, at the note levels.
    documents: list[Document] = field(default_factory=list)
    reference_levels: tuple[str, ...] = ()
    description: str = ""


# ---- the SMART collections -------------------------------------------------------------

CATALOG: dict[str, tuple[str, str, str, QueryIds, Gains]] = {
    "cranfield": (
        "cranfield/cran.all.1400",
        "cranfield/cran.qry",
        "cranfield/cranqrel",
        QueryIds.ORDINAL,
        Gains.CRANFIELD,
    ),
    "cacm": ("cacm/cacm.all", "cacm/query.text", "cacm/qrels.text", QueryIds.LABEL, Gains.BINARY),
}


def collection_available(name: str) -> bool:
    return (SHARED_EVAL / CATALOG[name][0]).is_file()


def load_catalogued(name: str) -> Collection:
    docs, queries, qrels, ids, gains = CATALOG[name]
    return load_collection(
        SHARED_EVAL / docs,
        SHARED_EVAL / queries,
        SHARED_EVAL / qrels,
        query_ids=ids,
        gains=gains,
        name=name,
    )


def from_collection(collection: Collection, queries: list[Query] | None = None) -> EvalSet:
    """A SMART collection as a set: one note per document, judged per document."""
    chosen = queries if queries is not None else collection.judged_queries()
    relevant = {q.key: collection.relevant[q.key] for q in chosen if collection.relevant.get(q.key)}
    return EvalSet(
        name=collection.name,
        kind="collection",
        files=collection_files(collection.documents),
        queries=[q for q in chosen if q.key in relevant],
        levels={"documents": relevant},
        documents=collection.documents,
        reference_levels=("documents",),
        description=(
            f"{len(collection.documents)} documents, {len(relevant)} judged queries, "
            f"grades {collection.grades}"
        ),
    )


# ---- our own sets ----------------------------------------------------------------------


def conversations(summaries: bool) -> EvalSet:
    conv = conversation.load(summaries=summaries)

    def judge(level: str, note_id: str, start: int, end: int) -> str:
        return conversation.turn_key(conv, note_id, start, end) if level == "turn" else note_id

    levels = conv.relevant if not summaries else {"session": conv.relevant["session"]}
    name = "conversations" if summaries else "dialogue"
    return EvalSet(
        name=name,
        kind="conversation",
        files=conv.files,
        queries=conv.queries,
        levels=levels,
        judge=judge,
        documents=[Document(sid, "", text) for sid, text in conv.sessions.items()],
        reference_levels=("session",),
        description=(
            f"{len(conv.files)} sessions between two people "
            f"({'summary and dialogue' if summaries else 'dialogue only'}), "
            f"{len(conv.queries)} questions"
        ),
    )


def starter() -> EvalSet:
    """Known-item questions over the bundled starter vault."""
    data = json.loads((SETS_DIR / "starter.json").read_text(encoding="utf-8"))
    files = {
        p.relative_to(REPO / "vault").as_posix(): p.read_text(encoding="utf-8")
        for p in sorted((REPO / "vault").rglob("*.md"))
    }
    queries = [Query(f"s{i:02d}", f"s{i:02d}", q["query"]) for i, q in enumerate(data["queries"])]
    relevant = {q.key: {d["note"]: 1} for q, d in zip(queries, data["queries"], strict=True)}
    groups: dict[str, list[str]] = {}
    for q, d in zip(queries, data["queries"], strict=True):
        groups.setdefault(d["lang"], []).append(q.key)
    return EvalSet(
        name="starter",
        kind="known-item",
        files=files,
        queries=queries,
        levels={"note": relevant},
        groups=groups,
        description=f"the bundled vault ({len(files)} notes), {len(queries)} questions",
    )


def long_notes() -> EvalSet:
    """Known-item sentences from sections of long notes (``gen_long_notes.py``)."""
    data = json.loads((SETS_DIR / "long_notes.json").read_text(encoding="utf-8"))
    files: dict[str, str] = {}
    sections: dict[str, list[tuple[int, int, str]]] = {}  # note -> (first, last, heading)
    documents = []
    for note in data["notes"]:
        head = f"---\nid: {note['id']}\ntitle: {json.dumps(note['title'])}\n---\n\n"
        text = head + note["text"]
        files[f"{note['id']}.md"] = text
        documents.append(Document(note["id"], note["title"], note["text"]))
        lines = text.split("\n")
        starts = [(i + 1, ln[3:]) for i, ln in enumerate(lines) if ln.startswith("## ")]
        ends = [s for s, _ in starts[1:]] + [len(lines) + 1] if starts else []
        sections[note["id"]] = [(s, e - 1, h) for (s, h), e in zip(starts, ends, strict=True)]
    queries = [Query(f"l{i:02d}", f"l{i:02d}", q["query"]) for i, q in enumerate(data["queries"])]
    levels: dict[str, dict[str, dict[str, int]]] = {"note": {}, "section": {}}
    for q, d in zip(queries, data["queries"], strict=True):
        levels["note"][q.key] = {d["note"]: 1}
        levels["section"][q.key] = {f"{d['note']}#{d['section']}": 1}

    def judge(level: str, note_id: str, start: int, end: int) -> str:
        if level == "section":
            for first, last, heading in sections.get(note_id, []):
                if first <= start and end <= last:
                    return f"{note_id}#{heading}"
        return note_id if level == "note" else f"{note_id}@{start}"

    return EvalSet(
        name="long-notes",
        kind="known-item",
        files=files,
        queries=queries,
        levels=levels,
        judge=judge,
        groups={"en": [q.key for q in queries]},
        documents=documents,
        reference_levels=("note",),
        description=(
            f"{len(files)} notes ({sum(1 for s in sections.values() if s)} long, with "
            f"{sum(len(s) for s in sections.values())} sections in all), "
            f"{len(queries)} sentences"
        ),
    )


def multilingual() -> EvalSet:
    """Known-item sentences in eight languages, one vault (``multilingual/*.json``)."""
    notes = known_item.load()
    queries, relevant, groups, documents = [], {}, {}, []
    for lang, ns in notes.items():
        for n in ns:
            queries.append(Query(n.note_id, n.note_id, n.query))
            relevant[n.note_id] = {n.note_id: 1}
            groups.setdefault(lang, []).append(n.note_id)
            documents.append(Document(n.note_id, n.title, n.text))
    return EvalSet(
        name="multilingual",
        kind="known-item",
        files=known_item.vault_files(notes),
        queries=queries,
        levels={"note": relevant},
        groups=groups,
        documents=documents,
        description=f"{len(queries)} notes in {len(notes)} languages, a sentence of each",
    )


def mixed_vault() -> EvalSet:
    """Hand-written notes and imported sessions on the same topics (``gen_mixed.py``)."""
    m = mixed.load()
    sessions = sum(1 for path in m.files if path.startswith("sessions/"))
    return EvalSet(
        name="mixed",
        kind="mixed",
        files=m.files,
        queries=m.queries,
        levels={"note": m.relevant},
        groups=m.groups,
        documents=m.documents,
        reference_levels=("note",),
        description=(
            f"{len(m.files) - sessions} hand-written notes and {sessions} imported sessions "
            f"on the same topics, {len(m.queries)} questions"
        ),
    )


OWN_SETS: dict[str, Callable[[], EvalSet]] = {
    "conversations": lambda: conversations(summaries=True),
    "dialogue": lambda: conversations(summaries=False),
    "starter": starter,
    "long-notes": long_notes,
    "multilingual": multilingual,
    "mixed": mixed_vault,
}
