"""Link resolution as Obsidian does it.

A wiki link ``[[target#heading|alias]]`` or embed ``![[target#heading|size]]`` names a
file by the shortest part of its path that is unique, so it resolves, case-insensitively:

1. ``""`` (``[[#Heading]]``): the linking note itself;
2. ``/Folder/Note`` from the vault root, ``./Note`` and ``../Note`` from the linking
   note's folder, as exact paths;
3. anything else by file name anywhere in the vault, the part before the name (if any)
   matching the end of the folder path (``Note``, ``Sub/Note``, ``Folder/Sub/Note``);
4. by an alias in a note's frontmatter (markvault's addition; a file always wins).

A target without an extension names a note (``Note`` is ``Note.md``); a target with one
names that file, note or attachment (``Engelbart.jpg``, ``Map.canvas``, ``Paper.pdf``),
and ``v1.2`` that is no file is still the note ``v1.2.md``. Several files with the
same name: the one in the linking note's folder, else the one with the shortest path
(fewest folders, then alphabetically), as Obsidian picks; a name that exists is never
unresolved. ``#heading`` and ``|size`` suffixes are split off by the parser.

Markdown links ``[text](path)`` and images ``![alt](path)`` were made relative to the
linking note's folder by the parser and resolve as that path; failing that, as
Obsidian does, by what was written (``![](picture.png)`` finds ``Attachments/picture.png``,
the form Obsidian writes when links use the shortest path).
"""

from __future__ import annotations

import posixpath
import unicodedata
from collections.abc import Iterable

NOTE_SUFFIX = ".md"


def _fold(path: str) -> str:
    """The form paths are compared in: NFC, case-folded, no surrounding slashes."""
    return unicodedata.normalize("NFC", path.strip().strip("/")).casefold()


def link_name(target: str) -> str:
    """The folded file name a link's target ends with (``Sub/Note#x`` -> ``note``): a link
    can only change where it points when a file or alias of that name comes or goes."""
    return _fold(target).rpartition("/")[2]  # posixpath.basename, less its calls


def names_of(path: str) -> set[str]:
    """The ``link_name`` values of links that may name the file at ``path``: with its
    extension, and without it for a note (``[[Note]]`` is ``Note.md``)."""
    name = posixpath.basename(_fold(path))
    return {name, name[: -len(NOTE_SUFFIX)]} if name.endswith(NOTE_SUFFIX) else {name}


class LinkResolver:
    """Resolves links among ``notes`` ((path, aliases) pairs) and ``attachments`` (paths
    of every other file in the vault), all vault-relative POSIX paths."""

    def __init__(
        self, notes: Iterable[tuple[str, list[str]]], attachments: Iterable[str] = ()
    ) -> None:
        self.by_path: dict[str, str] = {}  # folded full path (with extension) -> path
        self.by_name: dict[str, list[str]] = {}  # folded file name (with extension) -> paths
        self.by_alias: dict[str, list[str]] = {}
        self.attachments: set[str] = set()
        for path, aliases in notes:
            self._add(path)
            for alias in aliases:
                self.by_alias.setdefault(_fold(alias), []).append(path)
        for path in attachments:
            self._add(path)
            self.attachments.add(path)

    @classmethod
    def for_links(
        cls,
        links: Iterable[tuple[str, str, str]],
        notes: Iterable[tuple[str, list[str]]],
        attachments: Iterable[str] = (),
    ) -> LinkResolver:
        """A resolver that resolves ``links`` ((source, target, style)) as one over all of
        ``notes`` and ``attachments`` does, holding only the files those links could name
        (a one-note edit resolves a few links; indexing a whole vault's files for them
        cost more than the rest of its link step). The links are first resolved against
        empty tables that record every key looked up: a resolver looks up the same keys
        and more when it finds nothing, so the files under those keys are all it needs."""
        probe = cls(())
        paths, names, aliases = _Lookups(), _Lookups(), _Lookups()
        probe.by_path, probe.by_name, probe.by_alias = paths, names, aliases
        for source, target, style in links:
            probe.resolve(source, target, style)

        def named(path: str) -> bool:
            folded = _fold(path)
            return folded in paths.seen or folded.rpartition("/")[2] in names.seen

        kept = [
            (path, aliases_of)
            for path, aliases_of in notes
            if named(path) or any(_fold(a) in aliases.seen for a in aliases_of)
        ]
        return cls(kept, [path for path in attachments if named(path)])

    def _add(self, path: str) -> None:
        folded = _fold(path)
        self.by_path[folded] = path
        self.by_name.setdefault(posixpath.basename(folded), []).append(path)

    def is_attachment(self, path: str) -> bool:
        """Whether a resolved path is a file other than a note (an image, a PDF, ...)."""
        return path in self.attachments

    def resolve(self, source: str, target: str, style: str) -> str | None:
        """The vault path ``target`` (as written in ``source``) points at, or None."""
        raw = target.strip()
        if not raw:
            return source  # [[#Heading]] points into the same note
        key = _fold(raw)
        folder = _fold(posixpath.dirname(source))
        if style == "markdown":
            if folder and not key.startswith(folder + "/"):
                return self._exact(key)  # written with "../" or from the root: a path only
            written = key[len(folder) + 1 :] if folder else key
            return self._exact(key) or self._by_suffix(written, folder)
        if raw.startswith("/"):
            return self._exact(key)  # from the vault root only
        if raw.startswith(("./", "../")):
            return self._exact(posixpath.normpath(posixpath.join(folder, key)))
        return self._by_suffix(key, folder) or self._pick(self.by_alias.get(key, []), folder)

    def _forms(self, key: str) -> tuple[str, str]:
        """The paths a target may mean, in order: without an extension it names a note."""
        with_md = key + NOTE_SUFFIX
        return (with_md, key) if "." not in posixpath.basename(key) else (key, with_md)

    def _exact(self, key: str) -> str | None:
        for form in self._forms(key):
            if form in self.by_path:
                return self.by_path[form]
        return None

    def _by_suffix(self, key: str, folder: str) -> str | None:
        """A file whose path is the target or ends with "/" and the target."""
        for form in self._forms(key):
            tails = [
                p
                for p in self.by_name.get(posixpath.basename(form), [])
                if (folded := _fold(p)) == form or folded.endswith("/" + form)
            ]
            found = self._pick(tails, folder)
            if found:
                return found
        return None

    @staticmethod
    def _pick(candidates: list[str], folder: str) -> str | None:
        """One of several files of the same name: the linking note's folder first, then
        the shortest path (fewest folders, then alphabetically)."""
        if len(candidates) <= 1:
            return candidates[0] if candidates else None
        near = [c for c in candidates if _fold(posixpath.dirname(c)) == folder]
        if near:
            return near[0]
        return min(candidates, key=lambda c: (c.count("/"), _fold(c), c))


class _Lookups(dict):
    """An empty table that records the keys looked up in it (``LinkResolver.for_links``)."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: set[str] = set()

    def get(self, key: str, default: object = None) -> object:
        self.seen.add(key)
        return default

    def __contains__(self, key: object) -> bool:
        self.seen.add(str(key))
        return False
