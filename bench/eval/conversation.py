"""The conversational-memory set: sessions of dialogue, questions about who said what.

Data: ``sets/conversations.json``, written by ``gen_conversations.py`` (see there for
what it holds and how it is made). Each session becomes a note in markvault's session
layout::

    ---
    id: c1-s03
    title: "Maya and Tom, 28 February 2024"
    kind: session
    started: 2024-02-28T19:42:00
    participants: [Maya, Tom]
    ---

    # Maya and Tom, 28 February 2024

    ## Summary

    Maya told Tom about a trip to Kyoto ...

    ## Transcript

    ### 19:42 Maya

    > I just got back from Kyoto! ...

so each turn is a chunk of its own (a heading per turn, as in imported sessions).
Two judgments per question, from one run:

- **session**: the notes of the sessions that hold an evidence turn (gain 1);
- **turn**: the hit's chunk must hold an evidence turn: a hit counts when its line
  range covers the turn's text (markvault shows one chunk per note, its best).
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .smart import Query

DATA = Path(__file__).resolve().parent / "sets" / "conversations.json"
LEVELS = ("session", "turn")


@dataclass(frozen=True)
class Conversations:
    files: dict[str, str]  # vault path -> note text
    queries: list[Query]
    relevant: dict[str, dict[str, dict[str, int]]]  # level -> query -> key -> gain
    turn_lines: dict[str, dict[int, int]]  # session id -> {text line: turn index}
    sessions: dict[str, str]  # session id -> its note's searchable text (for bm25s)


def _title(speakers: Sequence[str], date: str) -> str:
    day = dt.date.fromisoformat(date)
    return f"{speakers[0]} and {speakers[1]}, {day.day} {day:%B %Y}"


def render(
    session: dict[str, Any], speakers: Sequence[str], summary: bool = True
) -> tuple[str, dict[int, int]]:
    """The session's note and {line number of a turn's text: turn index}; without
    ``summary`` the note is the dialogue alone."""
    title = _title(speakers, session["date"])
    hour, minute = (int(x) for x in session["start"].split(":"))
    started = dt.datetime.fromisoformat(session["date"]).replace(hour=hour, minute=minute)
    lines = [
        "---",
        f"id: {session['id']}",
        f"title: {json.dumps(title)}",
        "kind: session",
        f"started: {started.isoformat()}",
        f"participants: [{', '.join(speakers)}]",
        "tags: [conversation]",
        "---",
        "",
        f"# {title}",
        "",
        *(["## Summary", "", session["summary"], ""] if summary else []),
        "## Transcript",
    ]
    turn_lines: dict[int, int] = {}
    clock = started
    for i, turn in enumerate(session["turns"]):
        clock += dt.timedelta(minutes=1 + i % 3)
        lines += ["", f"### {clock:%H:%M} {turn['speaker']}", ""]
        lines.append(f"> {turn['text']}")
        turn_lines[len(lines)] = i  # 1-based line number of the quote
    return "\n".join(lines) + "\n", turn_lines


def load(path: Path = DATA, summaries: bool = True) -> Conversations:
    data = json.loads(path.read_text(encoding="utf-8"))
    files: dict[str, str] = {}
    turn_lines: dict[str, dict[int, int]] = {}
    sessions: dict[str, str] = {}
    for conv in data["conversations"]:
        for session in conv["sessions"]:
            text, lines = render(session, conv["speakers"], summaries)
            files[f"conversations/{conv['id']}/{session['id']}.md"] = text
            turn_lines[session["id"]] = lines
            sessions[session["id"]] = "\n".join(
                [_title(conv["speakers"], session["date"])]
                + ([session["summary"]] if summaries else [])
                + [f"{t['speaker']}: {t['text']}" for t in session["turns"]]
            )
    queries = [Query(q["id"], q["id"], q["text"]) for q in data["questions"]]
    relevant: dict[str, dict[str, dict[str, int]]] = {level: {} for level in LEVELS}
    for q in data["questions"]:
        relevant["session"][q["id"]] = {sid: 1 for sid, _ in q["evidence"]}
        relevant["turn"][q["id"]] = {f"{sid}#{turn}": 1 for sid, turn in q["evidence"]}
    return Conversations(files, queries, relevant, turn_lines, sessions)


def turn_key(conv: Conversations, note_id: str, start: int, end: int) -> str:
    """The key a hit is judged by at turn level: ``session#turn`` when its chunk holds
    a turn's text, else a key no judgment uses."""
    for line, turn in conv.turn_lines.get(note_id, {}).items():
        if start <= line <= end:
            return f"{note_id}#{turn}"
    return f"{note_id}@{start}"
