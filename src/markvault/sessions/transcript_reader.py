"""Reading a Claude Code transcript (JSON Lines) into a :class:`Session`. Pure: reads, never writes.

Claude Code keeps one JSON Lines file per session under
``~/.claude/projects/<encoded cwd>/<session id>.jsonl``. Each line is an event:
``user`` (a prompt, or tool output when it carries ``tool_result`` blocks),
``assistant`` (text, thinking and ``tool_use`` blocks), ``summary`` (a title with a
``leafUuid``), ``system`` and bookkeeping types.

Design choices (each for a reason a reader would otherwise have to guess):

- **Never fatal.** A transcript is written by another program, may be mid-write, and
  is years of someone's work: malformed lines, unknown types and odd shapes are
  skipped and counted (:attr:`Session.malformed_lines`, :attr:`Session.skipped_lines`),
  lines over ``max_line_bytes`` are skipped without being read into memory, long texts
  are cut, images and base64 blobs become placeholders.
- **Sanitised at parse time.** Every string that can reach a note goes through
  :func:`~markvault.sessions.sanitize.sanitize` while the transcript is read, so a
  :class:`Session` never holds a secret.
- **Subagents are summarised.** Sidechain messages (``isSidechain``) are not kept
  one by one: each run of them becomes one ``subagent`` event with its task and
  tool counts, right after the main thread's ``Task`` call. Their tool use still counts
  in ``tools``, ``files_read`` and ``files_modified``; ``turns`` counts main-thread
  prompts only. Subagent files (``agent-*.jsonl``) are not imported on their own.
- Thinking blocks are not kept: they are long and the answer carries the result.
  Successful results of editing tools (``Edit``, ``Write``...) are not kept either:
  the tool line already says which file changed.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import re
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath, PureWindowsPath
from typing import IO, Any

from markvault.errors import NotFoundError, RefusedError
from markvault.sessions.sanitize import RedactionCounter, one_line, sanitize
from markvault.sessions.session import TITLE_CHARS, Event, Session, ToolResult

MAX_LINE_BYTES = 32 * 1024 * 1024  # a line over this is skipped unread (images make lines big)
MAX_TEXT_CHARS = 30_000  # per prompt, answer or compaction summary
RESULT_LINES = 3  # lines of a tool result shown
RESULT_CHARS = 300  # characters of a tool result shown
ARG_CHARS = 120  # characters of a tool's key argument shown
MAX_FILES = 100  # per frontmatter list: frontmatter over 64 KiB would be ignored

CLAUDE_READ_TOOLS = {
    "Read": "file_path",
    "NotebookRead": "notebook_path",
    "Grep": "path",
    "Glob": "path",
}
CLAUDE_WRITE_TOOLS = {
    "Edit": "file_path",
    "MultiEdit": "file_path",
    "Write": "file_path",
    "NotebookEdit": "notebook_path",
}
QUIET_TOOLS = frozenset({"Edit", "MultiEdit", "Write", "NotebookEdit", "TodoWrite"})
_KEY_ARGS = {
    "Bash": "command",
    "Grep": "pattern",
    "Glob": "pattern",
    "WebFetch": "url",
    "WebSearch": "query",
    "Task": "description",
    "Agent": "description",
}
_FALLBACK_ARGS = (
    "file_path",
    "notebook_path",
    "path",
    "command",
    "pattern",
    "url",
    "query",
    "description",
    "prompt",
    "name",
)
_PATH_ARGS = frozenset({"file_path", "notebook_path", "path"})


@dataclass
class _Run:
    """A run of consecutive sidechain (subagent) lines."""

    time: dt.datetime | None
    task: str = ""
    messages: int = 0
    tools: Counter[str] = field(default_factory=Counter)


class _Reader:
    """Accumulates one transcript line by line; :meth:`session` builds the result."""

    def __init__(self, session_id: str, source: str, allowed: frozenset[str]) -> None:
        self.session_id = session_id
        self.source = source
        self.allowed = allowed
        self.counter = RedactionCounter()
        self.events: list[Event] = []
        self.results: dict[str, ToolResult] = {}
        self.models: dict[str, None] = {}
        self.tools: Counter[str] = Counter()
        self.files_read: set[str] = set()
        self.files_modified: set[str] = set()
        self.titles: list[str] = []
        self.seen: set[str] = set()
        self.first: dt.datetime | None = None
        self.last: dt.datetime | None = None
        self.cwd = ""
        self.branch = ""
        self.version = ""
        self.run: _Run | None = None
        self.turns = self.compactions = self.subagent_messages = 0
        self.malformed = self.skipped = self.oversized = 0

    # -- lines --

    def feed(self, raw: bytes | None) -> None:
        if raw is None:
            self.oversized += 1
            return
        line = raw.decode("utf-8", errors="replace").strip()
        if not line:
            return
        try:
            obj = json.loads(line)
        except (ValueError, RecursionError):
            self.malformed += 1
            return
        if not isinstance(obj, dict):
            self.malformed += 1
            return
        self._entry(obj)

    def _entry(self, obj: dict[str, Any]) -> None:
        kind = obj.get("type")
        uuid = obj.get("uuid")
        if isinstance(uuid, str) and uuid:
            if uuid in self.seen:
                return  # the same message written twice (resume, retries)
            self.seen.add(uuid)
        when = _timestamp(obj.get("timestamp"))
        if when is not None:
            self.first = when if self.first is None else min(self.first, when)
            self.last = when if self.last is None else max(self.last, when)
        if kind == "summary":
            summary = obj.get("summary")
            if isinstance(summary, str) and summary.strip():
                self.titles.append(one_line(self._clean(summary), TITLE_CHARS))
            return
        if kind not in ("user", "assistant"):
            self.skipped += 1
            return
        message = obj.get("message")
        if not isinstance(message, dict):
            self.malformed += 1
            return
        self._context(obj)
        if obj.get("isSidechain") is True:
            self._sidechain(kind, message, when)
            return
        self._close_run()
        if kind == "assistant":
            self._assistant(message, when)
        else:
            self._user(obj, message, when)

    def _context(self, obj: Mapping[str, Any]) -> None:
        if not self.cwd and isinstance(obj.get("cwd"), str):
            self.cwd = obj["cwd"]
        if not self.branch and isinstance(obj.get("gitBranch"), str):
            self.branch = obj["gitBranch"]
        if isinstance(obj.get("version"), str):
            self.version = obj["version"]

    def _clean(self, text: str, limit: int = MAX_TEXT_CHARS) -> str:
        """Sanitised and cut; cut first too, so a pasted megabyte is not scanned whole."""
        cleaned = sanitize(text[: limit * 2], self.counter, allowed=self.allowed).strip()
        if len(cleaned) <= limit and len(text) <= limit * 2:
            return cleaned
        more = len(cleaned) - limit + max(0, len(text) - limit * 2)
        return cleaned[:limit].rstrip() + f"\n… ({more} more characters)"

    # -- main thread --

    def _user(
        self, obj: Mapping[str, Any], message: Mapping[str, Any], when: dt.datetime | None
    ) -> None:
        content = message.get("content")
        blocks = content if isinstance(content, list) else [content]
        if any(isinstance(b, dict) and b.get("type") == "tool_result" for b in blocks):
            for block in blocks:
                if isinstance(block, dict) and block.get("type") == "tool_result":
                    self._result(block)
            return
        text = _join_text(blocks)
        if obj.get("isCompactSummary") is True:
            self.compactions += 1
            cleaned = self._clean(text)
            if cleaned:
                self.events.append(Event("compaction", when, cleaned))
            return
        if obj.get("isMeta") is True:
            self.skipped += 1
            return
        prompt = _prompt_text(text)
        cleaned = self._clean(prompt) if prompt else ""
        if not cleaned:
            self.skipped += 1
            return
        self.turns += 1
        self.events.append(Event("prompt", when, cleaned))

    def _assistant(self, message: Mapping[str, Any], when: dt.datetime | None) -> None:
        self._model(message)
        content = message.get("content")
        blocks = content if isinstance(content, list) else [content]
        for block in blocks:
            if isinstance(block, str):
                block = {"type": "text", "text": block}
            if not isinstance(block, dict):
                continue
            if block.get("type") == "text" and isinstance(block.get("text"), str):
                cleaned = self._clean(block["text"])
                if cleaned:
                    self.events.append(Event("text", when, cleaned))
            elif block.get("type") in ("tool_use", "server_tool_use"):
                name, arg = self._tool(block)
                raw_id = block.get("id")
                tool_id = raw_id if isinstance(raw_id, str) else ""
                self.events.append(Event("tool", when, arg, name=name, tool_id=tool_id))

    def _model(self, message: Mapping[str, Any]) -> None:
        model = message.get("model")
        if isinstance(model, str) and model and not model.startswith("<"):
            self.models.setdefault(one_line(self._clean(model, 200), 200), None)

    def _tool(self, block: Mapping[str, Any]) -> tuple[str, str]:
        """Count a tool call and its files; (name, key argument for the tool line)."""
        raw_name = block.get("name")
        name = re.sub(r"[^\w.:-]+", "_", raw_name)[:100] if isinstance(raw_name, str) else ""
        name = name or "tool"
        self.tools[name] += 1
        raw_input = block.get("input")
        args: Mapping[str, Any] = raw_input if isinstance(raw_input, dict) else {}
        for table, found in (
            (CLAUDE_READ_TOOLS, self.files_read),
            (CLAUDE_WRITE_TOOLS, self.files_modified),
        ):
            key = table.get(name)
            value = args.get(key) if key else None
            if isinstance(value, str) and value.strip():
                path = one_line(self._clean(self._display_path(value), 1000), 300)
                if path:
                    found.add(path)
        return name, self._key_arg(name, args)

    def _key_arg(self, name: str, args: Mapping[str, Any]) -> str:
        key = _KEY_ARGS.get(name) or CLAUDE_WRITE_TOOLS.get(name) or CLAUDE_READ_TOOLS.get(name)
        keys = (key, *_FALLBACK_ARGS) if key else _FALLBACK_ARGS
        for key in keys:
            value = args.get(key)
            if isinstance(value, str) and value.strip():
                if key in _PATH_ARGS:
                    value = self._display_path(value)
                lines = value.strip().split("\n")
                text = self._clean(lines[0], 2000)
                if len(lines) > 1:
                    text += " …"
                return one_line(text, ARG_CHARS)
        if name == "TodoWrite" and isinstance(args.get("todos"), list):
            return f"{len(args['todos'])} items"
        return ""

    def _display_path(self, path: str) -> str:
        """Relative to the session's folder when inside it, as people refer to files."""
        cwd = self.cwd.rstrip("/\\")
        if cwd and (path.startswith(cwd + "/") or path.startswith(cwd + "\\")):
            return path[len(cwd) + 1 :] or path
        return path

    def _result(self, block: Mapping[str, Any]) -> None:
        tool_id = block.get("tool_use_id")
        if not isinstance(tool_id, str) or not tool_id:
            return
        text = _result_text(block.get("content"))
        cleaned = sanitize(text[:4000], self.counter, allowed=self.allowed).strip("\n")
        lines = [line.rstrip() for line in cleaned.split("\n")]
        while lines and not lines[-1]:
            lines.pop()
        shown = "\n".join(lines[:RESULT_LINES])
        if len(shown) > RESULT_CHARS:
            shown = shown[: RESULT_CHARS - 1].rstrip() + "…"
        total = len(text.split("\n")) if len(text) > 4000 else len(lines)
        more = max(0, total - min(len(lines), RESULT_LINES))
        self.results[tool_id] = ToolResult(shown, more, block.get("is_error") is True)

    # -- sidechains --

    def _sidechain(self, kind: str, message: Mapping[str, Any], when: dt.datetime | None) -> None:
        self.subagent_messages += 1
        if self.run is None:
            self.run = _Run(when)
        self.run.messages += 1
        content = message.get("content")
        blocks = content if isinstance(content, list) else [content]
        is_result = any(isinstance(b, dict) and b.get("type") == "tool_result" for b in blocks)
        if kind == "user" and not self.run.task and not is_result:
            self.run.task = one_line(self._clean(_join_text(blocks), 2000), ARG_CHARS)
        if kind == "assistant":
            self._model(message)
            for block in blocks:
                if isinstance(block, dict) and block.get("type") == "tool_use":
                    name, _ = self._tool(block)
                    self.run.tools[name] += 1

    def _close_run(self) -> None:
        run, self.run = self.run, None
        if run is None:
            return
        parts = [f"{run.messages} message{'s' if run.messages != 1 else ''}"]
        if run.tools:
            ranked = sorted(run.tools.items(), key=lambda kv: (-kv[1], kv[0]))
            parts.append("tools: " + ", ".join(f"{n} ×{c}" for n, c in ranked))
        self.events.append(Event("subagent", run.time, run.task, name="; ".join(parts)))

    # -- result --

    def session(self) -> Session:
        self._close_run()
        events = tuple(self._with_result(e) for e in self.events)
        ranked = sorted(self.tools.items(), key=lambda kv: (-kv[1], kv[0]))
        cwd = self._clean(self.cwd, 1000) if self.cwd else ""
        return Session(
            session_id=self.session_id,
            project=_project_name(cwd),
            cwd=cwd,
            git_branch=one_line(self._clean(self.branch, 500), 200),
            started=self.first,
            ended=self.last,
            turns=self.turns,
            models=tuple(self.models),
            tools=dict(ranked),
            files_read=tuple(sorted(self.files_read))[:MAX_FILES],
            files_modified=tuple(sorted(self.files_modified))[:MAX_FILES],
            events=events,
            titles=tuple(self.titles),
            compactions=self.compactions,
            subagent_messages=self.subagent_messages,
            malformed_lines=self.malformed,
            skipped_lines=self.skipped,
            oversized_lines=self.oversized,
            redactions=self.counter.redactions,
            version=self.version,
            source=self.source,
        )

    def _with_result(self, event: Event) -> Event:
        result = self.results.get(event.tool_id) if event.kind == "tool" else None
        if result is None or (event.name in QUIET_TOOLS and not result.is_error):
            return event
        return dataclasses.replace(event, result=result)


