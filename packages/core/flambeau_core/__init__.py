"""flambeau-core: tensors, dtypes, the dispatcher and CPU kernels.

Importing this package loads ``libflambeau_core.so`` (shared by every flambeau
package) and registers the ``Tensor`` type.

Example:
    >>> import flambeau_core as fc
    >>> fc.zeros(2, 3).shape
    flambeau.Size([2, 3])
"""

from __future__ import annotations

import os as _os

# Note [Thread pool waiting]: OpenMP workers that spin for long after a
# parallel region steal the CPU from other processes (measured here: 30x slower
# training when a second process shared the two cores). libgomp reads this
# once, when it loads, so it must be set before _C is imported.
_os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")


def _load_openblas() -> None:
    # libflambeau_core.so finds OpenBLAS through its RPATH; loading it here
    # first also covers layouts where the relative RPATH does not hold.
    import ctypes

    import scipy_openblas32

    lib = _os.path.join(scipy_openblas32.get_lib_dir(), "libscipy_openblas.so")
    if _os.path.exists(lib):
        ctypes.CDLL(lib, mode=ctypes.RTLD_GLOBAL)


_load_openblas()

from flambeau_core import _C  # noqa: E402,F401,I001
from flambeau_core._C import *  # noqa: E402,F401,F403
from flambeau_core._C import FlambeauError, Tensor, device, dtype  # noqa: E402,F401
from flambeau_core._C import _embedding_bag, _feature_dropout  # noqa: E402,F401  (PyTorch spells these with "_" too)
from flambeau_core._C import _sample_dirichlet, _standard_gamma, _standard_gamma_grad  # noqa: E402,F401,I001  (torch._standard_gamma ...)
from flambeau_core import _format  # noqa: E402,I001

from flambeau_core import _copying  # noqa: E402,I001
from flambeau_core._complex_attrs import adjoint  # noqa: E402,F401,I001  (mH/H/adjoint)
from flambeau_core._dtypes import (  # noqa: E402,F401,I001  (dtype aliases and helpers)
    can_cast,
    cdouble,
    cfloat,
    double,
    finfo,
    float,
    get_default_dtype,
    half,
    iinfo,
    int,
    is_complex,
    is_floating_point,
    long,
    set_default_dtype,
    short,
)
from flambeau_core import _shape  # noqa: E402,F401,I001  (meshgrid, broadcast_tensors, atleast_*: *args forms)
from flambeau_core import memory  # noqa: E402,F401  (the allocator registry; allocator_from_c_abi)
from flambeau_core._reduce import nonzero, unique, unique_consecutive  # noqa: E402,F401
from flambeau_core import _device_modules  # noqa: E402,I001
from flambeau_core._device_modules import device_module, get_device_module, manual_seed  # noqa: E402,F401  (manual_seed: cpu and devices)

_device_modules.install_tensor_methods()
cuda = device_module("cuda")  # torch.cuda's names; "not available" without flambeau-cuda

Tensor.__repr__ = _format.tensor_repr
Tensor.__str__ = _format.tensor_repr
_copying.install()  # pickle, copy.copy, copy.deepcopy

from flambeau_core import _comparison  # noqa: E402,I001

_comparison.install()  # isclose, allclose, equal (functions and Tensor methods)
from flambeau_core import _distance  # noqa: E402,I001

_distance.install()  # cdist
from flambeau_core import _tensor_new  # noqa: E402,I001

_tensor_new.install()  # Tensor.new_full, new_zeros, new_ones, new_empty, new_tensor
from flambeau_core import _sampling  # noqa: E402,I001

_sampling.install()  # multinomial
from flambeau_core import _complex_forms, _elementwise_forms, _random_fills  # noqa: E402,I001
from flambeau_core import _inplace_views, _shape_composites, _splits, _view_copy, _views  # noqa: E402,I001

