"""Changes a file's stat cannot show: git's "racily clean" rule for the vault's notes.

A sync skips a note whose recorded (name, mtime, size, ctime, inode) still match the
disk. Two changes slip past that: one made within the filesystem's timestamp
granularity of the sync that recorded the file (FAT and exFAT keep 2 s, HFS+ and some
network shares 1 s, Linux's clock ticks a few ms: a typo fixed in the same tick keeps
mtime, ctime and size), and a tool that puts the mtime back (`cp -p`, `rsync -t`,
`touch -r`), which ctime and the inode see.

So ctime and the inode are compared too, and a file whose mtime falls within the
granularity of the moment a sync records it (git's rule: the mtime, not the ctime, or
every file of a vault just copied with its mtimes would be) is recorded as *racy*
(``RACY_CTIME``, where its ctime would be): no stat can match that, so the next sync
that looks at it reads and hashes it (unchanged bytes only update the record, and once
out of the window the real ctime is kept). Only files written within that window of a
sync pay a read again: a no-op `vault reindex` re-hashes nothing else.

The granularity is not assumed: the first full scan of an index measures it, from the
mtime of a file it makes in the vault (``probe_granularity``; where it cannot write
there, from the mtimes of the notes it saw: the coarsest unit that divides all of
them), and the index keeps it (meta ``timestamp_granularity_ns``) for every later sync.
The index is the vault folder's own, so a vault moved to another filesystem gets a new
index, measured again.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable
from pathlib import Path

from markvault.files.atomic import TEMP_PREFIX
from markvault.files.vault_scan import FileStat

RACY_CTIME = -1  # stored in place of a racy file's ctime: never equal to a real one
# Linux stamps files from a clock that ticks every few ms (1-10 ms by HZ): however fine
# the measured granularity looks, a change within this of a sync is suspect.
RACY_FLOOR_NS = 50_000_000
UNKNOWN_GRANULARITY_NS = 2_000_000_000  # FAT's 2 s: until a full scan has measured it
_UNITS = (2_000_000_000, 1_000_000_000, 100_000_000, 10_000_000, 1_000_000, 1_000, 1)


def measure_granularity(stats: Iterable[FileStat]) -> int | None:
    """The coarsest unit (ns) dividing every mtime in ``stats``; None when there are
    none to measure. Mtimes only: a file copied with its mtime (`cp -p` from a FAT
    card) keeps a coarse one, and the window is then wider than needed, never narrower."""
    units = list(_UNITS)
    seen = False
    for st in stats:
        seen = True
        units = [u for u in units if st.mtime_ns % u == 0]
        if units == [1]:
            break
    return units[0] if seen and units else None


def probe_granularity(folder: Path) -> int | None:
    """The granularity of the filesystem ``folder`` is on, from the mtimes of two new
    files made in it (hidden, with the prefix every scan and watcher leaves out) and
    removed at once; None where no file can be made there."""
    units: list[int] = []
    for _ in range(2):
        probe = folder / f"{TEMP_PREFIX}probe-{os.urandom(4).hex()}"
        try:
            fd = os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except OSError:
            return None
        try:
            mtime = os.fstat(fd).st_mtime_ns
        finally:
            os.close(fd)
            with contextlib.suppress(OSError):
                probe.unlink()
        units.append(next(u for u in _UNITS if mtime % u == 0))
    return min(units)  # one of two landing on a round number by chance: the other


def racy_window(granularity_ns: int | None) -> int:
    """How recent a change must be, before a sync's start, to make a file racy."""
    return max(granularity_ns or UNKNOWN_GRANULARITY_NS, RACY_FLOOR_NS)


def settle(st: FileStat, started_ns: int, window_ns: int) -> FileStat:
    """``st`` as a sync that started at ``started_ns`` records it: racy (its ctime
    replaced by ``RACY_CTIME``) when its mtime is within ``window_ns`` of that moment
    (or later: a clock ahead of this one)."""
    if st.mtime_ns >= started_ns - window_ns:
        return st._replace(ctime_ns=RACY_CTIME)
    return st


def same_file(known: tuple[int, int, int | None, int | None], st: FileStat) -> bool:
    """Whether the recorded (mtime, size, ctime, inode) of a note still match ``st``
    (a skipped file records no ctime nor inode: mtime and size then)."""
    mtime, size, ctime, ino = known
    if (mtime, size) != (st.mtime_ns, st.size):
        return False
    return ctime is None or (ctime, ino) == (st.ctime_ns, st.ino)
