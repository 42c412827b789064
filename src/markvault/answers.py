"""PLAIN DATA: what each facade call answers, as JSON-ready typed dicts.

Each answer is declared once here; the core builds it, the facade returns it, and mypy
checks both (every key, every value's type) and the faces' use of every key. They are
dicts at run time: the CLI's ``--json`` and the MCP tools' structured content print
them as they are, and the owner's socket passes them as JSON.

Rules kept by every type here (a tool that returns one of these has it as its MCP
``outputSchema``; the SDK validates the answer against it and writes the structured
content from what it validated):
  * keys are declared in the order the core inserts them: the SDK writes them in the
    declared order, and leaves out any key not declared (mypy refuses such a key where
    the core builds the answer as a literal of its type);
  * a key present only sometimes is ``NotRequired``; a value that may be null says so;
  * a number that can be a whole number is ``int`` (``float`` would make the SDK write
    ``3.0`` for ``3``);
  * a shape that is one of several answers of a call is ``@final``, so that a face tells
    them apart by a key (``"matches" in answer``).

``typing_extensions.TypedDict``: pydantic (in the MCP SDK) reads nested TypedDicts only
from ``typing_extensions`` below Python 3.12.
"""

from __future__ import annotations

from typing import Any, Literal, NotRequired, final

from typing_extensions import TypedDict

# ---- credentials (every write) ------------------------------------------------------


class RedactedFinding(TypedDict):
    """Where a credential was found (and redacted), never what it was."""

    kind: str
    rule: str
    line: int
    column: int
    where: str
    fingerprint: str


class WriteWarnings(TypedDict, total=False):
    """What a write's answer says when its file landed but the index did not follow."""

    warnings: list[str]


class CredentialReport(TypedDict, total=False):
    """What a write carries when the credential gate redacted something (else nothing).
    Each write's answer ends with these two keys (declared in each: a base class's keys
    would come first)."""

    credentials: str
    redacted: list[RedactedFinding]


# ---- status -------------------------------------------------------------------------


class PendingCounts(TypedDict):
    """Files new, changed or deleted since the last sync."""

    new: int
    changed: int
    deleted: int


class IndexStats(TypedDict):
    """What the index holds: counts, and notes by kind, type, topic and project."""

    notes: int
    chunks: int
    links: int
    links_to_notes: int
    links_to_files: int
    unresolved_links: int
    files: int
    skipped_files: int
    by_kind: dict[str, int]
    by_type: dict[str, int]
    by_topic: dict[str, int]
    by_project: dict[str, int]


class VectorCounts(TypedDict):
    embedded: int
    total: int
    ready: bool


class NoteProblem(TypedDict):
    path: str
    problem: str


class WatcherStatus(TypedDict):
    """The watcher's state (``indexing/watcher.py``)."""

    running: bool
    ready: bool
    mode: str
    reason: str
    warnings: list[str]
    poll_interval_s: float | None
    reconcile_interval_s: float | None
    watched_folders: int | None
    git_dir: str | None
    batches: int
    errors: int
    last_error: str | None
    last_batch_at: float | None  # time.time() of the last batch
    last_batch_full: bool
    pending_paths: int
    pending_reasons: list[str]


class AutoSyncLast(TypedDict):
    """How the last automatic sync went: ``message`` when it failed, else its counts."""

    ok: bool
    message: NotRequired[str]
    conflicts: NotRequired[list[str]]
    committed: NotRequired[int]
    pulled: NotRequired[int]
    pushed: NotRequired[int]


class AutoSyncRunning(TypedDict):
    interval_s: float
    quiet_s: float
    runs: int
    last_at: str | None
    last: AutoSyncLast | None
    problem: str | None


class AutoSyncStatus(TypedDict):
    on: bool
    running: AutoSyncRunning | None  # None where no owner runs it


class OwnerInfo(TypedDict):
    """Which process owns the index, as the asking process sees it."""

    owner_pid: int | None
    this_process_owns: bool
    clients: int | None


class GitOperation(TypedDict):
    """A merge or rebase left open in the vault's repository (``git/merge_state.py``)."""

    operation: str
    conflicts: list[str]
    hint: str


class AttachmentProblem(TypedDict):
    path: str
    status: str
    reason: str


class AttachmentCounts(TypedDict):
    """Attachments by what their extraction gave (``index/extracts.py``)."""

    total: int
    extracted: int
    without_text: int
    failed: int
    by_type: dict[str, int]
    not_read: list[AttachmentProblem]


