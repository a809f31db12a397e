"""How robust is a counterfactual? Three notions of robustness, each measured exactly, on any model.

The papers behind this library each guard a counterfactual ``x`` (class `target` for the model) against
one threat. This module measures a given ``x`` against each of them, whatever method produced it:

* **input perturbations** (Maragno et al.): :func:`input_radius`, the largest radius ``r`` such that every
  point of the ball ``{x + s : ||s|| <= r}`` (l-infinity or l2) keeps the class: the distance from ``x`` to
  the other class. It is the optimum of one exact problem per model family (the closed form for linear
  models, the leaf boxes for a tree, a MILP over the ensemble's cells or the network's ReLUs;
  :func:`explainopt.counterfactuals.regions.certified_radius`), or, with ``method="bisection"``, the
  largest radius whose adversarial problem (:func:`~explainopt.counterfactuals.regions.adversarial_problem`)
  finds no adverse point, by bisection (the radius is monotone: a larger ball holds a smaller one).
* **model shifts** (Jiang et al., PROPLACE): :func:`largest_delta`, the largest ``Delta`` such that every
  ReLU network whose weights and biases are each within ``Delta`` of the model's still predicts class 1
  at ``x``. Two answers, both by bisection on a monotone test (a larger ``Delta`` holds every network of a
  smaller one): ``interval``, the test of Definition 7 (interval bound propagation at ``x``, what PROPLACE
  certifies; sound, so a lower bound), and ``exact``, the worst shifted network found by the exact MILP
  of :func:`~explainopt.counterfactuals.proplace.worst_case_model`.
* **retraining** (Forel et al.): :func:`retrained_validity`, the share of models retrained with new seeds
  that still give ``x`` its class, with an exact (Clopper-Pearson) binomial interval
  (:func:`~explainopt.counterfactuals.ensembles.binomial_interval`), and :func:`score_margin`, how far a
  random forest's target-class score at ``x`` lies above the threshold ``p*(N, alpha)`` that Forel et al.
  prove is enough for validity with probability ``1 - alpha`` under retraining
  (:func:`~explainopt.counterfactuals.ensembles.robustness_threshold`).

The costs every counterfactual pays (distance, sparsity, plausibility) are :mod:`.costs`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .. import solvers
from ..encoders import interval_lower, model_predict
from ..validation import check_positive, target_label
from .ensembles import ValidityEstimate, binomial_interval, robustness_threshold
from .proplace import worst_case_model
from .regions import adversarial_problem, certified_radius
from .regions.sets import check_norm

__all__ = ["DeltaRadius", "input_radius", "largest_delta", "retrained_validity", "score_margin"]

#: Tolerance of the bisections (absolute, on the radius or on Delta).
TOLERANCE = 1e-4


def _point(x) -> np.ndarray:
    x = np.asarray(x, dtype=float).ravel()
    if not np.isfinite(x).all():
        raise ValueError("x contains NaN or infinite values")
    return x


def _bisect(robust_at, lo: float, hi: float, tol: float) -> float:
    """The largest r in [lo, hi] with ``robust_at(r)``, for a monotone test true at `lo`: bisection to
    `tol`, returning the last radius that passed (a certified value, never an overshoot)."""
    if robust_at(hi):
        return float(hi)
    while hi - lo > tol:
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if robust_at(mid) else (lo, mid)
    return float(lo)


# --------------------------------------------------------------------------- input perturbations

def input_radius(model, x, *, norm: str = "linf", target: int = 1, cap: float = 1.0, method: str = "direct",
                 tol: float = TOLERANCE, solver=None, time_limit: float | None = None) -> float:
    """The largest r <= `cap` such that the model predicts `target` on the whole r-ball (`norm`: ``linf``
    or ``l2``) around `x`: 0 when `x` itself is not `target`, `cap` when the ball of radius `cap` is clear.

    method: ``direct`` solves one exact problem for the distance to the other class (linear: closed form;
    tree: leaf boxes; ensembles and ReLU networks: a MILP); ``bisection`` bisects on the exact adversarial
    problem (to `tol`, returning a radius that passed). NaN when a solver stops without an answer.
    """
    check_norm(norm)
    check_positive(cap, "cap")
    x = _point(x)
    if method == "direct":
        return certified_radius(model, x, norm=norm, target=target_label(model, target), cap=cap, solver=solver,
                                time_limit=time_limit)
    if method != "bisection":
        raise ValueError(f"method={method!r}: expected 'direct' or 'bisection'")
    if model_predict(model, x)[0] != target:
        return 0.0
    failed = []

    def robust_at(r):
        if r <= 0:
            return True
        ap = adversarial_problem(model, x, rho=r, norm=norm, target=target, solver=solver, time_limit=time_limit)
        if ap.status != solvers.OPTIMAL:
            failed.append(ap.status)
            return False
        return ap.value <= 0

    radius = _bisect(robust_at, 0.0, float(cap), tol)
    return math.nan if failed else radius


# --------------------------------------------------------------------------- model shifts

@dataclass
class DeltaRadius:
    """The largest weight shift a counterfactual survives. interval: by Definition 7 of PROPLACE (interval
    bounds at x; a certified lower bound of the truth); exact: by the exact worst-case network (None when
    not asked for); cap: the largest Delta tried (a value equal to it means 'at least cap')."""

    interval: float
    exact: float | None
    cap: float


def largest_delta(model, x, *, cap: float = 0.5, exact: bool = True, tol: float = TOLERANCE, solver=None,
                  time_limit: float | None = None) -> DeltaRadius:
    """The largest ``Delta <= cap`` for which every network within ``Delta`` of `model` (each weight and
    bias, PROPLACE's model shifts) predicts class 1 at ``x >= 0`` (see the module docstring).

    The interval answer bisects on ``interval_lower(model, x, delta) >= 0`` (forward passes); the exact
    answer bisects on the worst-case MILP's logit ``>= 0``, starting from the interval answer (which is
    certified, so the exact one is at least as large); it is NaN when a MILP stopped without proving its
    optimum (`time_limit`). Both are 0 when the model itself does not predict
    class 1 at x. ValueError for negative inputs (the interval network assumes ``x >= 0``).
    """
    if not cap > 0:
        raise ValueError(f"cap must be positive, got {cap!r}")
    x = _point(x)
    if (x < 0).any():
        raise ValueError("largest_delta needs x >= 0 (the interval network of PROPLACE); min-max scale the data")
    if model_predict(model, x)[0] != 1:
        return DeltaRadius(0.0, 0.0 if exact else None, float(cap))
    lower = _bisect(lambda d: interval_lower(model, x, delta=d)[0] >= 0, 0.0, float(cap), tol)
    if not exact:
        return DeltaRadius(lower, None, float(cap))

    failed = []

    def robust_at(d):
        try:
            worst = worst_case_model(model, x, delta=d, solver=solver, time_limit=time_limit)
        except RuntimeError as error:  # the MILP stopped without a solution (e.g. its time limit)
            failed.append(str(error))
            return False
        if worst.status != solvers.OPTIMAL:  # an incumbent is no proof either way
            failed.append(worst.status)
            return False
        return worst.milp_objective >= 0

    exact_delta = _bisect(robust_at, lower, float(cap), tol)
    return DeltaRadius(lower, math.nan if failed else exact_delta, float(cap))


# --------------------------------------------------------------------------- retraining

def retrained_validity(models, X, *, target: int = 1, level: float = 0.95) -> ValidityEstimate:
    """Share of (model, counterfactual) pairs in which a retrained model of `models` predicts `target` at
    a row of `X`, with the exact binomial interval at `level`. The pairs that share a model or a point
    are not independent, so the interval is somewhat optimistic."""
    X = np.atleast_2d(np.asarray(X, dtype=float))
    models = list(models)
    if not models or len(X) == 0:
        return binomial_interval(0, 0, level=level)
    valid = sum(int((model_predict(m, X) == target).sum()) for m in models)
    return binomial_interval(valid, len(models) * len(X), level=level)


def score_margin(forest, x, *, alpha: float, target: int = 1) -> float:
    """``score(x) - p*(N, alpha)``: the forest's target-class score (its soft vote, ``predict_proba``) above
    the threshold of Forel et al. for validity with probability ``1 - alpha`` under retraining (N trees);
    non-negative means the guarantee covers x."""
    n_estimators = len(getattr(forest, "estimators_", ()))
    if n_estimators < 1:
        raise TypeError(f"score_margin needs a fitted random forest, got {type(forest).__name__}")
    x = _point(x)
    score = float(forest.predict_proba(x[None])[0, list(forest.classes_).index(target)])
    return score - robustness_threshold(n_estimators, alpha)
