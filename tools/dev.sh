#!/usr/bin/env bash
# Edit loop: rebuild the named packages as editable installs in the dev venv
# (.nox/dev, made by `nox -s dev`), without build isolation and with a
# persistent build directory, so a rebuild is incremental.
#   tools/dev.sh core autograd
# Builds are serialized with a lock: several people (or agents) may share the venv.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
venv="$root/.nox/dev"
[ -x "$venv/bin/python" ] || { echo "no dev venv: run 'nox -s dev' once" >&2; exit 1; }
mkdir -p "$root/build"
for pkg in "$@"; do
  flock "$root/build/dev.lock" "$venv/bin/python" -m pip install -q --no-build-isolation --no-deps \
    -e "$root/packages/$pkg" "-Cbuild-dir=$root/build/dev/$pkg"
done
