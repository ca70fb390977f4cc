"""The exception classes of bad calls, against PyTorch 2.13's (Note [Errors] in
flambeau/error.h).

flambeau's standard: dtype errors are ``TypeError``, index errors
``IndexError``, shape and value errors ``FlambeauError`` (a ``RuntimeError``
and a ``ValueError``); every message starts with the op's name in brackets
and names the dtype or shape it refused. Where PyTorch raises the same class
(IndexError; RuntimeError for shapes and values, which FlambeauError is) the
classes must agree; for dtype errors PyTorch raises RuntimeError or
NotImplementedError and flambeau its documented stricter TypeError.
"""

from __future__ import annotations

import flambeau_core as fc
import numpy as np
import pytest
import torch


def T(m, values, dtype):
    return m.tensor(np.asarray(values).tolist(), dtype=getattr(m, dtype))


I64 = [[1, 2, 3], [4, 5, 6]]
C = [[1 + 1j, 2, 3], [4, 5j, 6]]
F = [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]

# (id, call(m), our class, words our message holds after "[op]")
DTYPE_CASES = [
    ("var int64", lambda m: m.var(T(m, I64, "int64")), "var", ["int64"]),
    ("var bool", lambda m: m.var(T(m, I64, "bool")), "var", ["bool"]),
    ("std int64", lambda m: m.std(T(m, I64, "int64")), "std", ["int64"]),
    ("std dim int64", lambda m: m.std(T(m, I64, "int64"), 0), "std", ["int64"]),
    ("std_mean int64", lambda m: m.std_mean(T(m, I64, "int64")), "std_mean", ["int64"]),
    ("var_mean bool", lambda m: m.var_mean(T(m, I64, "bool")), "var_mean", ["bool"]),
    ("mean int64", lambda m: m.mean(T(m, I64, "int64")), "mean", ["int64"]),
    ("nanmean int64", lambda m: m.nanmean(T(m, I64, "int64")), "nanmean", ["int64"]),
    ("quantile int64", lambda m: m.quantile(T(m, I64, "int64"), 0.5), "quantile", ["int64"]),
    ("sign complex", lambda m: m.sign(T(m, C, "complex64")), "sign", ["complex64", "sgn"]),
    ("sort complex", lambda m: m.sort(T(m, C, "complex64")), "sort", ["complex64"]),
    ("argsort complex", lambda m: m.argsort(T(m, C, "complex64")), "sort", ["complex64"]),
    ("max complex", lambda m: m.max(T(m, C, "complex64")), "max", ["complex64"]),
    ("min complex", lambda m: m.min(T(m, C, "complex64")), "min", ["complex64"]),
    ("amax complex", lambda m: m.amax(T(m, C, "complex64")), "amax", ["complex64"]),
    ("argmax complex", lambda m: m.argmax(T(m, C, "complex64")), "argmax", ["complex64"]),
    ("topk complex", lambda m: m.topk(T(m, C, "complex64"), 1), "topk", ["complex64"]),
    ("clamp complex", lambda m: m.clamp(T(m, C, "complex64"), 0, 1), "clamp", ["complex64"]),
    ("floor complex", lambda m: m.floor(T(m, C, "complex64")), "floor", ["complex64"]),
    ("ceil complex", lambda m: m.ceil(T(m, C, "complex64")), "ceil", ["complex64"]),
    ("trunc complex", lambda m: m.trunc(T(m, C, "complex64")), "trunc", ["complex64"]),
    ("round complex", lambda m: m.round(T(m, C, "complex64")), "round", ["complex64"]),
    ("floor bool", lambda m: m.floor(T(m, I64, "bool")), "floor", ["bool"]),
    ("frac int64", lambda m: m.frac(T(m, I64, "int64")), "frac", ["int64"]),
    ("maximum complex", lambda m: m.maximum(T(m, C, "complex64"), T(m, C, "complex64")), "maximum", ["complex64"]),
    ("remainder complex", lambda m: m.remainder(T(m, C, "complex64"), 2), "remainder", ["complex64"]),
    ("cummax complex", lambda m: m.cummax(T(m, C, "complex64"), 0), "cummax", ["complex64"]),
    ("mode complex", lambda m: m.mode(T(m, C, "complex64")), "mode", ["complex64"]),
    ("frexp int64", lambda m: m.frexp(T(m, I64, "int64")), "frexp", ["int64"]),
    ("logcumsumexp int64", lambda m: m.logcumsumexp(T(m, I64, "int64"), 0), "logcumsumexp", ["int64"]),
    ("hypot int64", lambda m: m.hypot(T(m, I64, "int64"), T(m, I64, "int64")), "hypot", ["int64"]),
    ("erf complex", lambda m: m.erf(T(m, C, "complex64")), "erf", ["complex64"]),
    ("relu bool", lambda m: m.relu(T(m, I64, "bool")), "relu", ["bool"]),
    ("neg bool", lambda m: m.neg(T(m, I64, "bool")), "neg", ["bool"]),
    ("softmax int64", lambda m: m.softmax(T(m, I64, "int64"), 0), "softmax", ["int64"]),
    ("bitwise_not complex", lambda m: m.bitwise_not(T(m, C, "complex64")), "bitwise_not", ["complex64"]),
    ("add out= int64", lambda m: m.add(T(m, F, "float32"), 1, out=m.empty(2, 3, dtype=m.int64)), "add", ["int64"]),
    ("exp out= int64", lambda m: m.exp(T(m, F, "float32"), out=m.empty(2, 3, dtype=m.int64)), "exp", ["int64"]),
    ("abs out= int64", lambda m: m.abs(T(m, F, "float32"), out=m.empty(2, 3, dtype=m.int64)), "abs", ["int64"]),
    ("unique complex", lambda m: m.unique(T(m, C, "complex64")), "unique", ["complex64"]),
    (
        "searchsorted complex",
        lambda m: m.searchsorted(T(m, C, "complex64"), T(m, C, "complex64")),
        "searchsorted",
        ["complex64"],
    ),
    ("atan2 complex", lambda m: m.atan2(T(m, C, "complex64"), T(m, C, "complex64")), "atan2", ["complex64"]),
    ("signbit complex", lambda m: m.signbit(T(m, C, "complex64")), "signbit", ["complex64"]),
    (
        "bitwise_and complex",
        lambda m: m.bitwise_and(T(m, C, "complex64"), T(m, C, "complex64")),
        "bitwise_and",
        ["complex64"],
    ),
    ("lerp int64", lambda m: m.lerp(T(m, I64, "int64"), T(m, I64, "int64"), 0.5), "lerp", ["int64"]),
    (
        "add out= complex to float32",
        lambda m: m.add(T(m, C, "complex64"), 1, out=m.empty(2, 3)),
        "add",
        ["complex64", "float32"],
    ),
    (
        "mul out= bool",
        lambda m: m.mul(T(m, F, "float32"), 2, out=m.empty(2, 3, dtype=m.bool)),
        "mul",
        ["float32", "bool"],
    ),
    ("sqrt out= int64", lambda m: m.sqrt(T(m, I64, "int64"), out=m.empty(2, 3, dtype=m.int64)), "sqrt", ["int64"]),
    (
        "kron out= int64",
        lambda m: m.kron(T(m, F, "float32"), T(m, F, "float32"), out=m.empty(4, 9, dtype=m.int64)),
        "kron",
        ["int64"],
    ),
    ("sgn out= int64", lambda m: m.sgn(T(m, F, "float32"), out=m.empty(2, 3, dtype=m.int64)), "sgn", ["int64"]),
    (
        "frexp out= int64 exponent",
        lambda m: m.frexp(T(m, F, "float32"), out=(m.empty(2, 3), m.empty(2, 3, dtype=m.int64))),
        "frexp",
        ["int32", "int64"],
    ),
    (
        "max out= int32 indices",
        lambda m: m.max(T(m, F, "float32"), 0, out=(m.empty(3), m.empty(3, dtype=m.int32))),
        "max",
        ["int64", "int32"],
    ),
    (
        "sort out= float32 indices",
        lambda m: m.sort(T(m, F, "float32"), out=(m.empty(2, 3), m.empty(2, 3))),
        "sort",
        ["int64", "float32"],
    ),
]

