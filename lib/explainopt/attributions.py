"""Explanation optimization under faithfulness and robustness losses (Raedler et al., 2025).

The transductive setting of the paper: all N input points X are known, an explanation is a matrix
E ∈ R^{N×D} (one feature attribution per point) and the target is the gradient ∇f at each point.
What this module offers, with the paper's tables and equations:

- The five test functions of **Table 1** (:data:`FUNCTIONS`) with analytic gradients. The paper does
  not say how it computed gradients; the framework it builds on (Tadesse et al., 2024) uses autograd.
  Our gradients are closed forms, checked against finite differences in the tests.
- Equidistant grids on [-5, 5]^D with the N of **Appendix A** (:data:`GRID_SIZES`: 80, 81, 125, 81
  points for D = 1..4) and the radius rule of Appendix A (:func:`admissible_radii`).
- The losses of **Table 2**: faithfulness ``Σ_n ‖∇f_n − E_n‖²``; max-sensitivity, local stability
  and average sensitivity over the neighbourhood ``‖X_n − X_n'‖ ≤ u``. Each exists twice: as a plain
  NumPy evaluation on dense N×N matrices (:func:`faithfulness_loss`, :func:`max_sensitivity_loss`,
  :func:`local_stability_loss`, :func:`average_sensitivity_loss`) and as a cvxpy expression built from a
  sparse pairwise-difference matrix (:func:`faithfulness_expression`, :func:`robustness_expression`),
  the max-type ones in the epigraph form of **Appendix C** (eqs. (2)–(7)).
- The problem ``min L_robust(E) s.t. L_faithful(E) ≤ η`` with ``η = 0.2 · L_faithful^max``, where
  ``L_faithful^max`` is the loss of the constant mean-gradient explanation (Section 3.2), solved as a
  second-order cone program through :func:`explainopt.solvers.solve` (:func:`optimize_explanations`),
  and the *pointwise* variant ``‖E_n − ∇f_n‖² ≤ η / N`` for every n that the paper's conclusion asks
  for (``pointwise=True``).
- The agreement rate of the most important feature (Section 3.2, Figures 1 and 3):
  :func:`agreement_rate`, :func:`agreement_table`.
- :func:`explanation_run`: one (function, D, u, metric, variant) configuration, module-level so that
  :func:`explainopt.experiments.run_grid` can run and cache the grid.

Two readings of the paper that the code makes explicit:

- *Average sensitivity.* Table 2 writes the squared distance ``‖E_n − E_n'‖²`` while Appendix C, eq. (9)
  writes the plain norm ``‖E_n − E_n'‖``. We follow Appendix C (the SOCP the paper solved); the
  squared reading is available as ``metric="average_sensitivity_squared"``.
- *Neighbourhoods.* ``p_n`` is uniform over ``{n' : ‖X_n − X_n'‖ ≤ u}``, which contains n itself; its
  zero term counts in the normalisation. Local stability excludes n' = n (0/0).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import combinations

import cvxpy as cp
import numpy as np
import pandas as pd
import scipy.sparse as sp
from scipy.spatial.distance import pdist, squareform

from . import solvers

log = logging.getLogger(__name__)

#: Number of grid points per dimension (Appendix A): 80 on a line, 9², 5³ and 3⁴ points.
GRID_SIZES = {1: 80, 2: 81, 3: 125, 4: 81}
#: Perturbation radii of Section 3.1.
RADII = (1, 2, 3, 5, 10)
#: Robustness losses of Table 2 (plus the squared reading of average sensitivity).
METRICS = ("max_sensitivity", "local_stability", "average_sensitivity")
ALL_METRICS = METRICS + ("average_sensitivity_squared",)
METRIC_LABELS = {
    "max_sensitivity": "max-sensitivity",
    "local_stability": "local stability",
    "average_sensitivity": "average sensitivity",
    "average_sensitivity_squared": "average sensitivity (squared)",
}
DOMAIN = (-5.0, 5.0)
#: Relative slack when comparing a distance with the radius u (grid distances equal u exactly).
RADIUS_RTOL = 1e-9


# =========================================================================== Table 1: test functions

@dataclass(frozen=True)
class ToyFunction:
    """A separable function ``f(x) = Σ_d φ(x_d)`` of Table 1 with its derivative ``φ'``."""

    name: str
    formula: str
    phi: Callable[[np.ndarray], np.ndarray]
    dphi: Callable[[np.ndarray], np.ndarray]

    def __call__(self, X: np.ndarray) -> np.ndarray:
        """f at each row of X (shape (N, D)) -> shape (N,)."""
        return self.phi(_points(X)).sum(axis=1)

    def gradient(self, X: np.ndarray) -> np.ndarray:
        """∇f at each row of X -> shape (N, D) (analytic)."""
        return self.dphi(_points(X))