_COMMAND = re.compile(r"<command-name>\s*(.*?)\s*</command-name>", re.DOTALL)
_COMMAND_ARGS = re.compile(r"<command-args>(.*?)</command-args>", re.DOTALL)
_BASH_INPUT = re.compile(r"<bash-input>(.*?)</bash-input>", re.DOTALL)
_NOT_PROMPTS = re.compile(
    r"^\s*(?:<(?:local-command-std(?:out|err)|bash-std(?:out|err))>|"
    r"\[Request interrupted by user[^\]]*\]\s*$|"
    r"Caveat: The messages below were generated by the user while running local commands)"
)
_SYSTEM_REMINDER = re.compile(r"<system-reminder>.*?(?:</system-reminder>|\Z)", re.DOTALL)


def _prompt_text(text: str) -> str:
    """What the person typed: slash commands as ``/name args``; tool chatter dropped."""
    text = _SYSTEM_REMINDER.sub("", text)
    command = _COMMAND.search(text)
    if command:
        args = _COMMAND_ARGS.search(text)
        return f"{command.group(1)} {args.group(1).strip() if args else ''}".strip()
    bash = _BASH_INPUT.search(text)
    if bash:
        return "! " + bash.group(1).strip()
    if _NOT_PROMPTS.match(text):
        return ""
    return text.strip()


