"""Drives MCP's other primitives through `agent mcp serve` with the official Python SDK
(tests/it/serve.rs). Prints one JSON object: what each step saw.

usage: py_primitives.py everything PREFIX CWD CMD [ARGS...]   (stdio; PREFIX is "-" for none)
       py_primitives.py isolation PREFIX URL                    (HTTP, two sessions; MCP_BEARER)
       py_primitives.py cleanup PREFIX URL                      (HTTP, two sessions; MCP_BEARER)
       py_primitives.py flood PREFIX URL                        (HTTP, one session; MCP_BEARER)
       py_primitives.py two CWD CMD [ARGS...]                   (stdio; two py_resource_server.py)
       py_primitives.py sampling CWD CMD [ARGS...]              (stdio; server-everything, sampling allowed)

`everything`: server-everything behind serve: resources (text, blob), templates, subscribe and
an update, prompts, completion, logging (set the level, receive a message), the tools as listed.
`isolation`: session A subscribes, sets a level and turns on server-everything's simulated
updates and logging; session B (the other remote client) does neither and must hear nothing.
`cleanup`: session A subscribes and ends without unsubscribing; session B, listening to the
log, hears server-everything acknowledge serve's unsubscribe.
`flood`: one session subscribes to URI after URI made from a template until serve refuses.
`two`: two servers listing the same URI; each rewritten URI is read from its own server.
`sampling`: server-everything's sampling request during a proxied call, from a session whose
client samples (it answers) and from one whose client does not declare sampling.
"""
import asyncio
import base64
import json
import os
import sys
import warnings

import anyio

from mcp import ClientSession, types
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

warnings.simplefilter("ignore")


def dump(model):
    return model.model_dump(mode="json", by_alias=True, exclude_none=True)


class Heard:
    """Log messages and resource updates a session received."""

    def __init__(self):
        self.logs = []
        self.updated = []
        self.got_log = anyio.Event()
        self.got_update = anyio.Event()

    async def on_log(self, params):
        self.logs.append({"level": params.level, "logger": params.logger, "data": params.data})
        self.got_log.set()

    async def on_message(self, message):
        if isinstance(message, types.ResourceUpdatedNotification) or getattr(message, "method", None) == "notifications/resources/updated":
            self.updated.append(message.params.uri)
            self.got_update.set()


async def everything(session, heard, prefix):
    out = {}
    init = await session.initialize()
    out["server_info"] = dump(init.server_info)
    out["capabilities"] = dump(init.capabilities)
    out["instructions"] = init.instructions
    tools = (await session.list_tools()).tools
    out["tools"] = {t.name: dump(t) for t in tools}
    if "search_tools" in out["tools"]:
        found = await session.call_tool("search_tools", {"query": "prompt with arguments about a city"})
        out["search"] = found.content[0].text
    listed = (await session.list_resources()).resources
    out["resources"] = [r.uri for r in listed]
    out["templates"] = [t.uri_template for t in (await session.list_resource_templates()).resource_templates]
    doc = next(r.uri for r in listed if r.uri.endswith("architecture.md"))
    text = (await session.read_resource(doc)).contents[0]
    out["text"] = {"uri": str(text.uri), "starts": text.text[:40]}
    blob_template = next(t for t in out["templates"] if "/blob/" in t)
    blob = (await session.read_resource(blob_template.replace("{resourceId}", "2"))).contents[0]
    out["blob"] = {"uri": str(blob.uri), "decoded": base64.b64decode(blob.blob).decode()[:40]}
    try:
        await session.read_resource("demo://resource/static/document/nope.md")
        out["missing"] = None
    except Exception as e:  # an MCP error answer
        out["missing"] = str(e)
    prompts = (await session.list_prompts()).prompts
    out["prompts"] = [p.name for p in prompts]
    args = next(p.name for p in prompts if p.name.endswith("args-prompt"))
    got = await session.get_prompt(args, {"city": "Oslo", "state": "Viken"})
    out["prompt_text"] = " ".join(m.content.text for m in got.messages if getattr(m.content, "type", "") == "text")
    try:
        await session.get_prompt(args, {})
        out["prompt_missing_arg"] = None
    except Exception as e:
        out["prompt_missing_arg"] = str(e)
    completable = next(p.name for p in prompts if p.name.endswith("completable-prompt"))
    done = await session.complete(types.PromptReference(type="ref/prompt", name=completable), {"name": "department", "value": "E"})
    out["completion"] = done.completion.values
    text_template = next(t for t in out["templates"] if "/text/" in t)
    done = await session.complete(
        types.ResourceTemplateReference(type="ref/resource", uri=text_template), {"name": "resourceId", "value": "7"}
    )
    out["template_completion"] = done.completion.values
    await session.set_logging_level("debug")
    await session.subscribe_resource(doc)
    await session.call_tool(prefix + "toggle-subscriber-updates", {})
    await session.call_tool(prefix + "toggle-simulated-logging", {})
    with anyio.fail_after(20):
        await heard.got_log.wait()
        await heard.got_update.wait()
    out["logs"] = heard.logs[:3]
    out["updated"] = sorted(set(heard.updated))
    structured = await session.call_tool(prefix + "get-structured-content", {"location": "New York"})
    out["structured"] = structured.structured_content
    return out


