"""Prototype-guided counterfactuals (Van Looveren and Klaise, ECML PKDD 2021) and their Delta-robust
variant Proto-R (Jiang et al., AAAI 2023), for ReLU networks with a logit output.

:func:`proto_counterfactual` minimises, without an autoencoder (the k-d tree variant),

    c L_pred(x') + beta ||x' - x0||_1 + ||x' - x0||_2^2 + theta ||x' - proto||_2^2,

where ``L_pred = max(0, p_0(x') - p_1(x') + kappa)`` (the hinge on the class probabilities) and the
prototype is the mean of the `k` nearest training points that the model predicts as the target class
(``k_type='mean'`` of the authors' calls). The optimiser is the elastic-net one of the method: gradient
steps on the smooth terms with a polynomially decaying step, each followed by the soft-threshold of the
l1 term (ISTA), inside the feature box; `c` is searched over `c_steps` rounds (halved towards the last
valid c when a valid CE was found, times ten otherwise). The CE kept is the valid iterate with the
smallest elastic-net distance ``beta ||d||_1 + ||d||_2^2``.

:func:`proto_r` is Proto-R: the base method, then, while its CE fails the interval test of Definition 7
(:func:`~explainopt.encoders.interval_lower` >= 0) with the method's own `delta`, re-runs with larger
``c`` (+10) and smaller ``theta`` (/2), or, when no CE was found, ``c`` x2, ``theta`` /2, ``beta`` /2, at most
`max_rounds` times; it returns the first Delta-robust CE, else the CE with the highest interval lower bound
(the schedule of the authors' code for Jiang et al. 2023). With the hinge's confidence ``kappa = 0`` the base
method keeps its first valid iterate, next to the decision boundary, whatever ``c`` and ``theta`` are, so the
schedule alone rarely reaches Delta-robustness; by default each round also raises ``kappa`` by 0.1 (the base
method's own knob for a margin; ``kappa_step=0`` gives the authors' schedule).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
from sklearn.neighbors import KDTree

from ..encoders import interval_lower, model_predict, network_layers
from ..validation import check_matrix, check_positive, class_one_factual
from .base import Counterfactual, contract

SOLVER = "ista"  # the method's own proximal gradient optimiser


@dataclass
class ProtoResult(Counterfactual):
    """A prototype-guided CE (fields of :class:`~.base.Counterfactual` first; x None without a valid one);
    detail ``valid`` / ``not_found`` for the base method, ``robust`` / ``not_robust`` / ``not_found`` for
    Proto-R; the prototype, the hyperparameters of the run that produced x, the interval lower bound at x
    and the rounds used."""

    prototype: np.ndarray | None = None
    c: float | None = None
    theta: float | None = None
    beta: float | None = None
    interval_lower: float | None = None
    rounds: int = 0


def logit_and_gradient(layers, x) -> tuple[float, np.ndarray]:
    """The network's logit at x and its gradient with respect to x (backpropagation through the ReLUs)."""
    h, masks = np.asarray(x, float), []
    for W, b in layers[:-1]:
        z = W @ h + b
        masks.append(z > 0)
        h = np.maximum(z, 0)
    W, b = layers[-1]
    out = float((W @ h + b)[0])
    g = W[0].copy()
    for (Wk, _), mask in zip(reversed(layers[:-1]), reversed(masks)):
        g = (g * mask) @ Wk
    return out, g


def prototype(model, x0, X_train, *, target: int = 1, k: int = 20) -> np.ndarray:
    """The mean of the `k` nearest (Euclidean) training points predicted as `target` by `model`."""
    X_train = np.atleast_2d(np.asarray(X_train, float))
    candidates = X_train[model_predict(model, X_train) == target]
    if not len(candidates):
        raise ValueError(f"no training point is predicted as class {target}")
    _, idx = KDTree(candidates).query(np.asarray(x0, float)[None], k=min(k, len(candidates)))
    return candidates[idx[0]].mean(axis=0)


