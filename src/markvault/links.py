"""Link resolution as Obsidian does it: exact path, then unique file name
(case-insensitive), then aliases. Ambiguous names prefer the linking note's folder."""

from __future__ import annotations

import posixpath
from collections.abc import Iterable


def _key(path: str) -> str:
    path = path.strip().strip("/").casefold()
    return path[:-3] if path.endswith(".md") else path


class LinkResolver:
    def __init__(self, notes: Iterable[tuple[str, list[str]]]) -> None:
        self.by_path: dict[str, str] = {}
        self.by_name: dict[str, list[str]] = {}
        self.by_alias: dict[str, list[str]] = {}
        for path, aliases in notes:
            self.by_path[_key(path)] = path
            self.by_name.setdefault(_key(posixpath.basename(path)), []).append(path)
            for alias in aliases:
                self.by_alias.setdefault(alias.strip().casefold(), []).append(path)

    def resolve(self, source: str, target: str, style: str) -> str | None:
        if not target:
            return source  # [[#Heading]] points into the same note
        if style == "markdown":
            return self.by_path.get(_key(target))
        key = _key(target)
        folder = posixpath.dirname(source)
        for candidate in (key, _key(posixpath.join(folder, target))):
            if candidate in self.by_path:
                return self.by_path[candidate]
        if "/" in key:
            # A partial path: unique note whose path ends with it.
            tails = [p for k, p in self.by_path.items() if k.endswith("/" + key)]
            return self._pick(tails, folder)
        found = self._pick(self.by_name.get(key, []), folder)
        if found:
            return found
        return self._pick(self.by_alias.get(target.strip().casefold(), []), folder)

    @staticmethod
    def _pick(candidates: list[str], folder: str) -> str | None:
        if len(candidates) == 1:
            return candidates[0]
        near = [c for c in candidates if posixpath.dirname(c) == folder]
        return near[0] if len(near) == 1 else None
