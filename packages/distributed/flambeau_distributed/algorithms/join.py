"""``Join``: training with uneven inputs across ranks, as ``torch.distributed.algorithms.join``.

A rank that runs out of inputs leaves the ``with Join([...])`` block and, until
every rank has, shadows the collectives the others still make each iteration
(each joinable's ``JoinHook.main_hook``); then every joinable's ``post_hook``
runs (DDP: the last rank to join broadcasts its final model).

The protocol: each iteration a rank that has not joined calls
``Join.notify_join_context(joinable)`` (DDP does in ``forward``), an
all-reduce of 1; a joined rank all-reduces 0 in its place, so the sum is the
number of ranks still training, and 0 ends the loop.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from types import TracebackType
from typing import Any, NamedTuple

import flambeau_core as fc

from flambeau_distributed import _c10d


class JoinHook:
    """What a joined rank does for one joinable: ``main_hook()`` per iteration of the others, then ``post_hook``."""

    def main_hook(self) -> None:
        """Shadows one iteration's collectives of the ranks still training."""

    def post_hook(self, is_last_joiner: bool) -> None:
        """Runs once every rank joined; ``is_last_joiner``: this rank was the last one to run out of inputs."""


class _JoinConfig(NamedTuple):
    enable: bool
    throw_on_early_termination: bool
    is_first_joinable: bool

    @staticmethod
    def construct_disabled_join_config() -> _JoinConfig:
        return _JoinConfig(enable=False, throw_on_early_termination=False, is_first_joinable=False)


class Joinable(ABC):
    """A class whose per-iteration collectives a joined rank can shadow (``DistributedDataParallel`` is one)."""

    @abstractmethod
    def __init__(self) -> None:
        super().__init__()
        self._join_config = _JoinConfig.construct_disabled_join_config()

    @abstractmethod
    def join_hook(self, **kwargs: Any) -> JoinHook:
        """The hook a joined rank runs for this object; ``kwargs`` are those given to ``Join``."""

    @property
    @abstractmethod
    def join_device(self) -> Any:
        """The device of the join protocol's all-reduces."""

    @property
    @abstractmethod
    def join_process_group(self) -> Any:
        """The process group of the join protocol's all-reduces."""


class Join:
    """Context manager for training with uneven inputs, as ``torch.distributed.algorithms.Join``.

    Args:
        joinables: the ``Joinable`` objects of the loop (e.g. ``[ddp_model]``);
            the first one notifies the others each iteration.
        enable: False makes the context do nothing.
        throw_on_early_termination: raise ``RuntimeError`` on every rank as
            soon as one ran out of inputs, instead of shadowing.
        kwargs: passed to each ``join_hook`` (DDP: ``divide_by_initial_world_size``).

    Example (rank r has 5 + r batches, ``mpirun -n 2``)::

        model = DistributedDataParallel(net)
        with Join([model]):
            for x, y in batches:
                loss_fn(model(x), y).backward()
                opt.step()
    """

    def __init__(
        self,
        joinables: list[Joinable],
        enable: bool = True,
        throw_on_early_termination: bool = False,
        **kwargs: Any,
    ) -> None:
        if not isinstance(joinables, (list, tuple)) or not joinables:
            raise ValueError(f"[Join] joinables must be a non-empty list of Joinable objects, got {joinables!r}")
        for j in joinables:
            if not isinstance(j, Joinable):
                raise TypeError(
                    f"[Join] expected Joinable objects (e.g. a DistributedDataParallel), got {type(j).__name__}"
                )
        self._joinables = list(joinables)
        self._join_hooks = [j.join_hook(**kwargs) for j in self._joinables]
        self._enable = enable
        self._throw_on_early_termination = throw_on_early_termination
        groups = {id(j.join_process_group) for j in self._joinables}
        if len(groups) > 1:
            raise ValueError("[Join] every joinable must use the same process group")
        self._process_group = self._joinables[0].join_process_group
        self._set_joinable_configs()

    def _set_joinable_configs(self) -> None:
        for i, j in enumerate(self._joinables):
            j._join_config = _JoinConfig(self._enable, self._throw_on_early_termination, is_first_joinable=i == 0)

    def __enter__(self) -> Join:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, value: BaseException | None, traceback: TracebackType | None
    ) -> None:
        try:
            if not self._enable or kind is not None:
                return  # an exception propagates as it is
            is_last_joiner = True
            while self._count(0) > 0:
                if self._throw_on_early_termination:
                    self._count(1)  # tells the others (their notify's second all-reduce)
                    raise RuntimeError(
                        f"[Join] rank {_c10d._pg(self._process_group, 'Join').rank} exhausted all its inputs "
                        "(throw_on_early_termination=True)"
                    )
                for hook in self._join_hooks:
                    hook.main_hook()
                is_last_joiner = False
            for hook in self._join_hooks:
                hook.post_hook(is_last_joiner)
        finally:
            for j in self._joinables:
                j._join_config = _JoinConfig.construct_disabled_join_config()

    def _count(self, mine: int) -> int:
        t = fc.full([1], float(mine))
        _c10d.all_reduce(t, group=self._process_group)
        return int(t.item())

    @staticmethod
    def notify_join_context(joinable: Joinable) -> _c10d.Work | None:
        """Called by a joinable each iteration before its collectives: counts this rank as still training.

        Only the first joinable of the context communicates; returns the
        (completed) all-reduce's Work, whose result is the number of ranks
        still training, or None. With ``throw_on_early_termination`` it raises
        ``RuntimeError`` on every rank once one rank joined.
        """
        config = getattr(joinable, "_join_config", None)
        if config is None:
            raise RuntimeError(
                f"[Join.notify_join_context] {type(joinable).__name__} has no join config: its constructor must call "
                "Joinable.__init__"
            )
        if not config.is_first_joinable or not config.enable:
            return None
        group = joinable.join_process_group
        count = fc.ones([1])
        work = _c10d.all_reduce(count, group=group, async_op=True)
        work.wait()
        if config.throw_on_early_termination:
            flag = fc.zeros([1])
            _c10d.all_reduce(flag, group=group)
            if flag.item() > 0:
                raise RuntimeError(
                    "[Join] detected at least one rank that exhausted its inputs (throw_on_early_termination=True)"
                )
        return work