_views.install()  # t, Tensor.unfold
_inplace_views.install()  # Tensor.t_, transpose_, squeeze_, unsqueeze_, as_strided_, resize_as_, ...
_view_copy.install()  # the *_copy and *_scatter functions
_splits.install()  # split_with_sizes, unsafe_split/_chunk, hsplit/vsplit/dsplit
_shape_composites.install()  # Tensor.sum_to_size, diagflat, constant_pad_nd
_elementwise_forms.install()  # positive, fill, isposinf/isneginf, scalar_tensor, Tensor.__rtruediv__/__rdiv__
_complex_forms.install()  # isreal, vdot, resolve_conj/_neg, Tensor.cfloat/cdouble/chalf
_random_fills.install()  # Tensor.exponential_/geometric_/cauchy_/log_normal_, randint_like
from flambeau_core import _spectral  # noqa: E402,I001

_spectral.install()  # stft, istft
from flambeau_core import _gradient  # noqa: E402,I001

_gradient.install()  # gradient
from flambeau_core import _histogram  # noqa: E402,I001

_histogram.install()  # histogram, histogramdd
from flambeau_core import _renorm  # noqa: E402,I001

_renorm.install()  # renorm, Tensor.renorm(_)
from flambeau_core import _hashing  # noqa: E402,I001

_hashing.install()  # hash_tensor, Tensor.hash_tensor
from flambeau_core import _index_reduce  # noqa: E402,I001

_index_reduce.install()  # index_reduce, Tensor.index_reduce(_)
from flambeau_core import _empty_permuted, _nonzero_static  # noqa: E402,I001

_empty_permuted.install()  # empty_permuted
_nonzero_static.install()  # nonzero_static
from flambeau_core import _lowrank  # noqa: E402,I001

_lowrank.install()  # svd_lowrank, pca_lowrank
from flambeau_core import _igamma  # noqa: E402,I001

_igamma.install()  # igamma, igammac (special.gammainc/gammaincc below)

from flambeau_core import _protocols  # noqa: E402,I001

_protocols.install()  # format(t, spec), iter(t), x in t
from flambeau_core import _tensor_queries  # noqa: E402,I001

_tensor_queries.install()  # numel, is_nonzero, typename, ...; Tensor.nelement, nbytes, get_device, dim_order
from flambeau_core import _storage  # noqa: E402,I001

_storage.install()  # storages, is_storage, is_inference; Tensor.untyped_storage, storage, storage_type, is_set_to
from flambeau_core import _fill_diagonal, _legacy_resize, _python_elementwise  # noqa: E402,I001

_fill_diagonal.install()  # Tensor.fill_diagonal_
_legacy_resize.install()  # Tensor.resize, resize_as (deprecated, out of place)
_python_elementwise.install()  # Tensor.apply_, map_, map2_
from flambeau_core import _inplace_functions  # noqa: E402,I001

_inplace_functions.install()  # abs_, sqrt_, clamp_, ...: torch's functions of the in-place methods
from flambeau_core._process_settings import (  # noqa: E402,F401,I001  (recorded, reported: the module's note)
    get_float32_matmul_precision,
    get_num_interop_threads,
    init_num_threads,
    is_warn_always_enabled,
    set_float32_matmul_precision,
    set_flush_denormal,
    set_num_interop_threads,
    set_warn_always,
)

from flambeau_core import _legacy_types  # noqa: E402,I001

_legacy_types.install()  # Tensor.type()
globals().update(_legacy_types.LEGACY_TYPES)  # FloatTensor, LongTensor, ...
from flambeau_core._size import Size  # noqa: E402,F401,I001
from flambeau_core._format import get_printoptions, printoptions, set_printoptions  # noqa: E402,F401,I001
from flambeau_core._determinism import (  # noqa: E402,F401,I001
    are_deterministic_algorithms_enabled,
    get_deterministic_debug_mode,
    is_deterministic_algorithms_warn_only_enabled,
    set_deterministic_debug_mode,
    use_deterministic_algorithms,
)
from flambeau_core import accelerator, backends, overrides, random  # noqa: E402,F401,I001
from flambeau_core.random import get_rng_state, initial_seed, seed, set_rng_state  # noqa: E402,F401,I001

from flambeau_core import array_api  # noqa: E402,I001  (the Python Array API namespace)