class IndexStatus(TypedDict):
    """``index_status``: the index's health (the keys of ``IndexStats`` in the middle)."""

    vault: str
    index: str
    index_origin: str
    index_bytes: int
    index_rebuilt: dict[str, str] | None  # when and why a running owner rebuilt it
    notes: int
    chunks: int
    links: int
    links_to_notes: int
    links_to_files: int
    unresolved_links: int
    files: int
    skipped_files: int
    by_kind: dict[str, int]
    by_type: dict[str, int]
    by_topic: dict[str, int]
    by_project: dict[str, int]
    model: str
    dimension: int | None
    vectors: VectorCounts
    encoder: dict[str, Any]  # what runs the model here, and why (embed/encoder_choice.py)
    fingerprint: str
    last_sync: str | None
    pending: PendingCounts
    problems: list[NoteProblem]
    git_operation: GitOperation | None
    attachments: AttachmentCounts
    notices: list[str]
    watcher: WatcherStatus | None
    autosync: AutoSyncStatus


class Status(IndexStatus):
    """``status``: ``index_status`` and who owns the index."""

    owner: OwnerInfo


# ---- reading ------------------------------------------------------------------------


class ChunkEntry(TypedDict):
    """A chunk as a note's listing shows it."""

    chunk_id: int
    heading_path: list[str]
    lines: list[int]
    uri: str


class OutLink(TypedDict):
    """A link written in a note."""

    target: str
    heading: str | None
    block: str | None
    alias: str | None
    embed: bool
    style: str
    line: int
    target_path: str | None


class Backlink(TypedDict):
    """A link to a note from another."""

    source: str
    line: int
    heading: str | None
    block: str | None


class LinkCounts(TypedDict):
    links: int
    backlinks: int


@final  # so that a test for one of its keys tells it apart (`in`)
class NoteView(TypedDict):
    """``get`` of a note: a page of its text, with what the index knows of it."""

    id: str
    path: str
    title: str
    kind: str
    type: str | None
    tags: list[str]
    metadata: dict[str, Any]
    hash: str
    stale: bool
    uri: str
    lines: list[int]
    total_lines: int
    text: str
    next_lines: str | None
    chunks: NotRequired[list[ChunkEntry]]  # always here; read_session takes them out
    links: list[OutLink]
    backlinks: list[Backlink]
    link_counts: LinkCounts
    problems: list[str]
    warning: NotRequired[str]  # a line longer than a page was cut


class AttachmentExtraction(TypedDict):
    status: str
    reason: str | None
    format: str | None


class AttachmentChunk(TypedDict):
    chunk_id: int
    heading_path: list[str]
    page: int
    uri: str


@final  # so that a test for one of its keys tells it apart (`in`)
class AttachmentPage(TypedDict):
    """``get`` of an attachment (PDF, Office, ...): its extracted text, a page range at a
    time; ``lines`` count pages, so a client that pages notes pages these alike."""

    id: str
    path: str
    title: str
    kind: str
    type: str | None
    metadata: dict[str, Any]
    hash: str
    uri: str
    extraction: AttachmentExtraction
    pages: list[int]
    total_pages: int
    lines: list[int]
    text: str
    next_pages: str | None
    chunks: list[AttachmentChunk]
    backlinks: list[Backlink]
    problems: list[str]
    next_lines: str | None
    warning: NotRequired[str]  # a page longer than a page of text was cut


@final  # so that a test for one of its keys tells it apart (`in`)
class ChunkView(TypedDict):
    """``get`` of a chunk (``#12``, ``vault://chunk/12``)."""

    chunk_id: int
    uri: str
    id: str
    path: str
    title: str
    kind: str
    heading_path: list[str]
    lines: list[int]
    text: str
    hash: str
    note_uri: str
    page: NotRequired[int]  # a chunk of an attachment: its page


@final  # so that a test for one of its keys tells it apart (`in`)
class NoteBrief(TypedDict):
    """A note ``get_many`` left without text: over the size budget."""

    id: str
    path: str
    title: str
    uri: str
    hash: str
    text: None
    omitted: str


@final  # so that a test for one of its keys tells it apart (`in`)
class ChunkOmitted(TypedDict):
    """A chunk ``get_many`` left without text: over the size budget."""

    ref: str
    text: None
    omitted: str


@final  # so that a test for one of its keys tells it apart (`in`)
class RefError(TypedDict):
    """A ref ``get_many`` could not read, and why."""

    ref: str
    error: str


class NotesPage(TypedDict):
    """``get_many`` and ``topic_points``: several notes within one budget."""

    notes: list[NoteView | ChunkView | AttachmentPage | NoteBrief | ChunkOmitted | RefError]
    count: int
    budget_left: int


