"""Regions of robust counterfactual explanations (Maragno et al., 2024): Algorithm 1 and its parts.

A robust counterfactual is the point ``x`` closest to the factual ``x0`` (the paper's x-hat) such that
every point of the uncertainty set ``x + S`` with ``S = {s : ||s|| <= rho}`` (eq. 5; l-infinity box or
l2 ball) is classified as the target class (eqs. 3-4). Algorithm 1 (the adversarial / cutting-set
method of Mutapcic and Boyd) alternates

* the **master problem** (MP, eq. 6): minimize ``d(x, x0)`` with one encoded copy of the model per
  scenario ``s`` in a finite set ``Z`` (``encode(model, x + s)``; the encoders are the shared
  :mod:`explainopt.encoders`), and
* the **adversarial problem** (AP): the worst scenario ``s in S`` for the current ``x*``, solved exactly
  per model family (:func:`explainopt.encoders.model_family`):

  - linear models: no loop; the dual-norm reformulation (Appendix A, eq. 69) is used directly;
  - decision trees: one slack-maximization problem per leaf of the other class (eqs. 31-35, the
    Lipschitz extension of Lemma 1), solved in closed form because every split is axis-aligned;
  - tree ensembles (random forests, extra trees, gradient boosting): the MILP of eqs. 41-45 with one
    binary per reachable leaf;
  - ReLU networks: the MILP of eqs. 60-67 (``encode(model, x* + s)`` and the worst output).

The trees are read once by :func:`explainopt.encoders.tree_ensemble` (leaf values, the gradient
boosting init offset, the decision rule) and turned into leaf boxes (:func:`tree_boxes`); linear
weights come from :func:`explainopt.encoders.linear_weights`.

The master problem of HiGHS and Gurobi (l1 and l-inf objectives) is kept alive in the solver across
the iterations (:class:`PersistentMaster` on :class:`explainopt.solvers.MatrixMILP`: a scenario adds
columns and rows, nothing is rebuilt or recompiled); for trees and ensembles it lives in the space of x, and with the l-inf box each adverse
cell the AP finds is excluded by one row ("the box of x misses the cell") instead of a model copy per
scenario: every robust x satisfies it, so the optimum is the same. Other solvers and the l2 objective
use the cvxpy :class:`MasterProblem`. For ReLU networks the loop first looks for a robust point, proven
by interval propagation, on rays from x0 and past each master solution
(:func:`network_distance_bound`): its distance bounds the optimum, so the domain closes there, the
master problem gets a distance row, and each new copy's neuron bounds come from that smaller box and
l1 ball (tighter big-M). (Measured and left out: ordering the first-layer ReLU binaries of two copies
by the sign of ``W_j (s_a - s_b)``, banknote NN50 l-inf rho 0.01, 3 rows, HiGHS: 0.31 vs 0.34 s.)

The loop stops when the AP value is at most ``epsilon`` (Algorithm 1). On a time or iteration limit
the result is an *early stop*: every master solution is given its certified radius (the largest
radius for which it is robust, the distance to the other class) and the best one is returned with
``rho_bar`` (as the paper's Tables 1-2 report). :func:`single_leaf_region` is the heuristic of eqs.
36-39 for decision trees. :func:`certify_region` checks a returned region independently: the AP
once more, and thousands of sampled points of the box/ball (:func:`sample_set`) classified by the
model's own prediction.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import cvxpy as cp
import numpy as np


from .. import solvers
from ..encoders import Tree, encode, linear_weights, model_family, model_predict, tree_ensemble
from ..encoders.networks import _neuron_states, forward, network_layers, propagate_bounds
from ..encoders.trees import _split_keys, _walk
from ..validation import counterfactual_inputs
from .base import Counterfactual, contract
from .nearest import distance

NORMS = ("linf", "l2")
OBJECTIVES = ("l1", "l2", "linf")
#: The dual norm's order for each uncertainty norm (l-inf box -> l1, l2 ball -> l2), eq. (69).
DUAL_ORD = {"linf": 1, "l2": 2}

LINEAR, TREE, ENSEMBLE, NETWORK = "linear", "tree", "ensemble", "network"
#: The model families (:func:`explainopt.encoders.model_family`) robust regions support.
FAMILIES = (LINEAR, TREE, ENSEMBLE, NETWORK)
#: How far inside the certified radius an early stop's rho-bar is reported (see :func:`robust_region`).
RHO_BAR_SLACK = 1e-5


# =========================================================================== model families

def _family(model) -> str:
    """The model's family as the encoder registry records it, if robust regions support it."""
    family = model_family(model)  # TypeError naming the supported models for an unknown type
    if family not in FAMILIES:
        raise TypeError(f"robust regions support the model families {FAMILIES}; a {type(model).__name__} "
                        f"is of family {family!r}")
    return family


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
    ``x <= t``), with value ``v_i``; the model's score is ``constant + scale * sum_trees v_leaf(x)`` and
    the model predicts class 1 iff score > threshold (``>=`` when ``inclusive``), as
    :class:`explainopt.encoders.TreeEnsemble` reads it."""

    lo: list[np.ndarray]
    hi: list[np.ndarray]
    value: list[np.ndarray]
    constant: float
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
        return self.constant + self.scale * total

    def adverse_leaves(self, target: int) -> np.ndarray:
        """For a single decision tree: which of its leaves predict the class other than `target`."""
        return self.adverse(self.constant + self.scale * self.value[0], target)


def _leaf_boxes(tree: Tree, n_features: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Leaf boxes and values of one tree by depth-first traversal."""
    los, his, vals = [], [], []
    stack = [(0, np.full(n_features, -np.inf), np.full(n_features, np.inf))]
    while stack:
        node, lo, hi = stack.pop()
        left, right = tree.left[node], tree.right[node]
        if left == -1:
            los.append(lo), his.append(hi), vals.append(tree.leaf_value[node])
            continue
        f, t = tree.feature[node], tree.threshold[node]
        hi_left, lo_right = hi.copy(), lo.copy()
        hi_left[f] = min(hi[f], t)
        lo_right[f] = max(lo[f], t)
        stack.append((left, lo, hi_left))
        stack.append((right, lo_right, hi))
    return np.array(los), np.array(his), np.array(vals, dtype=float)


def tree_boxes(model) -> TreeBoxes:
    """The leaf boxes of a decision tree or tree ensemble, read by :func:`explainopt.encoders.tree_ensemble`."""
    ensemble = tree_ensemble(model)
    parts = [_leaf_boxes(tree, int(model.n_features_in_)) for tree in ensemble.trees]
    return TreeBoxes([p[0] for p in parts], [p[1] for p in parts], [p[2] for p in parts],
                     constant=ensemble.constant, scale=ensemble.scale, threshold=ensemble.threshold,
                     inclusive=ensemble.inclusive)


def _boxes_if_trees(model, family: str) -> TreeBoxes | None:
    """The leaf boxes for a tree model (read once per call of the public functions), else None."""
    return tree_boxes(model) if family in (TREE, ENSEMBLE) else None


# =========================================================================== adversarial problems

@dataclass
class AdversarialResult:
    """Outcome of one adversarial problem (AP).

    value: the AP's optimal value; positive means a scenario ``s`` puts ``x* + s`` in the other class
    (trees: the depth of ``x* + s`` inside an adverse leaf, eqs. 31/41; networks and linear models:
    the margin past the decision threshold, eq. 60); ``-inf`` when no point of the set is adverse.
    scenario: the maximizing ``s`` (None when there is none). fallback_from: a commercial solver that
    refused the problem for its licence's size (see :func:`explainopt.solvers.solve`). compile_time:
    the part of ``solve_time`` cvxpy spent compiling the problem. more: further violated scenarios
    found on the way (value > 0 each, deepest first): every other adverse leaf of a decision tree,
    the deepest point of every other adverse cell of an ensemble among sampled points of the set.
    """

    value: float
    scenario: np.ndarray | None
    status: str
    solver: str
    solve_time: float
    fallback_from: str | None = None
    compile_time: float = 0.0
    more: list = field(default_factory=list)


