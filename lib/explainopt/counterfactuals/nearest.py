"""Nearest (naive) counterfactual explanation: min ||x - x0|| s.t. the encoded model predicts `target`.

The model is encoded through :func:`explainopt.encoders.encode` only, so any supported model works.
Distances: weighted l1 (e.g. the 1/4 weight of Forel et al. on non-continuous features), l2 (MISOCP,
needs SCIP/Gurobi/MOSEK), l-infinity. Every returned counterfactual is re-checked with the true model.

The method is built from three parts that other counterfactual methods reuse (chapter 5's ensemble
counterfactuals add their thresholds, penalties and plausibility models to the same problem):

* :func:`counterfactual_problem`: the feature space of the factual (:mod:`explainopt.featurespace`),
  the model's encoding on it and the distance to the factual, without a target yet;
* :meth:`CounterfactualProblem.solve`: minimize an objective under the problem's constraints and the
  caller's, then put a feature the solver left a hair on the wrong side of a chosen split back into the
  chosen cell (:func:`explainopt.encoders.trees.snap_to_chosen_leaves`);
* :meth:`CounterfactualProblem.checked`: the fields of a :class:`CounterfactualResult`, with the point
  re-checked by the true model.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import cvxpy as cp
import numpy as np

from .. import solvers
from ..encoders import Encoding, encode, model_output
from ..encoders.trees import snap_to_chosen_leaves
from ..featurespace import FeatureSpace, box_space, feature_space
from .base import Counterfactual, check_factual, is_valid

NORMS = ("l1", "l2", "linf")


@dataclass
class CounterfactualResult(Counterfactual):
    """A nearest counterfactual (fields of :class:`~.base.Counterfactual` first). distance: the distance
    from the factual to x; valid: the true model predicts `target` at x (threshold rule when one was
    given); solve_time: seconds inside the solver (cvxpy's compilation excluded where the solver reports
    its own time); model_output: the model's own output at x (class-1 probability for trees/forests,
    decision function otherwise); encoded_output: the encoding's; repaired: features moved (by at most
    the solver's tolerance) onto the float32 side of a split the solver chose."""

    distance: float | None = None
    valid: bool = False
    solve_time: float = 0.0
    model_output: float | None = None
    encoded_output: float | None = None
    repaired: int = 0


def distance(diff, norm: str, weights=None):
    """The cvxpy expression of ``||weights * diff||`` for ``norm`` in ``l1``, ``l2``, ``linf`` (weights >= 0).

    The weighted l1 norm is written ``weights @ |diff|``: one epigraph variable per feature with the
    weights in the objective, the formulation of OCEAN and Forel et al.
    """
    if norm not in NORMS:
        raise ValueError(f"norm must be one of {NORMS}, got {norm!r}")
    if weights is None:
        return {"l1": cp.norm1, "l2": cp.norm2, "linf": cp.norm_inf}[norm](diff)
    weights = np.asarray(weights, dtype=float)
    if (weights < 0).any():
        raise ValueError("distance weights must be non-negative")
    if norm == "l1":
        return weights @ cp.abs(diff)
    return {"l2": cp.norm2, "linf": cp.norm_inf}[norm](cp.multiply(weights, diff))


def check_target(target) -> int:
    """`target` as a class index 0 or 1; ValueError otherwise."""
    if target not in (0, 1):
        raise ValueError(f"target must be 0 or 1, got {target!r}")
    return int(target)


@dataclass
class Solution:
    """The outcome of :meth:`CounterfactualProblem.solve`: the solver's result, the point (None without
    one; after the repair), the features the repair moved, and the seconds inside the solver."""

    result: solvers.SolveResult
    x: np.ndarray | None
    repaired: int
    solve_time: float


