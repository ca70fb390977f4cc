"""``fb.func.vmap``'s batching rules against the loop they replace, on PyTorch's OpInfo database.

For every CPU entry of torch's ``op_db`` that flambeau has (found as opinfo_differential.py finds it), a few
float64 samples each make a batch of three: the sample, and two copies with its floating tensors scaled
elementwise by ``1 + small noise`` (zeros, signs and structure kept; integer and bool tensors repeated). The
op is vmapped over the batch in several layouts: every tensor batched in dim 0; every tensor batched in its
last dim; the first tensor batched and the others shared (``in_dims`` None), and the converse. A Tensor method
is called as a program writes it (``x.name(...)``, a dunder as its operator). The oracle is
the loop: the flambeau op on each sample, the results stacked. vmap must give the loop's dtypes, shapes and
values (rtol 1e-10), and must not raise where the loop does not. A layout the loop itself refuses (the
samples' results differ in shape, or a Python number comes back) is not compared.

Each entry is also classified by what vmap ran: a real batching rule, or the per-sample loop fallback (its
one-time "no batching rule" warning, reset before every call). ``python integration_tests/test_vmap_opinfo.py
[NAME ...]`` prints the classification and every failure; under pytest, ``-s`` shows the summary line.
"""

from __future__ import annotations

import itertools
import operator
import re
import sys
import time
import warnings

import opinfo_differential as od
import pytest

torch = pytest.importorskip("torch")
try:
    OP_DB = od.load_op_db()
except Exception as exc:  # torch built without its testing internals
    pytest.skip(f"torch's op_db is unavailable: {exc}", allow_module_level=True)

import flambeau as fb  # noqa: E402
from flambeau.func import _vmap  # noqa: E402

BATCH = 3
MAX_SAMPLES = 8
RTOL, ATOL = 1e-10, 1e-12

# Entries whose vmap disagrees with the loop, each with why it is not fixed here. A listed entry that starts
# to agree fails test_known_gaps_still_differ, so the list only shrinks.
_VALUE_CHECK = (
    "a function written in Python that branches on its inputs' values ({}): a BatchedTensor cannot give one "
    "Python value per sample, and a plain Python function has no __torch_function__ hook to run it per sample"
)
_PYBIND11 = (
    "{} is bound with pybind11, not through the op table's argument parser, so it is outside the "
    "__torch_function__ protocol: given a BatchedTensor it raises pybind11's TypeError before vmap sees the call"
)
_STRIDES = "it reads its input's strides and storage offset (as_strided), which differ per sample in a batch"
# Entries where vmap differs from the loop, each with why it is not fixed here (none is a wrong value: each
# raises). An entry listed that starts to agree fails test_known_gaps_still_differ, so the list only shrinks.
KNOWN_GAPS: dict[str, str] = {
    # as_strided names the sample's strides and offset, which inside vmap are the batch's: vmap raises.
    **dict.fromkeys(["as_strided", "as_strided.partial_views", "as_strided_copy"], _STRIDES),
    # The composites clone an unbatched input and copy_ the batched source into a view of the clone: an
    # in-place write of a batch into an unbatched tensor, which vmap refuses (torch's rule expands first).
    **dict.fromkeys(
        ["diagonal_scatter", "select_scatter", "slice_scatter"],
        "an unbatched input with a batched source: the composite writes the batch into an unbatched clone in place",
    ),
    **{name: _VALUE_CHECK.format("bool() of a comparison") for name in ("igamma", "igammac")},
    "matrix_exp": _VALUE_CHECK.format(".item() of the norm that picks the Pade degree"),
    # fb.Tensor.expand_as is a pybind11 method: an unbatched self given a batched other raises its TypeError
    # before vmap sees the call (a batched self is batched).
    "expand_as": _PYBIND11.format("Tensor.expand_as"),
    **dict.fromkeys(["as_strided_scatter", "stft", "unfold", "unfold_copy"], _STRIDES),
    # resize_ changes the sample's shape in place; vmap's in-place ops keep the BatchedTensor's shape.
    "resize_": "an in-place shape change of a batched tensor is not batched",
    "linalg.pinv": _VALUE_CHECK.format("float(rtol) of a tensor rtol"),
    **{
        name: _VALUE_CHECK.format("linalg.solve_triangular's zero-diagonal test")
        for name in ("linalg.solve_triangular", "triangular_solve", "cholesky_inverse", "cholesky_solve")
    },
    "nn.functional.ctc_loss": _VALUE_CHECK.format("the lengths' checks"),
    "nn.functional.gaussian_nll_loss": _VALUE_CHECK.format("var < 0; torch.func.vmap refuses it too"),
    "nn.functional.multi_margin_loss": _VALUE_CHECK.format("the targets' range check"),
    "nn.functional.multilabel_margin_loss": _VALUE_CHECK.format("the targets' range check"),
    **{
        f"nn.functional.max_unpool{d}d{v}": _VALUE_CHECK.format("the indices' range check")
        for d in (1, 2, 3)
        for v in ("", ".grad")
    },
    **dict.fromkeys(["histogram", "histogramdd"], _VALUE_CHECK.format("the range from min/max")),
    **{f"index_reduce.{r}": _VALUE_CHECK.format("the index's range check") for r in ("amax", "amin", "mean", "prod")},
}  # fmt: skip

