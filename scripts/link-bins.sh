#!/usr/bin/env bash
# Puts fenec, fenec-server and fenec-router on the user's PATH, as `npm link` would but without a
# global npm prefix: a symlink each to the built program (package.json's "bin"), in
#   1. $FENEC_BIN_DIR when set;
#   2. else the first of /usr/local/bin and ~/.local/bin that is on PATH and writable;
#   3. else ~/.local/bin, created, and one line saying how to add it to PATH.
# A file there that is not a symlink (another program's) is left alone and named. Idempotent.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd -P)

say() { printf 'install: %s\n' "$*" >&2; }

on_path() { case ":$PATH:" in *":$1:"*) return 0 ;; *) return 1 ;; esac; }

dir=${FENEC_BIN_DIR:-}
if [ -z "$dir" ]; then
  for candidate in /usr/local/bin "$HOME/.local/bin"; do
    if on_path "$candidate" && [ -d "$candidate" ] && [ -w "$candidate" ]; then dir=$candidate; break; fi
  done
fi
dir=${dir:-$HOME/.local/bin}
mkdir -p "$dir"

names=()
while IFS=$'\t' read -r name target; do
  [ -f "$target" ] || { say "$target is not built yet: run make build first"; exit 1; }
  # tsc writes the programs without the executable bit that a command on PATH needs.
  chmod +x "$target"
  link="$dir/$name"
  if [ -e "$link" ] && [ ! -L "$link" ]; then
    say "$link exists and is not a link of ours: left alone; remove it and run make install again"
    exit 1
  fi
  ln -sfn "$root/$target" "$link"
  names+=("$name")
done < <(node -e 'for (const [name, target] of Object.entries(require("./package.json").bin)) console.log(`${name}\t${target}`)')

if on_path "$dir"; then
  say "${names[*]} linked in $dir (on your PATH)"
else
  say "${names[*]} linked in $dir, which is not on your PATH: add it with export PATH=\"$dir:\$PATH\" (in ~/.profile to keep it)"
fi
