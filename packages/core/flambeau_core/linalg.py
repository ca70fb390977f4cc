"""flambeau.linalg: linear algebra with PyTorch's names and semantics.

The factorizations run LAPACK (scipy-openblas32) through the primitives
``_linalg_inv``, ``_linalg_solve``, ``_linalg_slogdet``, ``_linalg_cholesky``,
``_linalg_qr``, ``_linalg_svd``, ``_linalg_eigh`` and ``_linalg_lstsq`` of core's
op table (src/cpu/linalg/lapack.cpp), which carry their own derivatives; everything
here is a composite of ops, so autograd differentiates it through the ops it
calls. Every function takes batches ``(*, m, n)`` of float32 or float64
matrices, and complex64/complex128 ones (inv, solve, det, slogdet,
logdet, cholesky, qr, svd, svdvals, eigh, eigvalsh, eig, eigvals, lstsq, pinv,
matrix_rank and the norms).

Example:
    >>> import flambeau_core as fc
    >>> A = fc.tensor([[4.0, 1.0], [1.0, 3.0]])
    >>> round(fc.linalg.det(A).item(), 4)
    11.0
"""

from __future__ import annotations

import types as _types

# The functions live in modules of one concept each; this module is their public namespace. The named
# tuples they return are imported `as` themselves: names of this module too, though not in __all__.
from flambeau_core import (
    _linalg_decompositions,
    _linalg_lu,
    _linalg_matrix_functions,
    _linalg_products,
    _linalg_solvers,
    _linalg_triangular,
)
from flambeau_core._linalg_decompositions import EighResult as EighResult
from flambeau_core._linalg_decompositions import EigResult as EigResult
from flambeau_core._linalg_decompositions import QRResult as QRResult
from flambeau_core._linalg_decompositions import QRTop as QRTop
from flambeau_core._linalg_decompositions import SlogdetResult as SlogdetResult
from flambeau_core._linalg_decompositions import SlogdetTop as SlogdetTop
from flambeau_core._linalg_decompositions import SVDResult as SVDResult
from flambeau_core._linalg_decompositions import SvdResultV as SvdResultV
from flambeau_core._linalg_decompositions import (
    _top_cholesky,
    _top_det,
    _top_pinverse,
    _top_qr,
    _top_slogdet,
    _top_svd,
    cholesky,
    det,
    eig,
    eigh,
    eigvals,
    eigvalsh,
    householder_product,
    logdet,
    matrix_rank,
    pinv,
    qr,
    slogdet,
    svd,
    svdvals,
)
from flambeau_core._linalg_errors import LinAlgError as LinAlgError
from flambeau_core._linalg_errors import raising_linalg_errors
from flambeau_core._linalg_lu import ldl_factor, ldl_factor_ex, ldl_solve, lu, lu_factor, lu_factor_ex, lu_solve  # noqa: F401
from flambeau_core._linalg_matrix_functions import (
    _top_matrix_exp,
    _top_matrix_power,
    cond,
    diagonal,
    matrix_exp,
    matrix_norm,
    matrix_power,
    norm,
    vander,
    vector_norm,
)
from flambeau_core._linalg_products import (
    _top_chain_matmul,
    _top_cross,
    _top_dot,
    _top_ger,
    _top_inner,
    _top_mv,
    cross,
    einsum,
    matmul,
    multi_dot,
    outer,
    tensordot,
    vecdot,
)
from flambeau_core._linalg_solvers import CholeskyExResult as CholeskyExResult
from flambeau_core._linalg_solvers import InvExResult as InvExResult
from flambeau_core._linalg_solvers import LstsqResult as LstsqResult
from flambeau_core._linalg_solvers import SolveExResult as SolveExResult
from flambeau_core._linalg_solvers import (
    _top_inverse,
    cholesky_ex,
    inv,
    inv_ex,
    lstsq,
    solve,
    solve_ex,
    tensorinv,
    tensorsolve,
)
from flambeau_core._linalg_triangular import TriangularSolveResult as TriangularSolveResult
from flambeau_core._linalg_triangular import (
    _top_cholesky_inverse,
    _top_cholesky_solve,
    _top_triangular_solve,
    solve_triangular,
)
from flambeau_core.amp.custom_functions import autocast_float32

