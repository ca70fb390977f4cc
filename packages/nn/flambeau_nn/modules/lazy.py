"""Lazy layers: ``LazyLinear``, ``LazyConv1d/2d/3d``, ``LazyConvTranspose1d/2d/3d``, ``LazyBatchNorm1d/2d/3d``,
``LazyInstanceNorm1d/2d/3d`` and their ``LazyModuleMixin``.

Note [Lazy modules]
    A lazy layer is built without its input size: its parameters (and a norm
    layer's running statistics) are ``UninitializedParameter``/``UninitializedBuffer``
    placeholders. A forward pre-hook runs once, on the first call: it reads the
    size from the input, registers real tensors in the placeholders' names,
    initialises them exactly as the eager layer does (``reset_parameters``),
    removes itself and turns the module into the eager class (``LazyLinear``
    becomes ``Linear``), as PyTorch. Loading a ``state_dict`` into a lazy module
    materialises the placeholders from the checkpoint's shapes first. The
    placeholder objects are replaced (flambeau tensors cannot change their
    storage in place), so create the optimizer after the first forward or load.
"""

from __future__ import annotations

from typing import Any

from flambeau_core import FlambeauError, Tensor

from flambeau_nn.modules.batchnorm import BatchNorm1d, BatchNorm2d, BatchNorm3d
from flambeau_nn.modules.conv import Conv1d, Conv2d, Conv3d, ConvTranspose1d, ConvTranspose2d, ConvTranspose3d
from flambeau_nn.modules.instancenorm import InstanceNorm1d, InstanceNorm2d, InstanceNorm3d
from flambeau_nn.modules.linear import Linear
from flambeau_nn.parameter import UninitializedBuffer, UninitializedParameter

__all__ = [
    "LazyModuleMixin",
    "LazyLinear",
    "LazyConv1d",
    "LazyConv2d",
    "LazyConv3d",
    "LazyConvTranspose1d",
    "LazyConvTranspose2d",
    "LazyConvTranspose3d",
    "LazyBatchNorm1d",
    "LazyBatchNorm2d",
    "LazyBatchNorm3d",
    "LazyInstanceNorm1d",
    "LazyInstanceNorm2d",
    "LazyInstanceNorm3d",
]


class LazyModuleMixin:
    """Materialises a module's ``Uninitialized*`` placeholders on its first forward (Note [Lazy modules]).

    Example:
        >>> import flambeau_core as fc
        >>> import flambeau_nn as nn
        >>> m = nn.LazyLinear(3)
        >>> isinstance(m, nn.LazyModuleMixin), m.has_uninitialized_params()
        (True, True)
        >>> _ = m(fc.ones(2, 5))
        >>> type(m).__name__, tuple(m.weight.shape)
        ('Linear', (3, 5))
    """

    cls_to_become: type | None = None

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._initialize_hook = self.register_forward_pre_hook(_infer_parameters)

    def has_uninitialized_params(self) -> bool:
        """Whether any parameter or buffer is still a placeholder.

        Example:
            >>> import flambeau_core as fc
            >>> import flambeau_nn as nn
            >>> m = nn.LazyConv2d(4, 3)
            >>> m.has_uninitialized_params()
            True
            >>> m.initialize_parameters(fc.ones(1, 2, 5, 5))
            >>> m.has_uninitialized_params()
            False
        """
        tensors = list(self._parameters.values()) + list(self._buffers.values())
        return any(isinstance(t, (UninitializedParameter, UninitializedBuffer)) for t in tensors)

    def initialize_parameters(self, *args: Any, **kwargs: Any) -> None:
        """Materialises the placeholders with the sizes read from the first forward's inputs (called by the forward
        pre-hook; a lazy class implements it).

        Example:
            >>> import flambeau_core as fc
            >>> import flambeau_nn as nn
            >>> m = nn.LazyLinear(3)
            >>> m.initialize_parameters(fc.ones(2, 4))
            >>> tuple(m.weight.shape), m.in_features
            ((3, 4), 4)
        """
        raise NotImplementedError(f"[{type(self).__name__}] initialize_parameters is not implemented")

    def _materialize(self, shapes: dict[str, tuple[int, ...]]) -> None:
        """Registers a real tensor of ``shapes[name]`` in place of each named placeholder."""
        for name, shape in shapes.items():
            if isinstance(self._parameters.get(name), UninitializedParameter):
                self._parameters[name] = self._parameters[name].materialize(shape)
            elif isinstance(self._buffers.get(name), UninitializedBuffer):
                self._buffers[name] = self._buffers[name].materialize(shape)

    def _lazy_load_hook(self, state_dict: Any, prefix: str) -> None:
        """Materialises the placeholders from a checkpoint's shapes, then finishes like a first forward."""
        if not self.has_uninitialized_params():
            return
        shapes = {}
        for name in list(self._parameters) + list(self._buffers):
            key = prefix + name
            if key in state_dict and isinstance(state_dict[key], Tensor):
                shapes[name] = tuple(state_dict[key].shape)
        self._materialize(shapes)
        self._sync_sizes()
        if not self.has_uninitialized_params():
            _finish(self)

    def _sync_sizes(self) -> None:
        """Sets the size attributes (``in_features``, ...) from the materialised tensors."""


def _finish(module: Any) -> None:
    module.reset_parameters()
    module._initialize_hook.remove()
    del module._initialize_hook
    if module.cls_to_become is not None:
        module.__class__ = module.cls_to_become


def _infer_parameters(module: Any, args: tuple) -> None:
    if not args or not isinstance(args[0], Tensor):
        raise TypeError(f"[{type(module).__name__}] the first forward needs a Tensor input to infer its sizes")
    module.initialize_parameters(*args)
    if module.has_uninitialized_params():
        raise FlambeauError(f"[{type(module).__name__}] module {module._get_name()} has not been fully initialized")
    _finish(module)


class LazyLinear(LazyModuleMixin, Linear):
    r"""A ``Linear`` whose ``in_features`` is read from the first input's last dim (Note [Lazy modules]).

    Example:
        >>> import flambeau_core as fc
        >>> m = LazyLinear(4)
        >>> m(fc.ones(2, 7)).shape, type(m).__name__, m.weight.shape
        (flambeau.Size([2, 4]), 'Linear', flambeau.Size([4, 7]))
    """

    cls_to_become = Linear

    def __init__(self, out_features: int, bias: bool = True, device: Any = None, dtype: Any = None) -> None:
        super().__init__(0, 0, bias, device, dtype)
        self.out_features = out_features
        self.weight = UninitializedParameter(dtype=self.weight.dtype)
        if bias:
            self.bias = UninitializedParameter(dtype=self.weight.dtype)

    def reset_parameters(self) -> None:
        """Initialises ``weight`` and ``bias`` as ``Linear.reset_parameters`` does once they are materialised; does
        nothing before.

        Example:
            >>> import flambeau_core as fc
            >>> import flambeau_nn as nn
            >>> m = nn.LazyLinear(2)
            >>> m.reset_parameters()  # nothing to initialise yet
            >>> m.has_uninitialized_params()
            True
        """
        if not self.has_uninitialized_params() and self.in_features != 0:
            super().reset_parameters()

    def initialize_parameters(self, input: Tensor) -> None:
        """Reads ``in_features`` from the last dim of ``input`` and materialises ``weight`` ``(out_features,
        in_features)`` and ``bias`` ``(out_features,)``; does nothing once they are.

        Example:
            >>> import flambeau_core as fc
            >>> import flambeau_nn as nn
            >>> m = nn.LazyLinear(2)
            >>> m.initialize_parameters(fc.ones(4, 7))
            >>> tuple(m.weight.shape), tuple(m.bias.shape)
            ((2, 7), (2,))
        """
        if self.has_uninitialized_params():
            self.in_features = input.shape[-1] if input.dim() > 0 else 1
            self._materialize({"weight": (self.out_features, self.in_features), "bias": (self.out_features,)})

    def _sync_sizes(self) -> None:
        if not isinstance(self.weight, UninitializedParameter):
            self.in_features = self.weight.shape[1]


class _LazyConvMixin(LazyModuleMixin):
    _spatial = 1

    def _lazy_setup(self, out_channels: int, bias: bool) -> None:
        self.out_channels = out_channels
        dtype = self.weight.dtype
        self.weight = UninitializedParameter(dtype=dtype)
        if bias:
            self.bias = UninitializedParameter(dtype=dtype)

    def reset_parameters(self) -> None:
        """Initialises ``weight`` and ``bias`` as the convolution's ``reset_parameters`` does once they are
        materialised; does nothing before.

        Example:
            >>> import flambeau_nn as nn
            >>> m = nn.LazyConv1d(4, 3)
            >>> m.reset_parameters()
            >>> m.has_uninitialized_params()
            True
        """
        if not self.has_uninitialized_params() and self.in_channels != 0:
            super().reset_parameters()

    def initialize_parameters(self, input: Tensor, *args: Any, **kwargs: Any) -> None:
        """Reads ``in_channels`` from ``input``'s channel dim (dim 1 when batched, dim 0 unbatched) and materialises
        ``weight`` and ``bias``; does nothing once they are.

        Example:
            >>> import flambeau_core as fc
            >>> import flambeau_nn as nn
            >>> m = nn.LazyConv1d(4, 3)
            >>> m.initialize_parameters(fc.ones(2, 6, 10))
            >>> tuple(m.weight.shape)
            (4, 6, 3)
        """
        if not self.has_uninitialized_params():
            return
        layer = type(self).__name__
        if input.dim() not in (self._spatial + 1, self._spatial + 2):
            raise FlambeauError(
                f"[{layer}] expected a {self._spatial + 1}-D or {self._spatial + 2}-D input, got shape "
                f"{tuple(input.shape)}"
            )
        self.in_channels = input.shape[1] if input.dim() == self._spatial + 2 else input.shape[0]
        if self.in_channels % self.groups != 0:
            raise FlambeauError(
                f"[{layer}] in_channels ({self.in_channels}) must be divisible by groups ({self.groups})"
            )
        self._materialize({"weight": self._weight_shape(), "bias": (self.out_channels,)})

    def _weight_shape(self) -> tuple[int, ...]:
        if self.transposed:
            return (self.in_channels, self.out_channels // self.groups, *self.kernel_size)
        return (self.out_channels, self.in_channels // self.groups, *self.kernel_size)

    def _sync_sizes(self) -> None:
        if not isinstance(self.weight, UninitializedParameter):
            w = self.weight.shape
            self.in_channels = w[0] if self.transposed else w[1] * self.groups


def _lazy_conv(base: type, spatial: int, transposed: bool) -> type:
    """A ``Lazy<base>`` class: ``in_channels`` read from the first input (Note [Lazy modules])."""

    def __init__(self: Any, out_channels: int, kernel_size: Any, *args: Any, bias: bool = True, **kwargs: Any) -> None:
        # The eager base with 0 input channels builds every other attribute; the placeholders replace its tensors.
        if transposed:
            names = ("stride", "padding", "output_padding", "groups", "bias", "dilation", "padding_mode")
        else:
            names = ("stride", "padding", "dilation", "groups", "bias", "padding_mode")
        kwargs.update(zip(names, args, strict=False))
        if "bias" in kwargs:
            bias = kwargs.pop("bias")
        groups = kwargs.get("groups", 1)
        base.__init__(
            self, 0, groups if isinstance(groups, int) and groups > 0 else 1, kernel_size, bias=False, **kwargs
        )
        self._initialize_hook = self.register_forward_pre_hook(_infer_parameters)
        self._lazy_setup(out_channels, bias)

    name = "Lazy" + base.__name__
    doc = (
        f"A ``{base.__name__}`` whose ``in_channels`` is read from the first input's channel dim "
        "(Note [Lazy modules]); it becomes a ``" + base.__name__ + "`` then.\n\n"
        "    Example:\n"
        "        >>> import flambeau_core as fc\n"
        f"        >>> m = {name}(4, 3)\n"
        f"        >>> _ = m(fc.ones(1, 2{', 5' * spatial}))\n"
        "        >>> type(m).__name__, m.in_channels\n"
        f"        ('{base.__name__}', 2)\n"
    )
    cls = type(
        name,
        (_LazyConvMixin, base),
        {"__init__": __init__, "__doc__": doc, "cls_to_become": base, "_spatial": spatial, "__module__": __name__},
    )
    return cls


LazyConv1d = _lazy_conv(Conv1d, 1, False)
LazyConv2d = _lazy_conv(Conv2d, 2, False)
LazyConv3d = _lazy_conv(Conv3d, 3, False)
LazyConvTranspose1d = _lazy_conv(ConvTranspose1d, 1, True)
LazyConvTranspose2d = _lazy_conv(ConvTranspose2d, 2, True)
LazyConvTranspose3d = _lazy_conv(ConvTranspose3d, 3, True)


class _LazyNormMixin(LazyModuleMixin):
    def _lazy_setup(self) -> None:
        dtype = self.weight.dtype if self.weight is not None else None
        if self.affine:
            self.weight = UninitializedParameter(dtype=dtype)
            if self.bias is not None:
                self.bias = UninitializedParameter(dtype=dtype)
        if self.track_running_stats:
            self.running_mean = UninitializedBuffer(dtype=self.running_mean.dtype)
            self.running_var = UninitializedBuffer(dtype=self.running_var.dtype)

    def reset_parameters(self) -> None:
        """Resets the running statistics and affine parameters as the norm's ``reset_parameters`` does once they are
        materialised; does nothing before.

        Example:
            >>> import flambeau_nn as nn
            >>> m = nn.LazyBatchNorm1d()
            >>> m.reset_parameters()
            >>> m.has_uninitialized_params()
            True
        """
        if not self.has_uninitialized_params() and self.num_features != 0:
            super().reset_parameters()

    def initialize_parameters(self, input: Tensor) -> None:
        """Reads ``num_features`` from dim 1 of ``input`` (at least 2-D) and materialises ``weight``, ``bias`` and the
        running statistics; does nothing once they are.

        Example:
            >>> import flambeau_core as fc
            >>> import flambeau_nn as nn
            >>> m = nn.LazyBatchNorm2d()
            >>> m.initialize_parameters(fc.ones(2, 5, 3, 3))
            >>> m.num_features
            5
        """
        if not self.has_uninitialized_params():
            return
        if input.dim() < 2:
            raise FlambeauError(
                f"[{type(self).__name__}] expected an input of at least 2 dims, got {tuple(input.shape)}"
            )
        # PyTorch reads dim 1 for batch and instance norms alike.
        self.num_features = input.shape[1]
        n = (self.num_features,)
        self._materialize({"weight": n, "bias": n, "running_mean": n, "running_var": n})

    def _sync_sizes(self) -> None:
        for name in ("weight", "running_mean"):
            t = getattr(self, name, None)
            if t is not None and not isinstance(t, (UninitializedParameter, UninitializedBuffer)):
                self.num_features = t.shape[0]
                return


def _lazy_norm(base: type, affine: bool, track: bool) -> type:
    """A ``Lazy<base>`` class: ``num_features`` read from the first input's dim 1 (Note [Lazy modules])."""

    def __init__(
        self: Any,
        eps: float = 1e-5,
        momentum: float | None = 0.1,
        affine: bool = affine,
        track_running_stats: bool = track,
        device: Any = None,
        dtype: Any = None,
    ) -> None:
        base.__init__(self, 0, eps, momentum, affine, track_running_stats, device, dtype)
        self._initialize_hook = self.register_forward_pre_hook(_infer_parameters)
        self._lazy_setup()

    name = "Lazy" + base.__name__
    doc = (
        f"A ``{base.__name__}`` whose ``num_features`` is read from the first input's dim 1 "
        "(Note [Lazy modules]); it becomes a ``" + base.__name__ + "`` then.\n\n"
        "    Example:\n"
        "        >>> import flambeau_core as fc\n"
        f"        >>> m = {name}()\n"
        f"        >>> _ = m(fc.ones(2, 3{', 4' * int(base.__name__[-2])}))\n"
        "        >>> type(m).__name__, m.num_features\n"
        f"        ('{base.__name__}', 3)\n"
    )
    return type(
        name,
        (_LazyNormMixin, base),
        {"__init__": __init__, "__doc__": doc, "cls_to_become": base, "__module__": __name__},
    )


LazyBatchNorm1d = _lazy_norm(BatchNorm1d, True, True)
LazyBatchNorm2d = _lazy_norm(BatchNorm2d, True, True)
LazyBatchNorm3d = _lazy_norm(BatchNorm3d, True, True)
# PyTorch's lazy instance norms default to affine=True and track_running_stats=True (the eager ones to False).
LazyInstanceNorm1d = _lazy_norm(InstanceNorm1d, True, True)
LazyInstanceNorm2d = _lazy_norm(InstanceNorm2d, True, True)
LazyInstanceNorm3d = _lazy_norm(InstanceNorm3d, True, True)
