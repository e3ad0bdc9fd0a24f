#!/bin/sh
# The client command of the MCP conformance suite (`conformance client --command`): the suite
# starts a scenario server, runs `client.sh URL` with MCP_CONFORMANCE_SCENARIO set, and judges
# what the server saw. The server is declared only through config environment overrides, as
# `conformance`, and the scenario's tool is called with `agent mcp call`.
# Auth scenarios go the way a user goes: the `auth` keys from MCP_CONFORMANCE_CONTEXT (a
# pre-registered client, its secret or private key), `agent mcp login --no-browser`, the printed
# URL fetched (the suite's authorization endpoint redirects at once to agent's loopback
# listener), then the call. A call that ends with exit code 3 asking for more scopes is signed in
# again with those scopes (a user following agent's hint), at most 3 sign-ins in all.
# AGENT_BIN: the agent binary (default: `agent` on PATH).
set -eu
url="${1:?usage: client.sh URL}"
agent="${AGENT_BIN:-agent}"
export AGENT_MCP__SERVERS__CONFORMANCE__URL="$url"
scenario="${MCP_CONFORMANCE_SCENARIO:-}"

# A field of MCP_CONFORMANCE_CONTEXT (JSON), empty when absent.
field() {
  [ -n "${MCP_CONFORMANCE_CONTEXT:-}" ] || return 0
  node -e 'const v = JSON.parse(process.argv[1])[process.argv[2]]; if (v !== undefined) process.stdout.write(String(v))' \
    "$MCP_CONFORMANCE_CONTEXT" "$1"
}

# `agent mcp login conformance --no-browser [ARGS]`, following the URL it prints.
login() {
  err="login.$$.err"
  : > "$err"
  "$agent" mcp login conformance --no-browser "$@" 2> "$err" &
  pid=$!
  tries=0
  sign_in_url=""
  while [ -z "$sign_in_url" ] && [ $tries -lt 200 ] && kill -0 "$pid" 2>/dev/null; do
    sign_in_url=$(sed -n 's/^open this URL to sign in: //p' "$err")
    [ -n "$sign_in_url" ] || { sleep 0.1; tries=$((tries + 1)); }
  done
  if [ -n "$sign_in_url" ]; then
    curl -s -o /dev/null -L --max-time 20 "$sign_in_url" || true
  fi
  status=0
  wait "$pid" || status=$?
  cat "$err" >&2
  return $status
}

case "$scenario" in
  initialize) exec "$agent" mcp list --server conformance ;;
  tools_call) tool=add_numbers args='{"a": 2, "b": 3}' ;;
  sse-retry) tool=test_reconnection args='{}' ;;
  elicitation-sep1034-client-defaults)
    tool=test_client_elicitation_defaults args='{}'
    export AGENT_MCP__SERVERS__CONFORMANCE__ELICITATION=accept_defaults ;;
  auth/*)
    tool=test-tool args='{}'
    id=$(field client_id); secret=$(field client_secret); pem=$(field private_key_pem); alg=$(field signing_algorithm)
    [ -z "$id" ] || export AGENT_MCP__SERVERS__CONFORMANCE__AUTH__CLIENT_ID="$id"
    [ -z "$secret" ] || export AGENT_MCP__SERVERS__CONFORMANCE__AUTH__CLIENT_SECRET="$secret"
    if [ -n "$pem" ]; then
      printf '%s\n' "$pem" > client-key.pem
      export AGENT_MCP__SERVERS__CONFORMANCE__AUTH__PRIVATE_KEY_FILE="$PWD/client-key.pem"
      export AGENT_MCP__SERVERS__CONFORMANCE__AUTH__SIGNING_ALGORITHM="${alg:-ES256}"
    fi
    case "$scenario" in
      auth/client-credentials-*) export AGENT_MCP__SERVERS__CONFORMANCE__AUTH__GRANT=client_credentials ;;
      # The suite's stand-in for the client metadata document a real deployment hosts.
      auth/basic-cimd)
        export AGENT_MCP__SERVERS__CONFORMANCE__AUTH__CLIENT_METADATA_URL=https://conformance-test.local/client-metadata.json ;;
    esac
    login
    attempts=0
    while :; do
      status=0
      "$agent" mcp call "conformance.$tool" --args "$args" 2> call.err || status=$?
      cat call.err >&2
      [ "$status" -eq 3 ] || exit "$status"
      scopes=$(sed -n 's/.*needs sign-in with more scopes (\(.*\)): run.*/\1/p' call.err)
      [ -n "$scopes" ] && [ $attempts -lt 2 ] || exit 3
      attempts=$((attempts + 1))
      login --scopes "$scopes"
    done ;;
  *) echo "client.sh: no call for scenario \`$scenario\`" >&2; exit 2 ;;
esac
exec "$agent" mcp call "conformance.$tool" --args "$args"
