"""The link graph: related notes, the path between two notes, folders, link metrics.

Pure functions over the resolved (source, target) links the index holds; a vault's
graph is small enough (tens of thousands of edges) to walk in memory per call. Its
nodes are notes and the other files of the vault (images, PDFs, canvases: attachments)
that notes link to or embed; a file links to nothing.
"""

from __future__ import annotations

import posixpath
from collections import Counter, deque
from collections.abc import Iterable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from markvault.answers.context import FolderLinks, LinkMetrics, LinkStep, RelatedStep


class LinkGraph:
    def __init__(
        self, edges: Iterable[tuple[str, str]], paths: Iterable[str], files: Iterable[str] = ()
    ) -> None:
        """``paths``: the notes; ``files``: every other file of the vault."""
        self.paths = set(paths)
        self.files = set(files) - self.paths
        self.out: dict[str, set[str]] = {}
        self.inc: dict[str, set[str]] = {}
        self.edge_count: Counter[tuple[str, str]] = Counter()
        for source, target in edges:
            if source in self.paths and (target in self.paths or target in self.files):
                self.out.setdefault(source, set()).add(target)
                self.inc.setdefault(target, set()).add(source)
                self.edge_count[(source, target)] += 1

    def neighbours(self, path: str) -> list[tuple[str, str]]:
        """(neighbour, direction) with direction "out" (path links to it), "in" (it links
        to path) or "both", sorted for stable output."""
        outs, ins = self.out.get(path, set()), self.inc.get(path, set())
        return sorted(
            (n, "both" if n in outs and n in ins else "out" if n in outs else "in")
            for n in outs | ins
        )

    def related(self, start: str, depth: int) -> list[RelatedStep]:
        """Notes within ``depth`` links of ``start`` (either direction), nearest first,
        each with its distance, the direction of the last step and the note it came from."""
        seen = {start: 0}
        found: list[RelatedStep] = []
        queue = deque([start])
        while queue:
            here = queue.popleft()
            if seen[here] >= depth:
                continue
            for nxt, direction in self.neighbours(here):
                if nxt in seen:
                    continue
                seen[nxt] = seen[here] + 1
                found.append(
                    {"path": nxt, "distance": seen[nxt], "direction": direction, "via": here}
                )
                queue.append(nxt)
        return found

    def shortest_path(self, start: str, goal: str) -> list[LinkStep] | None:
        """The fewest links from ``start`` to ``goal`` following links either way; each
        step says whether it follows a link ("out") or a backlink ("in")."""
        if start == goal:
            return [{"path": start, "direction": None}]
        parent: dict[str, tuple[str, str] | None] = {start: None}
        queue = deque([start])
        while queue:
            here = queue.popleft()
            for nxt, direction in self.neighbours(here):
                if nxt in parent:
                    continue
                parent[nxt] = (here, direction)
                if nxt == goal:
                    return self._walk_back(parent, goal)
                queue.append(nxt)
        return None

    @staticmethod
    def _walk_back(parent: dict[str, tuple[str, str] | None], goal: str) -> list[LinkStep]:
        steps: list[LinkStep] = []
        node: str | None = goal
        while node is not None:
            prev = parent[node]
            steps.append({"path": node, "direction": prev[1] if prev else None})
            node = prev[0] if prev else None
        return steps[::-1]

    def folders(self, depth: int | None = None) -> FolderLinks:
        """Folders (cut to ``depth`` levels) with their note and other file counts, and
        the number of links between each pair of folders, most linked first."""

        def folder(path: str) -> str:
            parts = posixpath.dirname(path).split("/") if "/" in path else []
            return "/".join(parts[:depth] if depth else parts) or "."

        notes = Counter(folder(p) for p in self.paths)
        files = Counter(folder(p) for p in self.files)
        inside: Counter[str] = Counter()
        between: Counter[tuple[str, str]] = Counter()
        for (source, target), n in self.edge_count.items():
            a, b = folder(source), folder(target)
            if a == b:
                inside[a] += n
            else:
                between[(a, b)] += n
        return {
            "folders": [
                {"folder": f, "notes": notes[f], "files": files[f], "links_inside": inside[f]}
                for f in sorted(notes | files)
            ],
            "links_between": [
                {"from": a, "to": b, "links": n}
                for (a, b), n in sorted(between.items(), key=lambda kv: (-kv[1], kv[0]))
            ],
        }

    def metrics(self, top: int) -> LinkMetrics:
        """The most linked-to and most linking notes, orphans (notes with no links either
        way), the files most linked to and orphan files (no note links to them)."""
        in_degree = {p: len(s) for p, s in self.inc.items() if p in self.paths}
        file_degree = {p: len(s) for p, s in self.inc.items() if p in self.files}
        out_degree = {p: len(s) for p, s in self.out.items()}
        orphans = sorted(p for p in self.paths if p not in in_degree and p not in out_degree)
        orphan_files = sorted(self.files - file_degree.keys())
        to_files = sum(n for (_, target), n in self.edge_count.items() if target in self.files)
        return {
            "notes": len(self.paths),
            "links": sum(self.edge_count.values()),
            "links_to_files": to_files,
            "most_linked": [{"path": p, "backlinks": n} for p, n in _top(in_degree, top)],
            "most_linking": [{"path": p, "links": n} for p, n in _top(out_degree, top)],
            "orphans": orphans[: top * 5],
            "orphan_count": len(orphans),
            "files": len(self.files),
            "most_linked_files": [{"path": p, "backlinks": n} for p, n in _top(file_degree, top)],
            "orphan_files": orphan_files[: top * 5],
            "orphan_file_count": len(orphan_files),
        }


def _top(degree: dict[str, int], top: int) -> list[tuple[str, int]]:
    return sorted(degree.items(), key=lambda kv: (-kv[1], kv[0]))[:top]
