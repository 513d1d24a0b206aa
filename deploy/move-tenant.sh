#!/usr/bin/env bash
# Moves a tenant from one node to another, consistently:
#   1. pauses it on the source node (its rate quota set to 0: clients get 429 + Retry-After, nothing is written);
#   2. copies its file with SQLite's backup API (dist/deploy/tenant-backup.js), and its .policy if any;
#   3. creates it on the target node with its quotas (the node adopts the file found in its data dir);
#   4. pins it to the target node in the routers' placement file (a later line wins);
#   5. with --delete-source, once the routers read the new placement, deletes it on the source node.
#
# usage: deploy/move-tenant.sh TENANT TARGET_NODE_NAME [--delete-source]
# environment: FENEC_TOKEN (the server token), FROM_URL and TO_URL (the nodes' own URLs), FROM_DIR and
#   TO_DIR (their --data-dir, reachable from here), PLACEMENT (the routers' --placement file).
# On Kubernetes, run the copy inside the pods (kubectl exec / kubectl cp) and edit the fenec-placement
# ConfigMap instead, then `kubectl rollout restart deployment/fenec-router`: docs/hosting.md.
set -euo pipefail
cd "$(dirname "$0")/.."

tenant=${1:?usage: move-tenant.sh TENANT TARGET_NODE_NAME [--delete-source]}
target=${2:?usage: move-tenant.sh TENANT TARGET_NODE_NAME [--delete-source]}
delete=${3:-}
: "${FENEC_TOKEN:?set FENEC_TOKEN}" "${FROM_URL:?set FROM_URL}" "${TO_URL:?set TO_URL}"
: "${FROM_DIR:?set FROM_DIR}" "${TO_DIR:?set TO_DIR}" "${PLACEMENT:?set PLACEMENT}"
[[ $tenant =~ ^[a-z0-9][a-z0-9-]{0,62}$ ]] || { echo "move-tenant: $tenant is not a tenant name" >&2; exit 2; }

say() { printf 'move-tenant: %s\n' "$*" >&2; }
api() { # METHOD URL [BODY]
  node -e '
    const [method, url, body] = process.argv.slice(1);
    fetch(url, { method, headers: { authorization: `Bearer ${process.env.FENEC_TOKEN}`, "content-type": "application/json" }, body: body || undefined })
      .then(async (r) => { const t = await r.text(); if (!r.ok) { console.error(`${method} ${url}: ${r.status} ${t}`); process.exit(1); } process.stdout.write(t); },
            (e) => { console.error(`${method} ${url}: ${e.cause?.code ?? e.message}`); process.exit(1); });' "$@"
}

quotas=$(api GET "$FROM_URL/_tenants" | node -e '
  let text = ""; process.stdin.on("data", (c) => (text += c)).on("end", () => {
    const found = JSON.parse(text).tenants.find((t) => t.name === process.argv[1]);
    if (!found) { console.error(`move-tenant: no tenant ${process.argv[1]} on the source node`); process.exit(1); }
    process.stdout.write(JSON.stringify(found.quotas));
  });' "$tenant")
say "1/5 pausing $tenant on $FROM_URL (quotas kept: $quotas)"
api PUT "$FROM_URL/t/$tenant" "$(node -e 'process.stdout.write(JSON.stringify({ ...JSON.parse(process.argv[1]), rate: 0 }))' "$quotas")" >/dev/null
say "2/5 copying $FROM_DIR/$tenant.fenec to $TO_DIR (SQLite backup API)"
node dist/deploy/tenant-backup.js "$FROM_DIR/$tenant.fenec" "$TO_DIR/$tenant.fenec"
[ -f "$FROM_DIR/$tenant.policy" ] && cp "$FROM_DIR/$tenant.policy" "$TO_DIR/$tenant.policy"
say "3/5 creating $tenant on $TO_URL"
api PUT "$TO_URL/t/$tenant" "$quotas" >/dev/null
say "4/5 pinning $tenant to $target in $PLACEMENT"
printf '%s %s\n' "$tenant" "$target" >> "$PLACEMENT"
if [ "$delete" = --delete-source ]; then
  say "5/5 deleting $tenant on $FROM_URL"
  api DELETE "$FROM_URL/t/$tenant" >/dev/null
else
  say "5/5 restart the routers (they read $PLACEMENT at start), then: curl -X DELETE -H \"Authorization: Bearer \$FENEC_TOKEN\" $FROM_URL/t/$tenant"
fi
