"""Claude Code hooks that capture sessions into the vault: install, uninstall, hook input.

Claude Code reads hooks from ``settings.json`` files::

    {"hooks": {"SessionEnd": [{"hooks": [{"type": "command", "command": "..."}]}],
               "PreCompact": [{"hooks": [{"type": "command", "command": "..."}]}]}}

and runs each command with a JSON object on stdin (``session_id``,
``transcript_path``, ``cwd``, ``hook_event_name``, ...). markvault adds one entry to
``SessionEnd`` (the session is over) and one to ``PreCompact`` (the transcript is
about to be summarised in context: import it while it is whole). Neither event takes
a matcher, so the entries have none.

**How the settings file is edited.** It belongs to a person (and to Claude Code's
``/hooks`` and ``/permissions`` editors), so it is never re-serialised: install and
uninstall are minimal text edits located by a small JSON scanner.

- Install appends text at one place per container: a new entry after the last entry
  of an event's list, a new event key after the last key of ``hooks``, or a new
  ``hooks`` key after the last key of the file's object. The new text copies the
  indentation of its neighbours (or stays on one line in a one-line file).
- Uninstall removes exactly those spans: an entry or key together with the comma that
  was inserted before it. A container is removed whole only when its text is exactly
  what install would have written for it (same content, same layout), which is how a
  ``hooks`` object or event list that install created is told apart from one that was
  already there. The result: uninstall restores the bytes from before install, while
  anything edited elsewhere in the file in between is kept. The one case it cannot
  tell apart: an *empty* ``hooks`` object or event list that was already laid out
  over several lines exactly as install writes a new one (Claude Code and
  JSON.stringify write ``[]``); it is removed with our entry. On one line there is no
  such case: containers install creates have spaces inside their brackets.
- Our entries are recognised by the marker :data:`HOOK_MARKER` in their command, so
  nothing needs to be stored anywhere else. Installing again with the same command
  changes nothing; with another command (a moved vault), it replaces ours.
- A missing file is created as ``json.dumps(indent=2)`` would write it; when uninstall
  leaves exactly the empty object such a file started from (``{`` newline ``}``), the
  file is deleted. (A person's own file with exactly that content would be deleted
  too; it held no settings.)
- Malformed JSON, or ``hooks`` that is not an object, is refused: nothing is written.
- Writes go to a temporary file in the same folder, then ``os.replace``; a symlinked
  settings file (dotfile managers) is written through the link, not replaced by a file.
"""

from __future__ import annotations

import json
import os
import shlex
import stat as stat_mod
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from markvault.errors import NotFoundError, RefusedError, UsageError
from markvault.files.atomic import write_replacing

EVENTS = ("SessionEnd", "PreCompact")
HOOK_MARKER = "sessions hook run"
NEW_FILE = "{\n}\n"  # what a file install creates starts from, and what uninstall leaves
Scope = Literal["project", "local", "user"]
SCOPES: tuple[str, ...] = ("project", "local", "user")


@dataclass(frozen=True)
class HookChange:
    """What install or uninstall did to one settings file."""

    path: Path
    action: str  # "installed", "updated", "unchanged", "removed" or "absent"
    created_file: bool = False
    deleted_file: bool = False


@dataclass(frozen=True)
class HookInput:
    """The part of a hook's stdin that an import needs."""

    session_id: str
    transcript_path: Path
    cwd: str
    event: str  # hook_event_name: "SessionEnd", "PreCompact"...
    data: Mapping[str, Any] = field(default_factory=dict)


# ---- paths and commands ---------------------------------------------------------------


def settings_path(
    scope: str,
    project_dir: str | Path | None = None,
    *,
    home: Path | None = None,
    env: Mapping[str, str] | None = None,
) -> Path:
    """The settings file for ``scope``.

    ``project``: ``<project>/.claude/settings.json`` (shared with the team);
    ``local``: ``<project>/.claude/settings.local.json`` (personal, git-ignored);
    ``user``: ``~/.claude/settings.json`` (or ``$CLAUDE_CONFIG_DIR/settings.json``).

    Raises:
        UsageError: unknown scope, or no project folder for a project scope.
    """
    if scope == "user":
        env = os.environ if env is None else env
        config = env.get("CLAUDE_CONFIG_DIR") if home is None else None
        base = Path(config).expanduser() if config else (home or Path.home()) / ".claude"
        return base / "settings.json"
    if scope not in SCOPES:
        raise UsageError(f"Unknown scope {scope!r}.", "Use project, local or user.")
    if project_dir is None:
        raise UsageError(f"The {scope} scope needs a project folder.", "Give --project DIR.")
    name = "settings.json" if scope == "project" else "settings.local.json"
    return Path(project_dir).absolute() / ".claude" / name


