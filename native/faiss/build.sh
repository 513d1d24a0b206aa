#!/usr/bin/env bash
# Builds native/faiss/build/Release/fenec_faiss.node, our N-API addon over Faiss's static library
# (Debian: libfaiss-dev 1.7.3 with OpenBLAS and LAPACK, listed in native/debian-packages.txt).
#
# Run by scripts/install.sh (make install). Does nothing when the addon is newer than every
# source; stops with a message naming the packages when Faiss is not installed.
# FENEC_FAISS_LIB and FENEC_FAISS_INCLUDE override where libfaiss.a and the faiss/ headers are.
set -euo pipefail
cd "$(dirname "$0")"

say() { printf 'faiss: %s\n' "$*" >&2; }

addon=build/Release/fenec_faiss.node
multiarch=$(gcc -print-multiarch 2>/dev/null || true)
export FENEC_FAISS_LIB=${FENEC_FAISS_LIB:-/usr/lib/${multiarch:-x86_64-linux-gnu}/libfaiss.a}
export FENEC_FAISS_INCLUDE=${FENEC_FAISS_INCLUDE:-/usr/include}

if [ ! -f "$FENEC_FAISS_LIB" ] || [ ! -f "$FENEC_FAISS_INCLUDE/faiss/IndexHNSW.h" ]; then
  say "Faiss is not installed: need $FENEC_FAISS_LIB and $FENEC_FAISS_INCLUDE/faiss/*.h"
  say "  Debian/Ubuntu: sudo apt-get install libfaiss-dev libopenblas-dev liblapack-dev"
  say "  (make install does this itself when run as root; the list is native/debian-packages.txt)"
  say "  macOS: brew install faiss, then FENEC_FAISS_LIB=<path to libfaiss> FENEC_FAISS_INCLUDE=<its include dir> make install"
  exit 1
fi

# Up to date: the addon exists, was built for this Node.js, and nothing it is built from is newer.
built_for=build/node-version
if [ -f "$addon" ] && [ "$(cat "$built_for" 2>/dev/null)" = "$(node --version)" ] &&
  [ -z "$(find binding.gyp build.sh src ../../node_modules/node-addon-api/package.json \
      "$FENEC_FAISS_LIB" -newer "$addon" 2>/dev/null)" ]; then
  exit 0
fi

# scripts/install.sh names the headers and node-gyp of the Node.js on PATH; run alone, the same are found here.
# Offline, node-gyp cannot download Node's headers: they must be the ones beside the node binary.
nodedir=${FENEC_NODEDIR:-$(dirname "$(dirname "$(node -p 'require("fs").realpathSync(process.execPath)')")")}
node_gyp=${FENEC_NODE_GYP:-$(dirname "$(node -p 'require("fs").realpathSync(process.argv[1])' "$(command -v npm)")")/../node_modules/node-gyp/bin/node-gyp.js}
if [ ! -f "$nodedir/include/node/node_api.h" ]; then
  say "Node.js headers not found under $nodedir/include/node (Debian: the nodejs package ships them)"
  exit 1
fi
gyp_args=(rebuild --release --jobs=max --loglevel=warn "--nodedir=$nodedir")

say "compiling the Faiss addon (about 15 s on 2 cores)"
npm_config_nodedir="$nodedir" node "$node_gyp" "${gyp_args[@]}" >&2
node -e "require('./$addon')" || { say "$addon was built but does not load"; exit 1; }
node --version > "$built_for"
say "built $addon for Node.js $(node --version)"
