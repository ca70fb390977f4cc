"""PyTorch's pickled names and the flambeau objects that stand for them.

Note [Torch names in checkpoints]
A ``torch.save`` pickle names torch objects by module and name: tensors are
``REDUCE(GLOBAL 'torch._utils _rebuild_tensor_v2', (storage, offset, size,
stride, requires_grad, OrderedDict()))`` whose storage is a persistent id
``('storage', GLOBAL 'torch FloatStorage', key, location, numel)``;
parameters wrap that in ``torch._utils _rebuild_parameter``; dtypes are
``GLOBAL 'torch float32'``; devices ``REDUCE(GLOBAL 'torch device', ('cuda',
0))``. This module defines one flambeau object per such name, under the same
short name, and ``TORCH_NAMES`` maps each torch ``module.name`` to it.

Loading resolves the torch names through that table (never by importing
torch). Saving pickles the flambeau objects, whose GLOBAL opcodes read
``flambeau_interop._torch_names <name>``; serialization rewrites exactly those
opcodes to torch's module (``torch`` or ``torch._utils``) afterwards, so the
file is byte-for-byte what torch would read. The rewrite walks the opcodes
(``pickletools.genops``), never the raw bytes, so user strings that happen to
contain the same text are untouched.
"""

from __future__ import annotations

import importlib
from typing import Any

import flambeau_core as fc
from flambeau_core import FlambeauError, Tensor
from flambeau_core._storage import LEGACY_STORAGES

MODULE = __name__

# (torch storage class name, flambeau dtype name): core's legacy storage classes (FloatStorage, ...), and
# UntypedStorage, which holds bytes (uint8); torch writes it, with _rebuild_tensor_v3 naming the dtype,
# for the dtypes that have no storage class (uint16/32/64 here).
_STORAGE_TYPES = [*LEGACY_STORAGES, ("UntypedStorage", "uint8")]

# dtypes torch has and flambeau does not: named so the error can say so.
_FOREIGN_DTYPES = [
    "float8_e4m3fn",
    "float8_e5m2",
    "float8_e4m3fnuz",
    "float8_e5m2fnuz",
    "float8_e8m0fnu",
    "float4_e2m1fn_x2",
    "complex32",
    "qint8",
    "quint8",
    "qint32",
    "quint4x2",
    "quint2x4",
    "bits8",
    "bits16",
    "bits1x8",
    "bits2x4",
    "bits4x2",
]


class StorageType:
    """A torch storage class named in a checkpoint (``torch.FloatStorage``, ...): its dtype."""

    dtype: Any = None
    dtype_name: str = ""


def _make_storage_type(name: str, dtype_name: str) -> type:
    cls = type(name, (StorageType,), {"dtype": getattr(fc, dtype_name), "dtype_name": dtype_name})
    cls.__module__ = MODULE
    return cls


STORAGE_TYPE_OF_DTYPE: dict[str, type] = {}
for _name, _dtype_name in _STORAGE_TYPES:
    globals()[_name] = _make_storage_type(_name, _dtype_name)
    if _name != "UntypedStorage":
        STORAGE_TYPE_OF_DTYPE.setdefault(_dtype_name, globals()[_name])


UNTYPED_DTYPES = ("uint16", "uint32", "uint64")


