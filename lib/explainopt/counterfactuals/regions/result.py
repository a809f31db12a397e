"""What Algorithm 1 returns: a :class:`RobustRegion` with one :class:`Iteration` per pass of the loop."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from ..base import Counterfactual


@dataclass
class Iteration:
    """One pass of Algorithm 1: the master solution, its distance, the AP's answer and the times
    (``*_compile_time``: the part of the time cvxpy spent compiling). added: scenarios added to Z."""

    iteration: int
    x: np.ndarray
    distance: float
    ap_value: float
    scenario: np.ndarray | None
    master_time: float
    adversarial_time: float
    radius: float | None = None  # certified radius of x (filled when requested; not in the times)
    master_compile_time: float = 0.0
    adversarial_compile_time: float = 0.0
    added: int = 0


@dataclass
class RobustRegion(Counterfactual):
    """Result of :func:`~explainopt.counterfactuals.robust_region` (fields of
    :class:`~explainopt.counterfactuals.base.Counterfactual` first).

    x: the region's centre x* (converged: the last master solution; early stop: the master solution
    with the largest certified radius ``rho_bar``; None when there is none). status: ``converged``,
    ``time_limit``, ``iteration_limit``, ``infeasible`` (no robust counterfactual in the domain) or
    ``no_solution``. time: seconds of the loop, master and adversarial problems (the certified-radius
    computations after an early stop are excluded, as in the paper). solver: the solvers that produced
    it; fallback_from: a commercial solver that refused some problem for its licence's size (that
    problem was solved by the open-source solver of its class). distance: ``d(x, x0)`` in the master
    objective's norm; master_time / adversarial_time: the solvers' time on each kind of problem, of
    which compile_time is cvxpy's compilation (the rest is the solvers' own); scenarios: the size of
    the final scenario set Z; domain: the box (lower, upper) the master problem searched (see
    :func:`~explainopt.counterfactuals.robust_region` for how an unbounded domain becomes one);
    history: one :class:`~explainopt.counterfactuals.regions.Iteration` per pass of the loop.
    """

    rho: float = math.nan
    norm: str = "linf"
    objective: str = "l1"
    target: object = 1
    iterations: int = 0
    distance: float = math.nan
    master_time: float = 0.0
    adversarial_time: float = 0.0
    rho_bar: float | None = None
    history: list[Iteration] = field(default_factory=list)
    compile_time: float = 0.0
    scenarios: int = 0
    domain: tuple | None = None

    @property
    def converged(self) -> bool:
        return self.detail == "converged"

    @property
    def early_stop(self) -> bool:
        return self.detail in ("time_limit", "iteration_limit")

    @property
    def radius(self) -> float:
        """The radius the region is claimed robust for: rho when converged, rho-bar on an early stop."""
        return self.rho if self.converged else (self.rho_bar or 0.0)
