"""flambeau_core.backends.cpu: the CPU kernels' settings (Note [Settings] in src/settings.h).

Each setting reads and assigns at run time, refuses a value outside its allowed
ones (ValueError naming the setting and the values) or of the wrong type
(TypeError), and takes its environment override once, when flambeau_core loads
(one child process per override). docs/core.md "Settings" lists every one, and
no C++ source of core but the registry calls getenv.
"""

from __future__ import annotations

import os
import pathlib
import re
import subprocess
import sys

import flambeau_core as fc
import numpy as np
import pytest
from helpers import from_torch, to_numpy

cpu = fc.backends.cpu
ROOT = pathlib.Path(__file__).resolve().parents[3]

# name -> (environment override, allowed values); the registry must say exactly this.
SETTINGS = {
    "sgemm": ("FLAMBEAU_SGEMM", ["own", "openblas"]),
    "gemm_pool": ("FLAMBEAU_GEMM_POOL", [False, True]),
    "parallel_for_schedule": ("FLAMBEAU_PARALLEL_FOR", ["dynamic", "static", "affine"]),
    "conv_row_blocks": ("FLAMBEAU_CONV_ROWS", ["auto", "on", "off"]),
    "conv_pixel_classes": ("FLAMBEAU_CONV_CLASSES", ["auto", "off"]),
    "conv_direct_kernel": ("FLAMBEAU_CONV_DIRECT", ["auto", "flat", "cv"]),
    "conv_weight_grad_kernel": ("FLAMBEAU_CONV_WGRAD", ["auto", "flat", "cv"]),
    "conv_transposed_kernel": ("FLAMBEAU_CONV_TRANSPOSED", ["auto", "gemm"]),
    "max_cpu_capability": ("FLAMBEAU_CPU_CAPABILITY", ["auto", "avx512", "avx2", "base"]),
    "bf16_amx": ("FLAMBEAU_BF16_AMX", [False, True]),
}
AVX512 = cpu.get_cpu_capability() == "AVX512"
# The values a test process can switch to (the own GEMM needs AVX-512).
SETTABLE = {
    name: [v for v in values if not (name == "sgemm" and v == "own" and not AVX512)]
    for name, (_, values) in SETTINGS.items()
}


def _child_env(**overrides: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not any(k == e for e, _ in SETTINGS.values())}
    return {**env, **overrides}


def test_the_registry_lists_every_setting():
    specs = {s["name"]: s for s in fc._C._settings()}
    assert list(specs) == list(SETTINGS)
    for name, (env, values) in SETTINGS.items():
        assert specs[name]["env"] == env
        assert specs[name]["values"] == [str(v) for v in values]
        assert specs[name]["doc"]
    assert set(cpu.settings()) == set(SETTINGS)


def test_defaults_in_a_clean_process():
    code = "import flambeau_core as fc, json; print(json.dumps(fc.backends.cpu.settings()))"
    r = subprocess.run([sys.executable, "-c", code], env=_child_env(), capture_output=True, text=True, check=True)
    import json

    assert json.loads(r.stdout) == {
        "sgemm": "own" if AVX512 else "openblas",
        "gemm_pool": True,
        "parallel_for_schedule": "dynamic",
        "conv_row_blocks": "auto",
        "conv_pixel_classes": "auto",
        "conv_direct_kernel": "auto",
        "conv_weight_grad_kernel": "auto",
        "conv_transposed_kernel": "auto",
        "max_cpu_capability": "auto",
        "bf16_amx": True,
    }
    assert r.stderr == ""


@pytest.mark.parametrize("name", list(SETTABLE))
def test_each_value_sets_and_reads_back(name):
    before = getattr(cpu, name)
    try:
        for value in SETTABLE[name]:
            setattr(cpu, name, value)
            assert getattr(cpu, name) == value
            assert cpu.settings()[name] == value
    finally:
        setattr(cpu, name, before)
    assert getattr(cpu, name) == before


@pytest.mark.parametrize("name", [n for n, (_, values) in SETTINGS.items() if isinstance(values[0], str)])
def test_an_unknown_value_names_the_setting_and_the_allowed_values(name):
    before = getattr(cpu, name)
    allowed = ", ".join(f"'{v}'" for v in SETTINGS[name][1])
    message = rf"\[backends\.cpu\.{name}\] expected one of {re.escape(allowed)}, got 'fastest'"
    with pytest.raises(ValueError, match=message):
        setattr(cpu, name, "fastest")
    assert getattr(cpu, name) == before


