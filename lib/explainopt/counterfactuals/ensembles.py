"""Robust counterfactual explanations for randomized ensembles (Forel, Parmentier & Vidal).

What this module offers, by section of the paper:

* **Thresholds** (Section 3). :func:`robustness_threshold` is ``p*(N, alpha) = g_N^{-1}(alpha)`` with
  ``g_N(p) = B(floor(N/2); N, p)`` the binomial c.d.f. (Lemma 3.1, Proposition 3.2), computed exactly
  through the beta-distribution inverse ``g_N(p) = I_{1-p}(N - k, k + 1)`` (Appendix A.1), for odd and
  even N. :func:`robust_saa_threshold` is the Robust-SAA threshold ``rho*(N, alpha, beta)`` of eq. (8)
  with the Agresti-Coull term (or, with ``form="code"``, the implicit version of the authors' code).
* **Counterfactuals** (Problem (2), Appendix B.1). :func:`ensemble_counterfactual` solves the nearest
  counterfactual with score ``>= tau`` under the OCEAN feature space (one-hot groups, fixed and
  increase-only features) and the feature-weighted l1 distance (weight 1/4 on non-continuous changes),
  composing :func:`explainopt.encoders.encode` and :mod:`explainopt.featurespace`. When the target
  constraint is infeasible it is relaxed with the penalty ``5000 d nu`` of Appendix B.1, and the result
  says so (``relaxed``). Naive: ``tau = 1/2``; Direct-SAA: ``tau = p*``; Robust-SAA: ``tau = rho*``.
  Float32 safety: the MILP encodes :func:`float32_centred` (an exactly equivalent copy of the forest
  with thresholds mid-way between float32 values), and :func:`_repair` moves a feature the solver left
  within its tolerance on the wrong side of a chosen split; every point is then checked with the
  original forest's ``predict``/``predict_proba``.
* **Plausibility benchmarks** (Appendix B.2, B.3): isolation-forest inlier constraints (contamination
  as a parameter, through the IsolationForest encoder) and a 1-LOF penalty (weight as a parameter)
  over the ``N_r = 10`` target-class training points nearest to the factual.
* **Validity under retraining** (Definition 2.1, Section 5): a second forest on the same data with
  another seed; :func:`binomial_interval` gives the confidence interval of a validity rate.
* **Simulations**: :func:`simulate` runs one simulation of Section 5 (split, two forests, all methods)
  and returns one row per counterfactual; it is the function that ``experiments.run_grid`` caches.
"""

from __future__ import annotations

import logging
import math
import time
from dataclasses import asdict, dataclass

import cvxpy as cp
import numpy as np
from scipy import stats

from .. import solvers

log = logging.getLogger(__name__)

#: The paper's grid of tolerances alpha (Section 5): robustness targets 1 - alpha from 0.5 to 0.99.
ALPHAS = (0.5, 0.4, 0.3, 0.2, 0.15, 0.1, 0.05, 0.01)
#: Isolation-forest contamination levels and 1-LOF penalty weights of the benchmarks (Section 5).
CONTAMINATIONS = (0.05, 0.1, 0.2, 0.3, 0.4, 0.5)
LOF_WEIGHTS = (1e-3, 1e-2, 1e-1, 1.0, 10.0, 100.0)
METHODS = ("naive", "direct-saa", "robust-saa", "isolation-forest", "lof")


# --------------------------------------------------------------------------- thresholds (Section 3)

def _check_n_alpha(n_estimators, alpha) -> int:
    if not float(n_estimators).is_integer() or int(n_estimators) < 1:
        raise ValueError(f"n_estimators must be a positive integer, got {n_estimators!r}")
    if not 0.0 <= float(alpha) <= 1.0:
        raise ValueError(f"alpha must lie in [0, 1], got {alpha!r}")
    return int(n_estimators)


