"""ROAR: robust algorithmic recourse (Upadhyay, Joshi and Lakkaraju, NeurIPS 2021) for any classifier.

ROAR linearises the model around the factual ``x0`` (a LIME surrogate, :func:`lime_surrogate`) and finds
recourse that stays valid when the surrogate's weights and bias move by at most ``delta_max`` each
(an l_inf ball):

    min_{x'}  max_{||(dw, db)||_inf <= delta_max}  BCE(sigmoid((w + dw) . x' + b + db), 1) + lam ||x' - x0||_1 .

Inner problem: BCE(sigmoid(s), 1) is decreasing in the score s, so the worst shift minimises the score:
``dw = -delta_max sign(x')``, ``db = -delta_max`` (the authors solve the LP of their Algorithm 1 on the
gradient, whose solution is this vertex); the robust score is ``w . x' + b - delta_max (||x'||_1 + 1)``.
Outer problem: Adam on ``x'`` (projected onto the box), alternating with the inner problem, until the
loss changes by less than ``tol`` (:func:`roar_recourse`, on the gradient core of :mod:`.gradient`).
Hyperparameter: the cost weight ``lam`` is taken from a decreasing schedule, the first (largest, i.e.
cheapest) ``lam`` whose recourse the *model* classifies as the target class (:func:`roar`).

The surrogate (:func:`lime_surrogate`) follows LIME's tabular sampler without discretisation: Gaussian
samples with the training data's mean and standard deviation (the factual as the first sample), labelled
by the model, weighted by the exponential kernel ``exp(-d^2 / width^2)`` of the standardised Euclidean
distance to the factual (``width = 0.75 sqrt(d)``), and fitted by a weighted logistic regression in the
original feature space (LIME fits in the standardised space; ROAR's code then applies those coefficients
to unstandardised inputs, which we do not copy).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
import torch
from sklearn.linear_model import LogisticRegression

from ..encoders import model_predict
from ..validation import check_matrix, check_positive, check_seed, class_one_factual
from .base import Counterfactual, contract
from .gradient import GRADIENT_SOLVER, descend, multiplier_rounds

LAMBDAS = (1.0, 0.5, 0.25, 0.1, 0.05, 0.025, 0.01, 0.005, 0.001)  # cost weights tried, cheapest recourse first


@dataclass
class LinearSurrogate:
    """A local linear model ``score(x) = w . x + b`` (class 1 iff score >= 0) and its fidelity: the
    weighted share of the surrogate's samples on which it agrees with the model."""

    w: np.ndarray
    b: float
    fidelity: float

    def score(self, X) -> np.ndarray:
        return np.atleast_2d(np.asarray(X, float)) @ self.w + self.b


@dataclass
class RoarResult(Counterfactual):
    """ROAR's recourse: detail ``valid`` (the model gives the target class), ``not_valid`` (no lam of the
    schedule gave a valid recourse; x is the last one tried); lam: the cost weight used; surrogate: the
    local linear model; robust_score: the surrogate's worst-case score at x over the l_inf ball."""

    lam: float | None = None
    surrogate: LinearSurrogate | None = None
    robust_score: float | None = None


def lime_surrogate(model, x0, X_train, *, n_samples: int = 5000, kernel_width: float | None = None,
                   random_state=0) -> LinearSurrogate:
    """LIME-style local logistic surrogate of `model` (a classifier of :func:`~explainopt.encoders.model_predict`)
    around `x0` (module docstring)."""
    X_train = np.atleast_2d(np.asarray(X_train, float))
    x0 = np.asarray(x0, float).ravel()
    if X_train.shape[1] != x0.size:
        raise ValueError(f"x0 has {x0.size} features, X_train {X_train.shape[1]}")
    rng = np.random.default_rng(random_state)
    mean, std = X_train.mean(axis=0), X_train.std(axis=0)
    std = np.where(std > 0, std, 1.0)
    Z = np.vstack([x0, mean + std * rng.standard_normal((n_samples - 1, x0.size))])
    width = 0.75 * np.sqrt(x0.size) if kernel_width is None else kernel_width
    dist = np.linalg.norm((Z - x0) / std, axis=1)
    weights = np.exp(-dist ** 2 / width ** 2)
    labels = model_predict(model, Z)
    if labels.min() == labels.max():  # one class only: a flat surrogate of that class
        return LinearSurrogate(np.zeros(x0.size), 1.0 if labels[0] == 1 else -1.0, 1.0)
    fit = LogisticRegression(C=1e3, max_iter=2000).fit(Z, labels, sample_weight=weights)
    w, b = fit.coef_[0].astype(float), float(fit.intercept_[0])
    agree = ((Z @ w + b >= 0).astype(int) == labels)
    return LinearSurrogate(w, b, float(np.average(agree, weights=weights)))