def adversarial_problem(model, x_star, *, rho: float, norm: str = "linf", target: int = 1,
                        solver=None, time_limit: float | None = None, method: str = "auto") -> AdversarialResult:
    """Solve (AP) for `x_star` exactly with the method of the model's family (see module docstring).

    method: ``auto``; for a decision tree also ``leaves`` (per-leaf problems, eqs. 31-35, default) or
    ``milp`` (the ensemble MILP of eqs. 41-45 with one tree).
    """
    _check_norm(norm)
    family = _family(model)
    return _adversarial(model, family, _boxes_if_trees(model, family), np.asarray(x_star, dtype=float), rho=rho,
                        norm=norm, target=target, solver=solver, time_limit=time_limit, method=method)


def _adversarial(model, family, boxes, x_star, *, rho, norm, target, solver, time_limit, method, more: int = 0,
                 rng=None) -> AdversarialResult:
    """The AP by the family's method; with `more` > 0, also further violated scenarios (``.more``)."""
    if family == LINEAR:
        return _linear_ap(model, x_star, rho=rho, norm=norm, target=target)
    if family == TREE and method in ("auto", "leaves"):
        return _tree_ap(boxes, x_star, rho=rho, norm=norm, target=target)
    if family in (TREE, ENSEMBLE):
        ap = _ensemble_ap(boxes, x_star, rho=rho, norm=norm, target=target, solver=solver, time_limit=time_limit)
        if more > 0 and ap.status == solvers.OPTIMAL and ap.value > 0:
            start = time.perf_counter()
            ap.more = [s for s in _adverse_cells(boxes, x_star, rho=rho, norm=norm, target=target, rng=rng)
                       if not np.allclose(s, ap.scenario, atol=1e-9)][:more]
            ap.solve_time += time.perf_counter() - start
        return ap
    return _network_ap(model, x_star, rho=rho, norm=norm, target=target, solver=solver, time_limit=time_limit)


#: Points of the set sampled to find further adverse cells of an ensemble (:func:`_adverse_cells`).
CELL_SAMPLES = 256


def _adverse_cells(boxes: TreeBoxes, x_star, *, rho, norm, target, rng, n_samples: int = CELL_SAMPLES) -> list:
    """Violated scenarios of an ensemble beyond the AP's: the deepest point in the set (eqs. 31-35 in
    closed form, on the cell's box) of each distinct adverse cell -- one leaf per tree -- that points
    sampled from the set fall in, deepest first."""
    points = x_star + sample_set(len(x_star), rho=rho, norm=norm, n_samples=n_samples, random_state=rng)
    cell_lo, cell_hi = np.full(points.shape, -np.inf), np.full(points.shape, np.inf)
    score, leaves = np.zeros(len(points)), []
    for lo, hi, v in zip(boxes.lo, boxes.hi, boxes.value):
        leaf = np.all((points[:, None, :] > lo[None]) & (points[:, None, :] <= hi[None]), axis=2).argmax(axis=1)
        cell_lo, cell_hi = np.maximum(cell_lo, lo[leaf]), np.minimum(cell_hi, hi[leaf])
        score += v[leaf]
        leaves.append(leaf)
    bad = boxes.adverse(boxes.constant + boxes.scale * score, target)
    if not bad.any():
        return []
    _, first = np.unique(np.stack(leaves, axis=1)[bad], axis=0, return_index=True)
    lo, hi = cell_lo[bad][first], cell_hi[bad][first]
    depth = _leaf_depths(x_star, lo, hi, rho=rho, norm=norm)
    return [np.clip(x_star, lo[j] + depth[j], hi[j] - depth[j]) - x_star
            for j in np.argsort(-depth, kind="stable") if np.isfinite(depth[j]) and depth[j] > 0]


def _linear_ap(model, x_star, *, rho, norm, target) -> AdversarialResult:
    """Closed form: min over the set of beta^T (x + s) is beta^T x - rho ||beta||_* (Appendix A)."""
    start = time.perf_counter()
    beta, beta0 = linear_weights(model)
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


def _tree_ap(boxes: TreeBoxes, x_star, *, rho, norm, target) -> AdversarialResult:
    """Decision tree: maximize the minimum slack over each adverse leaf (eqs. 31-35), keep the best."""
    start = time.perf_counter()
    lo, hi = boxes.lo[0], boxes.hi[0]
    bad = boxes.adverse_leaves(target)
    if not bad.any():
        return AdversarialResult(-math.inf, None, solvers.OPTIMAL, "closed form", time.perf_counter() - start)
    depth = _leaf_depths(x_star, lo[bad], hi[bad], rho=rho, norm=norm)
    order = np.argsort(-depth, kind="stable")
    i = int(order[0])
    if not np.isfinite(depth[i]):
        return AdversarialResult(-math.inf, None, solvers.OPTIMAL, "closed form", time.perf_counter() - start)
    deep = [j for j in order if np.isfinite(depth[j]) and depth[j] > 0]
    points = [np.clip(x_star, lo[bad][j] + depth[j], hi[bad][j] - depth[j]) - x_star for j in deep]
    return AdversarialResult(float(depth[i]), np.clip(x_star, lo[bad][i] + depth[i], hi[bad][i] - depth[i]) - x_star,
                             solvers.OPTIMAL, "closed form", time.perf_counter() - start, more=points[1:])


def _adverse_cell(boxes: TreeBoxes, y, center, *, reach: float, alpha_max: float, alpha, target: int,
                  score_margin: float = 1e-9) -> tuple[list, dict]:
    """Constraints putting ``y`` (within ``reach`` of `center` in l-inf) at depth ``alpha`` inside one
    leaf per tree whose combined score is adverse (eqs. 42-45, with leaf binaries and big-M derived from
    the reach). Leaves that do not meet the reach box are dropped."""
    zs, values, cons = [], [], []
    lo_all, hi_all = [], []
    box_lo, box_hi = center - reach, center + reach
    for lo, hi, v in zip(boxes.lo, boxes.hi, boxes.value):
        keep = np.all((hi >= box_lo) & (lo <= box_hi), axis=1)
        base = len(values)
        values.extend(v[keep])
        zs.append((base, base + int(keep.sum())))
        lo_all.append(lo[keep]), hi_all.append(hi[keep])
    n_leaves = len(values)
    z = cp.Variable(n_leaves, boolean=True)
    for a, b in zs:
        cons.append(cp.sum(z[a:b]) == 1)
    lo_all, hi_all = np.vstack(lo_all), np.vstack(hi_all)
    # upper sides: y_f + alpha <= hi + M (1 - z); binding only if hi < center + reach + alpha_max
    li, fi = np.nonzero(hi_all < (center + reach + alpha_max)[None, :])
    if len(li):
        big_m = center[fi] + reach + alpha_max - hi_all[li, fi]
        cons.append(y[fi] + alpha - hi_all[li, fi] <= cp.multiply(big_m, 1 - z[li]))
    li, fi = np.nonzero(lo_all > (center - reach - alpha_max)[None, :])
    if len(li):
        big_m = lo_all[li, fi] - (center[fi] - reach) + alpha_max
        cons.append(lo_all[li, fi] - y[fi] + alpha <= cp.multiply(big_m, 1 - z[li]))
    score = boxes.constant + boxes.scale * (np.asarray(values) @ z)
    positive_strict = not boxes.inclusive  # class 1 iff score > thr (strict) or >= thr (inclusive)
    if target == 1:  # adverse = class 0
        cons.append(score <= boxes.threshold - (0.0 if positive_strict else score_margin))
    else:
        cons.append(score >= boxes.threshold + (score_margin if positive_strict else 0.0))
    return cons, {"z": z}


def _ensemble_ap(boxes: TreeBoxes, x_star, *, rho, norm, target, solver, time_limit) -> AdversarialResult:
    """Tree ensembles: the MILP of eqs. (41)-(45) (deepest point of an adverse cell within the set)."""
    s, alpha = cp.Variable(len(x_star)), cp.Variable()
    y = x_star + s
    cons, _ = _adverse_cell(boxes, y, x_star, reach=rho, alpha_max=rho, alpha=alpha, target=target)
    cons += [alpha >= 0, alpha <= rho, s >= -rho, s <= rho]
    if norm == "l2":
        cons.append(cp.norm(s, 2) <= rho)
    problem = cp.Problem(cp.Maximize(alpha), cons)
    res = _solve(problem, solver=solver, time_limit=time_limit)
    if res.status == solvers.INFEASIBLE:  # no adverse cell meets the set: x_star is robust
        return _solved(res, problem, -math.inf, None, status=solvers.OPTIMAL)
    if not res.has_solution:
        return _solved(res, problem, math.nan, None)
    return _solved(res, problem, float(alpha.value), np.asarray(s.value))


