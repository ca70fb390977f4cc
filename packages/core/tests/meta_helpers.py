"""What the test_meta*.py files share: the op families with a Meta kernel (MIGRATED, which
test_meta.py holds to the registry) and the helpers that run an op on meta and on cpu tensors
and compare their outcomes (Note [Meta device], Note [Meta step] in flambeau/meta.h).

Imported as ``from meta_helpers import ...`` (as helpers.py)."""

from __future__ import annotations

import flambeau_core as fc
import numpy as np
import torch

DTYPES = ["bool", "uint8", "int32", "int64", "float32", "float64", "complex64"]
FC = {n: getattr(fc, n) for n in [*DTYPES, "float16"]}
TH = {n: getattr(torch, n) for n in [*DTYPES, "float16"]}

# The ops migrated to table rules, by family (their Meta kernels are generated).
# The float unary ops of the shared list come from it (Note [Elementwise math list]).
FLOAT_UNARY = "exp log tanh sigmoid sqrt".split() + fc._C._elementwise_math_ops()["float_unary"]
SAME_UNARY = "neg relu floor ceil trunc round frac sign abs".split()
BOOL_UNARY = "isnan isinf isfinite".split()
BINARY = "add sub mul div pow maximum minimum".split()
COMPARE = "eq ne lt le gt ge".split()
INPLACE = "add_ sub_ mul_ div_".split()
MATMUL = "mm bmm".split()
REDUCTIONS = "sum prod_dim_int cumsum cumprod max min max_dim min_dim argmax argmin amax amin".split()
# (and the binary ops of the shared list)
MATH_BINARY = (
    """bitwise_and bitwise_or bitwise_xor bitwise_left_shift bitwise_right_shift logical_and logical_or
    logical_xor""".split()
    + [name for name, _kind in fc._C._elementwise_math_ops()["binary"]]
)
MATH_UNARY = """logical_not signbit bitwise_not sgn conj_physical nan_to_num gelu silu mish hardswish hardsigmoid
    log_sigmoid softsign leaky_relu elu softplus hardtanh""".split()
POOLING = """max_pool2d_with_indices max_pool_backward avg_pool2d avg_pool2d_backward adaptive_avg_pool2d
    adaptive_avg_pool2d_backward adaptive_max_pool2d""".split()
# Their backwards, (name, extra arguments).
ACTIVATION_GRADS = {
    "threshold": (0.5,), "gelu": (), "silu": (), "mish": (), "leaky_relu": (0.1,), "elu": (1.0, 1.0, 1.0),
    "softplus": (1.0, 20.0), "hardtanh": (-1.0, 1.0), "hardswish": (), "hardsigmoid": (), "log_sigmoid": (),
    "softsign": (),
}  # fmt: skip
MIGRATED = (
    FLOAT_UNARY + SAME_UNARY + BOOL_UNARY + MATH_UNARY + BINARY + COMPARE + MATH_BINARY + INPLACE + MATMUL + REDUCTIONS
)
SORTING = "sort topk".split()
LOSSES = """mse_loss l1_loss smooth_l1_loss huber_loss binary_cross_entropy binary_cross_entropy_with_logits""".split()
MIGRATED += (
    POOLING
    + SORTING
    + ["linear", "native_layer_norm", "convolution", "convolution_backward_weight"]
    + LOSSES
    + [f"{n}_backward" for n in LOSSES]
    + ["_cross_entropy", "_cross_entropy_backward", "nll_loss_nd", "nll_loss_nd_backward"]
    + [f"{n}_backward" for n in ACTIVATION_GRADS]
    + ["clamp"]
)
MIGRATED += ["where"]
INDEXING = """cat gather index_select index_add index_copy index_fill scatter scatter_value scatter_add scatter_reduce
    embedding embedding_dense_backward""".split()
MIGRATED += INDEXING + ["index", "index_put_"]
NORMS = """native_batch_norm native_batch_norm_backward native_layer_norm_backward native_group_norm
    native_group_norm_backward""".split()
SOFTMAX = "_softmax _log_softmax _softmax_backward_data _log_softmax_backward_data".split()
MIGRATED += NORMS + SOFTMAX + ["var_correction", "mode", "div_mode"]
# im2col ... upsample_bilinear2d_backward: their meta steps are tested in test_structured_spatial.py
SPATIAL = """im2col col2im _pad_nd _pad_nd_backward upsample_nearest2d upsample_nearest2d_backward upsample_bilinear2d
    upsample_bilinear2d_backward""".split()
