# The hand-bound part of flambeau_core._C's stubs (from pybind11-stubgen, then edited);
# codegen/gen_core.py adds every op of ops.yaml at the markers and installs _C.pyi.
"""
flambeau-core's compiled bindings (use the flambeau_core package instead)
"""

from __future__ import annotations
import numpy
import typing
from numbers import Number as _Number  # noqa: F401
from typing import Any, Sequence as _Sequence, overload  # noqa: F401

_Size = int | _Sequence[int]
_DType = Any
_Device = Any
_Layout = Any
__all__: list[str] = [
    "AcceleratorError",
    "Allocator",
    "FlambeauError",
    "Generator",
    "IndexOutOfBoundsError",
    "OutOfMemoryError",
    "Size",
    "Tensor",
    "abs",
    "add",
    "all",
    "allocator_from_c_abi",
    "any",
    "arange",
    "argmax",
    "as_strided",
    "as_tensor",
    "bfloat16",
    "bmm",
    "bool",
    "broadcast_shapes",
    "cat",
    "channels_last",
    "channels_last_3d",
    "clone",
    "contiguous_format",
    "default_num_threads",
    "device",
    "div",
    "dtype",
    "empty",
    "empty_like",
    "eq",
    "exp",
    "flatten",
    "float16",
    "float32",
    "float64",
    "frombuffer",
    "full",
    "full_like",
    "gather",
    "ge",
    "get_allocator",
    "get_default_device",
    "get_num_threads",
    "gt",
    "index_put",
    "index_put_",
    "initial_seed",
    "int16",
    "int32",
    "int64",
    "int8",
    "is_grad_enabled",
    "le",
    "log",
    "log_softmax",
    "lt",
    "manual_seed",
    "matmul",
    "max",
    "maximum",
    "mean",
    "memory_format",
    "minimum",
    "mm",
    "mul",
    "narrow",
    "ne",
    "neg",
    "ones",
    "ones_like",
    "permute",
    "pow",
    "preserve_format",
    "promote_types",
    "rand",
    "rand_like",
    "randn",
    "randn_like",
    "relu",
    "reshape",
    "result_type",
    "scatter_add",
    "select",
    "set_allocator",
    "set_default_device",
    "set_num_threads",
    "sigmoid",
    "softmax",
    "sqrt",
    "squeeze",
    "stack",
    "sub",
    "sum",
    "system_allocator",
    "tanh",
    "tensor",
    "transpose",
    "uint8",
    "unbind",
    "unsqueeze",
    "where",
    "zeros",
    "zeros_like",
]

class FlambeauError(RuntimeError, ValueError):
    """
    A shape or value error; derives from both RuntimeError (as PyTorch raises) and ValueError.
    """

class IndexOutOfBoundsError(IndexError, RuntimeError):
    """
    An index value out of range where PyTorch raises RuntimeError (gather, scatter, index_select, index_add).
    """

class OutOfMemoryError(RuntimeError):
    """
    An allocator could not provide the memory an op asked for (torch.OutOfMemoryError).
    """

class AcceleratorError(RuntimeError):
    """
    A device runtime call failed while executing on a device (torch.AcceleratorError).
    """

class dtype:
    """
    The data type of a tensor's elements (flambeau_core.float32, ...).

    Members:

      bool

      uint8

      int8

      int16

      int32

      int64

      float16

      bfloat16

      float32

      float64
    """

    __members__: typing.ClassVar[dict[str, dtype]]
    bfloat16: typing.ClassVar[dtype]
    bool: typing.ClassVar[dtype]
    float16: typing.ClassVar[dtype]
    float32: typing.ClassVar[dtype]
    float64: typing.ClassVar[dtype]
    int16: typing.ClassVar[dtype]
    int32: typing.ClassVar[dtype]
    int64: typing.ClassVar[dtype]
    int8: typing.ClassVar[dtype]
    uint8: typing.ClassVar[dtype]
    @typing.overload
    def __eq__(self: numpy.dtype[typing.Any], other: numpy.dtype[typing.Any]) -> bool: ...
    @typing.overload
    def __eq__(self: numpy.dtype[typing.Any], other: typing.Any) -> bool: ...
    def __getstate__(self) -> int: ...
    def __hash__(self) -> int: ...
    def __index__(self: numpy.dtype[typing.Any]) -> int: ...
    def __init__(self: numpy.dtype[typing.Any], value: typing.SupportsInt | typing.SupportsIndex) -> None: ...
    def __int__(self: numpy.dtype[typing.Any]) -> int: ...
    @typing.overload
    def __ne__(self: numpy.dtype[typing.Any], other: numpy.dtype[typing.Any]) -> bool: ...
    @typing.overload
    def __ne__(self: numpy.dtype[typing.Any], other: typing.Any) -> bool: ...
    def __reduce__(self: numpy.dtype[typing.Any]) -> str: ...
    @typing.overload
    def __repr__(self) -> str: ...
    @typing.overload
    def __repr__(self: numpy.dtype[typing.Any]) -> str: ...
    def __setstate__(self: numpy.dtype[typing.Any], state: typing.SupportsInt | typing.SupportsIndex) -> None: ...
    @typing.overload
    def __str__(self: numpy.dtype[typing.Any]) -> str: ...
    @typing.overload
    def __str__(self) -> str: ...
    @property
    def is_floating_point(self) -> bool: ...
    @property
    def itemsize(self) -> int: ...
    @property
    def name(self) -> str: ...
    @property
    def value(self) -> int: ...

