"""The `vault` command line: thin commands over ``Vault``; no SQL, no file I/O.

The group and what the commands share are in ``app.py``; each command module registers
its commands on the group when imported, which the group does for the command given
(``app.COMMAND_MODULES``).
"""

from __future__ import annotations

import contextlib
import os
import sys

from markvault.cli import app
from markvault.cli.app import main

__all__ = ["main", "run"]


def run() -> None:
    """The `vault` command: the console script and `python -m markvault.cli`."""
    app._COMMAND_PROCESS = True  # this process is one command and ends with it
    try:
        main()
    except SystemExit as exc:
        _exit_at_once(exc.code)
        raise


def _exit_at_once(code: object) -> None:
    """End the process as soon as the command is done (its vault closed by the context's
    close callbacks). With no other thread, the exit handlers run as the interpreter
    would run them (logging, process pools, temporary folders), and its teardown of
    every module loaded is skipped: ~30 ms of a one-shot `vault search`, DuckDB's
    included. With a daemon thread still at work (the model loading in the background,
    or being exported with torch on first use) the interpreter's exit would wait seconds
    for it and could abort in the libraries' C++ teardown ("terminate called ...").
    Nothing of ours is left to flush: files are written whole, the index is closed."""
    import atexit
    import threading

    others = [t for t in threading.enumerate() if t is not threading.main_thread()]
    if not others:
        atexit._run_exitfuncs()
    elif not any(t.daemon for t in others):
        return  # the usual way out, which waits for them
    if isinstance(code, str):  # sys.exit("message"): printed as the interpreter would
        print(code, file=sys.stderr)
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):  # a reader already gone: nothing to say
            stream.flush()
    os._exit(code if isinstance(code, int) else 0 if code is None else 1)


if __name__ == "__main__":
    run()