FUNCTIONS: dict[str, ToyFunction] = {f.name: f for f in (
    ToyFunction("x^2", "Σ_d x_d²", lambda x: x**2, lambda x: 2 * x),
    ToyFunction("x^3", "Σ_d 0.35 x_d³", lambda x: 0.35 * x**3, lambda x: 1.05 * x**2),
    ToyFunction("sin x + e^x - x^2", "Σ_d sin 2x_d + 0.1 e^{x_d} − 0.5 x_d²",
                 lambda x: np.sin(2 * x) + 0.1 * np.exp(x) - 0.5 * x**2,
                 lambda x: 2 * np.cos(2 * x) + 0.1 * np.exp(x) - x),
    ToyFunction("sin x", "Σ_d sin x_d", np.sin, np.cos),
    ToyFunction("sin x^3", "Σ_d sin(0.35 x_d³)", lambda x: np.sin(0.35 * x**3),
                 lambda x: 1.05 * x**2 * np.cos(0.35 * x**3)),
)}


def get_function(name: str) -> ToyFunction:
    """The Table 1 function called `name` (one of :data:`FUNCTIONS`)."""
    if isinstance(name, ToyFunction):
        return name
    if name not in FUNCTIONS:
        raise ValueError(f"unknown function {name!r}; expected one of {list(FUNCTIONS)}")
    return FUNCTIONS[name]


def _points(X) -> np.ndarray:
    X = np.asarray(X, dtype=float)
    if X.ndim != 2 or X.shape[0] == 0 or X.shape[1] == 0:
        raise ValueError(f"input points must be a non-empty 2-d array (N, D); got shape {X.shape}")
    if not np.all(np.isfinite(X)):
        raise ValueError("input points contain NaN or infinite values")
    return X


# =========================================================================== Appendix A: grids and radii

def grid(dimension: int, n_points: int | None = None, *, domain: tuple[float, float] = DOMAIN) -> np.ndarray:
    """Equidistant grid on ``[-5, 5]^D`` with N points (default: Appendix A's N for D), shape (N, D).

    N must be a perfect D-th power (k points per axis, ``k^D = N``); rows are sorted
    lexicographically (the paper's "X is sorted").
    """
    if not isinstance(dimension, (int, np.integer)) or isinstance(dimension, bool) or dimension < 1:
        raise ValueError(f"dimension must be a positive integer; got {dimension!r}")
    if n_points is None:
        if dimension not in GRID_SIZES:
            raise ValueError(f"no default grid size for dimension {dimension}; pass n_points (a perfect "
                             f"{dimension}-th power) or use D in {sorted(GRID_SIZES)}")
        n_points = GRID_SIZES[dimension]
    per_axis = int(round(n_points ** (1.0 / dimension)))
    if per_axis < 2 or per_axis**dimension != n_points:
        raise ValueError(f"n_points={n_points} is not k**{dimension} for an integer k >= 2; "
                         f"an equidistant grid in D={dimension} needs a perfect power")
    axis = np.linspace(domain[0], domain[1], per_axis)
    mesh = np.meshgrid(*([axis] * dimension), indexing="ij")
    return np.stack([m.ravel() for m in mesh], axis=1)


def grid_spacing(X) -> float:
    """Smallest pairwise Euclidean distance between the points (the grid step)."""
    X = _points(X)
    if len(X) < 2:
        raise ValueError("need at least two points to define a spacing")
    return float(pdist(X).min())


def admissible_radii(dimension: int, radii: Sequence[float] = RADII, n_points: int | None = None) -> list[float]:
    """The radii of `radii` that give every grid point at least one neighbour (Appendix A).

    Appendix A words the rule as "the minimum pairwise distance between input points is larger than u",
    but the radii it then lists (u = 1 only for D = 1, 2 for D ≤ 2, 3 for D ≤ 3) are those with u at
    least the grid step (10/79, 1.25, 2.5, 5 for D = 1..4), i.e. neighbourhoods that are not empty.
    """
    step = grid_spacing(grid(dimension, n_points))
    return [u for u in radii if u >= step * (1 - RADIUS_RTOL)]


# =========================================================================== neighbourhoods

