"""Training algorithms over the collectives, as ``torch.distributed.algorithms``: Join, DDP communication hooks."""

from __future__ import annotations

from flambeau_distributed.algorithms import ddp_comm_hooks
from flambeau_distributed.algorithms.join import Join, Joinable, JoinHook

__all__ = ["Join", "JoinHook", "Joinable", "ddp_comm_hooks"]
