"""fb.func.rearrange against torch.func.rearrange (functorch's einops) on the same inputs."""

from __future__ import annotations

import doctest

import flambeau as fb
import flambeau.func._rearrange
import numpy as np
import pytest
import torch
from flambeau_core import FlambeauError
from func_testing import close, pair


@pytest.mark.parametrize(
    ("shape", "pattern", "lengths"),
    [
        ((2, 3, 4, 5), "b c h w -> b (h w) c", {}),
        ((2, 3, 4, 5), "b c h w -> b c h w", {}),
        ((2, 3, 4, 5), "b c h w -> w h c b", {}),
        ((2, 3, 4, 5), "b c h w -> (b c h w)", {}),
        ((2, 3, 4, 5), "b c h w -> h (b w) c", {}),
        ((6, 4), "(b1 b2) h -> b1 b2 h", {"b1": 2}),
        ((6, 4), "(b1 b2) h -> b1 b2 h", {"b2": 2}),
        ((6, 4), "(b1 b2) h -> b1 b2 h", {"b1": 2, "b2": 3}),
        ((6, 4), "(b1 b2) h -> (b2 b1) h", {"b1": 3}),
        ((2, 4, 6, 3), "b (h h1) (w w1) c -> b h w (c h1 w1)", {"h1": 2, "w1": 2}),
        ((2, 4, 6, 3), "b (h1 h) (w1 w) c -> (b h1 w1) h w c", {"h1": 2, "w1": 3}),
        ((2, 3, 4, 5), "a ... b -> b ... a", {}),
        ((2, 3, 4, 5), "a ... b -> (...) a b", {}),
        ((2, 3, 4, 5), "a ... b -> a (... b)", {}),
        ((2, 3, 4, 5), "... -> ...", {}),
        ((2, 3), "a b ... -> b a ...", {}),
        ((2, 3), "a b ... -> (...) b a", {}),
        ((2, 3), "... -> ... 1", {}),
        ((), "... -> ...", {}),
        ((6, 1), "a 1 -> a", {}),
        ((6, 4), "(a 1) b -> a b", {}),
        ((6, 4), "a b -> a 1 b", {}),
        ((6, 4), "a b -> b 1 a 1", {}),
        ((6, 4), "a b -> (a 1) (1 b)", {}),
        ((6, 4), "a b -> a () b", {}),
        ((6, 1, 4), "a () b -> b a", {}),
        ((6, 4), "a   b->b a", {}),
        ((6, 4), "a b -> (b a)", {}),
    ],
)
def test_rearrange_matches_torch(shape, pattern, lengths):
    ours, theirs = pair(np.random.default_rng(0), *shape)
    close(fb.func.rearrange(ours, pattern, **lengths), torch.func.rearrange(theirs, pattern, **lengths))


def test_rearrange_of_a_list_or_tuple_stacks_along_a_new_first_axis():
    rng = np.random.default_rng(1)
    pairs = [pair(rng, 2, 3) for _ in range(4)]
    ours, theirs = [p[0] for p in pairs], [p[1] for p in pairs]
    close(fb.func.rearrange(ours, "n a b -> a (n b)"), torch.func.rearrange(theirs, "n a b -> a (n b)"))
    close(fb.func.rearrange(tuple(ours), "n ... -> ... n"), torch.func.rearrange(tuple(theirs), "n ... -> ... n"))


def test_rearrange_is_a_view_where_the_strides_allow():
    x = fb.arange(24.0).reshape(2, 3, 4)
    y = fb.func.rearrange(x, "a b c -> c b a")
    y[0, 0, 0] = 100.0
    assert x[0, 0, 0].item() == 100.0


def test_rearrange_differentiates_as_torch():
    rng = np.random.default_rng(2)
    ours, theirs = pair(rng, 6, 4)
    w_ours, w_theirs = pair(rng, 4, 2, 3)
    ours.requires_grad_(True)
    theirs.requires_grad_(True)
    (fb.func.rearrange(ours, "(a b) c -> c a b", a=2) * w_ours).sum().backward()
    (torch.func.rearrange(theirs, "(a b) c -> c a b", a=2) * w_theirs).sum().backward()
    close(ours.grad, theirs.grad)


