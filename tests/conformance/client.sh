#!/bin/sh
# The client command of the MCP conformance suite (`conformance client --command`): the suite
# starts a scenario server, runs `client.sh URL` with MCP_CONFORMANCE_SCENARIO set, and judges
# what the server saw. The server is declared only through config environment overrides, as
# `conformance`, and the scenario's tool is called with `agent mcp call`.
# AGENT_BIN: the agent binary (default: `agent` on PATH).
set -eu
url="${1:?usage: client.sh URL}"
agent="${AGENT_BIN:-agent}"
export AGENT_MCP__SERVERS__CONFORMANCE__URL="$url"
case "${MCP_CONFORMANCE_SCENARIO:-}" in
  initialize) exec "$agent" mcp list --server conformance ;;
  tools_call) tool=add_numbers args='{"a": 2, "b": 3}' ;;
  sse-retry) tool=test_reconnection args='{}' ;;
  elicitation-sep1034-client-defaults)
    tool=test_client_elicitation_defaults args='{}'
    export AGENT_MCP__SERVERS__CONFORMANCE__ELICITATION=accept_defaults ;;
  *) echo "client.sh: no call for scenario \`${MCP_CONFORMANCE_SCENARIO:-}\`" >&2; exit 2 ;;
esac
exec "$agent" mcp call "conformance.$tool" --args "$args"
