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
from ..validation import check_spec, check_vector, counterfactual_inputs, feature_names, target_label
from .base import Counterfactual, contract

NORMS = ("l1", "l2", "linf")


@dataclass
class CounterfactualResult(Counterfactual):
    """A nearest counterfactual (fields of :class:`~.base.Counterfactual` first; distance: in the norm and
    weights minimized; detail: the solver's status). solve_time: seconds inside the solver (cvxpy's
    compilation excluded where the solver reports its own time); model_output: the model's own output at
    x (class-1 probability for trees/forests, decision function otherwise); encoded_output: the
    encoding's; repaired: features moved (by at most the solver's tolerance) onto the float32 side of a
    split the solver chose; target: the class sought, a label of ``model.classes_``."""

    solve_time: float = 0.0
    model_output: float | None = None
    encoded_output: float | None = None
    repaired: int = 0
    target: object = None


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

    def checked(self, solution: Solution, *, target: int, started: float) -> dict:
        """The fields of :class:`CounterfactualResult` for `solution` (`target`: the class index), its
        point checked with the true model (``contract``); `started`: ``time.perf_counter()``
        at the call."""
        res, x, model = solution.result, solution.x, self.encoding.model
        out = dict(x=x, detail=res.status, solver=res.solver, fallback_from=res.fallback_from,
                   valid=contract(Counterfactual(x, res.status, 0.0, res.solver), model, self.x0, target).valid,
                   target=target_label(model, target), solve_time=solution.solve_time, repaired=solution.repaired)
        if x is not None:
            out.update(distance=self.distance_at(x), model_output=float(model_output(model, x)[0]),
                       encoded_output=float(self.encoding.output.value))
        return {**out, "time": time.perf_counter() - started}


def counterfactual_problem(model, x0, spec=None, lower=None, upper=None, *, X=None, norm: str = "l1", weights=None,
                           **encode_options) -> CounterfactualProblem:
    """The feature space of `x0`, `model` encoded on it and the distance to `x0`, without a target.

    spec: a dataset's FeatureSpec list (types, bounds, actionability, one-hot groups); otherwise the box
    `lower`/`upper` (scalars, arrays or Series) or the data `X` (its column minima and maxima) bounds
    continuous free features. `encode_options` go to the encoder. Inputs are checked first
    (``explainopt.validation.counterfactual_inputs``).
    """
    return checked_problem(model, _inputs(model, x0, spec, lower, upper, X=X), spec, norm=norm, weights=weights,
                    **encode_options)


def _inputs(model, x0, spec, lower, upper, *, X=None, target=None, **solver_options):
    checked = counterfactual_inputs(model, x0, lower=lower, upper=upper, X=X, target=target,
                                    box="none" if spec is not None else "required", **solver_options)
    if spec is not None:
        check_spec(spec, checked.x0)
    return checked


def checked_problem(model, checked, spec=None, *, norm: str = "l1", weights=None,
                    **encode_options) -> CounterfactualProblem:
    """:func:`counterfactual_problem` for inputs already checked (`checked`: the
    :class:`~explainopt.validation.Inputs` of :func:`~explainopt.validation.counterfactual_inputs`)."""
    x0 = checked.x0
    space = feature_space(spec, x0) if spec is not None else box_space(checked.lower, checked.upper, x0.size)
    if weights is not None:
        weights = check_vector(weights, "weights", x0.size, names=feature_names(model))
        if (weights < 0).any():
            raise ValueError("weights must be non-negative")
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
    X=None,
    norm: str = "l1",
    weights=None,
    target=None,
    threshold: float | None = None,
    margin: float = 1e-4,
    solver: str | None = None,
    time_limit: float | None = None,
    mip_gap: float | None = None,
    **encode_options,
) -> CounterfactualResult:
    """Nearest counterfactual of `x0`: ``min ||x - x0||`` such that `model` predicts `target`.

    Parameters
    ----------
    model : fitted classifier
        A fitted binary classifier the encoders support (linear models, trees, forests, gradient
        boosting, ReLU networks: :func:`explainopt.encoders.supported_models`).
    x0 : the factual: an array, a pandas Series or a one-row DataFrame (aligned by feature name with
        the model's ``feature_names_in_``).
    spec : a dataset's FeatureSpec list (types, bounds, actionability); otherwise the box `lower`/`upper`
        (scalars, arrays or Series) or the data `X` (its column minima and maxima) bounds continuous free
        features. `x0` must lie in the domain.
    norm, weights : the distance, ``l1`` (default), ``l2`` or ``linf``, optionally weighted per feature.
    target : a label of ``model.classes_``; None (default): the class other than the prediction at `x0`.
    threshold : a score threshold tau on the scale of the encoding's output (class-1 probability for
        trees/forests, the logit otherwise) replacing the model's decision rule; target 1 then requires
        ``output >= tau + margin`` and target 0 ``output <= tau - margin``.
    solver, time_limit, mip_gap : see :func:`explainopt.solvers.solve`.

    Returns
    -------
    CounterfactualResult
        ``x``, ``status``, ``distance`` (in `norm`), ``valid`` (the model's own ``predict``), ``time``,
        ``solver`` and the fields of :class:`~.base.Counterfactual`.

    Examples
    --------
    >>> from sklearn.linear_model import LogisticRegression
    >>> model = LogisticRegression().fit([[0.0, 0.0], [1.0, 1.0]], ["no", "yes"])
    >>> ce = nearest_counterfactual(model, [0.2, 0.1], lower=0.0, upper=1.0)
    >>> ce.status, ce.target, ce.valid, round(ce.distance, 3)
    ('optimal', 'yes', True, 0.7)
    """
    started = time.perf_counter()
    checked = _inputs(model, x0, spec, lower, upper, X=X, target=target, solver=solver, time_limit=time_limit,
                      mip_gap=mip_gap)
    problem = checked_problem(model, checked, spec, norm=norm, weights=weights, **encode_options)
    target = checked.target
    solution = problem.solve(problem.distance, problem.encoding.predicts(target, margin=margin, threshold=threshold),
                             solver=solver, time_limit=time_limit, mip_gap=mip_gap)
    return CounterfactualResult(**problem.checked(solution, target=target, started=started))
