"""The owner's background reading of attachments: what a sync made before an answer left
waiting (it starts extractions for a few seconds only: ``AttachmentLimits.inline_seconds``)
is read here, outside the call lock, and then indexed under it, as the background
embedding does with vectors (host.py). Searches and writes go on meanwhile."""

from __future__ import annotations

import sys
import threading
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from markvault.attachments.formats import Extracted
    from markvault.core.lifecycle import IndexKeeper

IDLE_SECONDS = 1.0  # how often the loop looks whether it was stopped


def backfill_round(keeper: IndexKeeper, calls: AbstractContextManager[object]) -> int:
    """One round: the attachments left waiting, read in workers without the lock, then
    indexed with it (the sync finds their text by content hash). Returns the files read."""
    from markvault.attachments.extract import Extractor
    from markvault.attachments.reconcile import jobs_for

    with calls:
        paths = sorted(keeper.attachments_waiting)
        keeper.attachments_waiting.clear()
        if not paths:
            return 0
        index = keeper.open_index(write=True)
        jobs = jobs_for(keeper.files, index, keeper.settings, paths)
    done: list[tuple[str, Extracted, float]] = []
    with Extractor(keeper.settings.attachments) as extractor:
        for job, outcome, value in extractor.run(jobs):
            if outcome == "done":
                done.append((job.hash, value, value.seconds))
    with calls:
        keeper.open_index(write=True).extracts.keep(done)
        keeper.refresh(paths=paths)
    return len(done)


def run_backfill(
    keeper: IndexKeeper, calls: AbstractContextManager[object], stopping: threading.Event
) -> None:
    """Until ``stopping``: a round each time a sync leaves attachments waiting."""
    wake = keeper.attachments_wake
    while not stopping.is_set():
        if not wake.wait(IDLE_SECONDS):
            continue
        wake.clear()
        try:
            backfill_round(keeper, calls)
        except Exception as exc:  # the next sync that leaves some waiting tries again
            print(
                f"markvault: reading attachments in the background failed: {exc}", file=sys.stderr
            )
            keeper.feed.event("error", "attachments", f"reading attachments failed: {exc}")
