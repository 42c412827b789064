"""The facade both faces call: every call a vault answers, typed and declared once.

The CLI and the MCP server hold a ``Vault`` and format what it returns. Each call is
declared ``reads`` or ``writes`` (``calls.py``) with the core method that runs it
(``core/``), where the index is owned: ``vault.host`` runs it on this process's ``Core``
when this process owns the index (``runtime/local_host.py``), else sends it to the owner
process (``runtime/shared_host.py``), whose host runs the same core method. The core
decides when to open, build or refresh the index; ``index/`` owns the DuckDB file and
``files/`` reads and writes the vault's files.

What is not a call (background work, watching, who owns the index) is on ``vault.host``.
The faces get their vault from ``runtime.shared_host.connect``; tests, benchmarks and
scripts that share the index with nobody from ``runtime.local_host.open_local``. This
module imports only light modules: a command that talks to a running owner never loads
the core, the index layer or the model.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from markvault.calls import Host, declared_calls, reads, writes
from markvault.config import Settings
from markvault.errors import UsageError

if TYPE_CHECKING:
    from markvault.answers.status import Status


class Vault:
    """One vault: its notes, their index, and the calls both faces make.

    Each call is declared on one line, naming the core method that runs it (its
    signature and docstring are there): ``vault.search(request)`` goes to the host, which
    runs ``core.notes.search(request)`` here or in the process that owns the index."""

    def __init__(self, host: Host) -> None:
        self.host = host

    @property
    def settings(self) -> Settings:
        return self.host.settings

    def close(self) -> None:
        self.host.close()

    def __enter__(self) -> Vault:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def status(self) -> Status:
        """Index health (``index_status``), plus which process owns the index as this
        process sees it: the one call whose answer depends on who asks."""
        return {**self.index_status(), "owner": self.host.owner_info()}

    # ---- the index: core/lifecycle.py, core/git_sync.py ------------------------------
    reindex = writes(lambda core: core.keeper.reindex)
    refresh = writes(lambda core: core.keeper.refresh)
    sync = writes(lambda core: core.git.sync)
    index_status = reads(lambda core: core.keeper.status)
    pending = reads(lambda core: core.keeper.pending)

    # ---- reading: core/reading.py ----------------------------------------------------
    search = reads(lambda core: core.notes.search)
    search_batch = reads(lambda core: core.notes.search_batch)
    get = reads(lambda core: core.notes.get)
    get_many = reads(lambda core: core.notes.get_many)
    trash = reads(lambda core: core.notes.trash)
    topics = reads(lambda core: core.notes.topics)
    complete = reads(lambda core: core.notes.complete)
    topic_points = reads(lambda core: core.notes.topic_points)

    # ---- writing: core/writing.py ----------------------------------------------------
    new_note = writes(lambda core: core.writer.new_note)
    edit_note = writes(lambda core: core.writer.edit_note)
    move_note = writes(lambda core: core.writer.move_note)
    delete_note = writes(lambda core: core.writer.delete_note)
    restore_note = writes(lambda core: core.writer.restore_note)
    learn_knowledge = writes(lambda core: core.writer.learn_knowledge)
    store_document = writes(lambda core: core.writer.store_document)

    # ---- context: core/context.py ----------------------------------------------------
    recent = reads(lambda core: core.context.recent)
    timeline = reads(lambda core: core.context.timeline)
    related = reads(lambda core: core.context.related)
    link_path = reads(lambda core: core.context.link_path)
    vault_map = reads(lambda core: core.context.vault_map)

    # ---- sessions: core/session_import.py, core/session_notes.py ---------------------
    import_sessions = writes(lambda core: core.importer.import_sessions)
    list_sessions = reads(lambda core: core.sessions.list_sessions)
    session_projects = reads(lambda core: core.sessions.session_projects)
    read_session = reads(lambda core: core.sessions.read_session)
    save_session_summary = writes(lambda core: core.sessions.save_session_summary)


# The owner's dispatch table: every declared call, by name.
CALLS = declared_calls(Vault)


def parse_lines(value: str | None) -> tuple[int, int] | None:
    """ "A:B", "A:" (to the end), ":B" or "A" (one line) as a 1-based range, for both faces.

    Raises:
        UsageError: anything else.
    """
    if not value:
        return None
    start, sep, end = value.strip().partition(":")
    try:
        a = int(start) if start else 1
        b = int(end) if end else 10**9
    except ValueError:
        raise UsageError(
            f"Bad line range {value!r}.", 'Give lines as "A:B", "A:" or ":B", e.g. "10:40".'
        ) from None
    return (a, b) if sep else (a, a)
