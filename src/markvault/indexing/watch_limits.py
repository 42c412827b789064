"""Whether file events can work for a vault: the filesystems that send none for changes
made elsewhere (read from /proc/mounts), and inotify's per-user watch limit against the
vault's folder count. The watcher polls where they cannot.
"""

from __future__ import annotations

import contextlib
import os
import re
from pathlib import Path

MOUNTS_FILE = Path("/proc/mounts")
MAX_WATCHES_FILE = Path("/proc/sys/fs/inotify/max_user_watches")
# Filesystems where inotify sees only changes made through this kernel: an edit on
# the server, on another client, or on the host of a VM or container sends nothing.
_NETWORK_FS = ("nfs", "nfs4", "cifs", "smb3", "smbfs", "afs")
_CLUSTER_FS = ("ceph", "glusterfs", "lustre", "gpfs", "beegfs")
_VM_SHARE_FS = ("9p", "virtiofs", "vboxsf", "vmhgfs", "prl_fs", "drvfs")
_FUSE_FS = ("fuse", "fuseblk", "sshfs", "davfs")  # and every "fuse.<name>"
NO_EVENT_FILESYSTEMS = frozenset(_NETWORK_FS + _CLUSTER_FS + _VM_SHARE_FS + _FUSE_FS)


def max_user_watches(path: Path = MAX_WATCHES_FILE) -> int | None:
    """The per-user inotify watch limit, or None where there is none to read."""
    try:
        return int(path.read_text().strip())
    except (OSError, ValueError):
        return None


def count_folders(root: Path, stop_at: int) -> int:
    """Folders under ``root`` (itself included), counted up to ``stop_at``.

    Every one costs an inotify watch, hidden and ignored ones too: the watcher
    watches the whole tree and filters afterwards. So this walk is not the vault's
    (walk.py), which leaves those out: a documented exception there.
    """
    count = 0
    stack = [str(root)]
    while stack and count < stop_at:
        folder = stack.pop()
        count += 1
        with contextlib.suppress(OSError), os.scandir(folder) as entries:
            stack.extend(e.path for e in entries if e.is_dir(follow_symlinks=False))
    return count


_OCTAL_ESCAPE = re.compile(r"\\([0-7]{3})")


def read_mounts(mounts_file: Path = MOUNTS_FILE) -> list[tuple[str, str]]:
    """(mount point, filesystem type) of every mount, from /proc/mounts."""
    try:
        text = mounts_file.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return []
    mounts = []
    for line in text.splitlines():
        fields = line.split()
        if len(fields) >= 3:
            # Spaces and tabs in mount points are written as octal escapes (\040).
            point = _OCTAL_ESCAPE.sub(lambda m: chr(int(m.group(1), 8)), fields[1])
            mounts.append((point, fields[2]))
    return mounts


def no_event_filesystem(root: Path, mounts_file: Path = MOUNTS_FILE) -> str | None:
    """A description ("nfs4 at /mnt/notes") of a filesystem that holds ``root`` or lies
    inside it and sends no events for changes made elsewhere; None if there is none.

    Read from /proc/mounts, never by writing a probe file: the vault is not ours to write.
    """
    where = str(root)
    holder: tuple[str, str] | None = None
    inside: list[tuple[str, str]] = []
    for point, fstype in read_mounts(mounts_file):
        if where == point or where.startswith(point.rstrip("/") + "/"):
            if holder is None or len(point) >= len(holder[0]):
                holder = (point, fstype)
        elif point.startswith(where.rstrip("/") + "/"):
            inside.append((point, fstype))
    for point, fstype in ([holder] if holder else []) + inside:
        if fstype in NO_EVENT_FILESYSTEMS or fstype.startswith("fuse."):
            return f"{fstype} at {point}"
    return None
