#!/usr/bin/env bash
# Installs everything fenecdb needs on a fresh Debian machine, and nothing twice.
#
# Steps, each skipped when already done:
#   1. Debian packages (apt-get, only for what is missing; elsewhere: a message naming them)
#   2. Node.js: the machine's when it is 22 or newer, else Node.js 24 from the npm registry into .cache/
#      (scripts/install-node.sh); every later step runs on it
#   3. npm ci, here and in examples/mcp-agent (only where package-lock.json changed since the last install)
#   4. native modules, against that Node.js's headers: better-sqlite3 (its shipped binary, else compiled from source), then each
#      addon under native/ that has a build script of its own
#   5. the TypeScript build (make's own dependency tracking decides; not here)
set -euo pipefail
cd "$(dirname "$0")/.."

say() { printf 'install: %s\n' "$*" >&2; }

# 1. Debian packages. Later steps (the Faiss binding) add theirs to this list.
DEBIAN_PACKAGES=(g++ make python3)
if [ -f native/debian-packages.txt ]; then
  while read -r pkg; do [ -n "$pkg" ] && DEBIAN_PACKAGES+=("$pkg"); done < <(grep -v '^#' native/debian-packages.txt)
fi
missing=()
for pkg in "${DEBIAN_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed' || missing+=("$pkg")
done
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    say "apt-get install ${missing[*]}"
    apt-get update -qq >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
  else
    say "missing system packages: ${missing[*]}"
    say "install them (Debian/Ubuntu: sudo apt-get install ${missing[*]}; macOS: brew install faiss openblas) and run make install again"
    exit 1
  fi
fi

# 2. Node.js, first on PATH from here on (the Makefile puts the same directory first for its recipes).
bash scripts/install-node.sh
node_bin=$(bash scripts/install-node.sh --bin-dir)
if [ -n "$node_bin" ]; then export PATH="$node_bin:$PATH"; fi
hash -r
say "Node.js $(node --version) ($(command -v node)), npm $(npm --version 2>/dev/null)"

# 3. npm packages, pinned by package-lock.json, installed by that Node.js's npm so that engine checks see it.
# Each package's own, the example agent's (examples/mcp-agent: its test runs it) beside the product's;
# a copy without the example (the Docker image) installs the product's alone.
npm_ci() {
  local dir=$1 want
  [ -f "$dir/package-lock.json" ] || return 0
  want=$(sha256sum "$dir/package-lock.json" | cut -d' ' -f1)
  if [ ! -f "$dir/node_modules/.fenec-lock-hash" ] || [ "$(cat "$dir/node_modules/.fenec-lock-hash")" != "$want" ]; then
    say "npm ci in $dir"
    # Scripts are off: the one native module we need is compiled below, from source, without a download.
    (cd "$dir" && npm ci --ignore-scripts --no-audit --no-fund >&2)
    echo "$want" > "$dir/node_modules/.fenec-lock-hash"
  fi
}
npm_ci .
# The example's packages are nobody's build input: they install while the native modules compile (a clean
# install's 10 s or so), and the script waits for them at its end.
npm_ci examples/mcp-agent &
example_install=$!

# 4. Native modules, against the headers of the Node.js that runs them (the one on PATH, whatever npm's own
# config says: a nodedir there may name an older Node.js's). Offline, node-gyp cannot download headers.
nodedir=$(dirname "$(dirname "$(node -p 'require("fs").realpathSync(process.execPath)')")")
if [ ! -f "$nodedir/include/node/node.h" ]; then
  say "Node.js headers not found under $nodedir/include/node (Debian: the nodejs package ships them)"
  exit 1
fi
# npm's bundled node-gyp, beside the npm on PATH.
node_gyp=$(dirname "$(node -p 'require("fs").realpathSync(process.argv[1])' "$(command -v npm)")")/../node_modules/node-gyp/bin/node-gyp.js
export FENEC_NODEDIR=$nodedir FENEC_NODE_GYP=$node_gyp
# better-sqlite3 13 ships its binaries inside its npm package (prebuilds/, Node-API, the same bundled SQLite and
# compile options as its source build; native/fts5 compiles against that SQLite's headers, in deps/sqlite3). Where
# none fits this machine, or it does not load, it is built here from its source and its bundled SQLite.
if ! node -e "new (require('better-sqlite3'))(':memory:').close()" 2>/dev/null; then
  say "compiling better-sqlite3 for Node.js $(node --version) (about 90 s on 2 cores)"
  (cd node_modules/better-sqlite3 && npm_config_nodedir="$nodedir" node "$node_gyp" rebuild --release --force_build=1 --jobs=max --loglevel=warn --nodedir="$nodedir" >&2)
  node -e "new (require('better-sqlite3'))(':memory:').close()"
fi
for build in native/*/build.sh; do
  [ -f "$build" ] || continue
  bash "$build"
done
wait "$example_install"
say "ok"
