"""Sizes, strides and offsets near the int64 limits (Note [Size overflow] and
Note [View bounds] in flambeau/tensor_impl.h).

Thousands of random factories (zeros/ones/empty/full/rand/randn/arange),
views (view, reshape, expand, as_strided, narrow, select, unsqueeze, squeeze,
transpose, permute, flatten, basic indexing), writes, reads (tolist, sum) and
memoryviews, from a fixed seed. Every case must either raise an exception of
an expected type whose message names the op ("[op] ...", never an internal
error), or give a tensor that keeps the invariants: its numel is the product
of its shape, every element it addresses lies inside its storage, and reading
or writing it touches exactly the elements NumPy computes from the same
memory. Views are made over a buffer with guard bytes on both sides
(frombuffer), so a write out of bounds changes a guard.

The cases run in a subprocess: a crash fails the test with its signal and the
last cases it ran, instead of killing pytest. Run this file directly to fuzz
with another seed: python test_fuzz_sizes.py --seed 7 --cases 20000
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import signal
import subprocess
import sys
import time

import pytest

INT64_MAX = 2**63 - 1
SEED = 20240611
CASES = 6000
# A tensor this small is read back, written and summed; one of this many bytes
# or more can never be allocated (beyond the 47-bit address space), so a
# factory asking for it must fail. Sizes between the two are never generated:
# they could really allocate gigabytes.
SMALL_NUMEL = 4096
SMALL_BYTES = 1 << 22
UNALLOCATABLE_BYTES = 1 << 50


def test_fuzz_sizes_strides_offsets():
    env = dict(os.environ, PYTHONFAULTHANDLER="1")
    cmd = [sys.executable, __file__, "--seed", str(SEED), "--cases", str(CASES)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600, env=env)
    tail = proc.stderr[-6000:]
    if proc.returncode < 0:
        pytest.fail(f"the fuzz worker crashed with {signal.Signals(-proc.returncode).name}; its last cases:\n{tail}")
    assert proc.returncode == 0, f"the fuzz worker failed (exit {proc.returncode}):\n{tail}"
    stats = json.loads(proc.stdout.strip().splitlines()[-1])
    # Not degenerate: many cases succeed and many raise, in every family.
    for family in ("factory", "arange", "view", "compute"):
        assert stats[f"{family}_ok"] > 300, stats
        assert stats[f"{family}_raised"] > 300, stats
    assert stats["read"] > 1000 and stats["write"] > 300 and stats["memoryview"] > 1000, stats


# ---------------------------------------------------------------------------
# The worker (run in a subprocess by the test above).


class Fuzzer:
    def __init__(self, seed: int):
        import flambeau_core as fc
        import numpy as np

        self.fc, self.np = fc, np
        self.rng = random.Random(seed)
        self.stats: dict[str, int] = {}
        self.dtypes = [
            (fc.float32, np.float32),
            (fc.float64, np.float64),
            (fc.int64, np.int64),
            (fc.int32, np.int32),
            (fc.int16, np.int16),
            (fc.uint8, np.uint8),
            (fc.bool, np.bool_),
        ]
        self.case = 0

    # ---- bookkeeping ----

    def count(self, key: str) -> None:
        self.stats[key] = self.stats.get(key, 0) + 1

    def log(self, text: str) -> None:
        # stderr is line-buffered: after a crash the parent sees the last case.
        print(f"case {self.case}: {text}", file=sys.stderr)

    def check_error(self, e: BaseException, allowed: tuple[type, ...]) -> None:
        msg = str(e)
        assert isinstance(e, allowed), f"unexpected {type(e).__name__}: {msg}"
        assert "internal error" not in msg, msg
        # flambeau's own errors name the op. Two come from elsewhere: pybind11's
        # rejection of an int beyond int64 for an int64 parameter, and Python's
        # own check of slice(..., 0) (the words NumPy and PyTorch give too).
        foreign = ("incompatible function arguments", "slice step cannot be zero")
        assert msg.startswith("[") or any(f in msg for f in foreign), msg

    # ---- random numbers: mostly small, often at the int64 edges ----

    def size(self) -> int:
        r = self.rng
        if r.random() < 0.7:
            return r.randint(0, 4)
        return (
            r.choice([-1, -2, INT64_MAX, INT64_MAX - 1, 2**63, 2**64, 2**66, -(2**63)])
            if r.random() < 0.3
            else (2 ** r.choice([20, 31, 32, 40, 47, 48, 52, 60, 61, 62, 63, 64]) + r.choice([-1, 0, 1]))
        )

    def stride(self) -> int:
        r = self.rng
        if r.random() < 0.6:
            return r.randint(0, 5)
        return r.choice([-1, -3, INT64_MAX, 2**62, 2**61 + 1, 2**40, 2**32, 2**63, -(2**63)])

    def index(self) -> int:
        r = self.rng
        if r.random() < 0.7:
            return r.randint(-5, 5)
        return r.choice([INT64_MAX, -INT64_MAX, -(2**63), 2**63, 2**64, 2**62, -(2**62), 2**32])

    def shape(self) -> list[int]:
        return [self.size() for _ in range(self.rng.randint(0, 4))]

    # ---- invariants of a tensor that an op returned ----

    def check_tensor(self, t, storage, guards=None) -> None:
        """t's geometry stays inside its storage; small tensors read back the
        elements NumPy finds at the same offsets of `storage` (the tensor's
        storage as a NumPy array, or None when there is nothing to compare)."""
        np = self.np
        shape, strides, offset = tuple(t.shape), tuple(t.stride()), t.storage_offset()
        isz = t.element_size()
        assert len(shape) == len(strides) == t.dim()
        assert all(s >= 0 for s in shape), shape
        numel = math.prod(shape)
        assert t.numel() == numel and numel <= INT64_MAX, (shape, t.numel())
        assert offset >= 0, offset
        if numel > 0:
            lo = offset + sum((s - 1) * st for s, st in zip(shape, strides, strict=True) if st < 0)
            hi = offset + sum((s - 1) * st for s, st in zip(shape, strides, strict=True) if st > 0)
            assert lo >= 0 and (hi + 1) * isz <= t._storage_nbytes, (shape, strides, offset, t._storage_nbytes)
        self.check_memoryview(t, shape, strides, numel, isz)
        if numel > SMALL_NUMEL or storage is None:
            return
        if numel == 0:
            assert t.sum().item() == 0  # (tolist could need 2**60 empty lists)
            self.count("read")
            return
        offs = np.full(shape, offset, dtype=np.int64)
        for d, (s, st) in enumerate(zip(shape, strides, strict=True)):
            if s > 1:
                offs = offs + (np.arange(s, dtype=np.int64) * st).reshape((s,) + (1,) * (len(shape) - d - 1))
        expected = storage[offs]
        got = np.array(t.tolist(), dtype=storage.dtype)
        np.testing.assert_array_equal(got, expected)
        np.testing.assert_array_equal(np.asarray(memoryview(t)), expected)
        self.count("read")
        total = t.sum().item()
        if storage.dtype.kind == "f":
            assert math.isclose(total, float(expected.sum(dtype=np.float64)), rel_tol=1e-4, abs_tol=1e-3)
        else:
            assert total == int(expected.astype(np.int64).sum()), (total, expected)
        if guards is not None and self.rng.random() < 0.3:
            self.write(t, storage, offs, guards)

    def check_memoryview(self, t, shape, strides, numel, isz) -> None:
        try:
            mv = memoryview(t)
        except BufferError as e:
            # Only a tensor whose size in bytes, or a running product of it, overflows int64 is refused.
            running = [isz]
            for s in shape:
                running.append(running[-1] * s)
            assert max(running) > INT64_MAX, (shape, e.__cause__)
            assert "[buffer]" in str(e.__cause__), e.__cause__
            return
        with mv:
            assert mv.shape == shape and mv.nbytes == numel * isz and mv.itemsize == isz
            for s, m, st in zip(shape, mv.strides, strides, strict=True):
                if s > 1 and numel > 0:  # other strides are never applied
                    assert m == st * isz, (shape, mv.strides, strides)
        self.count("memoryview")

    def write(self, t, storage, offs, guards) -> None:
        """Writes every element of t; exactly those offsets of storage change, the guards never."""
        np = self.np
        value = self.rng.choice([1, 7]) if storage.dtype != np.bool_ else True
        before = storage.copy()
        before_guards = [g.copy() for g in guards]
        t.fill_(value)  # fill_, unlike setitem, accepts expanded (overlapping) views, as in PyTorch
        self.count("write")
        expected = before
        expected[offs] = value
        np.testing.assert_array_equal(storage, expected)
        for g, b in zip(guards, before_guards, strict=True):
            np.testing.assert_array_equal(g, b)

    # ---- factories ----

    def expected_factory_error(self, shape: list[int], isz: int):
        """What zeros/ones/empty/full(shape) must raise, as (type, words), or None."""
        for s in shape:
            if not -(2**63) <= s <= INT64_MAX:
                return RuntimeError, "does not fit in int64"
        if any(s < 0 for s in shape):
            return ValueError, "negative dimension"
        if math.prod(max(s, 1) for s in shape) > INT64_MAX:
            return RuntimeError, "is too large"
        nbytes = math.prod(shape) * isz
        if nbytes > INT64_MAX:
            return RuntimeError, "is too large"
        if nbytes >= UNALLOCATABLE_BYTES:
            return RuntimeError, "out of memory"
        return None

    def factory_case(self) -> None:
        fc, np, r = self.fc, self.np, self.rng
        fdt, ndt = r.choice(self.dtypes)
        isz = np.dtype(ndt).itemsize
        while True:
            shape = self.shape()
            if all(0 <= s <= INT64_MAX for s in shape):
                nbytes = math.prod(shape) * isz
                if SMALL_BYTES < nbytes < UNALLOCATABLE_BYTES:
                    continue  # could really allocate gigabytes
            break
        name = r.choice(["zeros", "ones", "empty", "full", "rand", "randn"])
        form = r.choice(["args", "tuple", "list"])
        args = shape if form == "args" else [tuple(shape) if form == "tuple" else list(shape)]
        if name == "full":
            args = [tuple(shape), 3]
        self.log(f"{name}({', '.join(map(repr, args))}, dtype={fdt})")
        expected = self.expected_factory_error(shape, isz)
        if expected is None and name in ("rand", "randn") and ndt not in (np.float32, np.float64):
            expected = TypeError, "floating point"
        try:
            t = getattr(fc, name)(*args, dtype=fdt)
        except Exception as e:  # noqa: BLE001 (the type is checked)
            assert expected is not None, f"{name}{tuple(shape)} raised {type(e).__name__}: {e}"
            self.check_error(e, (expected[0],))
            assert expected[1] in str(e), (str(e), expected)
            if expected[1] != "out of memory" and expected[1] != "floating point":
                assert str(e).startswith(f"[{name}]"), str(e)
            self.count("factory_raised")
            return
        assert expected is None, f"{name}{tuple(shape)} gave a tensor, expected {expected}"
        assert tuple(t.shape) == tuple(shape) and t.dtype == fdt
        assert t._storage_nbytes >= math.prod(shape) * isz
        self.count("factory_ok")
        if name in ("zeros", "ones", "full"):
            want = {"zeros": 0, "ones": 1, "full": 3}[name]
            storage = np.full(math.prod(shape), want, dtype=ndt)
            self.check_tensor(t.as_strided((t.numel(),), (1,), 0), storage)  # every element
            self.check_tensor(t, storage)
        elif name in ("rand", "randn") and 0 < t.numel() <= SMALL_NUMEL:
            values = np.asarray(memoryview(t)).astype(np.float64).ravel()
            assert np.isfinite(values).all() and (name == "randn" or ((values >= 0) & (values < 1)).all())
            self.check_tensor(t, None)
        else:
            self.check_tensor(t, None)

    # ---- arange, against exact arithmetic ----

    def arange_case(self) -> None:
        fc, np, r = self.fc, self.np, self.rng

        def bound() -> int | float:
            if r.random() < 0.5:
                return r.randint(-6, 6) if r.random() < 0.7 else r.choice([INT64_MAX, -(2**63), 2**62, -(2**62)])
            return r.choice([0.5, -0.5, 2.1, -2.9, 3.2, 0.7, -1.0, 1e18, -1e19, 1e300, 1e-300, 2.0**62])

        fdt, ndt = r.choice([d for d in self.dtypes if d[1] is not np.bool_])
        start, end, step = bound(), bound(), bound()
        self.log(f"arange({start!r}, {end!r}, {step!r}, dtype={fdt})")
        expected = self.arange_model(start, end, step, np.dtype(ndt))
        if expected == "skip":
            return
        try:
            t = fc.arange(start, end, step, dtype=fdt)
        except Exception as e:  # noqa: BLE001 (the type is checked)
            assert isinstance(expected, tuple), f"arange raised {type(e).__name__}: {e}; expected {expected!r}"
            self.check_error(e, (expected[0],))
            assert str(e).startswith("[arange]") and expected[1] in str(e), (str(e), expected)
            self.count("arange_raised")
            return
        assert isinstance(expected, list), f"arange gave {t.numel()} elements, expected {expected}"
        got = np.array(t.tolist(), dtype=ndt)
        want = np.array(expected, dtype=np.float64 if np.dtype(ndt).kind == "f" else np.int64).astype(ndt)
        np.testing.assert_array_equal(got, want)
        self.check_tensor(t, None)
        self.count("arange_ok")

    def arange_model(self, start, end, step, dtype):
        """PyTorch's rules (Note [arange length]): the elements, or (type, words) of the error."""
        np = self.np
        floats = [float(v) for v in (start, end, step)]
        if not all(math.isfinite(v) for v in floats[:2]):
            return ValueError, "finite"
        if floats[2] == 0:
            return ValueError, "nonzero"
        if dtype.kind != "f":
            ints = []
            for v in (start, end, step):
                i = int(v)  # toward zero, like the conversion in C++
                if not -(2**63) <= i <= INT64_MAX:
                    return ValueError, "does not fit in int64"
                ints.append(i)
            s, e, st = ints
            if st == 0:
                return ValueError, "nonzero"
            if not ((st > 0 and e >= s) or (st < 0 and e <= s)):
                return ValueError, "inconsistent"
            n = -((s - e) // st)  # ceil((e - s) / st), exact
            if n > INT64_MAX:
                return RuntimeError, "more elements than int64"
        else:
            s, e, st = floats
            if not ((st > 0 and e >= s) or (st < 0 and e <= s)):
                return ValueError, "inconsistent"
            q = (e - s) / st
            if not math.isfinite(q) or math.ceil(q) >= 2**63:
                return RuntimeError, "more than int64 can count"
            n = math.ceil(q)
        nbytes = n * dtype.itemsize
        if nbytes > INT64_MAX:
            return RuntimeError, "too large"
        if n > SMALL_NUMEL:
            return "skip"  # valid, but too long to build here
        if dtype.kind == "f":
            return [s + i * st for i in range(n)]
        return [int(np.int64(((s + i * st) + 2**63) % 2**64 - 2**63)) for i in range(n)]

    # ---- views over a guarded buffer ----

    def base(self):
        fc, np, r = self.fc, self.np, self.rng
        fdt, ndt = r.choice(self.dtypes)
        n, pad = r.randint(1, 48), 16
        if ndt is np.bool_:
            arr = np.arange(n + 2 * pad) % 3 == 0
        else:
            arr = (np.arange(n + 2 * pad) * 3 + 1).astype(ndt)
        isz = arr.dtype.itemsize
        t = fc.frombuffer(arr, dtype=fdt, count=n, offset=pad * isz)
        return t, arr[pad : pad + n], [arr[:pad], arr[pad + n :]]

    def view_op(self, v):
        """A random view op on v, as (description, thunk)."""
        r = self.rng
        nd = v.dim()
        small = v.numel() * v.element_size() <= SMALL_BYTES
        ops = ["view", "expand", "as_strided", "narrow", "select", "getitem", "unsqueeze", "squeeze", "transpose"]
        ops += ["permute"] + (["reshape", "flatten"] if small else [])  # these may copy
        op = r.choice(ops)
        if op in ("view", "reshape"):
            shape = self.shape()
            if shape and r.random() < 0.4:
                shape[r.randrange(len(shape))] = -1
            return f"{op}{tuple(shape)}", lambda: getattr(v, op)(*shape)
        if op == "expand":
            sizes = [r.choice([-1, s, self.size()]) if s == 1 or r.random() < 0.2 else -1 for s in v.shape]
            sizes = [self.size() for _ in range(r.randint(0, 2))] + sizes
            return f"expand{tuple(sizes)}", lambda: v.expand(*sizes)
        if op == "as_strided":
            k = r.randint(0, 3)
            sizes, strides = [self.size() for _ in range(k)], [self.stride() for _ in range(k)]
            offset = r.choice([None, 0, r.randint(0, 60), self.index()])
            return f"as_strided({sizes}, {strides}, {offset})", lambda: v.as_strided(sizes, strides, offset)
        if op == "narrow":
            dim, start, length = r.randint(-nd - 1, nd), self.index(), r.choice([self.size(), r.randint(0, 3)])
            return f"narrow({dim}, {start}, {length})", lambda: v.narrow(dim, start, length)
        if op == "select":
            dim, i = r.randint(-nd - 1, nd), self.index()
            return f"select({dim}, {i})", lambda: v.select(dim, i)
        if op == "getitem":
            items = []
            for _ in range(r.randint(1, max(1, nd + 1))):
                kind = r.random()
                if kind < 0.35:
                    items.append(self.index())
                elif kind < 0.85:
                    step = r.choice([None, 1, 2, 3, self.index(), 2**62, INT64_MAX])
                    items.append(slice(r.choice([None, self.index()]), r.choice([None, self.index()]), step))
                elif kind < 0.95:
                    items.append(None)
                else:
                    items.append(Ellipsis)
            index = tuple(items) if len(items) > 1 or r.random() < 0.5 else items[0]
            return f"getitem[{index!r}]", lambda: v[index]
        if op == "unsqueeze":
            dim = r.randint(-nd - 2, nd + 1)
            return f"unsqueeze({dim})", lambda: v.unsqueeze(dim)
        if op == "squeeze":
            dim = r.choice([None, r.randint(-nd - 1, nd)])
            return f"squeeze({dim})", lambda: v.squeeze(dim)
        if op == "transpose":
            a, b = r.randint(-nd - 1, nd), r.randint(-nd - 1, nd)
            return f"transpose({a}, {b})", lambda: v.transpose(a, b)
        if op == "permute":
            dims = list(range(nd))
            r.shuffle(dims)
            if dims and r.random() < 0.2:
                dims[0] = self.index()
            return f"permute{tuple(dims)}", lambda: v.permute(*dims)
        a, b = r.randint(-nd - 1, nd), r.randint(-nd - 1, nd)
        return f"flatten({a}, {b})", lambda: v.flatten(a, b)

    def view_case(self) -> None:
        t, storage, guards = self.base()
        self.log(f"base {t.dtype} of {t.numel()} elements")
        v = t
        for _ in range(self.rng.randint(1, 4)):
            desc, thunk = self.view_op(v)
            self.log(f"  .{desc} on shape {tuple(v.shape)} strides {v.stride()} offset {v.storage_offset()}")
            try:
                out = thunk()
            except Exception as e:  # noqa: BLE001 (the type is checked)
                self.check_error(e, (RuntimeError, ValueError, IndexError, TypeError))
                self.count("view_raised")
                break
            # A view (or, for reshape/flatten, possibly a copy) of t's storage.
            shares = out.data_ptr() - out.storage_offset() * out.element_size() == t.data_ptr() or out.numel() == 0
            self.check_tensor(out, storage if shares else None, guards if shares else None)
            self.count("view_ok")
            v = out
        self.compute_case(v)  # on the last view that succeeded

    def compute_case(self, v) -> None:
        """An op that allocates its result from v's shape: sum over dims, a
        broadcast add, cat or clone, checked against NumPy on v's values."""
        fc, np, r = self.fc, self.np, self.rng
        if r.random() < 0.4:
            # A broadcast view with more elements than any buffer can hold.
            lead = 2 ** r.choice([48, 52, 56, 60, 62])
            try:
                v = v.expand(lead, *v.shape)
            except RuntimeError as e:
                assert str(e).startswith("[expand]") and "too large" in str(e), str(e)
                return
        nbytes = v.numel() * v.element_size()
        if SMALL_BYTES < nbytes < UNALLOCATABLE_BYTES * 2:
            return  # a copy could really allocate gigabytes (cat doubles it)
        small = v.numel() <= SMALL_NUMEL
        nd = v.dim()
        op = r.choice((["sum"] if small else []) + ["add", "clone"] + (["cat"] if nd else []))
        dims = r.sample(range(nd), r.randint(0, nd)) if nd else []
        cat_dim = r.randint(0, nd - 1) if nd else 0
        keepdim = bool(dims) and r.random() < 0.5
        self.log(f"  compute {op} (dims {dims}, keepdim {keepdim}, cat dim {cat_dim}) on shape {tuple(v.shape)}")
        thunks = {
            "sum": lambda: v.sum(dims, keepdim=keepdim) if dims else v.sum(),
            "add": lambda: v + v,
            "cat": lambda: fc.cat([v, v], cat_dim),
            "clone": lambda: v.clone(),
        }
        if v.numel() == 0:
            self.compute_empty(v, op, thunks[op], dims, keepdim, cat_dim)
            return
        try:
            out = thunks[op]()
        except Exception as e:  # noqa: BLE001 (the type is checked)
            # Only a result too large to count in bytes, or to allocate, may fail.
            assert not small, f"{op} of a small tensor raised {e!r}"
            self.check_error(e, (RuntimeError, ValueError))
            assert str(e).startswith((f"[{op}]", "[allocate] out of memory")), str(e)
            assert any(w in str(e) for w in ("too large", "out of memory", "more than int64")), str(e)
            self.count("compute_raised")
            return
        assert nbytes <= SMALL_BYTES or op == "sum", (
            f"{op} of shape {tuple(v.shape)} gave a result of shape {tuple(out.shape)}"
        )
        self.check_tensor(out, None)
        got = np.asarray(memoryview(out))
        values = np.asarray(memoryview(v))
        if op == "sum":
            kind = values.dtype.kind
            acc = values.astype(np.float64 if kind == "f" else np.int64)
            want = acc.sum(axis=tuple(dims), keepdims=out.dim() == nd and bool(dims)) if dims else acc.sum()
            np.testing.assert_allclose(got.astype(np.float64), np.asarray(want, dtype=np.float64), rtol=1e-4, atol=1e-3)
        else:
            if op == "add":
                want = values.astype(np.int64) * 2 if values.dtype == np.bool_ else values + values
                want = want.astype(got.dtype)
            else:
                want = np.concatenate([values, values], axis=cat_dim) if op == "cat" else values
            np.testing.assert_array_equal(got, want)
        self.count("compute_ok")

    def compute_empty(self, v, op, thunk, dims, keepdim, cat_dim) -> None:
        """An op on a tensor with no elements, whose sizes may still be huge (0, 2**62):
        the result has the shape NumPy's rules give, or, when that shape holds too
        many elements to allocate (a sum keeping the huge dim) or is not
        representable (a cat doubling it), the op raises naming itself."""
        shape = list(v.shape)
        if op == "sum":
            want = [1 if d in dims else s for d, s in enumerate(shape)] if keepdim else []
            if dims and not keepdim:
                want = [s for d, s in enumerate(shape) if d not in dims]
        elif op == "cat":
            want = shape[:cat_dim] + [2 * shape[cat_dim]] + shape[cat_dim + 1 :]
        else:
            want = shape
        numel = math.prod(want)
        representable = math.prod(max(s, 1) for s in want) <= INT64_MAX
        if representable and SMALL_BYTES < numel * 8 < UNALLOCATABLE_BYTES:
            return  # it could really allocate gigabytes
        try:
            out = thunk()
        except Exception as e:  # noqa: BLE001 (the type is checked)
            self.check_error(e, (RuntimeError, ValueError))
            assert str(e).startswith((f"[{op}]", "[allocate] out of memory")), str(e)
            if not representable:
                assert "too large" in str(e) or "more than int64" in str(e), str(e)
            else:
                assert numel * 8 >= UNALLOCATABLE_BYTES, f"{op} of shape {tuple(shape)} raised {e!r}"
                assert "too large" in str(e) or "out of memory" in str(e), str(e)
            self.count("compute_raised")
            return
        assert representable and numel * out.element_size() < UNALLOCATABLE_BYTES, (op, shape, tuple(out.shape))
        assert list(out.shape) == want, (op, shape, dims, keepdim, tuple(out.shape))
        self.check_tensor(out, None)
        if 0 < numel <= SMALL_NUMEL:  # a sum over the empty dims: zeros
            assert not np_any(self.np, out), out
        self.count("compute_ok")

    def run(self, cases: int) -> dict[str, int]:
        families = [self.factory_case, self.arange_case, self.view_case, self.view_case]
        for self.case in range(cases):
            self.rng.choice(families)()
        return self.stats


def np_any(np, t) -> bool:
    return bool(np.asarray(memoryview(t)).any())


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=SEED)
    parser.add_argument("--cases", type=int, default=CASES)
    args = parser.parse_args(argv)
    began = time.perf_counter()
    stats = Fuzzer(args.seed).run(args.cases)
    stats["seconds"] = round(time.perf_counter() - began, 1)
    print(json.dumps(stats, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