def hook_command(executable: str | Path, vault_dir: str | Path) -> str:
    """The shell command a hook runs: ``'<vault exe>' --vault '<vault>' sessions hook run``.

    Absolute paths: Claude Code runs hooks from the session's folder, not from here.
    """
    exe = shlex.quote(str(Path(executable).absolute()))
    vault = shlex.quote(str(Path(vault_dir).absolute()))
    return f"{exe} --vault {vault} {HOOK_MARKER}"


# ---- install and uninstall on disk ----------------------------------------------------


def install(
    scope: str,
    project_dir: str | Path | None,
    command: str,
    *,
    home: Path | None = None,
    marker: str = HOOK_MARKER,
) -> HookChange:
    """Add the capture hooks to the scope's settings file (idempotent).

    Raises:
        UsageError: bad scope or command.
        RefusedError: the settings file is not valid JSON, or cannot be read or written.
    """
    path = settings_path(scope, project_dir, home=home)
    original = _read(path)
    new = add_hooks(original, command, marker=marker)
    if new == original:
        return HookChange(path, "unchanged")
    had_ours = original is not None and any(find_hooks(original, marker=marker).values())
    _write(path, new)
    return HookChange(path, "updated" if had_ours else "installed", created_file=original is None)


def uninstall(
    scope: str,
    project_dir: str | Path | None = None,
    *,
    home: Path | None = None,
    marker: str = HOOK_MARKER,
) -> HookChange:
    """Remove exactly what :func:`install` added; other content stays byte for byte.

    Raises:
        UsageError: bad scope.
        RefusedError: the settings file is not valid JSON, or cannot be read or written.
    """
    path = settings_path(scope, project_dir, home=home)
    original = _read(path)
    if original is None:
        return HookChange(path, "absent")
    new = remove_hooks(original, marker=marker)
    if new == original:
        return HookChange(path, "absent")
    if new is None:
        try:
            _target(path).unlink()
        except OSError as exc:
            raise RefusedError(f"Could not delete {path}: {exc.strerror or exc}.") from exc
        return HookChange(path, "removed", deleted_file=True)
    _write(path, new)
    return HookChange(path, "removed")


def installed(
    scope: str,
    project_dir: str | Path | None = None,
    *,
    home: Path | None = None,
    marker: str = HOOK_MARKER,
) -> dict[str, list[str]]:
    """Event -> markvault hook commands in the scope's settings file (empty if none)."""
    text = _read(settings_path(scope, project_dir, home=home))
    return find_hooks(text, marker=marker) if text is not None else {}


def _target(path: Path) -> Path:
    """The file to write: through a symlink, so a linked dotfile stays linked."""
    return Path(os.path.realpath(path)) if path.is_symlink() else path


def _read(path: Path) -> str | None:
    target = _target(path)
    try:
        data = target.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise RefusedError(f"Cannot read {path}: {exc.strerror or exc}.") from exc
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise RefusedError(
            f"{path} is not UTF-8 text; nothing was changed.", "Fix or remove the file."
        ) from exc


def _write(path: Path, text: str) -> None:
    target = _target(path)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        try:  # Claude Code's settings keep their permissions (a 0600 file stays private)
            mode = stat_mod.S_IMODE(target.stat().st_mode)
        except FileNotFoundError:
            mode = 0o666
        write_replacing(target, text.encode("utf-8"), mode=mode)
    except OSError as exc:
        raise RefusedError(
            f"Could not write {path}: {exc.strerror or exc}. The file is unchanged.",
            "Fix permissions or free disk space, then retry.",
        ) from exc


# ---- the text edits -------------------------------------------------------------------


