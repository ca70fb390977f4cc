#!/usr/bin/env bash
# Edit loop for the C++ unit tests (docs/design/cpp-tests.md): build and run
# the named packages' tests/cpp against the editable core of the dev venv
# (.nox/dev, made by `nox -s dev`; rebuild core first with tools/dev.sh core).
#   tools/cpptests.sh core alloc autograd      # all three when none is named
#   tools/cpptests.sh autograd -R deep         # arguments after the package names go to ctest
# `nox -s tests` and `nox -s cpptests` run the same tests against the wheels.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
venv="$root/.nox/dev"
[ -x "$venv/bin/python" ] || { echo "no dev venv: run 'nox -s dev' once" >&2; exit 1; }
[ -f /usr/include/doctest/doctest.h ] || { echo "the C++ tests need doctest: apt-get install doctest-dev" >&2; exit 1; }
export PATH="$venv/bin:$PATH"  # cmake, ninja
pkgs=()
while [ $# -gt 0 ] && [ -f "$root/packages/$1/tests/cpp/CMakeLists.txt" ]; do pkgs+=("$1"); shift; done
[ ${#pkgs[@]} -gt 0 ] || pkgs=(core alloc autograd)
cmake_dir=$("$venv/bin/python" -c "import flambeau_core; print(flambeau_core.get_cmake_dir())")
for pkg in "${pkgs[@]}"; do
  build="$root/build/dev/cpptests/$pkg"
  cmake -S "$root/packages/$pkg/tests/cpp" -B "$build" -G Ninja "-Dflambeau_core_DIR=$cmake_dir" >/dev/null
  cmake --build "$build"
  ctest --test-dir "$build" --output-on-failure --parallel 2 "$@"
done
