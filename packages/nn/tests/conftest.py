"""Every nn test starts from the same seeds (flambeau's and PyTorch's generators)."""

import os

# PyTorch, the oracle, computes its float64 BLAS calls (dot, gemv) with MKL, whose summation order follows
# the CPU it dispatches for (AVX-512 kernels on Intel, a generic path elsewhere); L-BFGS on Rosenbrock,
# compared with torch's step for step, is chaotic enough to turn one such ulp into 1e-7 in a few steps.
# MKL's reproducible mode gives the oracle the same bits on every host. Set before torch loads MKL.
os.environ.setdefault("MKL_CBWR", "COMPATIBLE")

import flambeau_core as fc  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402


@pytest.fixture(autouse=True)
def _seed():
    fc.manual_seed(0)
    torch.manual_seed(0)
