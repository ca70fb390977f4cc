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
  if [ "$pkg" = cuda ] && ! command -v nvcc >/dev/null 2>&1; then
    echo "skipping flambeau-cuda: nvcc (CUDA 13) is not on PATH" >&2
    continue
  fi
  # The build resolves core's CMake package through the `cmake.root` entry
  # point, which imports flambeau_core: a stale core whose __init__ no longer
  # matches its _C would fail that import, so core is uninstalled first.
  if [ "$pkg" = core ]; then
    flock "$root/build/dev.lock" "$venv/bin/python" -m pip uninstall -q -y flambeau-core >/dev/null 2>&1 || true
  fi
  flock "$root/build/dev.lock" "$venv/bin/python" -m pip install -q --no-build-isolation --no-deps \
    -e "$root/packages/$pkg" "-Cbuild-dir=$root/build/dev/$pkg"
done