class LoadedStorage:
    """A storage read from a checkpoint: a 1-D tensor over all its elements, and its record name for errors."""

    __slots__ = ("base", "record", "_as_dtype")

    def __init__(self, base: Tensor, record: str) -> None:
        self.base = base
        self.record = record
        self._as_dtype: dict[str, LoadedStorage] = {}

    def typed(self, dtype: object) -> LoadedStorage:
        """This storage's bytes seen as ``dtype`` (an untyped storage read by _rebuild_tensor_v3), shared."""
        if dtype == self.base.dtype:
            return self
        if not isinstance(dtype, fc.dtype) or self.base.dtype != fc.uint8:
            raise _fail(f"storage {self.record} of dtype {self.base.dtype} cannot be read as {dtype!r:.40}")
        key = str(dtype)
        if key not in self._as_dtype:
            nbytes = self.base.numel()
            if nbytes % dtype.itemsize:
                raise _fail(f"storage {self.record} holds {nbytes} bytes, not a whole number of {dtype} elements")
            data = self.base if self.base.is_cpu else self.base.to("cpu")
            typed = fc.frombuffer(memoryview(data), dtype=dtype) if nbytes else fc.empty((0,), dtype=dtype)
            self._as_dtype[key] = LoadedStorage(typed if self.base.is_cpu else typed.to(self.base.device), self.record)
        return self._as_dtype[key]


def _fail(what: str) -> FlambeauError:
    return FlambeauError(f"[load] {what}")


def _as_dims(value: object, what: str) -> tuple[int, ...]:
    if not isinstance(value, tuple) or not all(type(v) is int for v in value):
        raise _fail(f"a tensor's {what} must be a tuple of ints, got {value!r:.80}")
    return value


def _rebuild_tensor(storage: object, storage_offset: object, size: object, stride: object) -> Tensor:
    if not isinstance(storage, LoadedStorage):
        raise _fail(f"a tensor must be rebuilt from a storage record, got {type(storage).__name__}")
    size = _as_dims(size, "size")
    stride = _as_dims(stride, "stride")
    if type(storage_offset) is not int or storage_offset < 0:
        raise _fail(f"a tensor's storage offset must be a non-negative int, got {storage_offset!r:.80}")
    if len(size) != len(stride) or any(s < 0 for s in size) or any(s < 0 for s in stride):
        raise _fail(f"a tensor's size {size} and stride {stride} must be non-negative and of equal length")
    numel = storage.base.numel()
    if 0 not in size:
        last = storage_offset + sum((n - 1) * s for n, s in zip(size, stride, strict=True))
        if last >= numel:
            raise _fail(
                f"a tensor of size {size}, stride {stride} and storage offset {storage_offset} reaches element "
                f"{last}, outside its storage {storage.record} of {numel} elements"
            )
    return storage.base.as_strided(size, stride, storage_offset)


def _apply_metadata(t: Tensor, metadata: object) -> Tensor:
    if not metadata:
        return t
    if not isinstance(metadata, dict) or not set(metadata) <= {"conj", "neg"}:
        raise _fail(f"unknown tensor metadata {metadata!r:.80}")
    if metadata.get("neg"):
        t = -t
    if metadata.get("conj"):
        t = t.conj().clone()
    return t


def _set_requires_grad(t: Tensor, requires_grad: object) -> Tensor:
    if type(requires_grad) is not bool:
        raise _fail(f"requires_grad must be a bool, got {requires_grad!r:.80}")
    if requires_grad:
        if not t.dtype.is_floating_point and not t.dtype.is_complex:
            raise _fail(f"a tensor of dtype {t.dtype} cannot require grad")
        t.requires_grad_(True)
    return t


def _rebuild_tensor_v2(
    storage: object,
    storage_offset: object,
    size: object,
    stride: object,
    requires_grad: object,
    backward_hooks: object,
    metadata: object = None,
) -> Tensor:
    # backward_hooks is always an empty OrderedDict (hooks are never saved, as in PyTorch).
    t = _apply_metadata(_rebuild_tensor(storage, storage_offset, size, stride), metadata)
    return _set_requires_grad(t, requires_grad)


def _rebuild_tensor_v3(
    storage: object,
    storage_offset: object,
    size: object,
    stride: object,
    requires_grad: object,
    backward_hooks: object,
    dtype: object,
    metadata: object = None,
) -> Tensor:
    if not isinstance(storage, LoadedStorage):
        raise _fail(f"a tensor must be rebuilt from a storage record, got {type(storage).__name__}")
    storage = storage.typed(dtype)
    return _rebuild_tensor_v2(storage, storage_offset, size, stride, requires_grad, backward_hooks, metadata)


def parameter_class() -> type | None:
    """flambeau_nn.Parameter, looked up by name the way pickle finds a class (None without flambeau-nn)."""
    try:
        return importlib.import_module("flambeau_nn.parameter").Parameter
    except ModuleNotFoundError:
        return None


def _rebuild_parameter(data: object, requires_grad: object, backward_hooks: object) -> Tensor:
    if not isinstance(data, Tensor):
        raise _fail(f"a parameter must wrap a tensor, got {type(data).__name__}")
    if type(requires_grad) is not bool:
        raise _fail(f"requires_grad must be a bool, got {requires_grad!r:.80}")
    cls = parameter_class()
    if cls is None:  # flambeau-core alone: a plain tensor with the same flag
        return _set_requires_grad(Tensor(data), requires_grad)
    return cls(data, requires_grad)


def _rebuild_parameter_with_state(data: object, requires_grad: object, backward_hooks: object, state: object) -> Tensor:
    param = _rebuild_parameter(data, requires_grad, backward_hooks)
    dict_state, slot_state = state if isinstance(state, tuple) and len(state) == 2 else (state, None)
    for part in (dict_state, slot_state):
        if part is None:
            continue
        if not isinstance(part, dict) or not all(isinstance(k, str) for k in part):
            raise _fail(f"a parameter's saved attributes must be a dict of str, got {type(part).__name__}")
        for k, v in part.items():
            setattr(param, k, v)
    return param


def _rebuild_from_type_v2(func: Any, new_type: object, args: object, state: object) -> Tensor:
    # torch writes this for tensors with Python attributes or of a subclass;
    # only plain tensors and parameters have a flambeau counterpart.
    if func not in (_rebuild_tensor_v2, _rebuild_tensor_v3, _rebuild_tensor, _rebuild_parameter):
        raise _fail(f"_rebuild_from_type_v2 expects a tensor rebuild function, got {func!r:.80}")
    if not isinstance(args, tuple):
        raise _fail(f"_rebuild_from_type_v2 expects a tuple of arguments, got {type(args).__name__}")
    t = func(*args)
    param = parameter_class()
    if new_type is not Tensor and not (param is not None and new_type is param):
        raise _fail(f"tensors of type {new_type!r:.80} have no flambeau counterpart (only Tensor and Parameter)")
    if state:
        names = sorted(state) if isinstance(state, dict) else state
        raise _fail(f"the checkpoint gives a tensor Python attributes {names!r:.80}, which flambeau tensors lack")
    return t


def _rebuild_device_tensor_from_cpu_tensor(
    data: object, dtype: object, device: object, requires_grad: object
) -> Tensor:
    if not isinstance(data, Tensor):
        raise _fail(f"expected a tensor, got {type(data).__name__}")
    return _set_requires_grad(data.to(device=fc.device(str(device)), dtype=dtype), requires_grad)


def device(type: object, index: object = None) -> object:  # noqa: A002  (torch.device's argument name)
    if not isinstance(type, str) or not (index is None or (isinstance(index, int) and not isinstance(index, bool))):
        raise _fail(f"a device is (str, int), got ({type!r:.40}, {index!r:.40})")
    return fc.device(type if index is None else f"{type}:{index}")


def Size(dims: object = ()) -> fc.Size:  # noqa: N802  (torch.Size)
    return fc.Size(_as_dims(tuple(dims) if isinstance(dims, (list, tuple)) else dims, "size"))


def _get_layout(name: object) -> object:
    if name == "torch.strided":
        return "torch.strided"
    raise _fail(f"layout {name!r:.40} is not supported by flambeau (only dense, strided tensors)")


class _Unsupported:
    """A torch name that flambeau cannot rebuild: using it raises an error that names it."""

    def __init__(self, name: str, why: str) -> None:
        self.name, self.why = name, why

    def __call__(self, *args: object, **kwargs: object) -> object:
        raise _fail(f"{self.name}: {self.why}")

    def __repr__(self) -> str:
        return self.name


class LazyParameter:
    """torch.nn.parameter.Parameter in a checkpoint: flambeau_nn.Parameter, found when used."""

    def __call__(self, data: object = None, requires_grad: object = True) -> Tensor:
        return _rebuild_parameter(data if data is not None else fc.empty(0), requires_grad, None)

    def __repr__(self) -> str:
        return "torch.nn.parameter.Parameter"


def _torch_names() -> dict[str, object]:
    names: dict[str, object] = {}
    for name, _ in _STORAGE_TYPES:
        names[f"torch.{name}"] = globals()[name]
        names[f"torch.cuda.{name}"] = globals()[name]
    names["torch.storage.UntypedStorage"] = globals()["UntypedStorage"]
    for dname in ("bool", "uint8", "int8", "int16", "int32", "int64", "uint16", "uint32", "uint64"):
        names[f"torch.{dname}"] = getattr(fc, dname)
    for dname in ("float16", "bfloat16", "float32", "float64", "complex64", "complex128"):
        names[f"torch.{dname}"] = getattr(fc, dname)
    for dname in _FOREIGN_DTYPES:
        names[f"torch.{dname}"] = _Unsupported(f"torch.{dname}", "flambeau has no such dtype")
    for fn in (
        _rebuild_tensor,
        _rebuild_tensor_v2,
        _rebuild_tensor_v3,
        _rebuild_parameter,
        _rebuild_parameter_with_state,
        _rebuild_device_tensor_from_cpu_tensor,
    ):
        names[f"torch._utils.{fn.__name__}"] = fn
    for fn_name, why in (
        ("_rebuild_qtensor", "quantized tensors are not supported by flambeau"),
        ("_rebuild_sparse_tensor", "sparse tensors are not supported by flambeau"),
        ("_rebuild_nested_tensor", "nested tensors are not supported by flambeau"),
        ("_rebuild_meta_tensor_no_storage", "meta tensors without storage are not supported by flambeau"),
        ("_rebuild_wrapper_subclass", "wrapper tensor subclasses are not supported by flambeau"),
        ("_rebuild_device_tensor_from_numpy", "device tensors saved as NumPy arrays are not supported by flambeau"),
    ):
        names[f"torch._utils.{fn_name}"] = _Unsupported(f"torch._utils.{fn_name}", why)
    names["torch._tensor._rebuild_from_type_v2"] = _rebuild_from_type_v2
    names["torch.serialization._get_layout"] = _get_layout
    names["torch.Tensor"] = Tensor
    names["torch.Size"] = Size
    names["torch.device"] = device
    names["torch.nn.parameter.Parameter"] = LazyParameter()
    for scheme in (
        "per_tensor_affine",
        "per_tensor_symmetric",
        "per_channel_affine",
        "per_channel_symmetric",
        "per_channel_affine_float_qparams",
    ):
        names[f"torch.{scheme}"] = _Unsupported(f"torch.{scheme}", "quantized tensors are not supported by flambeau")
    return names


TORCH_NAMES: dict[str, object] = _torch_names()

# Saving: GLOBAL '<this module> <name>' -> torch's module, for the objects a tensor pickles into.
TORCH_MODULE_OF: dict[str, str] = {name: "torch" for name, _ in _STORAGE_TYPES}
TORCH_MODULE_OF.update(
    {
        "UntypedStorage": "torch.storage",
        "_rebuild_tensor_v2": "torch._utils",
        "_rebuild_tensor_v3": "torch._utils",
        "_rebuild_parameter": "torch._utils",
        "_rebuild_parameter_with_state": "torch._utils",
        "device": "torch",
    }
)