@dataclass
class Neighbourhood:
    """The pairs ``n < n'`` with ``‖X_n − X_n'‖ ≤ u`` as a sparse difference matrix.

    ``difference`` (P×N, +1 at column i, −1 at column j of row p) maps E to the pairwise differences
    ``E_i − E_j``; ``counts[n]`` is the size of n's neighbourhood *including n itself* (the support of
    ``p_n`` in Table 2).
    """

    radius: float
    i: np.ndarray
    j: np.ndarray
    distance: np.ndarray
    counts: np.ndarray
    difference: sp.csr_matrix

    @property
    def n_pairs(self) -> int:
        return len(self.i)


def neighbourhood(X, radius: float) -> Neighbourhood:
    """Pairs of points within distance `radius` of each other (vectorised, no loops over pairs)."""
    X = _points(X)
    radius = _radius(radius)
    n = len(X)
    i, j = np.triu_indices(n, k=1)
    distance = pdist(X)  # same (i, j) order as triu_indices
    keep = distance <= radius * (1 + RADIUS_RTOL)
    i, j, distance = i[keep], j[keep], distance[keep]
    counts = 1 + np.bincount(i, minlength=n) + np.bincount(j, minlength=n)
    rows = np.repeat(np.arange(len(i)), 2)
    cols = np.stack([i, j], axis=1).ravel()
    vals = np.tile([1.0, -1.0], len(i))
    difference = sp.csr_matrix((vals, (rows, cols)), shape=(len(i), n))
    return Neighbourhood(float(radius), i, j, distance, counts, difference)


def _radius(radius) -> float:
    if isinstance(radius, bool) or not isinstance(radius, (int, float, np.integer, np.floating)):
        raise TypeError(f"radius must be a number; got {type(radius).__name__}")
    if not np.isfinite(radius) or radius <= 0:
        raise ValueError(f"radius must be a positive finite number; got {radius!r}")
    return float(radius)


# =========================================================================== Table 2: NumPy evaluations

def _explanations(E, X=None, name: str = "explanations") -> np.ndarray:
    E = np.asarray(E, dtype=float)
    if E.ndim == 1:
        E = E[:, None]
    if E.ndim != 2:
        raise ValueError(f"{name} must have shape (N, D); got {E.shape}")
    if X is not None and E.shape != np.shape(X):
        raise ValueError(f"{name} have shape {E.shape} but the input points have shape {np.shape(X)}")
    if not np.all(np.isfinite(E)):
        raise ValueError(f"{name} contain NaN or infinite values")
    return E


def _dense_neighbours(X, radius):
    """Dense N×N distances and the mask ``‖X_n − X_n'‖ ≤ u`` (diagonal included)."""
    X = _points(X)
    dist = squareform(pdist(X))
    return dist, dist <= _radius(radius) * (1 + RADIUS_RTOL)


def _dense_differences(E) -> np.ndarray:
    return np.linalg.norm(E[:, None, :] - E[None, :, :], axis=2)


def faithfulness_loss(E, gradients) -> float:
    """``L_faithful(E) = Σ_n ‖∇f_n − E_n‖²`` (Table 2)."""
    G = _explanations(gradients, name="gradients")
    E = _explanations(E, G)
    return float(np.sum((E - G) ** 2))


def max_sensitivity_loss(E, X, radius: float) -> float:
    """``Σ_n max_{n': ‖X_n − X_n'‖ ≤ u} ‖E_n − E_n'‖`` (Table 2, Appendix C eq. (1)); dense evaluation."""
    X = _points(X)
    E = _explanations(E, X)
    _, mask = _dense_neighbours(X, radius)
    return float(np.where(mask, _dense_differences(E), 0.0).max(axis=1).sum())


def local_stability_loss(E, X, radius: float) -> float:
    """``Σ_n max_{n' ≠ n: ‖X_n − X_n'‖ ≤ u} ‖E_n − E_n'‖ / ‖X_n − X_n'‖`` (Table 2, eq. (8))."""
    X = _points(X)
    E = _explanations(E, X)
    dist, mask = _dense_neighbours(X, radius)
    np.fill_diagonal(mask, False)
    ratio = np.divide(_dense_differences(E), dist, out=np.zeros_like(dist), where=mask)
    return float(ratio.max(axis=1).sum())


def average_sensitivity_loss(E, X, radius: float, *, squared: bool = False) -> float:
    """``Σ_n Σ_n' ‖E_n − E_n'‖ p_n(n')``, p_n uniform on n's neighbourhood (Appendix C eq. (9)).

    ``squared=True`` uses ``‖E_n − E_n'‖²`` as Table 2 writes it.
    """
    X = _points(X)
    E = _explanations(E, X)
    _, mask = _dense_neighbours(X, radius)
    diff = _dense_differences(E) ** (2 if squared else 1)
    return float((np.where(mask, diff, 0.0).sum(axis=1) / mask.sum(axis=1)).sum())


def robustness_loss(E, X, radius: float, metric: str) -> float:
    """NumPy evaluation of the robustness loss called `metric` (one of :data:`ALL_METRICS`)."""
    _metric(metric)
    if metric == "max_sensitivity":
        return max_sensitivity_loss(E, X, radius)
    if metric == "local_stability":
        return local_stability_loss(E, X, radius)
    return average_sensitivity_loss(E, X, radius, squared=metric == "average_sensitivity_squared")


def _metric(metric: str) -> str:
    if metric not in ALL_METRICS:
        raise ValueError(f"unknown robustness metric {metric!r}; expected one of {list(ALL_METRICS)}")
    return metric


# =========================================================================== Table 2 / Appendix C: cvxpy

@dataclass
class ConvexLoss:
    """A loss as a cvxpy objective expression plus the epigraph constraints it needs (Appendix C)."""

    expression: cp.Expression
    constraints: list = field(default_factory=list)


def faithfulness_expression(E: cp.Expression, gradients) -> cp.Expression:
    """``Σ_n ‖∇f_n − E_n‖²`` as a cvxpy expression."""
    return cp.sum_squares(E - _explanations(gradients, name="gradients"))


def robustness_expression(E: cp.Expression, X, radius: float, metric: str,
                          neighbours: Neighbourhood | None = None) -> ConvexLoss:
    """The robustness loss `metric` of E (a cvxpy N×D expression) in second-order cone form.

    With the pairwise norms ``t_p = ‖E_i − E_j‖`` (one cone per pair, both directions share it):

    - max-sensitivity (Appendix C.1, eqs. (2)–(7)): ``Σ_n l_n`` with ``l_i ≥ t_p``, ``l_j ≥ t_p``, ``l ≥ 0``;
    - local stability (Appendix C.2): the same with ``t_p / ‖X_i − X_j‖``;
    - average sensitivity (Appendix C.3, eq. (9)): ``Σ_p (1/|N_i| + 1/|N_j|) t_p`` (linear in t);
      the squared reading sums ``t_p²`` with the same weights.
    """
    _metric(metric)
    nb = neighbours or neighbourhood(X, radius)
    if E.shape[0] != nb.difference.shape[1]:
        raise ValueError(f"E has {E.shape[0]} rows but there are {nb.difference.shape[1]} points")
    if nb.n_pairs == 0:
        return ConvexLoss(cp.Constant(0.0))
    differences = nb.difference @ E  # P×D
    weights_pair = 1.0 / nb.counts[nb.i] + 1.0 / nb.counts[nb.j]
    if metric == "average_sensitivity":
        return ConvexLoss(weights_pair @ cp.norm(differences, 2, axis=1))
    if metric == "average_sensitivity_squared":
        return ConvexLoss(weights_pair @ cp.sum(cp.square(differences), axis=1))
    scale = 1.0 / nb.distance if metric == "local_stability" else np.ones(nb.n_pairs)
    t = cp.multiply(scale, cp.norm(differences, 2, axis=1))
    l = cp.Variable(E.shape[0], name="l", nonneg=True)
    return ConvexLoss(cp.sum(l), [l[nb.i] >= t, l[nb.j] >= t])


# =========================================================================== the optimization problem

def max_faithfulness_loss(gradients) -> float:
    """``L_faithful^max``: the loss of the constant mean-gradient explanation (Section 3.2)."""
    G = _explanations(gradients, name="gradients")
    return faithfulness_loss(np.broadcast_to(G.mean(axis=0), G.shape), G)


