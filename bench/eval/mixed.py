"""The mixed-vault set: hand-written notes and imported agent sessions on the same topics.

Data: ``sets/mixed.json``, written by ``gen_mixed.py`` (see there for what it holds and
why). The notes are written as they are; each session is rendered by markvault's own
importer (``sessions.session_note.render_note`` and ``note_path``), so the vault holds
exactly what ``vault import`` would write for it: frontmatter, an empty summary, and a
``### hh:mm User`` / ``### hh:mm Assistant`` heading per turn. Judged per note; the
question types are the set's groups.
"""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from markvault.sessions.session import Event, Session
from markvault.sessions.session_note import note_path, render_note

from .smart import Document, Query

DATA = Path(__file__).resolve().parent / "sets" / "mixed.json"
MODEL = "claude-sonnet-4-5"


@dataclass(frozen=True)
class Mixed:
    files: dict[str, str]  # vault path -> note text
    queries: list[Query]
    relevant: dict[str, dict[str, int]]  # query -> note id -> gain
    groups: dict[str, list[str]]  # question type -> query keys
    documents: list[Document]  # what the reference systems index, one per note


def session_of(data: dict[str, Any]) -> Session:
    """The imported session a generated one stands for: prompts a minute apart, each
    answered a minute later."""
    started = dt.datetime.fromisoformat(data["started"]).replace(tzinfo=dt.UTC)
    events: list[Event] = []
    clock = started
    for exchange in data["exchanges"]:
        events.append(Event("prompt", clock, exchange["prompt"]))
        clock += dt.timedelta(minutes=1)
        events.append(Event("text", clock, exchange["answer"]))
        clock += dt.timedelta(minutes=2)
    return Session(
        session_id=data["id"],
        project=data["project"],
        cwd="",
        git_branch="",
        started=started,
        ended=clock,
        turns=len(data["exchanges"]),
        models=(MODEL,),
        tools={},
        files_read=(),
        files_modified=(),
        events=tuple(events),
    )


def load(path: Path = DATA) -> Mixed:
    data = json.loads(path.read_text(encoding="utf-8"))
    files: dict[str, str] = {}
    documents: list[Document] = []
    for note in data["notes"]:
        files[note["path"]] = note["text"]
        documents.append(Document(note["id"], "", note["text"].split("---\n", 2)[2]))
    for raw in data["sessions"]:
        session = session_of(raw)
        files[note_path(session)] = render_note(session)
        said = [f"{e['prompt']}\n{e['answer']}" for e in raw["exchanges"]]
        documents.append(Document(f"session-{raw['id']}", session.title, "\n".join(said)))
    queries = [Query(q["id"], q["id"], q["text"]) for q in data["questions"]]
    relevant = {q["id"]: dict(q["gold"]) for q in data["questions"]}
    groups: dict[str, list[str]] = {}
    for q in data["questions"]:
        groups.setdefault(q["type"], []).append(q["id"])
    return Mixed(files, queries, relevant, groups, documents)
