"""The :class:`Distribution` base class, as ``torch.distributions.Distribution``."""

from __future__ import annotations

import warnings
from typing import Any

import flambeau_core as fb
from flambeau_autograd import no_grad

from . import constraints
from .utils import _inherit_docstrings, lazy_property

__all__ = ["Distribution"]

_Shape = "fb.Size | tuple[int, ...] | list[int]"


class Distribution:
    """Abstract base class for probability distributions.

    A distribution has a ``batch_shape`` (independent, not identically parametrised draws) and an
    ``event_shape`` (the shape of one draw); :meth:`sample` returns ``sample_shape + batch_shape +
    event_shape`` and :meth:`log_prob` reduces the event dimensions. With ``validate_args`` the
    parameters are checked against :attr:`arg_constraints` and values against :attr:`support`.

    Args:
        batch_shape: the batch shape.
        event_shape: the event shape.
        validate_args: whether to validate parameters and values (default: :meth:`set_default_validate_args`).

    Example:
        >>> import flambeau as fb
        >>> from flambeau.distributions import Normal
        >>> d = Normal(fb.zeros(3), fb.ones(3))
        >>> d.batch_shape, d.event_shape
        (flambeau.Size([3]), flambeau.Size([]))
    """

    has_rsample = False
    has_enumerate_support = False
    _validate_args = __debug__

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        _inherit_docstrings(cls, Distribution)

    @staticmethod
    def set_default_validate_args(value: bool) -> None:
        """Sets whether distributions validate their arguments by default (on unless Python runs with ``-O``).

        Example:
            >>> from flambeau.distributions import Distribution
            >>> Distribution.set_default_validate_args(False)
            >>> Distribution.set_default_validate_args(True)
        """
        if value not in (True, False):
            raise ValueError(f"[Distribution.set_default_validate_args] expected True or False, got {value!r}")
        Distribution._validate_args = value

    def __init__(
        self,
        batch_shape: Any = (),
        event_shape: Any = (),
        validate_args: bool | None = None,
    ) -> None:
        self._batch_shape = fb.Size(batch_shape)
        self._event_shape = fb.Size(event_shape)
        if validate_args is not None:
            self._validate_args = validate_args
        if self._validate_args:
            try:
                arg_constraints = self.arg_constraints
            except NotImplementedError:
                arg_constraints = {}
                warnings.warn(
                    f"{self.__class__} does not define `arg_constraints`. Please set `arg_constraints = {{}}` or "
                    "initialize the distribution with `validate_args=False` to turn off validation.",
                    stacklevel=2,
                )
            for param, constraint in arg_constraints.items():
                if constraints.is_dependent(constraint):
                    continue
                if param not in self.__dict__ and isinstance(getattr(type(self), param), lazy_property):
                    continue  # the parameter was not given (probs when logits were) and is not computed to check it
                value = getattr(self, param)
                if not bool(constraint.check(value).all()):
                    raise fb.FlambeauError(
                        f"[{type(self).__name__}] Expected parameter {param} "
                        f"({type(value).__name__} of shape {tuple(value.shape)}) "
                        f"of distribution {self!r} to satisfy the constraint {constraint!r}, "
                        f"but found invalid values:\n{value}"
                    )
        super().__init__()

    def expand(self, batch_shape: Any, _instance: Distribution | None = None) -> Distribution:
        """A new distribution whose batch dimensions are expanded to ``batch_shape`` (parameters are not copied).

        Example:
            >>> import flambeau as fb
            >>> from flambeau.distributions import Normal
            >>> Normal(0.0, 1.0).expand([2, 3]).batch_shape
            flambeau.Size([2, 3])
        """
        raise NotImplementedError

    @property
    def batch_shape(self) -> fb.Size:
        """The shape over which parameters are batched.

        Example:
            >>> import flambeau as fb
            >>> from flambeau.distributions import Bernoulli
            >>> Bernoulli(fb.full((4,), 0.5)).batch_shape
            flambeau.Size([4])
        """
        return self._batch_shape

    @property
    def event_shape(self) -> fb.Size:
        """The shape of a single sample (without batching).

        Example:
            >>> import flambeau as fb
            >>> from flambeau.distributions import OneHotCategorical
            >>> OneHotCategorical(fb.ones(5)).event_shape
            flambeau.Size([5])
        """
        return self._event_shape

    @property
    def arg_constraints(self) -> dict[str, constraints.Constraint]:
        """The constraint each parameter must satisfy, by parameter name.

        Example:
            >>> from flambeau.distributions import Normal
            >>> Normal.arg_constraints["scale"]
            GreaterThan(lower_bound=0.0)
        """
        raise NotImplementedError

    @property
    def support(self) -> constraints.Constraint | None:
        """The constraint of the distribution's support.

        Example:
            >>> from flambeau.distributions import Exponential
            >>> Exponential.support
            GreaterThanEq(lower_bound=0.0)
        """
        raise NotImplementedError

    @property
    def mean(self) -> fb.Tensor:
        """The mean of the distribution.

        Example:
            >>> import flambeau as fb
            >>> from flambeau.distributions import Uniform
            >>> Uniform(0.0, 2.0).mean.item()
            1.0
        """
        raise NotImplementedError(f"{self.__class__} does not implement mean")

    @property
    def mode(self) -> fb.Tensor:
        """The mode of the distribution.

        Example:
            >>> import flambeau as fb
            >>> from flambeau.distributions import Normal
            >>> Normal(fb.tensor(1.5), 1.0).mode.item()
            1.5
        """
        raise NotImplementedError(f"{self.__class__} does not implement mode")

    @property
    def variance(self) -> fb.Tensor:
        """The variance of the distribution.

        Example:
            >>> import flambeau as fb
            >>> from flambeau.distributions import Normal
            >>> Normal(fb.tensor(0.0), 2.0).variance.item()
            4.0
        """
        raise NotImplementedError(f"{self.__class__} does not implement variance")

    @property
    def stddev(self) -> fb.Tensor:
        """The standard deviation of the distribution.

        Example:
            >>> import flambeau as fb
            >>> from flambeau.distributions import Normal
            >>> Normal(fb.tensor(0.0), 2.0).stddev.item()
            2.0
        """
        return self.variance.sqrt()

    def sample(self, sample_shape: Any = ()) -> fb.Tensor:
        """Draws a sample (or a batch of ``sample_shape`` samples), without a gradient.

        Example:
            >>> import flambeau as fb
            >>> from flambeau.distributions import Normal
            >>> Normal(fb.zeros(3), 1.0).sample((2,)).shape
            flambeau.Size([2, 3])
        """
        with no_grad():
            return self.rsample(sample_shape)

    def rsample(self, sample_shape: Any = ()) -> fb.Tensor:
        """Draws a reparameterised sample: differentiable with respect to the parameters.

        Example:
            >>> import flambeau as fb
            >>> from flambeau.distributions import Normal
            >>> loc = fb.zeros(2, requires_grad=True)
            >>> Normal(loc, 1.0).rsample().sum().backward()
            >>> loc.grad.tolist()
            [1.0, 1.0]
        """
        raise NotImplementedError(f"{self.__class__} does not implement rsample")

    def sample_n(self, n: int) -> fb.Tensor:
        """Draws ``n`` samples (deprecated, as in PyTorch: use ``sample((n,))``).

        Example:
            >>> import warnings
            >>> import flambeau as fb
            >>> from flambeau.distributions import Normal
            >>> with warnings.catch_warnings():
            ...     warnings.simplefilter("ignore")
            ...     Normal(0.0, 1.0).sample_n(4).shape
            flambeau.Size([4])
        """
        warnings.warn("sample_n will be deprecated. Use .sample((n,)) instead", UserWarning, stacklevel=2)
        return self.sample(fb.Size((n,)))

    def log_prob(self, value: fb.Tensor) -> fb.Tensor:
        """The log of the probability density (or mass) at ``value``.

        Example:
            >>> import flambeau as fb
            >>> from flambeau.distributions import Normal
            >>> round(Normal(0.0, 1.0).log_prob(fb.tensor(0.0)).item(), 4)
            -0.9189
        """
        raise NotImplementedError

    def cdf(self, value: fb.Tensor) -> fb.Tensor:
        """The cumulative distribution function at ``value``.

        Example:
            >>> import flambeau as fb
            >>> from flambeau.distributions import Normal
            >>> Normal(0.0, 1.0).cdf(fb.tensor(0.0)).item()
            0.5
        """
        raise NotImplementedError

    def icdf(self, value: fb.Tensor) -> fb.Tensor:
        """The inverse cumulative distribution function at ``value``.

        Example:
            >>> import flambeau as fb
            >>> from flambeau.distributions import Uniform
            >>> Uniform(0.0, 4.0).icdf(fb.tensor(0.25)).item()
            1.0
        """
        raise NotImplementedError

    def enumerate_support(self, expand: bool = True) -> fb.Tensor:
        """All values of a discrete distribution's support, along a new leading dimension.

        With ``expand=False`` the batch dimensions have size 1.

        Example:
            >>> import flambeau as fb
            >>> from flambeau.distributions import Bernoulli
            >>> Bernoulli(fb.tensor([0.3, 0.6])).enumerate_support().tolist()
            [[0.0, 0.0], [1.0, 1.0]]
        """
        raise NotImplementedError

    def entropy(self) -> fb.Tensor:
        """The entropy, batched over ``batch_shape``.

        Example:
            >>> import flambeau as fb
            >>> from flambeau.distributions import Uniform
            >>> round(Uniform(0.0, fb.tensor(2.0)).entropy().item(), 4)
            0.6931
        """
        raise NotImplementedError

    def perplexity(self) -> fb.Tensor:
        """``exp(entropy)``, batched over ``batch_shape``.

        Example:
            >>> import flambeau as fb
            >>> from flambeau.distributions import Uniform
            >>> round(Uniform(0.0, fb.tensor(2.0)).perplexity().item(), 4)
            2.0
        """
        return fb.exp(self.entropy())

    def _extended_shape(self, sample_shape: Any = ()) -> fb.Size:
        if not isinstance(sample_shape, fb.Size):
            sample_shape = fb.Size(sample_shape)
        return fb.Size(tuple(sample_shape) + tuple(self._batch_shape) + tuple(self._event_shape))

    def _validate_sample(self, value: Any) -> None:
        name = type(self).__name__
        if not isinstance(value, fb.Tensor):
            raise fb.FlambeauError(f"[{name}.log_prob] The value argument to log_prob must be a Tensor")
        shape = tuple(value.shape)
        event_dim_start = len(shape) - len(self._event_shape)
        if shape[event_dim_start:] != tuple(self._event_shape):
            raise fb.FlambeauError(
                f"[{name}] The right-most size of value must match event_shape: "
                f"{fb.Size(shape)} vs {self._event_shape}."
            )
        expected = tuple(self._batch_shape) + tuple(self._event_shape)
        for i, j in zip(reversed(shape), reversed(expected), strict=False):
            if i != 1 and j != 1 and i != j:
                raise fb.FlambeauError(
                    f"[{name}] Value is not broadcastable with batch_shape+event_shape: "
                    f"{fb.Size(shape)} vs {fb.Size(expected)}."
                )
        try:
            support = self.support
        except NotImplementedError:
            warnings.warn(
                f"{self.__class__} does not define `support` to enable sample validation. Please initialize the "
                "distribution with `validate_args=False` to turn off validation.",
                stacklevel=2,
            )
            return
        if support is None:
            return
        if not bool(support.check(value).all()):
            raise fb.FlambeauError(
                f"[{name}] Expected value argument ({type(value).__name__} of shape {shape}) "
                f"to be within the support ({support!r}) of the distribution {self!r}, "
                f"but found invalid values:\n{value}"
            )

    def _get_checked_instance(self, cls: type, _instance: Distribution | None = None) -> Any:
        if _instance is None and type(self).__init__ != cls.__init__:
            raise NotImplementedError(
                f"Subclass {self.__class__.__name__} of {cls.__name__} that defines a custom __init__ method "
                "must also define a custom .expand() method."
            )
        return self.__new__(type(self)) if _instance is None else _instance

    def _expand_params(
        self, cls: type, batch_shape: Any, _instance: Distribution | None, names: tuple[str, ...], event_dims: int = 0
    ) -> Any:
        """The common body of expand(): each named tensor parameter present is expanded, then the shapes are set."""
        new = self._get_checked_instance(cls, _instance)
        batch_shape = fb.Size(batch_shape)
        given = self.__dict__.get("_param")  # the parameter given (probs or logits), kept as such
        for name in names:
            if name in self.__dict__:
                value = self.__dict__[name]
                tail = tuple(value.shape[value.dim() - event_dims :]) if event_dims else ()
                setattr(new, name, value.expand(tuple(batch_shape) + tail))
                if value is given:
                    new._param = new.__dict__[name]
        self._finish_expand(new, batch_shape, self._event_shape)
        return new

    def _finish_expand(self, new: Distribution, batch_shape: Any, event_shape: Any) -> None:
        """Sets an expanded copy's shapes; it keeps this distribution's validation setting (checked already)."""
        Distribution.__init__(new, batch_shape, event_shape, validate_args=False)
        new._validate_args = self._validate_args

    def __repr__(self) -> str:
        names = [k for k in self.arg_constraints if k in self.__dict__]
        args = ", ".join(
            f"{p}: {self.__dict__[p] if self.__dict__[p].numel() == 1 else fb.Size(self.__dict__[p].shape)}"
            for p in names
        )
        return self.__class__.__name__ + "(" + args + ")"