@dataclass
class ExplanationResult:
    """One solved problem ``min L_robust s.t. L_faithful ≤ η`` (or its pointwise variant).

    ``faithfulness`` and ``robustness`` are NumPy evaluations at the returned explanations (not the
    solver's objective value, which is kept as ``objective``).
    """

    function: str
    dimension: int
    radius: float
    metric: str
    pointwise: bool
    X: np.ndarray
    gradients: np.ndarray
    explanations: np.ndarray | None
    eta: float
    faithful_max: float
    status: str
    solver: str
    solve_time: float
    objective: float | None = None
    faithfulness: float | None = None
    robustness: float | None = None
    max_pointwise_faithfulness: float | None = None

    @property
    def has_solution(self) -> bool:
        return self.explanations is not None

    @property
    def faithfulness_ratio(self) -> float:
        """``L_faithful(E*) / η`` (≈ 1 when the faithfulness constraint is active)."""
        return float("nan") if self.faithfulness is None else self.faithfulness / self.eta

    def summary(self) -> dict:
        """Scalars only (a row of a results table)."""
        return {
            "function": self.function, "D": self.dimension, "u": self.radius, "metric": self.metric,
            "pointwise": self.pointwise, "N": len(self.X), "status": self.status, "solver": self.solver,
            "eta": self.eta, "L_faithful": self.faithfulness, "L_faithful / eta": self.faithfulness_ratio,
            "L_robust": self.robustness, "objective": self.objective, "solve_time_s": self.solve_time,
        }


def solve_explanations(X, gradients, *, radius: float, metric: str, eta: float, pointwise: bool = False,
                       solver: str | None = None, time_limit: float | None = None):
    """Solve ``min_E L_robust(E) s.t. L_faithful(E) ≤ η`` (Section 3.2) as an SOCP.

    ``pointwise=True`` replaces the global constraint by ``‖E_n − ∇f_n‖² ≤ η / N`` for every n (the
    pointwise metrics the paper's conclusion calls for; it implies the global constraint).
    Returns ``(E or None, SolveResult)``.
    """
    X = _points(X)
    G = _explanations(gradients, X, name="gradients")
    if not (np.isfinite(eta) and eta > 0):
        raise ValueError(f"eta must be a positive finite number; got {eta!r}")
    nb = neighbourhood(X, radius)
    if nb.n_pairs == 0:
        raise ValueError(f"radius={radius} is below the grid step {grid_spacing(X):.4g}: no point has a "
                         "neighbour and every robustness loss is 0 (Appendix A excludes such radii)")
    # Exact rescaling E = s·Ẽ with s = sqrt(η/N): the losses are homogeneous (degree 1, or 2 for the
    # squared reading), so the optimum scales; Clarabel fails on some unscaled instances (η ~ 1e4).
    s = float(np.sqrt(eta / len(X)))
    E = cp.Variable(G.shape, name="E")
    loss = robustness_expression(E, X, radius, metric, neighbours=nb)
    if pointwise:
        faithful = [cp.sum(cp.square(E - G / s), axis=1) <= 1.0]
    else:
        faithful = [faithfulness_expression(E, G / s) <= len(X)]
    problem = cp.Problem(cp.Minimize(loss.expression), loss.constraints + faithful)
    result = solvers.solve(problem, solver=solver, time_limit=time_limit)
    if result.objective is not None:
        result.objective *= s ** (2 if metric == "average_sensitivity_squared" else 1)
    values = E.value if result.has_solution and E.value is not None else None
    return (None if values is None else s * np.array(values)), result


def optimize_explanations(function: str, dimension: int, radius: float, metric: str, *,
                          pointwise: bool = False, eta_fraction: float = 0.2, n_points: int | None = None,
                          solver: str | None = None, time_limit: float | None = None) -> ExplanationResult:
    """Optimal explanations of a Table 1 function on the Appendix A grid (Section 3.2).

    ``η = eta_fraction · L_faithful^max`` (the paper: 0.2).
    """
    f = get_function(function)
    if not 0 < eta_fraction < 1:
        raise ValueError(f"eta_fraction must lie in (0, 1); got {eta_fraction!r}")
    X = grid(dimension, n_points)
    G = f.gradient(X)
    faithful_max = max_faithfulness_loss(G)
    eta = eta_fraction * faithful_max
    E, res = solve_explanations(X, G, radius=radius, metric=metric, eta=eta, pointwise=pointwise,
                                solver=solver, time_limit=time_limit)
    out = ExplanationResult(f.name, int(dimension), float(radius), metric, bool(pointwise), X, G, E, eta,
                            faithful_max, res.status, res.solver, res.solve_time, objective=res.objective)
    if E is not None:
        out.faithfulness = faithfulness_loss(E, G)
        out.robustness = robustness_loss(E, X, radius, metric)
        out.max_pointwise_faithfulness = float(np.max(np.sum((E - G) ** 2, axis=1)))
    else:
        log.warning("no solution for %s D=%s u=%s %s: %s", f.name, dimension, radius, metric, res.status)
    return out


