"""The domain box of Algorithm 1: an unbounded side of the feature domain closed without changing the
optimum (tree models: just past every split threshold; ReLU networks: at a reach, or at the distance of
a robust point found by interval propagation, :func:`network_distance_bound`)."""

from __future__ import annotations

import math

import numpy as np

from ...encoders.networks import forward, network_layers
from .boxes import TreeBoxes
from .sets import DUAL_ORD, vector_norm

#: How far past the farthest split threshold (plus rho) an unbounded side of a tree model's domain is
#: closed (absolute, and relative to the threshold): more than the encoders' split margins.
TREE_DOMAIN_PAD = 1e-3


def tree_domain(boxes: TreeBoxes, x0, lower, upper, *, rho: float) -> tuple[np.ndarray, np.ndarray]:
    """Close the infinite sides of a tree model's domain without changing the optimum of Algorithm 1.

    Each infinite upper side of feature f becomes ``max(x0_f, t_f + rho + pad)`` with ``t_f`` the largest
    split threshold on f (lower sides alike with the smallest threshold; a feature no split uses is
    fixed at ``x0_f``). Exact: clipping any robust x into this box keeps ``x_f + s_f`` on the same side
    of every split for every ``||s|| <= rho`` (``|s_f| <= rho`` in both norms), so every point of its
    set stays in the same leaves, and it moves each coordinate towards ``x0_f``, so the distance does
    not grow: some optimal region lies in the box.
    """
    finite_lo = [np.where(np.isfinite(lo), lo, np.nan) for lo in boxes.lo]
    finite_hi = [np.where(np.isfinite(hi), hi, np.nan) for hi in boxes.hi]
    every = np.vstack(finite_lo + finite_hi)
    t_min, t_max = np.fmin.reduce(every, axis=0), np.fmax.reduce(every, axis=0)  # NaN: no split uses it
    unused = np.isnan(t_min)
    pad_lo = rho + TREE_DOMAIN_PAD * (1 + np.abs(t_min))
    pad_hi = rho + TREE_DOMAIN_PAD * (1 + np.abs(t_max))
    lo = np.where(np.isfinite(lower), lower, np.where(unused, x0, np.minimum(x0, t_min - pad_lo)))
    hi = np.where(np.isfinite(upper), upper, np.where(unused, x0, np.maximum(x0, t_max + pad_hi)))
    return np.minimum(lo, upper), np.maximum(hi, lower)


def tree_model_domain(boxes: TreeBoxes, x0, lower, upper, *, rho: float, reach: float, bound: float):
    """:func:`tree_domain` (exact: `reach` and `bound` are not needed)."""
    return tree_domain(boxes, x0, lower, upper, rho=rho)


def network_domain(boxes, x0, lower, upper, *, rho: float, reach: float,
                   bound: float = math.inf) -> tuple[np.ndarray, np.ndarray]:
    """The infinite sides of a network's domain closed at ``x0 -+ reach`` (see
    :func:`~explainopt.counterfactuals.regions.robust_region`), and every side within ``x0 -+ bound`` for
    an upper bound on the optimum (every point as close as the optimum is in that box:
    ``||x - x0||_inf <= d(x, x0)``; the robust point that gave the bound too)."""
    lo = np.where(np.isfinite(lower), lower, np.minimum(x0, upper) - reach)
    hi = np.where(np.isfinite(upper), upper, np.maximum(x0, lower) + reach)
    if np.isfinite(bound):
        lo, hi = np.maximum(lo, x0 - bound), np.minimum(hi, x0 + bound)
    return lo, hi


#: Steps along each direction from x0 at which :func:`network_distance_bound` tries a point: a geometric
#: grid of lengths (l2 norm of the step) from 1e-3 to about 10.
BOUND_STEPS = 1e-3 * 1.1 ** np.arange(100)


def network_distance_bound(layers, x0, lower, upper, *, rho: float, norm: str, target: int, objective: str,
                           margin: float, through=None) -> tuple[float, np.ndarray | None]:
    """An upper bound on the optimum of Algorithm 1 for a ReLU network: the distance from `x0` of the
    closest point found whose whole set ``x + S`` (first layer exactly, eq. 69, then interval bound
    propagation) is `target` by `margin` -- a robust point, so the optimum is at most that far.
    The points tried lie on rays from x0 along the logit's gradient at x0 (its direction, its signs
    and its largest coordinate), clipped to the domain, or with `through` (a point, e.g. a master
    solution) on the ray from x0 through it, 1% apart past it; ``(inf, None)`` when none is proven
    robust."""
    x0 = np.asarray(x0, dtype=float)
    if through is not None:
        step = np.asarray(through, dtype=float) - x0
        length = np.linalg.norm(step)
        if not length > 0:
            return math.inf, None
        return _robust_on_rays(layers, x0, lower, upper, step[None] / length, length * (1 + 0.01 * np.arange(300)),
                               rho=rho, norm=norm, target=target, objective=objective, margin=margin)
    sign = 1.0 if target == 1 else -1.0
    _, zs = forward(layers, x0[None], preactivations=True)
    g = layers[-1][0][0]
    for (W, _), z in zip(layers[-2::-1], zs[-2::-1]):  # back through the active ReLUs
        g = (g * (z[0] > 0)) @ W
    g = sign * g
    if not np.any(g):
        return math.inf, None
    k = int(np.argmax(np.abs(g)))
    directions = np.vstack([g / np.linalg.norm(g), np.sign(g) / np.sqrt(len(g)), np.eye(len(g))[k] * np.sign(g[k])])
    return _robust_on_rays(layers, x0, lower, upper, directions, BOUND_STEPS, rho=rho, norm=norm, target=target,
                           objective=objective, margin=margin)


def network_model_bound(model, x0, lower, upper, **options) -> tuple[float, np.ndarray | None]:
    """:func:`network_distance_bound` for a network model (its layers read by
    :func:`explainopt.encoders.network_layers`)."""
    return network_distance_bound(network_layers(model), x0, lower, upper, **options)


def _robust_on_rays(layers, x0, lower, upper, directions, steps, *, rho, norm, target, objective, margin):
    """The closest of the points ``x0 + step * direction`` (clipped to the domain) whose set
    ``{p + s : ||s|| <= rho}`` interval propagation proves `target` by `margin`: (its distance, it), or
    ``(inf, None)``."""
    points = np.clip(x0 + steps[:, None, None] * directions[None], lower, upper).reshape(-1, len(x0))
    W, b = layers[0]  # the first layer exactly over the set: W p + b -+ rho ||W_j||_* (eq. 69's dual norm)
    half = rho * np.linalg.norm(W, ord=DUAL_ORD[norm], axis=1)
    l, u = points @ W.T + b - half, points @ W.T + b + half
    for W, b in layers[1:]:  # then interval bound propagation, one row per point
        lo, hi = np.maximum(l, 0), np.maximum(u, 0)
        l = lo @ np.maximum(W, 0).T + hi @ np.minimum(W, 0).T + b
        u = hi @ np.maximum(W, 0).T + lo @ np.minimum(W, 0).T + b
    slack = 1e-9 * (1 + np.abs(l[:, 0]) + np.abs(u[:, 0]))  # against rounding in the propagation
    robust = l[:, 0] >= margin + slack if target == 1 else u[:, 0] <= -margin - slack
    if not robust.any():
        return math.inf, None
    dist = np.array([vector_norm(p - x0, objective) for p in points[robust]])
    best = int(np.argmin(dist))
    return float(dist[best]), points[robust][best]
