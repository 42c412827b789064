"""Declared calls: what each facade call runs, whether it writes, and where it runs.

Each call of the facade (``vault.Vault``) is one line: ``name = reads(lambda core: ...)``
or ``writes(...)``, naming the core method that does the work (``core/``). That method
is the call's one definition: its signature (kept for mypy and editors through the
declaration's type, ``Call[P, R]``) and its docstring. Calling it on a vault routes the
call through the vault's ``Host``: the process that owns the index runs the core method
on its own ``Core`` (``runtime/local_host.py``); any other process sends the call's name
and arguments to the owner over a socket (``runtime/shared_host.py``), where the same
core method runs. The owner's dispatch table (``declared_calls``) is read off these
declarations, so a call is declared once and nowhere else.

A read changes nothing: it may be sent again to the next owner after one died, and it
is answered at once (empty, saying why) while a long sync holds the index. A write is
sent only to an owner that just answered, and wakes the background embedding.

This module is light on purpose: a process that only talks to an owner never imports
the core or the index layer (the declarations name the core's methods in lambdas, run
only where the core is).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Generic, ParamSpec, Protocol, TypeVar, overload

from markvault.config import Settings

if TYPE_CHECKING:
    from markvault.answers.status import OwnerInfo
    from markvault.core import Core
    from markvault.indexing.change_feed import Listener
    from markvault.indexing.watch_batches import WatchBatch
    from markvault.types.reindex import ReindexReport

P = ParamSpec("P")
R = TypeVar("R")

SyncReport = Callable[["WatchBatch", "ReindexReport"], None]


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

    def call(self, call: Call[Any, Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
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
    """What a declared call needs of its object: the host that runs its calls."""

    @property
    def host(self) -> Host: ...


class Call(Generic[P, R]):
    """One declared facade call: its name on the wire, whether it writes, and the core
    method that runs it. Read on a vault it is that method's signature, routed through
    the vault's host; read on the class it is the declaration itself."""

    def __init__(self, target: Callable[[Core], Callable[P, R]], *, writes: bool) -> None:
        self.target = target
        self.writes = writes
        self.name = ""  # the attribute's name, set when the class is made

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"<{'write' if self.writes else 'read'} call {self.name}>"

    def run(self, core: Core, args: tuple[Any, ...], kwargs: dict[str, Any]) -> R:
        """Run the call on ``core``: in the process that owns the index."""
        return self.target(core)(*args, **kwargs)

    @overload
    def __get__(self, obj: None, owner: type) -> Call[P, R]: ...

    @overload
    def __get__(self, obj: Routed, owner: type) -> Callable[P, R]: ...

    def __get__(self, obj: Routed | None, owner: type) -> Call[P, R] | Callable[P, R]:
        if obj is None:
            return self
        host = obj.host

        def routed(*args: P.args, **kwargs: P.kwargs) -> R:
            result: R = host.call(self, args, kwargs)
            return result

        routed.__name__ = routed.__qualname__ = self.name
        return routed


def reads(target: Callable[[Core], Callable[P, R]]) -> Call[P, R]:
    """Declare a call that changes nothing (see the module's docstring)."""
    return Call(target, writes=False)


def writes(target: Callable[[Core], Callable[P, R]]) -> Call[P, R]:
    """Declare a call that changes the vault or the index."""
    return Call(target, writes=True)


def declared_calls(cls: type) -> dict[str, Call[..., Any]]:
    """name -> Call of every call ``cls`` declares with ``reads`` or ``writes``."""
    return {call.name: call for call in vars(cls).values() if isinstance(call, Call)}
