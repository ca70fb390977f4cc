"""Custom autograd Functions written in Python.

A Function subclass defines ``forward(ctx, *args)`` (run under ``no_grad``) and
``backward(ctx, *grads)`` (one gradient per forward argument, ``None`` where
there is none); ``Fn.apply(*args)`` runs forward and, if an input requires
grad, makes the outputs the outputs of one graph node whose backward calls
yours (a C++ node that takes the GIL).

Example:
    >>> import flambeau_core as fc
    >>> class Exp(Function):
    ...     @staticmethod
    ...     def forward(ctx, x):
    ...         y = x.exp()
    ...         ctx.save_for_backward(y)
    ...         return y
    ...     @staticmethod
    ...     def backward(ctx, g):
    ...         (y,) = ctx.saved_tensors
    ...         return g * y
    >>> x = fc.tensor([0.0, 1.0], requires_grad=True)
    >>> Exp.apply(x).sum().backward()
    >>> [round(v, 4) for v in x.grad.tolist()]
    [1.0, 2.7183]
"""

from __future__ import annotations

from typing import Any

from flambeau_autograd import _C

__all__ = ["Function", "FunctionCtx"]


class FunctionCtx:
    """The ``ctx`` handed to ``forward`` and ``backward``.

    Example:
        >>> import flambeau as fb
        >>> class Scale(fb.autograd.Function):
        ...     @staticmethod
        ...     def forward(ctx, x, k):
        ...         ctx.k = k  # any attribute travels from forward to backward
        ...         return x * k
        ...     @staticmethod
        ...     def backward(ctx, g):
        ...         return g * ctx.k, None
        >>> x = fb.ones(2, requires_grad=True)
        >>> Scale.apply(x, 3.0).sum().backward(); x.grad
        tensor([3., 3.])
    """

    def __init__(self) -> None:
        self._to_save: tuple | None = None
        self._saved: list | None = None
        self._freed = False
        self._dirty: tuple = ()
        self._non_differentiable: tuple = ()
        self.needs_input_grad: tuple[bool, ...] = ()
        self.materialize_grads = True

    def save_for_backward(self, *tensors: Any) -> None:
        """Saves tensors (or None) for backward. Read them back with ``saved_tensors``;
        an in-place change to one of them in between makes that read raise.

        Example:
            >>> import flambeau as fb
            >>> class Square(fb.autograd.Function):
            ...     @staticmethod
            ...     def forward(ctx, x):
            ...         ctx.save_for_backward(x)
            ...         return x * x
            ...     @staticmethod
            ...     def backward(ctx, g):
            ...         (x,) = ctx.saved_tensors
            ...         return 2 * x * g
            >>> x = fb.tensor([1.0, 3.0], requires_grad=True)
            >>> Square.apply(x).sum().backward(); x.grad
            tensor([2., 6.])
        """
        self._to_save = tensors

    @property
    def saved_tensors(self) -> tuple:
        if self._freed:
            raise RuntimeError(
                "Trying to backward through the graph a second time (or directly access saved tensors "
                "after they have already been freed). Saved intermediate values of the graph are freed "
                "when you call .backward() or autograd.grad(). Specify retain_graph=True if you need to "
                "backward through the graph a second time or if you need to access saved tensors after "
                "calling backward."
            )
        if self._saved is None:
            return tuple(self._to_save or ())
        return tuple(None if s is None else s.unpack() for s in self._saved)

    def mark_dirty(self, *tensors: Any) -> None:
        """Declares inputs that forward modified in place (they must be returned as outputs).

        Example:
            >>> import flambeau as fb
            >>> class AddOne_(fb.autograd.Function):
            ...     @staticmethod
            ...     def forward(ctx, x):
            ...         x.add_(1)
            ...         ctx.mark_dirty(x)
            ...         return x
            ...     @staticmethod
            ...     def backward(ctx, g):
            ...         return g
            >>> a = fb.zeros(2, requires_grad=True)
            >>> b = a.clone()
            >>> AddOne_.apply(b).sum().backward()
            >>> b.detach(), a.grad
            (tensor([1., 1.]), tensor([1., 1.]))
        """
        self._dirty = tensors

    def mark_non_differentiable(self, *tensors: Any) -> None:
        """Declares outputs that never require grad (indices, masks...).

        Example:
            >>> import flambeau as fb
            >>> class SortValues(fb.autograd.Function):
            ...     @staticmethod
            ...     def forward(ctx, x):
            ...         values, idx = x.sort()
            ...         ctx.mark_non_differentiable(idx)
            ...         ctx.save_for_backward(idx)
            ...         return values, idx
            ...     @staticmethod
            ...     def backward(ctx, g, g_idx):
            ...         (idx,) = ctx.saved_tensors
            ...         return fb.zeros_like(g).scatter(0, idx, g)
            >>> values, idx = SortValues.apply(fb.tensor([3.0, 1.0, 2.0], requires_grad=True))
            >>> values.requires_grad, idx.requires_grad
            (True, False)
        """
        self._non_differentiable = tensors

    def set_materialize_grads(self, value: bool) -> None:
        """If False, backward receives None (not zeros) for outputs that got no gradient.

        Example:
            >>> import flambeau as fb
            >>> class Pair(fb.autograd.Function):
            ...     @staticmethod
            ...     def forward(ctx, x):
            ...         ctx.set_materialize_grads(False)
            ...         return x.clone(), x.clone()
            ...     @staticmethod
            ...     def backward(ctx, g1, g2):
            ...         print(g1 is None, g2 is None)
            ...         return g1
            >>> x = fb.ones(2, requires_grad=True)
            >>> first, second = Pair.apply(x)
            >>> first.sum().backward()
            False True
        """
        self.materialize_grads = bool(value)


