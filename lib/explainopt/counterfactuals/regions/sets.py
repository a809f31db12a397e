"""The uncertainty set ``S = {s : ||s|| <= rho}`` of a robust region (Maragno et al., 2024, eq. 5): its
norms, the dual norm of eq. (69), and points sampled from it."""

from __future__ import annotations

import numpy as np

NORMS = ("linf", "l2")
#: The dual norm's order for each uncertainty norm (l-inf box -> l1, l2 ball -> l2), eq. (69).
DUAL_ORD = {"linf": 1, "l2": 2}


def check_norm(norm: str) -> str:
    """`norm` if it names an uncertainty set, else ValueError."""
    if norm not in NORMS:
        raise ValueError(f"norm={norm!r}: the uncertainty set is 'linf' (box) or 'l2' (ball)")
    return norm


def vector_norm(v, kind: str) -> float:
    """``||v||`` in the norm `kind` (``l1``, ``l2`` or ``linf``)."""
    return float(np.linalg.norm(np.asarray(v, dtype=float), ord={"l1": 1, "l2": 2, "linf": np.inf}[kind]))


def sample_set(n_features: int, *, rho: float, norm: str, n_samples: int, random_state=0) -> np.ndarray:
    """Points of the set ``{s : ||s|| <= rho}``: a third uniform inside, a third on the surface, a third
    at extreme points (box corners; for the ball, the surface again). random_state: a seed or a NumPy
    Generator (``numpy.random.default_rng``).

    Examples
    --------
    >>> S = sample_set(2, rho=0.1, norm="linf", n_samples=9)
    >>> S.shape, float(np.abs(S).max())
    ((9, 2), 0.1)
    """
    rng = np.random.default_rng(random_state)
    k = n_samples // 3
    if norm == "linf":
        inside = rng.uniform(-rho, rho, size=(n_samples - 2 * k, n_features))
        face = rng.uniform(-rho, rho, size=(k, n_features))
        face[np.arange(k), rng.integers(n_features, size=k)] = rho * rng.choice([-1.0, 1.0], size=k)
        corners = rho * rng.choice([-1.0, 1.0], size=(k, n_features))
        return np.vstack([inside, face, corners])
    direction = rng.normal(size=(n_samples, n_features))
    direction /= np.linalg.norm(direction, axis=1, keepdims=True)
    radius = np.concatenate([rho * rng.uniform(size=n_samples - 2 * k) ** (1 / n_features), np.full(2 * k, rho)])
    return direction * radius[:, None]
