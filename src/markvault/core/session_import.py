"""The session import pipeline: Claude Code transcripts -> session notes, incremental and
idempotent. A transcript (and its note) as the last import left them is not even read;
the others are parsed (in worker processes when there are many), written without losing
a person's edits, and the index is refreshed once at the end.

Credentials in a transcript are redacted in either mode of the vault's policy (automatic
capture must never lose a session to refuse mode), except what the allowlist lets
through: entries for any note (``note = "*"``) and for the note that already holds the
session."""

from __future__ import annotations

import contextlib
import functools
import hashlib
import importlib.metadata
import os
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from markvault.core.common import moment
from markvault.core.gate import CredentialGate
from markvault.core.lifecycle import IndexKeeper
from markvault.errors import ConflictError, IndexBusyError, MarkvaultError, NotFoundError
from markvault.files.vault_files import content_hash
from markvault.files.vault_scan import FileStat
from markvault.git.repo import check_writable
from markvault.indexing.pool import in_workers
from markvault.indexing.racy import RACY_CTIME
from markvault.markdown.frontmatter import read_frontmatter
from markvault.sessions import sanitize, session_note, session_summary, transcript_reader
from markvault.sessions import session as session_model
from markvault.sessions.session import Session
from markvault.sessions.session_note import note_path, render_note
from markvault.sessions.transcript_files import TranscriptFile, transcripts_at
from markvault.sessions.transcript_reader import read_transcript
from markvault.types.progress import NoProgress, Progress
from markvault.types.sessions import SessionImportReport


