"""Robust Bayesian Recourse (RBR; Nguyen, Bui and Nguyen, UAI 2022) for any classifier.

RBR scores a recourse ``x'`` by the posterior odds of the unfavourable class under nonparametric
(Gaussian-kernel) likelihoods built from samples around the factual labelled by the model, made robust
by letting every sample move within a ball: an optimistic radius ``eps_op`` for the unfavourable samples
(they may come closer) and a pessimistic radius ``eps_pe`` for the favourable ones (they may move away).
With samples ``xi`` and kernel ``k(r) = exp(-r^2 / (2 sigma^2))`` the worst case is in closed form,

    f(x') = log sum_{xi in S0} k((||x' - xi|| - eps_op)_+) - log sum_{xi in S1} k(||x' - xi|| + eps_pe),

(the supremum of a decreasing kernel over a ball is at the nearest point, the infimum at the farthest),
and RBR solves ``min f(x')`` subject to a cost budget ``||x' - x0||_1 <= budget`` inside the feature box,
by projected gradient descent (:func:`rbr_recourse`). The budget is the smallest, by bisection on
``[0, max_budget]``, whose recourse the model classifies as the target class (:func:`rbr`).

Samples (:func:`rbr_samples`): `n_samples` points drawn uniformly in the l2 ball of radius
``perturb_radius`` around the factual, clipped to the box and labelled by the model; when none is
favourable, the ball's radius doubles (at most `max_doublings` times).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from ..encoders import model_predict
from ..validation import check_seed, counterfactual_inputs, require_class_one
from .base import Counterfactual, contract

SOLVER = "pgd"  # projected gradient descent


@dataclass
class RbrResult(Counterfactual):
    """RBR's recourse (fields of :class:`~.base.Counterfactual` first): detail ``valid`` (the model gives
    class 1) or ``not_valid`` (no budget up to `max_budget` gave a valid recourse; x is the last one);
    budget: the l1 budget of x; objective: the worst-case log posterior odds f at x (< 0: favourable)."""

    budget: float | None = None
    objective: float | None = None


def rbr_samples(model, x0, *, n_samples: int = 200, perturb_radius: float = 0.2, max_doublings: int = 4,
                random_state=0, lower=0.0, upper=1.0) -> tuple[np.ndarray, np.ndarray]:
    """Samples around `x0` split by the model's prediction: ``(S0, S1)`` (module docstring)."""
    rng = np.random.default_rng(random_state)
    x0 = np.asarray(x0, float).ravel()
    radius = perturb_radius
    for _ in range(max_doublings + 1):
        direction = rng.standard_normal((n_samples, x0.size))
        direction /= np.linalg.norm(direction, axis=1, keepdims=True)
        r = radius * rng.uniform(size=(n_samples, 1)) ** (1 / x0.size)
        S = np.clip(x0 + r * direction, lower, upper)
        y = model_predict(model, S)
        if y.any():
            return S[y == 0], S[y == 1]
        radius *= 2
    raise ValueError(f"no sample within radius {radius / 2:g} of x0 is predicted as class 1")


def _logsumexp(a: np.ndarray) -> tuple[float, np.ndarray]:
    m = a.max()
    w = np.exp(a - m)
    return float(m + np.log(w.sum())), w / w.sum()


def worst_case_odds(x, S0, S1, *, sigma: float, eps_op: float, eps_pe: float) -> tuple[float, np.ndarray]:
    """f(x) of the module docstring and its gradient with respect to x."""
    x = np.asarray(x, float)
    total = np.zeros_like(x)
    value = 0.0
    for S, eps, sign in ((S0, eps_op, 1.0), (S1, eps_pe, -1.0)):
        if not len(S):
            continue
        diff = x - S
        dist = np.linalg.norm(diff, axis=1)
        r = np.maximum(dist - eps, 0) if sign > 0 else dist + eps
        lse, weights = _logsumexp(-r ** 2 / (2 * sigma ** 2))
        unit = diff / np.maximum(dist, 1e-12)[:, None]
        grad_r = -(r / sigma ** 2)[:, None] * unit  # d/dx of -r^2 / (2 sigma^2); r depends on x through dist
        value += sign * lse
        total += sign * (weights[:, None] * grad_r).sum(axis=0)
    return value, total


