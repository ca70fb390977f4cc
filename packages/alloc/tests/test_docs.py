"""The runnable examples in the docstrings run."""

import doctest

import flambeau_alloc
import flambeau_alloc.testing
import flambeau_core
import pytest

pytestmark = pytest.mark.usefixtures("restore_current_allocator")


@pytest.mark.parametrize(
    "obj",
    [
        flambeau_alloc,
        flambeau_alloc.enable,
        flambeau_alloc.disable,
        flambeau_alloc.memory_stats,
        flambeau_alloc.empty_cache,
        flambeau_alloc.CachingAllocator,
        flambeau_alloc.testing.check_snapshot_invariants,
    ],
    ids=lambda o: getattr(o, "__name__", repr(o)),
)
def test_docstring_examples(obj):
    flambeau_alloc.enable()
    globs = {"flambeau_core": flambeau_core, "flambeau_alloc": flambeau_alloc}
    finder = doctest.DocTestFinder(recurse=False)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    tests = finder.find(obj, getattr(obj, "__name__", "obj"), globs=globs)
    assert tests and tests[0].examples, "every public entry point has an example"
    for t in tests:
        runner.run(t)
    assert runner.failures == 0