def _join_text(blocks: Sequence[Any]) -> str:
    parts: list[str] = []
    for block in blocks:
        if isinstance(block, str):
            parts.append(block)
        elif isinstance(block, dict) and block.get("type") == "text":
            if isinstance(block.get("text"), str):
                parts.append(block["text"])
        elif isinstance(block, dict) and block.get("type") in ("image", "document"):
            parts.append(_media_placeholder(block))
    return "\n\n".join(p for p in parts if p)


def _result_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return "" if content is None else str(content)[:4000]
    return "\n".join(
        _media_placeholder(b) if b.get("type") in ("image", "document") else str(b.get("text", ""))
        for b in content
        if isinstance(b, dict)
    )


def _media_placeholder(block: Mapping[str, Any]) -> str:
    """``[image: image/png, 12 KB]``: a base64 payload never reaches a note."""
    source = block.get("source")
    source = source if isinstance(source, dict) else {}
    media = source.get("media_type")
    media = media if isinstance(media, str) and re.fullmatch(r"[\w.+/-]{1,80}", media) else ""
    data = source.get("data")
    size = f", {max(1, len(data) * 3 // 4 // 1024)} KB" if isinstance(data, str) else ""
    kind = "image" if block.get("type") == "image" else "document"
    return f"[{kind}{': ' + media if media else ''}{size}]"


