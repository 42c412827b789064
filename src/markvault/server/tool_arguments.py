"""MCP tools say no to arguments they do not take.

The SDK builds each tool's argument model from its signature and, as pydantic does by
default, drops what it does not know: `create_note(body=...)` wrote a note without the
text and reported success. Here every tool's model refuses an unknown argument, naming
it and the arguments the tool takes, and its input schema says
``additionalProperties: false`` so that a client can tell before it calls.
"""

from __future__ import annotations

from typing import Any

from mcp.server.mcpserver import MCPServer
from pydantic import ConfigDict, model_validator
from pydantic_core import PydanticCustomError


def refuse_unknown_arguments(server: MCPServer) -> None:
    """Make every tool registered on ``server`` refuse arguments it does not take."""
    # The SDK has no public way to reach a registered tool's argument model.
    for tool in server._tool_manager.list_tools():
        strict = _strict(tool.name, tool.fn_metadata.arg_model)
        tool.fn_metadata.arg_model = strict
        tool.parameters = strict.model_json_schema(by_alias=True)


def _strict(name: str, base: Any) -> Any:
    known = [field.alias or key for key, field in base.model_fields.items()]

    class Strict(base):
        model_config = ConfigDict(arbitrary_types_allowed=True, extra="forbid", title=base.__name__)

        @model_validator(mode="before")
        @classmethod
        def _known_only(cls, data: Any) -> Any:
            if isinstance(data, dict):
                unknown = sorted(str(key) for key in data if key not in known)
                if unknown:
                    raise PydanticCustomError(
                        "unknown_argument",
                        "{tool} takes no argument {unknown}; its arguments are: {known}. "
                        "Nothing was done.",
                        {
                            "tool": name,
                            "unknown": ", ".join(map(repr, unknown)),
                            "known": ", ".join(known) or "none",
                        },
                    )
            return data

    Strict.__name__ = Strict.__qualname__ = base.__name__
    return Strict