def test_wrong_types_are_type_errors():
    with pytest.raises(TypeError, match=r"\[backends\.cpu\.gemm_pool\] expected a bool, got str"):
        cpu.gemm_pool = "0"
    with pytest.raises(TypeError, match=r"\[backends\.cpu\.gemm_pool\] expected a bool, got int"):
        cpu.gemm_pool = 0
    with pytest.raises(TypeError, match=r"\[backends\.cpu\.sgemm\] expected a str, one of 'own', 'openblas', got"):
        cpu.sgemm = None
    assert cpu.gemm_pool is True


@pytest.mark.skipif(AVX512, reason="the own GEMM runs here: its refusal needs a CPU without AVX-512")
def test_own_sgemm_refused_without_avx512():
    with pytest.raises(ValueError, match=r"\[backends\.cpu\.sgemm\] the own float32 GEMM needs an AVX-512 CPU"):
        cpu.sgemm = "own"


def test_own_sgemm_refused_below_avx512_capability():
    code = (
        "import flambeau_core as fc\n"
        "print(fc.backends.cpu.sgemm)\n"
        "try:\n"
        "    fc.backends.cpu.sgemm = 'own'\n"
        "except ValueError as e:\n"
        "    print(e)\n"
    )
    r = subprocess.run(
        [sys.executable, "-c", code],
        env=_child_env(FLAMBEAU_CPU_CAPABILITY="avx2"),
        capture_output=True,
        text=True,
        check=True,
    )
    lines = r.stdout.splitlines()
    assert lines[0] == "openblas"
    assert "[backends.cpu.sgemm] the own float32 GEMM needs an AVX-512 CPU; this one runs 'avx2' kernels" in lines[1]


def test_flags_sets_for_a_block_and_restores():
    assert cpu.conv_row_blocks == "auto" and cpu.gemm_pool is True
    with cpu.flags(conv_row_blocks="off", gemm_pool=False):
        assert cpu.conv_row_blocks == "off" and cpu.gemm_pool is False
    assert cpu.conv_row_blocks == "auto" and cpu.gemm_pool is True
    with pytest.raises(KeyError), cpu.flags(parallel_for_schedule="static"):
        assert cpu.parallel_for_schedule == "static"
        raise KeyError("inside")
    assert cpu.parallel_for_schedule == "dynamic"
    with (
        pytest.raises(ValueError, match=r"\[backends\.cpu\.flags\] no setting named 'sgem'"),
        cpu.flags(sgemm="x", sgem=1),
    ):
        pass
    with pytest.raises(ValueError, match=r"\[backends\.cpu\.conv_row_blocks\] expected one of"):
        with cpu.flags(gemm_pool=False, conv_row_blocks="maybe"):
            pass
    assert cpu.gemm_pool is True and cpu.conv_row_blocks == "auto"


def test_the_settings_are_documented_attributes():
    for name in SETTINGS:
        doc = type(cpu).__dict__[name].__doc__
        assert SETTINGS[name][0] in doc and "Values:" in doc
    assert set(SETTINGS) <= set(dir(cpu))


# One child per override: the value it gives, read once when flambeau_core loads.
OVERRIDES = [
    ("FLAMBEAU_SGEMM", "openblas", "sgemm", "openblas"),
    ("FLAMBEAU_GEMM_POOL", "0", "gemm_pool", False),
    ("FLAMBEAU_PARALLEL_FOR", "static", "parallel_for_schedule", "static"),
    ("FLAMBEAU_PARALLEL_FOR", "affine", "parallel_for_schedule", "affine"),
    ("FLAMBEAU_CONV_ROWS", "off", "conv_row_blocks", "off"),
    ("FLAMBEAU_CONV_CLASSES", "off", "conv_pixel_classes", "off"),
    ("FLAMBEAU_CONV_DIRECT", "flat", "conv_direct_kernel", "flat"),
    ("FLAMBEAU_CONV_WGRAD", "cv", "conv_weight_grad_kernel", "cv"),
    ("FLAMBEAU_CONV_TRANSPOSED", "gemm", "conv_transposed_kernel", "gemm"),
    ("FLAMBEAU_CPU_CAPABILITY", "base", "max_cpu_capability", "base"),
    ("FLAMBEAU_BF16_AMX", "off", "bf16_amx", False),
]