def _network_ap(model, x_star, *, rho, norm, target, solver, time_limit) -> AdversarialResult:
    """ReLU networks: the MILP of eqs. (60)-(67): the worst logit over the set (bounds from the set)."""
    s = cp.Variable(len(x_star))
    enc = encode(model, x_star + s, lower=x_star - rho, upper=x_star + rho)
    cons = list(enc.constraints) + [s >= -rho, s <= rho]
    if norm == "l2":
        cons.append(cp.norm(s, 2) <= rho)
    sign = 1.0 if target == 1 else -1.0
    problem = cp.Problem(cp.Minimize(sign * enc.output), cons)
    res = _solve(problem, solver=solver, time_limit=time_limit)
    if res.status == solvers.OPTIMAL:  # tau - h(x* + s)
        return _solved(res, problem, float(sign * enc.threshold - res.objective), np.asarray(s.value))
    return _solved(res, problem, math.nan, np.asarray(s.value) if res.has_solution else None)


def _solve(problem: cp.Problem, *, solver, time_limit) -> solvers.SolveResult:
    """Every problem of this module is bounded by construction (the set, the domain box, a norm
    objective bounded below), so a presolve answer "infeasible or unbounded" (Gurobi's INF_OR_UNBD)
    means infeasible: for an adversarial problem, that the point is robust."""
    return solvers.solve(problem, solver=solver, time_limit=time_limit, bounded=True)


def _compile_time(problem: cp.Problem) -> float:
    """Seconds cvxpy spent compiling `problem` in its last solve."""
    return float(getattr(problem, "compilation_time", None) or 0.0)


def _solved(res, problem, value: float, scenario, *, status: str | None = None) -> AdversarialResult:
    """An AP's outcome from the solver's result `res` (its status unless `status` is given)."""
    return AdversarialResult(value, scenario, status or res.status, res.solver, res.solve_time,
                             fallback_from=res.fallback_from, compile_time=_compile_time(problem))


# =========================================================================== certified radius

#: How far beyond the cap :func:`certified_radius` searches for the other class (relative to the cap).
RADIUS_REACH = 1.25
#: How deep inside its leaves the ensemble radius's adverse point must lie (above float32's spacing of the
#: thresholds): leaves of two trees that only touch on a threshold (y <= t in one, y > t in the other) share
#: no point, and at depth 0 they would pass for an adverse cell on that threshold.
RADIUS_DEPTH = 1e-6


def certified_radius(model, x, *, norm: str = "linf", target: int = 1, cap: float = 1.0, solver=None,
                     time_limit: float | None = None) -> float:
    """The largest radius r <= `cap` such that the whole r-ball (norm `norm`) around `x` is predicted
    `target`: the distance from `x` to the other class (the paper's "distance to the border", rho-bar)."""
    _check_norm(norm)
    family = _family(model)
    return _certified_radius(model, family, _boxes_if_trees(model, family), np.asarray(x, dtype=float), norm=norm,
                             target=target, cap=cap, solver=solver, time_limit=time_limit)


def _certified_radius(model, family, boxes, x, *, norm, target, cap, solver, time_limit=None) -> float:
    if model_predict(model, x)[0] != target:
        return 0.0
    if family == LINEAR:
        beta, beta0 = linear_weights(model)
        sign = 1.0 if target == 1 else -1.0
        return float(min(cap, max(0.0, sign * (beta @ x + beta0)) / np.linalg.norm(beta, ord=DUAL_ORD[norm])))
    if family == TREE:
        bad = boxes.adverse_leaves(target)
        if not bad.any():
            return float(cap)
        lo, hi = boxes.lo[0][bad], boxes.hi[0][bad]
        gap = np.maximum(0, np.maximum(lo - x, x - hi))
        dist = gap.max(axis=1) if norm == "linf" else np.sqrt((gap ** 2).sum(axis=1))
        return float(min(cap, dist.min()))
    # searched a little beyond the cap: a converged region's radius is the cap up to the solvers'
    # tolerances, and a problem bounded at exactly that radius is borderline infeasible (Clarabel fails)
    y, r, reach = cp.Variable(len(x)), cp.Variable(), RADIUS_REACH * cap
    depth = 0.0
    if family == ENSEMBLE:
        depth = RADIUS_DEPTH
        cons, _ = _adverse_cell(boxes, y, x, reach=reach, alpha_max=depth, alpha=depth, target=target)
    else:
        enc = encode(model, y, lower=x - reach, upper=x + reach)
        sign = 1.0 if target == 1 else -1.0
        cons = list(enc.constraints) + [sign * enc.output <= sign * enc.threshold]
    cons += [y >= x - reach, y <= x + reach, r <= reach]
    cons += [cp.abs(y - x) <= r] if norm == "linf" else [cp.norm(y - x, 2) <= r]
    res = _solve(cp.Problem(cp.Minimize(r), cons), solver=solver, time_limit=time_limit)
    if res.status == solvers.INFEASIBLE:
        return float(cap)
    if not res.has_solution:
        return math.nan
    # the point found lies `depth` inside its cell, whose nearest point is at most depth (l-inf; l2: times
    # sqrt(d)) closer: less that, the radius is a certificate again
    slack = depth * (1.0 if norm == "linf" else math.sqrt(len(x)))
    return float(min(cap, max(0.0, res.objective - slack)))


# =========================================================================== master problem and loop

@dataclass
class Iteration:
    """One pass of Algorithm 1: the master solution, its distance, the AP's answer and the times
    (``*_compile_time``: the part of the time cvxpy spent compiling). added: scenarios added to Z."""

    iteration: int
    x: np.ndarray
    distance: float
    ap_value: float
    scenario: np.ndarray | None
    master_time: float
    adversarial_time: float
    radius: float | None = None  # certified radius of x (filled when requested; not in the times)
    master_compile_time: float = 0.0
    adversarial_compile_time: float = 0.0
    added: int = 0


@dataclass
class RobustRegion(Counterfactual):
    """Result of :func:`robust_region` (fields of :class:`~.base.Counterfactual` first).

    x: the region's centre x* (converged: the last master solution; early stop: the master solution
    with the largest certified radius ``rho_bar``; None when there is none). status: ``converged``,
    ``time_limit``, ``iteration_limit``, ``infeasible`` (no robust counterfactual in the domain) or
    ``no_solution``. time: seconds of the loop, master and adversarial problems (the certified-radius
    computations after an early stop are excluded, as in the paper). solver: the solvers that produced
    it; fallback_from: a commercial solver that refused some problem for its licence's size (that
    problem was solved by the open-source solver of its class). distance: ``d(x, x0)`` in the master
    objective's norm; master_time / adversarial_time: the solvers' time on each kind of problem, of
    which compile_time is cvxpy's compilation (the rest is the solvers' own); scenarios: the size of
    the final scenario set Z; domain: the box (lower, upper) the master problem searched (see
    :func:`robust_region` for how an unbounded domain becomes one); history: one :class:`Iteration`
    per pass of the loop.
    """

    rho: float = math.nan
    norm: str = "linf"
    objective: str = "l1"
    target: object = 1
    iterations: int = 0
    distance: float = math.nan
    master_time: float = 0.0
    adversarial_time: float = 0.0
    rho_bar: float | None = None
    history: list[Iteration] = field(default_factory=list)
    compile_time: float = 0.0
    scenarios: int = 0
    domain: tuple | None = None

    @property
    def converged(self) -> bool:
        return self.detail == "converged"

    @property
    def early_stop(self) -> bool:
        return self.detail in ("time_limit", "iteration_limit")

    @property
    def radius(self) -> float:
        """The radius the region is claimed robust for: rho when converged, rho-bar on an early stop."""
        return self.rho if self.converged else (self.rho_bar or 0.0)


