"""Hook points that test tooling fills and upper layers read (core imports none of them).

``gradcheck_graph_observers``: callables given the outputs whose graph flambeau-autograd's
``gradcheck``/``gradgradcheck`` is about to differentiate. ``pytest --gradcheck-coverage=FILE``
(flambeau_core.testing) appends one that records the backward nodes, so CI can check that every
derivatives.yaml entry has a gradcheck case. Empty otherwise: one falsy loop per gradcheck call.
"""

from __future__ import annotations

from collections.abc import Callable

gradcheck_graph_observers: list[Callable[[tuple], None]] = []