# ---- writing ------------------------------------------------------------------------


class NoteCreated(TypedDict):
    """``new_note``, ``learn_knowledge``, ``store_document``: the note just written."""

    path: str
    id: str
    uri: str
    hash: str
    title: str
    # store_document of an attachment kept as it is (PDF, Office, ...): what its text gave
    format: NotRequired[str]
    extraction: NotRequired[str]
    pages: NotRequired[int]
    problem: NotRequired[str | None]
    credentials: NotRequired[str]  # what the credential gate redacted (CredentialReport)
    redacted: NotRequired[list[RedactedFinding]]
    warnings: NotRequired[list[str]]  # the file landed; what became of the index after it


class NoteEdited(TypedDict):
    """``edit_note``: the note's new hash (its old one when nothing changed)."""

    path: str
    hash: str
    changed: bool
    uri: str
    credentials: NotRequired[str]  # what the credential gate redacted (CredentialReport)
    redacted: NotRequired[list[RedactedFinding]]
    warnings: NotRequired[list[str]]  # the file landed; what became of the index after it


class BrokenLink(TypedDict):
    """A link elsewhere that a move left pointing nowhere."""

    source: str
    line: int
    target: str


# ``move_note``: where the note is now (``moved`` False: it was there already, and only
# path, moved, hash and uri are given). Written as a call: "from" is a Python keyword.
NoteMoved = TypedDict(
    "NoteMoved",
    {
        "path": str,
        "from": NotRequired[str],
        "moved": bool,
        "id": NotRequired[str],
        "uri": str,
        "hash": str,
        "broken_links": NotRequired[list[BrokenLink]],
        "credentials": NotRequired[str],
        "redacted": NotRequired[list[RedactedFinding]],
        "warnings": NotRequired[list[str]],  # the file moved; what became of the index
    },
)


class NoteDeleted(TypedDict):
    """``delete_note``: where the note went in the trash, and how to bring it back."""

    path: str
    trash_path: str
    restore: str
    warnings: NotRequired[list[str]]  # the file moved; what became of the index after it


class NoteRestored(TypedDict):
    """``restore_note``: the note back from the trash."""

    path: str
    id: str
    uri: str
    hash: str | None
    credentials: NotRequired[str]  # what the credential gate redacted (CredentialReport)
    redacted: NotRequired[list[RedactedFinding]]
    warnings: NotRequired[list[str]]  # the file landed; what became of the index after it


class TrashItem(TypedDict):
    """A note in the trash."""

    trash_path: str
    restores_to: str
    deleted: str
    bytes: int


class TopicCount(TypedDict):
    """A topic of knowledge points and documents."""

    topic: str
    knowledge: int
    documents: int
    last_changed: str | None


class Completions(TypedDict):
    """``complete``: values that start with the prefix, best first, and how many match."""

    values: list[str]
    total: int


class TopicList(TypedDict):
    """The MCP tool ``list_topics``: ``topics`` in an object."""

    topics: list[TopicCount]


# ---- search -------------------------------------------------------------------------


class HitJSON(TypedDict):
    """A search hit as ``--json`` and deep/full search write it (``types.Hit``)."""

    id: str
    path: str
    title: str
    kind: str
    type: str | None
    chunk_id: int
    heading_path: list[str]
    lines: list[int]
    score: float
    ranks: dict[str, int]
    scores: dict[str, float]
    snippet: str
    hash: str
    uri: str
    more_chunks: int
    text: NotRequired[str]  # with full text only
    page: NotRequired[int]  # a hit in an attachment: its page (slide, sheet)


class SearchJSON(TypedDict):
    """A search's answer as JSON (``types.SearchResult``); ``id`` in a batch only."""

    id: NotRequired[str]
    query: str
    mode: str
    hits: list[HitJSON]
    total: int
    counts: dict[str, int]
    timings_ms: dict[str, float]
    warnings: list[str]
    shortcut: NotRequired[bool]  # deep search only
    relaxed: NotRequired[bool]  # phrases and required words matched nothing: the words ranked
    time: NotRequired[dict[str, Any]]  # the time window read from the query's words


class SearchError(TypedDict):
    """A batch's query that could not be searched, and why."""

    id: NotRequired[str]
    query: str
    error: str


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


class VaultMap(TypedDict):
    """``vault_map``: ``FolderLinks``, then ``LinkMetrics``, then the broken links."""

    folders: list[FolderCount]
    links_between: list[LinksBetween]
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
    broken_links: list[UnresolvedLink]
    broken_link_count: int


# ---- sessions -----------------------------------------------------------------------