class MasterProblem:
    """(MP), eq. (6): the closest x to x0 whose shifted copies x + s, s in Z, are all `target`.

    The encoders bound each copy's big-M constants by the domain box shifted by s (``lower + s``,
    ``upper + s``), so a tighter domain gives a tighter master problem (see :func:`robust_region`).
    """

    def __init__(self, model, x0, *, lower, upper, target, objective="l1", margin=1e-4):
        self.model, self.x0, self.target, self.margin = model, x0, target, margin
        self.lower, self.upper = lower, upper
        self.x = cp.Variable(len(x0))
        self.objective = cp.Minimize(distance(self.x - x0, objective))
        self.constraints = [self.x >= lower, self.x <= upper]
        self.scenarios: list[np.ndarray] = []

    def add(self, s: np.ndarray, x_star=None) -> None:
        """Add scenario s to Z: one more encoded copy of the model, ``encode(model, x + s)`` (`x_star`,
        the master solution s was found for, is not needed here; see :meth:`PersistentMaster.add`)."""
        s = np.asarray(s, dtype=float)
        enc = encode(self.model, self.x + s, lower=self.lower + s, upper=self.upper + s)
        self.constraints += list(enc.constraints) + list(enc.predicts(self.target, margin=self.margin))
        self.scenarios.append(s)

    def solve(self, *, solver=None, time_limit=None):
        """(result, x, compile time)."""
        problem = cp.Problem(self.objective, self.constraints)
        res = _solve(problem, solver=solver, time_limit=time_limit)
        return res, self.x.value, _compile_time(problem)


# =========================================================================== persistent master problem

def _adverse_core(boxes: TreeBoxes, point, target: int) -> tuple[np.ndarray, np.ndarray]:
    """The adverse cell of `point` (one leaf per tree, intersected), widened: each tree in turn is
    dropped when the remaining leaves stay adverse whatever leaf the dropped trees give (their largest
    value towards the target), so the returned box ``lo < y <= hi`` is adverse at every point."""
    point = np.asarray(point, dtype=float)
    leaves, worst = [], []
    for lo, hi, v in zip(boxes.lo, boxes.hi, boxes.value):
        inside = np.flatnonzero(np.all((point > lo) & (point <= hi), axis=1))
        leaves.append(int(inside[0]))
        worst.append(v.max() if target == 1 else v.min())
    chosen = np.array([v[k] for v, k in zip(boxes.value, leaves)])
    keep = np.ones(len(leaves), dtype=bool)
    for t in range(len(leaves)):
        keep[t] = False
        bound = boxes.constant + boxes.scale * np.where(keep, chosen, worst).sum()
        if not boxes.adverse(bound, target):
            keep[t] = True
    cell_lo, cell_hi = np.full(len(point), -np.inf), np.full(len(point), np.inf)
    for t in np.flatnonzero(keep):
        cell_lo = np.maximum(cell_lo, boxes.lo[t][leaves[t]])
        cell_hi = np.minimum(cell_hi, boxes.hi[t][leaves[t]])
    return cell_lo, cell_hi


#: Whether a ReLU network's loop bounds the optimum by robust points (:func:`network_distance_bound`).
#: Measured (benchmarks/regions.py, 3 rows, HiGHS, unbounded domain, one run): banknote NN50 l-inf rho
#: 0.01 4.26 -> 0.32 s per region, diabetes NN50 l2 rho 0.05 11.1 -> 1.87 s; the same distances.
NETWORK_BOUND = True
#: The families whose master solves start from the last solve's dual bound as a row (valid: Z only
#: grows, so the optimum only grows). Measured (3 rows, HiGHS, l-inf): banknote NN50 (rho 0.01) 5.3 ->
#: 4.2 s per region; diabetes GBM10 (0.01) 2.8 -> 2.4 s, banknote RF10 (0.05) 7.7 -> 8.8 s: networks only.
OBJECTIVE_BOUND = (NETWORK,)


