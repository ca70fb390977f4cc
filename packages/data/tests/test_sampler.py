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


# ---- DistributedSampler, and seeded orders ----


def _torch_distributed(n, replicas, drop_last):
    torch = pytest.importorskip("torch")
    return [
        list(torch.utils.data.DistributedSampler(range(n), replicas, r, shuffle=False, drop_last=drop_last))
        for r in range(replicas)
    ]


@pytest.mark.parametrize("n,replicas,drop_last", [(10, 3, False), (10, 3, True), (9, 3, False), (2, 4, False)])
def test_distributed_sampler_matches_torch_unshuffled(n, replicas, drop_last):
    from flambeau_data import DistributedSampler

    ours = [
        list(DistributedSampler(range(n), replicas, r, shuffle=False, drop_last=drop_last)) for r in range(replicas)
    ]
    assert ours == _torch_distributed(n, replicas, drop_last)
    assert len(DistributedSampler(range(n), replicas, 0, drop_last=drop_last)) == len(ours[0])


def test_distributed_sampler_shuffle_is_seeded_per_epoch_and_partitions():
    from flambeau_data import DistributedSampler

    def shares(epoch, seed=0):
        out = []
        for r in range(3):
            s = DistributedSampler(range(12), num_replicas=3, rank=r, seed=seed)
            s.set_epoch(epoch)
            out.append(list(s))
        return out

    e0 = shares(0)
    assert sorted(i for part in e0 for i in part) == list(range(12))  # a partition of the dataset
    assert e0 == shares(0) and e0 != shares(1) and e0 != shares(0, seed=5)


def test_distributed_sampler_errors():
    from flambeau_data import DistributedSampler

    with pytest.raises(ValueError, match=r"Invalid rank 3, rank should be in the interval \[0, 2\]"):
        DistributedSampler(range(4), num_replicas=3, rank=3)
    with pytest.raises(RuntimeError, match="no process group is initialized"):
        DistributedSampler(range(4))


def test_seeded_generators_give_deterministic_orders():
    from flambeau_data import RandomSampler, SubsetRandomSampler, WeightedRandomSampler

    def with_gen(make):
        g = fc.Generator()
        g.manual_seed(7)
        return list(make(g))

    for make in (
        lambda g: RandomSampler(range(30), generator=g),
        lambda g: RandomSampler(range(30), replacement=True, num_samples=10, generator=g),
        lambda g: SubsetRandomSampler(list(range(5, 25)), generator=g),
        lambda g: WeightedRandomSampler([1.0, 2.0, 3.0, 0.5], 20, generator=g),
    ):
        assert with_gen(make) == with_gen(make)


def test_batch_sampler_matches_torch_on_a_generator():
    torch = pytest.importorskip("torch")
    ours = list(BatchSampler(iter(range(10)), 3, False))
    assert ours == list(torch.utils.data.BatchSampler(iter(range(10)), 3, False))
    assert list(BatchSampler(range(10), 3, True)) == list(torch.utils.data.BatchSampler(range(10), 3, True))


def test_weighted_without_replacement_draws_in_proportion():
    # Successive weighted draws: the first index is i with probability w_i / sum(w), and the second
    # is drawn from what is left. 4000 seeded samplers (deterministic), a wide margin.
    weights = [1.0, 2.0, 7.0, 0.0]
    firsts, seconds_after_2 = [], []
    for seed in range(4000):
        a, b = WeightedRandomSampler(weights, 2, replacement=False, generator=seed)
        assert a != b and 3 not in (a, b)
        firsts.append(a)
        if a == 2:
            seconds_after_2.append(b)
    assert abs(firsts.count(2) / 4000 - 0.7) < 0.03
    assert abs(firsts.count(1) / 4000 - 0.2) < 0.03
    assert abs(seconds_after_2.count(1) / len(seconds_after_2) - 2 / 3) < 0.04
    big = list(WeightedRandomSampler([1.0] * 50_000, 50_000, replacement=False, generator=1))
    assert sorted(big) == list(range(50_000))  # n log k, not n * k


class _OwnRandom(RandomSampler):
    """A RandomSampler of another type: BatchSampler cuts its flattened iterator, as any sampler's."""


@pytest.mark.parametrize("bs", [1, 7, 128, 2047, 2048, 2049, 5000, 7000])
@pytest.mark.parametrize("drop", [False, True])
@pytest.mark.parametrize("num_samples", [None, 1, 2049, 6500, 13001])
def test_batches_of_a_shuffle_are_the_shuffles_order_cut(bs, drop, num_samples):
    # BatchSampler slices RandomSampler's lists of indices directly; the same batches as islice over the
    # permutation (the general path, taken for a subclass), with the same generator state before and after.
    data = range(6500)
    fc.manual_seed(11)
    got = list(BatchSampler(RandomSampler(data, num_samples=num_samples), bs, drop))
    after_got = fc.rand(1).item()
    fc.manual_seed(11)
    want = list(BatchSampler(_OwnRandom(data, num_samples=num_samples), bs, drop))
    after_want = fc.rand(1).item()
    assert got == want
    assert after_got == after_want
    assert all(type(b) is list for b in got)
    n = num_samples or len(data)
    assert [len(b) for b in got] == [bs] * (n // bs) + ([] if drop or n % bs == 0 else [n % bs])


def test_a_patched_random_sampler_iterator_is_used():
    original = RandomSampler.__iter__
    RandomSampler.__iter__ = lambda self: iter(range(len(self.data_source) - 1, -1, -1))
    try:
        assert list(BatchSampler(RandomSampler(range(5)), 2, False)) == [[4, 3], [2, 1], [0]]
    finally:
        RandomSampler.__iter__ = original
