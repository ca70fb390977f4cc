"""flambeau.backends (backends/*.py) against torch.backends on a CPU-only machine: flags set and read back,
their defaults, the type checks, and the availability answers."""

from __future__ import annotations

import importlib.util

import flambeau_core as fc
import pytest
import torch

FLAGS = [
    ("cudnn", "benchmark"),
    ("cudnn", "deterministic"),
    ("cudnn", "enabled"),
    ("cudnn", "allow_tf32"),
    ("mkldnn", "enabled"),
    ("opt_einsum", "enabled"),
]


def module_of(lib, name):
    return getattr(lib.backends, name)


@pytest.mark.parametrize("module, flag", FLAGS)
def test_bool_flags_default_set_and_read_back(module, flag):
    m, tm = module_of(fc, module), module_of(torch, module)
    default = getattr(m, flag)
    if module != "mkldnn":  # torch has oneDNN (mkldnn.enabled True); flambeau keeps the same default
        assert default == getattr(tm, flag)
    try:
        for value in (not default, default):
            setattr(m, flag, value)
            assert getattr(m, flag) is value
    finally:
        setattr(m, flag, default)


@pytest.mark.parametrize("module, flag", FLAGS)
@pytest.mark.parametrize("bad", [1, "yes", None])
def test_bool_flags_refuse_other_types(module, flag, bad):
    m = module_of(fc, module)
    before = getattr(m, flag)
    with pytest.raises(TypeError, match=rf"\[flambeau_core.backends.{module}.{flag}\] expects bool, got"):
        setattr(m, flag, bad)
    assert getattr(m, flag) is before


def test_cudnn_flags_context_and_answers():
    cudnn = fc.backends.cudnn
    with cudnn.flags(enabled=False, benchmark=True):
        assert (cudnn.enabled, cudnn.benchmark, cudnn.deterministic) == (False, True, False)
    assert (cudnn.enabled, cudnn.benchmark) == (True, False)
    assert cudnn.is_available() is torch.backends.cudnn.is_available() is False
    assert cudnn.version() is torch.backends.cudnn.version() is None
    assert cudnn.is_acceptable(fc.ones(1)) is torch.backends.cudnn.is_acceptable(torch.ones(1)) is False
    assert cudnn.benchmark_limit is torch.backends.cudnn.benchmark_limit is None


def test_cuda_matmul_flags():
    matmul, tmatmul = fc.backends.cuda.matmul, torch.backends.cuda.matmul
    for name in ("allow_tf32", "allow_fp16_reduced_precision_reduction", "allow_bf16_reduced_precision_reduction"):
        default = getattr(matmul, name)
        assert default == getattr(tmatmul, name)
        try:
            setattr(matmul, name, not default)
            assert getattr(matmul, name) is (not default)
        finally:
            setattr(matmul, name, default)
    with pytest.raises(TypeError, match=r"\[backends.cuda.matmul.allow_tf32\] expects a bool, got int"):
        matmul.allow_tf32 = 2
    with pytest.raises(AttributeError, match="unknown attribute 'foo'"):
        matmul.foo = True
    with pytest.raises(AttributeError, match="Unknown attribute foo"):
        tmatmul.foo = True
    with pytest.raises(AttributeError, match="unknown attribute 'bar'"):
        matmul.bar  # noqa: B018


def test_availability_answers():
    b = fc.backends
    assert b.cuda.is_built() == (importlib.util.find_spec("flambeau_cuda") is not None)
    assert b.mps.is_available() is b.mps.is_built() is False
    assert b.mps.is_available() == torch.backends.mps.is_available()
    assert b.openmp.is_available() is torch.backends.openmp.is_available() is True
    assert b.mkldnn.is_available() is False and b.mkl.is_available() is False
    assert b.opt_einsum.is_available() is False and b.opt_einsum.get_opt_einsum() is None
    assert b.opt_einsum.strategy is None
    b.opt_einsum.strategy = "greedy"
    assert b.opt_einsum.strategy == "greedy"
    b.opt_einsum.strategy = None
    with pytest.raises(TypeError, match="expects str or None, got int"):
        b.opt_einsum.strategy = 3


def test_cpu_capability_names_core_level():
    cap = fc.backends.cpu.get_cpu_capability()
    assert cap == {"base": "DEFAULT", "avx2": "AVX2", "avx512": "AVX512"}[fc._C._cpu_capability()]
    assert cap in ("DEFAULT", "AVX2", "AVX512")
    if cap != "DEFAULT":  # torch chooses from the same CPU flags (it knows AVX512 where core does)
        assert torch.backends.cpu.get_cpu_capability() == cap


def test_submodules_import():
    import flambeau_core.backends.cudnn as cudnn

    assert cudnn is fc.backends.cudnn
    assert sorted(fc.backends.__all__) == ["cpu", "cuda", "cudnn", "mkl", "mkldnn", "mps", "openmp", "opt_einsum"]