def test_rearrange_under_vmap_matches_torch():
    ours, theirs = pair(np.random.default_rng(3), 5, 2, 3)
    close(
        fb.func.vmap(lambda x: fb.func.rearrange(x, "a b -> b a"))(ours),
        torch.func.vmap(lambda x: torch.func.rearrange(x, "a b -> b a"))(theirs),
    )
    close(
        fb.func.vmap(lambda x: fb.func.rearrange(x, "a (b c) -> c a b", b=1), in_dims=1)(ours),
        torch.func.vmap(lambda x: torch.func.rearrange(x, "a (b c) -> c a b", b=1), in_dims=1)(theirs),
    )
    rng = np.random.default_rng(7)
    (a, ta), (b, tb) = pair(rng, 4, 3), pair(rng, 4, 3)
    close(
        fb.func.vmap(lambda x, y: fb.func.rearrange([x, y], "n c -> c n"))(a, b),
        torch.func.vmap(lambda x, y: torch.func.rearrange([x, y], "n c -> c n"))(ta, tb),
    )
    close(
        fb.func.vmap(fb.func.vmap(lambda x: fb.func.rearrange(x, "a -> 1 a")))(ours),
        torch.func.vmap(torch.func.vmap(lambda x: torch.func.rearrange(x, "a -> 1 a")))(theirs),
    )


# (pattern, lengths, the words our message has); torch raises on each (ValueError, or functorch.dim's
# DimensionBindError for lengths that do not fit the tensor), and FlambeauError is a ValueError.
BAD = [
    ("a b -> a c", {}, "one side only"),
    ("a c -> a", {}, "one side only"),
    ("a ... -> ...", {}, "one side only"),
    ("a b c -> a b c", {}, "the left side has 3 dims but the tensor has 2"),
    ("a b c d e -> a b c d e", {}, "has 2"),
    ("(a b) c -> a b c", {"a": 4}, "does not divide"),
    ("(a b) c -> a b c", {}, "cannot infer"),
    ("(a b) c -> a b c", {"a": 2, "b": 4}, "has length 8 but the tensor's dim has size 6"),
    ("a a -> a", {}, "'a' is repeated"),
    ("a b -> a b a", {}, "'a' is repeated"),
    ("a b -> (a b) 2", {}, "unnamed axes of size 1"),
    ("a b -> a b", {"z": 3}, "'z'"),
    ("a b", {}, "'->'"),
    ("a b -> a -> b", {}, "'->'"),
    ("... a ... -> a", {}, "ellipsis"),
    ("a b -> a b ...", {}, "ellipsis"),
    ("a (b ...) -> a b", {}, "ellipsis"),
    ("a b -> (a", {}, "parentheses"),
    ("a b) -> a b", {}, "parentheses"),
    ("a b! -> a b", {}, "'b!'"),
    ("_a b -> b _a", {}, "'_a'"),
]


@pytest.mark.parametrize(("pattern", "lengths", "words"), BAD)
def test_rearrange_errors_name_the_pattern(pattern, lengths, words):
    ours, theirs = pair(np.random.default_rng(4), 6, 4)
    with pytest.raises(Exception):  # noqa: B017, PT011 (torch's type varies: ValueError or DimensionBindError)
        torch.func.rearrange(theirs, pattern, **lengths)
    with pytest.raises(FlambeauError) as info:
        fb.func.rearrange(ours, pattern, **lengths)
    assert isinstance(info.value, ValueError)
    message = str(info.value)
    assert message.startswith("[func.rearrange]") and repr(pattern) in message and words in message, message


def test_rearrange_length_not_an_int_is_a_type_error_as_torch():
    ours, theirs = pair(np.random.default_rng(5), 6, 4)
    with pytest.raises(TypeError, match="integers"):
        torch.func.rearrange(theirs, "(a b) c -> a b c", a=2.0)
    with pytest.raises(TypeError, match=r"\[func.rearrange\] axis lengths must be ints, got a=2.0"):
        fb.func.rearrange(ours, "(a b) c -> a b c", a=2.0)


@pytest.mark.parametrize("length", [0, -2])
def test_rearrange_non_positive_length_is_refused(length):
    # torch fails on these too (ZeroDivisionError, or a negative-stride error from as_strided)
    ours, theirs = pair(np.random.default_rng(6), 6, 4)
    with pytest.raises(Exception):  # noqa: B017, PT011
        torch.func.rearrange(theirs, "(a b) c -> a b c", a=length)
    with pytest.raises(FlambeauError, match=f"a={length} must be positive"):
        fb.func.rearrange(ours, "(a b) c -> a b c", a=length)


def test_rearrange_unit_axis_on_a_dim_longer_than_one_is_refused():
    # einops refuses it; torch.func.rearrange sums over the dim instead, which we do not copy
    with pytest.raises(FlambeauError, match=r"1 has length 1 but the tensor's dim has size 4"):
        fb.func.rearrange(fb.zeros(6, 4), "a 1 -> a")


def test_rearrange_refuses_what_is_not_a_tensor():
    with pytest.raises(TypeError, match=r"\[func.rearrange\] expected a Tensor or a list/tuple of Tensors, got int"):
        fb.func.rearrange(3, "a -> a")
    with pytest.raises(TypeError, match=r"\[func.rearrange\] pattern must be a str, got int"):
        fb.func.rearrange(fb.zeros(2), 3)


def test_rearrange_docstring_examples_run():
    result = doctest.testmod(flambeau.func._rearrange, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0
