"""A small MCP server (the official Python SDK's MCPServer) for tests/it/serve.rs: its answers
name the server, so a test can tell which upstream server a request reached.

usage: py_resource_server.py NAME
Resources: `file:///shared.txt` (every instance lists it: "shared from NAME") and
`only-NAME://doc` ("only NAME"); template `note://NAME/{id}` ("note {id} from NAME"); prompt
`greet` ("hello from NAME"); tool `whoami` ("NAME").
"""
import sys

from mcp.server.mcpserver import MCPServer

NAME = sys.argv[1]
server = MCPServer(f"py-{NAME}")


@server.resource("file:///shared.txt")
def shared() -> str:
    return f"shared from {NAME}"


@server.resource(f"only-{NAME}://doc")
def only() -> str:
    return f"only {NAME}"


@server.resource(f"note://{NAME}/{{id}}")
def note(id: str) -> str:
    return f"note {id} from {NAME}"


@server.prompt()
def greet() -> str:
    return f"hello from {NAME}"


@server.tool()
def whoami() -> str:
    return NAME


server.run("stdio")
