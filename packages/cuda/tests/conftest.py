"""Shared fixtures of flambeau-cuda's tests: `gpu` skips a test with the reason "no CUDA GPU"."""

from __future__ import annotations

import flambeau_core as fc
import flambeau_cuda  # noqa: F401  (registers the backend)
import pytest

HAS_GPU = fc.cuda.device_count() > 0
requires_gpu = pytest.mark.skipif(not HAS_GPU, reason="no CUDA GPU")
requires_no_gpu = pytest.mark.skipif(HAS_GPU, reason="checks the behaviour without a GPU")
