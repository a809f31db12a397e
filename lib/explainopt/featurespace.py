"""A dataset's feature spec as a cvxpy decision variable with its constraints.

:func:`feature_space`: binary and categorical columns become binary, discrete columns integer, continuous columns continuous
(one variable per kind, stacked into ``x``); bounds from the spec; every one-hot group sums to one;
``fixed`` features equal the factual, ``increase`` features are at least the factual.

``lower``/``upper`` of the result are the bounds *after* actionability (a fixed feature's box is the
factual's value), so encoders given them prune the splits and neurons that fixed features decide.
:func:`box_space`: free continuous features in a box, for models without a dataset spec.
"""

from __future__ import annotations

from dataclasses import dataclass

import cvxpy as cp
import numpy as np

from .datasets import FeatureSpec


@dataclass
class FeatureSpace:
    """x: affine expression of the n features; constraints: the spec's constraints on x."""

    x: cp.Expression
    constraints: list
    lower: np.ndarray
    upper: np.ndarray
    kinds: np.ndarray


def feature_space(spec: list[FeatureSpec], x0=None) -> FeatureSpace:
    """Variable and constraints for `spec`; `x0` (the factual) is needed for fixed/increase-only features."""
    if not spec:
        raise ValueError("spec is empty: pass a dataset's list of FeatureSpec")
    n = len(spec)
    kinds = np.array([f.kind for f in spec])
    lower = np.array([f.lower for f in spec], dtype=float)
    upper = np.array([f.upper for f in spec], dtype=float)
    parts, index = [], []
    for flags, make in (
        (np.isin(kinds, ["binary", "categorical"]), lambda m: cp.Variable(m, boolean=True, name="x_binary")),
        (kinds == "discrete", lambda m: cp.Variable(m, integer=True, name="x_discrete")),
        (kinds == "continuous", lambda m: cp.Variable(m, name="x_continuous")),
    ):
        idx = np.flatnonzero(flags)
        if idx.size:
            parts.append(make(idx.size))
            index.append(idx)
    order = np.concatenate(index)
    perm = np.empty(n, dtype=int)
    perm[order] = np.arange(n)
    x = cp.hstack(parts)[perm] if len(parts) > 1 else parts[0][perm]
    cons = [x >= lower, x <= upper]
    groups: dict[str, list[int]] = {}
    for j, f in enumerate(spec):
        if f.group is not None:
            groups.setdefault(f.group, []).append(j)
    cons += [cp.sum(x[idx]) == 1 for idx in groups.values() if len(idx) > 1]
    acts = np.array([f.actionability for f in spec])
    if (acts != "free").any():
        if x0 is None:
            raise ValueError("the spec has fixed or increase-only features: pass the factual x0")
        x0 = np.asarray(x0, dtype=float)
        fixed, inc = np.flatnonzero(acts == "fixed"), np.flatnonzero(acts == "increase")
        if fixed.size:
            cons.append(x[fixed] == x0[fixed])
            lower[fixed] = upper[fixed] = x0[fixed]
        if inc.size:
            cons.append(x[inc] >= x0[inc])
            lower[inc] = np.maximum(lower[inc], x0[inc])
    return FeatureSpace(x, cons, lower, upper, kinds)


def box_space(lower, upper, n_features: int) -> FeatureSpace:
    """Free continuous features between `lower` and `upper` (arrays or scalars broadcast to `n_features`)."""
    if lower is None or upper is None:
        raise ValueError("pass spec= or both lower= and upper= (arrays bounding the features)")
    lower = np.broadcast_to(np.asarray(lower, dtype=float), (n_features,)).copy()
    upper = np.broadcast_to(np.asarray(upper, dtype=float), (n_features,)).copy()
    x = cp.Variable(n_features, name="x")
    return FeatureSpace(x, [x >= lower, x <= upper], lower, upper, np.full(n_features, "continuous"))


def box_spec(n_features: int, lower=0.0, upper=1.0) -> list[FeatureSpec]:
    """`n_features` free continuous features between `lower` and `upper` (scalars or arrays) as a
    FeatureSpec list: the feature space of a model without a dataset's spec.

    Examples
    --------
    >>> [(f.name, f.kind, f.lower, f.upper) for f in box_spec(2, upper=[1.0, 5.0])]
    [('x0', 'continuous', 0.0, 1.0), ('x1', 'continuous', 0.0, 5.0)]
    """
    lower = np.broadcast_to(np.asarray(lower, dtype=float), (n_features,))
    upper = np.broadcast_to(np.asarray(upper, dtype=float), (n_features,))
    return [FeatureSpec(f"x{j}", lower=float(lo), upper=float(hi)) for j, (lo, hi) in enumerate(zip(lower, upper))]


def data_spec(X) -> list[FeatureSpec]:
    """The feature types and box of data `X` (an array or a DataFrame, whose column names the specs take)
    as a FeatureSpec list: columns holding only 0 and 1 are binary, other integer-valued columns discrete,
    the rest continuous; each bounded by its minimum and maximum, all free.

    Examples
    --------
    >>> [(f.kind, f.lower, f.upper) for f in data_spec([[0.0, 1.5, 2.0], [1.0, 2.5, 5.0]])]
    [('binary', 0.0, 1.0), ('continuous', 1.5, 2.5), ('discrete', 2.0, 5.0)]
    """
    names = [str(c) for c in X.columns] if hasattr(X, "columns") else None
    data = np.asarray(X, dtype=float)
    if data.ndim != 2 or not len(data) or not np.isfinite(data).all():
        raise ValueError(f"X must be a non-empty matrix of finite values, got shape {data.shape}")
    spec = []
    for j, column in enumerate(data.T):
        kind = "binary" if set(np.unique(column)) <= {0.0, 1.0} else \
            "discrete" if np.all(column == np.round(column)) else "continuous"
        spec.append(FeatureSpec(names[j] if names else f"x{j}", kind=kind, lower=float(column.min()),
                                upper=float(column.max())))
    return spec
