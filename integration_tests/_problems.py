"""Small synthetic classification problems shared by the integration tests."""

from __future__ import annotations

import numpy as np


def blobs(n: int = 600, classes: int = 3, features: int = 8, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Gaussian blobs: float32 features (n, features), int64 labels (n,); separable with a small MLP."""
    rng = np.random.default_rng(seed)
    centers = rng.normal(scale=4.0, size=(classes, features))
    y = rng.integers(0, classes, size=n)
    x = centers[y] + rng.normal(size=(n, features))
    return x.astype(np.float32), y.astype(np.int64)
