"""One identity per note: how a reference (id, path, ``vault://note/`` URI) names a note,
and which ids cannot name theirs.

A path always names the note at that path: it is looked up first, exactly (with or
without ".md"), then an id, then a path ignoring case. An ``id`` in a note's frontmatter
names that note only when it is its own: an id that is another note's path (with or
without ".md"), or that several notes share, names none of them; the index reports it
(``IndexReads.identity_problems``: `vault status`, `vault reindex`, `vault check`) and
such a note is cited by its path (``citation_key``, ``IndexReads.unsound_paths``), so
that a citation always reads the note it came from. Pure: the index supplies the rows.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Set
from typing import Any, TypeVar, cast
from urllib.parse import quote, unquote

NOTE_URI = "vault://note/"
NOTE_SUFFIX = ".md"


def note_uri(key: str) -> str:
    """The citation URI of a note id or path."""
    return NOTE_URI + quote(key, safe="/")


def ref_key(ref: str) -> str:
    """What a note reference names: an id or path, with a ``vault://note/`` URI undone."""
    ref = ref.strip()
    if ref.startswith(NOTE_URI):
        ref = unquote(ref[len(NOTE_URI) :])
    return ref


def path_forms(key: str) -> tuple[str, ...]:
    """The paths a key names as a path, in the order they are looked up."""
    return (key,) if key.lower().endswith(NOTE_SUFFIX) else (key, key + NOTE_SUFFIX)


def citation_key(note_id: str, path: str, unsound_paths: Set[str]) -> str:
    """What a note is cited by: its id, or its path when the id does not name it."""
    return path if path in unsound_paths else note_id


def looks_like_path(note_id: str) -> bool:
    """A frontmatter id written as a note's file name (``notes/Target.md``)."""
    return note_id.lower().endswith(NOTE_SUFFIX)


V = TypeVar("V", bound=Mapping[str, Any])


def recite(views: list[V], unsound_paths: Set[str]) -> list[V]:
    """``views`` (answers with a path and a uri) with the uri of each note whose id does
    not name it (``IndexReads.unsound_paths``) changed to its path's, in place."""
    for view in views:
        if view.get("uri") and view.get("path") in unsound_paths:
            cast("dict[str, Any]", view)["uri"] = note_uri(str(view["path"]))
    return views


def id_problems(notes: Iterable[tuple[str, str]]) -> list[dict[str, str]]:
    """The same findings as ``IndexReads.identity_problems`` (which asks the index, and
    a test holds the two equal), from every note's (id, path): for `vault check`, which
    reads the files and needs no index."""
    notes = list(notes)
    paths = {path for _, path in notes}
    by_id: dict[str, list[str]] = {}
    for note_id, path in notes:
        by_id.setdefault(note_id, []).append(path)
    found: dict[str, str] = {}
    for note_id, path in sorted(notes, key=lambda n: n[1]):
        if note_id == path:
            continue
        at = sorted(p for p in path_forms(note_id) if p in paths and p != path)
        shared = sorted(p for p in by_id[note_id] if p != path)
        if at:
            found[path] = id_problem(note_id, at[0], "path")
        elif shared:
            found[path] = id_problem(note_id, shared[0], "id")
        elif looks_like_path(note_id):
            found[path] = id_problem(note_id, None, "looks")
    return [{"path": path, "problem": problem} for path, problem in found.items()]


def id_problem(note_id: str, other: str | None, what: str) -> str:
    """What is said of a frontmatter id that does not name its note."""
    if what == "path":
        return (
            f"frontmatter id {note_id!r} is the path of another note ({other}): ignored, "
            "this note is reached and cited by its path; give it an id of its own"
        )
    if what == "id":
        return (
            f"frontmatter id {note_id!r} is also the id of {other}: it names neither, each "
            "is reached and cited by its path; give each an id of its own"
        )
    return (
        f"frontmatter id {note_id!r} looks like a file's path: a path always names the "
        "note at that path; give it an id that is not a path"
    )