class PersistentMaster:
    """(MP), eq. (6), as one MILP kept alive across the iterations: each scenario adds its copy of the
    model as new columns and rows, nothing is rebuilt or recompiled (:class:`MasterProblem` is the
    cvxpy model, for other solvers and the l2 objective). The same feasible set as
    :class:`MasterProblem`, formulated for speed:

    * trees and ensembles: Mišić's split formulation (as :mod:`explainopt.encoders.trees`) written in
      the space of x: copy ``s``'s split ``x_f + s_f <= t`` is ``x_f <= t - s_f``, so every copy whose
      shifted threshold coincides shares one split binary, and the ordering chain of eq. (2f) runs
      through the shifted thresholds of all copies (valid: the split margins make the two sides of
      each binary disjoint, so the chain only states what the margins imply). The margins and the
      reachable leaves of each copy are the encoder's own (its box shifted by s); big-M from the box.
    * ReLU networks: the big-M encoding of :mod:`explainopt.encoders.networks`, with each copy's
      neuron bounds from interval propagation over the domain shifted by s.
    """

    def __init__(self, model, family, x0, *, lower, upper, target, objective, margin, rho, norm, bound=math.inf):
        self.model, self.family, self.x0, self.target, self.margin = model, family, x0, target, margin
        self.rho = rho
        self.lower, self.upper = lower, upper
        self.m = solvers.MatrixMILP(bounded=True)  # bounded by the domain box and the norm objective
        n = len(x0)
        self.x = self.m.add_columns(n, lower=lower, upper=upper)
        if objective == "l1":  # u >= |x - x0|, minimize sum u
            d = self.distance = self.m.add_columns(n, cost=1.0)
            for k in range(n):
                self.m.add_row([d[k], self.x[k]], [1, -1], lower=-x0[k])
                self.m.add_row([d[k], self.x[k]], [1, 1], lower=x0[k])
        else:  # l-inf: t >= |x - x0|_k for every k, minimize t
            self.distance = self.m.add_columns(1, cost=1.0)
            t = self.distance[0]
            for k in range(n):
                self.m.add_row([t, self.x[k]], [1, -1], lower=-x0[k])
                self.m.add_row([t, self.x[k]], [1, 1], lower=x0[k])
        self.bound = None  # a lower bound on the optimum (the last solve's dual bound)
        self.objective, self.radius = objective, math.inf  # an upper bound on the optimum (math.inf: none)
        self.tighten(bound)
        if family in (TREE, ENSEMBLE):
            self.ensemble = tree_ensemble(model)
            self.splits: dict = {}  # (feature, shifted threshold) -> (column, margin)
            self.chain: dict = {}  # feature -> sorted [(shifted threshold, column)]
            boxes = tree_boxes(model)
            self.cells = boxes if norm == "linf" else None
            keys, _, _, eps = _split_keys(_walk(self.ensemble.trees, {}, np.full(n, -np.inf), np.full(n, np.inf)))
            self.margins = dict(zip(keys, eps))  # the encoder's margin of every split of the model
        else:
            self.cells = None
        if family == NETWORK:
            self.layers = network_layers(model)
        self.scenarios: list[np.ndarray] = []

    def add(self, s: np.ndarray, x_star=None) -> None:
        """Add scenario s to Z: one more copy of the model at ``x + s``; for a tree model and the l-inf
        box, given the master solution `x_star` the scenario was found for, the adverse cell of
        ``x_star + s`` is excluded instead (:meth:`_exclude_cell`)."""
        s = np.asarray(s, dtype=float)
        if self.cells is not None and x_star is not None:
            self._exclude_cell(np.asarray(x_star, dtype=float) + s)
        elif self.family in (TREE, ENSEMBLE):
            self._add_trees(s)
        else:
            self._add_network(s)
        self.scenarios.append(s)

    def _exclude_cell(self, point) -> None:
        """The cut "the box ``x + S`` misses the adverse cell C of `point`" (l-inf sets only):
        ``C = {y : lo < y <= hi}`` is adverse everywhere, so every robust x has some feature f with
        ``x_f + rho <= lo_f`` or ``x_f - rho > hi_f``. One row over the split binaries of the copies
        ``s_f = +rho`` at ``lo_f`` and ``s_f = -rho`` at ``hi_f`` (with the encoder's margins, as those
        copies' splits would have them): ``sum_f v(lo_f - rho) + (1 - v(hi_f + rho)) >= 1``. It
        removes every x whose box meets C, where the copy of one scenario removes only those x whose
        point ``x + s`` lies in C. C is first widened by dropping every tree whose leaf is not needed
        to keep it adverse (:func:`_adverse_core`)."""
        lo, hi = _adverse_core(self.cells, point, self.target)
        cols, coefs, rhs = [], [], 1.0
        for f in range(len(point)):
            for t, left in ((lo[f], True), (hi[f], False)):
                if not np.isfinite(t):
                    continue
                theta = t - self.rho if left else t + self.rho
                eps = self.margins.get((f, t), TREE_DOMAIN_PAD)
                if theta - eps < self.lower[f] if left else theta + eps > self.upper[f]:
                    continue  # the box of x cannot pass C on this side within the domain
                if (theta - eps >= self.upper[f]) if left else (theta + eps <= self.lower[f]):
                    return  # every x of the domain passes C on this side: C is out of reach
                cols.append(self._split(f, theta, eps))
                coefs.append(1.0 if left else -1.0)
                rhs -= 0.0 if left else 1.0
        self.m.add_row(cols, coefs, lower=rhs)

    def _split(self, f: int, theta: float, eps: float) -> int:
        """The binary of ``x_f <= theta - eps`` (1) or ``x_f >= theta + eps`` (0), shared by all copies.
        (Linking x_f to its whole chain by the convex hull of the intervals, one row per feature, instead
        of big-M rows per binary was measured slower: banknote RF10 l-inf 4.9 vs 2.9 s, l2 18 vs 7.8 s.)"""
        col, known = self.splits.get((f, theta), (None, -1.0))
        if col is None:
            col = int(self.m.add_columns(1, upper=1.0, integer=True)[0])
            chain = self.chain.setdefault(f, [])
            k = int(np.searchsorted([c[0] for c in chain], theta))
            if k > 0:  # (2f): x_f below a lower shifted threshold is below this one
                self.m.add_row([chain[k - 1][1], col], [1, -1], upper=0.0)
            if k < len(chain):
                self.m.add_row([col, chain[k][1]], [1, -1], upper=0.0)
            chain.insert(k, (theta, col))
        if eps > known:  # margins of copies that share the binary: the largest holds for all
            self.splits[(f, theta)] = (col, eps)
            lo, hi = self.lower[f], self.upper[f]  # big-M from the domain box
            self.m.add_row([self.x[f], col], [1, hi - theta + eps], upper=hi)
            self.m.add_row([self.x[f], col], [1, theta + eps - lo], lower=theta + eps)
        return col

    def _add_trees(self, s) -> None:
        ens = self.ensemble
        st = _walk(ens.trees, {}, self.lower + s, self.upper + s)  # the encoder's reachable part of copy s
        keys, _, _, eps = _split_keys(st)
        margin_of = dict(zip(keys, eps))
        y = self.m.add_columns(len(st.leaves), upper=1.0)
        tree_of = np.array([leaf[0] for leaf in st.leaves])
        for t in np.unique(tree_of):  # (2b) one leaf per tree
            self.m.add_row(y[tree_of == t], 1.0, lower=1.0, upper=1.0)
        for _, f, thr, left, right in st.splits:  # (2c), (2d)
            v = self._split(f, thr - s[f], margin_of[(f, thr)])
            self.m.add_row(np.r_[y[left], v], np.r_[np.ones(len(left)), -1.0], upper=0.0)
            self.m.add_row(np.r_[y[right], v], np.r_[np.ones(len(right)), 1.0], upper=1.0)
        values = ens.scale * np.array([leaf[2] for leaf in st.leaves])
        self._predicts(y, values, ens.constant, ens.threshold, ens.inclusive)

    def _add_network(self, s) -> None:
        """ReLU big-M rows for ``h = max(W h_prev + b, 0)`` per hidden layer (the encoder's)."""
        bounds = self._copy_bounds(s)
        prev, shift = self.x, s  # the layer's input columns and its constant part (x + s)
        for k, (W, b) in enumerate(self.layers[:-1]):
            l, u = bounds[k]
            b = b + W @ shift
            off, on, unstable = _neuron_states(l, u)
            h = self.m.add_columns(len(b), upper=np.maximum(u, 0.0))
            for r in off:
                self.m.add_row([h[r]], 1.0, upper=0.0)
            for r in on:  # h = W prev + b
                self.m.add_row(np.r_[h[r], prev], np.r_[1.0, -W[r]], lower=b[r], upper=b[r])
            if len(unstable):
                sigma = self.m.add_columns(len(unstable), upper=1.0, integer=True)
                for r, g in zip(unstable, sigma):
                    self.m.add_row(np.r_[h[r], prev], np.r_[1.0, -W[r]], lower=b[r])  # h >= z
                    self.m.add_row(np.r_[h[r], prev, g], np.r_[1.0, -W[r], -l[r]], upper=b[r] - l[r])  # h <= z - l(1-g)
                    self.m.add_row([h[r], g], [1.0, -u[r]], upper=0.0)  # h <= u g
            prev, shift = h, np.zeros(len(b))
        W, b = self.layers[-1]
        self._predicts(prev, W[0], float(b[0] + W[0] @ shift), 0.0, False)

    def tighten(self, bound: float) -> None:
        """Bound the distance by `bound`, an upper bound on the optimum for every Z (the distance of a
        robust point): one row, and the copies added from now on take their neuron bounds from the
        domain within ``x0 -+ bound`` and the l1 ball of that radius (the row implies both)."""
        if not bound < self.radius:
            return
        self.radius = bound
        self.m.add_row(self.distance, 1.0, upper=bound * (1 + 1e-9) + 1e-12)
        self.lower, self.upper = np.maximum(self.lower, self.x0 - bound), np.minimum(self.upper, self.x0 + bound)

    def _copy_bounds(self, s) -> list:
        """Pre-activation bounds of copy s: interval propagation over the domain shifted by s and, with
        the l1 objective and an upper bound r on the optimum, over the l1 ball ``||x - x0||_1 <= r``
        (``W_j (x0 + s) + b_j -+ r max_k |W_jk|`` in the first layer), propagated on."""
        bounds = propagate_bounds(self.layers, self.lower + s, self.upper + s)
        if self.objective != "l1" or not np.isfinite(self.radius):
            return bounds
        W, b = self.layers[0]
        centre, half = W @ (self.x0 + s) + b, self.radius * np.abs(W).max(axis=1)
        l, u = np.maximum(bounds[0][0], centre - half), np.minimum(bounds[0][1], centre + half)
        tighter = [(l, u)] + propagate_bounds(self.layers[1:], np.maximum(l, 0), np.maximum(u, 0))
        return [(np.maximum(a, c), np.minimum(b_, d)) for (a, b_), (c, d) in zip(bounds, tighter)]

    def _predicts(self, cols, coefs, constant, threshold, inclusive) -> None:
        """``constant + coefs @ v[cols]`` is past the decision threshold towards the target
        (:meth:`explainopt.encoders.Encoding.predicts`)."""
        if self.target == 1:
            self.m.add_row(cols, coefs, lower=threshold - constant + (0.0 if inclusive else self.margin))
        else:
            self.m.add_row(cols, coefs, upper=threshold - constant - self.margin)

    def solve(self, *, solver=None, time_limit=None):
        """(result, x, compile time = 0: there is no modelling layer). A licence too small for the
        model moves it to HiGHS (:meth:`explainopt.solvers.MatrixMILP.solve`, ``fallback_from``)."""
        if self.family in OBJECTIVE_BOUND and self.bound is not None:  # Z only grows, so the optimum only grows
            self.m.add_row(self.distance, 1.0, lower=self.bound)
        res = self.m.solve(solver=solver, time_limit=time_limit)
        if res.status == solvers.OPTIMAL:
            self.bound = res.objective if res.dual_bound is None else min(res.objective, res.dual_bound)
        return res, None if res.values is None else res.values[self.x], 0.0