def project_l1_box(v, x0, budget: float, lower=0.0, upper=1.0) -> np.ndarray:
    """Euclidean projection of v onto {x : ||x - x0||_1 <= budget, lower <= x <= upper} (bisection on the
    soft-threshold, exact for the intersection because the box contains x0)."""
    v, x0 = np.asarray(v, float), np.asarray(x0, float)
    lo, hi = np.broadcast_to(lower, x0.shape), np.broadcast_to(upper, x0.shape)

    def at(t):
        d = v - x0
        return np.clip(x0 + np.sign(d) * np.maximum(np.abs(d) - t, 0), lo, hi)

    if np.abs(at(0.0) - x0).sum() <= budget:
        return at(0.0)
    a, b = 0.0, float(np.abs(v - x0).max())
    for _ in range(40):
        t = (a + b) / 2
        a, b = (a, t) if np.abs(at(t) - x0).sum() <= budget else (t, b)
    return at(b)


def rbr_recourse(x0, S0, S1, *, budget: float, sigma: float = 1.0, eps_op: float = 0.0, eps_pe: float = 0.0,
                 lr: float = 0.05, max_iter: int = 150, lower=0.0, upper=1.0) -> tuple[np.ndarray, float]:
    """Projected gradient descent on f (module docstring) over the l1 ball of radius `budget` around x0
    intersected with the box; returns (x', f(x'))."""
    x = np.asarray(x0, float).copy()
    best, best_f = x.copy(), worst_case_odds(x, S0, S1, sigma=sigma, eps_op=eps_op, eps_pe=eps_pe)[0]
    for it in range(max_iter):
        f, g = worst_case_odds(x, S0, S1, sigma=sigma, eps_op=eps_op, eps_pe=eps_pe)
        if f < best_f:
            best, best_f = x.copy(), f
        x = project_l1_box(x - lr / np.sqrt(it + 1) * g / max(np.linalg.norm(g), 1e-12), x0, budget, lower, upper)
    f = worst_case_odds(x, S0, S1, sigma=sigma, eps_op=eps_op, eps_pe=eps_pe)[0]
    return (x, f) if f <= best_f else (best, best_f)


def rbr(model, x0, *, target=None, sigma: float = 1.0, eps_op: float = 0.0, eps_pe: float = 0.05,
        max_budget: float = 1.0, n_bisection: int = 8, n_samples: int = 200, perturb_radius: float = 0.2,
        random_state=0, **options) -> RbrResult:
    """RBR: the recourse of the smallest l1 budget in [0, `max_budget`] (bisection, `n_bisection` steps)
    that `model` classifies as 1 (the favourable class; a factual of class 1 is refused). `options` go to
    :func:`rbr_recourse` (its box ``lower``/``upper``, default [0, 1], must contain `x0`).

    Examples
    --------
    >>> from sklearn.linear_model import LogisticRegression
    >>> X = np.array([[0.1, 0.2], [0.2, 0.1], [0.8, 0.9], [0.9, 0.8]] * 10)
    >>> model = LogisticRegression().fit(X, [0, 0, 1, 1] * 10)
    >>> ce = rbr(model, X[0])
    >>> ce.status, ce.valid
    ('feasible', True)
    """
    start = time.perf_counter()
    check_seed(random_state)
    checked = counterfactual_inputs(model, x0, target=target, lower=options.get("lower", 0.0),
                                    upper=options.get("upper", 1.0))
    require_class_one(checked, "RBR")
    x0 = checked.x0
    S0, S1 = rbr_samples(model, x0, n_samples=n_samples, perturb_radius=perturb_radius, random_state=random_state)
    kwargs = dict(sigma=sigma, eps_op=eps_op, eps_pe=eps_pe, **options)

    def solve(budget):
        x, f = rbr_recourse(x0, S0, S1, budget=budget, **kwargs)
        return x, f, bool(model_predict(model, x[None])[0] == 1)

    x, f, ok = solve(max_budget)
    if not ok:
        return contract(RbrResult(x, "not_valid", time.perf_counter() - start, SOLVER, budget=max_budget,
                                  objective=f), model, x0, 1)
    best = (x, f, max_budget)
    a, b = 0.0, max_budget
    for _ in range(n_bisection):
        mid = (a + b) / 2
        x, f, ok = solve(mid)
        if ok:
            best, b = (x, f, mid), mid
        else:
            a = mid
    return contract(RbrResult(best[0], "valid", time.perf_counter() - start, SOLVER, budget=best[2],
                              objective=best[1]), model, x0, 1)


__all__ = ["RbrResult", "SOLVER", "project_l1_box", "rbr", "rbr_recourse", "rbr_samples", "worst_case_odds"]
