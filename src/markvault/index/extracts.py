"""Attachments' text in the index: extractions kept by the file's content hash (a rename
or a copy reuses them), their pages, and what ``vault status`` says of attachments."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from markvault.attachments.formats import Extracted
from markvault.index.filters import sql_string

if TYPE_CHECKING:
    from markvault.answers.status import AttachmentCounts, AttachmentProblem
    from markvault.index.store import Store


class ExtractStore:
    def __init__(self, store: Store) -> None:
        self.store = store
        self.con = store.con

    def states(self) -> dict[str, tuple[str, int, int, str]]:
        """path -> (file on disk, mtime_ns, size, hash) of every indexed attachment."""
        rows = self.con.execute(
            "SELECT path, file, mtime_ns, size, hash FROM notes WHERE kind = 'attachment'"
        ).fetchall()
        return {r[0]: (r[1], r[2], r[3], r[4]) for r in rows}

    def cached(self, hashes: Sequence[str]) -> dict[str, Extracted]:
        """The extractions kept for ``hashes``, pages and all."""
        if not hashes:
            return {}
        wanted = ", ".join(sql_string(h) for h in sorted(set(hashes)))
        found = {
            r[0]: Extracted(r[1], r[2], [], int(r[4] or 0), r[3])
            for r in self.con.execute(
                "SELECT hash, format, status, reason, total_pages FROM extracts "
                f"WHERE hash IN ({wanted})"
            ).fetchall()
        }
        if found:
            for h, page, label, text in self.con.execute(
                "SELECT hash, page, label, text FROM extract_pages "
                f"WHERE hash IN ({wanted}) ORDER BY hash, page"
            ).fetchall():
                found[h].pages.append((int(page), label, text))
        return found

    def keep(self, items: Sequence[tuple[str, Extracted, float]]) -> None:
        """Store extractions: (content hash, result, seconds it took)."""
        if not items:
            return
        hashes = sorted({h for h, _, _ in items})
        with self.store.transaction():
            with self.store.rows({"hash": hashes}, "h") as gone:
                for table in ("extracts", "extract_pages"):
                    self.con.execute(f"DELETE FROM {table} WHERE hash IN (SELECT hash FROM {gone})")
            done: set[str] = set()
            rows: dict[str, list[Any]] = {k: [] for k in ("hash", "page", "label", "text")}
            meta: dict[str, list[Any]] = {
                k: []
                for k in ("hash", "format", "status", "reason", "total_pages", "chars", "seconds")
            }
            for h, result, seconds in items:
                if h in done:
                    continue
                done.add(h)
                for key, value in (
                    ("hash", h),
                    ("format", result.format),
                    ("status", result.status),
                    ("reason", result.reason),
                    ("total_pages", result.total_pages),
                    ("chars", result.chars),
                    ("seconds", round(seconds, 4)),
                ):
                    meta[key].append(value)
                for page, label, text in result.pages:
                    rows["hash"].append(h)
                    rows["page"].append(page)
                    rows["label"].append(label)
                    rows["text"].append(text)
            self.store.insert_rows("extracts", meta)
            if rows["hash"]:
                self.store.insert_rows("extract_pages", rows)

    def prune(self) -> None:
        """Forget extractions no attachment in the index has any more."""
        unused = (
            "hash NOT IN (SELECT hash FROM notes WHERE kind = 'attachment' AND hash IS NOT NULL)"
        )
        with self.store.transaction():
            self.con.execute(f"DELETE FROM extract_pages WHERE {unused}")
            self.con.execute(f"DELETE FROM extracts WHERE {unused}")

    def pages(self, hash: str, first: int, last: int) -> list[tuple[int, str, str]]:
        """(number, label, text) of the pages ``first``..``last`` of an extraction."""
        return [
            (int(r[0]), r[1], r[2])
            for r in self.con.execute(
                "SELECT page, label, text FROM extract_pages WHERE hash = ? "
                "AND page BETWEEN ? AND ? ORDER BY page",
                [hash, first, last],
            ).fetchall()
        ]

    def facts(self, hash: str) -> dict[str, Any] | None:
        """What is known of one extraction: format, status, reason, pages."""
        row = self.con.execute(
            "SELECT format, status, reason, total_pages, chars, "
            "(SELECT max(page) FROM extract_pages p WHERE p.hash = e.hash) "
            "FROM extracts e WHERE hash = ?",
            [hash],
        ).fetchone()
        if row is None:
            return None
        return {
            "format": row[0],
            "status": row[1],
            "reason": row[2],
            "total_pages": int(row[3] or 0),
            "chars": int(row[4] or 0),
            "last_page": int(row[5] or 0),
        }

    def summary(self) -> AttachmentCounts:
        """Attachments by what their extraction gave, and each one not read with why."""
        rows = self.con.execute(
            "SELECT n.path, n.type, e.status, e.reason FROM notes n LEFT JOIN extracts e "
            "ON e.hash = n.hash WHERE n.kind = 'attachment' ORDER BY n.path"
        ).fetchall()
        counts = {"extracted": 0, "without_text": 0, "failed": 0}
        by_type: dict[str, int] = {}
        problems: list[AttachmentProblem] = []
        for path, fmt, status, reason in rows:
            key = {"text": "extracted", "no_text": "without_text"}.get(status or "", "failed")
            counts[key] += 1
            by_type[fmt or "?"] = by_type.get(fmt or "?", 0) + 1
            if key != "extracted":
                problems.append({"path": path, "status": key, "reason": reason or "unknown"})
        return {
            "total": len(rows),
            "extracted": counts["extracted"],
            "without_text": counts["without_text"],
            "failed": counts["failed"],
            "by_type": by_type,
            "not_read": problems,
        }