_LOOP_WARNING = re.compile(r"there is no batching rule for '([^']+)'")


# ---- one sample as a function of its tensors


def _split(x, tensors: list):
    """``x`` with each flambeau tensor replaced by its index in ``tensors`` (appended there)."""
    if isinstance(x, fb.Tensor):
        tensors.append(x)
        return _Slot(len(tensors) - 1)
    if isinstance(x, (list, tuple)) and not hasattr(x, "_fields"):
        return type(x)(_split(v, tensors) for v in x)
    if isinstance(x, dict):
        return {k: _split(v, tensors) for k, v in x.items()}
    return x


class _Slot:
    __slots__ = ("i",)

    def __init__(self, i: int) -> None:
        self.i = i


def _fill(x, values):
    if isinstance(x, _Slot):
        return values[x.i]
    if isinstance(x, (list, tuple)) and not hasattr(x, "_fields"):
        return type(x)(_fill(v, values) for v in x)
    if isinstance(x, dict):
        return {k: _fill(v, values) for k, v in x.items()}
    return x


def _perturbed(t, i: int, gen):
    """Sample ``i`` of the batch made from tensor ``t``: ``t`` itself for i = 0."""
    if i == 0 or not (t.is_floating_point() or t.is_complex()):
        return t.clone()
    noise = torch.rand(tuple(t.shape), generator=gen, dtype=torch.float64).numpy()
    return t * fb.tensor(1 + 0.02 * i * noise, dtype=t.dtype)


def _leaves(out) -> list | None:
    """The leaves of a result, or None when one is not a tensor (vmap cannot batch a Python value)."""
    if isinstance(out, (list, tuple)):
        parts = [_leaves(v) for v in out]
        return None if any(p is None for p in parts) else [x for p in parts for x in p]
    return [out] if isinstance(out, fb.Tensor) else None


def _loop_oracle(fn, structure, per_sample: list[list]):
    """The op on each sample, results stacked leaf by leaf; None when the loop cannot be stacked."""
    results = []
    for values in per_sample:
        args, kwargs = structure
        got = _leaves(fn(*_fill(args, values), **_fill(kwargs, values)))
        if got is None:
            return None
        results.append(got)
    stacked = []
    for parts in zip(*results, strict=True):
        if len({tuple(p.shape) for p in parts}) > 1 or len({p.dtype for p in parts}) > 1:
            return None
        stacked.append(fb.stack([p.detach() for p in parts]))
    return stacked


