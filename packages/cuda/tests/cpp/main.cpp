// The doctest runner of flambeau-cuda's C++ host tests (docs/design/cpp-tests.md).
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>
