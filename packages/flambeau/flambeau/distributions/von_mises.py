"""The von Mises distribution on the circle."""

from __future__ import annotations

import math
from typing import Any

import flambeau_core as fb
from flambeau_autograd import no_grad

from . import constraints
from .distribution import Distribution
from .utils import broadcast_all, lazy_property

__all__ = ["VonMises"]

# Abramowitz and Stegun 9.8.1-9.8.4 (PyTorch's coefficients): I0 and I1 below and above x = 3.75.
_I0_COEF_SMALL = [1.0, 3.5156229, 3.0899424, 1.2067492, 0.2659732, 0.360768e-1, 0.45813e-2]
_I0_COEF_LARGE = [
    0.39894228, 0.1328592e-1, 0.225319e-2, -0.157565e-2, 0.916281e-2, -0.2057706e-1, 0.2635537e-1,
    -0.1647633e-1, 0.392377e-2,
]  # fmt: skip
_I1_COEF_SMALL = [0.5, 0.87890594, 0.51498869, 0.15084934, 0.2658733e-1, 0.301532e-2, 0.32411e-3]
_I1_COEF_LARGE = [
    0.39894228, -0.3988024e-1, -0.362018e-2, 0.163801e-2, -0.1031555e-1, 0.2282967e-1, -0.2895312e-1,
    0.1787654e-1, -0.420059e-2,
]  # fmt: skip
_COEF_SMALL = [_I0_COEF_SMALL, _I1_COEF_SMALL]
_COEF_LARGE = [_I0_COEF_LARGE, _I1_COEF_LARGE]


def _eval_poly(y: fb.Tensor, coef: list[float]) -> fb.Tensor:
    result: Any = coef[-1]
    for c in reversed(coef[:-1]):
        result = c + y * result
    return result


def _log_modified_bessel_fn(x: fb.Tensor, order: int = 0) -> fb.Tensor:
    """log(I_order(x)) for x > 0 and order 0 or 1 (the polynomial approximations PyTorch uses)."""
    if order not in (0, 1):
        raise ValueError(f"[VonMises] order must be 0 or 1, got {order}")
    y = (x / 3.75) ** 2
    small = _eval_poly(y, _COEF_SMALL[order])
    if order == 1:
        small = x.abs() * small
    small = small.log()
    large = x - 0.5 * x.log() + _eval_poly(3.75 / x, _COEF_LARGE[order]).log()
    return fb.where(x < 3.75, small, large)


def _rejection_sample(loc: fb.Tensor, concentration: fb.Tensor, proposal_r: fb.Tensor, x: fb.Tensor) -> fb.Tensor:
    """Best and Fisher (1979): draws for every element until each is accepted (all at once per round)."""
    done = fb.zeros(x.shape, dtype=fb.bool, device=loc.device)
    while not done.all():
        u1, u2, u3 = fb.rand((3,) + tuple(x.shape), dtype=loc.dtype, device=loc.device).unbind()
        z = fb.cos(math.pi * u1)
        f = (1 + proposal_r * z) / (proposal_r + z)
        c = concentration * (proposal_r - f)
        accept = ((c * (2 - c) - u2) > 0) | ((c / u2).log() + 1 - c >= 0)
        if accept.any():
            x = fb.where(accept, (u3 - 0.5).sign() * f.acos(), x)
            done = done | accept
    return (x + math.pi + loc) % (2 * math.pi) - math.pi


class VonMises(Distribution):
    r"""A circular von Mises distribution with mean angle ``loc`` and ``concentration`` :math:`\kappa`:
    density :math:`e^{\kappa \cos(x - \mu)} / (2 \pi I_0(\kappa))`. ``loc`` and values may be any real
    number, read as angles modulo :math:`2\pi`; samples lie in :math:`[-\pi, \pi)`. Sampled by rejection
    (Best and Fisher), in float64 inside, with no gradient, as PyTorch's.

    Args:
        loc (float or Tensor): the mean angle, in radians.
        concentration (float or Tensor): :math:`\kappa`, positive.
        validate_args (bool, optional): whether to check the parameters and values.

    Example:
        >>> import flambeau as fb
        >>> from flambeau.distributions import VonMises
        >>> d = VonMises(fb.tensor([1.0]), fb.tensor([2.0]))
        >>> round(d.log_prob(fb.tensor([1.0])).item(), 4), round(d.variance.item(), 4)
        (-0.6619, 0.3022)
    """

    arg_constraints = {"loc": constraints.real, "concentration": constraints.positive}
    support = constraints.real
    has_rsample = False

    def __init__(self, loc: Any, concentration: Any, validate_args: bool | None = None) -> None:
        self.loc, self.concentration = broadcast_all(loc, concentration)
        super().__init__(self.loc.shape, fb.Size(), validate_args)

    def log_prob(self, value: fb.Tensor) -> fb.Tensor:
        if self._validate_args:
            self._validate_sample(value)
        log_prob = self.concentration * fb.cos(value - self.loc)
        return log_prob - math.log(2 * math.pi) - _log_modified_bessel_fn(self.concentration, order=0)

    @lazy_property
    def _loc(self) -> fb.Tensor:
        return self.loc.to(fb.float64)

    @lazy_property
    def _concentration(self) -> fb.Tensor:
        return self.concentration.to(fb.float64)

    @lazy_property
    def _proposal_r(self) -> fb.Tensor:
        kappa = self._concentration
        tau = 1 + (1 + 4 * kappa**2).sqrt()
        rho = (tau - (2 * tau).sqrt()) / (2 * kappa)
        proposal_r = (1 + rho**2) / (2 * rho)
        # second order Taylor expansion around 0 for small kappa
        return fb.where(kappa < 1e-5, 1 / kappa + kappa, proposal_r)

    def sample(self, sample_shape: Any = ()) -> fb.Tensor:
        """Draws by rejection in float64 (float32 can loop for a long time at a tiny concentration), then
        casts to ``loc``'s dtype.

        Example:
            >>> import flambeau as fb
            >>> from flambeau.distributions import VonMises
            >>> x = VonMises(fb.tensor([0.0, 3.0]), fb.tensor([1.0, 50.0])).sample((4,))
            >>> tuple(x.shape), bool((x >= -3.1416).all() and (x < 3.1416).all())
            ((4, 2), True)
        """
        with no_grad():
            shape = self._extended_shape(sample_shape)
            x = fb.empty(shape, dtype=self._loc.dtype, device=self.loc.device)
            return _rejection_sample(self._loc, self._concentration, self._proposal_r, x).to(self.loc.dtype)

    def expand(self, batch_shape: Any, _instance: Distribution | None = None) -> VonMises:
        return self._expand_params(VonMises, batch_shape, _instance, ("loc", "concentration"))

    @property
    def mean(self) -> fb.Tensor:
        """The circular mean: ``loc``."""
        return self.loc

    @property
    def mode(self) -> fb.Tensor:
        return self.loc

    @lazy_property
    def variance(self) -> fb.Tensor:  # type: ignore[override]
        """The circular variance, 1 - I1(kappa) / I0(kappa): 0 for a point mass, 1 for the uniform circle.

        Example:
            >>> import flambeau as fb
            >>> from flambeau.distributions import VonMises
            >>> [round(v, 4) for v in VonMises(0.0, fb.tensor([0.01, 1.0, 100.0])).variance.tolist()]
            [0.995, 0.5536, 0.005]
        """
        kappa = self.concentration
        return 1 - (_log_modified_bessel_fn(kappa, order=1) - _log_modified_bessel_fn(kappa, order=0)).exp()