class Function:
    """Base class of custom differentiable operations (see the module docstring).

    Subclass it with static ``forward(ctx, *args)`` and ``backward(ctx, *grad_outputs)`` and call
    ``apply``; never instantiate it.

    Example:
        >>> import flambeau as fb
        >>> class Square(fb.autograd.Function):
        ...     @staticmethod
        ...     def forward(ctx, x):
        ...         ctx.save_for_backward(x)
        ...         return x * x
        ...     @staticmethod
        ...     def backward(ctx, g):
        ...         (x,) = ctx.saved_tensors
        ...         return 2 * x * g
        >>> x = fb.tensor([1.0, 2.0], requires_grad=True)
        >>> y = Square.apply(x)
        >>> y.sum().backward(); y.detach(), x.grad
        (tensor([1., 4.]), tensor([2., 4.]))
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        raise RuntimeError(
            f"{type(self).__name__} is a Function: call {type(self).__name__}.apply(...) instead of instantiating it"
        )

    @staticmethod
    def forward(ctx: FunctionCtx, *args: Any) -> Any:
        """Computes the outputs from the inputs (run under ``no_grad``); a subclass implements it.

        ``ctx`` is a :class:`FunctionCtx`: save what backward needs with ``ctx.save_for_backward`` or as attributes.

        Example:
            >>> import flambeau as fb
            >>> class Square(fb.autograd.Function):
            ...     @staticmethod
            ...     def forward(ctx, x):
            ...         ctx.save_for_backward(x)
            ...         return x * x
            ...     @staticmethod
            ...     def backward(ctx, g):
            ...         (x,) = ctx.saved_tensors
            ...         return 2 * x * g
            >>> Square.apply(fb.tensor([3.0]))
            tensor([9.])
        """
        raise NotImplementedError("a Function subclass must implement forward(ctx, *args)")

    @staticmethod
    def backward(ctx: FunctionCtx, *grad_outputs: Any) -> Any:
        """Returns the gradient of each ``forward`` input (``None`` where it has none) from the outputs' gradients.

        A subclass implements it; it runs once per backward pass through the node.

        Example:
            >>> import flambeau as fb
            >>> class Square(fb.autograd.Function):
            ...     @staticmethod
            ...     def forward(ctx, x):
            ...         ctx.save_for_backward(x)
            ...         return x * x
            ...     @staticmethod
            ...     def backward(ctx, g):
            ...         (x,) = ctx.saved_tensors
            ...         return 2 * x * g
            >>> x = fb.tensor([3.0], requires_grad=True)
            >>> (grad,) = fb.autograd.grad(Square.apply(x), x)
            >>> grad
            tensor([6.])
        """
        raise NotImplementedError("a Function subclass must implement backward(ctx, *grad_outputs)")

    @staticmethod
    def jvp(ctx: FunctionCtx, *grad_inputs: Any) -> Any:
        """Forward mode: the outputs' tangents from the inputs' (fb.autograd.forward_ad).

        Called with one tangent per forward argument (zeros for a tensor without one, or None after
        ``ctx.set_materialize_grads(False)``; None for a non-tensor) after forward ran; returns one tangent
        per output (None for none).

        Example:
            >>> import flambeau_core as fc
            >>> import flambeau_autograd as ag
            >>> class Square(ag.Function):
            ...     @staticmethod
            ...     def forward(ctx, x):
            ...         ctx.x = x
            ...         return x * x
            ...     @staticmethod
            ...     def jvp(ctx, t):
            ...         return 2 * ctx.x * t
            >>> with ag.forward_ad.dual_level():
            ...     y = Square.apply(ag.forward_ad.make_dual(fc.tensor([3.0]), fc.tensor([1.0])))
            ...     ag.forward_ad.unpack_dual(y).tangent.tolist()
            [6.0]
        """
        raise NotImplementedError(
            "[Function.jvp] you must implement the jvp function for a custom autograd.Function to use it with "
            "forward-mode AD"
        )

    @classmethod
    def apply(cls, *args: Any) -> Any:
        """Runs forward and records the graph node.

        Example:
            >>> import flambeau as fb
            >>> class Square(fb.autograd.Function):
            ...     @staticmethod
            ...     def forward(ctx, x):
            ...         ctx.save_for_backward(x)
            ...         return x * x
            ...     @staticmethod
            ...     def backward(ctx, g):
            ...         (x,) = ctx.saved_tensors
            ...         return 2 * x * g
            >>> x = fb.tensor([2.0], requires_grad=True)
            >>> y = Square.apply(x)
            >>> y.detach(), y.grad_fn is not None
            (tensor([4.]), True)
        """
        return _C._function_apply(cls, FunctionCtx(), *args)
