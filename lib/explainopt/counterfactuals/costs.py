"""The costs every counterfactual pays, whatever method produced it: distance, sparsity, plausibility.

* :func:`l1`, the l1 distance ``sum |x - x0|``, and :func:`l1_distance`, the normalised one
  ``sum |x - x0| / d`` (as PROPLACE reports it);
* :func:`sparsity`, the number of features changed by more than a tolerance, a one-hot group counting
  once when the groups are given;
* :class:`LofScorer`, plausibility as the local outlier factor with respect to the target-class
  training points.

The methods report their counterfactuals' costs with these functions, and chapter 6 measures every
method's counterfactual with them.
"""

from __future__ import annotations

import numpy as np
from sklearn.neighbors import LocalOutlierFactor


def _vector(x) -> np.ndarray:
    return np.asarray(x, dtype=float).ravel()


def _rows(X) -> np.ndarray:
    return np.atleast_2d(np.asarray(X, dtype=float))


def l1(x, x0) -> float:
    """l1 distance: ``sum |x - x0|``."""
    return float(np.abs(_vector(x) - _vector(x0)).sum())


def l1_distance(x, x0) -> float:
    """Normalised l1 distance: ``sum |x - x0| / d`` (d features)."""
    x, x0 = _vector(x), _vector(x0)
    return float(np.abs(x - x0).sum() / x0.size)


def sparsity(x, x0, *, tol: float, groups=None) -> int:
    """Number of features that `x` changes by more than `tol` from `x0`. `groups`: one entry per feature,
    the name of its one-hot group (None for a feature of its own); the columns of a group that change
    count once."""
    x, x0 = _vector(x), _vector(x0)
    if not (np.isfinite(x).all() and np.isfinite(x0).all()):
        raise ValueError("x or x0 contains NaN or infinite values")
    changed = np.abs(x - x0) > tol
    if groups is None:
        return int(changed.sum())
    if len(groups) != x0.size:
        raise ValueError(f"groups has {len(groups)} entries for {x0.size} features")
    alone = sum(1 for c, g in zip(changed, groups) if c and g is None)
    return alone + len({g for c, g in zip(changed, groups) if c and g is not None})


class LofScorer:
    """Local outlier factor of points with respect to `X_target` (the target-class training points;
    `n_neighbors` 10: the 10-LOF, novelty detection): about 1 for inliers, larger (above ~1.5) for
    outliers."""

    def __init__(self, X_target, n_neighbors: int = 10):
        self.lof = LocalOutlierFactor(n_neighbors=n_neighbors, novelty=True).fit(_rows(X_target))

    def __call__(self, X) -> np.ndarray:
        return -self.lof.score_samples(_rows(X))


__all__ = ["LofScorer", "l1", "l1_distance", "sparsity"]
