"""Delta-robust baselines of PROPLACE's Table 1 (Jiang et al. 2023) for ReLU networks on inputs in [0, 1].

* :func:`milp_r` -- MILP-R (Jiang et al. 2023a): nearest l1 counterfactual by MILP with a logit margin
  eps, raised step by step until the interval test (with its own delta) passes.
* :func:`robx` -- RobX (Dutta et al. 2022): from the nearest counterfactual, the nearest training point
  with counterfactual stability >= tau (mean minus std of the class-1 probability over K Gaussian
  samples), then a line search back towards the nearest counterfactual keeping stability >= tau.

The table's gradient baselines, Wachter et al. and the ROAR-style recourse, need torch and live in
:mod:`.gradient_baselines`; these two need none. Each returns a :class:`~.base.Counterfactual` (x None when none was
found). Both search class 1 (the favourable class of the papers) for a network on inputs in [0, 1]: `x0`
must lie there, and a factual already of class 1 is refused
(:func:`~explainopt.validation.class_one_factual`).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from ..encoders import delta_robust, model_output, model_predict
from ..validation import check_matrix, check_positive, check_seed, class_one_factual, target_label
from .base import Counterfactual, contract
from .nearest import nearest_counterfactual


@dataclass
class MilpRResult(Counterfactual):
    """MILP-R's counterfactual: the last nearest counterfactual found (status ``robust`` when it passed
    the interval test, ``not_robust`` when the steps ran out, else the failing solver status); eps: the
    logit margin that made it robust (None otherwise). detail: the status above."""

    eps: float | None = None
    robust: bool = False


def milp_r(model, x0, *, delta: float, target=None, eps0: float = 0.02, step: float = 0.2, max_steps: int = 25,
           solver=None, time_limit=None) -> MilpRResult:
    """MILP-R with its own `delta` (the paper's delta_target): margins eps0, eps0 + step, ... until the
    nearest l1 counterfactual in [0, 1] is Delta-robust.

    Examples
    --------
    >>> from sklearn.neural_network import MLPClassifier
    >>> X = np.array([[0.1, 0.2], [0.2, 0.1], [0.8, 0.9], [0.9, 0.8]] * 10)
    >>> net = MLPClassifier((4,), max_iter=2000, random_state=0).fit(X, [0, 0, 1, 1] * 10)
    >>> ce = milp_r(net, X[0], delta=0.01)
    >>> ce.status, ce.detail, ce.valid
    ('feasible', 'robust', True)
    """
    if max_steps < 1:
        raise ValueError(f"max_steps must be at least 1, got {max_steps!r}")
    check_positive(delta, "delta", strict=False)
    start = time.perf_counter()
    x0 = class_one_factual(model, x0, method="MILP-R", target=target, default=(0.0, 1.0), families=("network",),
                           solver=solver, time_limit=time_limit)
    last = None
    for s in range(max_steps):  # every step solves the same model (only eps moves): one solver names them all
        eps = eps0 + s * step
        res = nearest_counterfactual(model, x0, lower=np.zeros_like(x0), upper=np.ones_like(x0), norm="l1",
                                     target=target_label(model, 1), margin=eps, solver=solver, time_limit=time_limit)
        if res.x is None:
            break
        last = np.clip(res.x, 0, 1)
        if delta_robust(model, last, delta=delta)[0]:
            return contract(MilpRResult(last, "robust", time.perf_counter() - start, res.solver,
                                        fallback_from=res.fallback_from, eps=eps, robust=True), model, x0, 1)
    status = "not_robust" if last is not None else res.detail
    return contract(MilpRResult(last, status, time.perf_counter() - start, res.solver, fallback_from=res.fallback_from),
                    model, x0, 1)


def stability(model, X, *, sigma: float = 0.1, K: int = 1000, random_state=0) -> np.ndarray:
    """Counterfactual stability of RobX: mean - std of the class-1 probability over K samples N(x, sigma^2)."""
    rng = np.random.default_rng(random_state)
    X = np.atleast_2d(np.asarray(X, float))
    out = np.empty(len(X))
    for i, x in enumerate(X):
        p = 1 / (1 + np.exp(-model_output(model, x + sigma * rng.standard_normal((K, x.size)))))
        out[i] = p.mean() - p.std()
    return out


def robx(model, x0, X_train, *, target=None, sigma: float = 0.1, K: int = 1000, tau: float = 0.5, n_line: int = 20,
         random_state=0, base=None, solver=None) -> Counterfactual:
    """RobX over the training points predicted class 1; `base` is the nearest CE (computed if None).

    detail: ``line_search`` (a point between the base CE and the stable training point),
    ``training_point`` (the stable training point itself), ``no_stable_point``, or the status of the
    nearest-CE solve that found no base.

    Examples
    --------
    >>> from sklearn.neural_network import MLPClassifier
    >>> X = np.array([[0.1, 0.2], [0.2, 0.1], [0.8, 0.9], [0.9, 0.8]] * 10)
    >>> net = MLPClassifier((4,), max_iter=2000, random_state=0).fit(X, [0, 0, 1, 1] * 10)
    >>> ce = robx(net, X[0], X, K=100)
    >>> ce.status, ce.valid
    ('feasible', True)
    """
    start = time.perf_counter()
    check_seed(random_state)
    x0 = class_one_factual(model, x0, method="RobX", target=target, default=(0.0, 1.0), families=("network",),
                           solver=solver)
    X_train = check_matrix(X_train, "X_train", x0.size)
    nearest = None
    if base is None:
        nearest = nearest_counterfactual(model, x0, lower=np.zeros_like(x0), upper=np.ones_like(x0),
                                         target=target_label(model, 1), solver=solver)
        base = nearest.x

    def found(x, status):  # the solver is the nearest-CE solve's (none when `base` was given)
        return contract(Counterfactual(x, status, time.perf_counter() - start, nearest.solver if nearest else "",
                                       fallback_from=nearest.fallback_from if nearest else None), model, x0, 1)

    if base is None:
        return found(None, nearest.detail)
    cand = X_train[model_predict(model, X_train) == 1]
    order = np.argsort(np.abs(cand - base).sum(axis=1))
    target = None
    for first in range(0, len(order), 50):
        block = cand[order[first:first + 50]]
        ok = np.flatnonzero(stability(model, block, sigma=sigma, K=K, random_state=random_state) >= tau)
        if ok.size:
            target = block[ok[0]]
            break
    if target is None:
        return found(None, "no_stable_point")
    for alpha in np.linspace(0, 1, n_line + 1):  # from the base CE towards the stable training point
        xp = (1 - alpha) * base + alpha * target
        if model_predict(model, xp[None])[0] == 1 and \
                stability(model, xp, sigma=sigma, K=K, random_state=random_state)[0] >= tau:
            return found(xp, "line_search")
    return found(target, "training_point")


__all__ = ["MilpRResult", "milp_r", "robx", "stability"]
