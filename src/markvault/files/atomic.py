"""The one atomic file writer: a name shows a file's whole old content or its whole new
content, never half of either, and a power cut loses at most the write in flight.

Every write goes to a temporary file in the target's own folder (a rename never crosses
a filesystem), named ``TEMP_PREFIX`` + random hex so that no scan takes it for a note, no
sync commits it and the stale-temp cleanup knows it; it is fsynced, then moved into
place, by a hard link where creation must never overwrite (``write_new``) or by
``os.replace`` (``write_replacing``); then the folder is fsynced so the rename survives a
power cut. The vault's writes (vault_files.py), the trust record, the HTTP token, the
encoder's verdict, git's restored index and the freshness state all write through here.

Imports nothing of markvault: the plain layer (trust.py) writes through it too.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

TEMP_PREFIX = ".mv-tmp-"  # a half-written file: never a note, never committed


def write_temp(folder: Path, data: bytes, mode: int = 0o666, sync: bool = True) -> Path:
    """A new temporary file in ``folder`` holding ``data``, fsynced unless not ``sync``
    (removed again if the write fails), created with ``mode`` (less the umask)."""
    # os.urandom, not ``secrets``: the name only has to be new (O_EXCL checks it), and
    # ``secrets`` costs every command ~2 ms of imports.
    tmp = folder / f"{TEMP_PREFIX}{os.urandom(6).hex()}"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, mode)
    try:
        with open(fd, "wb", closefd=True) as fh:
            fh.write(data)
            if sync:
                fh.flush()
                os.fsync(fh.fileno())
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return tmp


def fsync_dir(path: Path) -> None:
    """Make a rename or link in ``path`` durable."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_new(full: Path, data: bytes, mode: int = 0o666) -> None:
    """Write ``data`` to a new file at ``full``, atomically; never overwrites.

    Raises:
        FileExistsError: something is already at ``full`` (it is left as it was).
    """
    tmp = write_temp(full.parent, data, mode)
    try:
        os.link(tmp, full)  # atomic, and fails if the name exists
        fsync_dir(full.parent)
    finally:
        tmp.unlink(missing_ok=True)


def write_replacing(full: Path, data: bytes, *, mode: int = 0o666, durable: bool = True) -> None:
    """Write ``data`` to ``full``, atomically replacing what is there. ``durable=False``
    skips the fsyncs (a cache a crash may lose: the next run rebuilds it)."""
    tmp = write_temp(full.parent, data, mode, sync=durable)
    try:
        os.replace(tmp, full)
        if durable:
            fsync_dir(full.parent)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise
