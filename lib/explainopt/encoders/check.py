"""Round trip of an encoding: fix the input, solve, compare with the model's own output.

Used by the tests and by the encoders appendix, so that what the book reports is what the tests assert.
"""

from __future__ import annotations

import cvxpy as cp
import numpy as np
import pandas as pd
from sklearn.ensemble import GradientBoostingClassifier, IsolationForest
from sklearn.tree import DecisionTreeClassifier

from .. import solvers
from .base import encode, model_output
from .trees import chosen_leaves


def sample_points(X, n: int, lower, upper, random_state=None) -> np.ndarray:
    """A third data rows, a third averages of two rows, a third uniform in the box [lower, upper]."""
    rng = np.random.default_rng(random_state)
    X = np.asarray(X, dtype=float)
    k = n // 3
    rows = X[rng.choice(len(X), k)]
    pairs = (X[rng.choice(len(X), k)] + X[rng.choice(len(X), k)]) / 2
    uniform = rng.uniform(np.broadcast_to(lower, X.shape[1]), np.broadcast_to(upper, X.shape[1]),
                          (n - 2 * k, X.shape[1]))
    return np.vstack([rows, pairs, uniform])


def applied_leaves(model, X) -> np.ndarray | None:
    """(n_points, n_trees) leaf ids from scikit-learn's own ``apply()``; None for models without trees."""
    if isinstance(model, DecisionTreeClassifier):
        return model.apply(X)[:, None]
    if isinstance(model, GradientBoostingClassifier):
        return model.apply(X)[:, :, 0]
    if isinstance(model, IsolationForest):
        return np.column_stack([e.apply(X[:, f]) for e, f in zip(model.estimators_, model.estimators_features_)])
    if hasattr(model, "estimators_") and hasattr(model, "apply"):
        return model.apply(X)
    return None


def encoded_leaves(enc) -> np.ndarray:
    """The active leaf id of every tree in a solved tree encoding (-1 where none was chosen)."""
    out = np.full(1 + max(t for t, _ in enc.variables["leaves"]), -1)
    for t, node in chosen_leaves(enc):
        out[t] = node
    return out


def round_trip(model, points, *, lower, upper, half_width: float = 0.0, solver=None, **options) -> pd.DataFrame:
    """Per point: solver status, encoded and true output, relative error, and (trees) leaf agreement.

    The input is fixed to the box ``point +- half_width`` (trees need a small box: points within the
    split margins are excluded by design); the true output is taken at the solver's x.
    """
    points = np.atleast_2d(np.asarray(points, dtype=float))
    d = points.shape[1]
    lower, upper = np.broadcast_to(lower, d).astype(float), np.broadcast_to(upper, d).astype(float)
    x = cp.Variable(d)
    enc = encode(model, x, lower=lower, upper=upper, **options)
    lo, hi = cp.Parameter(d), cp.Parameter(d)
    problem = cp.Problem(cp.Minimize(0), enc.constraints + [x >= lo, x <= hi])
    tree_model = "leaves" in enc.variables
    rows = []
    for p in points:
        lo.value, hi.value = np.clip(p - half_width, lower, upper), np.clip(p + half_width, lower, upper)
        res = solvers.solve(problem, solver=solver)
        row = {"status": res.status}
        if res.has_solution:
            xs = np.clip(x.value, lo.value, hi.value)
            truth = float(model_output(model, xs)[0])
            row.update(encoded=float(enc.output.value), true=truth,
                       relative_error=abs(enc.output.value - truth) / (1 + abs(truth)),
                       within_bounds=enc.output_bounds[0] - 1e-9 <= truth <= enc.output_bounds[1] + 1e-9)
            if tree_model:
                row["leaves_agree"] = bool((encoded_leaves(enc) == applied_leaves(model, xs[None])[0]).all())
        rows.append(row)
    return pd.DataFrame(rows)
