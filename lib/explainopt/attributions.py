"""Explanation optimization under faithfulness and robustness losses (Raedler et al., 2025).

The transductive setting of the paper: all N input points X are known, an explanation is a matrix
E ∈ R^{N×D} (one feature attribution per point) and the target is the gradient ∇f at each point.
The module works on any points and gradients a reader brings; the paper's toy functions, grids and
experiments are the protocol of chapter 1 (``explainopt.chapters.optimizing_explanations``).

- The losses of **Table 2**: faithfulness ``Σ_n ‖∇f_n − E_n‖²``; max-sensitivity, local stability
  and average sensitivity over the neighbourhood ``‖X_n − X_n'‖ ≤ u`` (:func:`neighbourhood`). Each
  exists twice: as a plain NumPy evaluation on dense N×N matrices (:func:`faithfulness_loss`,
  :func:`max_sensitivity_loss`, :func:`local_stability_loss`, :func:`average_sensitivity_loss`,
  :func:`robustness_loss`) and as a cvxpy expression built from a sparse pairwise-difference matrix
  (:func:`faithfulness_expression`, :func:`robustness_expression`), the max-type ones in the epigraph
  form of **Appendix C** (eqs. (2)–(7)).
- The problem ``min L_robust(E) s.t. L_faithful(E) ≤ η`` of Section 3.2 as a second-order cone program
  solved through :func:`explainopt.solvers.solve` (:func:`solve_explanations`), and the *pointwise*
  variant ``‖E_n − ∇f_n‖² ≤ η / N`` for every n that the paper's conclusion asks for
  (``pointwise=True``). The paper fixes ``η = 0.2 · L_faithful^max``, the loss of the constant
  mean-gradient explanation (:func:`max_faithfulness_loss`).
- The agreement rate of the most important feature (Section 3.2): :func:`agreement_rate`, with the
  tie-aware reading (:func:`top_features` with ``rtol``) and what ties in ∇f alone would give
  (:func:`tied_top_share`, :func:`chance_agreement`).

Two readings of the paper that the code makes explicit:

- *Average sensitivity.* Table 2 writes the squared distance ``‖E_n − E_n'‖²`` while Appendix C, eq. (9)
  writes the plain norm ``‖E_n − E_n'‖``. ``metric="average_sensitivity"`` follows Appendix C (the SOCP
  the paper solved); the squared reading is ``metric="average_sensitivity_squared"``.
- *Neighbourhoods.* ``p_n`` is uniform over ``{n' : ‖X_n − X_n'‖ ≤ u}``, which contains n itself; its
  zero term counts in the normalisation. Local stability excludes n' = n (0/0).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

import cvxpy as cp
import numpy as np
import scipy.sparse as sp
from scipy.spatial.distance import pdist, squareform

from . import solvers

log = logging.getLogger(__name__)

#: Robustness losses of Table 2 (plus the squared reading of average sensitivity).
METRICS = ("max_sensitivity", "local_stability", "average_sensitivity")
#: Every robustness loss :func:`robustness_loss` evaluates.
ALL_METRICS = METRICS + ("average_sensitivity_squared",)
#: Relative slack when comparing a distance with the radius u (grid distances equal u exactly).
RADIUS_RTOL = 1e-9


def as_points(X) -> np.ndarray:
    """The input points as a finite float array of shape (N, D); ValueError otherwise.

    Examples
    --------
    >>> from explainopt.attributions import as_points
    >>> as_points([[0, 1], [2, 3]]).dtype
    dtype('float64')
    """
    X = np.asarray(X, dtype=float)
    if X.ndim != 2 or X.shape[0] == 0 or X.shape[1] == 0:
        raise ValueError(f"input points must be a non-empty 2-d array (N, D); got shape {X.shape}")
    if not np.all(np.isfinite(X)):
        raise ValueError("input points contain NaN or infinite values")
    return X


def grid_spacing(X) -> float:
    """Smallest pairwise Euclidean distance between the points (the step of a grid).

    Examples
    --------
    >>> from explainopt.attributions import grid_spacing
    >>> grid_spacing([[0.0, 0.0], [0.0, 0.5], [1.0, 1.0]])
    0.5
    """
    X = as_points(X)
    if len(X) < 2:
        raise ValueError("need at least two points to define a spacing")
    return float(pdist(X).min())


def check_metric(metric: str) -> str:
    """`metric` if it names a robustness loss (one of :data:`ALL_METRICS`); ValueError otherwise.

    Examples
    --------
    >>> from explainopt.attributions import check_metric
    >>> try:
    ...     check_metric("max_gradient")
    ... except ValueError as error:
    ...     print(error)
    unknown robustness metric 'max_gradient'; expected one of ['max_sensitivity', ...]
    """
    if metric not in ALL_METRICS:
        raise ValueError(f"unknown robustness metric {metric!r}; expected one of {list(ALL_METRICS)}")
    return metric


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


def neighbourhood(X, *, radius: float) -> Neighbourhood:
    """Pairs of points within distance `radius` of each other (vectorised, no loops over pairs).

    Examples
    --------
    >>> import numpy as np
    >>> from explainopt import attributions as xa
    >>> X = np.array([[a, b] for a in (0.0, 0.5, 1.0) for b in (0.0, 0.5, 1.0)])
    >>> G = np.column_stack([2 * X[:, 0], -X[:, 1] ** 2])
    >>> nb = xa.neighbourhood(X, radius=0.5)
    >>> nb.n_pairs, nb.counts[:3], nb.difference.shape
    (12, array([3, 4, 3]), (12, 9))
    """
    X = as_points(X)
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
    X = as_points(X)
    dist = squareform(pdist(X))
    return dist, dist <= _radius(radius) * (1 + RADIUS_RTOL)


def _dense_differences(E) -> np.ndarray:
    return np.linalg.norm(E[:, None, :] - E[None, :, :], axis=2)


def faithfulness_loss(E, gradients) -> float:
    """``L_faithful(E) = Σ_n ‖∇f_n − E_n‖²`` (Table 2).

    Examples
    --------
    >>> import numpy as np
    >>> from explainopt import attributions as xa
    >>> X = np.array([[a, b] for a in (0.0, 0.5, 1.0) for b in (0.0, 0.5, 1.0)])
    >>> G = np.column_stack([2 * X[:, 0], -X[:, 1] ** 2])
    >>> xa.faithfulness_loss(G, G), round(xa.faithfulness_loss(np.zeros_like(G), G), 4)
    (0.0, 18.1875)
    """
    G = _explanations(gradients, name="gradients")
    E = _explanations(E, G)
    return float(np.sum((E - G) ** 2))


def max_sensitivity_loss(E, X, *, radius: float) -> float:
    """``Σ_n max_{n': ‖X_n − X_n'‖ ≤ u} ‖E_n − E_n'‖`` (Table 2, Appendix C eq. (1)); dense evaluation.

    Examples
    --------
    >>> import numpy as np
    >>> from explainopt import attributions as xa
    >>> X = np.array([[a, b] for a in (0.0, 0.5, 1.0) for b in (0.0, 0.5, 1.0)])
    >>> G = np.column_stack([2 * X[:, 0], -X[:, 1] ** 2])
    >>> round(xa.max_sensitivity_loss(G, X, radius=0.5), 4)
    9.0
    """
    X = as_points(X)
    E = _explanations(E, X)
    _, mask = _dense_neighbours(X, radius)
    return float(np.where(mask, _dense_differences(E), 0.0).max(axis=1).sum())


def local_stability_loss(E, X, *, radius: float) -> float:
    """``Σ_n max_{n' ≠ n: ‖X_n − X_n'‖ ≤ u} ‖E_n − E_n'‖ / ‖X_n − X_n'‖`` (Table 2, eq. (8)).

    Examples
    --------
    >>> import numpy as np
    >>> from explainopt import attributions as xa
    >>> X = np.array([[a, b] for a in (0.0, 0.5, 1.0) for b in (0.0, 0.5, 1.0)])
    >>> G = np.column_stack([2 * X[:, 0], -X[:, 1] ** 2])
    >>> round(xa.local_stability_loss(G, X, radius=0.5), 4)
    18.0
    """
    X = as_points(X)
    E = _explanations(E, X)
    dist, mask = _dense_neighbours(X, radius)
    np.fill_diagonal(mask, False)
    ratio = np.divide(_dense_differences(E), dist, out=np.zeros_like(dist), where=mask)
    return float(ratio.max(axis=1).sum())


def average_sensitivity_loss(E, X, *, radius: float, squared: bool = False) -> float:
    """``Σ_n Σ_n' ‖E_n − E_n'‖ p_n(n')``, p_n uniform on n's neighbourhood (Appendix C eq. (9)).

    ``squared=True`` uses ``‖E_n − E_n'‖²`` as Table 2 writes it.

    Examples
    --------
    >>> import numpy as np
    >>> from explainopt import attributions as xa
    >>> X = np.array([[a, b] for a in (0.0, 0.5, 1.0) for b in (0.0, 0.5, 1.0)])
    >>> G = np.column_stack([2 * X[:, 0], -X[:, 1] ** 2])
    >>> round(xa.average_sensitivity_loss(G, X, radius=0.5), 4)
    4.85
    >>> round(xa.average_sensitivity_loss(G, X, radius=0.5, squared=True), 4)
    4.2438
    """
    X = as_points(X)
    E = _explanations(E, X)
    _, mask = _dense_neighbours(X, radius)
    diff = _dense_differences(E) ** (2 if squared else 1)
    return float((np.where(mask, diff, 0.0).sum(axis=1) / mask.sum(axis=1)).sum())


def robustness_loss(E, X, *, radius: float, metric: str) -> float:
    """NumPy evaluation of the robustness loss called `metric` (one of :data:`ALL_METRICS`).

    Examples
    --------
    >>> import numpy as np
    >>> from explainopt import attributions as xa
    >>> X = np.array([[a, b] for a in (0.0, 0.5, 1.0) for b in (0.0, 0.5, 1.0)])
    >>> G = np.column_stack([2 * X[:, 0], -X[:, 1] ** 2])
    >>> xa.robustness_loss(G, X, radius=0.5, metric="max_sensitivity") == xa.max_sensitivity_loss(G, X, radius=0.5)
    True
    """
    check_metric(metric)
    if metric == "max_sensitivity":
        return max_sensitivity_loss(E, X, radius=radius)
    if metric == "local_stability":
        return local_stability_loss(E, X, radius=radius)
    return average_sensitivity_loss(E, X, radius=radius, squared=metric == "average_sensitivity_squared")


# =========================================================================== Table 2 / Appendix C: cvxpy

@dataclass
class ConvexLoss:
    """A loss as a cvxpy objective expression plus the epigraph constraints it needs (Appendix C)."""

    expression: cp.Expression
    constraints: list = field(default_factory=list)


def faithfulness_expression(E: cp.Expression, gradients) -> cp.Expression:
    """``Σ_n ‖∇f_n − E_n‖²`` as a cvxpy expression.

    Examples
    --------
    >>> import numpy as np
    >>> from explainopt import attributions as xa
    >>> X = np.array([[a, b] for a in (0.0, 0.5, 1.0) for b in (0.0, 0.5, 1.0)])
    >>> G = np.column_stack([2 * X[:, 0], -X[:, 1] ** 2])
    >>> import cvxpy as cp
    >>> E = cp.Variable(G.shape)
    >>> E.value = np.zeros_like(G)
    >>> round(float(xa.faithfulness_expression(E, G).value), 4)
    18.1875
    """
    return cp.sum_squares(E - _explanations(gradients, name="gradients"))


def robustness_expression(E: cp.Expression, X, *, radius: float, metric: str,
                          neighbours: Neighbourhood | None = None) -> ConvexLoss:
    """The robustness loss `metric` of E (a cvxpy N×D expression) in second-order cone form.

    With the pairwise norms ``t_p = ‖E_i − E_j‖`` (one cone per pair, both directions share it):

    - max-sensitivity (Appendix C.1, eqs. (2)–(7)): ``Σ_n l_n`` with ``l_i ≥ t_p``, ``l_j ≥ t_p``, ``l ≥ 0``;
    - local stability (Appendix C.2): the same with ``t_p / ‖X_i − X_j‖``;
    - average sensitivity (Appendix C.3, eq. (9)): ``Σ_p (1/|N_i| + 1/|N_j|) t_p`` (linear in t);
      the squared reading sums ``t_p²`` with the same weights.

    Examples
    --------
    >>> import numpy as np
    >>> from explainopt import attributions as xa
    >>> X = np.array([[a, b] for a in (0.0, 0.5, 1.0) for b in (0.0, 0.5, 1.0)])
    >>> G = np.column_stack([2 * X[:, 0], -X[:, 1] ** 2])
    >>> import cvxpy as cp
    >>> E = cp.Variable(G.shape)
    >>> loss = xa.robustness_expression(E, X, radius=0.5, metric="max_sensitivity")
    >>> problem = cp.Problem(cp.Minimize(loss.expression), loss.constraints + [E == G])
    >>> _ = problem.solve(solver="CLARABEL")
    >>> round(float(problem.value), 4)  # equals max_sensitivity_loss(G, X, radius=0.5)
    9.0
    """
    check_metric(metric)
    nb = neighbours or neighbourhood(X, radius=radius)
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


# =========================================================================== Section 3.2: the problem

def max_faithfulness_loss(gradients) -> float:
    """``L_faithful^max``: the loss of the constant mean-gradient explanation (Section 3.2).

    Examples
    --------
    >>> import numpy as np
    >>> from explainopt import attributions as xa
    >>> X = np.array([[a, b] for a in (0.0, 0.5, 1.0) for b in (0.0, 0.5, 1.0)])
    >>> G = np.column_stack([2 * X[:, 0], -X[:, 1] ** 2])
    >>> constant = np.tile(G.mean(axis=0), (len(G), 1))  # the mean gradient at every point
    >>> bool(np.isclose(xa.max_faithfulness_loss(G), xa.faithfulness_loss(constant, G)))
    True
    """
    G = _explanations(gradients, name="gradients")
    return faithfulness_loss(np.broadcast_to(G.mean(axis=0), G.shape), G)


@dataclass
class OptimizedExplanations:
    """One solved problem ``min L_robust s.t. L_faithful ≤ η`` (or its pointwise variant).

    ``explanations`` is None when the solver returned no solution (see ``status``). ``faithfulness``,
    ``robustness`` and ``max_pointwise_faithfulness`` (``max_n ‖E_n − ∇f_n‖²``) are NumPy evaluations
    at the returned explanations, not the solver's objective value (kept as ``objective``).
    """

    X: np.ndarray
    gradients: np.ndarray
    radius: float
    metric: str
    pointwise: bool
    eta: float
    explanations: np.ndarray | None
    status: str
    solver: str
    solve_time: float
    objective: float | None = None
    faithfulness: float | None = None
    robustness: float | None = None
    max_pointwise_faithfulness: float | None = None
    fallback_from: str | None = None  # a commercial solver that refused the model for its licence's size

    @property
    def has_solution(self) -> bool:
        return self.explanations is not None

    @property
    def faithfulness_ratio(self) -> float:
        """``L_faithful(E*) / η`` (≈ 1 when the faithfulness constraint is active)."""
        return float("nan") if self.faithfulness is None else self.faithfulness / self.eta


def solve_explanations(X, gradients, *, radius: float, metric: str, eta: float, pointwise: bool = False,
                       solver: str | None = None, time_limit: float | None = None) -> OptimizedExplanations:
    """Solve ``min_E L_robust(E) s.t. L_faithful(E) ≤ η`` (Section 3.2) as an SOCP.

    ``pointwise=True`` replaces the global constraint by ``‖E_n − ∇f_n‖² ≤ η / N`` for every n (the
    pointwise metrics the paper's conclusion calls for; it implies the global constraint). `solver`
    follows :func:`explainopt.solvers.solve` (None or ``"auto"``: ``$EXPLAINOPT_SOLVER``, else Clarabel).

    Examples
    --------
    >>> import numpy as np
    >>> from explainopt import attributions as xa
    >>> X = np.array([[a, b] for a in (0.0, 0.5, 1.0) for b in (0.0, 0.5, 1.0)])
    >>> G = np.column_stack([2 * X[:, 0], -X[:, 1] ** 2])
    >>> eta = 0.2 * xa.max_faithfulness_loss(G)
    >>> result = xa.solve_explanations(X, G, radius=0.5, metric="max_sensitivity", eta=eta, solver="clarabel")
    >>> result.status, bool(result.faithfulness <= eta * (1 + 1e-6))
    ('optimal', True)
    >>> bool(result.robustness < xa.max_sensitivity_loss(G, X, radius=0.5))  # more robust than the gradients
    True
    """
    X = as_points(X)
    G = _explanations(gradients, X, name="gradients")
    if not (np.isfinite(eta) and eta > 0):
        raise ValueError(f"eta must be a positive finite number; got {eta!r}")
    nb = neighbourhood(X, radius=radius)
    if nb.n_pairs == 0:
        raise ValueError(f"radius={radius} is below the grid step {grid_spacing(X):.4g}: no point has a "
                         "neighbour and every robustness loss is 0 (Appendix A excludes such radii)")
    # Exact rescaling E = s·Ẽ with s = sqrt(η/N): the losses are homogeneous (degree 1, or 2 for the
    # squared reading), so the optimum scales; Clarabel fails on some unscaled instances (η ~ 1e4).
    s = float(np.sqrt(eta / len(X)))
    E = cp.Variable(G.shape, name="E")
    loss = robustness_expression(E, X, radius=radius, metric=metric, neighbours=nb)
    if pointwise:
        faithful = [cp.sum(cp.square(E - G / s), axis=1) <= 1.0]
    else:
        faithful = [faithfulness_expression(E, G / s) <= len(X)]
    problem = cp.Problem(cp.Minimize(loss.expression), loss.constraints + faithful)
    result = solvers.solve(problem, solver=solver, time_limit=time_limit)
    if result.objective is not None:
        result.objective *= s ** (2 if metric == "average_sensitivity_squared" else 1)
    out = OptimizedExplanations(X, G, float(radius), metric, bool(pointwise), float(eta), None, result.status,
                                result.solver, result.solve_time, objective=result.objective,
                                fallback_from=result.fallback_from)
    if not result.has_solution or E.value is None:
        log.warning("no solution for %s, u=%s, pointwise=%s: %s", metric, radius, pointwise, result.status)
        return out
    out.explanations = s * np.array(E.value)
    out.faithfulness = faithfulness_loss(out.explanations, G)
    out.robustness = robustness_loss(out.explanations, X, radius=radius, metric=metric)
    out.max_pointwise_faithfulness = float(np.max(np.sum((out.explanations - G) ** 2, axis=1)))
    return out


# =========================================================================== agreement (Section 3.2)

def top_features(E, *, rtol: float = 0.0) -> np.ndarray:
    """Boolean (N, D) mask of each point's most important feature(s): largest ``|E_n,d|``.

    With ``rtol = 0`` only exact ties share the top; ``rtol > 0`` also counts features within
    ``rtol · max_d |E_n,d|`` of the largest (solver round-off on features that tie in ∇f).

    Examples
    --------
    >>> from explainopt.attributions import top_features
    >>> top_features([[1.0, -3.0], [2.0, 2.0]])
    array([[False,  True],
           [ True,  True]])
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

    Examples
    --------
    >>> from explainopt.attributions import agreement_rate
    >>> agreement_rate([[1.0, -3.0], [2.0, 1.0]], [[0.5, 2.0], [0.1, 1.0]])
    0.5
    """
    if len(explanations) < 2:
        raise ValueError(f"agreement needs at least two explanations; got {len(explanations)}")
    arrays = [_explanations(E) for E in explanations]
    if len({a.shape for a in arrays}) != 1:
        raise ValueError(f"explanations must share one shape; got {[a.shape for a in arrays]}")
    common = np.logical_and.reduce([top_features(a, rtol=rtol) for a in arrays])
    return float(common.any(axis=1).mean())


def tied_top_share(gradients, *, rtol: float = 1e-9) -> float:
    """Share of points whose gradient has two or more (numerically) tied most important features.

    Examples
    --------
    >>> from explainopt.attributions import tied_top_share
    >>> tied_top_share([[1.0, -3.0], [2.0, 2.0]])
    0.5
    """
    return float((top_features(gradients, rtol=rtol).sum(axis=1) > 1).mean())


def chance_agreement(gradients, n_explanations: int = 3, *, rtol: float = 1e-9) -> float:
    """Agreement expected if explanations kept ∇f's top features and broke its ties at random.

    At a point whose gradient has k tied most important features, `n_explanations` independent uniform
    picks coincide with probability ``k^{1 − n_explanations}``; points without ties count 1. This is the
    level that argmax agreement falls to when round-off alone decides between tied features.

    Examples
    --------
    >>> from explainopt.attributions import chance_agreement
    >>> chance_agreement([[1.0, -3.0], [2.0, 2.0]], n_explanations=3)  # (1 + 2 ** -2) / 2
    0.625
    """
    if n_explanations < 2:
        raise ValueError(f"n_explanations must be >= 2; got {n_explanations!r}")
    k = top_features(gradients, rtol=rtol).sum(axis=1)
    return float(np.mean(k ** (1.0 - n_explanations)))
