"""Names looked up by what a person has typed so far: note ids and titles, session ids,
topics and projects, for completing arguments on every keystroke.

Built once from the index's notes (ids, titles, dates: no text) and kept until the
index changes; each lookup is then a few binary searches over sorted keys, well under
a millisecond at 10k notes, where a scan in SQL costs ten or more. Matching ignores
case. Best first: a key typed whole, keys that start so, titles that start so, then
titles with a word that starts so; newest first within each.
"""

from __future__ import annotations

import bisect
from collections import Counter
from collections.abc import Iterable, Sequence

END = "\U0010ffff"  # sorts after every character: [p, p + END) holds the keys starting with p


class _Sorted:
    """Texts sorted, with the position each came from: the positions whose text starts
    with a prefix are one slice."""

    def __init__(self, texts: list[str], positions: list[int]) -> None:
        order = sorted(range(len(texts)), key=texts.__getitem__)
        self.texts = [texts[k] for k in order]
        self.positions = [positions[k] for k in order]

    def starting(self, prefix: str) -> list[int]:
        lo = bisect.bisect_left(self.texts, prefix)
        hi = bisect.bisect_left(self.texts, prefix + END, lo)
        return self.positions[lo:hi]


class NameIndex:
    """Notes (or sessions) by key, title and title word; see the module docstring.

    ``values[i]`` is what a completion offers for the i-th name (an id, a short session
    id), ``keys[i]`` what is matched first (the id, the whole session id), and
    ``dates[i]`` an ISO date for newest first ("" when unknown: last).
    """

    def __init__(
        self,
        values: Sequence[str],
        keys: Sequence[str],
        titles: Sequence[str],
        dates: Sequence[str],
    ) -> None:
        # Positions follow recency, so sorting positions sorts newest first.
        order = sorted(range(len(values)), key=values.__getitem__)
        order.sort(key=dates.__getitem__, reverse=True)
        self.values = [values[i] for i in order]
        lower_keys = [keys[i].lower() for i in order]
        lower_titles = [titles[i].lower() for i in order]
        positions = list(range(len(order)))
        self.by_key = _Sorted(lower_keys, positions)
        self.by_title = _Sorted(lower_titles, positions)
        self.exact: dict[str, int] = {}
        for position, key in enumerate(lower_keys):
            self.exact.setdefault(key, position)
        self.titles = lower_titles
        words: list[str] = []
        owners: list[int] = []
        for position, title in enumerate(lower_titles):
            later = title.split()[1:]  # the first word is the title's start
            words += later
            owners += [position] * len(later)
        self.by_word = _Sorted(words, owners)

    def lookup(self, prefix: str, limit: int) -> tuple[list[str], int]:
        p = prefix.strip().lower()
        exact = self.exact.get(p) if p else None
        groups: list[Iterable[int]] = [[] if exact is None else [exact]]
        groups += [self.by_key.starting(p), self.by_title.starting(p), self._word_start(p)]
        seen: set[int] = set()
        ranked: list[int] = []
        for group in groups:
            fresh = sorted(set(group) - seen)
            seen.update(fresh)
            ranked.extend(fresh)
        return [self.values[i] for i in ranked[:limit]], len(ranked)

    def _word_start(self, p: str) -> Iterable[int]:
        """Titles with a word (not the first) that starts with ``p``; when ``p`` holds
        several words, titles where they follow one another from such a word."""
        first = p.split(" ", 1)[0]
        found = self.by_word.starting(first)
        if first == p:
            return found
        return [i for i in set(found) if " " + p in self.titles[i]]


def count_lookup(counts: Counter[str], prefix: str, limit: int) -> tuple[list[str], int]:
    """Names (topics, projects) that start with ``prefix``, the most used first."""
    p = prefix.strip().lower()
    found = [name for name in counts if name.lower().startswith(p)]
    found.sort(key=lambda name: (-counts[name], name))
    return found[:limit], len(found)