def add_hooks(text: str | None, command: str, *, marker: str = HOOK_MARKER) -> str:
    """Settings text with our entry in every event of :data:`EVENTS` (``None``: no file).

    Unchanged when exactly our entries are there already; other markvault entries
    (an older command) are replaced.

    Raises:
        UsageError: the command is empty, multi-line or lacks the marker.
        RefusedError: the text is not a JSON object with an object ``hooks``.
    """
    if not command.strip() or "\n" in command or "\r" in command:
        raise UsageError("The hook command must be one non-empty line.")
    if marker not in command:
        raise UsageError(
            f"The hook command must contain {marker!r}, which is how uninstall finds it."
        )
    if text is not None:
        found = find_hooks(text, marker=marker)
        if all(found.get(event) == [command] for event in EVENTS):
            return text
        text = remove_hooks(text, marker=marker)
    bom, body = _split_bom(text if text is not None else NEW_FILE)
    entry = {"hooks": [{"type": "command", "command": command}]}
    doc = _Doc(body)
    hooks = doc.root.member("hooks")
    if hooks is None:
        body = doc.insert(doc.root, "hooks", {event: [entry] for event in EVENTS})
    else:
        for event in EVENTS:
            doc = _Doc(body)
            hooks = doc.root.member("hooks")
            assert hooks is not None
            current = hooks.value.member(event)
            if current is None:
                body = doc.insert(hooks.value, event, [entry])
            else:
                body = doc.insert(current.value, None, entry)
    return bom + body


def remove_hooks(text: str, *, marker: str = HOOK_MARKER) -> str | None:
    """Settings text without our entries; ``None`` when nothing but :data:`NEW_FILE` is left.

    Raises:
        RefusedError: the text is not a JSON object with an object ``hooks``.
    """
    bom, body = _split_bom(text)
    doc = _Doc(body)
    hooks = doc.root.member("hooks")
    if hooks is not None and doc.created_by_us(hooks, marker):
        body = doc.remove(doc.root, hooks)
    elif hooks is not None:
        for event in EVENTS:
            while True:
                doc = _Doc(body)
                hooks = doc.root.member("hooks")
                assert hooks is not None
                current = hooks.value.member(event)
                if current is None:
                    break
                if doc.created_by_us(current, marker):
                    body = doc.remove(hooks.value, current)
                    break
                ours = [i for i in current.value.items if _is_ours(doc.decode(i.value), marker)]
                if not ours:
                    break
                body = doc.remove(current.value, ours[-1])
    if body == NEW_FILE and not bom:
        return None
    return bom + body


def find_hooks(text: str, *, marker: str = HOOK_MARKER) -> dict[str, list[str]]:
    """Event -> commands of our entries (those whose commands carry ``marker``).

    Raises:
        RefusedError: the text is not a JSON object with an object ``hooks``.
    """
    data = _load(_split_bom(text)[1])
    hooks = data.get("hooks") or {}
    found: dict[str, list[str]] = {}
    for event, entries in hooks.items():
        commands = [
            hook["command"]
            for entry in entries
            if _is_ours(entry, marker)
            for hook in entry["hooks"]
        ]
        if commands:
            found[event] = commands
    return found


def _is_ours(entry: Any, marker: str) -> bool:
    if not isinstance(entry, dict) or not isinstance(entry.get("hooks"), list):
        return False
    hooks = entry["hooks"]
    return bool(hooks) and all(
        isinstance(h, dict) and isinstance(h.get("command"), str) and marker in h["command"]
        for h in hooks
    )


def _split_bom(text: str) -> tuple[str, str]:
    return ("\ufeff", text[1:]) if text.startswith("\ufeff") else ("", text)


def _load(text: str) -> dict[str, Any]:
    """The settings as data, checked to have the shape hooks need."""
    try:
        data = json.loads(text)
    except (ValueError, RecursionError) as exc:
        where = ""
        if isinstance(exc, json.JSONDecodeError):
            where = f" (line {exc.lineno}, column {exc.colno})"
        raise RefusedError(
            f"The Claude Code settings file is not valid JSON{where}; nothing was changed.",
            "Fix the file (or run Claude Code's /hooks), then retry.",
        ) from exc
    if not isinstance(data, dict):
        raise RefusedError("The Claude Code settings file is not a JSON object; nothing changed.")
    hooks = data.get("hooks")
    if hooks is not None and not isinstance(hooks, dict):
        raise RefusedError("'hooks' in the Claude Code settings is not an object; nothing changed.")
    for event, entries in (hooks or {}).items():
        if not isinstance(entries, list):
            raise RefusedError(
                f"'hooks.{event}' in the Claude Code settings is not a list; nothing changed."
            )
    return data


# ---- a JSON scanner that keeps positions ----------------------------------------------

_WS = " \t\r\n"