class memory_format:
    """How a dense tensor's elements are ordered in memory (flambeau_core.channels_last, ...)."""

    __members__: typing.ClassVar[dict[str, memory_format]]
    channels_last: typing.ClassVar[memory_format]
    channels_last_3d: typing.ClassVar[memory_format]
    contiguous_format: typing.ClassVar[memory_format]
    preserve_format: typing.ClassVar[memory_format]
    def __hash__(self) -> int: ...
    def __int__(self) -> int: ...
    def __reduce__(self) -> str: ...
    @property
    def name(self) -> str: ...
    @property
    def value(self) -> int: ...

class device:
    """
    A device: flambeau_core.device('cpu').
    """
    def __enter__(self) -> device: ...
    def __eq__(self, arg0: typing.Any) -> bool: ...
    def __exit__(self, *args: typing.Any) -> bool: ...
    def __hash__(self) -> int: ...
    @typing.overload
    def __init__(self, type: str) -> None: ...
    @typing.overload
    def __init__(self, type: str, index: typing.SupportsInt | typing.SupportsIndex) -> None: ...
    def __reduce__(self) -> tuple[..., tuple[str]]: ...
    def __repr__(self) -> str: ...
    def __str__(self) -> str: ...
    @property
    def index(self) -> typing.Any: ...
    @property
    def type(self) -> str: ...

class Size(tuple[int, ...]):
    """
    A tensor's sizes (PyTorch's torch.Size): a tuple of ints with numel().
    """

    def __new__(cls, sizes: typing.Iterable[typing.SupportsIndex] = ()) -> Size: ...
    def numel(self) -> int: ...
    @typing.overload
    def __getitem__(self, index: typing.SupportsIndex) -> int: ...
    @typing.overload
    def __getitem__(self, index: slice) -> Size: ...
    def __add__(self, other: tuple[int, ...]) -> Size: ...  # type: ignore[override]
    def __radd__(self, other: tuple[int, ...]) -> Size: ...
    def __mul__(self, n: typing.SupportsIndex) -> Size: ...
    def __rmul__(self, n: typing.SupportsIndex) -> Size: ...

