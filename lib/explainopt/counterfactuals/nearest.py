"""Nearest (naive) counterfactual explanation: min ||x - x0|| s.t. the encoded model predicts `target`.

The model is encoded through :func:`explainopt.encoders.encode` only, so any supported model works.
Distances: weighted l1 (e.g. the 1/4 weight of Forel et al. on non-continuous features), l2 (MISOCP,
needs SCIP/Gurobi/MOSEK), l-infinity. Every returned counterfactual is re-checked with the true model.
"""

from __future__ import annotations

from dataclasses import dataclass

import cvxpy as cp
import numpy as np

from .. import solvers
from ..encoders import encode, model_output, model_predict
from ..featurespace import feature_space

NORMS = ("l1", "l2", "linf")


@dataclass
class CounterfactualResult:
    """x: the counterfactual (None without a solution); distance: its objective value; status: the
    solver status (``optimal``, ``time_limit``, ``infeasible``, ``no_solution``, ...); valid: the true
    model predicts `target` at x (threshold rule when one was given); model_output: the model's own
    output at x (class-1 probability for trees/forests, decision function otherwise)."""

    x: np.ndarray | None
    distance: float | None
    status: str
    valid: bool
    solve_time: float
    solver: str
    model_output: float | None = None
    encoded_output: float | None = None


def _check_x0(x0, n: int | None) -> np.ndarray:
    x0 = np.asarray(x0, dtype=float).ravel() if not hasattr(x0, "to_numpy") else x0.to_numpy(float).ravel()
    if n is not None and x0.shape != (n,):
        raise ValueError(f"x0 must have {n} features (the model's n_features_in_), got shape {x0.shape}")
    if not np.isfinite(x0).all():
        raise ValueError("x0 contains NaN or infinite values")
    return x0


def distance(diff, norm: str, weights=None):
    """The cvxpy expression of ``||weights * diff||`` for ``norm`` in ``l1``, ``l2``, ``linf``."""
    if norm not in NORMS:
        raise ValueError(f"norm must be one of {NORMS}, got {norm!r}")
    diff = diff if weights is None else cp.multiply(np.asarray(weights, dtype=float), diff)
    return {"l1": cp.norm1, "l2": cp.norm2, "linf": cp.norm_inf}[norm](diff)


def is_valid(model, x, target: int, threshold: float | None = None) -> bool:
    """Whether the true model gives `x` the class index `target` (or, with a score `threshold` on the
    encoding's output scale, ``output >= threshold`` for target 1 and ``<= threshold`` for target 0)."""
    if threshold is None:
        return bool(model_predict(model, x)[0] == target)
    out = model_output(model, x)[0]
    return bool(out >= threshold if target == 1 else out <= threshold)


def nearest_counterfactual(
    model,
    x0,
    spec=None,
    lower=None,
    upper=None,
    *,
    norm: str = "l1",
    weights=None,
    target: int = 1,
    threshold: float | None = None,
    margin: float = 1e-4,
    solver: str | None = None,
    time_limit: float | None = None,
    **encode_options,
) -> CounterfactualResult:
    """Nearest counterfactual of `x0` for which `model` predicts class index `target` (0 or 1).

    spec: a dataset's FeatureSpec list (types, bounds, actionability); otherwise `lower`/`upper`
    (arrays) bound continuous free features. threshold: a score threshold tau on the scale of the
    encoding's output (class-1 probability for trees/forests) replacing the model's decision rule;
    target 1 then requires ``output >= tau + margin`` and target 0 ``output <= tau - margin``.
    """
    if target not in (0, 1):
        raise ValueError(f"target must be 0 or 1, got {target!r}")
    n = getattr(model, "n_features_in_", None)
    x0 = _check_x0(x0, n if spec is None else len(spec))
    if spec is not None:
        space = feature_space(spec, x0)
        x, cons, lo, hi = space.x, list(space.constraints), space.lower, space.upper
    else:
        if lower is None or upper is None:
            raise ValueError("pass spec= or both lower= and upper= (arrays bounding the features)")
        x = cp.Variable(x0.size, name="x")
        lo = np.broadcast_to(np.asarray(lower, dtype=float), x0.shape)
        hi = np.broadcast_to(np.asarray(upper, dtype=float), x0.shape)
        cons = [x >= lo, x <= hi]
    enc = encode(model, x, lower=lo, upper=hi, **encode_options)
    cons += enc.constraints + enc.predicts(target, margin=margin, threshold=threshold)
    problem = cp.Problem(cp.Minimize(distance(x - x0, norm, weights)), cons)
    res = solvers.solve(problem, solver=solver, time_limit=time_limit)
    if not res.has_solution or x.value is None:
        return CounterfactualResult(None, None, res.status, False, res.solve_time, res.solver)
    xv = np.asarray(x.value, dtype=float)
    return CounterfactualResult(
        x=xv,
        distance=float(res.objective),
        status=res.status,
        valid=is_valid(model, xv, target, threshold),
        solve_time=res.solve_time,
        solver=res.solver,
        model_output=float(model_output(model, xv)[0]),
        encoded_output=float(enc.output.value),
    )