@dataclass
class _Node:
    """A JSON value's span [start, end) and, for objects and arrays, its items."""

    kind: str  # "object", "array" or "scalar"
    start: int
    end: int = -1
    items: list[_Item] = field(default_factory=list)

    def member(self, key: str) -> _Item | None:
        """The last member named ``key`` (the one json.loads keeps)."""
        found = [item for item in self.items if item.key == key]
        return found[-1] if found else None


@dataclass
class _Item:
    """A member (``"key": value``, starting at the key) or an array element."""

    start: int
    key: str | None
    value: _Node

    @property
    def end(self) -> int:
        return self.value.end


class _Doc:
    """One settings text, validated, with the spans of its values."""

    def __init__(self, text: str) -> None:
        _load(text)  # validates the shape; the scanner can then trust the syntax
        self.text = text
        self.nl = "\r\n" if "\r\n" in text else "\n"
        self.root = self._value(self._skip(0), 0)
        self.unit = self._unit()

    # -- scanning --

    def _skip(self, i: int) -> int:
        while i < len(self.text) and self.text[i] in _WS:
            i += 1
        return i

    def _string_end(self, i: int) -> int:
        j = i + 1
        while self.text[j] != '"':
            j += 2 if self.text[j] == "\\" else 1
        return j + 1

    def _value(self, i: int, depth: int) -> _Node:
        if depth > 500:
            raise RefusedError("The Claude Code settings file is nested too deeply.")
        ch = self.text[i]
        if ch in "{[":
            node = _Node("object" if ch == "{" else "array", i)
            i = self._skip(i + 1)
            while self.text[i] not in "}]":
                start, key = i, None
                if node.kind == "object":
                    key_end = self._string_end(i)
                    key = json.loads(self.text[i:key_end])
                    i = self._skip(self._skip(key_end) + 1)  # past ':'
                value = self._value(i, depth + 1)
                node.items.append(_Item(start, key, value))
                i = self._skip(value.end)
                if self.text[i] == ",":
                    i = self._skip(i + 1)
            node.end = i + 1
            return node
        if ch == '"':
            return _Node("scalar", i, self._string_end(i))
        j = i
        while j < len(self.text) and self.text[j] not in _WS + ",]}":
            j += 1
        return _Node("scalar", i, j)

    def decode(self, node: _Node) -> Any:
        return json.loads(self.text[node.start : node.end])

    # -- layout --

    def _unit(self) -> str:
        """One level of indentation: from the file's first key, else two spaces."""
        if self.root.items:
            prefix = self._line_prefix(self.root.items[0].start)
            if prefix and not prefix.strip():
                return prefix
        return "  "

    def _line_prefix(self, pos: int) -> str:
        return self.text[self.text.rfind("\n", 0, pos) + 1 : pos]

    def _new_item_indent(self, container: _Node) -> str | None:
        """Indentation for an item appended to ``container``; ``None``: on one line."""
        if container.items:
            first, last = container.items[0], container.items[-1]
            if "\n" not in self.text[container.start + 1 : first.start]:
                return None
            prefix = self._line_prefix(last.start)
            return prefix if not prefix.strip() else None
        if "\n" not in self.text[container.start + 1 : container.end - 1]:
            return None
        prefix = self._line_prefix(container.start)
        return prefix[: len(prefix) - len(prefix.lstrip())] + self.unit

    def _item_indent(self, item: _Item) -> str | None:
        """The indentation ``item`` stands at; ``None`` when it shares a line."""
        prefix = self._line_prefix(item.start)
        return prefix if not prefix.strip() else None

    def render(self, key: str | None, value: Any, indent: str | None, created: bool) -> str:
        """``value`` as install writes it; ``created``: a new key with its container.

        On one line, a container install creates has spaces inside its brackets
        (``[ {...} ]``) while an entry added to an existing list is written plainly;
        that difference is what tells uninstall which containers to remove with it.
        """
        if indent is None:
            body = _spaced(value) if created else json.dumps(value, ensure_ascii=False)
        else:
            body = json.dumps(value, ensure_ascii=False, indent=self.unit)
            body = body.replace("\n", self.nl + indent)
        return body if key is None else json.dumps(key, ensure_ascii=False) + ": " + body

    # -- edits --

    def insert(self, container: _Node, key: str | None, value: Any) -> str:
        """The text with ``value`` appended to ``container`` (as ``key`` in an object)."""
        indent = self._new_item_indent(container)
        item = self.render(key, value, indent, created=key is not None)
        sep = " " if indent is None else self.nl + indent
        if container.items:
            at = container.items[-1].end
            return self.text[:at] + "," + sep + item + self.text[at:]
        at = container.start + 1
        lead = "" if indent is None else sep
        return self.text[:at] + lead + item + self.text[at:]

    def remove(self, container: _Node, item: _Item) -> str:
        """The text without ``item`` and the separator that :meth:`insert` put before it."""
        text = self.text
        before = item.start - 1
        while text[before] in _WS:
            before -= 1
        if text[before] == ",":
            return text[:before] + text[item.end :]
        after = self._skip(item.end)
        if text[after] == ",":  # first of several: take the comma after it instead
            return text[: item.start] + text[self._skip(after + 1) :]
        return text[: before + 1] + text[item.end :]

    def created_by_us(self, item: _Item, marker: str) -> bool:
        """Whether ``item`` holds only our entries, laid out exactly as install writes it."""
        value = self.decode(item.value)
        entries: list[Any]
        if item.key == "hooks":
            if not isinstance(value, dict) or not value or set(value) - set(EVENTS):
                return False
            entries = [e for event_entries in value.values() for e in event_entries]
            if any(len(event_entries) != 1 for event_entries in value.values()):
                return False
        elif isinstance(value, list) and len(value) == 1:
            entries = value
        else:
            return False
        if not all(_is_ours(e, marker) for e in entries):
            return False
        expected = self.render(item.key, value, self._item_indent(item), created=True)
        return self.text[item.start : item.end] == expected


