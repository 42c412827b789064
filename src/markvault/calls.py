"""Declared calls: which facade methods read and which write, and where they run.

Each method of the facade (``vault.Vault``) is declared next to its definition with
``@reads`` or ``@writes``. The declaration keeps the method's signature for mypy and
editors, and routes every call through the vault's ``Host``: the process that owns the
index runs the method's own body (``host.LocalHost``); any other process sends it to the
owner over a socket (``shared.SharedHost``), where the same body runs. The owner's
dispatch table (``declared_calls``) is read off these declarations, so a method is
declared once and nowhere else.

A read changes nothing: it may be sent again to the next owner after one died, and it
is answered at once (empty, saying why) while a long sync holds the index. A write is
sent only to an owner that just answered, and wakes the background embedding.

This module is light on purpose: a process that only talks to an owner never imports
the index layer.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Concatenate, ParamSpec, Protocol, TypeVar

from markvault.answers.status import OwnerInfo
from markvault.config import Settings
from markvault.types import ReindexReport

if TYPE_CHECKING:
    from markvault.core import Core
    from markvault.indexing.change_feed import Listener
    from markvault.indexing.watch_batches import WatchBatch

P = ParamSpec("P")
R = TypeVar("R")

SyncReport = Callable[["WatchBatch", ReindexReport], None]


@dataclass(frozen=True)
class Call:
    """One declared facade method: its name on the wire, whether it writes, its body."""

    name: str
    writes: bool
    body: Callable[..., Any]


class Host(Protocol):
    """Where a vault's calls run, and what else a process does with its index (the
    parts that are not calls: background work, watching, who owns the index)."""

    @property
    def settings(self) -> Settings: ...

    @property
    def model_wait(self) -> float | None:
        """Seconds a search waits for a model loading in the background (None: load)."""

    @model_wait.setter
    def model_wait(self, value: float | None) -> None: ...

    def call(self, call: Call, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        """Run a declared call: here, or at the process that owns the index."""

    @property
    def runs_here(self) -> bool:
        """Whether calls run in this process now (on its own core), not at another
        process that owns the index: only then can a cancelled call be stopped here."""

    def core(self) -> Core:
        """This process's own core (it owns the index); raises where calls go elsewhere."""

    def owner_info(self) -> OwnerInfo:
        """Which process owns the index, as this process sees it."""

    def start_background(self, *, watch: bool = True, poll: bool | None = None) -> None:
        """For long-running servers: load the model in the background; where this
        process owns a shared index, also embed and watch the files."""

    def on_sync(self, report: SyncReport) -> None:
        """Call ``report`` after each sync the watcher runs here."""

    def watch_changes(self, listener: Listener) -> Callable[[], None]:
        """Call ``listener`` (on any thread; it must not block) with what changes in the
        index and the owner's news (``feed.py``), wherever the index is owned, now and
        after the owner changes hands; returns the function that stops it."""

    def watch_forever(self, stop: threading.Event, poll: bool | None = None) -> None:
        """Keep the index in step with the files until ``stop`` is set."""

    def close(self) -> None: ...


class Routed(Protocol):
    """What a declared method needs of its object: the host that runs its calls."""

    @property
    def host(self) -> Host: ...


V = TypeVar("V", bound=Routed)


def reads(method: Callable[Concatenate[V, P], R]) -> Callable[Concatenate[V, P], R]:
    """Declare a facade method that changes nothing (see the module's docstring)."""
    return _declare(method, writes=False)


def writes(method: Callable[Concatenate[V, P], R]) -> Callable[Concatenate[V, P], R]:
    """Declare a facade method that changes the vault or the index."""
    return _declare(method, writes=True)


def _declare(
    method: Callable[Concatenate[V, P], R], writes: bool
) -> Callable[Concatenate[V, P], R]:
    call = Call(method.__name__, writes, method)

    @functools.wraps(method)
    def routed(self: V, /, *args: P.args, **kwargs: P.kwargs) -> R:
        result: R = self.host.call(call, args, kwargs)
        return result

    routed.declared = call  # type: ignore[attr-defined]
    return routed


def declared_calls(cls: type) -> dict[str, Call]:
    """name -> Call of every method ``cls`` declares with ``@reads`` or ``@writes``."""
    found = (getattr(member, "declared", None) for member in vars(cls).values())
    return {call.name: call for call in found if isinstance(call, Call)}