def worst_shift(x, delta_max: float) -> tuple[np.ndarray, float]:
    """The inner maximisation of ROAR at x: the shift (dw, db) in the l_inf ball of radius `delta_max`
    that lowers the linear score most (hence raises the BCE towards class 1 most)."""
    x = np.asarray(x, float)
    return -delta_max * np.sign(x), -delta_max


def robust_score(surrogate: LinearSurrogate, x, delta_max: float) -> float:
    """The surrogate's lowest score at x over shifts of at most `delta_max`: w . x + b - delta_max (||x||_1 + 1)."""
    x = np.asarray(x, float)
    return float(surrogate.score(x)[0] - delta_max * (np.abs(x).sum() + 1))


def roar_loss(surrogate: LinearSurrogate, x0, *, delta_max: float, lam: float):
    """ROAR's loss at x' for the cost weight `lam`: the worst shift at x' (:func:`worst_shift`), then
    ``BCE(sigmoid((w + dw) . x' + b + db), 1) + lam ||x' - x0||_1`` (a loss of :func:`~.gradient.descend`)."""
    x0t = torch.as_tensor(np.asarray(x0, float))
    w = torch.as_tensor(surrogate.w)

    def at(xp):
        dw, db = worst_shift(xp.detach().numpy(), delta_max)
        score = (w + torch.as_tensor(dw)) @ xp + surrogate.b + db
        return torch.nn.functional.softplus(-score) + lam * (xp - x0t).abs().sum()  # BCE(sigmoid(s), 1)
    return at


#: ROAR's Adam: the AMSGrad variant, as in the authors' code.
AMSGRAD = True


def roar_recourse(surrogate: LinearSurrogate, x0, *, delta_max: float, lam: float, learning_rate: float = 0.01,
                  tol: float = 1e-4, steps: int = 3000, lower=0.0, upper=1.0) -> np.ndarray:
    """ROAR's Algorithm 1 for one cost weight `lam`: alternate the worst shift (:func:`worst_shift`) and an
    Adam step on :func:`roar_loss` (x' kept in [lower, upper]; :func:`~.gradient.descend`) until the loss
    moves by less than `tol` (at most `steps` steps)."""
    return descend(roar_loss(surrogate, x0, delta_max=delta_max, lam=lam), x0, lower=lower, upper=upper,
                   learning_rate=learning_rate, steps=steps, tol=tol, amsgrad=AMSGRAD)


def roar(model, x0, X_train, *, delta_max: float, target=None, lambdas=LAMBDAS, n_samples: int = 5000,
         random_state=0, learning_rate: float = 0.01, tol: float = 1e-4, steps: int = 3000) -> RoarResult:
    """ROAR with a LIME surrogate: the recourse of the first cost weight in `lambdas` (largest first)
    that `model` classifies as 1 (module docstring; the rounds of :func:`~.gradient.multiplier_rounds`);
    a factual of class 1 is refused. Inputs in [0, 1].

    Examples
    --------
    >>> from sklearn.linear_model import LogisticRegression
    >>> X = np.array([[0.1, 0.2], [0.2, 0.1], [0.8, 0.9], [0.9, 0.8]] * 10)
    >>> model = LogisticRegression().fit(X, [0, 0, 1, 1] * 10)
    >>> ce = roar(model, X[0], X, delta_max=0.01, n_samples=500)
    >>> ce.status, ce.valid
    ('feasible', True)
    """
    start = time.perf_counter()
    check_seed(random_state)
    check_positive(delta_max, "delta_max", strict=False)
    x0 = class_one_factual(model, x0, method="ROAR", target=target, default=(0.0, 1.0))
    X_train = check_matrix(X_train, "X_train", x0.size)
    surrogate = lime_surrogate(model, x0, X_train, n_samples=n_samples, random_state=random_state)
    found = multiplier_rounds(lambda lam: roar_loss(surrogate, x0, delta_max=delta_max, lam=lam),
                              lambda xp: model_predict(model, xp[None])[0] == 1, x0, lambdas,
                              learning_rate=learning_rate, steps=steps, tol=tol, amsgrad=AMSGRAD)
    xp = found.x
    return contract(RoarResult(xp, "valid" if found.accepted else "not_valid", time.perf_counter() - start,
                               GRADIENT_SOLVER, lam=found.lam, surrogate=surrogate,
                               robust_score=None if xp is None else robust_score(surrogate, xp, delta_max)),
                    model, x0, 1)


__all__ = ["GRADIENT_SOLVER", "LAMBDAS", "LinearSurrogate", "RoarResult", "lime_surrogate", "roar", "roar_loss",
           "roar_recourse", "robust_score", "worst_shift"]
