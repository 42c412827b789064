"""PLAIN DATA: what ``status`` and ``index_status`` answer: the index's health."""

from __future__ import annotations

from typing import Any, NotRequired

from typing_extensions import TypedDict

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


class IndexPlace(TypedDict):
    """Where the index is, how large, and when and why a running owner rebuilt it."""

    vault: str
    index: str
    index_origin: str
    index_bytes: int
    index_rebuilt: dict[str, str] | None


class IndexStatus(IndexPlace, IndexStats):
    """``index_status``: the index's health: ``IndexPlace``, ``IndexStats``, then the rest."""

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
