"""Automatic `vault sync` in the process that owns the index (`vault mcp`, `vault watch`).

Off by default; ``[sync] auto = true`` in ``.markvault.toml`` turns it on. It syncs once
at start (to bring in what the other machines pushed meanwhile), ``quiet`` seconds after
the last change to the vault (a write through markvault, or a file the watcher saw
change), and every ``interval`` seconds anyway. Each sync is an ordinary call of the
facade (``Vault.sync``), so it takes its turn with every other call: it never runs
while a markvault write is in flight, and the vault's write lock keeps other processes'
writes out while git changes the files.

A conflict stops nothing but itself: the notes are named in the log, markvault refuses
writes to the vault until a person resolves them, and the next sync finishes the merge.
A vault with no repository or no upstream is said once, then left alone.
"""

from __future__ import annotations

import datetime as dt
import sys
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Union

from markvault.config import SyncSettings
from markvault.errors import ConfigError, MarkvaultError

if TYPE_CHECKING:
    from markvault.answers.status import AutoSyncLast, AutoSyncRunning
    from markvault.answers.sync import SyncAnswer

RunSync = Callable[[], "SyncAnswer"]
Result = Union["SyncAnswer", MarkvaultError]  # a sync's report, or why it failed
KEPT_RESULTS = 20


class AutoSync:
    """Runs ``run_sync`` when due (see the module's docstring), on a daemon thread."""

    def __init__(
        self,
        run_sync: RunSync,
        settings: SyncSettings,
        log: Callable[[str], None] | None = None,
    ) -> None:
        self._run_sync = run_sync
        self.settings = settings
        self._log = log or (lambda line: print(f"markvault: {line}", file=sys.stderr))
        self._changed_at: float | None = None
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._last_problem = ""
        self.runs = 0  # syncs attempted
        self._results: list[Result] = []  # the last few, for ``wait_for``
        self._last_at: str | None = None  # when the last one ended (ISO, UTC)
        self._done = threading.Condition()

    def start(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(
                target=self._loop, name="markvault-autosync", daemon=True
            )
            self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._wake.set()

    def changed(self) -> None:
        """The vault changed: sync once it has been quiet for a while."""
        self._changed_at = time.monotonic()
        self._wake.set()

    def _loop(self) -> None:
        next_periodic = time.monotonic()  # a first sync at start
        while not self._stop.is_set():
            now = time.monotonic()
            changed_at = self._changed_at
            quiet_until = None if changed_at is None else changed_at + self.settings.quiet
            if now >= next_periodic or (quiet_until is not None and now >= quiet_until):
                if changed_at is not None and self._changed_at == changed_at:
                    self._changed_at = None  # a change during the sync counts again
                if not self._run_once():
                    return
                next_periodic = time.monotonic() + self.settings.interval
                continue
            due = min(next_periodic, quiet_until) if quiet_until is not None else next_periodic
            self._wake.wait(max(0.0, due - now))
            self._wake.clear()

    def _run_once(self) -> bool:
        """One sync; False when syncing cannot work here (no repository, no upstream)."""
        self.runs += 1
        try:
            report = self._run_sync()
        except ConfigError as exc:
            self._log(f"automatic sync is off for this run: {exc}")
            self._report(exc)
            return False
        except MarkvaultError as exc:
            self._problem(f"automatic sync failed: {exc}")
            self._report(exc)
            return True
        except Exception as exc:  # a bug must not end the server; the next run retries
            self._problem(f"automatic sync failed: {type(exc).__name__}: {exc}")
            return True
        if report["conflicts"]:
            self._problem(
                "automatic sync stopped on a conflict in "
                f"{', '.join(report['conflicts'])}: keep the text you want in each, remove "
                "the <<<<<<< ======= >>>>>>> lines; the next sync finishes it"
            )
        else:
            self._last_problem = ""
            done = [
                f"{n} {what}"
                for what, n in (
                    ("file(s) committed", len(report["changes"])),
                    ("commit(s) pulled", report["pulled"]),
                    ("commit(s) pushed", report["pushed"]),
                )
                if n
            ]
            if done:
                self._log(f"synced with {report['upstream']}: {', '.join(done)}")
        self._report(report)
        return True

    def _problem(self, line: str) -> None:
        """A problem is logged when it first appears, not at every retry."""
        if line != self._last_problem:
            self._log(line)
            self._last_problem = line

    def _report(self, result: Result) -> None:
        self._last_at = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
        with self._done:
            self._results = [*self._results[-KEPT_RESULTS + 1 :], result]
            self._done.notify_all()

    def status(self) -> AutoSyncRunning:
        """A JSON-ready summary for ``vault status``: how often it runs and how the last
        sync went (a problem stays named until a sync succeeds)."""
        last: AutoSyncLast | None = None
        if self._results:
            result = self._results[-1]
            if isinstance(result, MarkvaultError):
                last = {"ok": False, "message": str(result)}
            else:
                last = {
                    "ok": not result["conflicts"],
                    "conflicts": list(result["conflicts"]),
                    "committed": len(result["changes"]),
                    "pulled": result["pulled"],
                    "pushed": result["pushed"],
                }
        return {
            "interval_s": self.settings.interval,
            "quiet_s": self.settings.quiet,
            "runs": self.runs,
            "last_at": self._last_at,
            "last": last,
            "problem": self._last_problem or None,
        }

    def wait_for(self, wanted: Callable[[Result], bool], timeout: float) -> Result | None:
        """The first of the recent results for which ``wanted`` holds, waiting up to
        ``timeout`` seconds for it; None if none came."""
        deadline = time.monotonic() + timeout
        with self._done:
            while True:
                for result in self._results:
                    if wanted(result):
                        return result
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return None
                self._done.wait(remaining)