def explanation_run(function: str, dimension: int, radius: float, metric: str, pointwise: bool = False,
                    eta_fraction: float = 0.2, solver: str | None = None) -> ExplanationResult:
    """One grid configuration for :func:`explainopt.experiments.run_grid` (keyword arguments only)."""
    return optimize_explanations(function, dimension, radius, metric, pointwise=pointwise,
                                 eta_fraction=eta_fraction, solver=solver)


def experiment_configs(functions: Sequence[str], dimensions: Sequence[int], radii: Sequence[float] = RADII, *,
                       metrics: Sequence[str] = METRICS, pointwise: Sequence[bool] = (False,),
                       solver: str | None = None) -> list[dict]:
    """The (function, D, u, metric, variant) grid, with the radii of Appendix A for each D."""
    for name in functions:
        get_function(name)
    for metric in metrics:
        _metric(metric)
    return [dict(function=name, dimension=int(d), radius=float(u), metric=m, pointwise=bool(p), solver=solver)
            for p in pointwise for d in dimensions for u in admissible_radii(d, radii)
            for name in functions for m in metrics]


# =========================================================================== agreement (Figures 1 and 3)

def top_features(E, *, rtol: float = 0.0) -> np.ndarray:
    """Boolean (N, D) mask of each point's most important feature(s): largest ``|E_n,d|``.

    With ``rtol = 0`` only exact ties share the top; ``rtol > 0`` also counts features within
    ``rtol · max_d |E_n,d|`` of the largest (solver round-off on features that tie in ∇f).
    """
    A = np.abs(_explanations(E))
    if not rtol >= 0:
        raise ValueError(f"rtol must be >= 0; got {rtol!r}")
    best = A.max(axis=1, keepdims=True)
    return A >= best * (1 - rtol)


def agreement_rate(*explanations, rtol: float = 0.0) -> float:
    """Share of points whose most important feature is the same in all the given explanations.

    Section 3.2: "for each point, we record whether the feature deemed most important is the same
    across all explanations"; most important = largest absolute attribution. Two or more explanations
    agree at a point when a feature is top in all of them (with ``rtol = 0`` and no exact ties this is
    ``argmax_d |E_n,d|`` being equal). For D = 1 the rate is 1.
    """
    if len(explanations) < 2:
        raise ValueError(f"agreement needs at least two explanations; got {len(explanations)}")
    arrays = [_explanations(E) for E in explanations]
    if len({a.shape for a in arrays}) != 1:
        raise ValueError(f"explanations must share one shape; got {[a.shape for a in arrays]}")
    common = np.logical_and.reduce([top_features(a, rtol=rtol) for a in arrays])
    return float(common.any(axis=1).mean())


def agreement_table(results: Sequence[ExplanationResult], *, metrics: Sequence[str] = METRICS,
                    rtol: float = 0.0) -> pd.DataFrame:
    """Agreement rates per (variant, function, D, u): each pair of metrics, all of them, and each vs ∇f.

    Columns: ``max_sensitivity vs local_stability`` etc., ``all three`` and ``<metric> vs gradient``.
    Configurations missing a metric or a solution are skipped (and logged).
    """
    groups: dict[tuple, dict[str, ExplanationResult]] = {}
    for r in results:
        if r.metric in metrics:
            groups.setdefault((r.pointwise, r.function, r.dimension, r.radius), {})[r.metric] = r
    rows = []
    for (pointwise, function, dimension, radius), by_metric in groups.items():
        if any(m not in by_metric or not by_metric[m].has_solution for m in metrics):
            log.warning("skipping %s D=%s u=%s: a metric has no solution", function, dimension, radius)
            continue
        E = {m: by_metric[m].explanations for m in metrics}
        row = {"pointwise": pointwise, "function": function, "D": dimension, "u": radius}
        for a, b in combinations(metrics, 2):
            row[f"{a} vs {b}"] = agreement_rate(E[a], E[b], rtol=rtol)
        row["all three" if len(metrics) == 3 else "all"] = agreement_rate(*E.values(), rtol=rtol)
        G = by_metric[metrics[0]].gradients
        for m in metrics:
            row[f"{m} vs gradient"] = agreement_rate(E[m], G, rtol=rtol)
        rows.append(row)
    return pd.DataFrame(rows)


def tied_top_share(gradients, *, rtol: float = 1e-9) -> float:
    """Share of points whose gradient has two or more (numerically) tied most important features."""
    return float((top_features(gradients, rtol=rtol).sum(axis=1) > 1).mean())