array_api._install_tensor_methods()
from flambeau_core import _asarray  # noqa: E402,I001

_asarray.install()  # torch.asarray (array_api.asarray with requires_grad)
from flambeau_core import _legacy_norms  # noqa: E402,I001

_legacy_norms.install()  # nuclear_norm, frobenius_norm (deprecated), matrix_rank (removed: raises)
from flambeau_core import _range  # noqa: E402,I001

_range.install()  # torch.range (deprecated: arange including end)
# The standard's names that PyTorch lacks; where both have a name, flambeau's
# keeps PyTorch's meaning (flambeau.array_api follows the standard). `concat` is
# PyTorch's too (torch.concat(tensors, dim)): the op of ops.yaml, not re-exported here.
from flambeau_core.array_api import (  # noqa: E402,F401,I001
    astype,
    bitwise_invert,
    cumulative_prod,
    cumulative_sum,
    expand_dims,
    isdtype,
    matrix_transpose,
    permute_dims,
    take_along_axis,
    unique_all,
    unique_counts,
    unique_inverse,
    unique_values,
    unstack,
)

from flambeau_core import amp, cpu  # noqa: E402,F401,I001  (mixed precision; torch.cpu.amp's spellings)
from flambeau_core.amp import GradScaler  # noqa: E402,F401,I001  (torch.GradScaler is torch.amp's)
from flambeau_core.amp.autocast_mode import (  # noqa: E402,F401,I001  (torch.autocast and its state, top level)
    autocast,
    autocast_decrement_nesting,
    autocast_increment_nesting,
    clear_autocast_cache,
    get_autocast_cpu_dtype,
    get_autocast_dtype,
    is_autocast_cache_enabled,
    is_autocast_cpu_enabled,
    is_autocast_enabled,
    set_autocast_cache_enabled,
    set_autocast_cpu_dtype,
    set_autocast_cpu_enabled,
    set_autocast_dtype,
    set_autocast_enabled,
)

from flambeau_core import linalg  # noqa: E402,I001  (flambeau.linalg; its torch.* spellings below)
from flambeau_core import special  # noqa: E402,F401,I001  (flambeau.special: torch.special)
from flambeau_core import fft  # noqa: E402,F401,I001  (flambeau.fft)
from flambeau_core import masked, signal  # noqa: E402,F401,I001  (torch.masked's functions, torch.signal.windows)
from flambeau_core._window_functions import *  # noqa: E402,F401,F403,I001  (torch.hann_window, ...)

globals().update(linalg.TOP_LEVEL)
for _name in linalg.METHODS:
    setattr(Tensor, _name, linalg.TOP_LEVEL[_name])
del _name

from importlib.metadata import PackageNotFoundError as _PNF, version as _version  # noqa: E402,I001

try:
    __version__ = _version("flambeau-core")
except _PNF:  # running from a source tree
    __version__ = "0+unknown"


def get_cmake_dir() -> str:
    """Folder of core's CMake package config (for ``find_package(flambeau_core)``).

    Searches the package's ``__path__`` rather than ``__file__`` so that it
    also works for an editable install.

    Example:
        >>> import os
        >>> import flambeau as fb
        >>> os.path.isdir(fb.get_cmake_dir())
        True
    """
    for base in __path__:  # noqa: F405 (the package path, not a star import)
        candidate = _os.path.join(base, "cmake")
        if _os.path.exists(_os.path.join(candidate, "flambeau_coreConfig.cmake")):
            return candidate
    raise FileNotFoundError("flambeau_core's CMake config is not installed (flambeau_core/cmake)")


def get_include_dir() -> str:
    """Folder of core's public C++ headers (for an extension's include path).

    Example:
        >>> import os
        >>> import flambeau as fb
        >>> os.path.isdir(os.path.join(fb.get_include_dir(), "flambeau"))
        True
    """
    for base in __path__:  # noqa: F405 (the package path, not a star import)
        candidate = _os.path.join(base, "include")
        if _os.path.isdir(candidate):
            return candidate
    raise FileNotFoundError("flambeau_core's headers are not installed (flambeau_core/include)")
