import flambeau_alloc
import flambeau_core
import pytest

KiB = 1 << 10
MiB = 1 << 20


@pytest.fixture
def allocator():
    """A fresh CachingAllocator, private to the test (the default instance is shared)."""
    a = flambeau_alloc.CachingAllocator()
    yield a
    a.empty_cache()


@pytest.fixture
def restore_current_allocator():
    """Puts core's current CPU allocator back after a test that swaps it."""
    before = flambeau_core.get_allocator("cpu")
    yield
    flambeau_core.set_allocator(before, "cpu")
