"""The agent tools (tools.py) as an MCP server, over stdio."""

from __future__ import annotations

from collections.abc import Callable
from typing import IO, Any

import anyio

from proofeval.agents.tools import DESCRIPTIONS, Tools
from proofeval.errors import InputError
from proofeval.runs.manifest import version


def build_server(tools: Tools):  # -> MCPServer
    """The MCP server: each tool runs in a worker thread (provers take seconds)."""
    from mcp.server.mcpserver import MCPServer
    from mcp.server.mcpserver.exceptions import ToolError

    server = MCPServer(
        "proofeval",
        version=version(),
        instructions="Prove the benchmark's problems in the real prover; submit each proof "
        "once it checks OK.",
    )

    def register(name: str, fn: Callable[..., Any]) -> None:
        call = tools.logged(name, fn)

        async def tool(**arguments: Any) -> Any:
            try:
                return await anyio.to_thread.run_sync(lambda: call(**arguments))
            except InputError as exc:  # a refused call is an error result (isError), not data
                raise ToolError(str(exc)) from None

        tool.__signature__ = _signature(fn)  # type: ignore[attr-defined]
        tool.__annotations__ = dict(fn.__annotations__)
        server.add_tool(tool, name=name, description=DESCRIPTIONS[name])

    for name in DESCRIPTIONS:
        register(name, getattr(tools, name))
    return server


def serve_stdio(server: Any, stdin: IO[str] | None = None, stdout: IO[str] | None = None) -> None:
    """Serve `server` over this process's stdin and stdout until the client leaves; or
    over the given text streams (a test serves an in-process server, which shares the
    test session's loaded HOL Light, through pipes)."""
    if stdin is None or stdout is None:
        server.run("stdio")
        return
    from mcp.server.stdio import stdio_server

    async def serve() -> None:
        async with stdio_server(anyio.wrap_file(stdin), anyio.wrap_file(stdout)) as streams:
            # What MCPServer.run_stdio_async does, with these streams instead of fd 0 and 1.
            low = server._lowlevel_server
            await low.run(*streams, low.create_initialization_options())

    anyio.run(serve)


def _signature(fn: Callable[..., Any]):
    import inspect

    return inspect.signature(fn)
