"""The calling side of a shared index: run here as its owner, or ask the owner.

A ``SharedHost`` is the host (``calls.Host``) of the vault the faces use. When this
process holds the owner lock it runs calls on its own ``LocalHost`` and serves the
others (``owner.py``); otherwise it sends each call over the owner's socket
(``client.py``). When the owner goes away it reconnects to the next one, or becomes
the owner itself, and a server that is not the owner waits on the lock to take over
at once. A call the owner declined because it was closing is sent again, whatever it
is; after an owner died mid-call only a read is (a write may have been done).

Nothing here imports the index layer: that happens only if this process becomes the
owner.
"""

from __future__ import annotations

import json
import threading
import time
from typing import TYPE_CHECKING, Any

from . import errors
from .calls import Call, SyncReport
from .client import Declined, OwnerClient
from .config import Settings
from .owner import IndexOwner, OwnerLock, lock_path, socket_path
from .vault import Vault

if TYPE_CHECKING:
    from .core import Core
    from .host import LocalHost

LIVE_RETRIES = 5  # reconnections to find a live owner before a write
CONNECT_WAIT_SECONDS = 60.0  # an owner may be building a large index before it answers


def connect(settings: Settings, *, must_own: bool = False) -> Vault:
    """The vault as the faces use it: this process owns its index, or asks the process
    that does, and takes over when that one stops. ``must_own``: wait until this process
    owns the index (`vault watch`)."""
    return Vault(SharedHost(settings, must_own=must_own))


class OwnerLostError(errors.IndexBusyError):
    """The owner went away in the middle of a write."""


