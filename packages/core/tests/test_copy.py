"""copy_/contiguous/clone of permuted tensors (copy.cpp, Note [Transposed copy]) against NumPy's copy of
the same permutation, bit for bit: every element size (1, 2, 4, 8 and 16 bytes), NaN payloads, shapes
around the tile size and powers of two, batched and sliced planes, and the forms the tiled path does not
take (mixed dtypes, broadcast, strided runs) next to it. Results are read through the buffer protocol,
not through a flambeau copy."""

from __future__ import annotations

import flambeau_core as fc
import numpy as np
import pytest

# flambeau dtype -> (NumPy dtype of its bits, flambeau dtype of those bits)
BITS = {
    fc.bool: (np.bool_, fc.bool),
    fc.uint8: (np.uint8, fc.uint8),
    fc.int16: (np.int16, fc.int16),
    fc.bfloat16: (np.int16, fc.int16),
    fc.float16: (np.int16, fc.int16),
    fc.float32: (np.int32, fc.int32),
    fc.int64: (np.int64, fc.int64),
    fc.float64: (np.int64, fc.int64),
    fc.complex64: (np.int64, fc.int64),
}


def random_bits(shape, dtype, seed=0):
    """A contiguous flambeau tensor of `dtype` holding random bit patterns (NaNs with payloads among
    them), and the NumPy array of its bits."""
    rng = np.random.default_rng(seed)
    if dtype == fc.complex128:
        a = rng.standard_normal(shape) + 1j * rng.standard_normal(shape)
        a.flat[::7] = complex(np.nan, -0.0)
        return fc.tensor(a), a.view(np.int64).reshape(*shape, 2)
    np_bits, fc_bits = BITS[dtype]
    if np_bits is np.bool_:
        a = rng.integers(0, 2, size=shape).astype(np.bool_)
        return fc.tensor(a), a
    a = rng.integers(np.iinfo(np_bits).min, np.iinfo(np_bits).max, size=shape, dtype=np_bits, endpoint=True)
    return fc.tensor(a).view(dtype), a


def bits_of(t: fc.Tensor) -> np.ndarray:
    """The bits of a contiguous tensor, read through the buffer protocol (no copy by flambeau)."""
    assert t.is_contiguous()
    if t.dtype == fc.complex128:
        return np.array(memoryview(t)).view(np.int64).reshape(*t.shape, 2)
    return np.array(memoryview(t.view(BITS[t.dtype][1])))


def expected_bits(bits: np.ndarray, dtype, perm) -> np.ndarray:
    if dtype == fc.complex128:
        perm = (*perm, len(perm))
    return np.ascontiguousarray(bits.transpose(perm))


DTYPES = [*BITS, fc.complex128]


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("shape", [(512, 512), (784, 512), (33, 65), (1, 4096), (4096, 3), (2, 5000), (129, 257)])
def test_transposed_contiguous_is_bitwise_numpy(dtype, shape, threads):
    x, bits = random_bits(shape, dtype)
    y = x.t().contiguous()
    assert y.shape == (shape[1], shape[0]) and y.dtype == dtype
    np.testing.assert_array_equal(bits_of(y), expected_bits(bits, dtype, (1, 0)))


@pytest.mark.parametrize("dtype", [fc.bfloat16, fc.float32, fc.float64, fc.complex128], ids=str)
@pytest.mark.parametrize(
    "shape, perm",
    [
        ((4, 64, 96), (0, 2, 1)),  # batched transpose
        ((8, 3, 100), (0, 2, 1)),  # NCHW-like -> NHWC: few channels
        ((6, 32, 7, 9), (0, 2, 3, 1)),  # channels-last: the inner (7, 9) coalesce
        ((5, 70, 80), (2, 1, 0)),  # the inner two of three reversed
        ((64, 2, 64), (2, 1, 0)),
    ],
)
def test_permuted_contiguous_is_bitwise_numpy(dtype, shape, perm, threads):
    x, bits = random_bits(shape, dtype, seed=1)
    y = x.permute(*perm).contiguous()
    np.testing.assert_array_equal(bits_of(y), expected_bits(bits, dtype, perm))


@pytest.mark.parametrize("dtype", [fc.uint8, fc.float32, fc.complex128], ids=str)
def test_sliced_and_offset_sources(dtype, threads):
    """A plane that is a slice of a larger one (row stride past its width, a storage offset) and every
    other plane of a batch."""
    x, bits = random_bits((6, 300, 200), dtype, seed=2)
    v = x[1::2, 10:290, 3:180]
    y = v.transpose(1, 2).contiguous()
    tail = (slice(None),) if dtype == fc.complex128 else ()
    ref = np.ascontiguousarray(
        bits[(slice(1, None, 2), slice(10, 290), slice(3, 180), *tail)].transpose(
            (0, 2, 1, 3) if dtype == fc.complex128 else (0, 2, 1)
        )
    )
    np.testing.assert_array_equal(bits_of(y), ref)


def test_copy_into_a_contiguous_destination_and_clone():
    x, bits = random_bits((300, 200), fc.float32, seed=3)
    out = fc.empty(200, 300, dtype=fc.float32)
    r = out.copy_(x.t())
    assert r is out
    np.testing.assert_array_equal(bits_of(out), bits.T)
    np.testing.assert_array_equal(bits_of(x.t().clone(memory_format=fc.contiguous_format)), bits.T)


def test_casts_broadcasts_strided_runs_and_transposed_destinations():
    """Beside the tiled copy: a cast (float32 -> float64), a source broadcast along the destination's
    inner dim, a source without a contiguous dim; and a destination that is itself the transposed view
    (tiled too: the iterator walks the output's contiguous dim innermost)."""
    rng = np.random.default_rng(4)
    a = rng.standard_normal((300, 200)).astype(np.float32)
    x = fc.tensor(a)
    np.testing.assert_array_equal(np.array(memoryview(x.t().to(fc.float64))), a.T.astype(np.float64))
    col = fc.tensor(a[:, :1])
    out = fc.empty(300, 200, dtype=fc.float32)
    out.copy_(col.expand(300, 200))
    np.testing.assert_array_equal(np.array(memoryview(out)), np.broadcast_to(a[:, :1], (300, 200)))
    strided = fc.tensor(rng.standard_normal((300, 400)).astype(np.float32))
    np.testing.assert_array_equal(
        np.array(memoryview(strided[:, ::2].t().contiguous())),
        np.ascontiguousarray(np.array(memoryview(strided))[:, ::2].T),
    )
    dst = fc.zeros(200, 300, dtype=fc.float32)
    dst.t().copy_(x)
    np.testing.assert_array_equal(np.array(memoryview(dst)), a.T)


def test_empty_and_small_transposes():
    for shape in [(0, 5), (5, 0), (1, 1), (3, 2)]:
        a = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
        y = fc.tensor(a).t().contiguous()
        assert y.shape == (shape[1], shape[0])
        np.testing.assert_array_equal(np.array(memoryview(y)).reshape(y.shape), a.T)