async def isolation(url, prefix):
    token = os.environ["MCP_BEARER"]
    a_heard, b_heard = Heard(), Heard()
    out = {}

    async def session_b(ready, done):
        http = create_mcp_http_client(headers={"Authorization": "Bearer " + token})
        async with streamable_http_client(url, http_client=http) as (read, write):
            async with ClientSession(read, write, logging_callback=b_heard.on_log, message_handler=b_heard.on_message) as s:
                await s.initialize()
                await s.list_resources()
                ready.set()
                await done.wait()

    http = create_mcp_http_client(headers={"Authorization": "Bearer " + token})
    ready, done = anyio.Event(), anyio.Event()
    async with anyio.create_task_group() as tg:
        tg.start_soon(session_b, ready, done)
        await ready.wait()
        async with streamable_http_client(url, http_client=http) as (read, write):
            async with ClientSession(read, write, logging_callback=a_heard.on_log, message_handler=a_heard.on_message) as s:
                await s.initialize()
                doc = next(r.uri for r in (await s.list_resources()).resources if r.uri.endswith("architecture.md"))
                await s.set_logging_level("debug")
                await s.subscribe_resource(doc)
                await s.call_tool(prefix + "toggle-subscriber-updates", {})
                await s.call_tool(prefix + "toggle-simulated-logging", {})
                with anyio.fail_after(20):
                    await a_heard.got_log.wait()
                    await a_heard.got_update.wait()
                # One more interval of the simulated updates and logging (5 s), for B to hear
                # what it should not.
                await anyio.sleep(6)
        done.set()
    out["a"] = {"logs": len(a_heard.logs), "updated": sorted(set(a_heard.updated))}
    out["b"] = {"logs": b_heard.logs, "updated": b_heard.updated}
    return out


async def cleanup(url):
    token = os.environ["MCP_BEARER"]
    heard = Heard()
    http = create_mcp_http_client(headers={"Authorization": "Bearer " + token})
    async with streamable_http_client(url, http_client=http) as (read, write):
        async with ClientSession(read, write, logging_callback=heard.on_log) as b:
            await b.initialize()
            await b.set_logging_level("debug")
            http_a = create_mcp_http_client(headers={"Authorization": "Bearer " + token})
            async with streamable_http_client(url, http_client=http_a) as (read_a, write_a):
                async with ClientSession(read_a, write_a) as a:
                    await a.initialize()
                    doc = next(r.uri for r in (await a.list_resources()).resources if r.uri.endswith("architecture.md"))
                    await a.subscribe_resource(doc)
            # A ended (the SDK deletes its session); its subscription is given up upstream.
            with anyio.fail_after(20):
                while not any("Unsubscribe" in str(l["data"]) for l in heard.logs):
                    await anyio.sleep(0.1)
    return {"logs": [str(l["data"]) for l in heard.logs]}


