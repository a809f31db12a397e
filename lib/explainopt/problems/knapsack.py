"""Continuous knapsack (Section 4.2 of Otto et al.): ``max vᵀx s.t. wᵀx ≤ 1, x ∈ [0, 1]^p``, θ = (v, w).

Instances: the kplib-style files of the authors' repository (``clemo/knapsack/<type>/sNNN.kp``: n, capacity
b, then "value weight" per item), of which the authors use the first 25 items with values and weights
scaled by 2/b (capacity 1). :func:`pisinger_instance` generates Pisinger's (2005) four types for other
sizes; the runtime study (Table 3) scales the weights so that their sum is U(1.1, 1.3) times the capacity.
The LP solver is chosen by :func:`explainopt.solvers.choose_solver` (HiGHS unless `solver` or
``EXPLAINOPT_SOLVER`` names another; the paper used Gurobi). HiGHS is called directly through highspy:
one model per problem whose costs and capacity row are changed for each θ, each solve warm-started from
the previous basis (no modelling layer for thousands of 25-item LPs: about 20 times faster than SciPy's
``linprog``); any other solver gets one parametrized cvxpy model per problem, solved by
:func:`explainopt.solvers.solve`. Dantzig's greedy fractional rule
(``algorithm="greedy"``) is the exact alternative used as a check.
"""

from __future__ import annotations

import cvxpy as cp
import numpy as np

try:
    import highspy
except ImportError:   # an interpreter that loaded OR-Tools first (explainopt.isolation): the cvxpy model serves
    highspy = None

from ..datasets import fetch
from ..solvers import choose_solver, solve
from .base import LinearFormulation, ParametricProblem, Solution

TYPES = ("uncorrelated", "weakly_correlated", "strongly_correlated", "inverse_strongly_correlated")
TYPE_FOLDERS = dict(zip(TYPES, ("00Uncorrelated", "01WeaklyCorrelated", "02StronglyCorrelated",
                                "03InverseStronglyCorrelated")))


def read_kp(path) -> tuple[np.ndarray, np.ndarray, float]:
    """(values, weights, capacity) of a kplib ``.kp`` file."""
    tokens = open(path).read().split()
    n, capacity = int(tokens[0]), float(tokens[1])
    pairs = np.array(tokens[2:2 + 2 * n], dtype=float).reshape(n, 2)
    return pairs[:, 0], pairs[:, 1], capacity


def greedy_fractional(values, weights, capacity: float = 1.0) -> np.ndarray:
    """Dantzig's rule: items by decreasing v/w, the critical item taken fractionally (optimal for the LP)."""
    values, weights = np.asarray(values, float), np.asarray(weights, float)
    x, room = np.zeros(len(values)), capacity
    for j in np.argsort(-values / weights, kind="stable"):
        if values[j] <= 0 or room <= 0:
            break
        x[j] = min(1.0, room / weights[j])
        room -= x[j] * weights[j]
    return x


