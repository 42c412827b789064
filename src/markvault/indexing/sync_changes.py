"""What a sync changes in the index: the changes a scan found (``Changes``), their
records written all at once or batch by batch (``StoredNotes``), and what the change
feed is told of them (notes added, changed, moved, removed; files skipped; conflicts).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from markvault.index.rows import NoteRows
from markvault.indexing.change_feed import ChangeFeed
from markvault.indexing.feed_items import NoteChange
from markvault.types.reindex import ReindexReport

if TYPE_CHECKING:
    from markvault.index import Index


@dataclass
class Changes:
    """What a scan found and has not written yet (a large scan writes its records as
    it reads them: see ``Syncer.scan_changes``)."""

    records: list[NoteRows]
    removed: list[str]
    skipped: list[tuple[str, str, int, int]]
    touched: list[tuple[str, str, int, int, int, int]]
    unchanged: int
    # The index's view before the change: (file, mtime, size, hash, ctime, inode).
    known: dict[str, tuple[str, int, int, str, int | None, int | None]]
    warnings: list[str]
    files_added: set[str] = field(default_factory=set)  # attachments (files not notes)
    files_removed: set[str] = field(default_factory=set)


@dataclass(frozen=True)
class Written:
    """What a sync keeps of a note it wrote: enough for the report, link resolution and
    the change feed, not its text (a first build holds one batch of records at a time)."""

    path: str
    note_id: str
    topic: str | None
    hash: str
    aliases: tuple[str, ...]
    conflicted: bool

    @classmethod
    def of(cls, rec: NoteRows) -> Written:
        return cls(rec.path, rec.note_id, rec.topic, rec.hash, rec.aliases, rec.conflicted)


class StoredNotes:
    """Writes a sync's records, all at once or batch by batch as they are read, counting
    them into the report and keeping what link resolution and the change feed need."""

    def __init__(self, index: Index, report: ReindexReport, feed_listening: bool) -> None:
        self.index = index
        self.report = report
        self.feed_listening = feed_listening
        self.written: list[Written] = []
        self.before: dict[str, tuple[str, str | None]] = {}  # (id, topic) replaced or gone
        self.batched = False
        self.wrote = False
        self._aliases_before: dict[str, list[str]] | None = None

    def aliases_before(self) -> dict[str, list[str]]:
        """The aliases the index had, before this sync's first write, of the notes it
        rewrote (and of every other note when it wrote batch by batch)."""
        return self._aliases_before or {}

    def begin_batches(self, notes: int) -> None:
        """About ``notes`` records are coming in several transactions."""
        self._aliases_before = dict(self.index.writes.note_link_keys())
        self.index.writes.begin_batches(notes)
        self.batched = True

    def store(
        self,
        records: Sequence[NoteRows],
        known: dict[str, tuple[str, int, int, str, int | None, int | None]],
        removed: Sequence[str] = (),
        skipped: Sequence[tuple[str, str, int, int]] = (),
    ) -> None:
        """Write ``records``, drop ``removed`` and note ``skipped`` in one transaction;
        ``known``: the index's file states before the sync."""
        if self._aliases_before is None:  # one write: only the notes it replaces
            rewritten = [r.path for r in records if r.path in known]
            self._aliases_before = dict(self.index.writes.note_link_keys(rewritten))
        paths = [r.path for r in records] + [*removed] + [s[0] for s in skipped]
        replaced = [p for p in paths if p in known]
        if self.feed_listening:
            self.before.update(self.index.reads.note_keys(replaced))
        removed_hashes = {known[p][3] for p in removed if p in known}
        report = self.report
        for rec in records:
            path = rec.path
            if path in known:
                report.updated += 1
            elif rec.hash in removed_hashes:
                report.renamed += 1
            else:
                report.added += 1
            report.warnings.extend({"path": path, "message": p} for p in rec.problems)
            self.written.append(Written.of(rec))
        # None of them in the index (a first build): nothing there to look up or delete.
        self.index.writes.apply(records, removed, skipped, unindexed=not replaced)
        self.wrote = True


# ---- what a sync tells the change feed -------------------------------------------------

SKIPPED_TOLD = 20  # skipped files named one by one; more are counted


def note_changes(
    changes: Changes, written: Sequence[Written], before: dict[str, tuple[str, str | None]]
) -> list[NoteChange]:
    """The notes a sync added, changed, moved (matched by content hash, as the report
    counts them) or removed; ``before``: the (id, topic) the index had for each path."""
    removed_by_hash = {changes.known[p][3]: p for p in changes.removed if p in changes.known}
    told: list[NoteChange] = []
    moved_from: set[str] = set()
    for w in written:
        path, note_id, topic = w.path, w.note_id, w.topic
        if path in changes.known:
            old_id, old_topic = before.get(path, (None, None))
            told.append(NoteChange("changed", path, note_id, topic, None, old_id, old_topic))
        elif w.hash in removed_by_hash and removed_by_hash[w.hash] not in moved_from:
            old = removed_by_hash[w.hash]
            moved_from.add(old)
            old_id, old_topic = before.get(old, (None, None))
            told.append(NoteChange("moved", path, note_id, topic, old, old_id, old_topic))
        else:
            told.append(NoteChange("added", path, note_id, topic))
    gone = [p for p in changes.removed if p not in moved_from]
    gone += [s[0] for s in changes.skipped if s[0] in changes.known]  # no longer indexed
    for path in gone:
        old_id, old_topic = before.get(path, (None, None))
        told.append(NoteChange("removed", path, old_id, old_topic))
    return told


def tell_skipped(feed: ChangeFeed, skipped: list[tuple[str, str, int, int]]) -> None:
    """Files a sync could not index, and why (newly so: unchanged bad files are not read
    again)."""
    for path, reason, _, _ in skipped[:SKIPPED_TOLD]:
        feed.event("warning", "skipped", reason, [path])  # names the file, says why
    if len(skipped) > SKIPPED_TOLD:
        more = [s[0] for s in skipped[SKIPPED_TOLD:]]
        feed.event("warning", "skipped", f"{len(more):,} more files not indexed", more)


def tell_conflicts(feed: ChangeFeed, written: Sequence[Written]) -> None:
    """Notes that now hold git's conflict markers: a sync (``vault sync``, a ``git pull``)
    stopped on a conflict, and markvault refuses to edit them until it is resolved."""
    for w in written:
        if w.conflicted:
            message = (
                f"{w.path} holds git conflict markers: a sync stopped on a conflict. "
                "Keep the text you want between <<<<<<< and >>>>>>>, then run `vault sync`."
            )
            feed.event("warning", "sync_conflict", message, [w.path])
