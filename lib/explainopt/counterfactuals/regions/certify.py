"""Certification of a region, independently of the loop that found it: the certified radius of a point
(the distance to the other class, the paper's rho-bar) and :func:`certify_region` (the adversarial
problem once more, and thousands of sampled points of the set classified by the model's own prediction).

Both take `target` as a class label of ``model.classes_`` (as every counterfactual method does, see
:func:`explainopt.validation.target_index`), and ``target=None`` means the class the model predicts at
the point (the counterfactual's own class).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ... import solvers
from ...encoders import model_predict
from ...validation import check_vector, feature_names, n_features, target_index
from .families import adversarial_problem, family_of, radius_of
from .sets import check_norm, sample_set


@dataclass
class Certificate:
    """Independent check of a region: the AP solved again and `n_samples` points classified by the
    model's own prediction. certified: the centre is `target`, the AP value is at most epsilon and no
    sampled point is adverse."""

    certified: bool
    radius: float
    ap_value: float
    ap_status: str
    n_samples: int
    n_violations: int
    centre_valid: bool


def _point_and_class(model, x, target) -> tuple[np.ndarray, int]:
    """`x` checked, and the class index of the label `target` (None: the class predicted at `x`)."""
    x = check_vector(x, "x", n_features(model), names=feature_names(model))
    if target is None:
        return x, int(model_predict(model, x)[0])
    return x, target_index(model, target, x)


def certified_radius(model, x, *, norm: str = "linf", target=None, cap: float = 1.0, solver=None,
                     time_limit: float | None = None) -> float:
    """The largest radius r <= `cap` such that the whole r-ball (norm `norm`) around `x` is predicted
    `target` (a label of ``model.classes_``; None: the class predicted at `x`): the distance from `x` to
    the other class (the paper's "distance to the border", rho-bar); 0 when `x` is not of that class.

    Examples
    --------
    A tree that splits at ``x2 = 0.45``: a point at ``x2 = 0.7`` is 0.25 from the other class.

    >>> from sklearn.tree import DecisionTreeClassifier
    >>> X = np.array([[0.1, 0.2], [0.3, 0.1], [0.8, 0.9], [0.9, 0.7]])
    >>> tree = DecisionTreeClassifier(max_depth=2, random_state=0).fit(X, [0, 0, 1, 1])
    >>> round(certified_radius(tree, [0.5, 0.7]), 3), certified_radius(tree, [0.5, 0.7], target=0)
    (0.25, 0.0)
    """
    check_norm(norm)
    family = family_of(model)
    x, index = _point_and_class(model, x, target)
    return radius_of(model, family, family.boxes(model), x, norm=norm, target=index, cap=cap, solver=solver,
                     time_limit=time_limit)


def certify_region(model, x, *, rho: float, norm: str = "linf", target=None, n_samples: int = 10_000,
                   epsilon: float = 1e-6, random_state=0, solver=None, time_limit: float | None = None) -> Certificate:
    """Check that every point of ``x + S`` (radius `rho`) is predicted `target` (a label of
    ``model.classes_``; None: the class predicted at `x`), independently of the loop.

    Examples
    --------
    The region of :func:`~explainopt.counterfactuals.robust_region` is certified; a box reaching across
    the tree's split at ``x2 = 0.45`` is not.

    >>> from sklearn.tree import DecisionTreeClassifier
    >>> from explainopt.counterfactuals import robust_region
    >>> X = np.array([[0.1, 0.2], [0.3, 0.1], [0.8, 0.9], [0.9, 0.7]])
    >>> tree = DecisionTreeClassifier(max_depth=2, random_state=0).fit(X, [0, 0, 1, 1])
    >>> region = robust_region(tree, [0.2, 0.2], rho=0.1)
    >>> certificate = certify_region(tree, region.x, rho=0.1, n_samples=300)
    >>> certificate.certified, certificate.n_violations
    (True, 0)
    >>> certify_region(tree, [0.2, 0.5], rho=0.1, n_samples=300).certified
    False
    """
    x, index = _point_and_class(model, x, target)
    centre_valid = bool(model_predict(model, x)[0] == index)
    if rho <= 0:
        return Certificate(centre_valid, 0.0, -math.inf, solvers.OPTIMAL, 0, 0, centre_valid)
    ap = adversarial_problem(model, x, rho=rho, norm=norm, target=index, solver=solver, time_limit=time_limit)
    points = x + sample_set(len(x), rho=rho, norm=norm, n_samples=n_samples, random_state=random_state)
    violations = int((model_predict(model, points) != index).sum())
    ok = centre_valid and ap.status == solvers.OPTIMAL and ap.value <= epsilon and violations == 0
    return Certificate(bool(ok), float(rho), float(ap.value), ap.status, n_samples, violations, centre_valid)