class SessionImporter:
    """Imports transcripts into session notes (see the module's docstring)."""

    def __init__(self, keeper: IndexKeeper, gate: CredentialGate) -> None:
        self.keeper = keeper
        self.gate = gate

    def import_sessions(
        self,
        source: str | Path | None = None,
        *,
        project: str | Path | None = None,
        since: str | None = None,
        progress: Progress | None = None,
        home: Path | None = None,
    ) -> SessionImportReport:
        """Import Claude Code transcripts as session notes under ``sessions/<project>/``.

        Idempotent and incremental: a session's note is found by its ``session_id``
        (wherever a person moved it) and rewritten only when the transcript grew; its
        summary and every other edit are kept (``sessions.render_note``). A transcript
        whose size and mtime, and whose note, are as the last import left them is not
        even read. A transcript that cannot be read, or a note that cannot be updated,
        is reported and skipped. The index is refreshed once at the end, not per note:
        a refresh rebuilds the keyword index, seconds on a large vault.

        Raises:
            NotFoundError: no transcripts folder (or no folder for ``project``).
            UsageError: a bad ``since`` or a ``project`` that does not fit ``source``.
            RefusedError: a git merge or rebase is in progress in the vault.
        """
        began = time.perf_counter()
        cutoff = moment(since, "since") if since else None
        if project is not None:  # "." or "~/code/x": Claude Code names folders by absolute path
            project = os.path.abspath(os.path.expanduser(project))
        files = transcripts_at(source, project=project, since=cutoff, home=home)
        self.keeper.files.refuse_during_git_operation()  # else every note would fail alike
        report = SessionImportReport(transcripts=len(files))
        state = self._import_state(report)
        progress = progress or NoProgress()
        progress.start("Importing sessions", len(files))
        todo: list[TranscriptFile] = []
        for transcript in files:
            done = self._unchanged_source(transcript, state)
            if done is None:
                todo.append(transcript)
                continue
            report.unchanged += 1
            report.sessions.append({**done, "action": "unchanged"})
            progress.advance(1)
        recorded: list[dict[str, Any]] = []
        try:
            allowed = self._allowed_for(state.known)
            for transcript, parsed in _parse_transcripts(todo, allowed):
                row = self._import_transcript(transcript, parsed, state.known, report)
                if row is not None:
                    recorded.append(row)
                progress.advance(1)
        finally:
            progress.finish()
        if report.new or report.updated:
            self._refresh_after_import(report, progress)
        if recorded and report.index != "busy":
            with contextlib.suppress(IndexBusyError):
                self.keeper.open_index(write=True).sessions.record_sources(recorded)
        report.seconds = time.perf_counter() - began
        return report

    def _allowed_for(
        self, known: Mapping[str, Mapping[str, Any]]
    ) -> Callable[[str], frozenset[str]]:
        """session id -> the fingerprints the allowlist lets through in its transcript."""
        policy = self.gate.policy()
        return lambda session_id: policy.allowed_in(known.get(session_id, {}).get("path") or "*")

    def _import_state(self, report: SessionImportReport) -> _ImportState:
        """What the import needs to know before reading transcripts: session_id -> the
        note that holds it (from the index, plus files the index has not seen yet), and
        what the last import recorded. When another process holds the index (a running
        MCP server that has written), the session notes' frontmatter is read instead."""
        on_disk, _ = self.keeper.files.scan()
        try:
            index = self.keeper.reader()
        except IndexBusyError:
            report.index = "busy"
            report.notices.append(
                "The index is in use by another markvault process: session notes were found "
                "by reading sessions/, and the index will catch up at the next reindex."
            )
            known = self._scan_session_ids(on_disk, lambda rel, st: rel.startswith("sessions/"))
            return _ImportState(known, on_disk, {}, {})
        states = index.writes.file_states()
        unseen = self._scan_session_ids(
            on_disk,
            lambda rel, st: (
                rel not in states
                or states[rel][:3] != (st.file, st.mtime_ns, st.size)
                or states[rel][4] not in (st.ctime_ns, RACY_CTIME)  # racy: not a change
                or states[rel][5] != st.ino
            ),
        )
        known = {**index.sessions.notes_by_id(), **unseen}
        return _ImportState(known, on_disk, states, index.sessions.sources())

    def _scan_session_ids(
        self, on_disk: Mapping[str, FileStat], wanted: Callable[[str, FileStat], bool]
    ) -> dict[str, dict[str, Any]]:
        """session_id -> note, of the files that ``wanted(path, stat)`` picks."""
        found: dict[str, dict[str, Any]] = {}
        for rel, st in sorted(on_disk.items()):
            if not wanted(rel, st):
                continue
            try:
                _, text = self.keeper.files.read(st.file, self.keeper.max_note_bytes)
            except MarkvaultError:
                continue
            sid = _session_id_of(text)
            if sid:
                found.setdefault(sid, {"path": rel, "file": st.file})
        return found

    @staticmethod
    def _unchanged_source(transcript: TranscriptFile, state: _ImportState) -> dict[str, Any] | None:
        """The report entry of a transcript the last import saw as it is now and whose
        note nobody has changed since (on disk as indexed, with the hash recorded);
        None when it must be read."""
        seen = state.sources.get(_source_key(transcript.path))
        if (
            seen is None
            or seen["size"] != transcript.size
            or seen["mtime"] != transcript.mtime
            or seen["renderer"] != renderer_fingerprint()
        ):
            return None
        st, indexed = state.on_disk.get(seen["path"]), state.states.get(seen["path"])
        if (
            st is None
            or indexed is None
            or indexed[:4] != (st.file, st.mtime_ns, st.size, seen["hash"])
        ):
            return None
        return {
            "session_id": seen["session_id"],
            "source": str(transcript.path),
            "path": seen["path"],
        }

    def _import_transcript(
        self,
        transcript: TranscriptFile,
        parsed: Session | str,
        known: dict[str, dict[str, Any]],
        report: SessionImportReport,
    ) -> dict[str, Any] | None:
        """Write one parsed transcript's note; the source record to keep, if any."""
        if isinstance(parsed, str):
            report.failed += 1
            report.errors.append({"source": str(transcript.path), "message": parsed})
            return None
        session = parsed
        report.read += 1
        report.malformed_lines += session.malformed_lines
        report.oversized_lines += session.oversized_lines
        report.redactions += session.redactions
        entry: dict[str, Any] = {"session_id": session.session_id, "source": str(transcript.path)}
        if not session.events:  # nothing said yet (Claude Code makes such files): no note
            report.empty += 1
            report.sessions.append({**entry, "action": "empty", "path": None})
            return None
        try:
            action, rel, data = self._write_session(session, known)
        except MarkvaultError as exc:
            report.failed += 1
            report.errors.append({"source": str(transcript.path), "message": str(exc)})
            return None
        if action == "new":
            report.new += 1
        elif action == "updated":
            report.updated += 1
        else:
            report.unchanged += 1
        report.sessions.append({**entry, "action": action, "path": rel})
        if len(data) > self.keeper.max_note_bytes:
            report.notices.append(
                f"{rel} is {len(data) / 1048576:.1f} MiB, over the "
                f"{self.keeper.max_note_bytes:,} bytes a note may have: it is kept but not "
                "indexed."
            )
        return {
            "source": _source_key(transcript.path),
            "size": transcript.size,
            "mtime": transcript.mtime,
            "renderer": renderer_fingerprint(),
            "session_id": session.session_id,
            "path": rel,
            "hash": content_hash(data),
        }

    def _write_session(
        self, session: Session, known: dict[str, dict[str, Any]]
    ) -> tuple[str, str, bytes]:
        """("new" | "updated" | "unchanged", vault path, the note's bytes now).

        An existing note is replaced only if it still has the hash it was read with, so
        an edit made meanwhile is never lost (the import reports a conflict instead).
        """
        row = known.get(session.session_id)
        if row is not None:
            try:
                data, text = self.keeper.files.read(row["file"], self.keeper.max_note_bytes)
            except NotFoundError:
                row = None  # deleted since the index saw it: written anew below
        if row is None:
            rel = note_path(session)
            text = render_note(session)
            try:
                self.keeper.files.create(rel, text)
                known[session.session_id] = {"path": rel, "file": rel}
                return "new", rel, text.encode("utf-8")
            except ConflictError:
                # A note is there already: ours from an import the index has not seen.
                data, text = self.keeper.files.read(rel, self.keeper.max_note_bytes)
                if _session_id_of(text) != session.session_id:
                    raise
                row = {"path": rel, "file": rel}
        new_text = render_note(session, text)
        if new_text == text:
            return "unchanged", row["path"], data
        check_writable(text, row["path"])
        self.keeper.files.replace(row["file"], new_text, content_hash(data))
        return "updated", row["path"], new_text.encode("utf-8")

    def _refresh_after_import(self, report: SessionImportReport, progress: Progress) -> None:
        if report.index == "busy":
            return
        try:
            # Not limited to the notes written now: a stat scan is cheap next to the
            # keyword rebuild, and it also catches up notes an earlier import wrote while
            # another process held the index.
            self.keeper.refresh(progress)
            report.index = "refreshed"
        except IndexBusyError:
            report.index = "busy"
            report.notices.append(
                "The notes are written, but another markvault process holds the index: "
                "run `vault reindex` when it is free to make them searchable."
            )


