#!/usr/bin/env bash
# Regenerates benches/data/tools/*.json: the tool lists of real MCP servers, installed from npm
# and PyPI at pinned versions and saved with `agent mcp list --json` (one file per server).
# Nothing here is copied from a public repository: each list is what the server itself answers
# to `tools/list`. Credentials the servers want at start are dummies (no call is ever made).
#
#   benches/data/catalog.sh [WORKDIR]      # WORKDIR: where to install (default: a temp dir)
#   AGENT=path/to/agent benches/data/catalog.sh
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
agent=${AGENT:-$here/../../target/debug/agent}
work=${1:-$(mktemp -d)}
mkdir -p "$work"
cd "$work"

npm_pkgs=(
  @modelcontextprotocol/server-filesystem@2026.8.31
  @modelcontextprotocol/server-memory@2026.8.31
  @modelcontextprotocol/server-slack@2025.4.25
  @modelcontextprotocol/server-gitlab@2025.4.25
  @modelcontextprotocol/server-google-maps@0.6.2
  @modelcontextprotocol/server-brave-search@0.6.2
  @playwright/mcp@0.0.83
  chrome-devtools-mcp@1.11.0
  mcp-server-kubernetes@4.1.7
  @notionhq/notion-mcp-server@2.5.2
  @wonderwhy-er/desktop-commander@0.2.52
  @antv/mcp-server-chart@0.9.10
)
py_pkgs=(mcp-server-git==2026.10.19 mcp-server-time==2026.10.19 mcp-server-fetch==2026.10.24)

[ -f package.json ] || npm init -y >/dev/null
PUPPETEER_SKIP_DOWNLOAD=1 npm install --no-audit --no-fund --ignore-scripts "${npm_pkgs[@]}"
[ -d py ] || python3 -m venv py
py/bin/pip install -q "${py_pkgs[@]}"

bin=$work/node_modules/.bin
mkdir -p sandbox
cat > .mcp.json <<JSON
{ "mcpServers": {
  "filesystem": { "command": "$bin/mcp-server-filesystem", "args": ["$work/sandbox"] },
  "memory": { "command": "$bin/mcp-server-memory", "env": { "MEMORY_FILE_PATH": "$work/sandbox/memory.json" } },
  "slack": { "command": "$bin/mcp-server-slack", "env": { "SLACK_BOT_TOKEN": "xoxb-dummy", "SLACK_TEAM_ID": "T0" } },
  "gitlab": { "command": "$bin/mcp-server-gitlab", "env": { "GITLAB_PERSONAL_ACCESS_TOKEN": "dummy" } },
  "google-maps": { "command": "$bin/mcp-server-google-maps", "env": { "GOOGLE_MAPS_API_KEY": "dummy" } },
  "brave-search": { "command": "$bin/mcp-server-brave-search", "env": { "BRAVE_API_KEY": "dummy" } },
  "playwright": { "command": "$bin/playwright-mcp", "args": ["--headless"] },
  "chrome-devtools": { "command": "$bin/chrome-devtools-mcp", "args": ["--headless"] },
  "kubernetes": { "command": "$bin/mcp-server-kubernetes" },
  "notion": { "command": "$bin/notion-mcp-server", "env": { "NOTION_TOKEN": "dummy" } },
  "desktop-commander": { "command": "$bin/desktop-commander" },
  "chart": { "command": "$bin/mcp-server-chart" },
  "git": { "command": "$work/py/bin/mcp-server-git" },
  "time": { "command": "$work/py/bin/mcp-server-time", "args": ["--local-timezone", "UTC"] },
  "fetch": { "command": "$work/py/bin/mcp-server-fetch" }
} }
JSON

for s in filesystem memory slack gitlab google-maps brave-search playwright chrome-devtools \
  kubernetes notion desktop-commander chart git time fetch; do
  if "$agent" mcp list --server "$s" --json > "$here/tools/$s.json.tmp"; then
    mv "$here/tools/$s.json.tmp" "$here/tools/$s.json"
    echo "$s: $(python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))))' "$here/tools/$s.json") tools"
  else
    rm -f "$here/tools/$s.json.tmp"
    echo "$s: FAILED" >&2
  fi
done
