#!/usr/bin/env bash
# Extracts the held-out evaluation data of `cargo bench --bench search` from two public datasets
# mirrored as git directories, into OUT-DIR (outside the repository: nothing of theirs is copied
# into the project; the bench reads OUT-DIR when SEARCH_BENCH_EXTERNAL=OUT-DIR is set).
#
#   benches/data/external.sh OUT-DIR
#   LIVEMCPBENCH=/path/to/git-dir METATOOL=/path/to/git-dir benches/data/external.sh OUT-DIR
#
# Reads (git directories; read with `git show`, no work tree needed):
#   LiveMCPBench (icip-cas/LiveMCPBench, Apache-2.0): tools/LiveMCPTool/tools.json, its 527-tool
#     catalogue on 70 servers, and annotated_data/all_annotations.json, 95 tasks whose annotators
#     listed the tools that answer them (by tool name).
#   MetaTool (HowieHwong/MetaTool, MIT): dataset/plugin_des.json (199 tools: name → description)
#     and dataset/data/all_clean_data.csv (queries with the one tool that answers each).
# Exit status 2 when OUT-DIR is inside the repository or a mirror is missing.
# Writes:
#   livemcp-tools.json   [{server, name, description, inputSchema}], the shape `agent mcp list --json` saves
#   livemcp-tasks.tsv    `server.tool,...<TAB>task`: every catalogue tool of an annotated name answers
#   metatool-tools.json  [{server: "metatool", name, description}]
#   metatool-queries.tsv `metatool.<tool><TAB>query`
set -euo pipefail
out=${1:?usage: benches/data/external.sh OUT-DIR}
live=${LIVEMCPBENCH:-/work/.mirror/icip-cas+LiveMCPBench/repo}
meta=${METATOOL:-/work/.mirror/HowieHwong+MetaTool/repo}
repo=$(cd "$(dirname "$0")/../.." && pwd)
for pair in "LIVEMCPBENCH=$live" "METATOOL=$meta"; do
  dir=${pair#*=}
  git -C "$dir" rev-parse --git-dir >/dev/null 2>&1 ||
    { echo "external.sh: no git directory at $dir (set ${pair%%=*}=<its git directory>)" >&2; exit 2; }
done
out=$(realpath -m -- "$out")
case "$out/" in
  "$repo"/*) echo "external.sh: $out is inside the repository; give a directory outside it" >&2; exit 2 ;;
esac
mkdir -p "$out"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "external.sh: LiveMCPBench at $(git -C "$live" rev-parse --short HEAD), MetaTool at $(git -C "$meta" rev-parse --short HEAD)" >&2
git -C "$live" show HEAD:tools/LiveMCPTool/tools.json >"$tmp/lt.json"
git -C "$live" show HEAD:annotated_data/all_annotations.json >"$tmp/la.json"
git -C "$meta" show HEAD:dataset/plugin_des.json >"$tmp/pd.json"
git -C "$meta" show HEAD:dataset/data/all_clean_data.csv >"$tmp/mc.csv"
python3 - "$tmp" "$out" <<'PY'
import csv, json, re, sys
tmp, out = sys.argv[1], sys.argv[2]
flat = lambda s: re.sub(r"\s+", " ", s or "").strip()

tools, by_name = [], {}
for entry in json.load(open(f"{tmp}/lt.json", encoding="utf-8")):
    for server, listing in (entry.get("tools") or {}).items():
        for t in listing.get("tools") or []:
            tools.append({"server": server, "name": t["name"], "description": t.get("description") or "",
                          "inputSchema": t.get("inputSchema") or {"type": "object"}})
            by_name.setdefault(t["name"], []).append(f"{server}.{t['name']}")
json.dump(tools, open(f"{out}/livemcp-tools.json", "w", encoding="utf-8"), ensure_ascii=False)

kept = skipped = 0
with open(f"{out}/livemcp-tasks.tsv", "w", encoding="utf-8") as f:
    for task in json.load(open(f"{tmp}/la.json", encoding="utf-8")):
        names = [re.sub(r"^\s*\d+[.)]\s*", "", l).strip() for l in task["Annotator Metadata"]["Tools"].splitlines()]
        want = sorted({q for n in names if n for q in by_name.get(n, [])})
        if not want:
            skipped += 1
            continue
        f.write(",".join(want) + "\t" + flat(task["Question"]) + "\n")
        kept += 1

plugins = json.load(open(f"{tmp}/pd.json", encoding="utf-8"))
json.dump([{"server": "metatool", "name": n, "description": d} for n, d in plugins.items()],
          open(f"{out}/metatool-tools.json", "w", encoding="utf-8"), ensure_ascii=False)
n = 0
with open(f"{out}/metatool-queries.tsv", "w", encoding="utf-8") as f:
    for row in csv.DictReader(open(f"{tmp}/mc.csv", encoding="utf-8")):
        if row["Tool"] in plugins and flat(row["Query"]):
            f.write(f"metatool.{row['Tool']}\t{flat(row['Query'])}\n")
            n += 1
print(f"{out}: LiveMCPBench {len(tools)} tools, {kept} tasks ({skipped} name no tool of the catalogue); "
      f"MetaTool {len(plugins)} tools, {n} queries")
PY
