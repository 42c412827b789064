"""PLAIN DATA: what the context calls answer: ``recent``, ``timeline``, ``related``,
``link_path`` and ``vault_map``."""

from __future__ import annotations

from typing import NotRequired

from typing_extensions import TypedDict

# ---- context ------------------------------------------------------------------------


class ListedNote(TypedDict):
    """A note (or a file that is not a note: no id, uri or hash) as listings show it."""

    id: str | None
    path: str
    title: str
    kind: str
    type: str | None
    project: str | None
    date: str | None
    uri: str | None
    hash: str | None


class RecentNote(ListedNote):
    """A note in ``recent``: what happened to it last in the time frame, and when."""

    event: str
    at: str


class RecentNotes(TypedDict):
    """``recent``: notes created or changed between ``since`` and ``until``."""

    since: str
    until: str
    total: int
    notes: list[RecentNote]


class TimelineNote(ListedNote):
    """A note in a timeline; a session brings the items of its summary."""

    decisions: NotRequired[list[str]]
    outcomes: NotRequired[list[str]]
    open_items: NotRequired[list[str]]


class TimelineAnchor(TypedDict):
    by: str  # "note", "query" or "time"
    value: str | None
    note: TimelineNote | None


class Timeline(TypedDict):
    """``timeline``: notes in time order before and after the anchor."""

    anchor: TimelineAnchor
    before: list[TimelineNote]
    after: list[TimelineNote]


class RelatedStep(TypedDict):
    """A note the link graph reached: how far, the last step's direction ("out" follows
    a link, "in" a backlink), and the note it came from."""

    path: str
    distance: int
    direction: str
    via: str


class LinkStep(TypedDict):
    """A step of a chain of links (``direction`` None at the start)."""

    path: str
    direction: str | None


class RelatedNote(ListedNote):
    """A note ``related`` found: how far, in which direction, reached from which note."""

    distance: int
    direction: str
    via: str


class Related(TypedDict):
    """``related``: notes and files within a few links of ``note``, nearest first."""

    note: ListedNote
    total: int
    related: list[RelatedNote]


class PathStep(ListedNote):
    """A step of a chain of links: "out" follows a link, "in" a backlink."""

    direction: str | None


# ``link_path``: the shortest chain of links; "from" is a Python keyword.
LinkPath = TypedDict(
    "LinkPath",
    {"from": str, "to": str, "connected": bool, "hops": int | None, "path": list[PathStep]},
)


class FolderCount(TypedDict):
    folder: str
    notes: int
    files: int
    links_inside: int


LinksBetween = TypedDict("LinksBetween", {"from": str, "to": str, "links": int})


class MostLinked(TypedDict):
    path: str
    backlinks: int


class MostLinking(TypedDict):
    path: str
    links: int


class UnresolvedLink(TypedDict):
    source: str
    target: str
    line: int


class FolderLinks(TypedDict):
    """The link graph's folders and the links between them."""

    folders: list[FolderCount]
    links_between: list[LinksBetween]


class LinkMetrics(TypedDict):
    """The link graph's counts, most linked notes and files, and orphans."""

    notes: int
    links: int
    links_to_files: int
    most_linked: list[MostLinked]
    most_linking: list[MostLinking]
    orphans: list[str]
    orphan_count: int
    files: int
    most_linked_files: list[MostLinked]
    orphan_files: list[str]
    orphan_file_count: int


class VaultMap(FolderLinks, LinkMetrics):
    """``vault_map``: ``FolderLinks``, then ``LinkMetrics``, then the broken links."""

    broken_links: list[UnresolvedLink]
    broken_link_count: int