def _setup(model, x0, *, rho, norm, objective, target, lower, upper, X=None, solver=None, time_limit=None):
    """Validated inputs shared by :func:`robust_region` and :func:`single_leaf_region` (the domain
    sides may be infinite: None or +-inf mean unbounded; `X`, when given, gives the box instead)."""
    _check_norm(norm)
    if objective not in OBJECTIVES:
        raise ValueError(f"objective={objective!r}: expected one of {OBJECTIVES}")
    if not rho > 0:
        raise ValueError(f"rho must be positive, got {rho!r}")
    checked = counterfactual_inputs(model, x0, target=target, lower=None if X is not None else lower,
                                    upper=None if X is not None else upper, X=X, box="optional", solver=solver,
                                    time_limit=time_limit, families=FAMILIES)
    return checked.family, checked.x0, checked.lower, checked.upper, checked.target


#: How far past the farthest split threshold (plus rho) an unbounded side of a tree model's domain is
#: closed (absolute, and relative to the threshold): more than the encoders' split margins.
TREE_DOMAIN_PAD = 1e-3


def tree_domain(boxes: TreeBoxes, x0, lower, upper, *, rho: float) -> tuple[np.ndarray, np.ndarray]:
    """Close the infinite sides of a tree model's domain without changing the optimum of Algorithm 1.

    Each infinite upper side of feature f becomes ``max(x0_f, t_f + rho + pad)`` with ``t_f`` the largest
    split threshold on f (lower sides alike with the smallest threshold; a feature no split uses is
    fixed at ``x0_f``). Exact: clipping any robust x into this box keeps ``x_f + s_f`` on the same side
    of every split for every ``||s|| <= rho`` (``|s_f| <= rho`` in both norms), so every point of its
    set stays in the same leaves, and it moves each coordinate towards ``x0_f``, so the distance does
    not grow: some optimal region lies in the box.
    """
    finite_lo = [np.where(np.isfinite(lo), lo, np.nan) for lo in boxes.lo]
    finite_hi = [np.where(np.isfinite(hi), hi, np.nan) for hi in boxes.hi]
    every = np.vstack(finite_lo + finite_hi)
    t_min, t_max = np.fmin.reduce(every, axis=0), np.fmax.reduce(every, axis=0)  # NaN: no split uses it
    unused = np.isnan(t_min)
    pad_lo = rho + TREE_DOMAIN_PAD * (1 + np.abs(t_min))
    pad_hi = rho + TREE_DOMAIN_PAD * (1 + np.abs(t_max))
    lo = np.where(np.isfinite(lower), lower, np.where(unused, x0, np.minimum(x0, t_min - pad_lo)))
    hi = np.where(np.isfinite(upper), upper, np.where(unused, x0, np.maximum(x0, t_max + pad_hi)))
    return np.minimum(lo, upper), np.maximum(hi, lower)


def _network_domain(x0, lower, upper, reach: float, *, bound: float = math.inf) -> tuple[np.ndarray, np.ndarray]:
    """The infinite sides of a network's domain closed at ``x0 -+ reach`` (see :func:`robust_region`),
    and every side within ``x0 -+ bound`` for an upper bound on the optimum (every point as close as the
    optimum is in that box: ``||x - x0||_inf <= d(x, x0)``; the robust point that gave the bound too)."""
    lo = np.where(np.isfinite(lower), lower, np.minimum(x0, upper) - reach)
    hi = np.where(np.isfinite(upper), upper, np.maximum(x0, lower) + reach)
    if np.isfinite(bound):
        lo, hi = np.maximum(lo, x0 - bound), np.minimum(hi, x0 + bound)
    return lo, hi


#: Steps along each direction from x0 at which :func:`network_distance_bound` tries a point: a geometric
#: grid of lengths (l2 norm of the step) from 1e-3 to about 10.
BOUND_STEPS = 1e-3 * 1.1 ** np.arange(100)


def network_distance_bound(layers, x0, lower, upper, *, rho: float, norm: str, target: int, objective: str,
                           margin: float, through=None) -> tuple[float, np.ndarray | None]:
    """An upper bound on the optimum of Algorithm 1 for a ReLU network: the distance from `x0` of the
    closest point found whose whole set ``x + S`` (first layer exactly, eq. 69, then interval bound
    propagation) is `target` by `margin` -- a robust point, so the optimum is at most that far.
    The points tried lie on rays from x0 along the logit's gradient at x0 (its direction, its signs
    and its largest coordinate), clipped to the domain, or with `through` (a point, e.g. a master
    solution) on the ray from x0 through it, 1% apart past it; ``(inf, None)`` when none is proven
    robust."""
    x0 = np.asarray(x0, dtype=float)
    if through is not None:
        step = np.asarray(through, dtype=float) - x0
        length = np.linalg.norm(step)
        if not length > 0:
            return math.inf, None
        return _robust_on_rays(layers, x0, lower, upper, step[None] / length, length * (1 + 0.01 * np.arange(300)),
                               rho=rho, norm=norm, target=target, objective=objective, margin=margin)
    sign = 1.0 if target == 1 else -1.0
    _, zs = forward(layers, x0[None], preactivations=True)
    g = layers[-1][0][0]
    for (W, _), z in zip(layers[-2::-1], zs[-2::-1]):  # back through the active ReLUs
        g = (g * (z[0] > 0)) @ W
    g = sign * g
    if not np.any(g):
        return math.inf, None
    k = int(np.argmax(np.abs(g)))
    directions = np.vstack([g / np.linalg.norm(g), np.sign(g) / np.sqrt(len(g)), np.eye(len(g))[k] * np.sign(g[k])])
    return _robust_on_rays(layers, x0, lower, upper, directions, BOUND_STEPS, rho=rho, norm=norm, target=target,
                           objective=objective, margin=margin)


def _robust_on_rays(layers, x0, lower, upper, directions, steps, *, rho, norm, target, objective, margin):
    """The closest of the points ``x0 + step * direction`` (clipped to the domain) whose set
    ``{p + s : ||s|| <= rho}`` interval propagation proves `target` by `margin`: (its distance, it), or
    ``(inf, None)``."""
    points = np.clip(x0 + steps[:, None, None] * directions[None], lower, upper).reshape(-1, len(x0))
    W, b = layers[0]  # the first layer exactly over the set: W p + b -+ rho ||W_j||_* (eq. 69's dual norm)
    half = rho * np.linalg.norm(W, ord=DUAL_ORD[norm], axis=1)
    l, u = points @ W.T + b - half, points @ W.T + b + half
    for W, b in layers[1:]:  # then interval bound propagation, one row per point
        lo, hi = np.maximum(l, 0), np.maximum(u, 0)
        l = lo @ np.maximum(W, 0).T + hi @ np.minimum(W, 0).T + b
        u = hi @ np.maximum(W, 0).T + lo @ np.minimum(W, 0).T + b
    slack = 1e-9 * (1 + np.abs(l[:, 0]) + np.abs(u[:, 0]))  # against rounding in the propagation
    robust = l[:, 0] >= margin + slack if target == 1 else u[:, 0] <= -margin - slack
    if not robust.any():
        return math.inf, None
    dist = np.array([_np_norm(p - x0, objective) for p in points[robust]])
    best = int(np.argmin(dist))
    return float(dist[best]), points[robust][best]


#: Scenarios Algorithm 1 adds to Z per iteration by default where each is a copy of the model: the AP's
#: worst only, the paper's choice. Measured (benchmarks/regions.py --cuts 4, banknote DT5 and RF5, rho
#: 0.05, HiGHS, cvxpy master): more scenarios per iteration saved master solves (DT5 4 -> 3, RF5 5 -> 4 on
#: average) but each master problem grows by a copy of the model per scenario; the total time doubled.
CUTS = 1
#: Adverse cells excluded per iteration by default where a cell is one row (l-inf trees,
#: :meth:`PersistentMaster.add`). Measured on 3 rows, HiGHS, l-inf: 1 -> 8 cells per iteration took
#: diabetes RF5 (rho 0.01) from 10.2 to 4.3 s per region and banknote RF10 (rho 0.05) from 15.8 to 11.5 s.
CELL_CUTS = 8
#: How many times an unbounded network domain is widened before giving up (see :func:`robust_region`).
MAX_WIDENINGS = 4