@pytest.mark.parametrize(("env", "text", "name", "value"), OVERRIDES, ids=[o[0] for o in OVERRIDES])
def test_each_environment_override_is_read_at_import(env, text, name, value):
    code = (
        "import os, flambeau_core as fc\n"
        f"print(repr(fc.backends.cpu.{name}))\n"
        f"os.environ[{env!r}] = 'nonsense'  # read once: later changes do nothing\n"
        f"print(repr(fc.backends.cpu.{name}))\n"
        "print(fc.backends.cpu.get_cpu_capability())\n"
    )
    r = subprocess.run(
        [sys.executable, "-c", code], env=_child_env(**{env: text}), capture_output=True, text=True, check=True
    )
    lines = r.stdout.splitlines()
    assert lines[:2] == [repr(value), repr(value)]
    if name == "max_cpu_capability":
        assert lines[2] == "DEFAULT"  # base, in PyTorch's name
    assert r.stderr == ""


def test_flag_overrides_take_the_usual_spellings():
    code = "import flambeau_core as fc; print(fc.backends.cpu.gemm_pool)"
    for text, value in [("1", "True"), ("on", "True"), ("TRUE", "True"), ("off", "False"), ("false", "False")]:
        r = subprocess.run(
            [sys.executable, "-c", code], env=_child_env(FLAMBEAU_GEMM_POOL=text), capture_output=True, text=True
        )
        assert r.stdout.strip() == value, text


def test_an_unknown_override_warns_and_is_ignored():
    code = "import flambeau_core as fc; print(fc.backends.cpu.conv_direct_kernel, fc.backends.cpu.gemm_pool)"
    r = subprocess.run(
        [sys.executable, "-W", "always", "-c", code],
        env=_child_env(FLAMBEAU_CONV_DIRECT="fastest", FLAMBEAU_GEMM_POOL="maybe"),
        capture_output=True,
        text=True,
        check=True,
    )
    assert r.stdout.strip() == "auto True"
    assert (
        "RuntimeWarning: [backends.cpu] FLAMBEAU_CONV_DIRECT='fastest' is not one of 'auto', 'flat', 'cv'" in r.stderr
    )
    assert (
        "FLAMBEAU_GEMM_POOL='maybe' is not a flag (0/1, on/off, true/false) (backends.cpu.gemm_pool): ignored"
        in r.stderr
    )


def test_docs_list_every_setting_and_override():
    text = (ROOT / "docs" / "core.md").read_text()
    section = text[text.index("## Settings") :]
    section = section[: section.find("\n## ", 4)] if "\n## " in section[4:] else section
    for name, (env, _) in SETTINGS.items():
        assert f"`{name}`" in section, name
        assert f"`{env}`" in section, env


def test_no_getenv_in_core_sources_but_the_registry():
    src = ROOT / "packages" / "core" / "src"
    offenders = [
        str(p.relative_to(src))
        for p in src.rglob("*")
        if p.suffix in {".cpp", ".h", ".inc"} and p.name != "settings.cpp" and "getenv(" in p.read_text()
    ]
    assert offenders == []


# Note [CPU capabilities]: each kernel family's dispatch stub and the instruction sets it has a
# variant for (a capped CPU runs the widest one not above the cap; "none": no variant that narrow).
FAMILIES = {
    "vec_table_stub": ("base", "avx2", "avx512"),
    "act_table_stub": ("base", "avx2", "avx512"),
    "softmax_rows_stub": ("base", "avx2", "avx512"),
    "reduce_table_stub": ("base", "avx2", "avx512"),
    "norm_table_stub": ("base", "avx2", "avx512"),
    "half_convert_stub": ("base", "avx2", "avx512"),
    "foreach_table_stub": ("base", "avx2"),
    "rnn_kernels_stub": ("base", "avx2", "avx512"),
    "conv_loops_stub": ("base", "avx2"),
    "conv_direct_stub": ("avx512",),
    "conv_direct_avx2_stub": ("avx2",),  # the AVX2 direct convolution (conv.cpp runs conv_direct_stub's first)
    "own_sgemm_stub": ("avx512",),
    "packed_sgemm_stub": ("base", "avx2", "avx512"),  # the packed GEMM of the recurrent step (Note [Packed step GEMM])
    "bf16_tiles_stub": ("avx512",),  # the bfloat16 GEMM tiles (vdpbf16ps; AVX512-BF16 checked at the call)
    "bf16_pack_stub": ("avx512",),  # the bfloat16 GEMM's right-operand panels (16 x 16 word transposes)
    "bf16_amx_tiles_stub": ("avx512",),  # the bfloat16 GEMM tiles on AMX (AMX-BF16 checked at the call)
    "bf16_amx_tiles_t_stub": ("avx512",),  # its C^T form (a transposed right operand wider than the rows)
    "conv_bf16_stub": ("avx512",),  # the bfloat16 convolution kernels (likewise)
    "max_pool_2x2_stub": ("avx512",),  # 2x2 max pooling, float32 and bfloat16 (Note [2x2 max pooling])
}
ISAS = ["base", "avx2", "avx512"]
HARDWARE = {"DEFAULT": "base", "AVX2": "avx2", "AVX512": "avx512"}[cpu.get_cpu_capability()]