def _differs(got: list, expected: list) -> str | None:
    if len(got) != len(expected):
        return f"{len(got)} outputs where the loop gives {len(expected)}"
    for n, (g, e) in enumerate(zip(got, expected, strict=True)):
        where = f"output {n}: " if len(expected) > 1 else ""
        if not isinstance(g, fb.Tensor):
            return f"{where}{type(g).__name__} where the loop gives a Tensor"
        if g.dtype != e.dtype:
            return f"{where}dtype {g.dtype} where the loop gives {e.dtype}"
        if tuple(g.shape) != tuple(e.shape):
            return f"{where}shape {list(g.shape)} where the loop gives {list(e.shape)}"
        gt, et = (torch.from_dlpack(x.detach().contiguous()) for x in (g, e))
        try:
            torch.testing.assert_close(gt, et, rtol=RTOL, atol=ATOL, equal_nan=True, check_stride=False)
        except AssertionError as exc:
            return where + " ".join(str(exc).split())[:300]
    return None


def _layouts(tensors: list) -> list[tuple[str, tuple]]:
    """(name, in_dim per tensor): None for a shared tensor, -1 for the batch in the last dim."""
    n = len(tensors)
    out = [("dim0", (0,) * n)]
    if any(t.dim() for t in tensors):
        out.append(("last", tuple(-1 if t.dim() else 0 for t in tensors)))
    if n > 1:
        out.append(("first_only", (0,) + (None,) * (n - 1)))
        out.append(("first_shared", (None,) + (0,) * (n - 1)))
    return out


def _batched_input(samples: list, d):
    if d is None:
        return samples[0]
    return fb.stack(samples, dim=d if d == 0 else samples[0].dim())


class _Result:
    def __init__(self) -> None:
        self.compared = 0
        self.looped: set[str] = set()
        self.failures: list[str] = []


def check_entry(op, fb_fn, max_samples: int = MAX_SAMPLES) -> _Result:
    res = _Result()
    gen = torch.Generator().manual_seed(20261129)
    torch.manual_seed(0)
    try:
        samples = list(itertools.islice(op.sample_inputs("cpu", torch.float64, requires_grad=False), max_samples))
    except Exception:
        return res
    for k, sample in enumerate(samples):
        conv = od._Converter(fb, torch)
        tensors: list = []
        try:
            structure = (_split([conv(sample.input), *conv(list(sample.args))], tensors), {})
            structure = (structure[0], _split(conv(dict(sample.kwargs)), tensors))
        except Exception:
            continue
        if not tensors:
            continue
        columns = [[_perturbed(t, i, gen) for i in range(BATCH)] for t in tensors]
        for layout, dims in _layouts(tensors):
            per_sample = [[col[i] if d is not None else col[0] for col, d in zip(columns, dims, strict=True)]
                          for i in range(BATCH)]  # fmt: skip
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    expected = _loop_oracle(fb_fn, structure, per_sample)
            except Exception:
                continue  # the op refuses these samples: nothing to batch
            if expected is None:
                continue
            inputs = [_batched_input(col, d) for col, d in zip(columns, dims, strict=True)]

            def f(*values, _structure=structure):
                args, kwargs = _structure
                return fb_fn(*_fill(args, values), **_fill(kwargs, values))

            what = f"sample {k} {od._describe(sample, 'float64')} [{layout} in_dims={dims}]"
            res.compared += 1
            _vmap._warned.clear()
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                try:
                    got = fb.func.vmap(f, in_dims=dims)(*inputs)
                except Exception as exc:
                    got = exc
            for w in caught:
                m = _LOOP_WARNING.search(str(w.message))
                if m:
                    res.looped.add(m.group(1))
            if isinstance(got, Exception):
                res.failures.append(f"{what}: raises {od._short(got)}")
                continue
            leaves = _leaves(got)
            diff = "a Python value among the outputs" if leaves is None else _differs(leaves, expected)
            if diff:
                res.failures.append(f"{what}: {diff}")
    return res


