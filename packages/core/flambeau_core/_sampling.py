"""``torch.multinomial``: category indices drawn from rows of non-negative weights.

Composed of core ops, one kernel chain for all rows: with replacement, uniform
draws located in the normalised cumulative weights (``searchsorted``); without
replacement, the categories of the ``num_samples`` largest ``weight / E`` with
``E`` standard exponential draws (the top-k form of sequential sampling without
replacement). Draws come from flambeau's generator, so the indices are
PyTorch's in distribution, not in value.
"""

from __future__ import annotations

from flambeau_core import _C
from flambeau_core.overrides import is_tensor_like


def multinomial(input, num_samples: int, replacement: bool = False, *, generator=None, out=None):
    """``num_samples`` category indices per row of ``input`` (1-D, or 2-D: one row per distribution).

    Rows are weights (non-negative, finite, not all zero), not necessarily summing
    to 1. Without replacement a row yields distinct indices, its zero-weight
    categories only once the others are used up. Inside ``flambeau.func.vmap`` the
    draw is one op on the whole batch (its ``randomness`` rules it, as torch's).

    Example:
        >>> import flambeau_core as fc
        >>> fc.multinomial(fc.tensor([0.0, 1.0, 0.0]), 4, replacement=True).tolist()
        [1, 1, 1, 1]
    """
    if not is_tensor_like(input):
        raise TypeError(f"[multinomial] expected a Tensor as 'input', got {type(input).__name__}")
    if not input.dtype.is_floating_point:
        raise TypeError(f"[multinomial] expected floating-point weights, got dtype {input.dtype}")
    if input.dim() not in (1, 2):
        raise _C.FlambeauError(f"[multinomial] expected 1-D or 2-D weights, got shape {tuple(input.shape)}")
    if isinstance(num_samples, bool) or not isinstance(num_samples, int):
        raise TypeError(f"[multinomial] expected an int num_samples, got {type(num_samples).__name__}")
    categories = input.shape[-1]
    if num_samples <= 0:
        raise _C.FlambeauError(f"[multinomial] expected num_samples > 0, got {num_samples}")
    if not replacement and num_samples > categories:
        raise _C.FlambeauError(
            f"[multinomial] cannot draw {num_samples} samples without replacement from {categories} categories"
        )
    result = _draw(input, num_samples, replacement, generator=generator)
    return result if out is None else _C._copy_to_out("multinomial", result, out, True)


class _Draw:
    """multinomial's draws for the rows along the last dim of weights with any leading dims (a vmapped
    call's batch dim is one more), the weights' values checked.

    An object, not a function, so that a tensor-like's ``__torch_function__`` gets the draw as one op named
    ``multinomial``: vmap runs a Python function's ops one by one, which would draw one sample's shape for
    the whole batch (its rule for this op draws for the batch at once, or refuses randomness='same' for
    weights that differ per sample, as torch's)."""

    __name__ = "multinomial"

    def __call__(self, weights, num_samples: int, replacement: bool, generator=None):
        if not isinstance(weights, _C.Tensor):
            kind = type(weights)
            return kind.__torch_function__(self, (kind,), (weights, num_samples, replacement), {"generator": generator})
        categories = weights.shape[-1]
        leading = tuple(weights.shape[:-1])
        count = 1
        for size in leading:
            count *= size
        rows = weights.reshape(count, categories)
        rows = rows.float() if rows.dtype in (_C.float16, _C.bfloat16) else rows
        # One check, one host round trip: every weight finite and >= 0, every row summing to more than 0.
        totals = rows.sum(-1)
        bad = ((rows < 0) | ~rows.isfinite()).any().item()
        if bad or (totals <= 0).any().item():
            what = "weights that are inf, nan or < 0" if bad else "a row whose weights sum to 0"
            raise _C.FlambeauError(f"[multinomial] expected finite non-negative weights in each row, got {what}")
        shape = (count, num_samples if replacement else categories)
        draws = _C.rand(*shape, generator=generator, dtype=rows.dtype, device=rows.device)
        if replacement:
            cdf = rows.cumsum(-1) / totals.unsqueeze(-1)
            # u in [0, 1) lands in the category whose cdf step holds it; clamped for a last cdf rounded below 1.
            result = _C.searchsorted(cdf, draws, right=True).clamp_max(categories - 1)
        else:
            keys = rows / -(1 - draws).log()  # weight / Exp(1); zero weights give key 0, chosen last
            result = keys.topk(num_samples, dim=-1).indices
        return result.reshape(*leading, num_samples)


_draw = _Draw()


def install() -> None:
    import flambeau_core

    flambeau_core.multinomial = multinomial
    _C.Tensor.multinomial = multinomial