def robust_region(model, x0, *, rho: float, norm: str = "linf", target=None,
                  lower=0.0, upper=1.0, X=None, objective: str = "l1", epsilon: float = 1e-6,
                  max_iterations: int = 200, time_limit: float = 1000.0, solver=None, margin: float = 1e-4,
                  track_radius: bool = False, tree_method: str = "auto", cuts: int | None = None,
                  reach: float = 1.0, random_state=0) -> RobustRegion:
    """Algorithm 1: the closest x to `x0` whose whole `rho`-ball (`norm`) is predicted `target`.

    Parameters
    ----------
    model : a fitted binary classifier of a family in :data:`FAMILIES` (linear, decision tree, forest,
        gradient boosting, ReLU network).
    x0 : the factual instance: an array, a Series or a one-row DataFrame.
    rho, norm : the uncertainty set ``{s : ||s|| <= rho}`` with ``norm`` ``linf`` (box) or ``l2`` (ball).
    target : the class the region must have, a label of ``model.classes_``; default (None): the class
        other than the model's prediction at `x0`.
    lower, upper : the feature domain X (scalars, arrays or Series; None or +-inf: unbounded on that
        side, the paper's setting; the data's box, e.g. [0, 1] (the default) for min-max scaled data,
        otherwise); `x0` must lie in it. X : data whose column minima and maxima give the box instead. An unbounded
        domain is solved exactly: linear models need no box; for trees and ensembles it is closed just
        beyond every split threshold (:func:`tree_domain`, exact); for networks at ``x0 -+ reach``
        per feature, and the answer is kept only when its distance is at most ``reach``: every closer
        point is then inside the box (``||x - x0||_inf <= d(x, x0)`` for the l1, l2 and l-inf
        objectives), so the box's optimum is the unbounded one; otherwise the loop goes on with the
        scenarios found so far in a wider box (at most :data:`MAX_WIDENINGS` times): one of half-width
        the distance found (the region found is robust, so the optimum is at most that far, hence in
        that box) or, when the box held no robust point, four times wider; past that the region is
        still certified, and optimal within the box it reports (``domain``). For a network the loop
        first looks for a robust point (:func:`network_distance_bound`); where one is found, every side
        of the domain is closed at its distance from x0 instead (exact at once, no widening), and the
        master problem is bounded by that distance (its l1 ball tightens the neuron bounds).
        The big-M constants of the encoders come from this box (the authors' code uses the constant
        100 for networks and 1000 for trees instead).
    objective : the master problem's distance ``l1`` (the authors' code, always), ``l2`` or ``linf``.
    epsilon : Algorithm 1 stops when the AP value is at most epsilon.
    max_iterations, time_limit : early-stop limits (the paper: 1000 s per instance).
    margin : how far past the decision threshold each encoded copy must be (MP, eq. 6).
    track_radius : compute every master solution's certified radius (Figure 7; not counted in `time`).
    tree_method : for a single decision tree, the AP by per-leaf problems (``auto``/``leaves``) or ``milp``.
    cuts : at most this many violated scenarios join Z per iteration: the AP's worst and further ones
        (decision trees: the deepest point of every other adverse leaf the set meets; ensembles: of
        every other adverse cell met by 256 points sampled from the set with `random_state`); 1 is
        the paper's Algorithm 1. Default: :data:`CELL_CUTS` where each is one row (l-inf trees),
        else :data:`CUTS`. Any violated scenario is a valid cut, so the result is the same optimum;
        only the number of master solves changes (see :data:`CUTS`, :data:`CELL_CUTS`).
    """
    family, x0, lower, upper, target = _setup(model, x0, rho=rho, norm=norm, objective=objective, target=target,
                                              lower=lower, upper=upper, X=X, solver=solver, time_limit=time_limit)
    if not (cuts is None or isinstance(cuts, (int, np.integer)) and cuts >= 1):
        raise ValueError(f"cuts must be a positive integer, got {cuts!r}")
    if family == LINEAR:
        return contract(_linear_region(model, x0, rho=rho, norm=norm, target=target, lower=lower, upper=upper,
                                       objective=objective, margin=margin, solver=solver), model, x0, target)
    if not reach > 0:
        raise ValueError(f"reach must be positive, got {reach!r}")
    boxes = _boxes_if_trees(model, family)
    loop = _Loop(model, family, boxes, x0, rho=rho, norm=norm, target=target, objective=objective, epsilon=epsilon,
                 solver=solver, margin=margin, cuts=cuts, random_state=random_state,
                 method="milp" if tree_method == "milp" else "auto")
    start = time.perf_counter()
    bounded = bool(np.isfinite(lower).all() and np.isfinite(upper).all())
    if family == NETWORK and NETWORK_BOUND:
        loop.bound, _ = network_distance_bound(network_layers(model), x0, lower, upper, rho=rho, norm=norm,
                                               target=target, objective=objective, margin=margin)
        reach = loop.bound if np.isfinite(loop.bound) else reach  # that box is exact: no widening
    for widening in range(MAX_WIDENINGS + 1):
        if boxes is not None:
            lo, hi = tree_domain(boxes, x0, lower, upper, rho=rho)
        else:
            lo, hi = _network_domain(x0, lower, upper, reach, bound=loop.bound)
        status = loop.run(lo, hi, start=start, time_limit=time_limit, max_iterations=max_iterations)
        if bounded or boxes is not None or widening == MAX_WIDENINGS or np.isfinite(loop.bound):
            break
        inside = status == "converged" and loop.history[-1].distance <= reach
        if inside or status not in ("converged", "infeasible"):
            break
        # the optimum is at most as far as the robust region found (slack: the MIP gap), else widen
        reach = loop.history[-1].distance * (1 + 1e-3) if status == "converged" else reach * 4
    return contract(loop.result(status, time.perf_counter() - start, lo, hi, track_radius=track_radius), model, x0,
                    target)