__all__ = [
    "matmul",
    "tensordot",
    "vecdot",
    "outer",
    "einsum",
    "norm",
    "vector_norm",
    "matrix_norm",
    "det",
    "slogdet",
    "inv",
    "solve",
    "lstsq",
    "cholesky",
    "qr",
    "svd",
    "svdvals",
    "eigh",
    "eigvalsh",
    "eig",
    "eigvals",
    "pinv",
    "matrix_rank",
    "matrix_power",
    "cross",
    "multi_dot",
    "solve_triangular",
    "cholesky_ex",
    "inv_ex",
    "solve_ex",
    "matrix_exp",
    "cond",
    "vander",
    "diagonal",
    "tensorinv",
    "tensorsolve",
    "householder_product",
]

# The functions and named tuples carry this module's name, as they did when they were written here.
for _module in (
    _linalg_products,
    _linalg_decompositions,
    _linalg_solvers,
    _linalg_triangular,
    _linalg_matrix_functions,
):
    for _name, _obj in vars(_module).items():
        if not _name.startswith("_") and getattr(_obj, "__module__", None) == _module.__name__:
            _obj.__module__ = __name__
del _module, _name, _obj

# name at flambeau's top level -> function (flambeau_core/__init__.py binds these, and the Tensor methods).
TOP_LEVEL = {
    "det": _top_det,
    "logdet": logdet,
    "slogdet": _top_slogdet,
    "inverse": _top_inverse,
    "cholesky": _top_cholesky,
    "qr": _top_qr,
    "svd": _top_svd,
    "pinverse": _top_pinverse,
    "matrix_power": _top_matrix_power,
    "cross": _top_cross,
    "outer": outer,
    "ger": _top_ger,
    "dot": _top_dot,
    "inner": _top_inner,
    "mv": _top_mv,
    "einsum": einsum,
    "tensordot": tensordot,
    "chain_matmul": _top_chain_matmul,
    "triangular_solve": _top_triangular_solve,
    "cholesky_solve": _top_cholesky_solve,
    "cholesky_inverse": _top_cholesky_inverse,
    "matrix_exp": _top_matrix_exp,
}
# Tensor methods PyTorch has for them (x.det(), x.inverse(), ...).
METHODS = (
    "det logdet slogdet inverse cholesky qr svd pinverse matrix_power cross outer ger dot inner mv "
    "triangular_solve cholesky_solve cholesky_inverse matrix_exp"
).split()
for _name, _fn in TOP_LEVEL.items():
    if _fn.__name__.startswith("_top_"):
        _fn.__name__ = _fn.__qualname__ = _name
        _fn.__module__ = "flambeau"
del _name, _fn

# The LU, LDL and Householder-QR family (_linalg_lu) names its own.
__all__ += _linalg_lu.LINALG_ALL
TOP_LEVEL.update(_linalg_lu.TOP_LEVEL)
METHODS += _linalg_lu.METHODS

# A failure on the input's values (singular, not positive-definite, no convergence) raises LinAlgError,
# from every public function that factors or solves, and its top-level spelling (_linalg_errors.py);
# the products (einsum, outer, ...) never fail so and stay as they are.
__all__.append("LinAlgError")
_products = {id(_fn) for _fn in vars(_linalg_products).values()}


def _with_linalg_errors(fn):
    if isinstance(fn, _types.FunctionType) and id(fn) not in _products:
        return raising_linalg_errors(fn)
    return fn


for _name in __all__:
    globals()[_name] = _with_linalg_errors(globals()[_name])
TOP_LEVEL = {_name: _with_linalg_errors(_fn) for _name, _fn in TOP_LEVEL.items()}
del _name

# PyTorch's CPU autocast float32 list (Note [Autocast]'s fp32): inside a region these factor and solve in
# float32, a bfloat16 input (a lowered product's) cast up and their own products not lowered.
_FLOAT32 = (
    "cond matrix_rank solve cholesky svdvals eigvals eigvalsh inv householder_product tensorinv tensorsolve qr "
    "cholesky_ex svd eig eigh lstsq inv_ex"
).split()
_TOP_FLOAT32 = "cholesky cholesky_inverse cholesky_solve inverse lu_solve ormqr geqrf pinverse qr svd triangular_solve"
for _name in _FLOAT32:
    globals()[_name] = autocast_float32(globals()[_name])
TOP_LEVEL.update({_name: autocast_float32(TOP_LEVEL[_name]) for _name in _TOP_FLOAT32.split()})
del _name
