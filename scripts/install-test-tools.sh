#!/usr/bin/env bash
# Installs the Debian packages that only the tests need, when missing (make test runs this; make install and the
# image do not: a server never needs them):
#   chromium        the console's browser tests (test/console). A test tool's own browser download
#                   (npx playwright install) fails on a network that reaches only the npm registry and
#                   Debian's mirrors; playwright-core drives this one instead.
#   docker-compose  test/deploy validates deploy/docker-compose.yml with `docker-compose config`, offline.
#   nats-server     the replication tests (test/replication) start a three-server JetStream cluster on 127.0.0.1.
set -euo pipefail

say() { printf 'install-test-tools: %s\n' "$*" >&2; }

declare -A TOOLS=([chromium]=/usr/bin/chromium [docker-compose]=/usr/bin/docker-compose [nats-server]=/usr/sbin/nats-server)
missing=()
for pkg in "${!TOOLS[@]}"; do [ -x "${TOOLS[$pkg]}" ] || missing+=("$pkg"); done
if [ ${#missing[@]} -eq 0 ]; then exit 0; fi
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  say "apt-get install ${missing[*]} (for the tests)"
  apt-get update -qq >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
else
  say "missing: ${missing[*]}; the tests need them (Debian: sudo apt-get install ${missing[*]})"
  exit 1
fi
