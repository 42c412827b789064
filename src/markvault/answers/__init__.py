"""PLAIN DATA: what each facade call answers, as JSON-ready typed dicts.

Each answer is declared once, in the module of its family of calls (``status``,
``reading``, ``writing``, ``search``, ``context``, ``sessions``, ``sync``); the core builds
it, the facade returns it, and mypy checks both (every key, every value's type) and the
faces' use of every key. A shape that answers share is declared once and inherited (a
TypedDict's keys come base by base, in order). They are dicts at run time: the CLI's
``--json`` and the MCP tools' structured content print them as they are, and the owner's
socket passes them as JSON.

Rules kept by every type here (a tool that returns one of these has it as its MCP
``outputSchema``; the SDK validates the answer against it and writes the structured
content from what it validated):
  * keys are declared in the order the core inserts them: the SDK writes them in the
    declared order, and leaves out any key not declared (mypy refuses such a key where
    the core builds the answer as a literal of its type);
  * a key present only sometimes is ``NotRequired``; a value that may be null says so;
  * a number that can be a whole number is ``int`` (``float`` would make the SDK write
    ``3.0`` for ``3``);
  * a shape that is one of several answers of a call is ``@final``, so that a face tells
    them apart by a key (``"matches" in answer``).

``typing_extensions.TypedDict``: pydantic (in the MCP SDK) reads nested TypedDicts only
from ``typing_extensions`` below Python 3.12.
"""
