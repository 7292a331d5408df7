"""The agent tools (tools.py) as an MCP server, over stdio.

Each tool publishes its output schema (schema.OUTPUTS, the models the service's OpenAPI
uses too) and answers its result as structured content and as JSON text; a call the tool
refuses is an error result (isError) with the reason. A call about a problem whose
context is still loading (warmup.py) waits for it, sending progress notifications."""

from __future__ import annotations

import asyncio
import inspect
import json
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import IO, Any

import anyio

from proofeval.agents.tools import DESCRIPTIONS, Tools
from proofeval.errors import CheckerError, InputError
from proofeval.runs.manifest import version
from proofeval.scale.service.schema import OUTPUTS
from proofeval.scale.service.warmup import Progress, Warmup

TICK = 2.0  # seconds between two progress notifications of a call that waits


def build_server(tools: Tools, warmup: Warmup | None = None):  # -> MCPServer
    """The MCP server: each tool runs in a worker thread (provers take seconds) of a pool
    whose threads live as long as the server: a prover process dies with the thread that
    started it (bwrap --die-with-parent), and anyio's own workers end when idle."""
    from mcp.server.mcpserver import Context, MCPServer
    from mcp.server.mcpserver.exceptions import ToolError
    from mcp.types import CallToolResult, TextContent

    workers = ThreadPoolExecutor(8, thread_name_prefix="proofeval-tool")
    server = MCPServer(
        "proofeval",
        version=version(),
        instructions="Prove the benchmark's problems in the real prover; submit each proof "
        "once it checks OK.",
    )

    def register(name: str, fn: Callable[..., Any]) -> None:
        call = tools.logged(name, fn)

        async def tool(mcp_context: Context, **arguments: Any) -> Any:
            try:
                await _wait_for_context(tools, warmup, arguments, mcp_context)
                loop = asyncio.get_running_loop()
                result = await loop.run_in_executor(workers, lambda: call(**arguments))
            except InputError as exc:  # a refused call is an error result (isError), not data
                raise ToolError(str(exc)) from None
            except CheckerError as exc:  # a prover process failed: said, as an error result
                raise ToolError(f"checker failure: {exc}") from None
            # built here, so the client gets the tool's reply as it is (fields the
            # schema does not name included), checked against the schema by the SDK
            text = TextContent(type="text", text=json.dumps(result, ensure_ascii=False))
            return CallToolResult(content=[text], structured_content=result)

        signature = inspect.signature(fn)
        context = inspect.Parameter(
            "mcp_context", inspect.Parameter.KEYWORD_ONLY, annotation=Context
        )
        params = [*signature.parameters.values(), context]
        tool.__signature__ = signature.replace(  # type: ignore[attr-defined]
            parameters=params, return_annotation=OUTPUTS[name]
        )
        tool.__annotations__ = dict(fn.__annotations__) | {
            "mcp_context": Context,
            "return": OUTPUTS[name],
        }
        server.add_tool(tool, name=name, description=DESCRIPTIONS[name])

    for name in DESCRIPTIONS:
        register(name, getattr(tools, name))
    return server


async def _wait_for_context(
    tools: Tools, warmup: Warmup | None, arguments: dict, mcp_context: Any
) -> None:
    """Until the context of the call's problem is warm (if it is being warmed), report
    progress every TICK seconds: how long it has waited, and what it waits for."""
    given = arguments.get("problem_id")
    if warmup is None or not isinstance(given, str) or given not in tools.problems:
        return
    problem = tools.problems[given]
    progress: Progress | None = warmup.of(problem)
    began = time.monotonic()
    while progress is not None and not progress.done.is_set():
        waited = time.monotonic() - began
        prover = warmup.provers.get(problem.prover)
        first = f"starting {problem.prover}, then " if prover and not prover.done.is_set() else ""
        await mcp_context.report_progress(
            round(waited, 1), None, f"{first}loading the context of {given}: {waited:.0f} s"
        )
        await anyio.to_thread.run_sync(progress.done.wait, TICK)


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