INDEX_CASES = [
    ("sum dim 5", lambda m: m.sum(T(m, F, "float32"), 5), "sum"),
    ("select 7", lambda m: T(m, F, "float32").select(1, 7), "select"),
    ("gather index 9", lambda m: m.gather(T(m, F, "float32"), 1, T(m, [[9]], "int64")), "gather"),
    # (an empty source dim once crashed the one-pass contiguous gather: it read element 0)
    ("gather from an empty last dim", lambda m: m.gather(m.ones(3, 0), 1, T(m, [[1]], "int64")), "gather"),
    ("gather from an empty 1-d", lambda m: m.gather(m.ones(0), 0, T(m, [1], "int64")), "gather"),
    ("take_along_dim of an empty", lambda m: m.take_along_dim(m.ones(2, 0), T(m, [[1]], "int64")), "gather"),
    ("mode dim 3", lambda m: m.mode(T(m, F, "float32"), 3), "mode"),
    ("mode empty dim", lambda m: m.mode(m.ones(2, 0), 1), "mode"),
    ("cumsum dim -3", lambda m: m.cumsum(T(m, F, "float32"), -3), "cumsum"),
    ("take_along_dim dim 2", lambda m: m.take_along_dim(T(m, F, "float32"), T(m, [[0]], "int64"), 2), "take_along_dim"),
    ("diag_embed dims", lambda m: m.diag_embed(T(m, F, "float32"), 0, 0, 5), "diag_embed"),
]