def _expected_choice(family_isas: tuple[str, ...], cap: str) -> str:
    limit = min(ISAS.index(cap), ISAS.index(HARDWARE))
    below = [isa for isa in family_isas if ISAS.index(isa) <= limit]
    return below[-1] if below else "none"


def test_every_family_has_a_stub():
    assert sorted(name for name, _ in fc._C._dispatch_choices()) == sorted(FAMILIES)


@pytest.mark.parametrize("cap", ISAS)
def test_the_capability_switches_every_family_at_run_time(cap):
    """Setting max_cpu_capability re-resolves every stub on its next call, and the kernels of the
    variant it picks compute what PyTorch does."""
    import torch

    torch.manual_seed(0)
    x = torch.randn(3, 70, dtype=torch.float32)
    img = torch.randn(2, 4, 9, 9)
    w = torch.randn(6, 4, 3, 3)
    fx, fimg, fw = (from_torch(t) for t in (x, img, w))
    with cpu.flags(max_cpu_capability=cap):
        assert cpu.max_cpu_capability == cap
        assert (
            cpu.get_cpu_capability()
            == {"base": "DEFAULT", "avx2": "AVX2", "avx512": "AVX512"}[ISAS[min(ISAS.index(cap), ISAS.index(HARDWARE))]]
        )
        results = {
            "relu": (fc.relu(fx), torch.relu(x)),
            "softmax": (fc.softmax(fx, 1), torch.softmax(x, 1)),
            "sum": (fc.sum(fx, [1]), x.sum(1)),
            "gelu": (fc.gelu(fx), torch.nn.functional.gelu(x)),
            "conv2d": (fc.conv2d(fimg, fw, None, [1, 1], [1, 1]), torch.nn.functional.conv2d(img, w, padding=1)),
            "sin_f16": (fc.sin(fx.to(fc.float16)).to(fc.float32), torch.sin(x.half()).float()),
        }
        choices = dict(fc._C._dispatch_choices())
    for name, isas in FAMILIES.items():
        assert choices[name] == _expected_choice(isas, cap), name
    for name, (got, want) in results.items():
        np.testing.assert_allclose(to_numpy(got), want.numpy(), rtol=2e-3, atol=2e-3, err_msg=name)
    # Back at the default: the widest variants again.
    assert dict(fc._C._dispatch_choices()) == {n: _expected_choice(i, "avx512") for n, i in FAMILIES.items()}


@pytest.mark.skipif(not AVX512, reason="the own GEMM needs an AVX-512 CPU")
def test_own_sgemm_waits_for_the_capability_at_run_time():
    with cpu.flags(sgemm="own", max_cpu_capability="avx2"):
        # Already chosen, it stays chosen but runs on OpenBLAS; choosing it now is refused.
        assert cpu.sgemm == "own" and dict(fc._C._dispatch_choices())["own_sgemm_stub"] == "none"
        with pytest.raises(ValueError, match=r"\[backends\.cpu\.sgemm\] the own float32 GEMM needs an AVX-512 CPU"):
            cpu.sgemm = "own"
        a = np.arange(64 * 96, dtype=np.float32).reshape(64, 96) / 1000
        b = np.arange(96 * 80, dtype=np.float32).reshape(96, 80) / 1000
        np.testing.assert_allclose(to_numpy(fc.matmul(fc.tensor(a), fc.tensor(b))), a @ b, rtol=1e-5)
    assert dict(fc._C._dispatch_choices())["own_sgemm_stub"] == "avx512"