def _spaced(value: Any) -> str:
    """One-line JSON with spaces inside the brackets of the outer two containers."""
    if isinstance(value, dict):
        members = ", ".join(
            json.dumps(k, ensure_ascii=False) + ": " + _spaced(v) for k, v in value.items()
        )
        return "{ " + members + " }"
    if isinstance(value, list):
        return "[ " + ", ".join(json.dumps(v, ensure_ascii=False) for v in value) + " ]"
    return json.dumps(value, ensure_ascii=False)


# ---- the hook's input -----------------------------------------------------------------


def parse_hook_input(
    data: str | bytes, *, home: Path | None = None, must_exist: bool = True
) -> HookInput:
    """Read the JSON Claude Code passes a hook on stdin; the transcript path is checked.

    A leading ``~`` is expanded (``home`` for tests); a relative path is taken from the
    hook's ``cwd``. The path must name a ``.jsonl`` file (and exist, unless
    ``must_exist`` is false).

    Raises:
        UsageError: not JSON, not an object, or no transcript path.
        RefusedError: the path is not a .jsonl file.
        NotFoundError: the transcript does not exist.
    """
    if isinstance(data, bytes):
        try:
            data = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise UsageError("The hook input is not UTF-8 text.") from exc
    try:
        obj = json.loads(data) if data.strip() else None
    except (ValueError, RecursionError) as exc:
        raise UsageError(
            "The hook input is not JSON.", "This command reads what Claude Code sends a hook."
        ) from exc
    if not isinstance(obj, dict):
        raise UsageError(
            "The hook input is not a JSON object.",
            "Expected Claude Code's hook input with a transcript_path.",
        )
    raw = obj.get("transcript_path")
    if not isinstance(raw, str) or not raw.strip():
        raise UsageError("The hook input has no transcript_path.")
    cwd = obj.get("cwd") if isinstance(obj.get("cwd"), str) else ""
    path = _expand(raw.strip(), home)
    if not path.is_absolute():
        if not cwd:
            raise UsageError(f"The transcript path {raw!r} is relative and there is no cwd.")
        path = Path(cwd) / path
    if path.suffix != ".jsonl" or "\x00" in str(path):
        raise RefusedError(f"{raw!r} is not a .jsonl transcript; nothing imported.")
    if must_exist:
        if not path.exists():
            raise NotFoundError(f"The transcript {path} does not exist.")
        if not path.is_file():
            raise RefusedError(f"The transcript {path} is not a file.")
    session_id = obj.get("session_id")
    event = obj.get("hook_event_name")
    return HookInput(
        session_id=session_id if isinstance(session_id, str) and session_id else path.stem,
        transcript_path=path,
        cwd=str(cwd),
        event=event if isinstance(event, str) else "",
        data=obj,
    )


def _expand(raw: str, home: Path | None) -> Path:
    if raw == "~" or raw.startswith("~/"):
        return (home or Path.home()) / raw[2:]
    return Path(raw).expanduser()