class Tensor:
    """
    A multi-dimensional array of one dtype on one device.
    """

    __array_priority__: typing.ClassVar[int] = 1000
    requires_grad: bool
    @staticmethod
    def __repr__(t: typing.Any) -> str:
        """
        ``repr(t)``: the values in PyTorch's layout plus dtype/device/grad suffixes.

            >>> import flambeau_core as fc
            >>> fc.tensor([1, 2, 3])
            tensor([1, 2, 3])

        """
    @staticmethod
    def __str__(t: typing.Any) -> str:
        """
        ``repr(t)``: the values in PyTorch's layout plus dtype/device/grad suffixes.

            >>> import flambeau_core as fc
            >>> fc.tensor([1, 2, 3])
            tensor([1, 2, 3])

        """
    def __bool__(self) -> bool: ...
    def __deepcopy__(self, memo: dict[int, typing.Any]) -> _C.Tensor: ...
    def __float__(self) -> float: ...
    def __getitem__(self, arg0: typing.Any) -> Tensor:
        """
        Basic indexing (ints, slices with step > 0, None, ...) returns a view; advanced indexing (integer or bool tensors, lists, ranges, arrays or other sequences) returns a copy, as in PyTorch.
        """
    def __hash__(self):
        """
        Return hash(self).
        """
    def __index__(self) -> int: ...
    def __init__(self, data: Tensor) -> None: ...
    def _set_data(self, data: Tensor) -> None:
        """Re-points this tensor at data's memory, dtype and shape, keeping this object (Module.to)."""
    def __int__(self) -> int: ...
    def __len__(self) -> int: ...
    def __pos__(self) -> Tensor: ...
    def __reduce_ex__(self, protocol: int) -> tuple[typing.Any, ...]: ...
    def __rtruediv__(self, other: typing.Any) -> Tensor: ...
    def __setitem__(self, arg0: typing.Any, arg1: typing.Any) -> None: ...
    def as_strided(self, size: typing.Any, stride: typing.Any, storage_offset: typing.Any = None) -> Tensor:
        """
        A view with explicit sizes, strides (in elements) and storage offset; ValueError if it would reach outside the storage.
        """
    def bool(self, *, memory_format: memory_format = ...) -> Tensor: ...
    def data_ptr(self) -> int: ...
    def dim(self) -> int: ...
    def double(self, *, memory_format: memory_format = ...) -> Tensor: ...
    def element_size(self) -> int: ...
    def expand(self, *args) -> Tensor:
        """
        A broadcast view (stride 0) to a larger shape; -1 keeps a size.

        >>> flambeau_core.zeros(3, 1).expand(2, 3, 4).shape
        flambeau.Size([2, 3, 4])
        """
    def expand_as(self, other: Tensor) -> Tensor: ...
    def fill_(self, value: typing.Any) -> Tensor: ...
    def flatten(
        self,
        start_dim: typing.SupportsInt | typing.SupportsIndex = 0,
        end_dim: typing.SupportsInt | typing.SupportsIndex = -1,
    ) -> Tensor:
        """
        Merges dims start_dim..end_dim into one (a view when possible).

        >>> flambeau_core.zeros(2, 3, 4).flatten(1).shape
        flambeau.Size([2, 12])
        """
    def float(self, *, memory_format: memory_format = ...) -> Tensor: ...
    def int(self, *, memory_format: memory_format = ...) -> Tensor: ...
    def is_contiguous(self, memory_format: memory_format = ...) -> bool: ...
    def is_floating_point(self) -> bool: ...
    def item(self) -> typing.Any: ...
    def long(self, *, memory_format: memory_format = ...) -> Tensor: ...
    def narrow(
        self,
        dim: typing.SupportsInt | typing.SupportsIndex,
        start: typing.SupportsInt | typing.SupportsIndex,
        length: typing.SupportsInt | typing.SupportsIndex,
    ) -> Tensor:
        """
        The view t[..., start:start+length, ...] along dim.
        """
    def normal_(
        self,
        mean: typing.SupportsFloat | typing.SupportsIndex = 0.0,
        std: typing.SupportsFloat | typing.SupportsIndex = 1.0,
        *,
        generator: typing.Any = None,
    ) -> Tensor:
        """
        Fills self with normal samples.
        """
    def numel(self) -> int: ...
    def permute(self, *args) -> Tensor:
        """
        A view with the dims reordered.

        >>> flambeau_core.zeros(2, 3, 4).permute(2, 0, 1).shape
        flambeau.Size([4, 2, 3])
        """
    def requires_grad_(self, requires_grad: bool = True) -> Tensor: ...
    def reshape(self, *args) -> Tensor:
        """
        Like view, but copies when the memory layout requires it.
        """
    def select(
        self, dim: typing.SupportsInt | typing.SupportsIndex, index: typing.SupportsInt | typing.SupportsIndex
    ) -> Tensor:
        """
        The view at `index` along dim (that dim removed).
        """
    def size(self, dim: typing.Any = None) -> typing.Any: ...
    def squeeze(self, dim: typing.Any = None) -> Tensor:
        """
        A view without size-1 dims (all, or the given dim(s); a dim of another size is kept).

        >>> flambeau_core.zeros(1, 3, 1).squeeze().shape
        flambeau.Size([3])
        """
    def is_inference(self) -> bool: ...
    def storage_offset(self) -> int: ...
    def stride(self, dim: typing.Any = None) -> typing.Any: ...
    def t(self) -> Tensor: ...
    def to(self, *args, **kwargs) -> Tensor: ...
    def tolist(self) -> typing.Any: ...
    def transpose(
        self, dim0: typing.SupportsInt | typing.SupportsIndex, dim1: typing.SupportsInt | typing.SupportsIndex
    ) -> Tensor:
        """
        A view with dims dim0 and dim1 swapped.

        >>> flambeau_core.zeros(2, 3).transpose(0, 1).shape
        flambeau.Size([3, 2])
        """
    def type_as(self, other: Tensor) -> Tensor: ...
    def half(self, *, memory_format: memory_format = ...) -> Tensor: ...
    def index_put_(
        self, indices: _Sequence[Tensor | None], values: Tensor, accumulate: bool = False
    ) -> Tensor:
        """
        self[indices] = values with indices a tuple of index tensors (or None for a whole dim).
        """
    def index_put(
        self, indices: _Sequence[Tensor | None], values: Tensor, accumulate: bool = False
    ) -> Tensor:
        """
        The out-of-place index_put_: a copy of self with values put at indices.
        """
    def bfloat16(self, *, memory_format: memory_format = ...) -> Tensor: ...
    def short(self, *, memory_format: memory_format = ...) -> Tensor: ...
    def char(self, *, memory_format: memory_format = ...) -> Tensor: ...
    def byte(self, *, memory_format: memory_format = ...) -> Tensor: ...
    def unbind(self, dim: typing.SupportsInt | typing.SupportsIndex = 0) -> tuple:
        """
        A tuple of the views select(dim, i) for every i.
        """
    def uniform_(
        self,
        a: typing.SupportsFloat | typing.SupportsIndex = 0.0,
        b: typing.SupportsFloat | typing.SupportsIndex = 1.0,
        *,
        generator: typing.Any = None,
    ) -> Tensor:
        """
        Fills self with uniform samples on [a, b).
        """
    def unsqueeze(self, dim: typing.SupportsInt | typing.SupportsIndex) -> Tensor:
        """
        A view with a size-1 dim inserted at dim.

        >>> flambeau_core.zeros(3).unsqueeze(0).shape
        flambeau.Size([1, 3])
        """
    def view(self, *args) -> Tensor:
        """
        A view with another shape (one size may be -1); shares memory. ValueError if the strides do not allow it (use reshape).
        """
    @property
    def T(self) -> Tensor: ...
    @property
    def _allocator(self) -> typing.Any:
        """
        Name of the allocator that made this tensor's memory (None for external memory).
        """
    @property
    def _is_view(self) -> bool: ...
    @property
    def _version(self) -> int: ...
    @property
    def device(self) -> device: ...
    @property
    def dtype(self) -> numpy.dtype[typing.Any]: ...
    @property
    def is_cpu(self) -> bool: ...
    @property
    def is_meta(self) -> bool: ...
    @property
    def mT(self) -> Tensor: ...
    @property
    def ndim(self) -> int: ...
    @property
    def shape(self) -> Size: ...
    # @generated-tensor-methods