def chance_agreement(gradients, n_explanations: int = 3, *, rtol: float = 1e-9) -> float:
    """Agreement expected if explanations kept ∇f's top features and broke its ties at random.

    At a point whose gradient has k tied most important features, `n_explanations` independent uniform
    picks coincide with probability ``k^{1 − n_explanations}``; points without ties count 1. This is the
    level that argmax agreement falls to when round-off alone decides between tied features.
    """
    if n_explanations < 2:
        raise ValueError(f"n_explanations must be >= 2; got {n_explanations!r}")
    k = top_features(gradients, rtol=rtol).sum(axis=1)
    return float(np.mean(k ** (1.0 - n_explanations)))


def local_profile(result: ExplanationResult, *, tol: float = 1e-3) -> dict:
    """How unevenly a solution spends its faithfulness budget (the Figure 2 phenomenon).

    With the per-point budget ``b = η / N`` and deviations ``δ_n = ‖E_n − ∇f_n‖²``:
    ``faithful share`` = share of points with ``δ_n ≤ tol · b`` (E follows ∇f there), ``flat share`` =
    share of points whose explanation equals that of a grid neighbour up to ``tol · sqrt(b)``, and
    ``max δ_n / b`` (≤ 1 under the pointwise constraint; far above 1 means the budget is concentrated).
    Faithful x-ranges are listed for D = 1.
    """
    if not result.has_solution:
        raise ValueError(f"{result.function} D={result.dimension} u={result.radius} {result.metric} has no solution")
    budget = result.eta / len(result.X)
    ratio = np.sum((result.explanations - result.gradients) ** 2, axis=1) / budget
    nb = neighbourhood(result.X, grid_spacing(result.X))
    step = np.linalg.norm(nb.difference @ result.explanations, axis=1) <= tol * np.sqrt(budget)
    flat = np.zeros(len(result.X), dtype=bool)
    flat[nb.i[step]] = flat[nb.j[step]] = True
    out = {"function": result.function, "D": result.dimension, "u": result.radius, "metric": result.metric,
           "pointwise": result.pointwise, "faithful share": float(np.mean(ratio <= tol)),
           "flat share": float(flat.mean()), "max δ_n / (η/N)": float(ratio.max())}
    if result.dimension == 1:
        out["faithful x-ranges"] = _runs(result.X[:, 0], ratio <= tol)
    return out


def _runs(x: np.ndarray, mask: np.ndarray) -> str:
    """Contiguous runs of True in `mask` as "[a, b]" ranges of x."""
    edges = np.flatnonzero(np.diff(np.r_[0, mask.astype(int), 0]))
    return ", ".join(f"[{x[a]:.1f}, {x[b - 1]:.1f}]" for a, b in zip(edges[::2], edges[1::2])) or "none"


def select(results: Sequence[ExplanationResult], **criteria) -> list[ExplanationResult]:
    """The results whose fields equal `criteria` (e.g. ``function="x^3", dimension=1, radius=1``)."""
    for key in criteria:
        if key not in ExplanationResult.__dataclass_fields__:
            raise ValueError(f"cannot select on {key!r}; fields are {list(ExplanationResult.__dataclass_fields__)}")
    return [r for r in results if all(getattr(r, k) == v for k, v in criteria.items())]


def tie_report(results: Sequence[ExplanationResult], strict: pd.DataFrame, tie_aware: pd.DataFrame) -> pd.DataFrame:
    """Per (D, function), global variant: how much of the argmax disagreement ties in ∇f explain.

    Columns: share of grid points whose gradient has tied most important features; the all-three
    agreement expected from random tie-breaking (:func:`chance_agreement`); the mean over u of the
    all-three agreement by strict argmax (``strict``) and counting near-ties as ties (``tie_aware``).
    """
    rows = []
    for (d, name), sub in strict[~strict["pointwise"] & (strict["D"] > 1)].groupby(["D", "function"], sort=False):
        G = get_function(name).gradient(grid(int(d)))
        aware = tie_aware[~tie_aware["pointwise"] & (tie_aware["D"] == d) & (tie_aware["function"] == name)]
        rows.append({"D": int(d), "function": name, "∇f tied share": tied_top_share(G),
                     "chance agreement": chance_agreement(G, 3), "argmax agreement": sub["all three"].mean(),
                     "tie-aware agreement": aware["all three"].mean()})
    return pd.DataFrame(rows)


