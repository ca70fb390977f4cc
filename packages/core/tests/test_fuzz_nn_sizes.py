"""The nn kernels' integer arguments near the int64 limits (the companion of
test_fuzz_sizes.py, which covers factories and views).

Thousands of calls from a fixed seed to convolution, im2col/col2im, pooling (float32 and bfloat16),
padding, upsampling, pixel_shuffle, one_hot, embedding, embedding_bag,
group and layer norm, and cross_entropy,
with small real inputs and kernel sizes, strides, paddings, dilations,
output sizes, class counts and indices drawn from small values and from the
int64 extremes. Every call must either raise an exception of an expected type
whose message names the op (never an internal error), or return tensors
whose numel is the product of their shape.

The cases run in a subprocess whose address space is capped (RLIMIT_AS), so
that a size computation that wraps into a "reasonable" allocation shows up as
a refused allocation or a crash, never as the machine running out of memory;
a crash fails the test with its signal and the last case it ran.
Run this file directly to fuzz with another seed:
python test_fuzz_nn_sizes.py --seed 7 --cases 20000
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import subprocess
import sys

SEED = 20261123
CASES = 20000
EXPECTED = (TypeError, ValueError, IndexError, OverflowError, RuntimeError, MemoryError)
ADDRESS_SPACE = 8 << 30  # bytes; well above what any valid case here needs

EXTREMES = [2**31 - 1, 2**31, 2**32 + 1, 2**62, 2**63 - 1, -1, -2, -(2**31), -(2**63)]


def draw_int(rng: random.Random) -> int:
    return rng.choice([0, 1, 1, 2, 2, 3, 5]) if rng.random() < 0.6 else rng.choice(EXTREMES)


def ints(rng: random.Random, n: int) -> list[int]:
    return [draw_int(rng) for _ in range(n)]


def make_case(rng: random.Random, fc):
    """One (name, thunk) pair: a call with small tensors and drawn integers."""
    x4 = fc.randn(rng.randint(1, 2), 2, rng.randint(1, 6), rng.randint(1, 6))
    kind = rng.randrange(15)
    if kind == 12:
        n, c, hw, groups = (rng.choice([2, draw_int(rng)]) for _ in range(4))
        return "native_group_norm", lambda: fc.native_group_norm(x4, None, None, n, c, hw, groups, 1e-5)
    if kind == 13:
        shape = ints(rng, rng.randint(1, 3))
        return "native_layer_norm", lambda: fc.native_layer_norm(x4, shape, None, None, 1e-5)
    if kind == 14:
        logits = fc.randn(rng.randint(1, 3), rng.randint(1, 4))
        target = fc.tensor(ints(rng, logits.shape[0]), dtype=fc.int64)
        ignore = draw_int(rng)
        return "_cross_entropy", lambda: fc._C._cross_entropy(logits, target, None, 1, ignore, 0.0)
    if kind == 0:
        w = fc.randn(2, 2, rng.randint(1, 3), rng.randint(1, 3))
        args = (ints(rng, 2), ints(rng, 2), ints(rng, 2), rng.choice([1, 2, draw_int(rng)]))
        return "conv2d", lambda: fc.conv2d(x4, w, None, *args)
    if kind == 1:
        w = fc.randn(2, 2, rng.randint(1, 3), rng.randint(1, 3))
        args = (ints(rng, 2), ints(rng, 2), ints(rng, 2), rng.choice([1, draw_int(rng)]), ints(rng, 2))
        return "conv_transpose2d", lambda: fc.conv_transpose2d(x4, w, None, *args)
    if kind == 2:
        args = (ints(rng, 2), ints(rng, 2), ints(rng, 2), ints(rng, 2))
        return "im2col", lambda: fc.im2col(x4, *args)
    if kind == 3:
        cols = fc.randn(1, rng.randint(1, 8), rng.randint(1, 8))
        args = (ints(rng, 2), ints(rng, 2), ints(rng, 2), ints(rng, 2), ints(rng, 2))
        return "col2im", lambda: fc.col2im(cols, *args)
    if kind in (4, 5, 6) and rng.random() < 0.3:  # the poolings take bfloat16 too (computed in float32)
        x4 = x4.to(fc.bfloat16)
    if kind == 4:
        args = (ints(rng, 2), ints(rng, 2), ints(rng, 2), ints(rng, 2), rng.random() < 0.5)
        return "max_pool2d_with_indices", lambda: fc.max_pool2d_with_indices(x4, *args)
    if kind == 5:
        div = rng.choice([None, draw_int(rng)])
        args = (ints(rng, 2), ints(rng, 2), ints(rng, 2), rng.random() < 0.5, rng.random() < 0.5, div)
        return "avg_pool2d", lambda: fc.avg_pool2d(x4, *args)
    if kind == 6:
        size = ints(rng, 2)
        if rng.random() < 0.5:
            return "adaptive_avg_pool2d", lambda: fc.adaptive_avg_pool2d(x4, size)
        return "adaptive_max_pool2d", lambda: fc.adaptive_max_pool2d(x4, size)
    if kind == 7:
        mode = rng.choice(["constant", "reflect", "replicate", "circular"])
        pad = ints(rng, rng.choice([2, 4]))
        return "_pad_nd", lambda: fc._C._pad_nd(x4, pad, mode)
    if kind == 8:
        size, align_corners = ints(rng, 2), rng.random() < 0.5
        if rng.random() < 0.5:
            return "upsample_nearest2d", lambda: fc.upsample_nearest2d(x4, size)
        return "upsample_bilinear2d", lambda: fc.upsample_bilinear2d(x4, size, align_corners)
    if kind == 9:
        x = fc.randn(1, rng.choice([1, 4, 8]), 2, 2)
        factor = draw_int(rng)
        return "pixel_shuffle", lambda: fc.pixel_shuffle(x, factor)
    if kind == 10:
        idx = fc.tensor(ints(rng, rng.randint(1, 4)), dtype=fc.int64)
        classes = rng.choice([-1, draw_int(rng)])
        return "one_hot", lambda: fc.one_hot(idx, classes)
    table = fc.randn(rng.randint(1, 5), 3)
    idx = fc.tensor(ints(rng, rng.randint(1, 5)), dtype=fc.int64)
    if rng.random() < 0.5:
        pad = rng.choice([-1, draw_int(rng)])
        return "embedding", lambda: fc.embedding(table, idx, pad)
    offsets = fc.tensor(sorted(ints(rng, rng.randint(1, 3))), dtype=fc.int64)
    mode = rng.choice([0, 1, 2, draw_int(rng)])
    return "_embedding_bag", lambda: fc._C._embedding_bag(table, idx, offsets, False, mode)


def check_result(out) -> None:
    for t in out if isinstance(out, tuple) else (out,):
        shape = list(t.shape)
        assert all(s >= 0 for s in shape), shape
        n = 1
        for s in shape:
            n *= s
        assert t.numel() == n, (shape, t.numel())


def run_cases(seed: int, cases: int, only: set[int] | None = None) -> None:
    """The child: run the cases, printing each before it runs (the parent reads the last line on a crash)."""
    from flambeau_core.testing import running_under_asan

    # AddressSanitizer's shadow memory needs far more address space than the cap; under it
    # the sanitizer's own allocation limit (max_allocation_size_mb, nox -s sanitize) does the capping.
    if not running_under_asan():
        resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_SPACE, ADDRESS_SPACE))
    import flambeau_core as fc

    fc.manual_seed(seed)
    rng = random.Random(seed)
    for i in range(cases):
        name, thunk = make_case(rng, fc)
        if only is not None and i not in only:
            continue
        print(json.dumps({"case": i, "op": name}), flush=True)
        try:
            out = thunk()
        except EXPECTED as e:
            msg = str(e)
            assert msg and "internal error" not in msg.lower(), (name, msg)
            continue
        check_result(out)
    print(json.dumps({"done": cases}), flush=True)


def test_fuzz_nn_integer_arguments():
    proc = subprocess.run(
        [sys.executable, __file__, "--child", "--seed", str(SEED), "--cases", str(CASES)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    last = proc.stdout.strip().splitlines()[-1:] or ["<no case ran>"]
    assert proc.returncode == 0, f"child exited with {proc.returncode} after {last[0]}\n{proc.stderr[-3000:]}"
    assert json.loads(last[0]) == {"done": CASES}


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seed", type=int, default=SEED)
    p.add_argument("--cases", type=int, default=CASES)
    p.add_argument("--child", action="store_true", help="run the cases in this process")
    p.add_argument("--only", help="comma-separated case numbers to run (the others are drawn, not run)")
    a = p.parse_args(argv)
    run_cases(a.seed, a.cases, {int(c) for c in a.only.split(",")} if a.only else None)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