class SharedHost:
    """Runs calls at whichever process owns the index (see the module's docstring)."""

    def __init__(
        self,
        settings: Settings,
        *,
        connect_wait: float = CONNECT_WAIT_SECONDS,
        must_own: bool = False,
    ) -> None:
        """``must_own``: wait until this process owns the index (`vault watch`)."""
        self._settings = settings
        self._background = False
        self._watch = False
        self._poll: bool | None = None
        self._must_own = must_own
        self._on_report: SyncReport | None = None
        self._state = threading.RLock()  # ownership changes: a call's failover, standby
        self._standby: threading.Thread | None = None
        self._closing = False
        self._connect_wait = connect_wait
        self._lock = OwnerLock(lock_path(settings))
        self._owner: IndexOwner | None = None
        self._client: OwnerClient | None = None
        self._model_wait: float | None = None
        self._attach()

    @property
    def settings(self) -> Settings:
        return self._settings

    @property
    def model_wait(self) -> float | None:
        """Applies where the model lives (the owner)."""
        return self._model_wait

    @model_wait.setter
    def model_wait(self, value: float | None) -> None:
        self._model_wait = value
        if self._owner is not None:
            self._owner.host.model_wait = value

    @property
    def local(self) -> LocalHost | None:
        """The host that runs calls in this process, when it owns the index."""
        return self._owner.host if self._owner else None

    @property
    def runs_here(self) -> bool:
        return self._owner is not None

    def core(self) -> Core:
        if self._owner is None:
            raise errors.UsageError("Only the process that owns the index has its core.")
        return self._owner.host.core()

    def owner_info(self) -> dict[str, Any]:
        if self._owner is not None:
            return self._owner.host.owner_info()
        return {"owner_pid": self._lock.holder(), "this_process_owns": False, "clients": None}

    # ---- who owns the index ----------------------------------------------------------

    def _attach(self) -> None:
        """Connect to the owner, or become it; wait while an owner is starting.

        The state lock is held only for each attempt, never across the wait: this
        process's standby thread may be the one about to become the owner.
        """
        if self._must_own:
            self._lock.acquire_blocking()
            with self._state:
                self._become_owner()
            return
        deadline = time.monotonic() + self._connect_wait
        delay = 0.01
        while True:
            with self._state:
                if self._owner is not None:
                    return  # the standby thread took over meanwhile
                self._client = OwnerClient.connect(
                    self._lock.socket() or socket_path(self._settings)
                )
                if self._client is not None:
                    if self._background:
                        self._start_standby()
                    return
                if self._lock.try_acquire():
                    self._become_owner()
                    return
            if time.monotonic() > deadline:
                pid = self._lock.holder()
                raise errors.IndexBusyError(
                    f"The index is held by process {pid or '?'}, which does not answer.",
                    "Wait for it to finish, or stop it; its lock goes with it.",
                )
            time.sleep(delay)  # an owner is between taking the lock and listening
            delay = min(delay * 2, 0.2)

    def _become_owner(self) -> None:
        from .core import Core  # the index layer: only the owner loads it
        from .host import LocalHost

        host = LocalHost(Core(self._settings), owner=True)
        host.model_wait = self._model_wait
        self._owner = IndexOwner(host, self._lock)
        self._owner.serve()
        self._start_owner_work()

    def start_background(self, *, watch: bool = True, poll: bool | None = None) -> None:
        """For long-running servers: wherever this process owns the index (now, or
        after taking over from a dead owner), load the model in the background, embed
        what has no vector yet and watch the files."""
        self._background, self._watch, self._poll = True, watch, poll
        self._start_owner_work()
        self._start_standby()

    def _start_standby(self) -> None:
        """A server that is not the owner waits on the owner's lock in a thread, to take
        over - watcher and model included - the moment the owner exits or dies, not only
        at its next call."""
        if self._standby is not None or self._owner is not None or self._must_own:
            return
        lock = OwnerLock(lock_path(self._settings))

        def wait_and_take_over() -> None:
            lock.acquire_blocking()
            with self._state:
                self._standby = None
                if self._closing or self._owner is not None:
                    lock.release()
                    return
                self._lock = lock
                self._become_owner()

        self._standby = threading.Thread(
            target=wait_and_take_over, name="markvault-standby", daemon=True
        )
        self._standby.start()

    def on_sync(self, report: SyncReport) -> None:
        self._on_report = report

    def _start_owner_work(self) -> None:
        if self._owner is None or not self._background:
            return
        if self._on_report is not None:
            self._owner.host.on_sync(self._on_report)
        self._owner.host.start_background(watch=self._watch, poll=self._poll)

    def watch_forever(self, stop: threading.Event, poll: bool | None = None) -> None:
        """`vault watch`: as the owner, keep the index fresh until ``stop`` is set."""
        assert self._owner is not None, "watching needs ownership (must_own=True)"
        self.start_background(watch=True, poll=poll)
        while not stop.wait(0.5):  # short waits keep Ctrl-C responsive
            pass

    def _disconnect(self) -> None:
        if self._client is not None:
            self._client.close()
        self._client = None

    def close(self) -> None:
        with self._state:
            self._closing = True
            self._disconnect()
            if self._owner is not None:
                self._owner.close()
                self._owner = None

    # ---- calls -----------------------------------------------------------------------

    def call(self, call: Call, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        """Run a declared call here (owner) or at the owner. A write goes only to an
        owner that just answered a ping, so it fails only when the owner dies during
        that very write."""
        deadline = time.monotonic() + self._connect_wait
        while True:
            if self._owner is not None:
                return self._owner.host.call(call, args, kwargs)
            try:
                if call.writes:
                    self._ensure_live()
                    if self._owner is not None:
                        continue  # this process took over: run it here
                if self._client is None:
                    raise ConnectionError("not connected")
                return self._client.send(call.name, args, kwargs)
            except Declined:
                self._disconnect()
                self._attach()
            except (OSError, EOFError, json.JSONDecodeError):
                self._disconnect()
                self._attach()
                if call.writes:
                    raise OwnerLostError(
                        "The process that owned the index stopped during this change.",
                        "Read the note again to see whether the change was made, then retry.",
                    ) from None
            if time.monotonic() > deadline:
                raise errors.IndexBusyError(
                    "The index changed hands too often to answer.", "Retry in a moment."
                )

    def _ensure_live(self) -> None:
        """Reconnect until an owner answers a ping (a dying owner's socket can accept a
        connection and then reset it)."""
        for _ in range(LIVE_RETRIES + 1):
            try:
                if self._client is not None and self._client.ping():
                    return
            except (OSError, EOFError, json.JSONDecodeError):
                pass
            self._disconnect()
            self._attach()
            if self._owner is not None:
                return