def _timestamp(value: Any) -> dt.datetime | None:
    if not isinstance(value, str) or not value:
        return None
    try:
        when = dt.datetime.fromisoformat(value.strip())
    except ValueError:
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=dt.UTC)
    return when.astimezone(dt.UTC).replace(microsecond=0)


def _project_name(cwd: str) -> str:
    if not cwd:
        return "unknown"
    windows = re.match(r"^[A-Za-z]:[\\/]", cwd) or "\\" in cwd
    name = (PureWindowsPath(cwd) if windows else PurePosixPath(cwd)).name
    return name or "unknown"


# ---- reading transcripts --------------------------------------------------------------


def read_transcript(
    path: str | Path,
    *,
    session_id: str | None = None,
    max_line_bytes: int = MAX_LINE_BYTES,
    allowed: frozenset[str] = frozenset(),
) -> Session:
    """Parse one transcript file into a :class:`Session`; bad lines are counted, not fatal.
    Credentials are redacted, except those whose fingerprint is ``allowed``.

    The session id is the file's stem (Claude Code names files by session id; a resumed
    session's file may repeat the messages of the session it continued, with their old
    ``sessionId``), unless ``session_id`` is given.

    Raises:
        NotFoundError: the file does not exist.
        RefusedError: it is not a regular file or cannot be read.
    """
    file = Path(path)
    if not file.exists():
        raise NotFoundError(
            f"No transcript at {file}.", "Check the path, or list them with `vault sessions list`."
        )
    if not file.is_file():  # a folder or a FIFO: opening one could block or fail oddly
        raise RefusedError(f"{file} is not a file.", "Give the path of a .jsonl transcript.")
    try:
        handle = file.open("rb")
    except OSError as exc:
        raise RefusedError(f"Cannot read {file}: {exc.strerror or exc}.") from exc
    with handle:
        return parse_transcript(
            handle,
            session_id=session_id or file.stem,
            source=str(file),
            max_line_bytes=max_line_bytes,
            allowed=allowed,
        )


def parse_transcript(
    lines: IO[bytes],
    *,
    session_id: str,
    source: str = "",
    max_line_bytes: int = MAX_LINE_BYTES,
    allowed: frozenset[str] = frozenset(),
) -> Session:
    """Parse a transcript from a binary stream (see :func:`read_transcript`)."""
    reader = _Reader(session_id, source, allowed)
    try:
        for raw in _lines(lines, max_line_bytes):
            reader.feed(raw)
    except OSError as exc:
        raise RefusedError(f"Cannot read {source or 'the transcript'}: {exc}.") from exc
    return reader.session()


def _lines(stream: IO[bytes], limit: int) -> Iterator[bytes | None]:
    """Lines of at most ``limit`` bytes; ``None`` for a longer one, which is never held whole."""
    while True:
        line = stream.readline(limit + 1)
        if not line:
            return
        if len(line) > limit and not line.endswith(b"\n"):
            while line and not line.endswith(b"\n"):
                line = stream.readline(1 << 20)
            yield None
            continue
        yield line
