"""Drives `agent mcp serve` with the official Python MCP SDK (tests/serve.rs).

usage: py_client.py stdio CWD CMD [ARGS...] | py_client.py http URL | py_client.py listchanged CWD CMD [ARGS...]
       | py_client.py elicit CWD CMD [ARGS...]
Prints one JSON object: what each step saw. `listchanged` calls `fixture_echo` (on a fixture
run with --echo-retires), waits for `notifications/tools/list_changed`, and lists again.
`elicit` calls `fixture_elicit_form` (a fixture run with --host-tools) from a session whose
`elicitation_callback` answers (directly and from an `execute_code` script), then from one
without the callback, then from one whose callback fails (the server's policy answers in both).
Over HTTP the bearer token is taken from the environment variable MCP_BEARER.
"""
import asyncio
import json
import sys

import os

import anyio

from mcp import ClientSession, types
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client


def text_of(r):
    return "\n".join(c.text for c in r.content if getattr(c, "type", "") == "text")


async def scenario(session):
    out = {}
    await session.initialize()
    tools = await session.list_tools()
    out["tools"] = sorted(t.name for t in tools.tools)
    add = next(t for t in tools.tools if t.name == "fixture_add")
    out["add_has_output_schema"] = add.output_schema is not None
    out["add_has_result_handler"] = "result_handler" in add.input_schema.get("properties", {})

    async def call(name, args):
        r = await session.call_tool(name, args)
        return {"text": text_of(r), "is_error": bool(r.is_error)}

    out["echo"] = await call("fixture_echo", {"message": "hi there"})
    out["add_jq"] = await call("fixture_add", {"a": 2, "b": 3, "result_handler": {"language": "jq", "script": ".sum * 10"}})
    out["add_js"] = await call("fixture_add", {"a": 2, "b": 3, "result_handler": "tool_output.sum + 1"})
    out["code"] = await call("execute_code", {"code": "console.log(1 + 2)"})
    out["code_tool"] = await call(
        "execute_code", {"code": "const r = await callMCPTool('fixture', 'add', {a: 20, b: 22}); console.log(r.sum)"}
    )
    out["bad_handler"] = await call("fixture_sleep", {"ms": 4242, "result_handler": {"language": "jq", "script": ".["}})
    out["good_sleep"] = await call("fixture_sleep", {"ms": 4243})
    out["handler_after"] = await call("fixture_echo", {"message": "x", "result_handler": "tool_output.nope.deeper"})
    out["search"] = await call("search_tools", {"query": "add two integers", "limit": 3})
    describe = next(t for t in tools.tools if t.name == "describe_tool")
    out["describe_required"] = describe.input_schema.get("required")
    out["describe"] = await call("describe_tool", {"name": "fixture.add"})
    out["describe_by_tool"] = await call("describe_tool", {"tool": "fixture.add"})

    seen = []

    async def on_progress(progress, total, message):
        seen.append([progress, total, message])

    r = await session.call_tool("fixture_progress", {"steps": 3, "delay_ms": 5}, progress_callback=on_progress)
    out["progress"] = {"text": text_of(r), "is_error": bool(r.is_error), "seen": seen}
    return out


async def list_changed(session, changed):
    await session.initialize()
    before = sorted(t.name for t in (await session.list_tools()).tools)
    await session.call_tool("fixture_echo", {"message": "bye"})
    with anyio.fail_after(15):
        await changed.wait()
    after = sorted(t.name for t in (await session.list_tools()).tools)
    return {"before": before, "after": after}


async def elicit(params):
    asked = []

    async def answer(context, p):
        asked.append({"message": p.message, "fields": sorted(p.requested_schema.get("properties", {}))})
        return types.ElicitResult(action="accept", content={"name": "Grace", "count": 7})

    out = {}
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write, elicitation_callback=answer) as session:
            await session.initialize()
            r = await session.call_tool("fixture_elicit_form", {})
            out["with_callback"] = {"text": text_of(r), "is_error": bool(r.is_error), "asked": asked}
            code = "console.log(await callMCPTool('fixture', 'elicit_form', {}))"
            r = await session.call_tool("execute_code", {"code": code})
            out["code_with_callback"] = {"text": text_of(r), "is_error": bool(r.is_error)}
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            r = await session.call_tool("fixture_elicit_form", {})
            out["without_callback"] = {"text": text_of(r), "is_error": bool(r.is_error)}

    async def fail(context, p):
        return types.ErrorData(code=-32603, message="the form could not be shown")

    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write, elicitation_callback=fail) as session:
            await session.initialize()
            r = await session.call_tool("fixture_elicit_form", {})
            out["failing_callback"] = {"text": text_of(r), "is_error": bool(r.is_error)}
    return out


async def main():
    mode = sys.argv[1]
    if mode == "elicit":
        out = await elicit(StdioServerParameters(command=sys.argv[3], args=sys.argv[4:], cwd=sys.argv[2]))
    elif mode == "listchanged":
        changed = anyio.Event()

        async def on_message(message):
            if getattr(message, "method", None) == "notifications/tools/list_changed":
                changed.set()

        params = StdioServerParameters(command=sys.argv[3], args=sys.argv[4:], cwd=sys.argv[2])
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write, message_handler=on_message) as session:
                out = await list_changed(session, changed)
    elif mode == "stdio":
        params = StdioServerParameters(command=sys.argv[3], args=sys.argv[4:], cwd=sys.argv[2])
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write) as session:
                out = await scenario(session)
    else:
        http = create_mcp_http_client(headers={"Authorization": "Bearer " + os.environ["MCP_BEARER"]})
        async with streamable_http_client(sys.argv[2], http_client=http) as (read, write):
            async with ClientSession(read, write) as session:
                out = await scenario(session)
    print(json.dumps(out))


asyncio.run(main())
