"""Regions of robust counterfactual explanations (Maragno et al., 2024): Algorithm 1 and its parts.

A robust counterfactual is the point ``x`` closest to the factual ``x_hat`` such that every point of the
uncertainty set ``x + S`` with ``S = {s : ||s|| <= rho}`` (eq. 5; l-infinity box or l2 ball) is classified
as the target class (eqs. 3-4). Algorithm 1 (the adversarial / cutting-set method of Mutapcic and
Boyd) alternates

* the **master problem** (MP, eq. 6): minimize ``d(x, x_hat)`` with one encoded copy of the model per
  scenario ``s`` in a finite set ``Z`` (``encode(model, x + s)``; the encoders are the shared
  :mod:`explainopt.encoders`), and
* the **adversarial problem** (AP): the worst scenario ``s in S`` for the current ``x*``, solved exactly
  per model family:

  - linear models: no loop; the dual-norm reformulation (Appendix A, eq. 69) is used directly;
  - decision trees: one slack-maximization problem per leaf of the other class (eqs. 31-35, the
    Lipschitz extension of Lemma 1), solved in closed form because every split is axis-aligned;
  - tree ensembles (random forests, extra trees, gradient boosting): the MILP of eqs. 41-45 with one
    binary per reachable leaf;
  - ReLU networks: the MILP of eqs. 60-67 (``encode(model, x* + s)`` and the worst output).

The loop stops when the AP value is at most ``epsilon`` (Algorithm 1). On a time or iteration limit
the result is an *early stop*: every master solution is given its certified radius (the largest
radius for which it is robust, the distance to the other class) and the best one is returned with
``rho_bar`` (as the paper's Tables 1-2 report). :func:`single_leaf_region` is the heuristic of eqs.
36-39 for decision trees. :func:`certify_region` checks a returned region independently: the AP
once more, and thousands of sampled points of the box/ball classified by ``model.predict``.

The set-up of the chapter (data, models, one instance of the grid) is at the end of the module.
"""

from __future__ import annotations

import functools
import logging
import math
import time
import weakref
from dataclasses import dataclass, field

import cvxpy as cp
import numpy as np

from .. import solvers
from ..encoders import encode, model_predict
from .nearest import distance

log = logging.getLogger(__name__)

NORMS = ("linf", "l2")
OBJECTIVES = ("l1", "l2", "linf")
#: The dual norm's order for each uncertainty norm (l-inf box -> l1, l2 ball -> l2), eq. (69).
DUAL_ORD = {"linf": 1, "l2": 2}

LINEAR, TREE, ENSEMBLE, NETWORK = "linear", "tree", "ensemble", "network"
#: How far inside the certified radius an early stop's rho-bar is reported (see :func:`robust_region`).
RHO_BAR_SLACK = 1e-5


# =========================================================================== model families

def model_family(model) -> str:
    """``linear``, ``tree`` (a single decision tree), ``ensemble`` (forests, boosting) or ``network``."""
    from sklearn.ensemble import ExtraTreesClassifier, GradientBoostingClassifier, RandomForestClassifier
    from sklearn.linear_model import LogisticRegression
    from sklearn.neural_network import MLPClassifier
    from sklearn.svm import LinearSVC
    from sklearn.tree import DecisionTreeClassifier

    if isinstance(model, (LogisticRegression, LinearSVC)):
        return LINEAR
    if isinstance(model, DecisionTreeClassifier):
        return TREE
    if isinstance(model, (RandomForestClassifier, ExtraTreesClassifier, GradientBoostingClassifier)):
        return ENSEMBLE
    if isinstance(model, MLPClassifier):
        return NETWORK
    try:
        import torch

        if isinstance(model, torch.nn.Module):
            return NETWORK
    except ImportError:  # pragma: no cover
        pass
    raise TypeError(
        f"robust regions support LogisticRegression, LinearSVC, DecisionTreeClassifier, RandomForest/"
        f"ExtraTrees/GradientBoostingClassifier, MLPClassifier and torch networks; got {type(model).__name__}"
    )


def _check_norm(norm: str) -> str:
    if norm not in NORMS:
        raise ValueError(f"norm={norm!r}: the uncertainty set is 'linf' (box) or 'l2' (ball)")
    return norm


def _np_norm(v, kind: str) -> float:
    return float(np.linalg.norm(np.asarray(v, dtype=float), ord={"l1": 1, "l2": 2, "linf": np.inf}[kind]))


# =========================================================================== trees as boxes

@dataclass
class TreeBoxes:
    """Every tree of a model as leaf boxes: leaf ``i`` is ``{x : lo_i < x <= hi_i}`` (sklearn: left iff
    ``x <= t``), with value ``v_i``; the model's score is ``offset + scale * sum_trees v_leaf(x)`` and the
    model predicts class 1 iff score > threshold (``>=`` when ``inclusive``)."""

    lo: list[np.ndarray]
    hi: list[np.ndarray]
    value: list[np.ndarray]
    offset: float
    scale: float
    threshold: float
    inclusive: bool

    def adverse(self, score, target: int) -> np.ndarray:
        """Whether a score means the class other than `target`."""
        score = np.asarray(score, dtype=float)
        positive = score >= self.threshold if self.inclusive else score > self.threshold
        return positive if target == 0 else ~positive

    def score(self, X) -> np.ndarray:
        """The model's score evaluated from the boxes (used by tests against the model)."""
        X = np.atleast_2d(np.asarray(X, dtype=float))
        total = np.zeros(len(X))
        for lo, hi, v in zip(self.lo, self.hi, self.value):
            inside = np.all((X[:, None, :] > lo[None]) & (X[:, None, :] <= hi[None]), axis=2)
            total += inside.astype(float) @ v
        return self.offset + self.scale * total