@dataclass
class CounterfactualProblem:
    """The parts of a counterfactual problem around a factual `x0`.

    space: the feature space (``space.x`` is the counterfactual's variable); encoding: the model's
    encoding on it; distance: the distance from x to x0 (an objective, or a term of one); encodings:
    every model encoded on x (the model's first; :meth:`encode` adds others, e.g. an isolation forest);
    constraints: the feature space's and every encoding's.
    """

    x0: np.ndarray
    space: FeatureSpace
    encoding: Encoding
    distance: cp.Expression
    norm: str
    weights: np.ndarray | None
    encodings: list = field(default_factory=list)
    constraints: list = field(default_factory=list)

    @property
    def x(self) -> cp.Expression:
        return self.space.x

    def encode(self, model, **options) -> Encoding:
        """Encode another model on the same x (its constraints join the problem's)."""
        encoding = encode(model, self.x, lower=self.space.lower, upper=self.space.upper, **options)
        self.encodings.append(encoding)
        self.constraints += encoding.constraints
        return encoding

    def distance_at(self, x) -> float:
        """The distance from x0 to the point `x` (the same expression the problem minimizes)."""
        return float(distance(np.asarray(x, dtype=float) - self.x0, self.norm, self.weights).value)

    def program(self, objective, constraints=()) -> cp.Problem:
        """The cvxpy problem: minimize `objective` under the problem's constraints and `constraints`.

        Solve it with :meth:`solve_program`; one program whose data change only through cvxpy
        Parameters (e.g. a score threshold) is compiled once, however often it is solved."""
        return cp.Problem(cp.Minimize(objective), self.constraints + list(constraints))

    def solve(self, objective, constraints=(), *, solver: str | None = None, time_limit: float | None = None,
              mip_gap: float | None = None) -> Solution:
        """Minimize `objective` under the problem's constraints and `constraints`; the point found is
        moved onto the chosen side of every split the solver chose (``snap_to_chosen_leaves``)."""
        return self.solve_program(self.program(objective, constraints), solver=solver, time_limit=time_limit,
                                  mip_gap=mip_gap)

    def solve_program(self, problem: cp.Problem, *, solver: str | None = None, time_limit: float | None = None,
                      mip_gap: float | None = None, warm_start: bool = True) -> Solution:
        """Solve a :meth:`program` of this problem (again: `warm_start` hands the solver its last
        solution, see :func:`explainopt.solvers.solve`) and repair the point as :meth:`solve` does."""
        res = solvers.solve(problem, solver=solver, time_limit=time_limit, mip_gap=mip_gap, bounded=True,
                            warm_start=warm_start)
        inner = getattr(problem.solver_stats, "solve_time", None) if problem.solver_stats else None
        solve_time = float(inner) if inner is not None else float(res.solve_time)
        if not res.has_solution or self.x.value is None:
            return Solution(res, None, 0, solve_time)
        x, repaired = snap_to_chosen_leaves(self.x.value, self.encodings)
        return Solution(res, x, repaired, solve_time)

    def checked(self, solution: Solution, *, target: int, threshold: float | None = None, started: float) -> dict:
        """The fields of :class:`CounterfactualResult` for `solution`, its point checked with the true
        model (`threshold`: see :func:`~explainopt.counterfactuals.is_valid`); `started`:
        ``time.perf_counter()`` at the call."""
        res, x = solution.result, solution.x
        fields = dict(x=x, status=res.status, solver=res.solver, fallback_from=res.fallback_from,
                      solve_time=solution.solve_time, repaired=solution.repaired)
        if x is not None:
            model = self.encoding.model
            fields.update(distance=self.distance_at(x), valid=is_valid(model, x, target, threshold),
                          model_output=float(model_output(model, x)[0]),
                          encoded_output=float(self.encoding.output.value))
        return {**fields, "time": time.perf_counter() - started}


def counterfactual_problem(model, x0, spec=None, lower=None, upper=None, *, norm: str = "l1", weights=None,
                           **encode_options) -> CounterfactualProblem:
    """The feature space of `x0`, `model` encoded on it and the distance to `x0`, without a target.

    spec: a dataset's FeatureSpec list (types, bounds, actionability, one-hot groups); otherwise
    `lower`/`upper` (arrays) bound continuous free features. `encode_options` go to the encoder.
    """
    n = getattr(model, "n_features_in_", None)
    x0 = check_factual(x0, n if spec is None else len(spec))
    space = feature_space(spec, x0) if spec is not None else box_space(lower, upper, x0.size)
    weights = None if weights is None else np.asarray(weights, dtype=float)
    encoding = encode(model, space.x, lower=space.lower, upper=space.upper, **encode_options)
    return CounterfactualProblem(x0, space, encoding, distance(space.x - x0, norm, weights), norm, weights,
                                 [encoding], list(space.constraints) + encoding.constraints)


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
    mip_gap: float | None = None,
    **encode_options,
) -> CounterfactualResult:
    """Nearest counterfactual of `x0` for which `model` predicts class index `target` (0 or 1).

    spec: a dataset's FeatureSpec list (types, bounds, actionability); otherwise `lower`/`upper`
    (arrays) bound continuous free features. threshold: a score threshold tau on the scale of the
    encoding's output (class-1 probability for trees/forests) replacing the model's decision rule;
    target 1 then requires ``output >= tau + margin`` and target 0 ``output <= tau - margin``.
    """
    started = time.perf_counter()
    target = check_target(target)
    problem = counterfactual_problem(model, x0, spec, lower, upper, norm=norm, weights=weights, **encode_options)
    solution = problem.solve(problem.distance, problem.encoding.predicts(target, margin=margin, threshold=threshold),
                             solver=solver, time_limit=time_limit, mip_gap=mip_gap)
    return CounterfactualResult(**problem.checked(solution, target=target, threshold=threshold, started=started))
