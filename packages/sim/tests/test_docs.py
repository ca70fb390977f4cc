"""The runnable examples in the docstrings run."""

import doctest

import flambeau_core
import flambeau_sim
import pytest


@pytest.mark.parametrize(
    "obj",
    [flambeau_sim, flambeau_sim.register, flambeau_sim.capped_allocator],
    ids=lambda o: getattr(o, "__name__", repr(o)),
)
def test_docstring_examples(obj):
    globs = {"flambeau_core": flambeau_core, "flambeau_sim": flambeau_sim}
    finder = doctest.DocTestFinder(recurse=False)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    tests = finder.find(obj, getattr(obj, "__name__", "obj"), globs=globs)
    assert tests and tests[0].examples, "every public entry point has an example"
    for t in tests:
        runner.run(t)
    assert runner.failures == 0
