"""Robust counterfactual explanations for randomized ensembles (Forel, Parmentier & Vidal).

What this module offers, by section of the paper:

* **Thresholds** (Section 3). :func:`robustness_threshold` is ``p*(N, alpha) = g_N^{-1}(alpha)`` with
  ``g_N(p) = B(floor(N/2); N, p)`` the binomial c.d.f. (Lemma 3.1, Proposition 3.2), computed exactly
  through the beta-distribution inverse ``g_N(p) = I_{1-p}(N - k, k + 1)`` (Appendix A.1), for odd and
  even N. :func:`robust_saa_threshold` is the Robust-SAA threshold ``rho*(N, alpha, beta)`` of eq. (8)
  with the Agresti-Coull term (or, with ``form="code"``, the implicit version of the authors' code).
* **Counterfactuals** (Problem (2), Appendix B.1). :func:`~explainopt.counterfactuals.ensemble_counterfactual`
  is the nearest counterfactual of :func:`~explainopt.counterfactuals.nearest_counterfactual` (the same feature
  space, distance, encoding and float32 repair) with the feature-weighted l1 distance (weight 1/4 on
  non-continuous features) and the target-class score ``>= tau`` (``predicts(target, threshold=)``). What it
  adds: when the target constraint is infeasible it is relaxed with the penalty ``5000 d nu`` of Appendix B.1,
  and the result says so (``relaxed``). Naive: ``tau = 1/2``; Direct-SAA: ``tau = p*``; Robust-SAA:
  ``tau = rho*`` (:func:`score_threshold`). Every point is checked with the forest's own
  ``predict``/``predict_proba``. :func:`~explainopt.counterfactuals.ensemble_counterfactuals` gives one
  factual's counterfactuals for several thresholds from one problem (tau a cvxpy Parameter: encoded and
  compiled once, warm-started from a lower threshold's point pushed to the higher one, and that point returned
  where it is provably optimal for the higher one); the distance is bounded below by the forest's split
  binaries (valid rows that tighten the relaxation).
* **Plausibility benchmarks** (Appendix B.2, B.3): isolation-forest inlier constraints
  (:func:`fit_isolation_forest`, through the IsolationForest encoder; several contamination levels of one
  forest, which differ only in ``offset_``, from one problem: :func:`isolation_forest_counterfactuals`) and a
  1-LOF penalty (weight as a parameter) over the ``N_r = 10`` target-class points nearest to the factual
  (:func:`lof_candidates`).
* **Validity under retraining** (Definition 2.1): :func:`binomial_interval` gives the confidence
  interval of a validity rate.

The experiments of Section 5 (simulations, tables, figures, claims) are chapter 5's protocol:
``explainopt.chapters.robust_ensembles``.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, replace

import cvxpy as cp
import numpy as np
from scipy import stats
from sklearn.ensemble import IsolationForest

from .. import solvers
from ..encoders import model_family, model_predict
from ..encoders.base import model_input
from ..encoders.trees import cell_distance_bound, tree_ensemble
from ..featurespace import box_spec, data_spec
from ..validation import check_model, check_spec, counterfactual_inputs
from .base import is_valid
from .costs import sparsity
from .nearest import CounterfactualResult, checked_problem, distance

#: The methods whose score threshold :func:`score_threshold` gives.
SAA_METHODS = ("naive", "direct-saa", "robust-saa")
#: A feature counts as changed (``n_changed``) when it moves by more than this.
CHANGE_TOLERANCE = 1e-6


# --------------------------------------------------------------------------- thresholds (Section 3)

def _check_n_alpha(n_estimators, alpha) -> int:
    if not float(n_estimators).is_integer() or int(n_estimators) < 1:
        raise ValueError(f"n_estimators must be a positive integer, got {n_estimators!r}")
    if not 0.0 <= float(alpha) <= 1.0:
        raise ValueError(f"alpha must lie in [0, 1], got {alpha!r}")
    return int(n_estimators)


def ensemble_majority_probability(n_estimators: int, p) -> np.ndarray:
    """``1 - g_N(p) = 1 - B(floor(N/2); N, p)``: the probability that more than half of N i.i.d.
    Bernoulli(p) learners vote 1 (equal to P(h_N >= 1/2) for odd N, a lower bound for even N; App. A.2).

    Examples
    --------
    At the Direct-SAA threshold ``p*(N, alpha)`` a majority votes 1 with probability ``1 - alpha``:

    >>> ensemble_majority_probability(5, [0.5, robustness_threshold(5, alpha=0.2)]).round(3)
    array([0.5, 0.8])
    """
    n = _check_n_alpha(n_estimators, 0.5)
    return stats.binom.sf(n // 2, n, np.asarray(p, dtype=float))


def robustness_threshold(n_estimators: int, alpha: float) -> float:
    """``p*(N, alpha) = g_N^{-1}(alpha)``: the smallest p with ``B(N/2; N, p) <= alpha`` (Prop. 3.2).

    Exact: with ``k = floor(N/2)``, ``g_N(p) = 1 - I_p(k + 1, N - k)`` (Appendix A.1), so ``p*`` is the
    ``1 - alpha`` quantile of Beta(k + 1, N - k). Works for odd and even N (for even N the binomial
    c.d.f. at N/2 includes the tie, as in the paper and the authors' code).

    Examples
    --------
    The more trees, the closer ``p*`` to 1/2:

    >>> round(robustness_threshold(5, alpha=0.2), 3), round(robustness_threshold(100, alpha=0.1), 3)
    (0.673, 0.569)
    """
    n = _check_n_alpha(n_estimators, alpha)
    k = n // 2
    return float(stats.beta.ppf(1.0 - float(alpha), k + 1, n - k))


def robust_saa_threshold(n_estimators: int, alpha: float, beta: float, *, form: str = "paper") -> float:
    """Robust-SAA threshold ``rho*(N, alpha, beta)`` (eq. 8), capped at 1.

    ``form="paper"``: ``rho* = p* + z_beta sqrt(rho_AC (1 - rho_AC) / N)`` with
    ``rho_AC = (N p* + 2) / (N + 4)`` and ``z_beta`` the upper-beta normal quantile (so beta = 0.05 is
    more conservative than 0.1, as in Figure 2). ``form="code"``: the authors' implementation, the
    smallest p whose Agresti-Coull lower bound ``p_AC - z_beta sqrt(p_AC (1 - p_AC) / N)``, with
    ``p_AC = (N p + 2)/(N + 4)``, reaches ``p*`` (solved by bisection instead of their grid).

    Examples
    --------
    >>> round(robust_saa_threshold(100, alpha=0.1, beta=0.05), 3)
    0.65
    >>> round(robust_saa_threshold(100, alpha=0.1, beta=0.05, form="code"), 3)
    0.653
    """
    n = _check_n_alpha(n_estimators, alpha)
    if not 0.0 < float(beta) < 1.0:
        raise ValueError(f"beta must lie in (0, 1), got {beta!r}")
    p_star, z = robustness_threshold(n, alpha), float(stats.norm.ppf(1.0 - float(beta)))
    if form == "paper":
        rho_ac = (n * p_star + 2.0) / (n + 4.0)
        return float(min(1.0, p_star + z * math.sqrt(rho_ac * (1.0 - rho_ac) / n)))
    if form == "code":
        def lower_bound(p):
            p_ac = (n * p + 2.0) / (n + 4.0)
            return p_ac - z * math.sqrt(p_ac * (1.0 - p_ac) / n)
        if lower_bound(1.0) < p_star:
            return 1.0
        lo, hi = 0.0, 1.0
        for _ in range(100):  # lower_bound is increasing on [0, 1] for the N used here
            mid = 0.5 * (lo + hi)
            lo, hi = (mid, hi) if lower_bound(mid) < p_star else (lo, mid)
        return float(hi)
    raise ValueError(f"form must be 'paper' or 'code', got {form!r}")


def score_threshold(method: str, *, n_estimators: int, alpha: float = 0.5, beta: float | None = None) -> float:
    """The score threshold tau of each method of :data:`SAA_METHODS` (Appendix B.1): naive 1/2,
    Direct-SAA ``p*(N, alpha)``, Robust-SAA ``rho*(N, alpha, beta)``.

    Examples
    --------
    >>> [round(score_threshold(method, n_estimators=100, alpha=0.1, beta=0.05), 3) for method in SAA_METHODS]
    [0.5, 0.569, 0.65]
    """
    if method == "naive":
        return 0.5
    if method == "direct-saa":
        return robustness_threshold(n_estimators, alpha)
    if method == "robust-saa":
        if beta is None:
            raise ValueError("robust-saa needs beta (e.g. 0.05 or 0.1)")
        return robust_saa_threshold(n_estimators, alpha, beta)
    raise ValueError(f"unknown method {method!r}; expected one of {SAA_METHODS}")


# --------------------------------------------------------------------------- validity statistics

@dataclass
class ValidityEstimate:
    """Share of counterfactuals valid for a retrained forest, with a Clopper-Pearson interval."""

    valid: int
    n: int
    rate: float
    low: float
    high: float


def binomial_interval(valid: int, n: int, *, level: float = 0.95) -> ValidityEstimate:
    """Validity rate ``valid / n`` with the exact (Clopper-Pearson) binomial confidence interval.

    The interval treats the n counterfactuals as independent; those of one simulation share the two
    forests, so chapter 5 counts its simulations as clusters instead (``clustered_interval`` of its
    chapter module).

    Examples
    --------
    >>> estimate = binomial_interval(45, 50)
    >>> estimate.rate, round(estimate.low, 3), round(estimate.high, 3)
    (0.9, 0.782, 0.967)
    """
    if n <= 0:
        return ValidityEstimate(int(valid), int(n), float("nan"), float("nan"), float("nan"))
    if not 0 <= valid <= n:
        raise ValueError(f"valid must lie in [0, n={n}], got {valid}")
    ci = stats.binomtest(int(valid), int(n)).proportion_ci(confidence_level=level, method="exact")
    return ValidityEstimate(int(valid), int(n), valid / n, float(ci.low), float(ci.high))



def feature_weights(spec, *, non_continuous: float = 0.25) -> np.ndarray:
    """Weights of the l1 distance (Section 5): 1 on continuous features, 1/4 on the others.

    Examples
    --------
    >>> from explainopt.datasets import FeatureSpec
    >>> spec = [FeatureSpec("age", "discrete", 18, 90), FeatureSpec("income"), FeatureSpec("owner", "binary")]
    >>> feature_weights(spec)
    array([0.25, 1.  , 0.25])
    """
    return np.array([1.0 if f.kind == "continuous" else non_continuous for f in spec])


def weighted_l1(a, b, weights) -> np.ndarray:
    """Feature-weighted l1 distance between the rows of `a` and `b` (broadcasting).

    Examples
    --------
    >>> weighted_l1([[0.0, 0.0], [1.0, 1.0]], [1.0, 0.0], weights=[1.0, 0.25])
    array([1.  , 0.25])
    """
    return np.abs(np.asarray(a, float) - np.asarray(b, float)) @ np.asarray(weights, float)


# --------------------------------------------------------------------------- plausibility benchmarks

def fit_isolation_forest(X_target, *, contamination: float, n_estimators: int = 50, random_state: int = 0):
    """Isolation forest on the training rows of the target class (Appendix B.2; other parameters at
    scikit-learn's defaults).

    Examples
    --------
    >>> X_target = np.random.default_rng(0).uniform(size=(200, 2))
    >>> iso = fit_isolation_forest(X_target, contamination=0.1, n_estimators=20)
    >>> float((iso.predict(X_target) == -1).mean()), iso.predict([[0.5, 0.5], [3.0, 3.0]]).tolist()
    (0.1, [1, -1])
    """
    if not 0.0 < contamination <= 0.5:
        raise ValueError(f"contamination must lie in (0, 0.5], got {contamination!r}")
    return IsolationForest(n_estimators=n_estimators, contamination=contamination,
                           random_state=random_state).fit(np.asarray(X_target, float))


@dataclass
class LofCandidates:
    """Target-class training points near the factual, their 1-NN distances and densities (App. B.3)."""

    points: np.ndarray
    delta: np.ndarray  # distance of each point to its nearest other target-class point
    lrd: np.ndarray  # local reachability density 1 / delta


def lof_candidates(X_target, x0, *, weights, n_candidates: int = 10) -> LofCandidates:
    """The ``N_r`` target-class points nearest to the factual (weighted l1), with their 1-LOF data.

    Duplicated rows are merged first (as in the authors' code); the 1-NN distance of a candidate is
    taken over all remaining target-class rows.

    Examples
    --------
    >>> X_target = np.array([[0.0, 1.0], [0.0, 1.2], [1.0, 1.0], [2.0, 2.0]])
    >>> lof = lof_candidates(X_target, [0.0, 0.0], weights=[1.0, 1.0], n_candidates=2)
    >>> lof.points.tolist(), lof.delta.round(3).tolist()
    ([[0.0, 1.0], [0.0, 1.2]], [0.2, 0.2])
    """
    X_target = np.unique(np.asarray(X_target, float), axis=0)
    if len(X_target) < 2:
        raise ValueError("lof_candidates needs at least two distinct target-class points")
    order = np.argsort(weighted_l1(X_target, x0, weights))[:n_candidates]
    points = X_target[order]
    delta = np.empty(len(points))
    for i, (row, index) in enumerate(zip(points, order)):
        d = weighted_l1(X_target, row, weights)
        d[index] = np.inf
        delta[i] = max(float(d.min()), 1e-6)
    return LofCandidates(points, delta, 1.0 / delta)


# --------------------------------------------------------------------------- the counterfactual MILP

@dataclass
class EnsembleCounterfactual(CounterfactualResult):
    """One counterfactual of :func:`~explainopt.counterfactuals.ensemble_counterfactual` (fields of
    :class:`~.nearest.CounterfactualResult` first; ``valid``: the forest's ``predict(x)`` is the target).

    target, tau: the target class (a label of ``forest.classes_``) and its score threshold; score: the
    forest's own ``predict_proba`` of the target class at ``x``; meets_threshold: ``score >= tau`` (checked
    with the true forest, not the MILP); relaxed: the hard problem was infeasible and the penalized relaxation (App. B.1) was solved,
    with slack ``relaxation`` (``solve_time`` then counts both solves); n_changed: features changed by
    more than :data:`~explainopt.counterfactuals.ensembles.CHANGE_TOLERANCE` (``costs.sparsity``, a one-hot
    group counting once);
    inlier: the isolation forest's decision at x, when one was given;
    reused: the point of a lower threshold, optimal here too
    (:func:`~explainopt.counterfactuals.ensemble_counterfactuals`).
    """

    target: object = None
    tau: float = 0.5
    score: float = float("nan")
    meets_threshold: bool = False
    relaxed: bool = False
    relaxation: float = float("nan")
    n_changed: int = 0
    inlier: bool | None = None
    reused: bool = False


def _lof_terms(x, lof: LofCandidates, weights, spec):
    """Variables and constraints of the 1-LOF penalty (App. B.3); returns (penalty expression, constraints).

    nu_i selects one candidate; rho_i >= delta_i nu_i and rho_i >= f(x, x_i) - (1 - nu_i) M. The
    penalty is ``sum_i lrd_i rho_i``. Difference from the paper: the constraint that the selected
    candidate is the nearest one to x is dropped (it needs exact, not epigraph, distances); the
    optimizer thus picks the candidate with the smallest 1-LOF-type ratio ``max(1, f(x, x_i)/delta_i)``.
    """
    n_c = len(lof.points)
    span = np.array([f.upper - f.lower for f in spec], dtype=float)
    big_m = float(np.asarray(weights) @ np.maximum(span, 1.0))
    nu, rho = cp.Variable(n_c, boolean=True), cp.Variable(n_c, nonneg=True)
    dist = cp.hstack([distance(x - point, "l1", weights) for point in lof.points])
    cons = [cp.sum(nu) == 1, rho >= cp.multiply(lof.delta, nu), rho >= dist - big_m * (1 - nu)]
    return lof.lrd @ rho, cons


def _targets(forest_encoding, inlier_encoding, *, target, tau, margin, inlier_threshold=None, slack=0.0,
             inlier_slack=0.0) -> list:
    """Target-class score ``>= tau + margin`` (the encoded output is the class-1 probability, so target 0
    asks ``output <= 1 - tau - margin``) and, with an isolation forest, x an inlier (mean path length
    ``>= inlier_threshold``, default the encoding's own); each relaxed by its slack (0 for the hard
    problem). `tau` and `inlier_threshold` may be cvxpy Parameters (one program for every threshold)."""
    threshold = tau - slack if target == 1 else (1.0 - tau) + slack
    cons = forest_encoding.predicts(target, margin=margin, threshold=threshold)
    if inlier_encoding is not None:  # the inlier rule is inclusive: no margin
        inlier_threshold = inlier_encoding.threshold if inlier_threshold is None else inlier_threshold
        cons += inlier_encoding.predicts(1, margin=0.0, threshold=inlier_threshold - inlier_slack)
    return cons


def _distance_objective(problem, weights, cell_bounds: bool):
    """The weighted l1 distance to the factual, and its constraints.

    With ``cell_bounds``: ``weights @ d`` with ``d >= |x - x0|`` and ``d_f`` at least the distance from
    ``x0_f`` to the cell the forest's split binaries choose (:func:`~explainopt.encoders.trees.
    cell_distance_bound`). Those rows are valid, so the optimum and its value are unchanged (at an
    optimum ``d = |x - x0|``); they tighten the LP relaxation, where a fractional split otherwise moves
    x for free. Without: the problem's own ``weights @ |x - x0|``.
    """
    bound = cell_distance_bound(problem.encoding, problem.x0) if cell_bounds else None
    if bound is None:
        return problem.distance, []
    features, lower = bound
    d = cp.Variable(len(problem.x0), nonneg=True, name="distance")
    return weights @ d, [d >= problem.x - problem.x0, d >= problem.x0 - problem.x, d[features] >= lower]


def _cut_points(encoding, kinds) -> dict:
    """Per continuous feature, the values just either side of the forest's thresholds on it (the cell
    boundaries ``t -+ eps`` of the split formulation)."""
    keys = encoding.variables.get("split_keys")
    if keys is None:
        return {}
    feat, thr, eps = keys
    return {int(f): np.r_[thr[feat == f] - eps[feat == f], thr[feat == f] + eps[feat == f]]
            for f in np.unique(feat) if kinds[f] == "continuous"}


def _single_moves(x, x0, space, spec, cuts) -> np.ndarray:
    """The points one move away from x inside the feature space's bounds: a continuous feature to a cell
    boundary of the forest or back to x0, a binary feature flipped, a one-hot group switched."""
    rows = []

    def add(columns, values):
        if np.all((space.lower[columns] <= values) & (values <= space.upper[columns])):
            row = x.copy()
            row[columns] = values
            rows.append(row)

    for f, values in cuts.items():
        for v in np.unique(np.append(values, x0[f])):
            if v != x[f]:
                add([f], [v])
    groups: dict = {}
    for j, f in enumerate(spec):
        if f.kind == "binary" and f.group is None:
            add([j], [1.0 - x[j]])
        elif f.group is not None:
            groups.setdefault(f.group, []).append(j)
    for columns in groups.values():
        for j in columns:
            if x[j] < 0.5:
                add(columns, (np.array(columns) == j).astype(float))
    return np.array(rows).reshape(-1, len(x))


def _pushed_further(forest, x, *, goal, class_index, x0, weights, space, spec, cuts, max_moves: int = 3):
    """A point near `x` (a lower threshold's counterfactual) whose forest score reaches `goal`, or None.

    Greedy: while no single move reaches `goal`, take the move with the largest score gain per unit of
    distance (at most `max_moves` times); then the nearest single move that reaches it. A heuristic for a
    MIP start only: the solver still proves the optimum."""
    x = np.where(np.isin(space.kinds, ["binary", "categorical"]), np.round(x), x)  # the solver's 1 - 1e-9
    score, dist = float(forest.predict_proba(model_input(forest, x))[0, class_index]), weighted_l1(x, x0, weights)
    for _ in range(max_moves + 1):
        candidates = _single_moves(x, x0, space, spec, cuts)
        if not len(candidates):
            return None
        scores = forest.predict_proba(model_input(forest, candidates))[:, class_index]
        dists = weighted_l1(candidates, x0, weights)
        if (scores >= goal).any():
            return candidates[scores >= goal][np.argmin(dists[scores >= goal])]
        best = np.argmax((scores - score) / np.maximum(dists - dist, 1e-9))
        if scores[best] <= score:
            return None
        x, score, dist = candidates[best], scores[best], dists[best]
    return None


def _solve_at(problem, program, box, point, options) -> float:
    """Solve `program` with x fixed at `point` (its `box` Parameters closed on it), then reopen the box: the
    completed solution (every auxiliary variable) is the next solve's warm start, a MIP start when it is
    feasible and nothing when not. Returns the solver's seconds."""
    lower, upper = box[0].value, box[1].value
    box[0].value = box[1].value = point
    try:
        return problem.solve_program(program, **options).solve_time
    finally:
        box[0].value, box[1].value = lower, upper


def check_forest(forest) -> None:
    """A fitted binary random forest (RandomForestClassifier, ExtraTreesClassifier): a model whose score is
    a soft vote of its trees, on which a threshold tau has the meaning of Section 3; TypeError otherwise.

    Examples
    --------
    >>> from sklearn.ensemble import GradientBoostingClassifier
    >>> X = np.array([[0.0, 0.0], [0.2, 0.9], [0.9, 0.1], [1.0, 1.0]])
    >>> check_forest(GradientBoostingClassifier(n_estimators=2).fit(X, [0, 0, 1, 1]))
    Traceback (most recent call last):
    TypeError: forest: tau is a threshold on the soft vote of a random forest (predict_proba); ...
    """
    check_model(forest)
    if model_family(forest) != "ensemble" or hasattr(forest, "init_"):  # gradient boosting has an init_
        raise TypeError(f"forest: tau is a threshold on the soft vote of a random forest (predict_proba); a "
                        f"{type(forest).__name__} has no such vote (for gradient boosting, pass a threshold "
                        "on its logit to nearest_counterfactual(threshold=...))")


def _forest_inputs(forest, x0, spec, lower, upper, *, X, target, **solver_options):
    """The checked inputs (:func:`~explainopt.validation.counterfactual_inputs`) and the feature spec of
    an ensemble counterfactual: `spec`, else a box of `lower`/`upper`, else the types and box of `X`."""
    check_forest(forest)
    checked = counterfactual_inputs(forest, x0, lower=lower, upper=upper, X=X, target=target,
                                    box="none" if spec is not None else "required", **solver_options)
    if spec is None:
        spec = data_spec(X) if X is not None and lower is None and upper is None else \
            box_spec(checked.x0.size, checked.lower, checked.upper)
    check_spec(spec, checked.x0)
    return checked, spec


def _check_tau(tau) -> float:
    if not 0.0 <= float(tau) <= 1.0:
        raise ValueError(f"tau must lie in [0, 1], got {tau!r}")
    return float(tau)


def ensemble_counterfactual(forest, x0, spec=None, lower=None, upper=None, *, X=None, tau: float | None = None,
                            alpha: float | None = None, beta: float | None = None, target=None, weights=None,
                            isolation_forest=None, lof: LofCandidates | None = None, lof_weight: float = 0.0,
                            penalty: float | None = None, margin: float = 1e-5, solver: str | None = None,
                            time_limit: float | None = None, mip_gap: float | None = 1e-4) -> EnsembleCounterfactual:
    """Nearest counterfactual with target-class score ``>= tau`` (Problem (2) with (2b) replaced by (5)).

    For several thresholds of one factual, :func:`~explainopt.counterfactuals.ensemble_counterfactuals`
    builds the problem once.

    Parameters
    ----------
    forest : a fitted binary random forest
        A RandomForestClassifier or ExtraTreesClassifier; the score is its soft vote, ``predict_proba``.
    x0 : the factual: an array, a Series or a one-row DataFrame.
    spec, lower, upper, X : the feature space
        A dataset's feature spec (kinds, bounds, actionability, one-hot groups); else continuous free
        features in the box `lower`/`upper` (scalars, arrays or Series); else the types and box of the
        data `X` (``explainopt.featurespace.data_spec``).
    tau : the score threshold of the target class
        Give `tau` or `alpha`, not both.
    alpha, beta : the risk levels that set tau
        ``alpha`` alone: Direct-SAA, ``tau = p*(N, alpha)``
        (:func:`~explainopt.counterfactuals.ensembles.robustness_threshold`); with ``beta``: Robust-SAA,
        ``tau = rho*(N, alpha, beta)`` (:func:`~explainopt.counterfactuals.ensembles.robust_saa_threshold`);
        N is the forest's own ``n_estimators``. Neither `tau` nor `alpha`: ``tau = 0.5`` (naive).
    target : a label of ``forest.classes_``
        Default: the class other than the forest's prediction at ``x0``.
    weights : the weights of the l1 distance
        Default: :func:`~explainopt.counterfactuals.ensembles.feature_weights` (1/4 on non-continuous
        features).
    isolation_forest : a fitted IsolationForest whose inlier decision constrains x (App. B.2).
    lof, lof_weight : the 1-LOF candidates and the penalty weight lambda (App. B.3).
    penalty : the cost of the relaxation slack (App. B.1)
        Default: ``5000 * n_features``.
    margin : the strictness of the score constraint
        The authors use 1e-5 (the default).
    solver, time_limit, mip_gap : see :func:`explainopt.solvers.solve`.

    Returns
    -------
    EnsembleCounterfactual
        Its ``valid`` is the forest's own ``predict``; ``score`` its ``predict_proba`` of the target class
        and ``meets_threshold`` whether that reaches ``tau``.

    Examples
    --------
    >>> from sklearn.ensemble import RandomForestClassifier
    >>> X = np.array([[0.0, 0.0], [0.2, 0.9], [0.9, 0.1], [1.0, 1.0]] * 5)
    >>> forest = RandomForestClassifier(n_estimators=5, random_state=0).fit(X, [0, 0, 1, 1] * 5)
    >>> ce = ensemble_counterfactual(forest, X[0], X=X, alpha=0.2)
    >>> ce.status, ce.target, ce.valid, ce.meets_threshold, round(ce.tau, 3)
    ('optimal', 1, True, True, 0.673)
    """
    if tau is not None and alpha is not None:
        raise ValueError("pass tau= or alpha= (with beta= for Robust-SAA), not both")
    check_forest(forest)
    if tau is None:
        method = "naive" if alpha is None else "direct-saa" if beta is None else "robust-saa"
        n = getattr(forest, "n_estimators", None)
        tau = 0.5 if alpha is None else score_threshold(method, n_estimators=n, alpha=alpha, beta=beta)
    return ensemble_counterfactuals(forest, x0, spec, lower, upper, X=X, taus=[tau], target=target, weights=weights,
                                    isolation_forest=isolation_forest, lof=lof, lof_weight=lof_weight,
                                    penalty=penalty, margin=margin, solver=solver, time_limit=time_limit,
                                    mip_gap=mip_gap)[0]


def ensemble_counterfactuals(forest, x0, spec=None, lower=None, upper=None, *, X=None, taus, target=None, weights=None,
                             isolation_forest=None, lof: LofCandidates | None = None, lof_weight: float = 0.0,
                             penalty: float | None = None, margin: float = 1e-5, solver: str | None = None,
                             time_limit: float | None = None, mip_gap: float | None = 1e-4,
                             reuse: bool = True, warm_start: bool = True,
                             cell_bounds: bool = True, mip_start: bool = True) -> list[EnsembleCounterfactual]:
    """:func:`~explainopt.counterfactuals.ensemble_counterfactual` for each threshold of `taus` (one result per
    entry, in that order; other arguments as there), with one problem per factual and forest.

    The problems differ only in the right-hand side of the score constraint, so the threshold is a cvxpy
    Parameter: the forest is encoded and the program compiled once (and once more for the relaxation of
    App. B.1 if it is needed), then solved for the distinct thresholds in increasing order, each solve
    warm-started from the previous one (``warm_start``). Raising tau only shrinks the feasible set, with
    the objective unchanged, which gives two exact shortcuts (``reuse``):

    * a point optimal for a lower threshold whose score (the forest's own ``predict_proba`` and the
      encoded output) already meets the higher one is optimal there too, within the same MIP gap: it is
      returned without a solve (``reused``; ``solve_time`` 0);
    * when the hard problem is infeasible at a threshold, it is infeasible at every higher one: those go
      straight to the relaxation (``relaxed``).

    ``cell_bounds``: the distance bounded below by the split binaries (``_distance_objective``:
    valid rows, the same optimum, a tighter relaxation). ``mip_start`` (with ``warm_start``): before a
    threshold's solve, the last lower threshold's point is pushed to a point of the forest that meets the
    new one (``_pushed_further``, a greedy search with the forest's own ``predict_proba``), completed
    by a solve with x fixed there (``_solve_at``) and handed to the solver as its start; its seconds
    count in ``solve_time``. The start only gives the solver an incumbent: the optimum is still proven.

    Each result's ``time`` counts its own solves and checks, and the first solved threshold's also the
    encoding and compilation shared by all. Every point is checked with the forest's ``predict`` and
    ``predict_proba``, reused or not.

    Examples
    --------
    The point found for tau = 0.6 already has score 1, so it is optimal for 0.8 as well (``reused``):

    >>> from sklearn.ensemble import RandomForestClassifier
    >>> X = np.array([[0.0, 0.0], [0.2, 0.9], [0.9, 0.1], [1.0, 1.0]] * 5)
    >>> forest = RandomForestClassifier(n_estimators=5, random_state=0).fit(X, [0, 0, 1, 1] * 5)
    >>> ces = ensemble_counterfactuals(forest, X[0], X=X, taus=[0.5, 0.6, 0.8])
    >>> [(ce.status, ce.valid, round(ce.score, 2), ce.reused, round(ce.distance, 3)) for ce in ces]
    [('optimal', True, 0.6, False, 0.55), ('optimal', True, 1.0, False, 0.6), ('optimal', True, 1.0, True, 0.6)]
    """
    started = time.perf_counter()
    taus = [_check_tau(t) for t in taus]
    levels = sorted(set(taus))
    chain = _chained(forest, x0, spec, lower, upper, X=X, levels=[(tau, isolation_forest) for tau in levels],
                     target=target, weights=weights, lof=lof, lof_weight=lof_weight, penalty=penalty, margin=margin,
                     solver=solver, time_limit=time_limit, mip_gap=mip_gap, reuse=reuse, warm_start=warm_start,
                     cell_bounds=cell_bounds, mip_start=mip_start, started=started)
    results = dict(zip(levels, chain))
    return [results[t] for t in taus]


def isolation_forest_counterfactuals(forest, x0, spec=None, lower=None, upper=None, *, X=None, isolation_forests,
                                     tau: float = 0.5, target=None, weights=None, penalty: float | None = None,
                                     margin: float = 1e-5, solver: str | None = None, time_limit: float | None = None,
                                     mip_gap: float | None = 1e-4, reuse: bool = True, warm_start: bool = True,
                                     cell_bounds: bool = True) -> list[EnsembleCounterfactual]:
    """:func:`~explainopt.counterfactuals.ensemble_counterfactual` with the inlier constraint of each of
    `isolation_forests` (the plausibility benchmark of App. B.2 at several contamination levels), one result per
    entry, in that order, from one problem (other arguments as there).

    The isolation forests must share their trees and differ only in ``offset_``: scikit-learn's ``contamination``
    sets ``offset_`` alone (the ``contamination`` percentile of the training scores), so
    :func:`fit_isolation_forest` with one ``random_state`` and several contaminations gives such forests. Their
    inlier constraints then differ only in the threshold on the mean path length (a monotone image of ``offset_``).
    As :func:`~explainopt.counterfactuals.ensemble_counterfactuals` does for score thresholds, the first forest is
    encoded and the program compiled once with that threshold a cvxpy Parameter, and the thresholds are solved from
    the lowest (the smallest contamination) up, each feasible set inside the previous one:

    * a point proven optimal for a lower threshold that is an inlier of the next forest (its own
      ``predict`` and the encoded mean path length) is optimal there too, within the same MIP gap: it is
      returned without a solve (``reused``; ``solve_time`` 0);
    * when the hard problem is infeasible at a threshold, the higher ones go straight to the relaxation.

    Every point is checked with the forest's ``predict``/``predict_proba`` and its level's isolation
    forest's ``predict`` (``inlier``), reused or not.

    Examples
    --------
    >>> from sklearn.ensemble import RandomForestClassifier
    >>> X = np.random.default_rng(0).uniform(size=(40, 2))
    >>> y = (X.sum(axis=1) > 1).astype(int)
    >>> forest = RandomForestClassifier(n_estimators=5, max_depth=2, random_state=0).fit(X, y)
    >>> levels = [fit_isolation_forest(X[y == 1], contamination=c, n_estimators=5) for c in (0.05, 0.2, 0.5)]
    >>> ces = isolation_forest_counterfactuals(forest, X[y == 0][2], X=X, isolation_forests=levels)
    >>> [(ce.valid, ce.inlier, ce.reused, round(ce.distance, 3)) for ce in ces]
    [(True, True, False, 0.44), (True, True, True, 0.44), (True, True, False, 0.505)]
    """
    started = time.perf_counter()
    tau, isolation_forests = _check_tau(tau), list(isolation_forests)
    _check_shared_trees(isolation_forests)
    # the inlier threshold on the mean path length, -c(psi) log2(-offset_), increases with offset_
    order = np.argsort([iso.offset_ for iso in isolation_forests], kind="stable")
    chain = _chained(forest, x0, spec, lower, upper, X=X, levels=[(tau, isolation_forests[j]) for j in order],
                     target=target, weights=weights, lof=None, lof_weight=0.0, penalty=penalty, margin=margin,
                     solver=solver, time_limit=time_limit, mip_gap=mip_gap, reuse=reuse, warm_start=warm_start,
                     cell_bounds=cell_bounds, mip_start=True, started=started)
    results = dict(zip(order.tolist(), chain))
    return [results[j] for j in range(len(isolation_forests))]


def _check_shared_trees(isolation_forests) -> None:
    """Fitted IsolationForests with the same trees (they may differ in ``offset_``); an error otherwise."""
    if not isolation_forests:
        raise ValueError("isolation_forests is empty")
    for iso in isolation_forests:
        if not isinstance(iso, IsolationForest):
            raise TypeError(f"isolation_forests: expected fitted IsolationForests, got a {type(iso).__name__}")
        check_model(iso)
    first = isolation_forests[0]

    def same(a, b):
        if a.max_samples_ != b.max_samples_ or len(a.estimators_) != len(b.estimators_):
            return False
        trees = zip(a.estimators_, b.estimators_, a.estimators_features_, b.estimators_features_)
        return all(np.array_equal(fa, fb) and all(np.array_equal(getattr(ta.tree_, k), getattr(tb.tree_, k))
                                                  for k in ("feature", "threshold", "children_left",
                                                            "children_right", "n_node_samples"))
                   for ta, tb, fa, fb in trees)

    if not all(same(first, iso) for iso in isolation_forests[1:]):
        raise ValueError("isolation_forests must share their trees and differ only in offset_ (fit on the same data "
                         "with the same random_state, n_estimators and max_samples, e.g. fit_isolation_forest at "
                         "several contaminations)")


def _chained(forest, x0, spec, lower, upper, *, X, levels, target, weights, lof, lof_weight, penalty, margin, solver,
             time_limit, mip_gap, reuse, warm_start, cell_bounds, mip_start, started) -> list[EnsembleCounterfactual]:
    """The counterfactuals of one factual for `levels`, (tau, isolation forest or None) pairs, each level's
    feasible set inside the previous one's (tau and the inlier threshold never decrease): one program,
    its thresholds cvxpy Parameters, solved level by level (:func:`ensemble_counterfactuals`,
    :func:`isolation_forest_counterfactuals`). The isolation forests share their trees: the first is
    encoded. Returns one result per level, in order."""
    checked, spec = _forest_inputs(forest, x0, spec, lower, upper, X=X, target=target, solver=solver,
                                   time_limit=time_limit, mip_gap=mip_gap)
    weights = feature_weights(spec) if weights is None else weights
    problem = checked_problem(forest, checked, spec, norm="l1", weights=weights)
    x0, weights, target = problem.x0, problem.weights, checked.target
    penalty = 5000.0 * len(x0) if penalty is None else float(penalty)
    isolation_forest = levels[0][1] if levels else None
    inlier = None if isolation_forest is None else problem.encode(isolation_forest)
    objective, extra = _distance_objective(problem, weights, cell_bounds)
    if lof is not None and lof_weight > 0:
        lof_penalty, lof_cons = _lof_terms(problem.x, lof, weights, spec)
        objective, extra = objective + lof_weight * lof_penalty, extra + lof_cons
    options = dict(solver=solver, time_limit=time_limit, mip_gap=mip_gap, warm_start=warm_start)
    tau_param = cp.Parameter(nonneg=True, name="tau")
    inlier_param = None if inlier is None else cp.Parameter(name="inlier_threshold")
    targets = dict(target=target, tau=tau_param, margin=margin, inlier_threshold=inlier_param)
    box = cp.Parameter(len(x0), name="lower"), cp.Parameter(len(x0), name="upper")  # closed to fix a start
    box[0].value, box[1].value = problem.space.lower, problem.space.upper
    mip_start = mip_start and warm_start
    hard = problem.program(objective, _targets(problem.encoding, inlier, **targets) + extra
                           + ([problem.x >= box[0], problem.x <= box[1]] if mip_start else []))
    cuts = _cut_points(problem.encoding, problem.space.kinds)
    relaxation = None  # (program, slack), built when a hard problem is first infeasible
    infeasible = False  # a hard problem proven infeasible: so is every later level's
    class_index = target
    results = []
    previous = None  # (result, encoded target score, encoded path length, inlier threshold) of the last optimum
    last = None  # (point, tau) of the last hard point found (for a lower level): where a MIP start is sought
    for tau, iso in levels:
        level_started = started if not results else time.perf_counter()
        threshold = None if iso is None else tree_ensemble(iso).threshold
        if reuse and previous is not None and _meets_level(previous, tau + margin, iso, threshold):
            point = previous[0]
            valid = is_valid(forest, point.x, target)  # the forest's own predict, again
            results.append(replace(point, x=point.x.copy(), tau=tau, solve_time=0.0, reused=True, valid=valid,
                                   meets_threshold=point.score >= tau - 1e-9,
                                   inlier=None if iso is None else _is_inlier(iso, point.x),
                                   time=time.perf_counter() - level_started))
            continue
        tau_param.value = tau
        if inlier_param is not None:
            inlier_param.value = threshold
        solve_time = 0.0
        relaxed = reuse and infeasible
        if not relaxed:
            start = None if last is None or not mip_start or tau <= last[1] else _pushed_further(
                forest, last[0], goal=tau + margin, class_index=class_index, x0=x0, weights=weights,
                space=problem.space, spec=spec, cuts=cuts)
            if start is not None:
                solve_time = _solve_at(problem, hard, box, start, options)
            solution = problem.solve_program(hard, **options)
            relaxed = solution.result.status == solvers.INFEASIBLE
            solve_time += solution.solve_time
            infeasible = infeasible or relaxed
        path_length = None if inlier is None or relaxed else inlier.output.value
        if relaxed:
            if relaxation is None:
                slack = cp.Variable(nonneg=True)
                inlier_slack = 0.0 if inlier is None else cp.Variable(nonneg=True)
                relaxation = (problem.program(objective + penalty * (slack + inlier_slack),
                                              _targets(problem.encoding, inlier, slack=slack,
                                                       inlier_slack=inlier_slack, **targets) + extra), slack)
            solution = problem.solve_program(relaxation[0], **options)
            solution.solve_time += solve_time
        found = problem.checked(solution, target=target, started=level_started)
        x = solution.x
        last = None if relaxed or x is None else (x, tau)
        if x is None:
            results.append(EnsembleCounterfactual(**found, tau=tau, relaxed=relaxed))
            previous = None
            continue
        score = float(forest.predict_proba(model_input(forest, x))[0, class_index])
        slack = relaxation[1] if relaxed else None
        found["time"] = time.perf_counter() - level_started
        result = EnsembleCounterfactual(
            **found, tau=tau, score=score, meets_threshold=score >= tau - 1e-9, relaxed=relaxed,
            relaxation=float(slack.value) if relaxed and slack.value is not None else 0.0,
            n_changed=sparsity(x, x0, tol=CHANGE_TOLERANCE, groups=[f.group for f in spec]),
            inlier=None if iso is None else _is_inlier(iso, x))
        results.append(result)
        encoded = found["encoded_output"] if target == 1 else 1.0 - found["encoded_output"]
        optimal = solution.result.status == solvers.OPTIMAL and not relaxed
        previous = (result, encoded, path_length, threshold) if optimal and (iso is None or result.inlier) else None
    return results


def _meets_level(previous, goal: float, iso, threshold) -> bool:
    """Whether the previous level's optimum is feasible at this level: its score (the forest's own and the
    encoded one) reaches `goal` and, where the inlier threshold rose, it is an inlier of `iso` (its own
    ``predict``) with an encoded mean path length at least `threshold`."""
    point, encoded, path_length, solved_at = previous
    if min(point.score, encoded) < goal:
        return False
    return iso is None or threshold <= solved_at or (_is_inlier(iso, point.x) and float(path_length) >= threshold)


def _is_inlier(isolation_forest, x) -> bool:
    """The isolation forest's own decision at x: an inlier (``predict == 1``)."""
    return bool(model_predict(isolation_forest, x)[0] == 1)
