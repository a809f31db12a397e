"""The gradient-recourse core: Adam on the counterfactual, kept in its box, as a multiplier grows.

Three methods search a counterfactual by gradient descent alone: Wachter et al. and the ROAR-style
baseline (:mod:`.baselines`), ROAR (:mod:`.roar`) and adversarially robust recourse
(:mod:`.adversarial_recourse`). They differ only in their loss and in the test that accepts a point;
what they share lives here, once:

* :class:`BoxedAdam`: Adam on ``x`` from the factual ``x0``, ``x`` clamped to ``[lower, upper]`` after
  every step;
* :func:`descend`: `steps` such steps on ``loss(x)``; with ``tol``, until the loss moves by less than
  ``tol`` from one step to the next;
* two ways to run a schedule of multipliers ``lam`` (:func:`growing`: ``lam, lam * lam_growth, ...``; or
  ROAR's decreasing cost weights) until a point passes the method's test:
  :func:`multiplier_rounds` restarts a descent on ``loss(lam)`` from the factual for each multiplier and
  tests its last point (Wachter, the ROAR-style baseline, ROAR); :func:`continued_rounds` runs one Adam
  throughout, ``x`` and Adam's moments carried from one multiplier to the next, and tests every iterate
  before its step (adversarial recourse, as Dominguez-Olmedo et al.'s code runs it).

One set of parameter names for every method: ``learning_rate`` (Adam's step size), ``steps`` (Adam steps
per round), ``lam`` (the first multiplier), ``lam_growth`` (its factor from one round to the next),
``rounds`` (how many multipliers are tried); and one solver name, :data:`GRADIENT_SOLVER`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Iterable

import numpy as np
import torch

#: The solver every gradient method reports: ``torch.optim.Adam``.
GRADIENT_SOLVER = "adam"

#: A loss: the scalar tensor to minimise at the counterfactual ``x`` (a tensor that requires grad).
Loss = Callable[[torch.Tensor], torch.Tensor]


class BoxedAdam:
    """Adam on a counterfactual ``x`` (a `dtype` tensor, from `x0`), clamped to ``[lower, upper]`` (scalars
    or per feature) after every :meth:`step`; :meth:`point` reads ``x`` as a float64 array."""

    def __init__(self, x0, *, lower=0.0, upper=1.0, learning_rate: float = 0.01, amsgrad: bool = False,
                 dtype=torch.float64):
        x0 = np.asarray(x0, float)
        self.lower, self.upper = (torch.as_tensor(np.broadcast_to(np.asarray(b, float), x0.shape).copy(), dtype=dtype)
                                  for b in (lower, upper))
        self.x = torch.as_tensor(x0, dtype=dtype).clone().requires_grad_(True)
        self.optimizer = torch.optim.Adam([self.x], lr=learning_rate, amsgrad=amsgrad)

    def step(self, loss: Loss) -> torch.Tensor:
        """One Adam step on ``loss(x)``, then ``x`` clamped to the box; returns the loss before the step."""
        value = loss(self.x)
        self.optimizer.zero_grad()
        value.backward()
        self.optimizer.step()
        with torch.no_grad():
            self.x.clamp_(self.lower, self.upper)
        return value

    def point(self) -> np.ndarray:
        """``x`` now, a float64 copy."""
        return self.x.detach().numpy().astype(float)


def descend(loss: Loss, x0, *, lower=0.0, upper=1.0, learning_rate: float = 0.01, steps: int = 300,
            tol: float | None = None, amsgrad: bool = False) -> np.ndarray:
    """`steps` :class:`BoxedAdam` steps on ``loss(x)`` from ``x = x0`` (float64); with `tol`, stop early once
    the loss (before the step) moves by less than `tol` from the previous step's. Returns the last ``x``."""
    adam = BoxedAdam(x0, lower=lower, upper=upper, learning_rate=learning_rate, amsgrad=amsgrad)
    previous = math.inf
    for _ in range(steps):
        value = adam.step(loss)
        if tol is not None:
            now = value.item()
            if abs(previous - now) < tol:
                break
            previous = now
    return adam.point()


def growing(lam: float, lam_growth: float, rounds: int) -> list[float]:
    """The multipliers ``lam, lam * lam_growth, (lam * lam_growth) * lam_growth, ...``, `rounds` of them."""
    out = []
    for _ in range(rounds):
        out.append(lam)
        lam *= lam_growth
    return out


@dataclass
class Rounds:
    """What :func:`multiplier_rounds` or :func:`continued_rounds` found. x: the first accepted point, else
    the last one (None when no round ran); lam: its multiplier; accepted: whether x passed the test;
    rounds: the multipliers begun."""

    x: np.ndarray | None
    lam: float | None
    accepted: bool
    rounds: int


def multiplier_rounds(loss: Callable[[float], Loss], accept: Callable[[np.ndarray], bool], x0,
                      multipliers: Iterable[float], **descent) -> Rounds:
    """For each multiplier ``lam`` in turn, :func:`descend` on ``loss(lam)`` from `x0` (`descent`: its
    keyword arguments), until ``accept(x)`` holds for the round's point ``x``."""
    x, lam, rounds = None, None, 0
    for lam in multipliers:
        x = descend(loss(lam), x0, **descent)
        rounds += 1
        if accept(x):
            return Rounds(x, lam, True, rounds)
    return Rounds(x, lam, False, rounds)


def continued_rounds(loss: Callable[[float], Loss], accept: Callable[[np.ndarray], bool], x0,
                     multipliers: Iterable[float], *, lower=0.0, upper=1.0, learning_rate: float = 0.01,
                     steps: int = 300, dtype=torch.float64) -> Rounds:
    """One :class:`BoxedAdam` run from `x0`: `steps` steps on ``loss(lam)`` for each multiplier ``lam`` in
    turn, ``x`` and Adam's moments carried over (where :func:`multiplier_rounds` restarts from `x0`);
    ``accept(x)`` before every step, and the first accepted ``x`` is returned (else the last iterate, never
    tested). An iterate that is not finite ends the run unaccepted (nothing after it can be). dtype: of
    ``x`` (the float64 arrays passed to `accept` are its values)."""
    adam = BoxedAdam(x0, lower=lower, upper=upper, learning_rate=learning_rate, dtype=dtype)
    lam, rounds = None, 0
    for lam in multipliers:
        rounds += 1
        at = loss(lam)
        for _ in range(steps):
            point = adam.point()
            if not np.isfinite(point).all():
                return Rounds(point, lam, False, rounds)
            if accept(point):
                return Rounds(point, lam, True, rounds)
            adam.step(at)
    return Rounds(adam.point() if rounds else None, lam, False, rounds)


__all__ = ["BoxedAdam", "GRADIENT_SOLVER", "Loss", "Rounds", "continued_rounds", "descend", "growing",
           "multiplier_rounds"]