def ensemble_majority_probability(n_estimators: int, p) -> np.ndarray:
    """``1 - g_N(p) = 1 - B(floor(N/2); N, p)``: the probability that more than half of N i.i.d.
    Bernoulli(p) learners vote 1 (equal to P(h_N >= 1/2) for odd N, a lower bound for even N; App. A.2)."""
    n = _check_n_alpha(n_estimators, 0.5)
    return stats.binom.sf(n // 2, n, np.asarray(p, dtype=float))


def robustness_threshold(n_estimators: int, alpha: float) -> float:
    """``p*(N, alpha) = g_N^{-1}(alpha)``: the smallest p with ``B(N/2; N, p) <= alpha`` (Prop. 3.2).

    Exact: with ``k = floor(N/2)``, ``g_N(p) = 1 - I_p(k + 1, N - k)`` (Appendix A.1), so ``p*`` is the
    ``1 - alpha`` quantile of Beta(k + 1, N - k). Works for odd and even N (for even N the binomial
    c.d.f. at N/2 includes the tie, as in the paper and the authors' code).
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
    """The score threshold tau of each SAA-based method (Appendix B.1): naive 1/2, Direct-SAA ``p*``,
    Robust-SAA ``rho*``; the plausibility benchmarks use the naive threshold."""
    if method in ("naive", "isolation-forest", "lof"):
        return 0.5
    if method == "direct-saa":
        return robustness_threshold(n_estimators, alpha)
    if method == "robust-saa":
        if beta is None:
            raise ValueError("robust-saa needs beta (e.g. 0.05 or 0.1)")
        return robust_saa_threshold(n_estimators, alpha, beta)
    raise ValueError(f"unknown method {method!r}; expected one of {METHODS}")


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
    forests, so it is somewhat optimistic (the chapter says so).
    """
    if n <= 0:
        return ValidityEstimate(int(valid), int(n), float("nan"), float("nan"), float("nan"))
    if not 0 <= valid <= n:
        raise ValueError(f"valid must lie in [0, n={n}], got {valid}")
    ci = stats.binomtest(int(valid), int(n)).proportion_ci(confidence_level=level, method="exact")
    return ValidityEstimate(int(valid), int(n), valid / n, float(ci.low), float(ci.high))


# --------------------------------------------------------------------------- data and forests (Section 5)

@dataclass
class Simulation:
    """One simulation of Section 5: training rows, the factuals, the two forests and the feature spec."""

    X_train: np.ndarray
    y_train: np.ndarray
    X_factual: np.ndarray
    forest: object
    retrained: object
    spec: list
    feature_names: list


def train_forest(X, y, *, n_estimators: int = 100, max_depth: int = 4, random_state: int = 0):
    """Random forest of the protocol: scikit-learn defaults, ``max_features="sqrt"``."""
    from sklearn.ensemble import RandomForestClassifier

    model = RandomForestClassifier(n_estimators=n_estimators, max_depth=max_depth, max_features="sqrt",
                                   random_state=random_state, n_jobs=1)
    return model.fit(np.asarray(X, dtype=float), np.asarray(y))


def make_simulation(dataset, *, sim: int, n_factuals: int = 5, n_estimators: int = 100, max_depth: int = 4,
                    retrain_offset: int = 40) -> Simulation:
    """Split off ``n_factuals`` rows (``train_test_split(test_size=n_factuals, random_state=sim)``),
    train T0 with ``random_state=sim`` and T1 on the same rows with ``random_state=retrain_offset+sim``
    (the authors' ``nbSim + sim`` with their 40 simulations)."""
    from sklearn.model_selection import train_test_split

    X, y = dataset.X.to_numpy(float), dataset.y.to_numpy(int)
    X_train, X_factual, y_train, _ = train_test_split(X, y, test_size=n_factuals, random_state=sim)
    forest = train_forest(X_train, y_train, n_estimators=n_estimators, max_depth=max_depth, random_state=sim)
    retrained = train_forest(X_train, y_train, n_estimators=n_estimators, max_depth=max_depth,
                             random_state=retrain_offset + sim)
    return Simulation(X_train, y_train, X_factual, forest, retrained, list(dataset.spec), dataset.feature_names)


def feature_weights(spec, *, non_continuous: float = 0.25) -> np.ndarray:
    """Weights of the l1 distance (Section 5): 1 on continuous features, 1/4 on the others."""
    return np.array([1.0 if f.kind == "continuous" else non_continuous for f in spec])


def weighted_l1(a, b, weights) -> np.ndarray:
    """Feature-weighted l1 distance between the rows of `a` and `b` (broadcasting)."""
    return np.abs(np.asarray(a, float) - np.asarray(b, float)) @ np.asarray(weights, float)


# --------------------------------------------------------------------------- plausibility benchmarks

def fit_isolation_forest(X_target, *, contamination: float, n_estimators: int = 50, random_state: int = 0):
    """Isolation forest on the training rows of the target class (Appendix B.2; other parameters at
    scikit-learn's defaults)."""
    from sklearn.ensemble import IsolationForest

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
class EnsembleCounterfactual:
    """One counterfactual of :func:`ensemble_counterfactual`.

    score: the forest's own ``predict_proba`` of the target class at ``x``; valid: ``predict(x)`` is the
    target; meets_threshold: ``score >= tau`` (checked with the true forest, not the MILP);
    relaxed: the hard problem was infeasible and the penalized relaxation (App. B.1) was solved, with
    slack ``relaxation``; solve_time: seconds inside the solver (both solves when relaxed); wall_time:
    the whole call, model building and cvxpy compilation included.
    """

    x: np.ndarray | None
    target: int
    tau: float
    status: str
    solver: str
    solve_time: float
    distance: float
    score: float
    valid: bool
    meets_threshold: bool
    relaxed: bool
    relaxation: float
    n_changed: int
    inlier: bool | None = None
    wall_time: float = float("nan")  # build + compile + solve + checks, seconds
    repaired: int = 0  # features nudged (< 1e-6) onto the float32 side of a split the MILP chose


def _count_changes(x, x0, spec, tol: float = 1e-6) -> int:
    """Number of features changed, a one-hot group counting once."""
    changed, groups = 0, set()
    for j, f in enumerate(spec):
        if abs(x[j] - x0[j]) > tol:
            if f.group is None:
                changed += 1
            elif f.group not in groups:
                groups.add(f.group)
                changed += 1
    return changed


def _feature_space(spec, x0):
    """The actionable feature space of the factual (:class:`explainopt.featurespace.FeatureSpace`): the
    cvxpy expression x, its constraints, and the bounds after actionability (fixed features boxed at the
    factual, increase-only features bounded below by it), which let the encoders prune decided splits."""
    from .. import featurespace

    return featurespace.feature_space(spec, x0)


def float32_centred(model):
    """An exactly equivalent copy of a fitted tree ensemble whose split thresholds sit mid-way between
    consecutive float32 values.

    scikit-learn casts inputs to float32 and sends x left iff ``float32(x) <= t``; any t' in
    ``[a, b)`` with ``a`` the largest float32 value ``<= t`` and ``b`` the next float32 value gives the
    same decisions, so we take ``t' = (a + b) / 2``. Why: two thresholds of one feature closer than a
    float32 spacing (Spambase has pairs 1e-10 apart) otherwise leave the encoder a margin (capped at a
    quarter of the gap) too small for float32 rounding, and the MILP can pick a point that no float32
    input reaches: the "counterfactual" then fails the forest's own ``predict``. After centring, distinct
    thresholds are at least one spacing apart and a quarter-gap margin rounds to the intended side.
    The copy is used only inside the MILP; every check uses the original model.
    """
    import copy

    centred = copy.deepcopy(model)
    for est in getattr(centred, "estimators_", [centred]):
        thr = est.tree_.threshold
        split = est.tree_.children_left != -1
        t = thr[split]
        a = t.astype(np.float32)
        a = np.where(a.astype(np.float64) > t, np.nextafter(a, np.float32(-np.inf)), a)
        b = np.nextafter(a, np.float32(np.inf))
        thr[split] = (a.astype(np.float64) + b.astype(np.float64)) / 2.0
    return centred


def _chosen_paths_box(model, enc, n_features):
    """Bounds (lo, hi) on each feature implied by the leaves the MILP chose: x must satisfy
    ``lo < float32(x) <= hi`` to reach them (thresholds of the float32-centred `model`)."""
    lo, hi = np.full(n_features, -np.inf), np.full(n_features, np.inf)
    weights = enc.variables.get("leaf_weight")
    if weights is None or weights.value is None:
        return lo, hi
    columns = getattr(model, "estimators_features_", None)
    for (ti, node), w in zip(enc.variables["leaves"], np.asarray(weights.value).ravel()):
        if w < 0.5:
            continue
        tree = model.estimators_[ti].tree_
        parent = {}
        for n in range(tree.node_count):
            if tree.children_left[n] != -1:
                parent[tree.children_left[n]] = (n, True)
                parent[tree.children_right[n]] = (n, False)
        while node in parent:
            node, left = parent[node]
            f = int(tree.feature[node]) if columns is None else int(columns[ti][tree.feature[node]])
            if left:
                hi[f] = min(hi[f], tree.threshold[node])
            else:
                lo[f] = max(lo[f], tree.threshold[node])
    return lo, hi


def _repair(xv, encodings):
    """Move each feature the solver left on the wrong float32 side of a chosen split (by at most its
    feasibility tolerance, ~1e-7 to 1e-6) to the nearest float32 value inside the chosen cell.

    Why: the encoder's split margin can be as small as a quarter of the gap between two thresholds of
    one feature, below the MILP solver's tolerances, so the solver's point can reach other leaves than
    the ones it chose (seen on Spambase: score 0.6465 for a constraint 0.6501). With the leaves the
    MILP chose, the repaired point has exactly the MILP's score. Returns (x, number of features moved)."""
    x = np.array(xv, dtype=float)
    moved = 0
    for model, enc in encodings:
        lo, hi = _chosen_paths_box(model, enc, len(x))
        x32 = x.astype(np.float32).astype(np.float64)
        bad = np.flatnonzero((x32 <= lo) | (x32 > hi))
        for j in bad:
            if x32[j] <= lo[j]:  # smallest float32 above lo
                v = np.float32(lo[j])
                if float(v) <= lo[j]:
                    v = np.nextafter(v, np.float32(np.inf))
            else:  # largest float32 at most hi
                v = np.float32(hi[j])
                if float(v) > hi[j]:
                    v = np.nextafter(v, np.float32(-np.inf))
            if lo[j] < float(v) <= hi[j]:
                x[j] = float(v)
                moved += 1
    return x, moved


def _lof_terms(x, lof: LofCandidates, weights, spec):
    """Variables and constraints of the 1-LOF penalty (App. B.3); returns (penalty expression, constraints).

    nu_i selects one candidate; rho_i >= delta_i nu_i and rho_i >= f(x, x_i) - (1 - nu_i) M. The
    penalty is ``sum_i lrd_i rho_i``. Difference from the paper: the constraint that the selected
    candidate is the nearest one to x is dropped (it needs exact, not epigraph, distances); the
    optimizer thus picks the candidate with the smallest 1-LOF-type ratio ``max(1, f(x, x_i)/delta_i)``.
    """
    n_c, d = lof.points.shape
    span = np.array([f.upper - f.lower for f in spec], dtype=float)
    big_m = float(np.asarray(weights) @ np.maximum(span, 1.0))
    nu, rho = cp.Variable(n_c, boolean=True), cp.Variable(n_c, nonneg=True)
    u = cp.Variable((n_c, d), nonneg=True)
    diff = cp.vstack([x for _ in range(n_c)]) - lof.points
    dist = u @ np.asarray(weights, float)
    cons = [u >= diff, u >= -diff, cp.sum(nu) == 1, rho >= cp.multiply(lof.delta, nu),
            rho >= dist - big_m * (1 - nu)]
    return lof.lrd @ rho, cons


def _build(forest, x0, *, spec, tau, target, weights, isolation_forest, lof, lof_weight, relaxed,
           penalty, margin):
    from ..encoders import encode

    n_features = len(x0)
    fs = _feature_space(spec, x0)
    x, space, lower, upper = fs.x, fs.constraints, fs.lower, fs.upper
    centred = float32_centred(forest)
    enc = encode(centred, x, lower=lower, upper=upper)
    encodings = [(centred, enc)]
    t = cp.Variable(n_features, nonneg=True)
    cons = list(space) + list(enc.constraints) + [t >= x - x0, t >= x0 - x]
    objective = weights @ t
    nu = cp.Variable(nonneg=True) if relaxed else cp.Constant(0.0)
    # target score >= tau: class 1 score is the encoder's output, class 0 score is 1 - output.
    if target == 1:
        cons.append(enc.output + nu >= tau + margin)
    else:
        cons.append(enc.output - nu <= 1.0 - tau - margin)
    if relaxed:
        objective = objective + penalty * nu
    if isolation_forest is not None:
        centred_iso = float32_centred(isolation_forest)
        iso = encode(centred_iso, x, lower=lower, upper=upper)
        encodings.append((centred_iso, iso))
        nu_iso = cp.Variable(nonneg=True) if relaxed else cp.Constant(0.0)
        cons += list(iso.constraints) + _inlier_constraint(iso, nu_iso, margin)
        if relaxed:
            objective = objective + penalty * nu_iso
    if lof is not None and lof_weight > 0:
        lof_penalty, lof_cons = _lof_terms(x, lof, weights, spec)
        cons += lof_cons
        objective = objective + lof_weight * lof_penalty
    return cp.Problem(cp.Minimize(objective), cons), x, nu, encodings


def _inlier_constraint(iso, slack, margin):
    """IsolationForest encoding -> 'x is an inlier' (relaxable by `slack`)."""
    cons = iso.predicts(1, margin=margin)
    if isinstance(slack, cp.Constant):
        return cons
    # predicts() returns [output >= thr + m] or [output <= thr - m]; relax it by `slack`.
    c = cons[0]
    return [c.args[0] <= c.args[1] + slack] if isinstance(c, cp.constraints.Inequality) else cons


def ensemble_counterfactual(forest, x0, *, spec, tau: float = 0.5, target: int | None = None, weights=None,
                            isolation_forest=None, lof: LofCandidates | None = None, lof_weight: float = 0.0,
                            penalty: float | None = None, margin: float = 1e-5, solver: str | None = None,
                            time_limit: float | None = None, mip_gap: float | None = 1e-4) -> EnsembleCounterfactual:
    """Nearest counterfactual with target-class score ``>= tau`` (Problem (2) with (2b) replaced by (5)).

    Parameters
    ----------
    forest : fitted binary RandomForestClassifier (the score is its soft vote, ``predict_proba``).
    x0 : the factual (scaled features).
    spec : the dataset's feature spec (kinds, bounds, actionability, one-hot groups).
    tau : score threshold of the target class: 0.5 (naive), ``robustness_threshold`` (Direct-SAA),
        ``robust_saa_threshold`` (Robust-SAA).
    target : target class; default: the flipped prediction of the forest at ``x0``.
    weights : l1 weights; default :func:`feature_weights` (1/4 on non-continuous features).
    isolation_forest : a fitted IsolationForest whose inlier decision constrains x (App. B.2).
    lof, lof_weight : 1-LOF candidates and penalty weight lambda (App. B.3).
    penalty : cost of the relaxation slack (App. B.1); default ``5000 * n_features``.
    margin : strictness of the score constraint (the authors use 1e-5).
    """
    x0 = np.asarray(x0, dtype=float).ravel()
    if len(spec) != len(x0):
        raise ValueError(f"spec has {len(spec)} features but x0 has {len(x0)}")
    if not 0.0 <= tau <= 1.0:
        raise ValueError(f"tau must lie in [0, 1], got {tau!r}")
    if target is None:
        target = 1 - int(forest.predict(x0.reshape(1, -1))[0])
    if target not in (0, 1):
        raise ValueError(f"target must be 0 or 1, got {target!r}")
    weights = feature_weights(spec) if weights is None else np.asarray(weights, dtype=float)
    penalty = 5000.0 * len(x0) if penalty is None else float(penalty)
    options = dict(spec=spec, tau=tau, target=target, weights=weights, isolation_forest=isolation_forest,
                   lof=lof, lof_weight=lof_weight, penalty=penalty, margin=margin)
    start = time.perf_counter()
    problem, x, nu, encodings = _build(forest, x0, relaxed=False, **options)
    res = solvers.solve(problem, solver=solver, time_limit=time_limit, mip_gap=mip_gap)
    elapsed, relaxed = _solver_time(problem, res), False
    if res.status == solvers.INFEASIBLE:
        problem, x, nu, encodings = _build(forest, x0, relaxed=True, **options)
        res = solvers.solve(problem, solver=solver, time_limit=time_limit, mip_gap=mip_gap)
        elapsed, relaxed = elapsed + _solver_time(problem, res), True
    repaired = 0
    if res.has_solution and x.value is not None:
        xv, repaired = _repair(np.asarray(x.value, dtype=float).ravel(), encodings)
        x = cp.Constant(xv) if repaired else x
    out = _result(forest, x0, x, nu, res, spec=spec, tau=tau, target=target, weights=weights,
                  relaxed=relaxed, solve_time=elapsed, isolation_forest=isolation_forest)
    out.repaired = repaired
    out.wall_time = time.perf_counter() - start
    return out


def _solver_time(problem, res) -> float:
    """Seconds inside the solver (cvxpy's compilation excluded), else the wall time of the solve."""
    inner = getattr(problem.solver_stats, "solve_time", None) if problem.solver_stats else None
    return float(inner) if inner is not None else float(res.solve_time)


def _result(forest, x0, x, nu, res, *, spec, tau, target, weights, relaxed, solve_time, isolation_forest):
    """Check the solver's point with the true forest (the model has the last word)."""
    if not res.has_solution or x.value is None:
        return EnsembleCounterfactual(None, target, tau, res.status, res.solver, solve_time, float("nan"),
                                      float("nan"), False, False, relaxed, float("nan"), 0)
    xv = np.asarray(x.value, dtype=float).ravel()
    score = float(forest.predict_proba(xv.reshape(1, -1))[0, list(forest.classes_).index(target)])
    valid = int(forest.predict(xv.reshape(1, -1))[0]) == target
    inlier = None if isolation_forest is None else bool(isolation_forest.predict(xv.reshape(1, -1))[0] == 1)
    slack = float(nu.value) if relaxed and nu.value is not None else 0.0
    return EnsembleCounterfactual(xv, target, tau, res.status, res.solver, solve_time,
                                  float(weighted_l1(xv, x0, weights)), score, valid, score >= tau - 1e-9,
                                  relaxed, slack, _count_changes(xv, x0, spec), inlier)


# --------------------------------------------------------------------------- one simulation (Section 5)

def method_grid(*, alphas=ALPHAS, betas=(), contaminations=(), lof_weights=(), n_estimators: int = 100,
                robust_alphas=None):
    """(method, parameter, tau) triples of one simulation: naive, Direct-SAA per alpha, Robust-SAA per
    (alpha, beta), isolation forest per contamination, 1-LOF per weight."""
    grid = [("naive", None, 0.5)]
    grid += [("direct-saa", {"alpha": a}, robustness_threshold(n_estimators, a)) for a in alphas]
    grid += [("robust-saa", {"alpha": a, "beta": b}, robust_saa_threshold(n_estimators, a, b))
             for b in betas for a in (alphas if robust_alphas is None else robust_alphas)]
    grid += [("isolation-forest", {"contamination": c}, 0.5) for c in contaminations]
    grid += [("lof", {"lof_weight": w}, 0.5) for w in lof_weights]
    return grid


def simulate(*, dataset: str, sim: int, n_estimators: int = 100, max_depth: int = 4, n_factuals: int = 5,
             alphas=ALPHAS, betas=(), robust_alphas=None, contaminations=(), lof_weights=(), solver: str | None = None,
             time_limit: float | None = 60.0, keep_points: bool = True, retrain_offset: int = 40) -> list[dict]:
    """Run one simulation of Section 5 and return one row per (factual, method, parameter).

    Rows: dataset, sim, n_estimators, factual, method, alpha, beta, contamination, lof_weight, tau,
    target, status, solver, solve_time, distance, score, valid (original forest), meets_threshold,
    valid_retrained (second forest), relaxed, relaxation, n_changed, inlier, and (``keep_points``)
    x0 and x.
    """
    from ..datasets import load_dataset

    data = load_dataset(f"ensembles/{dataset}").scaled()
    simulation = make_simulation(data, sim=sim, n_factuals=n_factuals, n_estimators=n_estimators,
                                 max_depth=max_depth, retrain_offset=retrain_offset)
    weights = feature_weights(simulation.spec)
    grid = method_grid(alphas=alphas, betas=betas, contaminations=contaminations, lof_weights=lof_weights,
                       n_estimators=n_estimators, robust_alphas=robust_alphas)
    rows = []
    for i, x0 in enumerate(simulation.X_factual):
        target = 1 - int(simulation.forest.predict(x0.reshape(1, -1))[0])
        X_target = simulation.X_train[simulation.y_train == target]
        predicted_target = simulation.X_train[simulation.forest.predict(simulation.X_train) == target]
        for method, params, tau in grid:
            params = params or {}
            extra = {}
            if method == "isolation-forest":
                extra["isolation_forest"] = fit_isolation_forest(X_target, contamination=params["contamination"],
                                                                 random_state=sim)
            if method == "lof":
                extra["lof"] = lof_candidates(predicted_target, x0, weights=weights)
                extra["lof_weight"] = params["lof_weight"]
            ce = ensemble_counterfactual(simulation.forest, x0, spec=simulation.spec, tau=tau, target=target,
                                         weights=weights, solver=solver, time_limit=time_limit, **extra)
            row = {"dataset": dataset, "sim": sim, "n_estimators": n_estimators, "factual": i, "method": method,
                   "alpha": params.get("alpha"), "beta": params.get("beta"),
                   "contamination": params.get("contamination"), "lof_weight": params.get("lof_weight"),
                   **{k: v for k, v in asdict(ce).items() if k != "x"}}
            row["valid_retrained"] = (ce.x is not None
                                      and int(simulation.retrained.predict(ce.x.reshape(1, -1))[0]) == target)
            if keep_points:
                row["x0"], row["x"] = x0, ce.x
            rows.append(row)
    return rows


# --------------------------------------------------------------------------- summaries for the chapter

#: Table 1 (N = 100) and Table 3 (N = 400) of the paper: validity of naive counterfactuals [%].
PAPER_NAIVE_VALIDITY = {
    100: {"Adult": 62, "COMPAS": 92, "Credit-Card-Default": 27, "German-Credit": 35, "OnlineNewsPopularity": 32,
          "Phishing": 80, "Spambase": 17, "Students-Performance": 39},
    400: {"Adult": 59, "COMPAS": 92, "Credit-Card-Default": 39, "German-Credit": 47, "OnlineNewsPopularity": 49,
          "Phishing": 89, "Spambase": 24, "Students-Performance": 53},
}


def validity_table(frame, by, *, column: str = "valid_retrained", level: float = 0.95):
    """Validity rate with its binomial interval per group of `frame` (rows of :func:`simulate`)."""
    import pandas as pd

    rows = []
    for key, group in frame.groupby(by, dropna=False, sort=False):
        est = binomial_interval(int(group[column].sum()), len(group), level=level)
        key = key if isinstance(key, tuple) else (key,)
        rows.append({**dict(zip(by if isinstance(by, list) else [by], key)), **asdict(est),
                     "distance": group["distance"].mean(), "n_changed": group["n_changed"].mean()})
    return pd.DataFrame(rows)


def naive_validity_table(frame, *, n_estimators: int = 100):
    """Table 1 / Table 3: naive validity under retraining per dataset, ours beside the paper's."""
    table = validity_table(frame[frame.method == "naive"], ["dataset"])
    table["paper [%]"] = table["dataset"].map(PAPER_NAIVE_VALIDITY[n_estimators])
    table["ours [%]"] = 100 * table["rate"]
    table["95% CI [%]"] = [f"{100 * lo:.0f}-{100 * hi:.0f}" for lo, hi in zip(table["low"], table["high"])]
    return table[["dataset", "n", "paper [%]", "ours [%]", "95% CI [%]"]]


def method_label(row) -> str:
    """Legend label of a method (Robust-SAA carries its beta)."""
    if row["method"] == "robust-saa":
        return f"Robust-SAA (beta={row['beta']:g})"
    return {"naive": "naive", "direct-saa": "Direct-SAA", "isolation-forest": "isolation forest",
            "lof": "1-LOF"}[row["method"]]


def saa_curves(frame):
    """Validity (with interval) and mean distance per dataset, method and alpha (Figures 2, 4, 5, 9)."""
    saa = frame[frame.method.isin(["direct-saa", "robust-saa"])].copy()
    saa["label"] = saa.apply(method_label, axis=1)
    table = validity_table(saa, ["dataset", "label", "alpha"])
    table["target"] = 1 - table["alpha"]
    return table


def benchmark_points(frame):
    """Validity and mean distance of every method and parameter (the points of Figure 4)."""
    import pandas as pd

    frame = frame.copy()
    frame["label"] = frame.apply(method_label, axis=1)
    numeric = {c: pd.to_numeric(frame[c], errors="coerce") for c in ("alpha", "contamination", "lof_weight")}
    frame["parameter"] = numeric["alpha"].fillna(numeric["contamination"]).fillna(numeric["lof_weight"])
    return validity_table(frame, ["dataset", "label", "parameter"])


def solve_time_table(frame):
    """Mean solve time of naive vs. Direct-SAA counterfactuals per dataset and solver (App. C.2).

    Only solves that returned a point count (``optimal`` or ``time_limit``); ``solved`` / ``problems``
    say how many, so a solver that failed (e.g. Gurobi's size-limited licence: status ``error``) shows
    as such instead of as a fast solver. ``at limit``: solves stopped by the time limit (their time is
    the limit, so the mean is a lower bound)."""
    import pandas as pd

    sub = frame[frame.method.isin(["naive", "direct-saa"])]
    rows = []
    for (name, solver), g in sub.groupby(["dataset", "solver"], sort=False):
        ok = g[g.status.isin(["optimal", "time_limit"])]
        means = ok.groupby("method")["solve_time"].mean()
        naive, direct = means.get("naive", float("nan")), means.get("direct-saa", float("nan"))
        rows.append({"dataset": name, "solver": solver, "problems": len(g), "solved": len(ok),
                     "at limit": int((g.status == "time_limit").sum()), "naive": naive, "direct-saa": direct,
                     "ratio": direct / naive if naive > 0 else float("nan")})
    return pd.DataFrame(rows)


def check_counts(frame):
    """Per dataset: counterfactual problems, points found, how many of the hard (not relaxed) ones T0
    verifies (``predict`` = target and target score >= tau; must be all), how many needed the penalized
    relaxation and how many of those still flip T0's class, solves stopped at the time limit, and points
    nudged onto the float32 side of a chosen split (``repaired``, see :func:`_repair`)."""
    import pandas as pd

    rows = []
    for name, g in frame.groupby("dataset", sort=False):
        found = g["status"].isin(["optimal", "time_limit"])
        hard, relaxed = g[found & ~g["relaxed"]], g[found & g["relaxed"]]
        rows.append({"dataset": name, "problems": len(g), "found": int(found.sum()),
                     "hard": len(hard), "verified by T0": int((hard["valid"] & hard["meets_threshold"]).sum()),
                     "relaxed": len(relaxed), "relaxed, class flipped": int(relaxed["valid"].sum()),
                     "time limit": int((g["status"] == "time_limit").sum()),
                     "repaired": int((g["repaired"] > 0).sum()) if "repaired" in g else 0})
    return pd.DataFrame(rows)


def importance_and_changes(dataset: str, *, sim: int = 0, n_estimators: int = 100, max_depth: int = 4,
                           frame=None, n_repeats: int = 5, max_rows: int = 2000):
    """Appendix C.6: permutation importance of each feature for T0 against the mean absolute change of
    the Direct-SAA (alpha = 0.5) counterfactuals in `frame`; both normalized to sum to one."""
    import pandas as pd
    from sklearn.inspection import permutation_importance

    from ..datasets import load_dataset

    data = load_dataset(f"ensembles/{dataset}").scaled()
    simulation = make_simulation(data, sim=sim, n_estimators=n_estimators, max_depth=max_depth)
    rng = np.random.default_rng(sim)
    rows = rng.choice(len(simulation.X_train), size=min(max_rows, len(simulation.X_train)), replace=False)
    imp = permutation_importance(simulation.forest, simulation.X_train[rows], simulation.y_train[rows],
                                 n_repeats=n_repeats, random_state=sim).importances_mean
    imp = np.clip(imp, 0, None)
    sub = frame[(frame.dataset == dataset) & (frame.method == "direct-saa") & (frame.alpha == 0.5)
                & frame["x"].notna()]
    change = np.mean([np.abs(x - x0) for x, x0 in zip(sub["x"], sub["x0"])], axis=0)
    out = pd.DataFrame({"feature": data.feature_names, "importance": imp / max(imp.sum(), 1e-12),
                        "change": change / max(change.sum(), 1e-12)})
    return out


# --------------------------------------------------------------------------- figures of the chapter

def plot_thresholds(*, sizes=(2, 3, 10, 11, 100, 101, 400), ax=None):
    """Figure 1: p*(N, alpha) against the robustness target 1 - alpha, odd and even N."""
    import matplotlib.pyplot as plt

    ax = ax or plt.gca()
    targets = np.linspace(0.01, 0.99, 197)
    for n in sizes:
        ax.plot(targets, [robustness_threshold(n, 1 - t) for t in targets], label=f"N = {n}",
                linestyle="-" if n % 2 else "--")
    ax.set(xlabel="robustness target 1 - alpha", ylabel="threshold p*(N, alpha)", ylim=(0, 1.01))
    ax.legend(ncol=2, fontsize="small")
    return ax


def _facets(names, ncols=4, size=3.0):
    import matplotlib.pyplot as plt

    nrows = math.ceil(len(names) / ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(size * ncols, size * nrows), squeeze=False)
    for ax in axes.flat[len(names):]:
        ax.set_visible(False)
    return fig, list(axes.flat)


def plot_validity_curves(curves, *, datasets=None):
    """Figure 2 / 9: retrained validity against the target 1 - alpha, with 95% intervals (shaded)."""
    datasets = list(datasets or curves["dataset"].unique())
    fig, axes = _facets(datasets)
    for ax, name in zip(axes, datasets):
        sub = curves[curves.dataset == name]
        for label, g in sub.groupby("label"):
            g = g.sort_values("target")
            ax.plot(g["target"], g["rate"], marker="o", ms=3, label=label)
            ax.fill_between(g["target"], g["low"], g["high"], alpha=0.2)
        ax.plot([0.5, 1], [0.5, 1], color="grey", lw=1, ls=":", label="target")
        ax.set(title=name, xlabel="target 1 - alpha", ylabel="validity", ylim=(0, 1.02))
    axes[0].legend(fontsize="x-small")
    fig.tight_layout()
    return fig


def counterfactual_path(frame, *, dataset: str, sim: int = 0, factual: int = 0):
    """Figure 3 data: the factual and its Direct-SAA changes for increasing targets (changed features)."""
    import pandas as pd

    from ..datasets import load_dataset

    names = load_dataset(f"ensembles/{dataset}").feature_names
    sub = frame[(frame.dataset == dataset) & (frame.sim == sim) & (frame.factual == factual)
                & (frame.method == "direct-saa") & frame["x"].notna()].sort_values("alpha", ascending=False)
    x0 = sub["x0"].iloc[0]
    changes = pd.DataFrame({f"{1 - a:.2f}": x - x0 for a, x in zip(sub["alpha"], sub["x"])}, index=names)
    keep = changes.abs().max(axis=1) > 1e-6
    table = changes[keep]
    table.insert(0, "factual", pd.Series(x0, index=names)[keep])
    return table


def plot_counterfactual_path(table, *, ax=None, title=""):
    """Figure 3: heatmap of the factual (first column) and its changes (blue up, red down)."""
    import matplotlib.pyplot as plt
    import seaborn as sns

    ax = ax or plt.gca()
    changes = table.iloc[:, 1:]
    # changes below the display precision (e.g. a split margin) are real: show them, not as "-0.00"
    labels = changes.map(lambda v: f"{v:.2f}" if abs(v) >= 5e-3 else ("0" if abs(v) <= 1e-6 else f"{v:.0e}"))
    sns.heatmap(changes, ax=ax, cmap="RdBu", center=0, vmin=-1, vmax=1, annot=labels, fmt="",
                cbar_kws={"label": "change (scaled units)"})
    ax.set_yticklabels([f"{n} = {v:.2f}" for n, v in zip(table.index, table["factual"])], rotation=0)
    ax.set(xlabel="robustness target 1 - alpha", ylabel="feature = factual value", title=title)
    return ax


def plot_pareto(points, *, datasets=None):
    """Figure 4: mean distance against retrained validity for every method and parameter."""
    datasets = list(datasets or points["dataset"].unique())
    fig, axes = _facets(datasets)
    markers = {"naive": "*", "Direct-SAA": "o", "isolation forest": "s", "1-LOF": "^"}
    for ax, name in zip(axes, datasets):
        sub = points[points.dataset == name]
        for label, g in sub.groupby("label"):
            g = g.sort_values("distance")
            ax.plot(g["distance"], g["rate"], marker=markers.get(label, "D"), ms=4, label=label,
                    lw=1 if label in ("Direct-SAA",) or label.startswith("Robust") else 0.6,
                    ls="-" if label == "Direct-SAA" or label.startswith("Robust") else ":")
        ax.set(title=name, xlabel="mean weighted l1 distance", ylabel="validity", ylim=(0, 1.02))
    axes[0].legend(fontsize="x-small")
    fig.tight_layout()
    return fig


def plot_changes(curves, *, ax=None):
    """Figure 5: mean number of changed features against the robustness target (Direct-SAA)."""
    import matplotlib.pyplot as plt

    ax = ax or plt.gca()
    for name, g in curves[curves.label == "Direct-SAA"].groupby("dataset"):
        g = g.sort_values("target")
        ax.plot(g["target"], g["n_changed"], marker="o", ms=3, label=name)
    ax.set(xlabel="robustness target 1 - alpha", ylabel="features changed (mean)")
    ax.legend(fontsize="x-small")
    return ax


def plot_importance(tables: dict):
    """Appendix C.6 (Figures 11-12): normalized permutation importance beside normalized mean changes."""
    fig, axes = _facets(list(tables), ncols=len(tables), size=4.0)
    for ax, (name, table) in zip(axes, tables.items()):
        top = table.sort_values("importance", ascending=False).head(12)
        idx = np.arange(len(top))
        ax.barh(idx - 0.2, top["importance"], height=0.4, label="permutation importance")
        ax.barh(idx + 0.2, top["change"], height=0.4, label="mean |change| (Direct-SAA, 1-alpha=0.5)")
        ax.set_yticks(idx, top["feature"], fontsize="x-small")
        ax.invert_yaxis()
        ax.set(title=name, xlabel="share (normalized to 1)")
    axes[0].legend(fontsize="x-small")
    fig.tight_layout()
    return fig


# --------------------------------------------------------------------------- checks behind the claims

def meets_targets(curves, *, dataset: str, label: str = "Direct-SAA", min_target: float = 0.5) -> bool | None:
    """Whether validity reaches every target ``1 - alpha >= min_target`` up to sampling noise: the
    upper end of the 95% interval is at least the target (None when the curve is missing)."""
    sub = curves[(curves.dataset == dataset) & (curves.label == label) & (curves.target >= min_target - 1e-9)]
    if sub.empty:
        return None
    return bool((sub["high"] >= sub["target"] - 1e-9).all())


def dominated_share(points, *, dataset: str | None = None, tolerance: float = 0.0) -> float:
    """Share of plausibility-benchmark points (isolation forest, 1-LOF) weakly dominated by an SAA point:
    some Direct- or Robust-SAA point has distance <= and validity >= (validity up to `tolerance`)."""
    sub = points if dataset is None else points[points.dataset == dataset]
    shares = []
    for _, g in sub.groupby("dataset"):
        saa = g[g.label.str.contains("SAA")]
        bench = g[g.label.isin(["isolation forest", "1-LOF"])]
        for _, b in bench.iterrows():
            shares.append(bool(((saa.distance <= b.distance + 1e-9) & (saa.rate >= b.rate - tolerance)).any()))
    return float(np.mean(shares)) if shares else float("nan")


# --------------------------------------------------------------------------- the chapter's grid

def simulation_configs(*, datasets, sims, first_sim: int = 0, n_estimators=(100,), alphas=ALPHAS, betas=(), robust_on=(),
                       robust_alphas=None, contaminations=(), lof_weights=(), benchmarks_on=(), n_factuals: int = 5,
                       max_depth: int = 4, solver: str | None = None, time_limit: float | None = 60.0) -> list[dict]:
    """Keyword arguments of :func:`simulate` for every (dataset, simulation, forest size).

    Robust-SAA (``betas``) runs on the datasets in ``robust_on``, the plausibility benchmarks on those in
    ``benchmarks_on`` (both only for the first forest size); Robust-SAA uses ``robust_alphas`` (default:
    ``alphas``); everything is JSON-serializable for the
    cache of ``experiments.run_grid``. ``sims`` is a number of simulations (indices ``first_sim`` on), an
    iterable of indices, or a mapping from forest size to either (the paper runs 40 simulations with
    N = 100 and 20 with N = 400).
    """
    def indices(size):
        chosen = sims[size] if isinstance(sims, dict) else sims
        return range(first_sim, first_sim + chosen) if isinstance(chosen, int) else chosen

    configs = []
    for size_index, size in enumerate(n_estimators):
        for name in datasets:
            for sim in indices(size):
                first = size_index == 0
                configs.append(dict(
                    dataset=name, sim=int(sim), n_estimators=int(size), max_depth=max_depth, n_factuals=n_factuals,
                    alphas=[float(a) for a in alphas],
                    robust_alphas=[float(a) for a in (alphas if robust_alphas is None else robust_alphas)],
                    betas=[float(b) for b in betas] if first and name in robust_on else [],
                    contaminations=[float(c) for c in contaminations] if first and name in benchmarks_on else [],
                    lof_weights=[float(w) for w in lof_weights] if first and name in benchmarks_on else [],
                    solver=solver, time_limit=time_limit))
    return configs


def run_simulations(configs, *, cache_dir=None, n_jobs: int = 1, progress: bool = False):
    """All simulations of `configs` (parallel, cached by ``experiments.run_grid``) as one DataFrame."""
    import pandas as pd

    from ..experiments import run_grid

    results = run_grid(simulate, configs, cache_dir=cache_dir, n_jobs=n_jobs, progress=progress,
                       description="chapter 5 simulations")
    return pd.DataFrame([row for rows in results for row in rows])


def dataset_summary(names=None):
    """Appendix C.1 (Table 2) for the registry's copies: rows, columns after one-hot encoding, kinds."""
    import pandas as pd

    from ..datasets import ENSEMBLE_DATASETS, load_dataset

    rows = []
    for name in names or ENSEMBLE_DATASETS:
        data = load_dataset(f"ensembles/{name}")
        kinds = [f.kind for f in data.spec]
        rows.append({"dataset": name, "n": len(data.X), "columns": data.n_features,
                     "categorical groups": len(data.groups()),
                     **{k: kinds.count(k) for k in ("binary", "categorical", "discrete", "continuous")},
                     "fixed": sum(f.actionability == "fixed" for f in data.spec),
                     "increase-only": sum(f.actionability == "increase" for f in data.spec),
                     "share of class 1": round(float(data.y.mean()), 2)})
    return pd.DataFrame(rows)