class Allocator:
    """
    A memory allocator registered in core (Note [Allocator registry]).
    """
    def __repr__(self) -> str: ...
    @property
    def name(self) -> str: ...

class Generator:
    """
    A counter-based random generator (Note [Random numbers]).
    """
    def __init__(self, device: typing.Any = "cpu", seed: typing.Any = None) -> None: ...
    def initial_seed(self) -> int: ...
    def manual_seed(self, seed: typing.SupportsInt | typing.SupportsIndex) -> Generator: ...
    def get_state(self) -> Tensor:
        """
        The generator's state as a 16-byte uint8 tensor (seed and offset); reading it draws nothing.
        """
    def set_state(self, new_state: Tensor) -> Generator:
        """
        Restores a state from get_state(): the same random numbers come again. Returns the generator.
        """

def _abi_tag() -> str:
    """
    Note [ABI tag]: the tag core was built with.
    """

def _sgemm_backend(name: str | None = None) -> str:
    """
    Where float32 GEMMs run: 'own' (flambeau's AVX-512 kernel, Note [Own sgemm]) or 'openblas'; given a name, switches to it first. Returns the backend in use.
    """

def _cpu_capability() -> str:
    """
    The instruction set the float kernels use here: 'base', 'avx2' or 'avx512' (Note [CPU capabilities]).
    """