def proto_counterfactual(model, x0, proto, *, c: float = 10.0, beta: float = 0.1, theta: float = 10.0,
                         kappa: float = 0.0, max_iterations: int = 1000, learning_rate: float = 1e-2, c_steps: int = 3,
                         lower=0.0, upper=1.0) -> ProtoResult:
    """The base method for class 1 towards `proto` (module docstring)."""
    start = time.perf_counter()
    layers = network_layers(model)
    x0 = np.asarray(x0, float).ravel()
    proto = np.asarray(proto, float).ravel()
    lo, hi = np.broadcast_to(lower, x0.shape), np.broadcast_to(upper, x0.shape)
    best, best_dist, best_c = None, np.inf, None
    c_lb, c_ub = 0.0, 1e10
    for _ in range(c_steps):
        x, found = x0.copy(), False
        logit, g_logit = logit_and_gradient(layers, x)
        for it in range(max_iterations):
            step = learning_rate * (1 - it / max_iterations) ** 0.5
            p1 = 1 / (1 + np.exp(-logit))
            grad = 2 * (x - x0) + 2 * theta * (x - proto)
            if (1 - p1) - p1 + kappa > 0:  # the hinge is active: d/dx (1 - 2 p1) = -2 p1 (1 - p1) dlogit/dx
                grad = grad - c * 2 * p1 * (1 - p1) * g_logit
            d = x - step * grad - x0
            d = np.sign(d) * np.maximum(np.abs(d) - step * beta, 0)  # soft-threshold: the l1 term
            x = np.clip(x0 + d, lo, hi)
            logit, g_logit = logit_and_gradient(layers, x)
            if logit > 0:
                dist = beta * np.abs(x - x0).sum() + ((x - x0) ** 2).sum()
                found = True
                if dist < best_dist:
                    best, best_dist, best_c = x.copy(), dist, c
        if found:
            c_ub = min(c_ub, c)
            c = (c_lb + c_ub) / 2
        else:
            c_lb = max(c_lb, c)
            c = (c_lb + c_ub) / 2 if c_ub < 1e9 else c * 10
    status = "valid" if best is not None else "not_found"
    return ProtoResult(best, status, time.perf_counter() - start, SOLVER, prototype=proto, c=best_c, theta=theta,
                       beta=beta)


def proto_r(model, x0, X_train, *, delta: float, target=None, k: int = 20, c: float = 10.0, theta: float = 10.0,
            beta: float = 0.1, kappa_step: float = 0.1, max_rounds: int = 10, **options) -> ProtoResult:
    """Proto-R: the base method re-run with the hyperparameter schedule of the module docstring until its
    CE is Delta-robust by Definition 7 (interval lower bound >= 0 with `delta`); `kappa_step` > 0 also
    raises the hinge's confidence kappa by that much per round (capped at 0.9; 0 = the authors' schedule).
    Class 1 only (a factual of class 1 is refused), in the box ``lower``/``upper`` of `options` (default [0, 1]).

    Examples
    --------
    >>> from sklearn.neural_network import MLPClassifier
    >>> X = np.array([[0.1, 0.2], [0.2, 0.1], [0.8, 0.9], [0.9, 0.8]] * 10)
    >>> net = MLPClassifier((4,), max_iter=2000, random_state=0).fit(X, [0, 0, 1, 1] * 10)
    >>> ce = proto_r(net, X[0], X, delta=0.01)
    >>> ce.status, ce.valid
    ('feasible', True)
    """
    start = time.perf_counter()
    check_positive(delta, "delta", strict=False)
    x0 = class_one_factual(model, x0, method="Proto-R", target=target, lower=options.get("lower", 0.0),
                           upper=options.get("upper", 1.0), families=("network",))
    X_train = check_matrix(X_train, "X_train", x0.size)
    proto = prototype(model, x0, X_train, k=k)
    best, best_bound, best_run = None, -np.inf, None
    rounds, kappa = 0, 0.0
    for rounds in range(max_rounds + 1):
        run = proto_counterfactual(model, x0, proto, c=c, theta=theta, beta=beta, kappa=kappa, **options)
        if run.x is None:
            c, theta, beta = 2 * c, theta / 2, beta / 2
            continue
        bound = float(interval_lower(model, run.x, delta=delta)[0])
        if bound > best_bound:
            best, best_bound, best_run = run.x, bound, run
        if bound >= 0:
            break
        c, theta, kappa = c + 10, theta / 2, min(kappa + kappa_step, 0.9)
    status = "not_found" if best is None else ("robust" if best_bound >= 0 else "not_robust")
    return contract(ProtoResult(best, status, time.perf_counter() - start, SOLVER, prototype=proto,
                                c=None if best_run is None else best_run.c,
                                theta=None if best_run is None else best_run.theta,
                                beta=None if best_run is None else best_run.beta,
                                interval_lower=None if best is None else best_bound, rounds=rounds + 1), model, x0, 1)


__all__ = ["ProtoResult", "SOLVER", "logit_and_gradient", "proto_counterfactual", "proto_r", "prototype"]