def variant_comparison(strict: pd.DataFrame, tie_aware: pd.DataFrame, metrics: Sequence[str] = METRICS) -> pd.DataFrame:
    """Mean agreement per D for the global and the pointwise constraint (beyond the paper).

    Columns: all-three agreement by strict argmax and tie-aware, and the tie-aware agreement of each
    explanation with ∇f (averaged over the metrics), each for ``global`` and ``pointwise``.
    """
    gradient_cols = [f"{m} vs gradient" for m in metrics]
    parts = {}
    for label, table in (("argmax", strict), ("tie-aware", tie_aware)):
        t = table[table["D"] > 1].assign(variant=lambda df: np.where(df["pointwise"], "pointwise", "global"))
        parts[f"{label} agreement"] = t.pivot_table(index="D", columns="variant", values="all three", aggfunc="mean")
        if label == "tie-aware":
            t = t.assign(**{"with ∇f": t[gradient_cols].mean(axis=1)})
            parts["tie-aware agreement with ∇f"] = t.pivot_table(index="D", columns="variant", values="with ∇f",
                                                                 aggfunc="mean")
    return pd.concat(parts, axis=1)


def results_table(results: Sequence[ExplanationResult]) -> pd.DataFrame:
    """One row per solved problem (scalars of :meth:`ExplanationResult.summary`)."""
    return pd.DataFrame([r.summary() for r in results])


# =========================================================================== figures

def agreement_heatmap_data(table: pd.DataFrame, dimension: int, *, column: str = "all three",
                           pointwise: bool = False, functions: Sequence[str] | None = None) -> pd.DataFrame:
    """Functions × radius matrix of one agreement column for one D (what Figures 1 and 3 show)."""
    sub = table[(table["D"] == dimension) & (table["pointwise"] == pointwise)]
    data = sub.pivot(index="function", columns="u", values=column)
    order = [f for f in (functions or FUNCTIONS) if f in data.index]
    data = data.loc[order]
    data.columns = [f"u = {u:g}" for u in data.columns]
    return data


def plot_explanations_1d(results: Mapping[str, ExplanationResult] | Sequence[ExplanationResult], *, ax=None):
    """E_n against x for D = 1 explanations next to ∇f (Figure 2 of the paper)."""
    import matplotlib.pyplot as plt

    from .plots import PALETTE

    results = list(results.values()) if isinstance(results, Mapping) else list(results)
    if not results or any(r.dimension != 1 for r in results):
        raise ValueError("plot_explanations_1d needs D = 1 results")
    ax = ax or plt.gca()
    first = results[0]
    ax.plot(first.X[:, 0], first.gradients[:, 0], color="black", lw=1.5, label="∇f (gradient)")
    for colour, r in zip(PALETTE, results):
        if r.has_solution:
            ax.plot(r.X[:, 0], r.explanations[:, 0], "o-", ms=3, lw=1, color=colour, label=METRIC_LABELS[r.metric])
    ax.set_xlabel("x")
    ax.set_ylabel("explanation E(x)")
    ax.legend(fontsize="small", loc="upper center")
    return ax


def plot_agreement_heatmaps(table: pd.DataFrame, dimensions: Sequence[int], *, column: str = "all three",
                            pointwise: bool = False, title: str = ""):
    """One annotated heatmap (functions × u) per dimension, as in Figures 1 and 3 of the paper."""
    import matplotlib.pyplot as plt

    from .plots import heatmap

    dimensions = [d for d in dimensions if ((table["D"] == d) & (table["pointwise"] == pointwise)).any()]
    if not dimensions:
        raise ValueError("no agreement rows for the requested dimensions and variant")
    data = {d: agreement_heatmap_data(table, d, column=column, pointwise=pointwise) for d in dimensions}
    widths = [data[d].shape[1] for d in dimensions]
    fig, axes = plt.subplots(1, len(dimensions), figsize=(0.9 * sum(widths) + 3, 3.6), squeeze=False,
                             gridspec_kw={"width_ratios": widths})
    for k, (ax, d) in enumerate(zip(axes[0], dimensions)):
        heatmap(data[d], ax=ax, title=f"D = {d}", cbar=False, yticklabels=k == 0)
        ax.set_xlabel("radius u")
        ax.set_ylabel("function" if k == 0 else "")
    fig.colorbar(axes[0][-1].collections[0], ax=axes[0].tolist(), fraction=0.03, pad=0.02, label="agreement rate")
    if title:
        fig.suptitle(title, y=1.02)
    return fig
