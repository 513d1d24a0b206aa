#!/usr/bin/env bash
# Installs Debian's Chromium for the console's browser tests (test/console), when it is missing.
# A test tool's own browser download (npx playwright install) fails on a network that reaches only
# the npm registry and Debian's mirrors; playwright-core drives this one instead. Not part of
# make install: a server or its image never needs a browser.
set -euo pipefail

CHROMIUM=/usr/bin/chromium
if [ -x "$CHROMIUM" ]; then exit 0; fi
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  echo "install-chromium: apt-get install chromium (for the console's browser tests)" >&2
  apt-get update -qq >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium >&2
else
  echo "install-chromium: $CHROMIUM is missing; the console's tests need it (Debian: sudo apt-get install chromium)" >&2
  exit 1
fi
