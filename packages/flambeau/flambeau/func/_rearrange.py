"""``rearrange``: einops' axis rearrangement (``torch.func.rearrange``), as one reshape, one permute, one reshape.

A pattern ``"b (h1 h) w -> b h (h1 w)"`` names the input's dims on the left and the output's on the right. A
parenthesized group is several elementary axes stored as one dim; ``...`` stands for the dims no name takes;
``1`` is an axis of length 1 that exists on one side only. The tensor is reshaped to its elementary axes (the
left side, groups split), permuted to the right side's order and reshaped to the right side's groups, so the
work is three core ops (views where the strides allow) whatever the pattern, and it composes with ``vmap``
(the ops run on the batch).
"""

from __future__ import annotations

import keyword
from collections.abc import Sequence

import flambeau_core
from flambeau_core import FlambeauError, Tensor

__all__ = ["rearrange"]

_ELLIPSIS = "..."
# An axis of length 1 (einops' anonymous axis); einops' other anonymous lengths are not rearrange's.
_UNIT = "1"
# A side of a pattern: a list of groups; a group is a list of axis names (``_UNIT``, ``_ELLIPSIS`` included).
# A dim that is not in parentheses is a group of one, marked by ``bracketed=False``.
_Side = list[tuple[list[str], bool]]


def _error(pattern: str, message: str) -> FlambeauError:
    return FlambeauError(f"[func.rearrange] {message} in pattern {pattern!r}")


def _parse_side(text: str, pattern: str) -> _Side:
    groups: _Side = []
    current: list[str] | None = None  # the open group's names, inside parentheses
    tokens = text.replace("(", " ( ").replace(")", " ) ").split()
    for token in tokens:
        if token == "(":
            if current is not None:
                raise _error(pattern, "nested parentheses are not allowed")
            current = []
        elif token == ")":
            if current is None:
                raise _error(pattern, "unbalanced parentheses ')' without '('")
            groups.append((current, True))
            current = None
        else:
            if token != _ELLIPSIS and token != _UNIT:
                if token.isdigit():
                    raise _error(pattern, f"anonymous axis {token}: rearrange only supports unnamed axes of size 1")
                if "." in token:
                    raise _error(pattern, f"dots are only allowed as one ellipsis '...', got {token!r}")
                if not token.isidentifier() or keyword.iskeyword(token):
                    raise _error(pattern, f"invalid axis name {token!r}")
                if token.startswith("_") or token.endswith("_"):
                    raise _error(pattern, f"invalid axis name {token!r}: names must not start or end with '_'")
            if current is None:
                groups.append(([token], False))
            else:
                current.append(token)
    if current is not None:
        raise _error(pattern, f"unbalanced parentheses in {text.strip()!r}: '(' without ')'")
    names = [n for g, _ in groups for n in g if n != _UNIT]
    for n in names:
        if names.count(n) > 1:
            what = "ellipsis '...' appears more than once" if n == _ELLIPSIS else f"axis {n!r} is repeated"
            raise _error(pattern, f"{what} on one side")
    return groups


def _parse(pattern: str) -> tuple[_Side, _Side]:
    if not isinstance(pattern, str):
        raise TypeError(f"[func.rearrange] pattern must be a str, got {type(pattern).__name__}")
    if pattern.count("->") != 1:
        raise _error(pattern, "expected a single '->' between the input and output axes")
    left_text, right_text = pattern.split("->")
    left, right = _parse_side(left_text, pattern), _parse_side(right_text, pattern)
    left_names = {n for g, _ in left for n in g if n != _UNIT}
    right_names = {n for g, _ in right for n in g if n != _UNIT}
    if _ELLIPSIS in right_names and _ELLIPSIS not in left_names:
        raise _error(pattern, "ellipsis '...' on the right side but not on the left")
    if any(_ELLIPSIS in g and bracketed for g, bracketed in left):
        raise _error(pattern, "ellipsis '...' in parentheses on the left side is not allowed")
    only_one_side = sorted((left_names ^ right_names) - {_ELLIPSIS})
    if only_one_side or (left_names ^ right_names):
        names = ", ".join(only_one_side or [_ELLIPSIS])
        raise _error(pattern, f"axes that appear on one side only (each must be on both): {names}")
    return left, right


def _expand_ellipsis(side: _Side, n: int) -> _Side:
    """``side`` with ``...`` replaced by ``n`` elementary axes (in place in a group, or ``n`` groups of one)."""
    names = [f"{_ELLIPSIS}{i}" for i in range(n)]
    out: _Side = []
    for group, bracketed in side:
        if _ELLIPSIS not in group:
            out.append((group, bracketed))
        elif bracketed:
            i = group.index(_ELLIPSIS)
            out.append((group[:i] + names + group[i + 1 :], True))
        else:
            out.extend(([name], False) for name in names)
    return out


