"""Error-class parity with PyTorch 2.13 on bool, integer and complex inputs.

Every op below is called on the same small tensor in each dtype, in flambeau and in PyTorch:
flambeau must raise where PyTorch raises and succeed where it succeeds, with the same result
dtype. The classes agree under flambeau's documented mapping (Note [Errors] in
flambeau/error.h): a dtype PyTorch refuses with RuntimeError or NotImplementedError is a
TypeError (or NotImplementedError) here, whose message starts with the op's name.

The few deliberate differences are listed in KNOWN, each with its reason; they are documented
in docs/design/dtypes.md ("Where flambeau and PyTorch disagree on a dtype").
"""

from __future__ import annotations

import warnings

import flambeau_core as fc
import numpy as np
import pytest
import torch

DTYPES = ["bool", "uint8", "int32", "int64", "float32", "complex64"]
V = np.array([[1, 0, 2], [3, 1, 0]])


def T(m, dtype, values=V):
    if dtype == "complex64":
        return m.tensor((np.asarray(values) + 0.5j).tolist(), dtype=m.complex64)
    return m.tensor(np.asarray(values).tolist(), dtype=getattr(m, dtype))


UNARY = """abs neg sign sgn exp log sqrt sin cos tan tanh sigmoid relu floor ceil trunc round frac
reciprocal rsqrt exp2 expm1 log1p log2 log10 erf erfc erfinv logical_not bitwise_not isnan isinf
isfinite signbit positive angle asin acos atan sinh cosh asinh acosh atanh square deg2rad rad2deg
nan_to_num flatten ravel clone t argwhere nonzero count_nonzero trace msort sum mean prod nansum
nanmean all any amax amin argmax argmin max min std var median nanmedian unique""".split()
DIM = """cumsum cumprod cummax cummin logcumsumexp logsumexp softmax log_softmax sort argsort flip""".split()
BINARY = """add sub mul div remainder fmod pow maximum minimum fmax fmin atan2 hypot logaddexp eq ne lt
le gt ge logical_and logical_or logical_xor bitwise_and bitwise_or bitwise_xor bitwise_left_shift
bitwise_right_shift copysign nextafter xlogy float_power true_divide floor_divide isclose""".split()
MATRIX = """mm matmul inner kron""".split()


def _unary(n):
    return lambda m, x: getattr(m, n)(x)


def _dim(n):
    return lambda m, x: getattr(m, n)(x, 1 if n != "flip" else [1])


def _binary(n):
    return lambda m, x: getattr(m, n)(x, x)


def _matrix(n):
    return lambda m, x: getattr(m, n)(x, x.t())


CALLS = (
    [(n, _unary(n)) for n in UNARY]
    + [(n + " dim", _dim(n)) for n in DIM]
    + [(n, _binary(n)) for n in BINARY]
    + [(n, _matrix(n)) for n in MATRIX if n in ("mm", "matmul")]
    + [(n, _binary(n)) for n in MATRIX if n not in ("mm", "matmul")]
    + [
        ("topk", lambda m, x: m.topk(x, 1)),
        ("dot", lambda m, x: m.dot(x[0], x[1])),
        ("clamp", lambda m, x: m.clamp(x, 0, 1)),
        ("where", lambda m, x: m.where(x != 0, x, x)),
        ("searchsorted", lambda m, x: m.searchsorted(x, x)),
        ("tensordot", lambda m, x: m.tensordot(x, x, 2)),
        ("cat", lambda m, x: m.cat([x, x])),
        ("stack", lambda m, x: m.stack([x, x])),
        ("outer", lambda m, x: m.outer(x[0], x[1])),
        ("sum dim dtype=int64", lambda m, x: m.sum(x, 1, dtype=m.int64)),
        ("prod dtype=int64", lambda m, x: m.prod(x, 1, dtype=m.int64)),
        ("linspace dtype", lambda m, x: m.linspace(0, 4.5, 4, dtype=x.dtype)),
        ("arange dtype", lambda m, x: m.arange(0, 3, dtype=x.dtype)),
        ("logical_and complex scalar", lambda m, x: m.logical_and(x, x[0, 0])),
    ]
)

# (op id, dtype) -> why flambeau deliberately (or for now) differs; docs/design/dtypes.md.
ACCEPTS_MORE = "flambeau accepts a dtype PyTorch's CPU kernel lacks (its result is well defined)"
REFUSES_COMPLEX = "complex kernel not written yet (flambeau refuses with TypeError naming the dtype)"
KNOWN = {
    **{(op, "bool"): ACCEPTS_MORE for op in ("median", "nanmedian", "pow", "searchsorted", "trace", "topk")},
    **{("logaddexp", dt): ACCEPTS_MORE for dt in ("bool", "uint8", "int32", "int64")},
    **{(op, "complex64"): REFUSES_COMPLEX for op in ("exp2", "logaddexp", "logcumsumexp dim")},
    ("logsumexp dim", "complex64"): REFUSES_COMPLEX,
    ("arange dtype", "complex64"): ACCEPTS_MORE,
    ("sum dim dtype=int64", "complex64"): "a complex input summed into a real dtype would drop the imaginary "
    "parts (PyTorch warns and drops them): flambeau refuses with TypeError",
}


def _call(m, call, dtype):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return call(m, T(m, dtype))


def _dtype_of(r):
    if isinstance(r, tuple):
        r = r[0]
    return str(r.dtype).split(".")[-1]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", CALLS, ids=[c[0] for c in CALLS])
def test_raises_where_torch_raises(case, dtype):
    name, call = case
    if not hasattr(fc, name.split()[0]):
        pytest.skip(f"flambeau has no {name.split()[0]}")
    try:
        theirs = _call(torch, call, dtype)
        torch_error = None
    except (RuntimeError, TypeError, NotImplementedError) as e:
        torch_error = e
    try:
        ours = _call(fc, call, dtype)
        our_error = None
    except (RuntimeError, TypeError, NotImplementedError, ValueError, IndexError) as e:
        our_error = e
    if (name, dtype) in KNOWN:
        agree = (torch_error is None) == (our_error is None) and (
            torch_error is not None or _dtype_of(ours) == _dtype_of(theirs)
        )
        assert not agree, f"{name} {dtype} agrees now: drop it from KNOWN"
        pytest.skip(KNOWN[(name, dtype)])
    if torch_error is not None:
        assert our_error is not None, f"{name}({dtype}) succeeds here but PyTorch raises: {torch_error}"
        msg = str(our_error)
        assert msg.startswith("["), msg
        if isinstance(torch_error, TypeError):
            assert isinstance(our_error, TypeError), (type(our_error), msg)
        elif isinstance(our_error, TypeError):
            assert not isinstance(our_error, fc.FlambeauError)
        else:
            assert isinstance(our_error, (RuntimeError, NotImplementedError)), type(our_error)
        return
    assert our_error is None, f"{name}({dtype}) raises here ({our_error}) but PyTorch succeeds"
    assert _dtype_of(ours) == _dtype_of(theirs), (name, dtype, _dtype_of(ours), _dtype_of(theirs))