def _dispatch_choices() -> list[tuple[str, str]]:
    """
    Each CPU kernel family's dispatch stub and the instruction set of the variant it runs now: 'avx512', 'avx2', 'base' or 'none' (Note [CPU capabilities]).
    """

def _get_rng_state() -> Tensor:
    """
    The default CPU generator's state (Generator.get_state).
    """

def _set_rng_state(new_state: Tensor) -> None:
    """
    Restores the default CPU generator's state (Generator.set_state).
    """

def _has_kernel(op: str, key: str) -> bool:
    """
    True if a kernel of exactly this dispatch key is registered for the op (by its C++ name).
    """

def _profiler_start(record_shapes: bool, profile_memory: bool, with_stack: bool = False) -> None:
    """
    Note [Observation]: starts recording ops, ranges, backward nodes, device kernels and (profile_memory) allocations; with_stack: each op's and range's Python stack.
    """

def _profiler_stop() -> list[tuple]:
    """
    Stops recording; returns one tuple per event (flambeau_core/profiler/_events.py reads them).
    """

def _profiler_enabled() -> bool:
    """
    True while a profiler session records.
    """

def _profiler_now_ns() -> int:
    """
    The clock of the profiler's event times, in nanoseconds.
    """

def _record_function_enter(name: str, kind: int = 1) -> int:
    """
    Opens a range on this thread; returns the token for the exit.
    """

def _record_function_exit(token: int) -> None:
    """
    Closes a range _record_function_enter opened.
    """

def _kernel_trace_start() -> None:
    """
    Note [Kernel trace]: records the ops this thread dispatches to a device kernel.
    """

def _kernel_trace_stop() -> list[list[str]]:
    """
    Stops the kernel trace; returns [op, device type, 'own' | 'Generic'] rows.
    """

# Note [Batching rules in the table] (codegen/model.py): Python name -> its vmap batching rule's name.
_op_batch_rules: dict[str, str]

def _registered_ops() -> list[str]:
    """
    The names of the ops with a registered kernel.
    """

# Operators registered from C++ (Note [Operators registered from C++], flambeau/library.h).
class _BoxedKernel: ...

def _library_take_pending() -> list[tuple[str, str, str, str, _BoxedKernel | None, list[str], list[str], str]]:
    """Takes what the FLAMBEAU_LIBRARY blocks loaded so far declared."""
    ...

def _library_pending_count() -> int: ...
def _cpp_op(
    name: str,
    signature: str,
    defaults: tuple,
    kernels: list[_BoxedKernel | None],
    no_device: _BoxedKernel | None,
    fallback: typing.Callable[..., Any] | None,
    as_tuple: bool,
) -> typing.Callable[..., Any]:
    """Note [C++ operator call]: the callable of one overload of a C++ operator."""
    ...

def _set_grad_enabled(enabled: bool) -> None: ...
def _set_inference_mode(enabled: bool) -> None: ...
def _is_inference_mode_enabled() -> bool: ...
def _sum_to(input: Tensor, shape: typing.Any) -> Tensor:
    """
    Sums broadcast dims away so the result has `shape` (for backward formulas).
    """

def allocator_from_c_abi(table_address: typing.SupportsInt | typing.SupportsIndex) -> Allocator:
    """
    Wraps a `struct fb_allocator_v1` (see flambeau/allocator.h), given by address, e.g. from ctypes.
    """

def _check_layout(layout: typing.Any, op: str) -> None:
    """
    The layout= check of the factories: None or flambeau.strided pass; another layout raises NotImplementedError naming op, anything else TypeError.
    """

def arange(
    start: typing.Any,
    end: typing.Any = None,
    step: typing.Any = 1,
    *,
    out: Tensor | None = None,
    dtype: typing.Any = None,
    layout: typing.Any = None,
    device: typing.Any = None,
    requires_grad: bool = False,
) -> Tensor:
    """
    Values from start (default 0) to end (exclusive) by step. int64 unless an argument is a float.

    >>> flambeau_core.arange(3).tolist()
    [0, 1, 2]
    """

def as_strided(input: Tensor, size: typing.Any, stride: typing.Any, storage_offset: typing.Any = None) -> Tensor: ...
def broadcast_shapes(*args) -> Size:
    """
    The shape the given shapes broadcast to, as a Size (PyTorch's torch.Size).
    """

def default_num_threads() -> int:
    """
    CPUs in this process's affinity mask, capped by the container's CPU quota.
    """

