"""``GradScaler``: loss scaling for mixed-precision training, as ``torch.amp.GradScaler``."""

from __future__ import annotations

import enum
import warnings
from collections import defaultdict
from collections.abc import Iterable
from typing import Any

from flambeau_core import _C

__all__ = ["GradScaler", "OptState"]


class OptState(enum.Enum):
    READY = 0
    UNSCALED = 1
    STEPPED = 2


def _fresh_optimizer_state() -> dict[str, Any]:
    return {"stage": OptState.READY, "found_inf_per_device": {}}


def _cuda_available() -> bool:
    import flambeau_core

    return bool(flambeau_core.cuda.is_available())


class GradScaler:
    r"""Scales the loss so that low-precision gradients do not underflow, and undoes it before the step.

    ``scale(loss)`` multiplies by the current scale; ``step(optimizer)`` unscales the gradients
    (unless ``unscale_`` did already), skips ``optimizer.step()`` when any gradient holds an inf or
    NaN, and ``update()`` then halves the scale (``backoff_factor``) after a skipped step or doubles
    it (``growth_factor``) after ``growth_interval`` steps in a row without one. ``enabled=False``
    makes every method a pass-through. The same semantics and state dict as ``torch.amp.GradScaler``.

    Args:
        device: the device of the gradients (``"cuda"`` by default, as PyTorch: disabled with a
            warning when CUDA is not available; pass ``"cpu"`` on the CPU).
        init_scale: the first scale (default ``2.0**16``).
        growth_factor: multiplies the scale after ``growth_interval`` steps without inf/NaN (> 1).
        backoff_factor: multiplies the scale after a step with inf/NaN (< 1).
        growth_interval: how many good steps in a row grow the scale.
        enabled: ``False`` turns every method into a pass-through.

    Example::

        >>> import flambeau as fb
        >>> model = fb.nn.Linear(4, 2)
        >>> opt = fb.optim.SGD(model.parameters(), lr=0.1)
        >>> scaler = fb.amp.GradScaler("cpu", init_scale=1024.0)
        >>> with fb.autocast("cpu", dtype=fb.bfloat16):
        ...     loss = model(fb.ones(3, 4)).float().pow(2).mean()
        >>> scaler.scale(loss).backward()
        >>> scaler.step(opt)
        >>> scaler.update()
        >>> scaler.get_scale()
        1024.0
    """

    def __init__(
        self,
        device: str = "cuda",
        init_scale: float = 2.0**16,
        growth_factor: float = 2.0,
        backoff_factor: float = 0.5,
        growth_interval: int = 2000,
        enabled: bool = True,
    ) -> None:
        self._device = str(device)
        self._enabled = bool(enabled)
        if self._device == "cuda" and self._enabled and not _cuda_available():
            warnings.warn("torch.cuda.amp.GradScaler is enabled, but CUDA is not available.  Disabling.", stacklevel=2)
            self._enabled = False
        if self._enabled:
            if growth_factor <= 1.0:
                raise _C.FlambeauError(f"[GradScaler] The growth factor must be > 1.0, got {growth_factor}")
            if backoff_factor >= 1.0:
                raise _C.FlambeauError(f"[GradScaler] The backoff factor must be < 1.0, got {backoff_factor}")
            self._init_scale = float(init_scale)
            self._scale: Any = None  # made by the first scale(), on the outputs' device
            self._growth_factor = float(growth_factor)
            self._backoff_factor = float(backoff_factor)
            self._growth_interval = int(growth_interval)
            self._init_growth_tracker = 0
            self._growth_tracker: Any = None
            self._per_optimizer_states: dict[int, dict[str, Any]] = defaultdict(_fresh_optimizer_state)

    def _check_scale_growth_tracker(self, funcname: str) -> tuple[Any, Any]:
        if self._scale is None or self._growth_tracker is None:
            raise RuntimeError(
                f"[GradScaler.{funcname}] Attempted {funcname} but _scale is None.  This may indicate your script "
                "did not use scaler.scale(loss or outputs) earlier in the iteration."
            )
        return self._scale, self._growth_tracker

    def scale(self, outputs: Any) -> Any:
        """Multiplies ``outputs`` (a tensor, or an iterable of tensors, nested) by the scale.

        Example::

            >>> import flambeau as fb
            >>> fb.amp.GradScaler("cpu", init_scale=8.0).scale(fb.tensor(2.0)).item()
            16.0
        """
        if not self._enabled:
            return outputs
        if isinstance(outputs, _C.Tensor):
            if self._scale is None:
                self._lazy_init(outputs.device)
            return outputs * self._scale.to(device=outputs.device)

        def apply(val: Any) -> Any:
            if isinstance(val, _C.Tensor):
                if self._scale is None:
                    self._lazy_init(val.device)
                return val * self._scale.to(device=val.device)
            if isinstance(val, Iterable):
                scaled = map(apply, val)
                return type(val)(scaled) if isinstance(val, (list, tuple)) else scaled
            raise ValueError("[GradScaler.scale] outputs must be a Tensor or an iterable of Tensors")

        return apply(outputs)

    def _lazy_init(self, device: Any) -> None:
        self._scale = _C.full([], self._init_scale, dtype=_C.float32, device=device)
        self._growth_tracker = _C.full([], self._init_growth_tracker, dtype=_C.int32, device=device)

    def _unscale_grads_(self, optimizer: Any, inv_scale: Any, allow_fp16: bool) -> dict[str, Any]:
        per_device: dict[str, Any] = {}
        for group in optimizer.param_groups:
            for param in group["params"]:
                grad = param.grad
                if grad is None:
                    continue
                if not allow_fp16 and grad.dtype == _C.float16:
                    raise ValueError("[GradScaler.unscale_] Attempting to unscale FP16 gradients.")
                key = str(grad.device)
                if key not in per_device:
                    per_device[key] = _C.full([], 0.0, dtype=_C.float32, device=grad.device)
                dev_inf = per_device[key]
                # One reduction per gradient: any non-finite element marks the step as skipped.
                dev_inf.copy_(_C.maximum(dev_inf, grad.isfinite().logical_not().any().to(_C.float32)))
                grad.mul_(inv_scale.to(device=grad.device))
        return per_device

    def unscale_(self, optimizer: Any) -> None:
        """Divides the optimizer's gradients by the scale in place, and records whether any is inf/NaN.

        Call it before clipping gradients; ``step`` then does not unscale again.

        Example::

            >>> import flambeau as fb
            >>> p = fb.nn.Parameter(fb.ones(2))
            >>> opt = fb.optim.SGD([p], lr=1.0)
            >>> scaler = fb.amp.GradScaler("cpu", init_scale=4.0)
            >>> scaler.scale(p.sum()).backward()
            >>> scaler.unscale_(opt)
            >>> p.grad.tolist()
            [1.0, 1.0]
        """
        if not self._enabled:
            return
        self._check_scale_growth_tracker("unscale_")
        state = self._per_optimizer_states[id(optimizer)]
        if state["stage"] is OptState.UNSCALED:
            raise RuntimeError(
                "[GradScaler.unscale_] unscale_() has already been called on this optimizer since the last update()."
            )
        if state["stage"] is OptState.STEPPED:
            raise RuntimeError("[GradScaler.unscale_] unscale_() is being called after step().")
        # The reciprocal in float64, as PyTorch (float32 division may round differently).
        inv_scale = self._scale.double().reciprocal().float()
        state["found_inf_per_device"] = self._unscale_grads_(optimizer, inv_scale, False)
        state["stage"] = OptState.UNSCALED

    def step(self, optimizer: Any, *args: Any, **kwargs: Any) -> Any:
        """Unscales the gradients (if ``unscale_`` did not) and calls ``optimizer.step(*args, **kwargs)``
        unless a gradient holds an inf or NaN; returns what ``optimizer.step`` returned, or None when skipped.

        Example::

            >>> import flambeau as fb
            >>> p = fb.nn.Parameter(fb.ones(1))
            >>> opt = fb.optim.SGD([p], lr=1.0)
            >>> scaler = fb.amp.GradScaler("cpu")
            >>> scaler.scale(p.sum() * float("inf")).backward()
            >>> scaler.step(opt)  # skipped: p keeps its value
            >>> p.tolist()
            [1.0]
        """
        if not self._enabled:
            return optimizer.step(*args, **kwargs)
        if "closure" in kwargs:
            raise RuntimeError("[GradScaler.step] Closure use is not currently supported if GradScaler is enabled.")
        self._check_scale_growth_tracker("step")
        state = self._per_optimizer_states[id(optimizer)]
        if state["stage"] is OptState.STEPPED:
            raise RuntimeError("[GradScaler.step] step() has already been called since the last update().")
        if state["stage"] is OptState.READY:
            self.unscale_(optimizer)
        found = state["found_inf_per_device"]
        if not found:
            raise RuntimeError("[GradScaler.step] No inf checks were recorded for this optimizer.")
        retval = None
        if not sum(float(v.item()) for v in found.values()):
            retval = optimizer.step(*args, **kwargs)
        state["stage"] = OptState.STEPPED
        return retval

    def update(self, new_scale: float | Any | None = None) -> None:
        """Updates the scale: ``new_scale`` if given, else backs off after a skipped step or grows it after
        ``growth_interval`` good steps in a row.

        Example::

            >>> import flambeau as fb
            >>> scaler = fb.amp.GradScaler("cpu", init_scale=4.0)
            >>> _ = scaler.scale(fb.tensor(1.0))
            >>> scaler.update(2.0)
            >>> scaler.get_scale()
            2.0
        """
        if not self._enabled:
            return
        scale, tracker = self._check_scale_growth_tracker("update")
        if new_scale is not None:
            if isinstance(new_scale, float):
                scale.fill_(new_scale)
            else:
                reason = (
                    "[GradScaler.update] new_scale should be a float or a 1-element torch.FloatTensor "
                    "with requires_grad=False."
                )
                if not isinstance(new_scale, _C.Tensor) or new_scale.numel() != 1 or new_scale.requires_grad:
                    raise ValueError(reason)
                scale.copy_(new_scale.reshape([]))
        else:
            found_infs = [
                f.to(device=scale.device)
                for state in self._per_optimizer_states.values()
                for f in state["found_inf_per_device"].values()
            ]
            if not found_infs:
                raise RuntimeError("[GradScaler.update] No inf checks were recorded prior to update.")
            found_inf = float(sum(float(f.item()) for f in found_infs))
            # As PyTorch's kernel: the product in float64, rounded to the float32 scale; a growth that
            # overflows to inf keeps the old scale.
            if found_inf:
                scale.fill_(float(scale.item()) * self._backoff_factor)
                tracker.fill_(0)
            else:
                successful = int(tracker.item()) + 1
                if successful == self._growth_interval:
                    grown = _C.full([], float(scale.item()) * self._growth_factor, dtype=_C.float32)
                    if bool(grown.isfinite().item()):
                        scale.copy_(grown)
                    tracker.fill_(0)
                else:
                    tracker.fill_(successful)
        self._per_optimizer_states = defaultdict(_fresh_optimizer_state)

    def _get_scale_async(self) -> Any:
        return self._scale

    def get_scale(self) -> float:
        """The current scale as a Python float (1.0 when disabled).

        Example::

            >>> import flambeau as fb
            >>> fb.amp.GradScaler("cpu", init_scale=128.0).get_scale()
            128.0
        """
        if not self._enabled:
            return 1.0
        return self._init_scale if self._scale is None else float(self._scale.item())

    def get_growth_factor(self) -> float:
        """The factor the scale grows by.

        Example::

            >>> import flambeau as fb
            >>> fb.amp.GradScaler("cpu").get_growth_factor()
            2.0
        """
        return self._growth_factor

    def set_growth_factor(self, new_factor: float) -> None:
        """Sets the factor the scale grows by.

        Example::

            >>> import flambeau as fb
            >>> scaler = fb.amp.GradScaler("cpu")
            >>> scaler.set_growth_factor(4.0)
            >>> scaler.get_growth_factor()
            4.0
        """
        self._growth_factor = float(new_factor)

    def get_backoff_factor(self) -> float:
        """The factor the scale backs off by after a skipped step.

        Example::

            >>> import flambeau as fb
            >>> fb.amp.GradScaler("cpu").get_backoff_factor()
            0.5
        """
        return self._backoff_factor

    def set_backoff_factor(self, new_factor: float) -> None:
        """Sets the backoff factor.

        Example::

            >>> import flambeau as fb
            >>> scaler = fb.amp.GradScaler("cpu")
            >>> scaler.set_backoff_factor(0.25)
            >>> scaler.get_backoff_factor()
            0.25
        """
        self._backoff_factor = float(new_factor)

    def get_growth_interval(self) -> int:
        """How many good steps in a row grow the scale.

        Example::

            >>> import flambeau as fb
            >>> fb.amp.GradScaler("cpu").get_growth_interval()
            2000
        """
        return self._growth_interval

    def set_growth_interval(self, new_interval: int) -> None:
        """Sets the growth interval.

        Example::

            >>> import flambeau as fb
            >>> scaler = fb.amp.GradScaler("cpu")
            >>> scaler.set_growth_interval(10)
            >>> scaler.get_growth_interval()
            10
        """
        self._growth_interval = int(new_interval)

    def _get_growth_tracker(self) -> int:
        if not self._enabled:
            return 0
        return self._init_growth_tracker if self._growth_tracker is None else int(self._growth_tracker.item())

    def is_enabled(self) -> bool:
        """True unless constructed with ``enabled=False`` (or for CUDA without CUDA).

        Example::

            >>> import flambeau as fb
            >>> fb.amp.GradScaler("cpu", enabled=False).is_enabled()
            False
        """
        return self._enabled

    def state_dict(self) -> dict[str, Any]:
        """``scale``, ``growth_factor``, ``backoff_factor``, ``growth_interval``, ``_growth_tracker``
        (empty when disabled), as PyTorch's.

        Example::

            >>> import flambeau as fb
            >>> fb.amp.GradScaler("cpu", init_scale=4.0).state_dict()["scale"]
            4.0
        """
        if not self._enabled:
            return {}
        return {
            "scale": self.get_scale(),
            "growth_factor": self._growth_factor,
            "backoff_factor": self._backoff_factor,
            "growth_interval": self._growth_interval,
            "_growth_tracker": self._get_growth_tracker(),
        }

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restores what ``state_dict`` returned (a no-op when disabled).

        Example::

            >>> import flambeau as fb
            >>> scaler = fb.amp.GradScaler("cpu")
            >>> scaler.load_state_dict(fb.amp.GradScaler("cpu", init_scale=8.0).state_dict())
            >>> scaler.get_scale()
            8.0
        """
        if not self._enabled:
            return
        if len(state_dict) == 0:
            raise RuntimeError(
                "[GradScaler.load_state_dict] The source state dict is empty, possibly because it was saved "
                "from a disabled instance of GradScaler."
            )
        self._init_scale = float(state_dict["scale"])
        if self._scale is not None:
            self._scale.fill_(state_dict["scale"])
        self._growth_factor = float(state_dict["growth_factor"])
        self._backoff_factor = float(state_dict["backoff_factor"])
        self._growth_interval = int(state_dict["growth_interval"])
        self._init_growth_tracker = int(state_dict["_growth_tracker"])
        if self._growth_tracker is not None:
            self._growth_tracker.fill_(state_dict["_growth_tracker"])