def _axis_lengths(left: _Side, shape: tuple, pattern: str, known: dict[str, int]) -> dict[str, int]:
    """Every elementary axis's length: the input's dims split over their groups, ``known`` filling the rest."""
    lengths = dict(known)
    for (group, _), size in zip(left, shape, strict=True):
        unknown = [n for n in group if n != _UNIT and n not in lengths]
        product = 1
        for n in group:
            product *= 1 if n == _UNIT else lengths.get(n, 1)
        desc = "(" + " ".join(group) + ")" if len(group) != 1 else group[0]
        if len(unknown) > 1:
            raise _error(
                pattern, f"cannot infer the lengths of {', '.join(unknown)} in {desc} from one dim of size {size}"
            )
        if unknown:
            if size % product:
                raise _error(
                    pattern, f"dim of size {size} does not divide into {desc}: {size} is not a multiple of {product}"
                )
            lengths[unknown[0]] = size // product
        elif product != size:
            raise _error(pattern, f"{desc} has length {product} but the tensor's dim has size {size}")
    return lengths


def rearrange(tensor: Tensor | Sequence[Tensor], pattern: str, **axes_lengths: int) -> Tensor:
    r"""rearrange(tensor, pattern, **axes_lengths) -> Tensor

    Reorders, splits, merges, adds and removes axes of ``tensor`` as ``pattern`` says: einops'
    ``rearrange``, as ``torch.func.rearrange``. It covers transpose (``"h w -> w h"``), reshape
    (``"b h w -> b (h w)"``), splitting a dim (``"(b1 b2) h -> b1 b2 h"`` with ``b1=2``), adding or
    removing a dim of length 1 (``"a b -> a 1 b"``), the remaining dims as ``...``, and stack
    (a list or tuple of tensors is stacked along a new first axis first).

    The result is one reshape, permute and reshape of ``tensor`` (a view where the strides allow), so
    it differentiates and runs under ``vmap`` as those ops do.

    Args:
        tensor (Tensor or sequence of Tensor): the tensor, or tensors of one shape to stack along a new
            first axis.
        pattern (str): ``"<input axes> -> <output axes>"``; every name appears once on each side.
        axes_lengths (int): lengths of axes that a split cannot infer (``b1=2``).

    Returns:
        Tensor: the rearranged tensor.

    Raises:
        FlambeauError: a malformed pattern, an axis on one side only or repeated, a pattern whose number
            of dims is not the tensor's, or lengths that do not match or divide the tensor's dims; the
            message names the pattern.
        TypeError: a length that is not an int.

    Example:
        >>> import flambeau as fb
        >>> images = fb.zeros(32, 30, 40, 3)
        >>> fb.func.rearrange(images, "b h w c -> b c h w").shape
        flambeau.Size([32, 3, 30, 40])
        >>> fb.func.rearrange(images, "b (h1 h) (w1 w) c -> (b h1 w1) h w c", h1=2, w1=2).shape
        flambeau.Size([128, 15, 20, 3])
        >>> fb.func.rearrange(fb.arange(6).reshape(2, 3), "a b -> b a").tolist()
        [[0, 3], [1, 4], [2, 5]]
        >>> fb.func.rearrange([fb.ones(2), fb.zeros(2)], "n a -> a n").tolist()
        [[1.0, 0.0], [1.0, 0.0]]
    """
    if isinstance(tensor, (list, tuple)):
        tensor = flambeau_core.stack(tensor)
    elif not hasattr(tensor, "shape") or not hasattr(tensor, "permute"):
        raise TypeError(f"[func.rearrange] expected a Tensor or a list/tuple of Tensors, got {type(tensor).__name__}")
    left, right = _parse(pattern)
    names_in_pattern = {n for g, _ in left for n in g}
    for name, length in axes_lengths.items():
        if name not in names_in_pattern:
            raise _error(pattern, f"axis length given for {name!r}, which the pattern does not name")
        if isinstance(length, bool) or not isinstance(length, int):
            raise TypeError(
                f"[func.rearrange] axis lengths must be ints, got {name}={length!r} ({type(length).__name__}) "
                f"in pattern {pattern!r}"
            )
        if length <= 0:
            raise _error(pattern, f"axis length {name}={length} must be positive")

    shape = tuple(tensor.shape)
    has_ellipsis = any(_ELLIPSIS in g for g, _ in left)
    n_named = len(left) - has_ellipsis
    if len(shape) != n_named and not (has_ellipsis and len(shape) >= n_named):
        expected = f"at least {n_named}" if has_ellipsis else str(n_named)
        raise _error(pattern, f"the left side has {expected} dims but the tensor has {len(shape)} (shape {shape})")
    if has_ellipsis:
        left = _expand_ellipsis(left, len(shape) - n_named)
        right = _expand_ellipsis(right, len(shape) - n_named)
    lengths = _axis_lengths(left, shape, pattern, {k: int(v) for k, v in axes_lengths.items()})

    source = [n for g, _ in left for n in g if n != _UNIT]
    target = [n for g, _ in right for n in g if n != _UNIT]
    elementary = tuple(lengths[n] for n in source)
    if elementary != shape:
        tensor = tensor.reshape(elementary)
    order = [source.index(n) for n in target]
    if order != sorted(order):
        tensor = tensor.permute(*order)
    out_shape = []
    for group, _ in right:
        size = 1
        for n in group:
            size *= 1 if n == _UNIT else lengths[n]
        out_shape.append(size)
    if tuple(out_shape) != tuple(tensor.shape):
        tensor = tensor.reshape(out_shape)
    return tensor