def empty(
    *args,
    out: Tensor | None = None,
    dtype: typing.Any = None,
    layout: typing.Any = None,
    device: typing.Any = None,
    requires_grad: bool = False,
) -> Tensor:
    """
    An uninitialized tensor.
    """

def empty_like(
    input: Tensor,
    *,
    dtype: typing.Any = None,
    layout: typing.Any = None,
    device: typing.Any = None,
    requires_grad: bool = False,
    memory_format: memory_format = ...,
) -> Tensor: ...
def flatten(
    input: Tensor,
    start_dim: typing.SupportsInt | typing.SupportsIndex = 0,
    end_dim: typing.SupportsInt | typing.SupportsIndex = -1,
) -> Tensor: ...
def index_put_(
    input: Tensor, indices: _Sequence[Tensor | None], values: Tensor, accumulate: bool = False
) -> Tensor:
    """
    input[indices] = values with indices a tuple of index tensors (or None for a whole dim).
    """
def index_put(
    input: Tensor, indices: _Sequence[Tensor | None], values: Tensor, accumulate: bool = False
) -> Tensor:
    """
    The out-of-place index_put_: a copy of input with values put at indices.
    """
def frombuffer(
    buffer: typing.Any,
    *,
    dtype: typing.Any,
    count: typing.SupportsInt | typing.SupportsIndex = -1,
    offset: typing.SupportsInt | typing.SupportsIndex = 0,
) -> Tensor:
    """
    A 1-D tensor sharing the memory of a buffer-protocol object (no copy): writes through either side are seen by the other, and the object stays alive while the tensor (or a view of it) does. offset is in bytes; count = -1 takes every element after it. A read-only buffer gives a tensor that must not be written.
    """

def full(
    size: typing.Any,
    fill_value: typing.Any,
    *,
    out: Tensor | None = None,
    dtype: typing.Any = None,
    layout: typing.Any = None,
    device: typing.Any = None,
    requires_grad: bool = False,
) -> Tensor:
    """
    A tensor filled with fill_value; dtype inferred from it (bool, int64 or float32).
    """

def full_like(
    input: Tensor,
    fill_value: typing.Any,
    *,
    dtype: typing.Any = None,
    layout: typing.Any = None,
    device: typing.Any = None,
    requires_grad: bool = False,
    memory_format: memory_format = ...,
) -> Tensor: ...
def get_allocator(device: typing.Any = "cpu") -> Allocator:
    """
    The current allocator for a device type.
    """

def get_default_device() -> device:
    """
    The device factories use when called without device= (torch.get_default_device).
    """

def set_default_device(device: typing.Any) -> None:
    """
    Sets the device of factories called without device= (this thread; None: back to cpu), as torch.set_default_device. `with flambeau_core.device(d):` does it for a block.
    """

def get_num_threads() -> int:
    """
    Threads used for intra-op parallelism (kernels and OpenBLAS).
    """

def initial_seed() -> int: ...
def is_grad_enabled() -> bool: ...
def manual_seed(seed: typing.SupportsInt | typing.SupportsIndex) -> None:
    """
    Seeds the default random generator (rand, randn, shuffling).
    """

def narrow(
    input: Tensor,
    dim: typing.SupportsInt | typing.SupportsIndex,
    start: typing.SupportsInt | typing.SupportsIndex,
    length: typing.SupportsInt | typing.SupportsIndex,
) -> Tensor: ...
def ones(
    *args,
    out: Tensor | None = None,
    dtype: typing.Any = None,
    layout: typing.Any = None,
    device: typing.Any = None,
    requires_grad: bool = False,
) -> Tensor:
    """
    A tensor of ones.
    """

def ones_like(
    input: Tensor,
    *,
    dtype: typing.Any = None,
    layout: typing.Any = None,
    device: typing.Any = None,
    requires_grad: bool = False,
    memory_format: memory_format = ...,
) -> Tensor: ...
def permute(input: Tensor, dims: typing.Any) -> Tensor: ...
def promote_types(type1: numpy.dtype[typing.Any], type2: numpy.dtype[typing.Any]) -> numpy.dtype[typing.Any]:
    """
    The dtype that an op on tensors of dtypes type1 and type2 computes in.
    """

def rand(
    *args,
    generator: typing.Any = None,
    out: Tensor | None = None,
    dtype: typing.Any = None,
    layout: typing.Any = None,
    device: typing.Any = None,
    requires_grad: bool = False,
) -> Tensor:
    """
    Uniform samples on [0, 1): rand(2, 3, generator=None, dtype=None).
    """

