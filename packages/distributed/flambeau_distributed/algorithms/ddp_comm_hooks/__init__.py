"""Hooks for ``DistributedDataParallel.register_comm_hook``, as ``torch.distributed.algorithms.ddp_comm_hooks``."""

from __future__ import annotations

from flambeau_distributed.algorithms.ddp_comm_hooks import default_hooks

__all__ = ["default_hooks"]
