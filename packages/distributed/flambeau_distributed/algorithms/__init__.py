"""Training algorithms over the collectives, as ``torch.distributed.algorithms`` (DDP communication hooks)."""

from __future__ import annotations

from flambeau_distributed.algorithms import ddp_comm_hooks

__all__ = ["ddp_comm_hooks"]