class _Loop:
    """Algorithm 1's state across domains (the scenario set Z, the history, the solvers used)."""

    def __init__(self, model, family, boxes, x0, *, rho, norm, target, objective, epsilon, solver, margin, cuts,
                 random_state, method):
        self.model, self.family, self.boxes, self.x0 = model, family, boxes, x0
        self.rho, self.norm, self.target, self.objective, self.epsilon = rho, norm, target, objective, epsilon
        self.solver, self.margin, self.cuts, self.method = solver, margin, cuts, method
        self.rng = np.random.default_rng(random_state)
        self.scenarios = [np.zeros(len(x0))]  # Z = {0}
        self.history: list[Iteration] = []
        self.used: set[str] = set()
        self.refused: set[str] = set()
        self.bound = math.inf  # an upper bound on the optimum (networks: network_distance_bound)

    def run(self, lower, upper, *, start, time_limit, max_iterations) -> str:
        """Algorithm 1 on the domain box [lower, upper] from the current Z; returns the status."""
        master = self._master(lower, upper)
        cuts = self.cuts or (CELL_CUTS if getattr(master, "cells", None) is not None else CUTS)
        for s in self.scenarios:
            master.add(s)
        while len(self.history) < max_iterations:
            remaining = time_limit - (time.perf_counter() - start)
            if remaining <= 0:
                return "time_limit"
            mp, x_star, mp_compile = master.solve(solver=self.solver, time_limit=remaining)
            self.used.add(mp.solver)
            self.refused.add(mp.fallback_from)
            if mp.status == solvers.INFEASIBLE:
                return "infeasible"
            if mp.status != solvers.OPTIMAL:  # time limit inside the MP: its incumbent is not a lower bound
                return "time_limit" if mp.status in (solvers.TIME_LIMIT, solvers.NO_SOLUTION) else "no_solution"
            x_star = np.clip(np.asarray(x_star, dtype=float), lower, upper)
            if self.family == NETWORK and NETWORK_BOUND and hasattr(master, "tighten"):
                self._tighten(master, x_star, lower, upper)
            remaining = time_limit - (time.perf_counter() - start)
            ap = _adversarial(self.model, self.family, self.boxes, x_star, rho=self.rho, norm=self.norm,
                              target=self.target, solver=self.solver, time_limit=max(remaining, 1.0),
                              method=self.method, more=cuts - 1, rng=self.rng)
            self.used.add(ap.solver)
            self.refused.add(ap.fallback_from)
            step = Iteration(len(self.history) + 1, x_star, _np_norm(x_star - self.x0, self.objective), ap.value,
                             ap.scenario, mp.solve_time, ap.solve_time, master_compile_time=mp_compile,
                             adversarial_compile_time=ap.compile_time)
            self.history.append(step)
            if ap.status != solvers.OPTIMAL:
                return "time_limit"
            if ap.value <= self.epsilon:
                return "converged"
            for s in [ap.scenario] + list(ap.more[: cuts - 1]):
                master.add(s, x_star)
                self.scenarios.append(np.asarray(s, dtype=float))
                step.added += 1
        return "iteration_limit"

    def _tighten(self, master, x_star, lower, upper) -> None:
        """A robust point past the master solution on the ray from x0 bounds the optimum more tightly."""
        bound, _ = network_distance_bound(network_layers(self.model), self.x0, lower, upper, rho=self.rho,
                                          norm=self.norm, target=self.target, objective=self.objective, margin=self.margin,
                                          through=x_star)
        if bound < self.bound:
            self.bound = bound
            master.tighten(bound)

    def _master(self, lower, upper):
        """The persistent master problem for HiGHS and Gurobi with a linear objective, else cvxpy's."""
        if self.objective == "l2" or solvers.matrix_solver(self.solver) is None:
            return MasterProblem(self.model, self.x0, lower=lower, upper=upper, target=self.target,
                                 objective=self.objective, margin=self.margin)
        return PersistentMaster(self.model, self.family, self.x0, lower=lower, upper=upper, target=self.target,
                                objective=self.objective, margin=self.margin, rho=self.rho, norm=self.norm,
                                bound=self.bound)

    def result(self, status, elapsed, lower, upper, *, track_radius) -> RobustRegion:
        history = self.history
        result = RobustRegion(
            None, status, elapsed, "+".join(sorted(self.used - {"closed form"})) or "closed form",
            fallback_from="+".join(sorted(self.refused - {None})) or None, rho=self.rho, norm=self.norm,
            objective=self.objective, iterations=len(history),
            master_time=sum(h.master_time for h in history),
            adversarial_time=sum(h.adversarial_time for h in history), history=history,
            compile_time=sum(h.master_compile_time + h.adversarial_compile_time for h in history),
            scenarios=len(self.scenarios), domain=(lower, upper),
        )
        if track_radius or (status != "converged" and history):
            for h in history:
                h.radius = _certified_radius(self.model, self.family, self.boxes, h.x, norm=self.norm,
                                             target=self.target, cap=self.rho, solver=self.solver)
        if status == "converged":
            result.x, result.distance = history[-1].x, history[-1].distance
        elif history and status in ("time_limit", "iteration_limit"):  # infeasible: no robust x at rho exists
            best = max(history, key=lambda h: (np.nan_to_num(h.radius, nan=-1.0), -h.iteration))
            # the certified radius is the distance to the other class: the ball of exactly that radius
            # touches it (a closed leaf side ``x <= t`` is adverse on the boundary), so rho-bar is taken a
            # hair inside (RHO_BAR_SLACK, also covering the solvers' feasibility tolerance)
            rho_bar = best.radius if best.radius is None or not np.isfinite(best.radius) \
                else max(0.0, best.radius - RHO_BAR_SLACK)
            result.x, result.distance, result.rho_bar = best.x, best.distance, rho_bar
        return result


def _linear_region(model, x0, *, rho, norm, target, lower, upper, objective, margin, solver) -> RobustRegion:
    """Linear models: one convex problem with the robust constraint of eq. (69), no loop (an
    unbounded side of the domain is simply left out)."""
    beta, beta0 = linear_weights(model)
    sign = 1.0 if target == 1 else -1.0
    x = cp.Variable(len(x0))
    robust_score = sign * (beta @ x + beta0) - rho * np.linalg.norm(beta, ord=DUAL_ORD[norm])
    box = [x[j] >= lower[j] for j in np.flatnonzero(np.isfinite(lower))]
    box += [x[j] <= upper[j] for j in np.flatnonzero(np.isfinite(upper))]
    problem = cp.Problem(cp.Minimize(distance(x - x0, objective)), box + [robust_score >= margin])
    res = _solve(problem, solver=solver, time_limit=None)
    ok = res.status == solvers.OPTIMAL
    return RobustRegion(
        np.asarray(x.value) if ok else None,
        "converged" if ok else ("infeasible" if res.status == solvers.INFEASIBLE else "no_solution"),
        res.solve_time, res.solver, fallback_from=res.fallback_from, rho=rho, norm=norm, objective=objective,
        iterations=0, distance=res.objective if ok else math.nan, master_time=res.solve_time,
        compile_time=_compile_time(problem), domain=(lower, upper),
    )


# =========================================================================== heuristic (eqs. 36-39)

def single_leaf_region(model, x0, *, rho: float, norm: str = "linf", target=None,
                       lower=0.0, upper=1.0, X=None, objective: str = "l1", margin: float = 1e-5) -> RobustRegion:
    """The single-leaf heuristic for decision trees (eqs. 36-39): the whole set inside one target leaf.

    For axis-aligned splits ``rho * ||a_j||_* = rho`` in both norms, so each leaf's problem is the
    projection of x0 onto the leaf box shrunk by rho (and clipped to the domain); the best leaf wins.
    The solution is robust but may be farther than Algorithm 1's (Figure 5).
    """
    start = time.perf_counter()
    family, x0, lower, upper, target = _setup(model, x0, rho=rho, norm=norm, objective=objective, target=target,
                                              lower=lower, upper=upper, X=X)
    if family != TREE:
        raise TypeError(f"the single-leaf heuristic is for a DecisionTreeClassifier, got {type(model).__name__}")
    boxes = tree_boxes(model)
    good = ~boxes.adverse_leaves(target)
    lo = np.maximum(boxes.lo[0][good] + rho + margin, lower)  # strict right branches: x - rho > t
    hi = np.minimum(boxes.hi[0][good] - rho - margin, upper)  # float32 casting: margins on both sides
    feasible = np.all(lo <= hi, axis=1)
    result = RobustRegion(None, "infeasible", 0.0, "closed form", rho=rho, norm=norm, objective=objective,
                          iterations=1)
    if feasible.any():
        proj = np.clip(x0, lo[feasible], hi[feasible])
        dist = np.array([_np_norm(p - x0, objective) for p in proj])
        i = int(np.argmin(dist))
        result.x, result.distance, result.detail = proj[i], float(dist[i]), "converged"
    result.time = result.master_time = time.perf_counter() - start
    return contract(result, model, x0, target)


# =========================================================================== certification

@dataclass
class Certificate:
    """Independent check of a region: the AP solved again and `n_samples` points classified by the
    model's own prediction. certified: the centre is `target`, the AP value is at most epsilon and no
    sampled point is adverse."""

    certified: bool
    radius: float
    ap_value: float
    ap_status: str
    n_samples: int
    n_violations: int
    centre_valid: bool


def sample_set(n_features: int, *, rho: float, norm: str, n_samples: int, random_state=0) -> np.ndarray:
    """Points of the set ``{s : ||s|| <= rho}``: a third uniform inside, a third on the surface, a third
    at extreme points (box corners; for the ball, the surface again). random_state: a seed or a NumPy
    Generator (:func:`numpy.random.default_rng`)."""
    rng = np.random.default_rng(random_state)
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
                   epsilon: float = 1e-6, random_state=0, solver=None, time_limit: float | None = None) -> Certificate:
    """Check that every point of ``x + S`` (radius `rho`) is predicted `target`, independently of the loop."""
    x = np.asarray(x, dtype=float)
    centre_valid = bool(model_predict(model, x)[0] == target)
    if rho <= 0:
        return Certificate(centre_valid, 0.0, -math.inf, solvers.OPTIMAL, 0, 0, centre_valid)
    ap = adversarial_problem(model, x, rho=rho, norm=norm, target=target, solver=solver, time_limit=time_limit)
    points = x + sample_set(len(x), rho=rho, norm=norm, n_samples=n_samples, random_state=random_state)
    violations = int((model_predict(model, points) != target).sum())
    ok = centre_valid and ap.status == solvers.OPTIMAL and ap.value <= epsilon and violations == 0
    return Certificate(bool(ok), float(rho), float(ap.value), ap.status, n_samples, violations, centre_valid)
