#!/usr/bin/env bash
# `make run`: the local hosted stack as plain processes — a router on $PORT (default 8080) and two
# tenant nodes on the next two ports, MCP on with writes and the memory tools, data in ./data —
# then tenant `demo` (created when missing), an agent token for it, and the `claude mcp add` line.
# Ctrl-C stops all three. The token and JWT secret are made once and kept in data/secrets.env.
# FENEC_STACK_DATA names another folder for ./data (the test of this banner runs the stack in a temporary one).
# OAUTH=1: also a development authorization server (scripts/dev-oidc.ts, oidc-provider; FOR TRYING ONLY, every
# sign-in the fixed user local-user) on $PORT + 3, and the router and nodes take its tokens: an MCP client added by
# the URL alone signs in through the browser.
set -euo pipefail
cd "$(dirname "$0")/.."

PORT=${PORT:-8080}
data=${FENEC_STACK_DATA:-data}
ROUTER=http://127.0.0.1:$PORT
NODE_A=$((PORT + 1))
NODE_B=$((PORT + 2))
mkdir -p "$data/node-a" "$data/node-b"
if [ ! -f "$data/secrets.env" ]; then
  ( umask 077
    node -e 'const r = () => require("crypto").randomBytes(32).toString("hex"); console.log(`FENEC_TOKEN=${r()}\nFENEC_JWT_SECRET=${r()}`)' > "$data/secrets.env" )
fi
set -a; . "$data/secrets.env"; set +a
touch "$data/placement.txt"
# What an agent's token reaches: its own memories, and the notes it writes.
[ -f "$data/policy.txt" ] || printf '%s\n' 'memories read,write where owner = $jwt.sub' 'notes read,write where owner = $jwt.sub' > "$data/policy.txt"

OAUTH=${OAUTH:-}
ISSUER_PORT=$((PORT + 3))
oauth_flags=()
[ -n "$OAUTH" ] && oauth_flags=(--public-url "$ROUTER" --oauth-issuer "http://127.0.0.1:$ISSUER_PORT")

pids=()
stop() {
  trap - INT TERM EXIT
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  echo "stopped: router and both nodes" >&2
  exit 0
}
trap stop INT TERM EXIT

if [ -n "$OAUTH" ]; then
  node dist/scripts/dev-oidc.js --port "$ISSUER_PORT" 2>>"$data/dev-oidc.log" & pids+=($!)
fi
node_flags=(--host 127.0.0.1 --mcp-write --mcp-memory memories --policy "$data/policy.txt" "${oauth_flags[@]}")
node --expose-gc --max-semi-space-size=32 dist/node/cli/fenec-server.js --data-dir "$data/node-a" --port "$NODE_A" "${node_flags[@]}" 2>>"$data/node-a.log" & pids+=($!)
node --expose-gc --max-semi-space-size=32 dist/node/cli/fenec-server.js --data-dir "$data/node-b" --port "$NODE_B" "${node_flags[@]}" 2>>"$data/node-b.log" & pids+=($!)
node dist/router/cli.js --host 127.0.0.1 --port "$PORT" --placement "$data/placement.txt" \
  --nodes "node-a=http://127.0.0.1:$NODE_A,node-b=http://127.0.0.1:$NODE_B" "${oauth_flags[@]}" 2>>"$data/router.log" & pids+=($!)

for url in "http://127.0.0.1:$NODE_A" "http://127.0.0.1:$NODE_B" "$ROUTER"; do
  for _ in $(seq 100); do
    node -e 'fetch(process.argv[1] + "/_health").then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))' "$url" && break
    for pid in "${pids[@]}"; do kill -0 "$pid" 2>/dev/null || { echo "a process of the stack exited; see $data/*.log" >&2; tail -n 3 "$data"/*.log >&2; exit 1; }; done
    sleep 0.1
  done
done

if ! node dist/node/cli/fenec.js tenant list --url "$ROUTER" | grep -q '"name":"demo"'; then
  node dist/node/cli/fenec.js tenant create demo --url "$ROUTER" >/dev/null
fi
# The memory collection is a schema change: the server token makes it, as the seed writes it.
memories=$(node --input-type=module -e "
  import { createMemories } from './dist/shared/mcp/memory.js';
  import { printStatement } from './dist/shared/fenecql/print.js';
  process.stdout.write(printStatement(createMemories('memories', undefined)));")
node dist/node/cli/fenec.js query --url "$ROUTER/t/demo" "$memories" >/dev/null
node dist/node/cli/fenec.js query --url "$ROUTER/t/demo" 'create collection if not exists notes (title text @text, body text @text, owner text @hash)' >/dev/null
agent=$(node dist/node/cli/fenec.js token --tenant demo --sub agent --ttl 30d)

cat <<INFO
fenecdb is running: router $ROUTER (nodes on ports $NODE_A and $NODE_B; data and logs in $data)
tenant demo, agent token (30 days):
  $agent
add it to Claude Code:
  claude mcp add --transport http fenecdb $ROUTER/t/demo/_mcp --header "Authorization: Bearer $agent"
server token: FENEC_TOKEN in $data/secrets.env (fenec tenant create NAME --url $ROUTER)
console: $ROUTER/_console/ (sign in with the agent token and tenant demo, or the server token)
Ctrl-C stops all three.
INFO
if [ -n "$OAUTH" ]; then
  cat <<INFO
OAuth (FOR TRYING ONLY): a development authorization server at http://127.0.0.1:$ISSUER_PORT signs everyone in
as local-user. Add the tenant by its URL alone, and sign in through the browser:
  claude mcp add --transport http fenecdb $ROUTER/t/demo/_mcp
INFO
fi
wait -n "${pids[@]}" || true
echo "a process of the stack exited; see $data/*.log" >&2