class Knapsack(ParametricProblem):
    """Parametric continuous knapsack with capacity 1; θ = (v_1..v_p, w_1..w_p)."""

    name = "knapsack"

    def __init__(self, values, weights, *, algorithm: str = "lp", solver: str | None = None,
                 include_bounds: bool = False):
        if algorithm not in ("lp", "greedy"):
            raise ValueError(f"algorithm={algorithm!r}: expected 'lp' (a solver) or 'greedy' (Dantzig's rule)")
        self.values, self.weights = np.asarray(values, float), np.asarray(weights, float)
        if self.values.shape != self.weights.shape or self.values.ndim != 1:
            raise ValueError("values and weights must be 1-d arrays of the same length")
        p = len(self.values)
        self.p, self.algorithm, self.solver, self.include_bounds = p, algorithm, solver, include_bounds
        self._lp = self._highs = None
        self.theta0 = np.concatenate([self.values, self.weights])
        self.feature_names = [f"v{j}" for j in range(p)] + [f"w{j}" for j in range(p)]
        self.decision_names = [f"x{j}" for j in range(p)]
        self.binary = np.zeros(p, dtype=bool)

    @classmethod
    def from_registry(cls, kind: str = "uncorrelated", instance: int = 0, *, n_items: int = 25, **options):
        """The authors' instance: first `n_items` items of ``sNNN.kp``, scaled by 2/b (capacity 1)."""
        if kind not in TYPE_FOLDERS:
            raise ValueError(f"kind={kind!r}: expected one of {TYPES}")
        v, w, b = read_kp(fetch(f"clemo/knapsack/{TYPE_FOLDERS[kind]}/s{instance:03d}.kp"))
        return cls(v[:n_items] * 2 / b, w[:n_items] * 2 / b, **options)

    def split(self, theta):
        theta = np.asarray(theta, float)
        return theta[:self.p], theta[self.p:]

    def is_valid(self, theta):
        """Feasible (x = 0) and bounded (x ∈ [0,1]) always; we keep positive weights so v/w is defined."""
        v, w = self.split(theta)
        return bool(np.all(w > 0))

    def __getstate__(self):
        state = dict(self.__dict__)
        state["_lp"] = state["_highs"] = None   # models are built again where needed (e.g. a worker process)
        return state

    def _highs_model(self):
        """``max vᵀx s.t. wᵀx ≤ 1, 0 ≤ x ≤ 1`` in HiGHS, built once: a solve changes v and the row."""
        if self._highs is None:
            h, lp, p = highspy.Highs(), highspy.HighsLp(), self.p
            h.setOptionValue("output_flag", False)
            lp.num_col_, lp.num_row_, lp.sense_ = p, 1, highspy.ObjSense.kMaximize
            lp.col_cost_, lp.col_lower_, lp.col_upper_ = np.zeros(p), np.zeros(p), np.ones(p)
            lp.row_lower_, lp.row_upper_ = np.array([-highspy.kHighsInf]), np.array([1.0])
            lp.a_matrix_.format_ = highspy.MatrixFormat.kColwise
            lp.a_matrix_.start_ = np.arange(p + 1, dtype=np.int32)
            lp.a_matrix_.index_, lp.a_matrix_.value_ = np.zeros(p, dtype=np.int32), np.ones(p)
            h.passModel(lp)
            self._highs = h
        return self._highs

    def _model(self):
        """The LP with parameters (v, w), built once: a solve only sets the parameters' values."""
        if self._lp is None:
            v, w, x = cp.Parameter(self.p), cp.Parameter(self.p), cp.Variable(self.p)
            self._lp = (cp.Problem(cp.Maximize(v @ x), [w @ x <= 1, x >= 0, x <= 1]), v, w, x)
        return self._lp

    def solve(self, theta) -> Solution:
        """The LP by the chosen solver (or Dantzig's rule); the solution names the solver that ran."""
        v, w = self.split(theta)
        if self.algorithm == "greedy":
            x = greedy_fractional(v, w)
            return Solution(float(v @ x), x, solver="greedy")
        if choose_solver("lp", self.solver) == "highs" and highspy is not None:
            h = self._highs_model()
            h.changeColsCost(self.p, np.arange(self.p, dtype=np.int32), v)
            for j, weight in enumerate(w):
                h.changeCoeff(0, j, float(weight))
            h.run()
            if h.getModelStatus() != highspy.HighsModelStatus.kOptimal:
                return Solution(float("nan"), np.full(self.p, np.nan), status="error", solver="highs",
                                extra={"message": h.modelStatusToString(h.getModelStatus())})
            x = np.array(h.getSolution().col_value)
            return Solution(float(v @ x), x, solver="highs")
        problem, v_param, w_param, x_var = self._model()
        v_param.value, w_param.value = v, w
        result = solve(problem, solver=self.solver, bounded=True)
        if not result.has_solution:
            return Solution(float("nan"), np.full(self.p, np.nan), status=result.status, solver=result.solver,
                            extra={"message": result.message})
        x = np.array(x_var.value)
        return Solution(float(v @ x), x, solver=result.solver)

    def cost_vector(self, theta):
        return self.split(theta)[0]

    def formulation(self, theta) -> LinearFormulation:
        """``wᵀx ≤ 1`` (and ``0 ≤ x ≤ 1`` when ``include_bounds``; the authors' code leaves them out)."""
        _, w = self.split(theta)
        A, b = w[None, :], np.ones(1)
        if self.include_bounds:
            eye = np.eye(self.p)
            A, b = np.vstack([A, eye, -eye]), np.concatenate([b, np.ones(self.p), np.zeros(self.p)])
        return LinearFormulation(np.zeros((0, self.p)), np.zeros(0), A, b)


def pisinger_instance(n_items: int, kind: str = "uncorrelated", *, R: int = 1000,
                      capacity_ratio=(1.1, 1.3), random_state=None, **options) -> Knapsack:
    """A Pisinger (2005) instance with capacity 1: weights scaled so that Σw = U(capacity_ratio).

    Types: uncorrelated (v, w ~ U{1..R}), weakly correlated (v ~ U[w − R/10, w + R/10], v ≥ 1), strongly
    correlated (v = w + R/10), inverse strongly correlated (v ~ U{1..R}, w = v + R/10). Values get the
    same scale factor as the weights. `options` go to :class:`Knapsack` (``algorithm``, ``solver``).
    """
    if kind not in TYPES:
        raise ValueError(f"kind={kind!r}: expected one of {TYPES}")
    if n_items < 1:
        raise ValueError(f"n_items={n_items}: need at least one item")
    rng = np.random.default_rng(random_state)
    w = rng.integers(1, R + 1, n_items).astype(float)
    if kind == "uncorrelated":
        v = rng.integers(1, R + 1, n_items).astype(float)
    elif kind == "weakly_correlated":
        v = np.maximum(1.0, w + rng.integers(-R // 10, R // 10 + 1, n_items))
    elif kind == "strongly_correlated":
        v = w + R / 10
    else:
        v = rng.integers(1, R + 1, n_items).astype(float)
        w = v + R / 10
    scale = rng.uniform(*capacity_ratio) / w.sum()
    return Knapsack(v * scale, w * scale, **options)
