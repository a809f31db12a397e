"""Robust Bayesian Recourse (RBR; Nguyen, Bui and Nguyen, UAI 2022) for any classifier, as its reference code
runs it (``rbr/rbr.py`` and ``rbr/rbr_loss.py``, which Jiang et al. ship in ``junqi-jiang/proplace`` and
call through ``experiments/exputils.run_rbr``).

1. **Boundary point** (:func:`boundary_point`): along the segments from the factual ``x0`` to the
   `n_candidates` training points nearest in l1 that the model labels otherwise, the first of 100 evenly
   spaced points (``linspace(0, 1, 100)``) whose label flips; ``x_b`` is the closest of them (l1).
2. **Samples** (:func:`ball_samples`): `n_samples` points uniform in the l2 ball of radius
   `perturb_radius` around ``x_b`` (Muller's method with ``numpy.random.RandomState(random_state)``, the
   reference code's generator), split by the model's label into favourable ``S1`` and unfavourable ``S0``.
3. **Worst-case likelihoods** (:func:`worst_case_odds`): each sample ``xi`` is a Gaussian kernel of
   ``c = ||x - xi||_2`` whose mean shift and width may move in a ball. Optimistic for ``S0``: ``v >= 0``,
   ``||v||_2 <= eps_op`` minimises ``L_op = log d + (c - v0)^2 / (2 d^2) + (p - 1) log sigma``,
   ``d = v1 + sigma``. Pessimistic for ``S1``: ``u >= 0``, ``||u||_2 <= eps_pe / sqrt(p)`` minimises
   ``L_pe = -log d - (c + sqrt(p) u0)^2 / (2 d^2) - (p - 1) log(f + sigma)``, ``d = u1 + sigma``,
   ``f = sqrt((1e-6 + eps_pe^2 - p u0^2 - u1^2) / (p - 1))``; both by projected gradient steps of
   ``1 / sqrt(1000)`` until the summed loss has not improved for 10 steps (at most 1000). The objective is
   ``F(x) = logsumexp(-L_op) - logsumexp(L_pe)`` with ``u, v`` held at their optima.
4. **Recourse** (:func:`rbr`): gradient steps of ``1 / sqrt(1000)`` on ``F`` from ``x_b``, each projected
   onto the l1 ball of radius ``||x0 - x_b||_1 + delta_plus`` around ``x0``; stop once the iterate reaches
   that radius, when ``F`` has not improved for 10 steps, or after `max_iter` steps. The last iterate is
   the recourse, valid or not.

Defaults are ``run_rbr``'s: ``delta_plus = sigma = eps_op = eps_pe = 1``, 200 samples, radius 0.2,
1000 candidates, 500 steps. Quirks of the reference code, followed here because they are what the paper
ran: the gradient in ``u0`` of the pessimistic problem has the opposite sign of ``dL_pe/du0`` in its
``p u0 / (f (f + sigma))`` term; the recourse is not kept in the feature box (it may leave [0, 1]); the
samples are not either. Where we differ: float64 instead of float32. ``benchmarks/baselines.py
--authors-proplace PATH`` runs the reference code beside this one.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
import torch

from ..encoders import model_predict
from ..validation import check_matrix, check_seed, class_one_factual
from .base import Counterfactual, contract

SOLVER = "pgd"  # projected gradient descent
#: The reference code's step size of every projected-gradient loop, and its patience.
STEP = 1 / np.sqrt(1000.0)
PATIENCE = 10


@dataclass
class RbrResult(Counterfactual):
    """RBR's recourse (fields of :class:`~.base.Counterfactual` first): detail ``valid`` (the model gives
    class 1) or ``not_valid`` (x is still the last iterate); budget: the l1 radius
    ``||x0 - x_b||_1 + delta_plus``; objective: F at x (module docstring); iterations: outer steps taken;
    target: the label of class 1."""

    target: object = None
    budget: float | None = None
    objective: float | None = None
    iterations: int = 0


def boundary_point(model, x0, X_train, *, n_candidates: int = 1000) -> np.ndarray:
    """Step 1 of the module docstring: the closest (l1) first label flip on the segments from `x0` to the
    `n_candidates` nearest training points of the other label."""
    X_train = np.asarray(X_train, float)
    label = model_predict(model, x0[None])[0]
    order = np.argsort(np.abs(X_train - x0).sum(axis=1), kind="stable")
    candidates = X_train[order][model_predict(model, X_train[order]) != label][:n_candidates]
    if not len(candidates):
        raise ValueError("no training point is labelled otherwise than x0 by the model")
    lambdas = np.linspace(0, 1, 100)
    points = (1 - lambdas)[None, :, None] * x0 + lambdas[None, :, None] * candidates[:, None, :]
    flipped = (model_predict(model, points.reshape(-1, x0.size)) != label).reshape(len(candidates), -1)
    first = points[np.arange(len(candidates)), flipped.argmax(axis=1)]  # lambda = 1 always flips
    return first[np.argmin(np.abs(first - x0).sum(axis=1))]


def ball_samples(center, *, radius: float, n: int, random_state=0) -> np.ndarray:
    """`n` points uniform in the l2 ball of `radius` around `center` (Muller's method, as the reference code
    draws them with ``numpy.random.RandomState(random_state)``)."""
    rng = random_state if isinstance(random_state, np.random.RandomState) else np.random.RandomState(random_state)
    d = center.size
    V = rng.randn(n, d)
    V /= np.linalg.norm(V, axis=1, keepdims=True)
    V *= (rng.random_sample(n) ** (1.0 / d))[:, None]
    return V * radius + center


def _project_positive_l2(w, radius: float) -> np.ndarray:
    w = np.maximum(w, 0)
    return w * (radius / np.maximum(radius, np.linalg.norm(w, axis=-1)))[:, None]


def _descend(v, loss_and_grad, project, *, steps: int, stop=None):
    """Projected gradient descent from `v` with step STEP: at most `steps` steps, ending early where
    ``stop(v)`` holds or the loss has not fallen by more than 1e-10 for PATIENCE steps (the authors' rule).
    Returns (v, the last loss computed, the number of losses computed)."""
    best, stable, loss, t = np.inf, 0, np.nan, -1
    for t in range(steps):
        loss, grad = loss_and_grad(v)
        if stop is not None and stop(v):
            break
        v = project(v - STEP * grad)
        stable = stable + 1 if best - loss <= 1e-10 else 0
        if stable >= PATIENCE:
            break
        best = min(best, loss)
    return v, loss, t + 1


def _inner(c, grad_and_loss, radius: float) -> np.ndarray:
    """Projected gradient on the (mean, width) perturbations of every sample at once (module docstring, 3)."""
    w, _, _ = _descend(np.zeros((len(c), 2)), grad_and_loss, lambda w: _project_positive_l2(w, radius), steps=1000)
    return w


def _optimistic(c, *, sigma: float, eps_op: float, p: int) -> np.ndarray:
    def grad_and_loss(v):
        d, m = v[:, 1] + sigma, c - v[:, 0]
        loss = np.log(d) + m ** 2 / (2 * d ** 2) + (p - 1) * np.log(sigma)
        return loss.sum(), np.c_[-m / d ** 2, 1 / d - m ** 2 / d ** 3]
    return _inner(c, grad_and_loss, eps_op)


def _pessimistic_terms(u, c, *, sigma: float, eps_pe: float, p: int):
    d, m = u[..., 1] + sigma, c + np.sqrt(p) * u[..., 0]
    f = ((1e-6 + eps_pe ** 2 - p * u[..., 0] ** 2 - u[..., 1] ** 2) / (p - 1)) ** 0.5  # numpy or torch
    return d, m, f


def _pessimistic(c, *, sigma: float, eps_pe: float, p: int) -> np.ndarray:
    def grad_and_loss(u):
        d, m, f = _pessimistic_terms(u, c, sigma=sigma, eps_pe=eps_pe, p=p)
        loss = -np.log(d) - m ** 2 / (2 * d ** 2) - (p - 1) * np.log(f + sigma)
        g0 = -np.sqrt(p) * m / d ** 2 - p * u[:, 0] / (f * (f + sigma))  # the reference code's sign (docstring)
        return loss.sum(), np.c_[g0, -1 / d + m ** 2 / d ** 3 + u[:, 1] / (f * (f + sigma))]
    return _inner(c, grad_and_loss, eps_pe / np.sqrt(p))


def worst_case_odds(x, S0, S1, *, sigma: float = 1.0, eps_op: float = 1.0, eps_pe: float = 1.0):
    """F(x) of the module docstring (step 3) and its gradient in x (u, v at their optima, held fixed)."""
    p = x.size
    xt = torch.as_tensor(x, dtype=torch.float64).requires_grad_(True)
    c0 = torch.linalg.vector_norm(xt - torch.as_tensor(S0), dim=1)
    c1 = torch.linalg.vector_norm(xt - torch.as_tensor(S1), dim=1)
    v = torch.as_tensor(_optimistic(c0.detach().numpy(), sigma=sigma, eps_op=eps_op, p=p))
    u = torch.as_tensor(_pessimistic(c1.detach().numpy(), sigma=sigma, eps_pe=eps_pe, p=p))
    d0 = v[:, 1] + sigma
    L_op = torch.log(d0) + (c0 - v[:, 0]) ** 2 / (2 * d0 ** 2) + (p - 1) * np.log(sigma)
    d1, m1, f1 = _pessimistic_terms(u, c1, sigma=sigma, eps_pe=eps_pe, p=p)
    L_pe = -torch.log(d1) - m1 ** 2 / (2 * d1 ** 2) - (p - 1) * torch.log(f1 + sigma)
    F = torch.logsumexp(-L_op, 0) - torch.logsumexp(L_pe, 0)
    (grad,) = torch.autograd.grad(F, xt)
    return float(F.detach()), grad.numpy()


def project_l1(v, x0, radius: float) -> np.ndarray:
    """Euclidean projection of `v` onto the l1 ball of `radius` around `x0` (sort-based, Duchi et al. 2008)."""
    w = np.asarray(v, float) - x0
    a = np.abs(w)
    if a.sum() <= radius:
        return x0 + w
    s = np.sort(a)[::-1]
    cs = np.cumsum(s)
    rho = np.nonzero(s * np.arange(1, a.size + 1) > cs - radius)[0][-1]
    theta = (cs[rho] - radius) / (rho + 1.0)
    return x0 + np.sign(w) * np.maximum(a - theta, 0)


def rbr(model, x0, X_train, *, target=None, delta_plus: float = 1.0, sigma: float = 1.0, eps_op: float = 1.0,
        eps_pe: float = 1.0, n_samples: int = 200, perturb_radius: float = 0.2, n_candidates: int = 1000,
        max_iter: int = 500, random_state=10) -> RbrResult:
    """RBR (module docstring) for `model` at `x0`; `X_train`: the points the boundary search starts from
    (the reference code: the model's training rows); `random_state`: the sampling seed (the PROPLACE
    notebooks' ``check_random_state(10)``); `target`: None or class 1 (a factual of class 1 is refused)."""
    start = time.perf_counter()
    check_seed(random_state)
    x0 = class_one_factual(model, x0, method="RBR", target=target, box="none")
    X_train = check_matrix(X_train, "X_train", x0.size)
    x_b = boundary_point(model, x0, X_train, n_candidates=n_candidates)
    S = ball_samples(x_b, radius=perturb_radius, n=n_samples, random_state=random_state)
    labels = model_predict(model, S)
    S0, S1 = S[labels == 0], S[labels == 1]
    if not (len(S0) and len(S1)):
        raise ValueError(f"the {n_samples} samples around the boundary point all have one label; "
                         "widen perturb_radius")
    budget = float(np.abs(x0 - x_b).sum()) + delta_plus
    x, F, iterations = _descend(x_b.copy(), lambda x: worst_case_odds(x, S0, S1, sigma=sigma, eps_op=eps_op, eps_pe=eps_pe),
                                lambda x: project_l1(x, x0, budget), steps=max_iter,
                                stop=lambda x: np.abs(x - x0).sum() >= budget)
    valid = bool(model_predict(model, x[None])[0] == 1)
    return contract(RbrResult(x, "valid" if valid else "not_valid", time.perf_counter() - start, SOLVER,
                              budget=budget, objective=F, iterations=iterations), model, x0, 1)


__all__ = ["RbrResult", "SOLVER", "ball_samples", "boundary_point", "project_l1", "rbr", "worst_case_odds"]
