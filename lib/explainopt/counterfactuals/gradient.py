"""The gradient-recourse core: Adam on the counterfactual, kept in its box, as a multiplier grows.

Three methods search a counterfactual by gradient descent alone: Wachter et al. and the ROAR-style
baseline (:mod:`.baselines`), ROAR (:mod:`.roar`) and adversarially robust recourse
(:mod:`.adversarial_recourse`). They differ only in their loss and in the test that accepts a round's
point; what they share lives here, once:

* :func:`descend`: Adam steps on ``loss(x)`` from the factual ``x0``, ``x`` clamped to ``[lower, upper]``
  after every step; with ``tol``, until the loss moves by less than ``tol`` from one step to the next;
* :func:`multiplier_rounds`: for each multiplier ``lam`` of a schedule (:func:`growing`:
  ``lam, lam * lam_growth, ...``; or ROAR's decreasing cost weights), one descent on ``loss(lam)`` from
  the factual, until a round's point passes the method's test.

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

#: A loss: the scalar tensor to minimise at the counterfactual ``x`` (a float64 tensor that requires grad).
Loss = Callable[[torch.Tensor], torch.Tensor]


def descend(loss: Loss, x0, *, lower=0.0, upper=1.0, learning_rate: float = 0.01, steps: int = 300,
            tol: float | None = None, amsgrad: bool = False) -> np.ndarray:
    """`steps` Adam steps on ``loss(x)`` from ``x = x0``, each followed by clamping ``x`` to
    ``[lower, upper]`` (scalars or per feature); with `tol`, stop early once the loss (before the step)
    moves by less than `tol` from the previous step's. Returns the last ``x`` (a float64 copy)."""
    x0 = np.asarray(x0, float)
    lo, hi = (torch.as_tensor(np.broadcast_to(np.asarray(b, float), x0.shape).copy()) for b in (lower, upper))
    x = torch.as_tensor(x0).clone().requires_grad_(True)
    opt = torch.optim.Adam([x], lr=learning_rate, amsgrad=amsgrad)
    previous = math.inf
    for _ in range(steps):
        value = loss(x)
        opt.zero_grad()
        value.backward()
        opt.step()
        with torch.no_grad():
            x.clamp_(lo, hi)
        if tol is not None:
            now = value.item()
            if abs(previous - now) < tol:
                break
            previous = now
    return x.detach().numpy().copy()


def growing(lam: float, lam_growth: float, rounds: int) -> list[float]:
    """The multipliers ``lam, lam * lam_growth, (lam * lam_growth) * lam_growth, ...``, `rounds` of them."""
    out = []
    for _ in range(rounds):
        out.append(lam)
        lam *= lam_growth
    return out


@dataclass
class Rounds:
    """What :func:`multiplier_rounds` found. x: the first accepted point, else the last round's (None when
    no round ran); lam: its multiplier; accepted: whether x passed the test; rounds: descents run."""

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


__all__ = ["GRADIENT_SOLVER", "Loss", "Rounds", "descend", "growing", "multiplier_rounds"]
