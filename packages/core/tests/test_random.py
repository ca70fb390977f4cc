"""flambeau.random (random.py): seeds, the state as a uint8 tensor, restoring it replays the same numbers,
reading it does not move the stream, fork_rng; against torch's behaviour."""

from __future__ import annotations

import flambeau_core as fc
import pytest
import torch
from flambeau_core import random as fr


def draws(lib):
    """Every kind of CPU draw: uniform, normal (pairs), integers, permutations, Bernoulli."""
    return [
        lib.rand(5).tolist(),
        lib.randn(3).tolist(),
        lib.randint(0, 100, (4,)).tolist(),
        lib.randperm(6).tolist(),
        lib.bernoulli(lib.full((5,), 0.5)).tolist(),
    ]


@pytest.mark.parametrize("lib", [fc, torch], ids=["flambeau", "torch"])
@pytest.mark.parametrize("seed", [0, 7, 2**63 + 5])
def test_restoring_the_state_replays_the_numbers(lib, seed):
    lib.manual_seed(seed)
    lib.rand(3)
    state = lib.get_rng_state()
    assert state.dtype == lib.uint8 and state.dim() == 1
    first = draws(lib)
    lib.set_rng_state(state)
    assert draws(lib) == first
    assert lib.initial_seed() == seed
    lib.random.set_rng_state(state)  # the same through the module
    assert draws(lib) == first


@pytest.mark.parametrize("lib", [fc, torch], ids=["flambeau", "torch"])
def test_reading_the_state_does_not_move_the_stream(lib):
    lib.manual_seed(3)
    want = draws(lib) + draws(lib)
    lib.manual_seed(3)
    got = draws(lib)
    lib.get_rng_state()
    lib.random.get_rng_state()
    assert got + draws(lib) == want
    assert lib.initial_seed() == 3


def test_state_round_trips_and_restores_across_reseeding():
    fc.manual_seed(11)
    fc.randn(7)
    s1 = fc.get_rng_state()
    a = draws(fc)
    fc.manual_seed(99)  # a different stream in between
    draws(fc)
    fc.set_rng_state(s1)
    assert fc.get_rng_state().tolist() == s1.tolist()
    assert draws(fc) == a
    assert fr.initial_seed() == fc.initial_seed() == 11


def test_seed_is_non_deterministic_and_sets_initial_seed():
    for lib in (fc, torch):
        s = lib.seed()
        assert isinstance(s, int) and 0 <= s < 2**64 and lib.initial_seed() == s
        t = lib.random.seed()
        assert t != s and lib.initial_seed() == t


@pytest.mark.parametrize("lib", [fc, torch], ids=["flambeau", "torch"])
def test_fork_rng(lib):
    lib.manual_seed(5)
    want = draws(lib)
    lib.manual_seed(5)
    with lib.random.fork_rng(devices=[]):
        lib.rand(100)
    assert draws(lib) == want
    lib.manual_seed(5)
    with lib.random.fork_rng(enabled=False):
        lib.rand(1)
    assert draws(lib) != want


def test_set_rng_state_bad_input():
    with pytest.raises(TypeError, match=r"\[set_rng_state\] expected a uint8 Tensor, got list"):
        fc.set_rng_state([0] * 16)
    with pytest.raises(TypeError):
        torch.set_rng_state([0] * 16)
    with pytest.raises(TypeError, match=r"\[set_rng_state\] expected a uint8 Tensor .* got dtype flambeau.int64"):
        fc.set_rng_state(fc.zeros(16, dtype=fc.int64))
    with pytest.raises(TypeError):
        torch.set_rng_state(torch.zeros(5056, dtype=torch.int64))
    with pytest.raises(RuntimeError, match=r"\[set_rng_state\] expected the 16-byte state"):
        fc.set_rng_state(fc.zeros(5, dtype=fc.uint8))
    with pytest.raises(RuntimeError):
        torch.set_rng_state(torch.zeros(5, dtype=torch.uint8))


def generator_draws(lib, g):
    return [
        lib.rand(5, generator=g).tolist(),
        lib.randn(3, generator=g).tolist(),
        lib.randint(0, 100, (4,), generator=g).tolist(),
        lib.randperm(6, generator=g).tolist(),
    ]


@pytest.mark.parametrize("lib", [fc, torch], ids=["flambeau", "torch"])
def test_generator_state_replays_the_numbers(lib):
    g = lib.Generator().manual_seed(21)
    lib.rand(7, generator=g)
    state = g.get_state()
    assert state.dtype == lib.uint8 and state.dim() == 1
    first = generator_draws(lib, g)
    assert g.set_state(state) is g
    assert generator_draws(lib, g) == first
    assert g.initial_seed() == 21
    other = lib.Generator().manual_seed(99)  # a state moves to another generator
    other.set_state(state)
    assert generator_draws(lib, other) == first and other.initial_seed() == 21


@pytest.mark.parametrize("lib", [fc, torch], ids=["flambeau", "torch"])
def test_reading_a_generator_state_does_not_advance_it(lib):
    g = lib.Generator().manual_seed(4)
    want = generator_draws(lib, g) + generator_draws(lib, g)
    g.manual_seed(4)
    got = generator_draws(lib, g)
    s1, s2 = g.get_state(), g.get_state()
    assert s1.tolist() == s2.tolist()
    assert got + generator_draws(lib, g) == want
    assert g.get_state().tolist() != s1.tolist()  # drawing does move it


def test_generator_state_is_seed_and_offset_and_independent_of_the_default():
    g = fc.Generator(seed=2**64 - 1)
    fc.rand(3, generator=g)  # three draws
    raw = bytes(g.get_state().tolist())
    assert int.from_bytes(raw[:8], "little") == 2**64 - 1 and int.from_bytes(raw[8:], "little") == 3
    fc.manual_seed(0)
    before = fc.get_rng_state().tolist()
    g.set_state(fc.Generator(seed=5).get_state())
    assert fc.get_rng_state().tolist() == before
    assert fc.random.get_rng_state().tolist() == fc._C._get_rng_state().tolist() == before


def test_generator_set_state_bad_input():
    g = fc.Generator()
    with pytest.raises(TypeError, match=r"\[set_state\] expected a uint8 Tensor, got list"):
        g.set_state([0] * 16)
    with pytest.raises(TypeError):
        torch.Generator().set_state([0] * 5056)
    with pytest.raises(TypeError, match=r"\[set_state\] expected a uint8 Tensor .*got dtype flambeau.int64"):
        g.set_state(fc.zeros(16, dtype=fc.int64))
    with pytest.raises(TypeError):
        torch.Generator().set_state(torch.zeros(5056, dtype=torch.int64))
    for bad in (fc.zeros(15, dtype=fc.uint8), fc.zeros(2, 8, dtype=fc.uint8), fc.zeros(17, dtype=fc.uint8)):
        with pytest.raises(RuntimeError, match=r"\[set_state\] expected the 16-byte state that get_state\(\)"):
            g.set_state(bad)
    with pytest.raises(RuntimeError):
        torch.Generator().set_state(torch.zeros(3, dtype=torch.uint8))
    assert g.initial_seed() == fc.Generator().initial_seed()  # refused states change nothing


def test_generator_state_from_a_strided_view():
    g = fc.Generator(seed=8)
    fc.rand(2, generator=g)
    state = g.get_state()
    want = fc.rand(4, generator=g).tolist()
    spaced = fc.zeros(32, dtype=fc.uint8)
    spaced[::2] = state
    g.set_state(spaced[::2])
    assert fc.rand(4, generator=g).tolist() == want
