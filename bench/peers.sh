#!/usr/bin/env bash
# The peers make peers-bench measures fenecdb beside, installed from npm into bench/peers/ (gitignored) at bench
# time, with a package.json of its own: none is a dependency of fenecdb, so make install and make test never wait
# on them. LanceDB is pinned exactly (PEERS_LANCEDB, default 0.39.0, the release issue 29 measured): installed with
# npm i, not from a lock, since npm ci refuses a lock that names builds for other platforms the registry here does
# not serve. Once per version: bench/peers/.installed-V
# says it is done. About 190 MB and half a minute the first time.
set -euo pipefail
cd "$(dirname "$0")/.."
version=${PEERS_LANCEDB:-0.39.0}
dir=bench/peers
[ -f "$dir/.installed-$version" ] && exit 0
echo "peers.sh: installing @lancedb/lancedb@$version into $dir" >&2
rm -rf "$dir"
mkdir -p "$dir"
cat >"$dir/package.json" <<JSON
{
  "name": "fenecdb-bench-peers",
  "private": true,
  "description": "What make peers-bench measures fenecdb beside (bench/peers.sh); not a dependency of fenecdb"
}
JSON
(cd "$dir" && npm i -E --no-audit --no-fund "@lancedb/lancedb@$version")
touch "$dir/.installed-$version"