def rand_like(
    input: Tensor,
    *,
    dtype: typing.Any = None,
    layout: typing.Any = None,
    device: typing.Any = None,
    requires_grad: bool = False,
    memory_format: memory_format = ...,
) -> Tensor: ...
def randn(
    *args,
    generator: typing.Any = None,
    out: Tensor | None = None,
    dtype: typing.Any = None,
    layout: typing.Any = None,
    device: typing.Any = None,
    requires_grad: bool = False,
) -> Tensor:
    """
    Standard normal samples: randn(2, 3, generator=None, dtype=None).
    """

def randn_like(
    input: Tensor,
    *,
    dtype: typing.Any = None,
    layout: typing.Any = None,
    device: typing.Any = None,
    requires_grad: bool = False,
    memory_format: memory_format = ...,
) -> Tensor: ...
def reshape(input: Tensor, shape: typing.Any) -> Tensor: ...
def result_type(tensor1: typing.Any, tensor2: typing.Any) -> numpy.dtype[typing.Any]:
    """
    The dtype an op on these operands computes in (Python numbers are weak, as in PyTorch).
    """

def select(
    input: Tensor, dim: typing.SupportsInt | typing.SupportsIndex, index: typing.SupportsInt | typing.SupportsIndex
) -> Tensor: ...
def set_allocator(allocator: typing.Any, device: typing.Any = "cpu") -> Allocator:
    """
    Makes `allocator` the current one for `device`; tensors alive now are still freed by the allocator that made them. Accepts an Allocator, or any object with malloc(nbytes) -> int and free(ptr, nbytes).
    """

def set_num_threads(n: typing.SupportsInt | typing.SupportsIndex) -> None:
    """
    Sets the number of threads for kernels and OpenBLAS.
    """

def squeeze(input: Tensor, dim: typing.Any = None) -> Tensor: ...
def system_allocator() -> Allocator:
    """
    Core's default aligned system allocator.
    """

def as_tensor(data: typing.Any, dtype: typing.Any = None, device: typing.Any = None) -> Tensor:
    """
    data as a tensor: a Tensor of the asked dtype and device is returned itself (else converted with to(), keeping the autograd graph); a writable C-contiguous NumPy array (any buffer) of that dtype is shared, not copied; anything else tensor() reads (numbers, nested sequences, ranges, strided or read-only arrays) becomes a new tensor.

    >>> flambeau_core.as_tensor(range(3)).tolist()
    [0, 1, 2]
    """

def tensor(
    data: typing.Any, *, dtype: typing.Any = None, device: typing.Any = None, requires_grad: bool = False
) -> Tensor:
    """
    A new tensor holding a copy of data: a number, nested lists/tuples, a buffer-protocol object (NumPy array) or a Tensor. dtype is inferred (bool < int64 < float32) unless given.

    >>> flambeau_core.tensor([[1, 2], [3, 4]]).shape
    flambeau.Size([2, 2])
    """

def transpose(
    input: Tensor, dim0: typing.SupportsInt | typing.SupportsIndex, dim1: typing.SupportsInt | typing.SupportsIndex
) -> Tensor: ...
def unbind(input: Tensor, dim: typing.SupportsInt | typing.SupportsIndex = 0) -> tuple: ...
def unsqueeze(input: Tensor, dim: typing.SupportsInt | typing.SupportsIndex) -> Tensor: ...
def zeros(
    *args,
    out: Tensor | None = None,
    dtype: typing.Any = None,
    layout: typing.Any = None,
    device: typing.Any = None,
    requires_grad: bool = False,
) -> Tensor:
    """
    A tensor of zeros: zeros(2, 3) or zeros((2, 3)).
    """

def zeros_like(
    input: Tensor,
    *,
    dtype: typing.Any = None,
    layout: typing.Any = None,
    device: typing.Any = None,
    requires_grad: bool = False,
    memory_format: memory_format = ...,
) -> Tensor: ...

bfloat16: dtype
bool: dtype
float16: dtype
float32: dtype
float64: dtype
int16: dtype
int32: dtype
int64: dtype
int8: dtype
uint8: dtype
channels_last: memory_format
channels_last_3d: memory_format
contiguous_format: memory_format
preserve_format: memory_format
# @generated-functions
