"""A bounded memo of recent results, for a worker that may meet the same input again a
few items later (a large sync hands its workers a page's versions side by side: see
``sync.read_files``). The oldest entry goes first once the entries' sizes pass a limit,
so the memo stays small however many items a worker reads. Pure, no I/O."""

from __future__ import annotations

from typing import Generic, TypeVar

K = TypeVar("K")
V = TypeVar("V")


class Recent(Generic[K, V]):
    """Up to ``limit`` in size (each entry's size as ``keep`` is told: characters of
    text, say) of the values last kept or found, by key; ``hits`` counts finds."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.size = 0
        self.hits = 0
        self._entries: dict[K, tuple[V, int]] = {}

    def __len__(self) -> int:
        return len(self._entries)

    def find(self, key: K) -> V | None:
        entry = self._entries.pop(key, None)
        if entry is None:
            return None
        self._entries[key] = entry  # the newest again
        self.hits += 1
        return entry[0]

    def keep(self, key: K, value: V, size: int) -> None:
        old = self._entries.pop(key, None)
        if old is not None:
            self.size -= old[1]
        self._entries[key] = (value, size)
        self.size += size
        entries = self._entries
        while self.size > self.limit and len(entries) > 1:
            self.size -= entries.pop(next(iter(entries)))[1]
