#!/usr/bin/env bash
# The build before the worker threads (issue 29's baseline, commit BEFORE_COMMIT, default 1d8f490), checked out of
# this repository's history into bench/before/ (gitignored) and built there by its own install script, on the
# Node.js it ran on: BEFORE_NODE, default /usr/bin/node (Debian's Node.js 20, whose headers its native modules
# compile against), else this PATH's. Once per commit: bench/before/.built-COMMIT says it is done.
# It fetches its npm packages (npm ci) and compiles better-sqlite3 from source: about 2–3 minutes the first time.
set -euo pipefail
cd "$(dirname "$0")/.."
commit=${BEFORE_COMMIT:-1d8f490}
node=${BEFORE_NODE:-$( [ -x /usr/bin/node ] && echo /usr/bin/node || command -v node )}
dir=bench/before
[ -f "$dir/.built-$commit" ] && exit 0
git cat-file -e "$commit^{commit}" 2>/dev/null || {
  echo "before.sh: commit $commit is not in this clone's history (a shallow clone? git fetch --unshallow)" >&2
  exit 1
}
echo "before.sh: building $commit into $dir on $("$node" --version)" >&2
rm -rf "$dir"
mkdir -p "$dir"
git archive "$commit" | tar -x -C "$dir"
bin=$(dirname "$node")
(cd "$dir" && PATH="$bin:$PATH" bash scripts/install.sh && PATH="$bin:$PATH" "$node" node_modules/typescript/bin/tsc -p tsconfig.json)
touch "$dir/.built-$commit"