async def flood(url):
    token = os.environ["MCP_BEARER"]
    http = create_mcp_http_client(headers={"Authorization": "Bearer " + token})
    async with streamable_http_client(url, http_client=http) as (read, write):
        async with ClientSession(read, write) as s:
            await s.initialize()
            for n in range(1, 1001):
                try:
                    await s.subscribe_resource("demo://resource/dynamic/text/%d" % n)
                except Exception as e:
                    # Refused: the one held first can still be given up, and then one more taken.
                    await s.unsubscribe_resource("demo://resource/dynamic/text/1")
                    await s.subscribe_resource("demo://resource/dynamic/text/%d" % n)
                    return {"accepted": n - 1, "refused": str(e)}
    return {"accepted": 1000}


async def two(session):
    await session.initialize()
    out = {}
    out["resources"] = sorted(r.uri for r in (await session.list_resources()).resources)
    out["templates"] = sorted(t.uri_template for t in (await session.list_resource_templates()).resource_templates)
    out["prompts"] = sorted(p.name for p in (await session.list_prompts()).prompts)
    reads = {}
    for uri in out["resources"]:
        c = (await session.read_resource(uri)).contents[0]
        reads[uri] = {"text": c.text, "uri": str(c.uri)}
    for t in out["templates"]:
        uri = t.replace("{id}", "9")
        reads[uri] = {"text": (await session.read_resource(uri)).contents[0].text}
    out["reads"] = reads
    for name in out["prompts"]:
        got = await session.get_prompt(name, {})
        out.setdefault("prompt_text", {})[name] = got.messages[0].content.text
    try:
        await session.read_resource("file:///shared.txt")
        out["ambiguous"] = None
    except Exception as e:
        out["ambiguous"] = str(e)
    return out


async def sampling(params):
    out = {}
    asked = []

    async def sample(context, p):
        asked.append(p.messages[0].content.text)
        return types.CreateMessageResult(
            role="assistant", content=types.TextContent(type="text", text="sampled by the client"), model="client-model"
        )

    args = {"prompt": "what is 2 + 2?", "maxTokens": 10}
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write, sampling_callback=sample) as s:
            await s.initialize()
            r = await s.call_tool("everything_trigger-sampling-request", args)
            out["with_callback"] = {"text": "\n".join(c.text for c in r.content if c.type == "text"), "is_error": bool(r.is_error), "asked": asked}
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as s:
            await s.initialize()
            r = await s.call_tool("everything_trigger-sampling-request", args)
            out["without_callback"] = {"text": "\n".join(c.text for c in r.content if c.type == "text"), "is_error": bool(r.is_error)}
    return out


async def main():
    mode = sys.argv[1]
    if mode == "everything":
        prefix = "" if sys.argv[2] == "-" else sys.argv[2]
        params = StdioServerParameters(command=sys.argv[4], args=sys.argv[5:], cwd=sys.argv[3])
        heard = Heard()

        # Declares elicitation, as many clients do (server-everything offers its elicitation
        # tools only to a client that declares it).
        async def decline(context, params):
            return types.ElicitResult(action="decline")

        async with stdio_client(params) as (read, write):
            async with ClientSession(
                read, write, logging_callback=heard.on_log, message_handler=heard.on_message, elicitation_callback=decline
            ) as s:
                out = await everything(s, heard, prefix)
    elif mode == "sampling":
        out = await sampling(StdioServerParameters(command=sys.argv[3], args=sys.argv[4:], cwd=sys.argv[2]))
    elif mode == "cleanup":
        out = await cleanup(sys.argv[3])
    elif mode == "flood":
        out = await flood(sys.argv[3])
    elif mode == "isolation":
        out = await isolation(sys.argv[3], "" if sys.argv[2] == "-" else sys.argv[2])
    else:
        params = StdioServerParameters(command=sys.argv[3], args=sys.argv[4:], cwd=sys.argv[2])
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write) as s:
                out = await two(s)
    print(json.dumps(out))


asyncio.run(main())
