"""Samplers against plain-Python oracles."""

from __future__ import annotations

import flambeau_core as fc
import pytest
from flambeau_data import BatchSampler, RandomSampler, SequentialSampler, SubsetRandomSampler, WeightedRandomSampler


def test_sequential():
    assert list(SequentialSampler(range(5))) == [0, 1, 2, 3, 4]
    assert len(SequentialSampler("abc")) == 3


def test_random_is_a_permutation_and_reproducible():
    fc.manual_seed(7)
    a = list(RandomSampler(range(100)))
    b = list(RandomSampler(range(100)))
    fc.manual_seed(7)
    a2 = list(RandomSampler(range(100)))
    assert sorted(a) == list(range(100)) and a != list(range(100))
    assert a == a2
    assert a != b  # each epoch draws a new seed from core's generator


def test_random_sampler_epochs_differ_and_replay():
    s = RandomSampler(range(30))
    fc.manual_seed(1)
    first = [list(s), list(s)]
    fc.manual_seed(1)
    assert [list(s), list(s)] == first and first[0] != first[1]


def test_random_num_samples_and_replacement():
    s = RandomSampler(range(4), num_samples=10)
    out = list(s)
    assert len(out) == 10 and len(s) == 10
    assert sorted(out[:4]) == [0, 1, 2, 3] and sorted(out[4:8]) == [0, 1, 2, 3]
    r = list(RandomSampler(range(3), replacement=True, num_samples=50, generator=3))
    assert len(r) == 50 and set(r) <= {0, 1, 2}
    assert list(RandomSampler(range(20), generator=5)) == list(RandomSampler(range(20), generator=5))
    with pytest.raises(ValueError, match="num_samples should be a positive integer value, but got num_samples=0"):
        RandomSampler(range(0))
    with pytest.raises(TypeError, match="replacement should be a boolean"):
        RandomSampler(range(3), replacement=1)


def test_subset_and_weighted():
    assert sorted(SubsetRandomSampler([5, 9, 2], generator=1)) == [2, 5, 9]
    w = list(WeightedRandomSampler([0.0, 1.0, 0.0, 3.0], 200, generator=0))
    assert set(w) == {1, 3} and w.count(3) > w.count(1)
    nr = list(WeightedRandomSampler([1.0, 1.0, 1.0], 3, replacement=False, generator=0))
    assert sorted(nr) == [0, 1, 2]
    with pytest.raises(ValueError, match="non-negative"):
        WeightedRandomSampler([-1.0, 1.0], 2)


@pytest.mark.parametrize(
    "n,bs,drop", [(10, 3, False), (10, 3, True), (9, 3, True), (9, 3, False), (2, 5, False), (2, 5, True)]
)
def test_batch_sampler_matches_oracle(n, bs, drop):
    oracle = [list(range(i, min(i + bs, n))) for i in range(0, n, bs)]
    if drop:
        oracle = [b for b in oracle if len(b) == bs]
    s = BatchSampler(SequentialSampler(range(n)), bs, drop)
    assert list(s) == oracle and len(s) == len(oracle)


def test_batch_sampler_errors():
    with pytest.raises(ValueError, match="batch_size should be a positive integer value, but got batch_size=0"):
        BatchSampler(range(3), 0, False)
    with pytest.raises(ValueError, match="drop_last should be a boolean value"):
        BatchSampler(range(3), 2, 1)
