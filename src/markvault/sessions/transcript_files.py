"""Where Claude Code's transcripts are on disk, and which of them an import reads.

Claude Code keeps one JSON Lines file per session under
``~/.claude/projects/<encoded cwd>/<session id>.jsonl`` (``$CLAUDE_CONFIG_DIR/projects``
when that is set). Subagent files (``agent-*.jsonl``) are left out: their messages are
in the main transcript.
"""

from __future__ import annotations

import datetime as dt
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from markvault.errors import NotFoundError, UsageError


@dataclass(frozen=True)
class TranscriptFile:
    """One session transcript found on disk."""

    path: Path
    session_id: str
    project_folder: str  # the encoded folder name under projects/
    mtime: float
    size: int


def claude_projects_dir(home: Path | None = None, env: Mapping[str, str] | None = None) -> Path:
    """Where Claude Code keeps transcripts: ``$CLAUDE_CONFIG_DIR/projects``, else
    ``~/.claude/projects``."""
    env = os.environ if env is None else env
    config = env.get("CLAUDE_CONFIG_DIR")
    if config:
        return Path(config).expanduser() / "projects"
    return (home or Path.home()) / ".claude" / "projects"


def project_folder_names(cwd: str | Path) -> list[str]:
    """Folder names Claude Code may have used for ``cwd`` (the rule changed over versions).

    Older versions replaced ``/`` and ``.``; newer ones every character that is not a
    letter or digit. Both are tried.
    """
    text = str(cwd).rstrip("/\\") or str(cwd)
    names = [re.sub(r"[\\/.:]", "-", text), re.sub(r"[^A-Za-z0-9]", "-", text)]
    return list(dict.fromkeys(names))


def find_transcripts(
    root: Path | None = None,
    *,
    project: str | Path | None = None,
    since: dt.date | dt.datetime | None = None,
    home: Path | None = None,
) -> list[TranscriptFile]:
    """Session transcripts under ``root``, oldest first (by modification time).

    ``project`` is a working directory: only its folder is read. ``since`` keeps files
    written to on or after it (a date is midnight local time): a file's mtime is when
    its session was last active. Subagent files (``agent-*.jsonl``) are left out.

    Raises:
        NotFoundError: ``root`` does not exist, or there is no folder for ``project``.
    """
    root = root or claude_projects_dir(home)
    if not root.is_dir():
        raise NotFoundError(
            f"No Claude Code transcripts folder at {root}.",
            "Run Claude Code once, or give the folder (it holds one folder per project).",
        )
    if project is not None:
        folders = [root / name for name in project_folder_names(project) if (root / name).is_dir()]
        if not folders:
            raise NotFoundError(
                f"No transcripts for {project} under {root}.",
                "Give the directory Claude Code was started in, as an absolute path.",
            )
    else:
        folders = sorted(p for p in root.iterdir() if p.is_dir() and not p.name.startswith("."))
    cutoff = _cutoff(since)
    found: list[TranscriptFile] = []
    for folder in folders:
        for file in sorted(folder.glob("*.jsonl")):
            if file.name.startswith("agent-"):
                continue
            try:
                st = file.stat()
            except OSError:
                continue
            if not file.is_file() or (cutoff is not None and st.st_mtime < cutoff):
                continue
            found.append(TranscriptFile(file, file.stem, folder.name, st.st_mtime, st.st_size))
    return sorted(found, key=lambda t: (t.mtime, str(t.path)))


def _cutoff(since: dt.date | dt.datetime | None) -> float | None:
    if since is None:
        return None
    if isinstance(since, dt.datetime):
        return since.timestamp()
    return dt.datetime.combine(since, dt.time.min).timestamp()


def transcripts_at(
    source: str | Path | None = None,
    *,
    project: str | Path | None = None,
    since: dt.date | dt.datetime | None = None,
    home: Path | None = None,
) -> list[TranscriptFile]:
    """The transcripts an import reads, oldest first; ``source`` may be Claude Code's
    projects folder (the default), one project's folder, or one ``.jsonl`` file.

    ``project`` picks a working directory's folder under a projects folder, so it makes
    no sense with a project folder or a file; ``since`` applies to every form.

    Raises:
        NotFoundError: ``source`` (or the project's folder) does not exist.
        UsageError: ``project`` with a project folder or a file; a file not ``.jsonl``.
    """
    if source is None:
        return find_transcripts(None, project=project, since=since, home=home)
    path = Path(source).expanduser()
    if not path.exists():
        raise NotFoundError(
            f"No transcripts at {path}.",
            "Give Claude Code's projects folder, one project's folder, or a .jsonl file.",
        )
    direct = sorted(path.glob("*.jsonl")) if path.is_dir() else []
    if path.is_dir() and not direct:
        return find_transcripts(path, project=project, since=since)
    if project is not None:
        raise UsageError(
            f"--project picks a folder under a projects folder; {path} is "
            + ("one project's folder." if path.is_dir() else "a single transcript."),
            "Drop --project, or give the folder that holds the project folders.",
        )
    if path.is_file() and path.suffix != ".jsonl":
        raise UsageError(f"{path} is not a .jsonl transcript.", "Claude Code's are *.jsonl.")
    cutoff = _cutoff(since)
    found: list[TranscriptFile] = []
    for file in direct or [path]:
        if file.name.startswith("agent-") and file != path:
            continue  # a subagent's own file; its messages are in the main transcript
        try:
            st = file.stat()
        except OSError:
            continue
        if cutoff is None or st.st_mtime >= cutoff:
            found.append(TranscriptFile(file, file.stem, file.parent.name, st.st_mtime, st.st_size))
    return sorted(found, key=lambda t: (t.mtime, str(t.path)))