def _leaf_boxes(tree, n_features: int, leaf_value) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Leaf boxes of one fitted sklearn tree (``tree_`` object) by depth-first traversal."""
    los, his, vals = [], [], []
    stack = [(0, np.full(n_features, -np.inf), np.full(n_features, np.inf))]
    while stack:
        node, lo, hi = stack.pop()
        left, right = tree.children_left[node], tree.children_right[node]
        if left == -1:
            los.append(lo), his.append(hi), vals.append(leaf_value(tree.value[node]))
            continue
        f, t = tree.feature[node], tree.threshold[node]
        hi_left, lo_right = hi.copy(), lo.copy()
        hi_left[f] = min(hi[f], t)
        lo_right[f] = max(lo[f], t)
        stack.append((left, lo, hi_left))
        stack.append((right, lo_right, hi))
    return np.array(los), np.array(his), np.array(vals, dtype=float)


_BOXES: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def _build_tree_boxes(model) -> TreeBoxes:
    from sklearn.ensemble import GradientBoostingClassifier
    from sklearn.tree import DecisionTreeClassifier

    n = model.n_features_in_
    if len(getattr(model, "classes_", [0, 1])) != 2:
        raise ValueError(f"{type(model).__name__} has {len(model.classes_)} classes; robust regions need a binary classifier")
    if isinstance(model, GradientBoostingClassifier):
        trees = [est.tree_ for est in model.estimators_[:, 0]]
        parts = [_leaf_boxes(t, n, lambda v: v[0, 0]) for t in trees]
        x0 = np.zeros((1, n))
        raw = float(model.decision_function(x0)[0])
        sum_leaves = sum(float(est.predict(x0)[0]) for est in model.estimators_[:, 0])
        offset = raw - model.learning_rate * sum_leaves  # the init estimator's constant log-odds
        return TreeBoxes([p[0] for p in parts], [p[1] for p in parts], [p[2] for p in parts],
                         offset=offset, scale=model.learning_rate, threshold=0.0, inclusive=True)
    estimators = [model] if isinstance(model, DecisionTreeClassifier) else list(model.estimators_)
    parts = [_leaf_boxes(e.tree_, n, lambda v: v[0, 1] / v[0].sum()) for e in estimators]
    return TreeBoxes([p[0] for p in parts], [p[1] for p in parts], [p[2] for p in parts],
                     offset=0.0, scale=1.0 / len(estimators), threshold=0.5, inclusive=False)


def tree_boxes(model) -> TreeBoxes:
    """The leaf boxes of a decision tree or tree ensemble (cached per fitted model, refits detected)."""
    fingerprint = id(getattr(model, "tree_", None) or getattr(model, "estimators_", None))
    cached = _BOXES.get(model)
    if cached is None or cached[0] != fingerprint:
        cached = (fingerprint, _build_tree_boxes(model))
        _BOXES[model] = cached
    return cached[1]


# =========================================================================== adversarial problems

@dataclass
class AdversarialResult:
    """Outcome of one adversarial problem (AP).

    value: the AP's optimal value; positive means a scenario ``s`` puts ``x* + s`` in the other class
    (trees: the depth of ``x* + s`` inside an adverse leaf, eqs. 31/41; networks and linear models:
    the margin past the decision threshold, eq. 60); ``-inf`` when no point of the set is adverse.
    scenario: the maximizing ``s`` (None when there is none).
    """

    value: float
    scenario: np.ndarray | None
    status: str
    solver: str
    solve_time: float


def adversarial_problem(model, x_star, *, rho: float, norm: str = "linf", target: int = 1,
                        solver=None, time_limit: float | None = None, method: str = "auto") -> AdversarialResult:
    """Solve (AP) for `x_star` exactly with the method of the model's family (see module docstring).

    method: ``auto``; for a decision tree also ``leaves`` (per-leaf problems, eqs. 31-35, default) or
    ``milp`` (the ensemble MILP of eqs. 41-45 with one tree).
    """
    _check_norm(norm)
    x_star = np.asarray(x_star, dtype=float)
    family = model_family(model)
    if family == LINEAR:
        return _linear_ap(model, x_star, rho=rho, norm=norm, target=target)
    if family == TREE and method in ("auto", "leaves"):
        return _tree_ap(model, x_star, rho=rho, norm=norm, target=target)
    if family in (TREE, ENSEMBLE):
        return _ensemble_ap(model, x_star, rho=rho, norm=norm, target=target, solver=solver, time_limit=time_limit)
    return _network_ap(model, x_star, rho=rho, norm=norm, target=target, solver=solver, time_limit=time_limit)


def _linear_coefficients(model) -> tuple[np.ndarray, float]:
    coef = np.asarray(model.coef_, dtype=float).reshape(-1)
    if np.asarray(model.coef_).shape[0] != 1:
        raise ValueError("robust regions need a binary linear model (coef_ with one row)")
    return coef, float(np.asarray(model.intercept_).reshape(-1)[0])


def _linear_ap(model, x_star, *, rho, norm, target) -> AdversarialResult:
    """Closed form: min over the set of beta^T (x + s) is beta^T x - rho ||beta||_* (Appendix A)."""
    start = time.perf_counter()
    beta, beta0 = _linear_coefficients(model)
    sign = 1.0 if target == 1 else -1.0
    dual = np.linalg.norm(beta, ord=DUAL_ORD[norm])
    worst = sign * (beta @ x_star + beta0) - rho * dual  # the worst signed score over the set
    if norm == "linf":
        s = -sign * rho * np.sign(beta)
    else:
        s = -sign * rho * beta / max(np.linalg.norm(beta), 1e-300)
    return AdversarialResult(float(-worst), s, solvers.OPTIMAL, "closed form", time.perf_counter() - start)


def _leaf_depths(x, lo, hi, *, rho, norm) -> np.ndarray:
    """For each box: the largest depth alpha <= rho such that some y with ||y - x|| <= rho satisfies
    lo + alpha <= y <= hi - alpha (eqs. 31-35 in closed form); -inf when the box is out of reach."""
    half = np.where(np.isfinite(hi - lo), (hi - lo) / 2, np.inf).min(axis=1)
    cap = np.minimum(half, rho)

    def gap(alpha):  # per feature: distance from x to [lo + alpha, hi - alpha]
        a = np.asarray(alpha)[:, None]
        return np.maximum(0, np.maximum((lo + a) - x, x - (hi - a)))

    if norm == "linf":
        reach = np.minimum(x + rho - lo, hi - x + rho).min(axis=1)
        depth = np.minimum(reach, cap)
        return np.where(depth >= 0, depth, -np.inf)
    reachable = (np.nan_to_num(gap(np.zeros(len(lo))), posinf=np.inf) ** 2).sum(axis=1) <= rho ** 2
    low, high = np.zeros(len(lo)), np.where(reachable, cap, 0.0)
    for _ in range(60):  # bisection on the monotone reach condition
        mid = (low + high) / 2
        ok = (gap(mid) ** 2).sum(axis=1) <= rho ** 2
        low, high = np.where(ok, mid, low), np.where(ok, high, mid)
    return np.where(reachable, low, -np.inf)


def _tree_ap(model, x_star, *, rho, norm, target) -> AdversarialResult:
    """Decision tree: maximize the minimum slack over each adverse leaf (eqs. 31-35), keep the best."""
    start = time.perf_counter()
    boxes = tree_boxes(model)
    lo, hi, v = boxes.lo[0], boxes.hi[0], boxes.value[0]
    bad = boxes.adverse(boxes.offset + boxes.scale * v, target)
    if not bad.any():
        return AdversarialResult(-math.inf, None, solvers.OPTIMAL, "closed form", time.perf_counter() - start)
    depth = _leaf_depths(x_star, lo[bad], hi[bad], rho=rho, norm=norm)
    i = int(np.argmax(depth))
    if not np.isfinite(depth[i]):
        return AdversarialResult(-math.inf, None, solvers.OPTIMAL, "closed form", time.perf_counter() - start)
    alpha = depth[i]
    y = np.clip(x_star, lo[bad][i] + alpha, hi[bad][i] - alpha)
    return AdversarialResult(float(alpha), y - x_star, solvers.OPTIMAL, "closed form", time.perf_counter() - start)


def _adverse_cell(boxes: TreeBoxes, y, center, *, reach: float, alpha_max: float, alpha, target: int,
                  score_margin: float = 1e-9) -> tuple[list, dict]:
    """Constraints putting ``y`` (within ``reach`` of `center` in l-inf) at depth ``alpha`` inside one
    leaf per tree whose combined score is adverse (eqs. 42-45, with leaf binaries and big-M derived from
    the reach). Leaves that do not meet the reach box are dropped."""
    zs, values, cons = [], [], []
    lo_all, hi_all, leaf_of = [], [], []
    box_lo, box_hi = center - reach, center + reach
    for lo, hi, v in zip(boxes.lo, boxes.hi, boxes.value):
        keep = np.all((hi >= box_lo) & (lo <= box_hi), axis=1)
        base = len(values)
        values.extend(v[keep])
        zs.append((base, base + int(keep.sum())))
        lo_all.append(lo[keep]), hi_all.append(hi[keep])
        leaf_of.extend(range(base, base + int(keep.sum())))
    n_leaves = len(values)
    z = cp.Variable(n_leaves, boolean=True)
    for a, b in zs:
        cons.append(cp.sum(z[a:b]) == 1)
    lo_all, hi_all, leaf_of = np.vstack(lo_all), np.vstack(hi_all), np.array(leaf_of)
    # upper sides: y_f + alpha <= hi + M (1 - z); binding only if hi < center + reach + alpha_max
    li, fi = np.nonzero(hi_all < (center + reach + alpha_max)[None, :])
    if len(li):
        big_m = center[fi] + reach + alpha_max - hi_all[li, fi]
        cons.append(y[fi] + alpha - hi_all[li, fi] <= cp.multiply(big_m, 1 - z[li]))
    li, fi = np.nonzero(lo_all > (center - reach - alpha_max)[None, :])
    if len(li):
        big_m = lo_all[li, fi] - (center[fi] - reach) + alpha_max
        cons.append(lo_all[li, fi] - y[fi] + alpha <= cp.multiply(big_m, 1 - z[li]))
    score = boxes.offset + boxes.scale * (np.asarray(values) @ z)
    positive_strict = not boxes.inclusive  # class 1 iff score > thr (strict) or >= thr (inclusive)
    if target == 1:  # adverse = class 0
        cons.append(score <= boxes.threshold - (0.0 if positive_strict else score_margin))
    else:
        cons.append(score >= boxes.threshold + (score_margin if positive_strict else 0.0))
    return cons, {"z": z}


def _ensemble_ap(model, x_star, *, rho, norm, target, solver, time_limit) -> AdversarialResult:
    """Tree ensembles: the MILP of eqs. (41)-(45) (deepest point of an adverse cell within the set)."""
    boxes = tree_boxes(model)
    s, alpha = cp.Variable(len(x_star)), cp.Variable()
    y = x_star + s
    cons, _ = _adverse_cell(boxes, y, x_star, reach=rho, alpha_max=rho, alpha=alpha, target=target)
    cons += [alpha >= 0, alpha <= rho, s >= -rho, s <= rho]
    if norm == "l2":
        cons.append(cp.norm(s, 2) <= rho)
    problem = cp.Problem(cp.Maximize(alpha), cons)
    res = solvers.solve(problem, solver=solver, time_limit=time_limit)
    if res.status == solvers.INFEASIBLE:
        return AdversarialResult(-math.inf, None, solvers.OPTIMAL, res.solver, res.solve_time)
    if not res.has_solution:
        return AdversarialResult(math.nan, None, res.status, res.solver, res.solve_time)
    return AdversarialResult(float(alpha.value), np.asarray(s.value), res.status, res.solver, res.solve_time)


def _network_ap(model, x_star, *, rho, norm, target, solver, time_limit) -> AdversarialResult:
    """ReLU networks: the MILP of eqs. (60)-(67): the worst logit over the set (bounds from the set)."""

    s = cp.Variable(len(x_star))
    enc = encode(model, x_star + s, lower=x_star - rho, upper=x_star + rho)
    cons = list(enc.constraints) + [s >= -rho, s <= rho]
    if norm == "l2":
        cons.append(cp.norm(s, 2) <= rho)
    sign = 1.0 if target == 1 else -1.0
    problem = cp.Problem(cp.Minimize(sign * enc.output), cons)
    res = solvers.solve(problem, solver=solver, time_limit=time_limit)
    if res.status == solvers.OPTIMAL:
        value = sign * enc.threshold - res.objective  # tau - h(x* + s) for target 1
        return AdversarialResult(float(value), np.asarray(s.value), res.status, res.solver, res.solve_time)
    return AdversarialResult(math.nan, None if not res.has_solution else np.asarray(s.value), res.status,
                             res.solver, res.solve_time)


# =========================================================================== certified radius

def certified_radius(model, x, *, norm: str = "linf", target: int = 1, cap: float = 1.0, solver=None,
                     time_limit: float | None = None) -> float:
    """The largest radius r <= `cap` such that the whole r-ball (norm `norm`) around `x` is predicted
    `target`: the distance from `x` to the other class (the paper's "distance to the border", rho-bar)."""
    _check_norm(norm)
    x = np.asarray(x, dtype=float)
    family = model_family(model)
    if model_predict(model, x)[0] != target:
        return 0.0
    if family == LINEAR:
        beta, beta0 = _linear_coefficients(model)
        sign = 1.0 if target == 1 else -1.0
        return float(min(cap, max(0.0, sign * (beta @ x + beta0)) / np.linalg.norm(beta, ord=DUAL_ORD[norm])))
    if family == TREE:
        boxes = tree_boxes(model)
        bad = boxes.adverse(boxes.offset + boxes.scale * boxes.value[0], target)
        if not bad.any():
            return float(cap)
        lo, hi = boxes.lo[0][bad], boxes.hi[0][bad]
        gap = np.maximum(0, np.maximum(lo - x, x - hi))
        dist = gap.max(axis=1) if norm == "linf" else np.sqrt((gap ** 2).sum(axis=1))
        return float(min(cap, dist.min()))
    y, r = cp.Variable(len(x)), cp.Variable()
    if family == ENSEMBLE:
        cons, _ = _adverse_cell(tree_boxes(model), y, x, reach=cap, alpha_max=0.0, alpha=0.0, target=target)
    else:

        enc = encode(model, y, lower=x - cap, upper=x + cap)
        sign = 1.0 if target == 1 else -1.0
        cons = list(enc.constraints) + [sign * enc.output <= sign * enc.threshold]
    cons += [y >= x - cap, y <= x + cap, r <= cap]
    cons += [cp.abs(y - x) <= r] if norm == "linf" else [cp.norm(y - x, 2) <= r]
    res = solvers.solve(cp.Problem(cp.Minimize(r), cons), solver=solver, time_limit=time_limit)
    if res.status == solvers.INFEASIBLE:
        return float(cap)
    if not res.has_solution:
        return math.nan
    return float(min(cap, max(0.0, res.objective)))


# =========================================================================== master problem and loop

@dataclass
class Iteration:
    """One pass of Algorithm 1: the master solution, its distance, the AP's answer and the times."""

    iteration: int
    x: np.ndarray
    distance: float
    ap_value: float
    scenario: np.ndarray | None
    master_time: float
    adversarial_time: float
    radius: float | None = None  # certified radius of x (filled when requested; not in the times)


@dataclass
class RobustRegion:
    """Result of :func:`robust_region`.

    x: the region's centre x* (converged: the last master solution; early stop: the master solution
    with the largest certified radius ``rho_bar``). status: ``converged``, ``time_limit``,
    ``iteration_limit``, ``infeasible`` (no robust counterfactual in the domain) or ``no_solution``.
    time: master + adversarial solve time (the certified-radius computations are excluded, as in the
    paper). solver: the solvers that produced it.
    """

    x: np.ndarray | None
    rho: float
    norm: str
    objective: str
    target: int
    status: str
    iterations: int
    distance: float
    time: float
    master_time: float
    adversarial_time: float
    solver: str
    rho_bar: float | None = None
    history: list[Iteration] = field(default_factory=list)

    @property
    def converged(self) -> bool:
        return self.status == "converged"

    @property
    def early_stop(self) -> bool:
        return self.status in ("time_limit", "iteration_limit")

    @property
    def radius(self) -> float:
        """The radius the region is claimed robust for: rho when converged, rho-bar on an early stop."""
        return self.rho if self.converged else (self.rho_bar or 0.0)


def _as_bounds(value, n: int) -> np.ndarray:
    return np.broadcast_to(np.asarray(value, dtype=float), (n,)).astype(float)


class MasterProblem:
    """(MP), eq. (6): the closest x to x_hat whose shifted copies x + s, s in Z, are all `target`."""

    def __init__(self, model, x_hat, *, lower, upper, target, objective="l1", margin=1e-4):

        self._encode = encode
        self.model, self.x_hat, self.target, self.margin = model, x_hat, target, margin
        self.lower, self.upper = lower, upper
        self.x = cp.Variable(len(x_hat))
        self.objective = cp.Minimize(distance(self.x - x_hat, objective))
        self.constraints = [self.x >= lower, self.x <= upper]
        self.scenarios: list[np.ndarray] = []

    def add(self, s: np.ndarray) -> None:
        """Add scenario s to Z: one more encoded copy of the model, ``encode(model, x + s)``."""
        s = np.asarray(s, dtype=float)
        enc = self._encode(self.model, self.x + s, lower=self.lower + s, upper=self.upper + s)
        self.constraints += list(enc.constraints) + list(enc.predicts(self.target, margin=self.margin))
        self.scenarios.append(s)

    def solve(self, *, solver=None, time_limit=None):
        problem = cp.Problem(self.objective, self.constraints)
        return solvers.solve(problem, solver=solver, time_limit=time_limit), self.x.value


def robust_region(model, x_hat, *, rho: float, norm: str = "linf", target: int | None = None,
                  lower=0.0, upper=1.0, objective: str = "l1", epsilon: float = 1e-6,
                  max_iterations: int = 200, time_limit: float = 1000.0, solver=None, margin: float = 1e-4,
                  track_radius: bool = False, tree_method: str = "auto") -> RobustRegion:
    """Algorithm 1: the closest x to `x_hat` whose whole `rho`-ball (`norm`) is predicted `target`.

    Parameters
    ----------
    model : a fitted binary classifier (linear, decision tree, forest, gradient boosting, ReLU network).
    x_hat : the factual instance.
    rho, norm : the uncertainty set ``{s : ||s|| <= rho}`` with ``norm`` ``linf`` (box) or ``l2`` (ball).
    target : the class the region must have; default: the opposite of ``model.predict(x_hat)``.
    lower, upper : the feature domain X (scalars or arrays); the paper's data are min-max scaled to [0, 1].
    objective : the master problem's distance ``l1`` (the authors' code, always), ``l2`` or ``linf``.
    epsilon : Algorithm 1 stops when the AP value is at most epsilon.
    max_iterations, time_limit : early-stop limits (the paper: 1000 s per instance).
    margin : how far past the decision threshold each encoded copy must be (MP, eq. 6).
    track_radius : compute every master solution's certified radius (Figure 7; not counted in `time`).
    tree_method : for a single decision tree, the AP by per-leaf problems (``auto``/``leaves``) or ``milp``.
    """
    _check_norm(norm)
    if objective not in OBJECTIVES:
        raise ValueError(f"objective={objective!r}: expected one of {OBJECTIVES}")
    if not rho > 0:
        raise ValueError(f"rho must be positive, got {rho!r}")
    family = model_family(model)
    x_hat = np.asarray(x_hat, dtype=float).reshape(-1)
    n = len(x_hat)
    lower, upper = _as_bounds(lower, n), _as_bounds(upper, n)
    if target is None:
        target = 1 - int(model_predict(model, x_hat)[0])
    if family == LINEAR:
        return _linear_region(model, x_hat, rho=rho, norm=norm, target=target, lower=lower, upper=upper,
                              objective=objective, margin=margin, solver=solver)
    master = MasterProblem(model, x_hat, lower=lower, upper=upper, target=target, objective=objective,
                           margin=margin)
    master.add(np.zeros(n))  # Z = {0}
    history: list[Iteration] = []
    used: set[str] = set()
    start, status = time.perf_counter(), "iteration_limit"
    for k in range(1, max_iterations + 1):
        remaining = time_limit - (time.perf_counter() - start)
        if remaining <= 0:
            status = "time_limit"
            break
        mp, x_star = master.solve(solver=solver, time_limit=remaining)
        used.add(mp.solver)
        if mp.status == solvers.INFEASIBLE:
            status = "infeasible"
            break
        if mp.status != solvers.OPTIMAL:  # time limit inside the MP: its incumbent is not a lower bound
            status = "time_limit" if mp.status in (solvers.TIME_LIMIT, solvers.NO_SOLUTION) else "no_solution"
            break
        x_star = np.clip(np.asarray(x_star, dtype=float), lower, upper)
        remaining = time_limit - (time.perf_counter() - start)
        ap = adversarial_problem(model, x_star, rho=rho, norm=norm, target=target, solver=solver,
                                 time_limit=max(remaining, 1.0), method="milp" if tree_method == "milp" else "auto")
        used.add(ap.solver)
        history.append(Iteration(k, x_star, _np_norm(x_star - x_hat, objective), ap.value, ap.scenario,
                                 mp.solve_time, ap.solve_time))
        if ap.status != solvers.OPTIMAL:
            status = "time_limit"
            break
        if ap.value <= epsilon:
            status = "converged"
            break
        master.add(ap.scenario)
    elapsed = time.perf_counter() - start
    result = RobustRegion(
        x=None, rho=rho, norm=norm, objective=objective, target=target, status=status,
        iterations=len(history), distance=math.nan, time=elapsed,
        master_time=sum(h.master_time for h in history), adversarial_time=sum(h.adversarial_time for h in history),
        solver="+".join(sorted(used - {"closed form"})) or "closed form", history=history,
    )
    if track_radius or (status != "converged" and history):
        for h in history:
            h.radius = certified_radius(model, h.x, norm=norm, target=target, cap=rho, solver=solver)
    if status == "converged":
        result.x, result.distance = history[-1].x, history[-1].distance
    elif history:
        best = max(history, key=lambda h: (np.nan_to_num(h.radius, nan=-1.0), -h.iteration))
        # the certified radius is the distance to the other class: the ball of exactly that radius
        # touches it (a closed leaf side ``x <= t`` is adverse on the boundary), so rho-bar is taken a
        # hair inside (RHO_BAR_SLACK, also covering the solvers' feasibility tolerance)
        rho_bar = best.radius if best.radius is None or not np.isfinite(best.radius) \
            else max(0.0, best.radius - RHO_BAR_SLACK)
        result.x, result.distance, result.rho_bar = best.x, best.distance, rho_bar
    return result


def _linear_region(model, x_hat, *, rho, norm, target, lower, upper, objective, margin, solver) -> RobustRegion:
    """Linear models: one convex problem with the robust constraint of eq. (69), no loop."""
    beta, beta0 = _linear_coefficients(model)
    sign = 1.0 if target == 1 else -1.0
    x = cp.Variable(len(x_hat))
    robust_score = sign * (beta @ x + beta0) - rho * np.linalg.norm(beta, ord=DUAL_ORD[norm])
    problem = cp.Problem(cp.Minimize(distance(x - x_hat, objective)), [x >= lower, x <= upper, robust_score >= margin])
    res = solvers.solve(problem, solver=solver)
    ok = res.status == solvers.OPTIMAL
    return RobustRegion(
        x=np.asarray(x.value) if ok else None, rho=rho, norm=norm, objective=objective, target=target,
        status="converged" if ok else ("infeasible" if res.status == solvers.INFEASIBLE else "no_solution"),
        iterations=0, distance=res.objective if ok else math.nan, time=res.solve_time,
        master_time=res.solve_time, adversarial_time=0.0, solver=res.solver,
    )


# =========================================================================== heuristic (eqs. 36-39)

def single_leaf_region(model, x_hat, *, rho: float, norm: str = "linf", target: int | None = None,
                       lower=0.0, upper=1.0, objective: str = "l1", margin: float = 1e-5) -> RobustRegion:
    """The single-leaf heuristic for decision trees (eqs. 36-39): the whole set inside one target leaf.

    For axis-aligned splits ``rho * ||a_j||_* = rho`` in both norms, so each leaf's problem is the
    projection of x_hat onto the leaf box shrunk by rho (and clipped to the domain); the best leaf wins.
    The solution is robust but may be farther than Algorithm 1's (Figure 5).
    """
    from sklearn.tree import DecisionTreeClassifier

    if not isinstance(model, DecisionTreeClassifier):
        raise TypeError(f"the single-leaf heuristic is for a DecisionTreeClassifier, got {type(model).__name__}")
    _check_norm(norm)
    start = time.perf_counter()
    x_hat = np.asarray(x_hat, dtype=float).reshape(-1)
    n = len(x_hat)
    lower, upper = _as_bounds(lower, n), _as_bounds(upper, n)
    if target is None:
        target = 1 - int(model_predict(model, x_hat)[0])
    boxes = tree_boxes(model)
    good = ~boxes.adverse(boxes.offset + boxes.scale * boxes.value[0], target)
    lo = np.maximum(boxes.lo[0][good] + rho + margin, lower)  # strict right branches: x - rho > t
    hi = np.minimum(boxes.hi[0][good] - rho - margin, upper)  # float32 casting: margins on both sides
    feasible = np.all(lo <= hi, axis=1)
    result = RobustRegion(None, rho, norm, objective, target, "infeasible", 1, math.nan, 0.0, 0.0, 0.0,
                          "closed form")
    if feasible.any():
        proj = np.clip(x_hat, lo[feasible], hi[feasible])
        dist = np.array([_np_norm(p - x_hat, objective) for p in proj])
        i = int(np.argmin(dist))
        result.x, result.distance, result.status = proj[i], float(dist[i]), "converged"
    result.time = result.master_time = time.perf_counter() - start
    return result


# =========================================================================== certification

@dataclass
class Certificate:
    """Independent check of a region: the AP solved again and `n_samples` points classified by
    ``model.predict``. certified: the centre is `target`, the AP value is at most epsilon and no
    sampled point is adverse."""

    certified: bool
    radius: float
    ap_value: float
    ap_status: str
    n_samples: int
    n_violations: int
    centre_valid: bool


def sample_set(n_features: int, *, rho: float, norm: str, n_samples: int, seed=0) -> np.ndarray:
    """Points of the set ``{s : ||s|| <= rho}``: a third uniform inside, a third on the surface, a third
    at extreme points (box corners; for the ball, the surface again)."""
    rng = np.random.default_rng(seed)
    k = n_samples // 3
    if norm == "linf":
        inside = rng.uniform(-rho, rho, size=(n_samples - 2 * k, n_features))
        face = rng.uniform(-rho, rho, size=(k, n_features))
        face[np.arange(k), rng.integers(n_features, size=k)] = rho * rng.choice([-1.0, 1.0], size=k)
        corners = rho * rng.choice([-1.0, 1.0], size=(k, n_features))
        return np.vstack([inside, face, corners])
    direction = rng.normal(size=(n_samples, n_features))
    direction /= np.linalg.norm(direction, axis=1, keepdims=True)
    radius = np.concatenate([rho * rng.uniform(size=n_samples - 2 * k) ** (1 / n_features), np.full(2 * k, rho)])
    return direction * radius[:, None]


def certify_region(model, x, *, rho: float, norm: str = "linf", target: int = 1, n_samples: int = 10_000,
                   epsilon: float = 1e-6, seed=0, solver=None, time_limit: float | None = None) -> Certificate:
    """Check that every point of ``x + S`` (radius `rho`) is predicted `target`, independently of the loop."""
    x = np.asarray(x, dtype=float)
    centre_valid = bool(model_predict(model, x)[0] == target)
    if rho <= 0:
        return Certificate(centre_valid, 0.0, -math.inf, solvers.OPTIMAL, 0, 0, centre_valid)
    ap = adversarial_problem(model, x, rho=rho, norm=norm, target=target, solver=solver, time_limit=time_limit)
    points = x + sample_set(len(x), rho=rho, norm=norm, n_samples=n_samples, seed=seed)
    violations = int((model_predict(model, points) != target).sum())
    ok = centre_valid and ap.status == solvers.OPTIMAL and ap.value <= epsilon and violations == 0
    return Certificate(bool(ok), float(rho), float(ap.value), ap.status, n_samples, violations, centre_valid)


# =========================================================================== the chapter's protocol

DATASETS = ("banknote", "diabetes", "ionosphere")
#: The models of the paper (Tables 1-2, in order): name -> (family, size).
PAPER_MODELS = ("LR", "DT3", "DT5", "DT10", "RF5", "RF10", "RF20", "RF50", "RF100",
                "GBM5", "GBM10", "GBM20", "GBM50", "GBM100", "NN10", "NN10-10-10", "NN50", "NN100")


def paper_data(dataset: str) -> tuple[np.ndarray, np.ndarray]:
    """The authors' data: the whole frame min-max scaled to [0, 1] (no split; the 0/1 outcome is
    unchanged by scaling). Returns (X, y)."""
    from ..datasets import load_dataset

    if dataset not in DATASETS:
        raise ValueError(f"dataset={dataset!r}: expected one of {DATASETS}")
    data = load_dataset(f"robust-ce/{dataset}").scaled()
    return data.X.to_numpy(float), data.y.to_numpy(int)


def paper_model(name: str, *, seed: int = 0):
    """An unfitted model of the paper's grid by name (``LR``, ``DT10``, ``RF50``, ``GBM20``, ``NN10-10-10``):
    logistic regression; CART of the given depth; random forests of depth-3 trees; gradient boosting of
    depth-2 trees with learning rate 1; ReLU MLPs (max_iter 10000) -- as in the authors' code."""
    from sklearn.ensemble import GradientBoostingClassifier, RandomForestClassifier
    from sklearn.linear_model import LogisticRegression
    from sklearn.neural_network import MLPClassifier
    from sklearn.tree import DecisionTreeClassifier

    if name == "LR":
        return LogisticRegression(random_state=seed)
    for prefix, make in (
        ("DT", lambda k: DecisionTreeClassifier(max_depth=k, random_state=seed)),
        ("RF", lambda k: RandomForestClassifier(n_estimators=k, max_depth=3, random_state=seed)),
        ("GBM", lambda k: GradientBoostingClassifier(n_estimators=k, max_depth=2, learning_rate=1.0, random_state=seed)),
    ):
        if name.startswith(prefix) and name[len(prefix):].isdigit():
            return make(int(name[len(prefix):]))
    if name.startswith("NN"):
        sizes = tuple(int(k) for k in name[2:].split("-"))
        return MLPClassifier(hidden_layer_sizes=sizes, max_iter=10_000, random_state=seed)
    raise ValueError(f"model={name!r}: expected one of {PAPER_MODELS} (or another size of the same kinds)")


@functools.lru_cache(maxsize=32)
def fitted_model(dataset: str, model: str, seed: int = 0):
    """The paper's model fitted on the whole scaled dataset (cached per process)."""
    X, y = paper_data(dataset)
    return paper_model(model, seed=seed).fit(X, y)


def model_accuracy(*, dataset: str, model: str, seed: int = 0, test_size: float = 0.2) -> dict:
    """Training accuracy of the model used (fitted on all rows) and, to mirror Table 4's test column,
    the test accuracy of the same model refitted on a stratified 80/20 split."""
    from sklearn.model_selection import train_test_split

    X, y = paper_data(dataset)
    full = fitted_model(dataset, model, seed)
    X_tr, X_te, y_tr, y_te = train_test_split(X, y, test_size=test_size, stratify=y, random_state=seed)
    split = paper_model(model, seed=seed).fit(X_tr, y_tr)
    return {"dataset": dataset, "model": model, "train": float((full.predict(X) == y).mean()),
            "test": float((split.predict(X_te) == y_te).mean())}


def _certify_result(model, region: RobustRegion, *, n_samples, seed, solver) -> Certificate | None:
    if region.x is None:
        return None
    return certify_region(model, region.x, rho=region.radius, norm=region.norm, target=region.target,
                          n_samples=n_samples, seed=seed, solver=solver)


def region_instance(*, dataset: str, model: str, norm: str, rho: float, index: int, time_limit: float = 1000.0,
                    max_iterations: int = 200, objective: str = "l1", solver=None, seed: int = 0,
                    n_samples: int = 10_000, track_radius: bool = False) -> dict:
    """One cell of Tables 1-2: Algorithm 1 for factual row `index` (target: the other predicted class),
    then the independent certification. A flat dict (``run_grid`` friendly)."""
    X, _ = paper_data(dataset)
    clf = fitted_model(dataset, model, seed)
    region = robust_region(clf, X[index], rho=rho, norm=norm, lower=0.0, upper=1.0, objective=objective,
                           time_limit=time_limit, max_iterations=max_iterations, solver=solver,
                           track_radius=track_radius)
    cert = _certify_result(clf, region, n_samples=n_samples, seed=seed + index, solver=solver)
    return {
        "dataset": dataset, "model": model, "norm": norm, "rho": rho, "index": index,
        "status": region.status, "converged": region.converged, "early_stop": region.early_stop,
        "iterations": region.iterations, "time": region.time, "master_time": region.master_time,
        "adversarial_time": region.adversarial_time, "distance": region.distance, "rho_bar": region.rho_bar,
        "solver": region.solver, "x": None if region.x is None else region.x.tolist(),
        "x_hat": X[index].tolist(), "target": region.target,
        "has_region": region.x is not None,  # False: the time limit hit inside the first master problem
        "certified": bool(cert and cert.certified), "certified_radius": cert.radius if cert else math.nan,
        "certificate_ap_value": cert.ap_value if cert else math.nan,
        "samples": cert.n_samples if cert else 0, "sample_violations": cert.n_violations if cert else -1,
        "history": [{"iteration": h.iteration, "distance": h.distance, "ap_value": h.ap_value, "radius": h.radius}
                    for h in region.history],
    }


def baseline_instance(*, dataset: str, model: str, rho: float, index: int, time_limit: float = 1000.0,
                      solver=None, seed: int = 0, n_samples: int = 10_000, outer_steps: int = 200) -> dict:
    """One row of Table 3: our region (l2 ball) and the gradient baseline for the same factual, both
    checked exactly (AP at rho + samples) and for validity with ``model.predict``."""
    from .adversarial_recourse import adversarial_recourse

    X, _ = paper_data(dataset)
    clf = fitted_model(dataset, model, seed)
    ours = region_instance(dataset=dataset, model=model, norm="l2", rho=rho, index=index, time_limit=time_limit,
                           solver=solver, seed=seed, n_samples=n_samples)
    theirs = adversarial_recourse(clf, X[index], rho=rho, target=ours["target"], outer_steps=outer_steps, seed=seed)
    cert = certify_region(clf, theirs.x, rho=rho, norm="l2", target=ours["target"], n_samples=n_samples,
                          seed=seed + index, solver=solver)
    ours_robust = bool(ours["certified"] and ours["converged"])
    return {
        "dataset": dataset, "model": model, "rho": rho, "index": index,
        "ours_robust": ours_robust, "ours_valid": bool(ours["x"] is not None
                                                        and model_predict(clf, ours["x"])[0] == ours["target"]),
        "ours_distance": ours["distance"], "ours_time": ours["time"], "ours_status": ours["status"],
        "ours_rho_bar": ours["rho_bar"], "solver": ours["solver"],
        "baseline_robust": bool(cert.certified), "baseline_valid": theirs.valid,
        "baseline_robust_by_attack": theirs.robust_by_attack, "baseline_distance": theirs.distance,
        "baseline_time": theirs.time, "baseline_ap_value": cert.ap_value,
        "baseline_sample_violations": cert.n_violations,
    }


def summary_table(frame) -> "pd.DataFrame":
    """Tables 1-2 from instance rows: mean time and iterations (standard errors) over the instances
    that converged (as the paper), the number of early stops and their mean rho-bar, and certification."""
    import pandas as pd

    def se(v):
        return v.std(ddof=1) / math.sqrt(len(v)) if len(v) > 1 else math.nan

    rows = []
    for key, g in frame.groupby(["norm", "rho", "model", "dataset"], sort=False):
        done = g[g["converged"]]
        stops = g[g["early_stop"]]
        rows.append(dict(zip(["norm", "rho", "model", "dataset"], key), **{
            "n": len(g), "time": done["time"].mean(), "time_se": se(done["time"]),
            "iterations": done["iterations"].mean(), "iterations_se": se(done["iterations"]),
            "early_stops": len(stops), "rho_bar": stops["rho_bar"].mean() if len(stops) else math.nan,
            "certified": int(g["certified"].sum()),
            "time_all": g["time"].mean(), "iterations_all": g["iterations"].mean(),
        }))
    return pd.DataFrame(rows)


def paper_tables() -> "pd.DataFrame":
    """Tables 1 (linf) and 2 (l2) of the paper: mean time (s.e.), mean iterations (s.e.), early stops and
    their mean rho-bar, per norm, rho, model and dataset (NaN where the paper prints a dash)."""
    import io

    import pandas as pd

    return pd.read_csv(io.StringIO(PAPER_TABLES_CSV))


#: Table 3 of the paper: % robust and % valid, Dominguez-Olmedo et al. vs. Algorithm 1 (10 instances).
PAPER_TABLE3 = [
    # dataset, model, rho, baseline robust, baseline valid, ours robust, ours valid
    ("banknote", "NN50", 0.1, 80, 100, 100, 100), ("banknote", "NN50", 0.2, 0, 100, 100, 100),
    ("diabetes", "NN50", 0.1, 60, 100, 100, 100), ("diabetes", "NN50", 0.2, 0, 100, 80, 100),
    ("ionosphere", "NN10", 0.1, 70, 90, 100, 100), ("ionosphere", "NN10", 0.2, 40, 90, 100, 100),
    ("ionosphere", "NN50", 0.1, 50, 100, 100, 100), ("ionosphere", "NN50", 0.2, 30, 100, 100, 100),
]

#: Table 4 of the paper (train, test accuracy) per dataset, in the order of PAPER_MODELS.
PAPER_TABLE4 = {
    "banknote": ("0.97 0.94 0.98 1.00 0.96 0.97 0.96 0.97 0.97 0.99 0.99 1.00 1.00 1.00 0.98 0.99 1.00 1.00",
                 "0.96 0.89 1.00 1.00 0.96 0.93 0.93 0.96 0.93 0.96 1.00 1.00 1.00 1.00 1.00 1.00 1.00 1.00"),
    "diabetes": ("0.77 0.77 0.84 0.97 0.77 0.77 0.79 0.80 0.80 0.80 0.83 0.87 0.93 0.99 0.78 0.79 0.80 0.82",
                 "0.72 0.77 0.72 0.69 0.72 0.69 0.69 0.67 0.71 0.59 0.67 0.69 0.59 0.62 0.69 0.64 0.73 0.77"),
    "ionosphere": ("0.88 0.93 0.97 1.00 0.93 0.95 0.94 0.96 0.96 0.99 1.00 1.00 1.00 1.00 0.98 0.99 0.99 0.99",
                   "0.83 0.88 0.83 0.83 0.88 0.92 0.92 0.92 0.92 0.88 0.88 0.92 0.92 0.92 0.89 0.92 0.88 0.88"),
}


def accuracy_table(rows) -> "pd.DataFrame":
    """Our accuracies (from :func:`model_accuracy` rows) beside Table 4 of the paper."""
    import pandas as pd

    ours = pd.DataFrame(list(rows))
    paper = {(d, m): (float(tr), float(te)) for d, (trs, tes) in PAPER_TABLE4.items()
             for m, tr, te in zip(PAPER_MODELS, trs.split(), tes.split())}
    ours["paper train"] = [paper.get((d, m), (math.nan,) * 2)[0] for d, m in zip(ours.dataset, ours.model)]
    ours["paper test"] = [paper.get((d, m), (math.nan,) * 2)[1] for d, m in zip(ours.dataset, ours.model)]
    return ours.set_index(["dataset", "model"])[["train", "paper train", "test", "paper test"]].unstack(0)


def _mean_se(mean, se) -> str:
    if mean != mean:  # NaN
        return "–"
    return f"{mean:.2f} ({se:.2f})" if se == se else f"{mean:.2f} (–)"


def _stops(n, rho_bar) -> str:
    return "–" if not n else f"{int(n)} (ρ̄={rho_bar:.3f})"


def compare_with_paper(summary, *, norm: str) -> "pd.DataFrame":
    """Table 1 (``linf``) or 2 (``l2``): ours and the paper's time, iterations and early stops side by side,
    with the time ratio ours/paper, for the configurations that ran."""
    import pandas as pd

    paper = paper_tables()
    merged = summary[summary["norm"] == norm].merge(paper, on=["norm", "rho", "model", "dataset"], how="left",
                                                      suffixes=("", "_paper"))
    out = pd.DataFrame({
        "ρ": merged["rho"], "model": merged["model"], "dataset": merged["dataset"], "n": merged["n"],
        "time (s) ours": [_mean_se(m, s) for m, s in zip(merged["time"], merged["time_se"])],
        "time (s) paper": [_mean_se(m, s) for m, s in zip(merged["time_paper"], merged["time_se_paper"])],
        "ratio": (merged["time"] / merged["time_paper"]).round(2),
        "iterations ours": [_mean_se(m, s) for m, s in zip(merged["iterations"], merged["iterations_se"])],
        "iterations paper": [_mean_se(m, s) for m, s in zip(merged["iterations_paper"], merged["iterations_se_paper"])],
        "early stops ours": [_stops(n, r) for n, r in zip(merged["early_stops"], merged["rho_bar"])],
        "early stops paper": [_stops(n, r) for n, r in zip(merged["early_stops_paper"], merged["rho_bar_paper"])],
        "certified": [f"{c}/{n}" for c, n in zip(merged["certified"], merged["n"])],
    })
    return out.set_index(["ρ", "model", "dataset"])


def table3(frame) -> "pd.DataFrame":
    """Table 3: % robust (certified exactly at rho) and % valid, the gradient baseline vs. Algorithm 1,
    ours beside the paper's."""
    import pandas as pd

    paper = {(d, m, r): v for d, m, r, *v in PAPER_TABLE3}
    rows = []
    for (d, m, r), g in frame.groupby(["dataset", "model", "rho"], sort=False):
        p = paper.get((d, m, r), [math.nan] * 4)
        rows.append({"dataset": d, "model": m, "ρ": r, "n": len(g),
                     "baseline robust %": 100 * g["baseline_robust"].mean(), "paper": p[0],
                     "baseline valid %": 100 * g["baseline_valid"].mean(), "paper ": p[1],
                     "ours robust %": 100 * g["ours_robust"].mean(), "paper  ": p[2],
                     "ours valid %": 100 * g["ours_valid"].mean(), "paper   ": p[3]})
    return pd.DataFrame(rows).set_index(["dataset", "model", "ρ"])


def trend_checks(summary) -> dict:
    """The paper's qualitative claims as numbers computed from a summary (:func:`summary_table`).

    complexity_ratio: median over (dataset, norm, rho, family) of mean time of the largest model over
    the smallest; features_ratio: median over (model, norm, rho) of mean time on ionosphere (34 features)
    over banknote (4); l2_slower / small_rho_faster: share of matched configurations where l2 takes
    longer than linf / rho=0.01 is faster than rho=0.05 (mean time over all instances, early stops at
    their time)."""
    import pandas as pd

    s = summary.copy()
    s["family"] = s["model"].str.extract(r"^([A-Z]+)")[0]
    s["size"] = s["model"].map(lambda m: PAPER_MODELS.index(m) if m in PAPER_MODELS else -1)
    s["t"] = s["time_all"]
    out = {}
    ratios = []
    for _, g in s[s["family"] != "LR"].groupby(["dataset", "norm", "rho", "family"]):
        if g["size"].nunique() > 1:
            g = g.sort_values("size")
            ratios.append(g["t"].iloc[-1] / g["t"].iloc[0])
    out["complexity_ratio"] = float(pd.Series(ratios).median()) if ratios else math.nan
    feat = []
    for _, g in s.groupby(["model", "norm", "rho"]):
        by = g.set_index("dataset")["t"]
        if {"ionosphere", "banknote"} <= set(by.index):
            feat.append(by["ionosphere"] / by["banknote"])
    out["features_ratio"] = float(pd.Series(feat).median()) if feat else math.nan
    key = ["model", "dataset", "rho"]
    wide = s.pivot_table(index=key, columns="norm", values="t")
    out["l2_slower"] = float((wide["l2"] > wide["linf"]).mean()) if {"l2", "linf"} <= set(wide.columns) else math.nan
    wide = s.pivot_table(index=["model", "dataset", "norm"], columns="rho", values="t")
    out["small_rho_faster"] = (float((wide[0.01] < wide[0.05]).mean())
                               if {0.01, 0.05} <= set(wide.columns) else math.nan)
    out["l2_more_iterations"] = math.nan
    wide = s.pivot_table(index=key, columns="norm", values="iterations_all")
    if {"l2", "linf"} <= set(wide.columns):
        out["l2_more_iterations"] = float((wide["l2"] >= wide["linf"]).mean())
    return out


# =========================================================================== figures

def plot_region_iterations(model, region: RobustRegion, x_hat, *, ax=None, resolution: int = 300,
                           lower=0.0, upper=1.0, title: str = ""):
    """Figure 2/6: the classes of a 2-D model, the factual and every master solution with its box/ball."""
    import matplotlib.pyplot as plt
    from matplotlib.patches import Circle, Rectangle

    ax = ax or plt.gca()
    g = np.linspace(lower, upper, resolution)
    xx, yy = np.meshgrid(g, g)
    pred = model_predict(model, np.c_[xx.ravel(), yy.ravel()]).reshape(xx.shape)
    ax.contourf(xx, yy, pred != region.target, levels=[-0.5, 0.5, 1.5], colors=["white", "#F4B6A6"])
    ax.plot(*np.asarray(x_hat)[:2], "k*", ms=12, label="factual")
    cmap = plt.get_cmap("viridis")
    for h in region.history:
        c = cmap(h.iteration / max(1, len(region.history)))
        if region.norm == "linf":
            ax.add_patch(Rectangle(h.x - region.rho, 2 * region.rho, 2 * region.rho, fill=False, ec=c, lw=1.5))
        else:
            ax.add_patch(Circle(h.x, region.rho, fill=False, ec=c, lw=1.5))
        ax.plot(*h.x, "o", color=c, ms=4)
        ax.annotate(str(h.iteration), h.x, textcoords="offset points", xytext=(3, 3), fontsize=8, color=c)
    ax.set(xlim=(lower, upper), ylim=(lower, upper), aspect="equal", title=title,
           xlabel="feature 1 (scaled)", ylabel="feature 2 (scaled)")
    return ax


def plot_convergence(history, *, rho: float, ax=None, title: str = ""):
    """Figure 7: distance to the factual (solid) and certified radius (dashed) per iteration."""
    import matplotlib.pyplot as plt

    ax = ax or plt.gca()
    it = [h["iteration"] for h in history]
    ax.plot(it, [h["distance"] for h in history], "-o", label="distance to factual (l1)")
    ax2 = ax.twinx()
    ax2.plot(it, [h["radius"] for h in history], "--s", color="#E69F00", label="certified radius")
    ax2.axhline(rho, color="grey", lw=0.8, ls=":")
    ax.set(xlabel="iteration", ylabel="distance", title=title)
    ax.xaxis.set_major_locator(plt.MaxNLocator(integer=True))
    ax2.set_ylabel("radius")
    ax2.grid(False)
    return ax, ax2


#: Transcribed from Tables 1-2 of the paper (Maragno et al., 2024).
PAPER_TABLES_CSV = """\
norm,rho,model,dataset,time,time_se,iterations,iterations_se,early_stops,rho_bar
linf,0.01,LR,banknote,0.25,0.01,,,0,
linf,0.01,LR,diabetes,0.23,0.01,,,0,
linf,0.01,LR,ionosphere,0.25,0.01,,,0,
linf,0.01,DT3,banknote,1.53,0.04,1.00,0.00,0,
linf,0.01,DT3,diabetes,1.66,0.07,1.20,0.09,0,
linf,0.01,DT3,ionosphere,1.66,0.07,1.10,0.07,0,
linf,0.01,DT5,banknote,1.86,0.09,1.10,0.07,0,
linf,0.01,DT5,diabetes,2.29,0.11,1.20,0.09,0,
linf,0.01,DT5,ionosphere,1.96,0.08,1.10,0.07,0,
linf,0.01,DT10,banknote,3.90,0.88,2.00,0.58,0,
linf,0.01,DT10,diabetes,5.77,0.48,1.40,0.13,0,
linf,0.01,DT10,ionosphere,2.86,0.16,1.20,0.09,0,
linf,0.01,RF5,banknote,3.50,0.36,1.75,0.22,0,
linf,0.01,RF5,diabetes,5.89,1.98,2.60,0.83,0,
linf,0.01,RF5,ionosphere,3.79,0.24,1.70,0.13,0,
linf,0.01,RF10,banknote,6.74,1.03,2.60,0.40,0,
linf,0.01,RF10,diabetes,7.20,0.94,2.35,0.29,0,
linf,0.01,RF10,ionosphere,8.76,0.89,2.85,0.33,0,
linf,0.01,RF20,banknote,21.21,4.61,4.55,0.99,0,
linf,0.01,RF20,diabetes,33.55,7.48,6.15,0.79,0,
linf,0.01,RF20,ionosphere,22.33,2.83,4.40,0.51,0,
linf,0.01,RF50,banknote,115.79,34.35,7.80,1.65,0,
linf,0.01,RF50,diabetes,110.24,32.43,6.47,1.39,3,0.007
linf,0.01,RF50,ionosphere,137.26,33.37,8.20,1.20,0,
linf,0.01,RF100,banknote,214.38,65.07,6.44,1.31,2,0.009
linf,0.01,RF100,diabetes,274.09,71.93,8.87,1.49,5,0.004
linf,0.01,RF100,ionosphere,285.62,95.57,8.27,2.02,9,0.004
linf,0.01,GBM5,banknote,2.70,0.22,1.20,0.14,0,
linf,0.01,GBM5,diabetes,2.76,0.22,1.85,0.17,0,
linf,0.01,GBM5,ionosphere,2.37,0.15,1.60,0.13,0,
linf,0.01,GBM10,banknote,3.20,0.30,1.45,0.15,0,
linf,0.01,GBM10,diabetes,2.72,0.29,1.50,0.24,0,
linf,0.01,GBM10,ionosphere,4.35,0.44,2.75,0.30,0,
linf,0.01,GBM20,banknote,5.94,0.50,2.60,0.23,0,
linf,0.01,GBM20,diabetes,4.25,0.45,2.15,0.28,0,
linf,0.01,GBM20,ionosphere,9.01,1.11,3.85,0.50,0,
linf,0.01,GBM50,banknote,18.38,1.62,4.05,0.35,0,
linf,0.01,GBM50,diabetes,24.60,8.21,5.85,1.41,0,
linf,0.01,GBM50,ionosphere,81.33,28.39,8.90,1.36,0,
linf,0.01,GBM100,banknote,87.11,26.24,7.28,0.77,2,0.006
linf,0.01,GBM100,diabetes,164.32,42.12,11.63,2.00,1,0.004
linf,0.01,GBM100,ionosphere,137.98,22.74,10.33,0.97,2,0.007
linf,0.01,NN10,banknote,1.63,0.04,1.00,0.00,0,
linf,0.01,NN10,diabetes,1.55,0.06,1.00,0.00,0,
linf,0.01,NN10,ionosphere,2.22,0.19,1.80,0.21,0,
linf,0.01,NN10-10-10,banknote,2.98,0.15,1.15,0.08,0,
linf,0.01,NN10-10-10,diabetes,2.40,0.12,1.15,0.08,0,
linf,0.01,NN10-10-10,ionosphere,13.01,3.57,2.30,0.40,0,
linf,0.01,NN50,banknote,2.60,0.14,1.00,0.00,0,
linf,0.01,NN50,diabetes,2.09,0.12,1.05,0.05,0,
linf,0.01,NN50,ionosphere,5.75,0.75,1.20,0.12,0,
linf,0.01,NN100,banknote,3.53,0.15,1.00,0.00,0,
linf,0.01,NN100,diabetes,4.36,0.62,1.10,0.07,0,
linf,0.01,NN100,ionosphere,61.31,33.11,1.50,0.22,10,0.000
linf,0.05,LR,banknote,0.13,0.00,,,0,
linf,0.05,LR,diabetes,0.15,0.01,,,0,
linf,0.05,LR,ionosphere,0.14,0.00,,,0,
linf,0.05,DT3,banknote,1.00,0.06,1.70,0.15,0,
linf,0.05,DT3,diabetes,1.09,0.07,1.60,0.15,0,
linf,0.05,DT3,ionosphere,1.02,0.07,1.30,0.15,0,
linf,0.05,DT5,banknote,1.18,0.11,1.80,0.22,0,
linf,0.05,DT5,diabetes,1.63,0.13,2.05,0.22,0,
linf,0.05,DT5,ionosphere,1.33,0.10,1.60,0.18,0,
linf,0.05,DT10,banknote,2.22,0.41,2.95,0.61,0,
linf,0.05,DT10,diabetes,8.84,1.49,4.45,0.59,0,
linf,0.05,DT10,ionosphere,3.68,2.14,2.95,1.49,0,
linf,0.05,RF5,banknote,2.85,0.47,3.25,0.54,0,
linf,0.05,RF5,diabetes,4.29,0.73,5.25,0.86,0,
linf,0.05,RF5,ionosphere,2.27,0.19,2.35,0.23,0,
linf,0.05,RF10,banknote,13.51,3.03,8.95,1.60,0,
linf,0.05,RF10,diabetes,14.71,3.53,8.35,1.24,0,
linf,0.05,RF10,ionosphere,7.41,1.22,5.15,0.67,0,
linf,0.05,RF20,banknote,13.86,3.58,5.53,0.92,1,0.041
linf,0.05,RF20,diabetes,89.00,28.17,14.00,2.28,2,0.045
linf,0.05,RF20,ionosphere,47.44,26.35,9.50,2.52,0,
linf,0.05,RF50,banknote,101.21,24.90,11.37,1.53,1,0.048
linf,0.05,RF50,diabetes,303.27,93.95,16.73,2.55,9,0.034
linf,0.05,RF50,ionosphere,307.72,72.52,19.31,3.15,7,0.044
linf,0.05,RF100,banknote,156.28,33.21,8.70,1.02,0,
linf,0.05,RF100,diabetes,453.67,111.27,15.43,2.19,13,0.032
linf,0.05,RF100,ionosphere,156.45,116.11,5.75,2.29,16,0.029
linf,0.05,GBM5,banknote,1.57,0.15,1.75,0.24,0,
linf,0.05,GBM5,diabetes,1.50,0.10,2.05,0.20,0,
linf,0.05,GBM5,ionosphere,1.97,0.32,2.65,0.50,0,
linf,0.05,GBM10,banknote,4.84,0.58,3.55,0.46,0,
linf,0.05,GBM10,diabetes,8.87,4.44,8.55,3.21,0,
linf,0.05,GBM10,ionosphere,11.76,6.51,8.85,3.27,0,
linf,0.05,GBM20,banknote,12.72,2.22,8.28,0.85,2,0.038
linf,0.05,GBM20,diabetes,41.81,17.86,17.05,4.37,1,0.025
linf,0.05,GBM20,ionosphere,19.20,6.32,9.45,1.80,0,
linf,0.05,GBM50,banknote,73.23,27.00,13.76,1.82,3,0.039
linf,0.05,GBM50,diabetes,223.87,125.98,19.86,4.23,13,0.027
linf,0.05,GBM50,ionosphere,139.18,56.80,16.31,3.03,7,0.023
linf,0.05,GBM100,banknote,274.22,51.40,17.25,1.57,4,0.040
linf,0.05,GBM100,diabetes,,,,,20,0.022
linf,0.05,GBM100,ionosphere,537.13,295.04,15.00,2.08,17,0.022
linf,0.05,NN10,banknote,0.90,0.01,1.00,0.00,0,
linf,0.05,NN10,diabetes,1.00,0.04,1.15,0.08,0,
linf,0.05,NN10,ionosphere,2.96,0.23,3.00,0.25,0,
linf,0.05,NN10-10-10,banknote,1.48,0.03,1.00,0.00,0,
linf,0.05,NN10-10-10,diabetes,2.02,0.26,1.65,0.21,0,
linf,0.05,NN10-10-10,ionosphere,229.69,104.80,4.90,0.67,10,0.039
linf,0.05,NN50,banknote,1.39,0.06,1.00,0.00,0,
linf,0.05,NN50,diabetes,1.75,0.13,1.35,0.11,0,
linf,0.05,NN50,ionosphere,19.06,6.63,2.37,0.24,1,0.049
linf,0.05,NN100,banknote,1.83,0.05,1.00,0.00,0,
linf,0.05,NN100,diabetes,5.88,1.19,1.80,0.16,0,
linf,0.05,NN100,ionosphere,289.62,125.61,2.70,0.30,10,0.000
l2,0.01,LR,banknote,0.24,0.01,,,0,
l2,0.01,LR,diabetes,0.24,0.01,,,0,
l2,0.01,LR,ionosphere,0.26,0.01,,,0,
l2,0.01,DT3,banknote,2.09,0.11,1.45,0.11,0,
l2,0.01,DT3,diabetes,2.18,0.13,1.70,0.15,0,
l2,0.01,DT3,ionosphere,5.54,0.38,1.20,0.09,0,
l2,0.01,DT5,banknote,2.64,0.14,1.53,0.12,1,0.000
l2,0.01,DT5,diabetes,4.21,0.39,2.00,0.23,0,
l2,0.01,DT5,ionosphere,10.17,0.78,1.56,0.16,4,0.000
l2,0.01,DT10,banknote,4.61,0.88,2.70,0.58,0,
l2,0.01,DT10,diabetes,14.17,2.64,2.63,0.50,1,0.000
l2,0.01,DT10,ionosphere,21.75,2.58,2.06,0.26,2,0.000
l2,0.01,RF5,banknote,5.20,0.62,2.35,0.34,0,
l2,0.01,RF5,diabetes,7.96,1.65,3.17,0.55,2,0.004
l2,0.01,RF5,ionosphere,69.94,10.77,4.41,0.54,3,0.006
l2,0.01,RF10,banknote,10.83,2.68,3.41,0.78,3,0.006
l2,0.01,RF10,diabetes,15.20,3.17,4.20,0.68,0,
l2,0.01,RF10,ionosphere,237.03,41.12,5.50,0.70,4,0.003
l2,0.01,RF20,banknote,22.59,7.10,4.15,1.22,7,0.004
l2,0.01,RF20,diabetes,104.42,27.35,9.81,1.78,4,0.007
l2,0.01,RF20,ionosphere,370.21,41.84,7.33,0.73,5,0.004
l2,0.01,RF50,banknote,61.93,14.29,3.89,1.22,11,0.004
l2,0.01,RF50,diabetes,137.37,39.96,6.50,1.51,10,0.004
l2,0.01,RF50,ionosphere,570.88,111.94,9.70,1.61,10,0.001
l2,0.01,RF100,banknote,103.33,31.75,3.20,0.89,10,0.004
l2,0.01,RF100,diabetes,177.47,41.01,3.80,0.86,15,0.002
l2,0.01,RF100,ionosphere,531.13,121.00,6.17,0.98,14,0.001
l2,0.01,GBM5,banknote,4.50,0.50,2.50,0.34,0,
l2,0.01,GBM5,diabetes,4.67,0.47,2.45,0.26,0,
l2,0.01,GBM5,ionosphere,11.47,1.48,4.42,0.66,8,0.002
l2,0.01,GBM10,banknote,6.87,0.88,3.15,0.42,0,
l2,0.01,GBM10,diabetes,6.11,1.04,2.70,0.48,0,
l2,0.01,GBM10,ionosphere,42.68,6.67,6.88,0.86,3,0.001
l2,0.01,GBM20,banknote,14.02,1.09,4.40,0.34,0,
l2,0.01,GBM20,diabetes,10.97,1.45,3.65,0.49,0,
l2,0.01,GBM20,ionosphere,58.16,7.01,9.62,1.00,4,0.004
l2,0.01,GBM50,banknote,34.03,3.15,5.21,0.44,1,0.010
l2,0.01,GBM50,diabetes,76.04,33.09,9.35,2.21,0,
l2,0.01,GBM50,ionosphere,192.70,42.52,14.77,2.47,7,0.006
l2,0.01,GBM100,banknote,133.53,24.40,8.50,0.98,6,0.007
l2,0.01,GBM100,diabetes,201.13,77.68,12.08,2.92,8,0.005
l2,0.01,GBM100,ionosphere,415.96,80.09,17.29,3.36,13,0.003
l2,0.01,NN10,banknote,1.64,0.09,1.00,0.00,0,
l2,0.01,NN10,diabetes,1.73,0.05,1.00,0.00,0,
l2,0.01,NN10,ionosphere,4.73,0.57,1.27,0.19,9,0.004
l2,0.01,NN10-10-10,banknote,2.54,0.15,1.00,0.00,0,
l2,0.01,NN10-10-10,diabetes,2.04,0.10,1.00,0.00,6,0.000
l2,0.01,NN10-10-10,ionosphere,282.24,193.65,1.50,0.50,18,0.003
l2,0.01,NN50,banknote,2.42,0.14,1.00,0.00,0,
l2,0.01,NN50,diabetes,2.00,0.08,1.00,0.00,1,0.000
l2,0.01,NN50,ionosphere,48.13,12.76,2.40,0.51,15,0.008
l2,0.01,NN100,banknote,3.57,0.14,1.00,0.00,0,
l2,0.01,NN100,diabetes,5.28,0.83,1.15,0.11,0,
l2,0.01,NN100,ionosphere,352.64,153.96,1.09,0.09,9,0.000
l2,0.05,LR,banknote,0.15,0.00,,,0,
l2,0.05,LR,diabetes,0.34,0.02,,,0,
l2,0.05,LR,ionosphere,0.26,0.01,,,0,
l2,0.05,DT3,banknote,1.72,0.17,2.25,0.19,0,
l2,0.05,DT3,diabetes,6.71,0.65,2.40,0.24,0,
l2,0.05,DT3,ionosphere,4.40,1.35,2.60,0.90,0,
l2,0.05,DT5,banknote,2.69,0.52,3.95,0.74,1,0.026
l2,0.05,DT5,diabetes,20.28,2.88,5.00,0.68,1,0.000
l2,0.05,DT5,ionosphere,5.91,1.09,2.26,0.40,1,0.000
l2,0.05,DT10,banknote,4.44,0.80,4.95,0.93,0,
l2,0.05,DT10,diabetes,178.35,34.48,9.11,1.30,1,0.045
l2,0.05,DT10,ionosphere,20.91,10.20,5.05,1.51,0,
l2,0.05,RF5,banknote,4.49,0.64,4.40,0.64,0,
l2,0.05,RF5,diabetes,117.95,28.96,9.63,1.82,1,0.049
l2,0.05,RF5,ionosphere,28.79,2.76,6.35,0.51,0,
l2,0.05,RF10,banknote,12.39,2.57,6.82,1.14,3,0.048
l2,0.05,RF10,diabetes,200.39,69.46,12.92,2.93,7,0.043
l2,0.05,RF10,ionosphere,232.63,36.46,10.79,1.36,1,0.042
l2,0.05,RF20,banknote,51.29,18.03,10.17,2.32,8,0.049
l2,0.05,RF20,diabetes,149.39,46.57,12.75,2.78,12,0.042
l2,0.05,RF20,ionosphere,450.46,68.06,8.50,1.06,10,0.027
l2,0.05,RF50,banknote,93.18,51.21,7.78,2.17,11,0.048
l2,0.05,RF50,diabetes,560.78,,6.00,,19,0.031
l2,0.05,RF50,ionosphere,510.69,341.34,7.50,3.50,18,0.021
l2,0.05,RF100,banknote,108.47,29.76,5.25,0.80,8,0.047
l2,0.05,RF100,diabetes,868.10,,4.00,,19,0.024
l2,0.05,RF100,ionosphere,495.03,268.88,9.00,2.08,17,0.014
l2,0.05,GBM5,banknote,2.67,0.33,3.55,0.47,0,
l2,0.05,GBM5,diabetes,8.89,1.29,3.68,0.53,1,0.000
l2,0.05,GBM5,ionosphere,11.38,1.83,5.74,0.68,1,0.029
l2,0.05,GBM10,banknote,5.77,0.45,5.55,0.44,0,
l2,0.05,GBM10,diabetes,46.46,14.33,12.00,3.12,0,
l2,0.05,GBM10,ionosphere,72.15,15.31,15.19,2.62,4,0.005
l2,0.05,GBM20,banknote,23.89,3.55,10.41,1.00,3,0.046
l2,0.05,GBM20,diabetes,153.43,43.11,18.76,3.73,3,0.036
l2,0.05,GBM20,ionosphere,156.17,19.16,16.42,1.71,8,0.005
l2,0.05,GBM50,banknote,123.75,51.10,18.14,4.47,6,0.044
l2,0.05,GBM50,diabetes,243.24,80.72,24.50,6.31,14,0.029
l2,0.05,GBM50,ionosphere,894.23,100.35,32.50,6.50,18,0.013
l2,0.05,GBM100,banknote,389.06,124.83,20.25,3.32,12,0.044
l2,0.05,GBM100,diabetes,,,,,20,0.020
l2,0.05,GBM100,ionosphere,,,,,20,0.010
l2,0.05,NN10,banknote,0.91,0.00,1.00,0.00,0,
l2,0.05,NN10,diabetes,4.13,0.13,1.00,0.00,0,
l2,0.05,NN10,ionosphere,36.34,5.22,1.68,0.19,1,0.000
l2,0.05,NN10-10-10,banknote,1.45,0.03,1.00,0.00,0,
l2,0.05,NN10-10-10,diabetes,8.02,0.86,1.31,0.18,4,0.024
l2,0.05,NN10-10-10,ionosphere,328.70,72.59,2.38,0.35,4,0.012
l2,0.05,NN50,banknote,1.36,0.03,1.00,0.00,0,
l2,0.05,NN50,diabetes,11.27,1.10,1.50,0.15,0,
l2,0.05,NN50,ionosphere,57.07,7.28,1.22,0.10,2,0.000
l2,0.05,NN100,banknote,2.26,0.04,1.00,0.00,0,
l2,0.05,NN100,diabetes,26.82,3.39,1.30,0.13,0,
l2,0.05,NN100,ionosphere,111.85,26.18,1.44,0.24,11,0.001
"""