MIGRATED += SPATIAL
# the FFT primitives: their meta steps are tested in test_structured_fft.py
FFT = "_fft_c2c _fft_r2c _fft_c2r _stft_r2c".split()
MIGRATED += FFT
# the samplers (src/cpu/random/distributions.cpp): shapes and dtypes only, no draws on meta
SAMPLERS = {"_standard_gamma": 1, "_standard_gamma_grad": 2, "poisson": 1, "binomial": 2}
MIGRATED += list(SAMPLERS)
# flip ... _sort_values: their meta steps are tested in test_structured_shape_ops.py (_dot_small, which has no
# Python binding and runs on the CPU only, by its CPU check step there)
SHAPE_OPS = """flip tril triu masked_fill cummax cummin logcumsumexp angle complex frexp searchsorted _cdist_euclidean
    _sort_values _dot_small""".split()
MIGRATED += SHAPE_OPS
# the LAPACK primitives: their meta steps are tested in test_structured_linalg_decompositions.py
LINALG = """_linalg_inv _linalg_solve _linalg_slogdet _linalg_cholesky _linalg_qr _linalg_svd _linalg_eigh _linalg_eig
    _linalg_pinv _linalg_lu_factor_ex _linalg_lu_solve _lu_pivots_to_permutation _linalg_ldl_factor_ex
    _linalg_ldl_solve _geqrf _ormqr""".split()
MIGRATED += LINALG

# prelu ... _linear_backward: their meta steps are tested in test_structured_nn_ops.py
NN_LAYER_OPS = """prelu _prelu_backward_input _prelu_backward_weight glu glu_backward native_dropout _feature_dropout
    native_dropout_backward _embedding_bag _embedding_bag_backward _embedding_bag_per_sample_weights_backward
    _linear_backward""".split()
MIGRATED += NN_LAYER_OPS
# the recurrent layer primitives: their meta steps are tested in test_structured_rnn.py (_rnn_layer_backward, which
# has no Python binding, through autograd on meta tensors)
RNN = "_rnn_layer _rnn_layer_backward".split()
MIGRATED += RNN
# _linear_packed: its meta step (linear's) is tested in test_linear_packed.py
MIGRATED += ["_linear_packed"]
# _addcmul_fused: its meta step is tested in test_pointwise_composites.py
MIGRATED += ["_addcmul_fused"]


def cpu_tensor(shape: tuple[int, ...], dtype: str) -> fc.Tensor:
    rng = np.random.default_rng(len(shape) * 31 + (DTYPES.index(dtype) if dtype in DTYPES else len(DTYPES)))
    values = rng.integers(1, 4, size=shape)
    return fc.tensor(values.astype(np.float64), dtype=FC[dtype])


def outcome(fn, *args):
    """("ok", shape, dtype name, ...) with a shape and dtype per result, or ("error", exception type, message)."""
    try:
        r = fn(*args)
    except Exception as e:  # noqa: BLE001  (any error must be the same on both devices)
        return ("error", type(e).__name__, str(e))
    results = tuple(r) if isinstance(r, tuple) else (r,)
    return ("ok", *[None if t is None else (tuple(t.shape), str(t.dtype).rsplit(".", 1)[-1]) for t in results])


def torch_meta_outcome(fn, *tensors):
    """PyTorch's meta answer, where PyTorch's cpu runs the op too (its meta functions skip some dtype
    checks: pow of two bool tensors is int64 on meta and an error on the cpu); else None."""
    try:
        fn(*[torch.zeros(t.shape, dtype=t.dtype) for t in tensors])
        r = fn(*tensors)
    except Exception:  # noqa: BLE001
        return None
    results = tuple(r) if isinstance(r, tuple) else (r,)
    return ("ok", *[(tuple(t.shape), str(t.dtype).rsplit(".", 1)[-1]) for t in results])


def torch_fn(name: str):
    """The torch function of an op: torch.<name>, torch.special.<name without special_>, else
    torch.nn.functional.<name> (the activations)."""
    name = {"log_sigmoid": "logsigmoid"}.get(name, name)
    return (
        getattr(torch, name, None)
        or getattr(torch.special, name.removeprefix("special_"), None)
        or getattr(torch.nn.functional, name)
    )


def check_torch(fn, cpu, *tensors):
    theirs = torch_meta_outcome(fn, *tensors)
    assert theirs is None or cpu[0] != "ok" or theirs == cpu, (theirs, cpu)


def agree(meta, cpu) -> bool:
    """The meta step's outcome is the cpu's, errors word for word: the dtypes an op computes in are in the
    table too (Note [Dtype coverage]), so the meta device refuses what the cpu kernel has no loop for."""
    return meta == cpu


def meta_and_cpu(fn, *tensors):
    cpu = outcome(fn, *tensors)
    meta = outcome(fn, *[t.to("meta") if isinstance(t, fc.Tensor) else t for t in tensors])
    return meta, cpu