SHAPE_CASES = [
    ("add broadcast", lambda m: T(m, F, "float32") + m.ones(4), "add"),
    ("mm inner", lambda m: m.mm(T(m, F, "float32"), T(m, F, "float32")), "mm"),
    ("bmm complex 2-d", lambda m: m.bmm(T(m, C, "complex64"), T(m, C, "complex64")), "bmm"),
    ("view", lambda m: T(m, F, "float32").view(7), "view"),
    ("trace 1-d", lambda m: m.trace(m.ones(3)), "trace"),
    ("linspace negative steps", lambda m: m.linspace(0, 1, -1), "linspace"),
    ("logspace negative steps", lambda m: m.logspace(0, 1, -2), "logspace"),
    ("tril_indices negative row", lambda m: m.tril_indices(-1, 2), "tril_indices"),
    ("repeat_interleave negative", lambda m: m.repeat_interleave(T(m, F, "float32"), -1), "repeat_interleave"),
    ("chunk 0", lambda m: m.chunk(T(m, F, "float32"), 0), "chunk"),
    ("kron huge", lambda m: m.kron(m.ones(1).expand(2**40), m.ones(1).expand(2**40)), "kron"),
    (
        "scatter_reduce bad reduce",
        lambda m: m.scatter_reduce(m.ones(3), 0, m.zeros(2, dtype=m.int64), m.ones(2), "bad"),
        "scatter_reduce",
    ),
]


def _torch_class(call):
    with pytest.raises(Exception) as info:  # noqa: PT011 (the class is what is compared)
        call(torch)
    return info.value


@pytest.mark.parametrize("case", DTYPE_CASES, ids=[c[0] for c in DTYPE_CASES])
def test_dtype_errors_are_type_errors(case):
    _, call, op, words = case
    with pytest.raises(TypeError) as info:
        call(fc)
    msg = str(info.value)
    assert not isinstance(info.value, fc.FlambeauError)
    assert msg.startswith(f"[{op}]"), msg
    for w in words:
        assert w in msg, (w, msg)
    # PyTorch refuses the same call, with RuntimeError (or its NotImplementedError): ours is the
    # documented stricter TypeError.
    theirs = _torch_class(call)
    assert isinstance(theirs, (TypeError, RuntimeError)), type(theirs)


@pytest.mark.parametrize("case", INDEX_CASES, ids=[c[0] for c in INDEX_CASES])
def test_index_errors_agree_with_torch(case):
    _, call, op = case
    with pytest.raises(IndexError) as info:
        call(fc)
    assert str(info.value).startswith(f"[{op}]"), str(info.value)
    theirs = _torch_class(call)
    # (PyTorch raises RuntimeError for a gather index out of range, IndexError for dims.)
    assert isinstance(theirs, (IndexError, RuntimeError)), type(theirs)


@pytest.mark.parametrize("case", SHAPE_CASES, ids=[c[0] for c in SHAPE_CASES])
def test_shape_and_value_errors_are_flambeau_errors(case):
    _, call, op = case
    with pytest.raises(fc.FlambeauError) as info:
        call(fc)
    assert str(info.value).startswith(f"[{op}]"), str(info.value)
    theirs = _torch_class(call)
    assert isinstance(theirs, RuntimeError), type(theirs)  # what FlambeauError is too


# ---- out of memory and device failures: PyTorch's two RuntimeError subclasses ----


def test_out_of_memory_error_is_torchs_class():
    for cls, torch_cls in (
        (fc.OutOfMemoryError, torch.OutOfMemoryError),
        (fc.AcceleratorError, torch.AcceleratorError),
    ):
        assert cls.__mro__[1:] == torch_cls.__mro__[1:] == (RuntimeError, Exception, BaseException, object)
        assert cls.__name__ == torch_cls.__name__


def test_system_allocator_out_of_memory_raises_out_of_memory_error():
    # One exbibyte: more than any address space maps, so the system allocator refuses it everywhere.
    with pytest.raises(fc.OutOfMemoryError) as info:
        fc.empty(2**60, dtype=fc.uint8)
    assert str(info.value) == (
        "[allocate] out of memory: the system allocator could not provide 1152921504606846976 bytes on cpu"
    )
    with pytest.raises(RuntimeError, match=r"^\[allocate\] out of memory"):  # what PyTorch code catches
        fc.zeros(2**58, dtype=fc.float64)


def test_device_modules_name_the_same_out_of_memory_error():
    assert torch.cuda.OutOfMemoryError is torch.OutOfMemoryError
    assert fc.cuda.OutOfMemoryError is fc.OutOfMemoryError
