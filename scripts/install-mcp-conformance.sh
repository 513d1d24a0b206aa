#!/usr/bin/env bash
# Installs the MCP conformance suite (@modelcontextprotocol/conformance) from the npm registry into
# .cache/mcp-conformance, apart from the project's own node_modules (the suite is a program we run, not a
# library we import). It runs on the project's Node.js (22 or newer: it imports fs.globSync), the one the
# Makefile puts first on PATH. Idempotent: a stamp names the version installed.
set -euo pipefail
cd "$(dirname "$0")/.."

CONFORMANCE=0.1.16
dir=.cache/mcp-conformance
stamp="$dir/.stamp"
want="conformance@$CONFORMANCE"

if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] && [ -d "$dir/node_modules/@modelcontextprotocol/conformance" ]; then
  exit 0
fi
# An older install also held its own Node.js 22; the suite now runs on the project's.
rm -rf "$dir"
mkdir -p "$dir"
echo "install-mcp-conformance: npm install @modelcontextprotocol/conformance@$CONFORMANCE into $dir" >&2
npm install --prefix "$dir" --no-save --no-audit --no-fund --loglevel=error "@modelcontextprotocol/conformance@$CONFORMANCE" >&2
echo "$want" > "$stamp"