def entries():
    """(key, OpInfo, flambeau callable) of every entry compared."""
    out = []
    for op in OP_DB:
        if od.skip_reason(op) or torch.float64 not in op.supported_dtypes("cpu"):
            continue
        if op.has_nondeterministic_output or "wrapper_set_seed" in getattr(
            getattr(op.op, "__code__", None), "co_names", ()
        ):
            continue  # random: vmap's randomness modes are tested in test_vmap.py
        fn, how = od.counterpart(op, fb, torch)
        if fn is not None:
            out.append((od.entry_key(op), op, _as_written(op.name) if how == "method" else fn))
    return out


def _as_written(name: str):
    """A Tensor method called as a program calls it: ``x.name(...)``, and a dunder as its operator
    (``x.__radd__(y)`` is ``y + x``), which is how a BatchedTensor meets them (the unbound C++ method
    takes only a Tensor, and a reflected dunder given a tensor-like answers NotImplemented, as Python's)."""
    core = name.strip("_")
    if name.startswith("__") and core != name:
        reflected = core.startswith("r") and core not in ("rshift", "round")
        op = getattr(operator, {"div": "truediv", "and": "and_", "or": "or_"}.get(core[1:] if reflected else core,
                     core[1:] if reflected else core), None)  # fmt: skip
        if op is not None:
            return (lambda x, y: op(y, x)) if reflected else op
    return lambda x, *args, **kwargs: getattr(x, name)(*args, **kwargs)


def run(names: list[str] | None = None) -> dict[str, _Result]:
    report = {}
    for key, op, fn in entries():
        if names and key not in names and op.name not in names:
            continue
        report[key] = check_entry(op, fn)
    return report


def summary(report: dict[str, _Result], seconds: float) -> str:
    compared = {k: r for k, r in report.items() if r.compared}
    looping = {k for k, r in compared.items() if r.looped}
    gaps = {k for k in compared if report[k].failures and k in KNOWN_GAPS}
    failing = {k for k in compared if report[k].failures and k not in KNOWN_GAPS}
    return (
        f"vmap over OpInfo: {len(compared)} entries compared with the loop "
        f"({sum(r.compared for r in compared.values())} batched calls): {len(compared) - len(looping)} ran "
        f"batching rules only, {len(looping)} fell back to the loop in some call; {len(gaps)} known gaps, "
        f"{len(failing)} failing "
        f"[{seconds:.0f} s]"
    )


@pytest.fixture(scope="module")
def report():
    t0 = time.perf_counter()
    rep = run()
    print("\n" + summary(rep, time.perf_counter() - t0))
    return rep


def test_batching_rules_agree_with_the_loop(report):
    failing = {k: r.failures[:3] for k, r in report.items() if r.failures and k not in KNOWN_GAPS}
    lines = [f"{k}: {f}" for k, fs in sorted(failing.items()) for f in fs]
    assert not failing, f"{len(failing)} entries where vmap differs from the loop:\n  " + "\n  ".join(lines)


def test_known_gaps_still_differ(report):
    fixed = [k for k in KNOWN_GAPS if k in report and report[k].compared and not report[k].failures]
    assert not fixed, f"now agree with the loop; remove them from KNOWN_GAPS: {fixed}"


def test_most_entries_are_compared(report):
    compared = [k for k, r in report.items() if r.compared]
    assert len(compared) > 500, len(compared)


def test_loop_detection_sees_a_fallback(monkeypatch):
    """The classification reads the fallback's warning: an op whose rule is taken away is seen looping."""
    monkeypatch.delitem(_vmap._table_rules(), "trace")
    _vmap._warned.clear()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fb.func.vmap(fb.trace)(fb.zeros(2, 3, 3, dtype=fb.float64))
    assert {m.group(1) for w in caught if (m := _LOOP_WARNING.search(str(w.message)))} == {"trace"}


if __name__ == "__main__":
    t0 = time.perf_counter()
    rep = run(sys.argv[1:] or None)
    for key, r in sorted(rep.items()):
        if r.compared:
            kind = "loop " + ",".join(sorted(r.looped)) if r.looped else "rule"
            print(f"{key}: {r.compared} calls, {kind}{' FAIL' if r.failures else ''}")
            for f in r.failures[:4]:
                print("    " + f)
    print(summary(rep, time.perf_counter() - t0))
