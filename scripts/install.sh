#!/usr/bin/env bash
# Installs everything fenecdb needs on a fresh Debian machine with Node.js 20, and nothing twice.
#
# Steps, each skipped when already done:
#   1. Debian packages (apt-get, only for what is missing; elsewhere: a message naming them)
#   2. npm ci, here and in examples/mcp-agent (only where package-lock.json changed since the last install)
#   3. native modules: better-sqlite3 12 compiled from source (its prebuilt download fails offline),
#      then each addon under native/ that has a build script of its own
#   4. the TypeScript build (make's own dependency tracking decides; not here)
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

# 2. npm packages, pinned by package-lock.json.
node_major=$(node -p 'process.versions.node.split(".")[0]')
if [ "$node_major" -lt 20 ]; then say "Node.js 20 or later is needed (found $(node --version))"; exit 1; fi
# Each package's own, the example agent's (examples/mcp-agent: its test runs it) beside the product's;
# a copy without the example (the Docker image) installs the product's alone.
for dir in . examples/mcp-agent; do
  [ -f "$dir/package-lock.json" ] || continue
  stamp=$dir/node_modules/.fenec-lock-hash
  want=$(sha256sum "$dir/package-lock.json" | cut -d' ' -f1)
  if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
    say "npm ci in $dir"
    # Scripts are off: the one native module we need is compiled below, from source, without a download.
    (cd "$dir" && npm ci --ignore-scripts --no-audit --no-fund >&2)
    echo "$want" > "$stamp"
  fi
done

# 3. Native modules.
node_gyp="$(npm prefix -g)/lib/node_modules/npm/node_modules/node-gyp/bin/node-gyp.js"
# node-gyp downloads Node's headers unless told where they are; offline that fails, so name them.
nodedir=$(npm config get nodedir 2>/dev/null || true)
if [ -z "$nodedir" ] || [ "$nodedir" = undefined ] || [ "$nodedir" = null ]; then
  nodedir=$(dirname "$(dirname "$(command -v node)")")
fi
if [ ! -f "$nodedir/include/node/node.h" ]; then
  say "Node.js headers not found under $nodedir/include/node (Debian: the nodejs package ships them)"
  exit 1
fi
export npm_config_nodedir="$nodedir"
if ! node -e "new (require('better-sqlite3'))(':memory:').close()" 2>/dev/null; then
  say "compiling better-sqlite3 (about 90 s on 2 cores)"
  (cd node_modules/better-sqlite3 && node "$node_gyp" rebuild --release --jobs=max --nodedir="$nodedir" >&2)
  node -e "new (require('better-sqlite3'))(':memory:').close()"
fi
for build in native/*/build.sh; do
  [ -f "$build" ] || continue
  bash "$build"
done
say "ok"
