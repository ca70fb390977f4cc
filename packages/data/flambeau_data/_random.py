"""Randomness for samplers and splits, tied to flambeau-core's generator.

Note [Data randomness]: every random choice of this package (a shuffle, a
split, the workers' seeds) starts from a seed drawn from flambeau-core's
generator, so ``flambeau_core.manual_seed(s)`` makes data loading reproducible,
as ``torch.manual_seed`` does for PyTorch's loader. The draw advances core's
generator once per epoch, like PyTorch. A permutation uses core's ``randperm``
when core has one; otherwise Python's ``random.Random`` seeded from the draw
(the Mersenne twister, ample for ordering samples).
"""

from __future__ import annotations

import random
from typing import Any

import flambeau_core as fc
from flambeau_core import FlambeauError


def draw_seed(generator: Any = None) -> int:
    """A 48-bit seed drawn from ``generator`` (core's default generator if None).

    ``generator`` may also be a ``random.Random`` (used directly) or an int seed.
    """
    if isinstance(generator, random.Random):
        return generator.getrandbits(48)
    if isinstance(generator, int) and not isinstance(generator, bool):
        return random.Random(generator).getrandbits(48)
    if generator is None:
        draws = fc.rand(2, dtype=fc.float64).tolist()
    else:
        draws = fc.rand(2, dtype=fc.float64, generator=generator).tolist()
    # Two uniforms of 24 bits each: float32 would hold exactly that many.
    hi, lo = (int(d * (1 << 24)) & 0xFFFFFF for d in draws)
    return (hi << 24) | lo


def python_rng(generator: Any = None) -> random.Random:
    """A ``random.Random`` seeded from ``generator`` (Note [Data randomness])."""
    return random.Random(draw_seed(generator))


def randperm_chunks(n: int, generator: Any = None, limit: int | None = None, chunk: int = 2048) -> Any:
    """The first ``limit`` items of a random permutation of ``range(n)``, as lists of ``chunk`` ints.

    The same permutation as :func:`randperm` (one draw), converted to Python ints lazily.
    """
    if n < 0:
        raise FlambeauError(f"[randperm] n must be non-negative, got {n}")
    limit = n if limit is None else min(limit, n)
    core_randperm = getattr(fc, "randperm", None)
    if core_randperm is not None and (generator is None or not isinstance(generator, (random.Random, int))):
        kwargs = {} if generator is None else {"generator": generator}
        perm = core_randperm(n, **kwargs)
        for start in range(0, limit, chunk):
            yield perm[start : min(start + chunk, limit)].tolist()
        return
    yield randperm(n, generator)[:limit]


def randperm(n: int, generator: Any = None) -> list[int]:
    """A random permutation of ``range(n)`` as a list of ints."""
    if n < 0:
        raise FlambeauError(f"[randperm] n must be non-negative, got {n}")
    core_randperm = getattr(fc, "randperm", None)
    if core_randperm is not None and (generator is None or not isinstance(generator, (random.Random, int))):
        kwargs = {} if generator is None else {"generator": generator}
        return core_randperm(n, **kwargs).tolist()
    perm = list(range(n))
    python_rng(generator).shuffle(perm)
    return perm
