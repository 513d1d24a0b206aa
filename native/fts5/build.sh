#!/usr/bin/env bash
# Builds native/fts5/build/fenec_fts5.so, a SQLite loadable extension (fenec_bm25, fenec_doclen, fenec_snippet, fenec_deadline,
# the tokenizer fenec_stem over libstemmer (Snowball; Debian libstemmer-dev, native/debian-packages.txt): see
# src/fenec_fts5.c) that node/storage/sqlite.ts loads into every connection it opens. Compiled against
# the SQLite headers better-sqlite3 bundles, the SQLite it is loaded into.
#
# Run by scripts/install.sh (make install). Does nothing when the extension is newer than its source.
set -euo pipefail
cd "$(dirname "$0")"

say() { printf 'fts5: %s\n' "$*" >&2; }

out=build/fenec_fts5.so
headers=../../node_modules/better-sqlite3/deps/sqlite3
if [ ! -f "$headers/sqlite3ext.h" ]; then
  say "$headers/sqlite3ext.h is missing: run npm ci first (scripts/install.sh does)"
  exit 1
fi
if [ -f "$out" ] && [ -z "$(find build.sh src "$headers/sqlite3.h" -newer "$out" 2>/dev/null)" ]; then
  exit 0
fi
mkdir -p build
cc=${CC:-gcc}
shared=-shared
[ "$(uname)" = Darwin ] && shared="-bundle -undefined dynamic_lookup"
# shellcheck disable=SC2086
"$cc" -O2 -fPIC -Wall -Wextra -Werror -std=c11 -I"$headers" $shared src/fenec_fts5.c src/deadline.c src/snippet.c src/stem.c -o "$out.tmp" -lstemmer -lm -pthread -Wl,-z,nodelete
mv "$out.tmp" "$out"
node -e "const D = require('better-sqlite3'); const db = new D(':memory:'); db.loadExtension('./$out'); db.close()" ||
  { say "$out was built but does not load"; exit 1; }
say "built $out"
