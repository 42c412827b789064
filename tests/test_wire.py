"""The facade's calls as declared, and the values they pass over the owner's socket."""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import json
from pathlib import Path

import pytest

from markvault import errors
from markvault.calls import Call, Host, declared_calls
from markvault.runtime.wire import _PLAIN, decode, dumps, encode, error_json, raise_error
from markvault.sessions.session_summary import SessionSummary
from markvault.types.edits import Edit
from markvault.types.reindex import ReindexReport
from markvault.types.search import Filters, Hit, SearchRequest, SearchResult
from markvault.types.sessions import SessionImportReport
from markvault.vault import CALLS, Vault

# What each call may do: a read is sent again after an owner died, a write is not.
WRITES = {
    "reindex",
    "refresh",
    "new_note",
    "edit_note",
    "move_note",
    "delete_note",
    "restore_note",
    "learn_knowledge",
    "store_document",
    "import_sessions",
    "save_session_summary",
    "sync",
}


def test_every_call_of_the_facade_is_declared_once_as_a_read_or_a_write() -> None:
    declared = {name for name, member in vars(Vault).items() if isinstance(member, Call)}
    methods = {
        name
        for name, member in vars(Vault).items()
        if inspect.isfunction(member) and not name.startswith("_")
    }
    assert methods == {"close", "status"}  # closing is the host's; status asks it who owns
    assert set(CALLS) == declared
    assert {name for name, call in CALLS.items() if call.writes} == WRITES
    assert declared_calls(Vault) == CALLS


def test_a_declared_call_is_its_core_methods_signature_and_runs_no_second_facade(
    vault: Vault, monkeypatch: pytest.MonkeyPatch
) -> None:
    core = vault.host.core()
    runs = vault.search.__name__, Vault.search.target(core)
    assert runs == ("search", core.notes.search)
    assert list(inspect.signature(runs[1]).parameters) == ["request", "progress"]
    assert "expected_hash" in (Vault.edit_note.target(core).__doc__ or "")
    made: list[Vault] = []
    real_init = Vault.__init__

    def counted(self: Vault, host: Host) -> None:
        made.append(self)
        real_init(self, host)

    monkeypatch.setattr(Vault, "__init__", counted)
    assert vault.topics() is not None and vault.learn_knowledge("t", "A point.")["path"]
    assert made == []  # the host ran both on its core: the facade was entered once


def test_values_survive_the_wire() -> None:
    hit = Hit(
        "n", "notes/a.md", "A", "note", None, 3, ["A"], [1, 4], 0.5, {"kw": 1}, {}, "s", "h", "u"
    )
    values = [
        Filters(kinds=["note"], meta={"owner": "ann"}, scope="decisions"),
        Edit("set_key", key="tags", value=["a", "b"]),
        ReindexReport(notes=3, errors=[{"path": "x.md", "message": "bad"}], seconds=1.5),
        SessionImportReport(new=2, sessions=[{"session_id": "s", "action": "new"}]),
        Path("/tmp/x.md"),
        {"nested": [Path("a"), {"deep": Filters(tags=["t"])}]},
    ]
    for value in values:
        assert decode(encode(value)) == value
    result = SearchResult("q", "keyword", [hit], {"total": 1.0}, 1, ["w"], {"keyword": 1})
    back = decode(encode(result))
    assert back.hits == [hit] and (back.query, back.total, back.counts) == ("q", 1, {"keyword": 1})


def test_every_plain_type_named_on_the_wire_is_a_dataclass_of_its_module() -> None:
    """The codec names each type's module (imported when a value arrives): a name or a
    module that moved would fail only when that value first crosses."""
    for name, home in _PLAIN.items():
        cls = getattr(importlib.import_module(home), name)
        assert dataclasses.is_dataclass(cls) and cls.__name__ == name


def test_other_dataclasses_cross_as_mappings() -> None:
    summary = SessionSummary(overview="Fixed it.", decisions=("Use Decimal",))
    data = decode(encode(summary))
    assert SessionSummary.from_dict(data) == summary


def test_errors_keep_their_class_and_hint() -> None:
    with pytest.raises(errors.ConflictError) as caught:
        raise_error(error_json(errors.ConflictError("The note changed.", "Read it again.")))
    assert (caught.value.message, caught.value.hint) == ("The note changed.", "Read it again.")


def test_an_error_of_another_module_keeps_its_exit_code() -> None:
    """A refusal by the credential gate in the owner ends the client's command with 6."""
    from markvault.credentials.policy import CredentialRefused

    refused = CredentialRefused("Refused: notes/a.md holds 1 credential.", "Allow it.", [])
    with pytest.raises(errors.RefusedError) as caught:
        raise_error(error_json(refused))
    assert caught.value.exit_code == 6 and caught.value.hint == "Allow it."


def test_a_search_request_crosses_the_wire_unchanged() -> None:
    request = SearchRequest(
        "rank fusion",
        mode="deep",
        filters=Filters(tags=["search"], since="2026-01-01", meta={"k": "v"}),
        limit=3,
        offset=2,
        full_text=True,
        variants=("lex: RRF", "vec: merging lists"),
        order="date",
        min_score=0.25,
    )
    assert decode(json.loads(dumps({"v": encode(request)}))["v"]) == request