class SessionEntry(TypedDict):
    """A session note as ``list_sessions`` shows it."""

    session_id: str | None
    id: str
    path: str
    title: str
    project: str | None
    cwd: str | None
    git_branch: str | None
    started: str | None
    ended: str | None
    turns: int | None
    has_summary: bool
    tags: list[str]
    uri: str
    hash: str


class SessionList(TypedDict):
    """``list_sessions``: a page of sessions, newest first."""

    total: int
    offset: int
    next_offset: int | None
    sessions: list[SessionEntry]


class ProjectEntry(TypedDict):
    """A project: its sessions (summarised or not), other notes, folders, last activity."""

    project: str
    sessions: int
    notes: int
    summarized: int
    last_active: str | None
    cwds: list[str]


class SessionProjects(TypedDict):
    """``session_projects``: projects, most recently active first."""

    projects: list[ProjectEntry]


class SummaryJSON(TypedDict):
    """A session's structured summary (``SessionSummary.to_dict``)."""

    overview: str
    decisions: list[str]
    outcomes: list[str]
    open_items: list[str]
    tags: list[str]


class SessionAbout(TypedDict):
    session_id: str | None
    project: str | None
    cwd: str | None
    started: str | None
    ended: str | None
    turns: int | None


class SessionFacts(TypedDict):
    """What ``read_session`` adds to both its answers."""

    session: SessionAbout
    has_summary: bool
    summary: SummaryJSON | None


@final  # so that a test for one of its keys tells it apart (`in`)
class SessionPage(TypedDict):
    """``read_session`` without a query: a page of the note as ``get`` gives it (without
    its chunks: a transcript has hundreds), and the session's facts."""

    id: str
    path: str
    title: str
    kind: str
    type: str | None
    tags: list[str]
    metadata: dict[str, Any]
    hash: str
    stale: bool
    uri: str
    lines: list[int]
    total_lines: int
    text: str
    next_lines: str | None
    chunks: NotRequired[list[ChunkEntry]]  # taken out (NoteView has them)
    links: list[OutLink]
    backlinks: list[Backlink]
    link_counts: LinkCounts
    problems: list[str]
    warning: NotRequired[str]
    session: SessionAbout
    has_summary: bool
    summary: SummaryJSON | None


class TranscriptMatch(TypedDict):
    """A transcript line holding the query's words."""

    line: int
    text: str
    under: str | None  # the turn it is under, e.g. "09:15 User"
    read: str  # a line range to read next


@final  # so that a test for one of its keys tells it apart (`in`)
class SessionMatches(TypedDict):
    """``read_session`` with a query: the lines that hold its words, and the facts."""

    id: str
    path: str
    title: str
    uri: str
    hash: str
    total_lines: int
    query: str
    match: str
    total_matches: int
    matches: list[TranscriptMatch]
    session: SessionAbout
    has_summary: bool
    summary: SummaryJSON | None


class SummarySaved(TypedDict):
    """``save_session_summary``: the note's new hash and the summary as saved."""

    path: str
    id: str
    uri: str
    hash: str
    changed: bool
    summary: SummaryJSON | None
    credentials: NotRequired[str]  # what the credential gate redacted (CredentialReport)
    redacted: NotRequired[list[RedactedFinding]]
    warnings: NotRequired[list[str]]  # the file landed; what became of the index after it


# ---- sync ---------------------------------------------------------------------------

# A file in a sync's commit: "from" is the old path of a move.
SyncChange = TypedDict(
    "SyncChange",
    {
        "status": Literal["added", "edited", "moved", "deleted"],
        "path": str,
        "from": str | None,
        "note": bool,
    },
)


class IndexReport(TypedDict):
    """What a sync of the index did (``types.ReindexReport``)."""

    notes: int
    chunks: int
    added: int
    updated: int
    renamed: int
    removed: int
    unchanged: int
    embedded: int
    reused: int
    errors: list[dict[str, str]]
    warnings: list[dict[str, str]]
    notices: list[str]
    vectors: bool
    seconds: float


class SyncJSON(TypedDict):
    """A git sync's report (``git.sync.SyncReport``)."""

    vault: str
    branch: str
    upstream: str
    dry_run: bool
    finished: str | None
    commit: str | None
    message: str | None
    changes: list[SyncChange]
    pulled: int
    pushed: int
    ahead: int
    behind: int
    changed_paths: list[str]
    conflicts: list[str]
    notices: list[str]


class SyncAnswer(SyncJSON):
    """``sync``: the git report, and what the index took in (None: nothing to index)."""

    index: IndexReport | None