@dataclass(frozen=True)
class _ImportState:
    known: dict[str, dict[str, Any]]  # session_id -> {path, file} of its note
    on_disk: Mapping[str, FileStat]  # the vault's notes now
    states: Mapping[str, tuple[str, int, int, str, int | None, int | None]]  # as indexed
    sources: Mapping[str, dict[str, Any]]  # transcript -> what the last import recorded


# Transcripts are parsed in worker processes when there are this many (CPU-bound Python:
# JSON, redaction patterns).
PARALLEL_MIN_TRANSCRIPTS = 16

TRANSCRIPT_BATCH = 8


def _source_key(path: Path) -> str:
    return os.path.abspath(path)


# Every module whose code decides a session note's text: reading the transcript,
# cleaning it, the session's model, rendering the note and its summary.
RENDERER_MODULES = (transcript_reader, sanitize, session_model, session_note, session_summary)


@functools.cache
def renderer_fingerprint() -> str:
    """Identifies the code that turns transcripts into notes: a transcript recorded
    under another renderer is read again, so a new markvault re-renders its notes."""
    digest = hashlib.sha256()
    try:
        for module in RENDERER_MODULES:
            digest.update(Path(module.__file__ or module.__name__).read_bytes())
    except OSError:  # no source beside the code (a zipped install): go by version
        return "version-" + importlib.metadata.version("markvault")
    return digest.hexdigest()[:16]


def _read_transcript_batch(
    batch: list[tuple[str, str, frozenset[str]]],
) -> list[Session | str]:
    """read_transcript over (path, session id, allowed fingerprints); an error becomes
    its message (exceptions lose their hint when pickled back from a worker)."""
    out: list[Session | str] = []
    for path, sid, allowed in batch:
        try:
            out.append(read_transcript(path, session_id=sid, allowed=allowed))
        except MarkvaultError as exc:
            out.append(str(exc))
    return out


def _parse_transcripts(
    todo: list[TranscriptFile], allowed: Callable[[str], frozenset[str]]
) -> Iterator[tuple[TranscriptFile, Session | str]]:
    """Each transcript with its parsed session (or error message), in order; parsed in
    worker processes when there are many (JSON and redaction patterns: CPU-bound)."""
    pairs = [(str(t.path), t.session_id, allowed(t.session_id)) for t in todo]
    position = 0
    for done in in_workers(
        pairs,
        lambda pair: _read_transcript_batch([pair])[0],
        _read_transcript_batch,
        batch_size=TRANSCRIPT_BATCH,
        min_items=PARALLEL_MIN_TRANSCRIPTS,
    ):
        for _, parsed in done:
            yield todo[position], parsed
            position += 1


def _session_id_of(text: str) -> str | None:
    """The ``session_id`` in a note's frontmatter, if it has one."""
    value = read_frontmatter(text).get("session_id")
    return str(value) if value not in (None, "") else None
