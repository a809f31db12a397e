"""The adversarial problems of robust regions, per model family: the worst scenario ``s`` of the set for
a point ``x*`` (AP, Maragno et al. 2024), and the nearest point of the other class (the certified radius).

- linear models: closed forms by the dual norm (Appendix A, eq. 69);
- decision trees: one slack-maximization problem per leaf of the other class (eqs. 31-35, the Lipschitz
  extension of Lemma 1), in closed form because every split is axis-aligned (:func:`leaf_depths`);
- tree ensembles (random forests, extra trees, gradient boosting): the MILP of eqs. 41-45 with one
  binary per reachable leaf (:func:`adverse_cell`);
- ReLU networks: the MILP of eqs. 60-67 (``encode(model, x* + s)`` and the worst output).

Every function here takes ``(model, boxes, point, ...)`` (`boxes`: the model's :class:`TreeBoxes`, None
for the other families) so that :mod:`.families` can hold them in one table.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import cvxpy as cp
import numpy as np

from ... import solvers
from ...encoders import encode, linear_weights
from .boxes import TreeBoxes, deepest_points, leaf_depths
from .sets import DUAL_ORD, sample_set


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


#: SCIP parameters for every problem of robust regions: no NLP relaxation. On some l2 MISOCPs of forests the
#: Ipopt that SCIP calls for it (MUMPS, METIS ordering; PySCIPOpt 6.3.0) corrupts the heap and aborts the
#: process (chapter 6's heloc forest: ``free(): invalid pointer``); without it SCIP still solves them exactly,
#: by LP outer approximation and branching.
SCIP_PARAMS = {"nlp/disable": True}


def solve_bounded(problem: cp.Problem, *, solver, time_limit) -> solvers.SolveResult:
    """Every problem of robust regions is bounded by construction (the set, the domain box, a norm
    objective bounded below), so a presolve answer "infeasible or unbounded" (Gurobi's INF_OR_UNBD)
    means infeasible: for an adversarial problem, that the point is robust. SCIP runs with
    :data:`SCIP_PARAMS`."""
    scip = solvers.choose_solver(solvers.problem_class(problem), solver) == "scip"
    return solvers.solve(problem, solver=solver, time_limit=time_limit, bounded=True,
                         options=SCIP_PARAMS if scip else None)


def compile_time(problem: cp.Problem) -> float:
    """Seconds cvxpy spent compiling `problem` in its last solve."""
    return float(getattr(problem, "compilation_time", None) or 0.0)


def _solved(res, problem, value: float, scenario, *, status: str | None = None) -> AdversarialResult:
    """An AP's outcome from the solver's result `res` (its status unless `status` is given)."""
    return AdversarialResult(value, scenario, status or res.status, res.solver, res.solve_time,
                             fallback_from=res.fallback_from, compile_time=compile_time(problem))


def _sign(target: int) -> float:
    return 1.0 if target == 1 else -1.0


# =========================================================================== the worst scenario (AP)

def linear_ap(model, boxes, x_star, *, rho, norm, target, **_) -> AdversarialResult:
    """Closed form: min over the set of beta^T (x + s) is beta^T x - rho ||beta||_* (Appendix A)."""
    start = time.perf_counter()
    beta, beta0 = linear_weights(model)
    sign = _sign(target)
    dual = np.linalg.norm(beta, ord=DUAL_ORD[norm])
    worst = sign * (beta @ x_star + beta0) - rho * dual  # the worst signed score over the set
    if norm == "linf":
        s = -sign * rho * np.sign(beta)
    else:
        s = -sign * rho * beta / max(np.linalg.norm(beta), 1e-300)
    return AdversarialResult(float(-worst), s, solvers.OPTIMAL, "closed form", time.perf_counter() - start)


def tree_ap(model, boxes: TreeBoxes, x_star, *, rho, norm, target, method="auto", **options) -> AdversarialResult:
    """Decision tree: maximize the minimum slack over each adverse leaf (eqs. 31-35), keep the best
    (``method`` ``auto`` or ``leaves``); ``milp``: the ensemble MILP (:func:`ensemble_ap`) with one tree."""
    if method not in ("auto", "leaves"):
        return ensemble_ap(model, boxes, x_star, rho=rho, norm=norm, target=target, **options)
    start = time.perf_counter()
    lo, hi = boxes.lo[0], boxes.hi[0]
    bad = boxes.adverse_leaves(target)
    if not bad.any():
        return AdversarialResult(-math.inf, None, solvers.OPTIMAL, "closed form", time.perf_counter() - start)
    depth = leaf_depths(x_star, lo[bad], hi[bad], rho=rho, norm=norm)
    order = np.argsort(-depth, kind="stable")
    i = int(order[0])
    if not np.isfinite(depth[i]):
        return AdversarialResult(-math.inf, None, solvers.OPTIMAL, "closed form", time.perf_counter() - start)
    deep = [j for j in order if np.isfinite(depth[j]) and depth[j] > 0]
    points = deepest_points(x_star, lo[bad], hi[bad], depth, deep)
    return AdversarialResult(float(depth[i]), deepest_points(x_star, lo[bad], hi[bad], depth, [i])[0],
                             solvers.OPTIMAL, "closed form", time.perf_counter() - start, more=points[1:])


def adverse_cell(boxes: TreeBoxes, y, center, *, reach: float, alpha_max: float, alpha, target: int,
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
    ens = boxes.ensemble
    score = ens.from_leaf_sum(np.asarray(values) @ z)
    positive_strict = not ens.inclusive  # class 1 iff score > thr (strict) or >= thr (inclusive)
    if target == 1:  # adverse = class 0
        cons.append(score <= ens.threshold - (0.0 if positive_strict else score_margin))
    else:
        cons.append(score >= ens.threshold + (score_margin if positive_strict else 0.0))
    return cons, {"z": z}


#: Points of the set sampled to find further adverse cells of an ensemble (:func:`adverse_cells`).
CELL_SAMPLES = 256


def ensemble_ap(model, boxes: TreeBoxes, x_star, *, rho, norm, target, solver, time_limit, more: int = 0,
                rng=None, **_) -> AdversarialResult:
    """Tree ensembles: the MILP of eqs. (41)-(45) (deepest point of an adverse cell within the set); with
    `more` > 0, also further violated scenarios (``.more``, :func:`adverse_cells`)."""
    s, alpha = cp.Variable(len(x_star)), cp.Variable()
    y = x_star + s
    cons, _ = adverse_cell(boxes, y, x_star, reach=rho, alpha_max=rho, alpha=alpha, target=target)
    cons += [alpha >= 0, alpha <= rho, s >= -rho, s <= rho]
    if norm == "l2":
        cons.append(cp.norm(s, 2) <= rho)
    problem = cp.Problem(cp.Maximize(alpha), cons)
    res = solve_bounded(problem, solver=solver, time_limit=time_limit)
    if res.status == solvers.INFEASIBLE:  # no adverse cell meets the set: x_star is robust
        return _solved(res, problem, -math.inf, None, status=solvers.OPTIMAL)
    if not res.has_solution:
        return _solved(res, problem, math.nan, None)
    ap = _solved(res, problem, float(alpha.value), np.asarray(s.value))
    if more > 0 and ap.status == solvers.OPTIMAL and ap.value > 0:
        start = time.perf_counter()
        ap.more = [s for s in adverse_cells(boxes, x_star, rho=rho, norm=norm, target=target, rng=rng)
                   if not np.allclose(s, ap.scenario, atol=1e-9)][:more]
        ap.solve_time += time.perf_counter() - start
    return ap


def adverse_cells(boxes: TreeBoxes, x_star, *, rho, norm, target, rng, n_samples: int = CELL_SAMPLES) -> list:
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
    bad = boxes.adverse(boxes.ensemble.from_leaf_sum(score), target)
    if not bad.any():
        return []
    _, first = np.unique(np.stack(leaves, axis=1)[bad], axis=0, return_index=True)
    lo, hi = cell_lo[bad][first], cell_hi[bad][first]
    depth = leaf_depths(x_star, lo, hi, rho=rho, norm=norm)
    return deepest_points(x_star, lo, hi, depth, [j for j in np.argsort(-depth, kind="stable")
                                                   if np.isfinite(depth[j]) and depth[j] > 0])


def network_ap(model, boxes, x_star, *, rho, norm, target, solver, time_limit, **_) -> AdversarialResult:
    """ReLU networks: the MILP of eqs. (60)-(67): the worst logit over the set (bounds from the set)."""
    s = cp.Variable(len(x_star))
    enc = encode(model, x_star + s, lower=x_star - rho, upper=x_star + rho)
    cons = list(enc.constraints) + [s >= -rho, s <= rho]
    if norm == "l2":
        cons.append(cp.norm(s, 2) <= rho)
    sign = _sign(target)
    problem = cp.Problem(cp.Minimize(sign * enc.output), cons)
    res = solve_bounded(problem, solver=solver, time_limit=time_limit)
    if res.status == solvers.OPTIMAL:  # tau - h(x* + s)
        return _solved(res, problem, float(sign * enc.threshold - res.objective), np.asarray(s.value))
    return _solved(res, problem, math.nan, np.asarray(s.value) if res.has_solution else None)


# =========================================================================== the nearest adverse point (radius)

#: How far beyond the cap the certified radius searches for the other class (relative to the cap).
RADIUS_REACH = 1.25
#: How deep inside its leaves the ensemble radius's adverse point must lie (above float32's spacing of the
#: thresholds): leaves of two trees that only touch on a threshold (y <= t in one, y > t in the other) share
#: no point, and at depth 0 they would pass for an adverse cell on that threshold.
RADIUS_DEPTH = 1e-6


def linear_radius(model, boxes, x, *, norm, target, cap, **_) -> float:
    """The distance from `x` to the hyperplane in the dual norm (eq. 69), at most `cap`."""
    beta, beta0 = linear_weights(model)
    return float(min(cap, max(0.0, _sign(target) * (beta @ x + beta0)) / np.linalg.norm(beta, ord=DUAL_ORD[norm])))


def tree_radius(model, boxes: TreeBoxes, x, *, norm, target, cap, **_) -> float:
    """The distance from `x` to the nearest leaf box of the other class, at most `cap`."""
    bad = boxes.adverse_leaves(target)
    if not bad.any():
        return float(cap)
    lo, hi = boxes.lo[0][bad], boxes.hi[0][bad]
    gap = np.maximum(0, np.maximum(lo - x, x - hi))
    dist = gap.max(axis=1) if norm == "linf" else np.sqrt((gap ** 2).sum(axis=1))
    return float(min(cap, dist.min()))


def ensemble_radius(model, boxes: TreeBoxes, x, *, norm, target, cap, solver, time_limit=None) -> float:
    """The distance from `x` to the nearest adverse cell (:func:`adverse_cell` at depth
    :data:`RADIUS_DEPTH`), a MILP."""
    def adverse(y, reach):
        cons, _ = adverse_cell(boxes, y, x, reach=reach, alpha_max=RADIUS_DEPTH, alpha=RADIUS_DEPTH, target=target)
        return cons
    return _nearest_adverse(x, adverse, depth=RADIUS_DEPTH, norm=norm, cap=cap, solver=solver, time_limit=time_limit)


def network_radius(model, boxes, x, *, norm, target, cap, solver, time_limit=None) -> float:
    """The distance from `x` to the nearest point the network gives the other class, a MILP."""
    def adverse(y, reach):
        enc = encode(model, y, lower=x - reach, upper=x + reach)
        sign = _sign(target)
        return list(enc.constraints) + [sign * enc.output <= sign * enc.threshold]
    return _nearest_adverse(x, adverse, depth=0.0, norm=norm, cap=cap, solver=solver, time_limit=time_limit)


def _nearest_adverse(x, adverse, *, depth, norm, cap, solver, time_limit) -> float:
    """min ``||y - x||`` over the points ``y`` that `adverse(y, reach)` constrains to the other class."""
    # searched a little beyond the cap: a converged region's radius is the cap up to the solvers'
    # tolerances, and a problem bounded at exactly that radius is borderline infeasible (Clarabel fails)
    y, r, reach = cp.Variable(len(x)), cp.Variable(), RADIUS_REACH * cap
    cons = adverse(y, reach)
    cons += [y >= x - reach, y <= x + reach, r <= reach]
    cons += [cp.abs(y - x) <= r] if norm == "linf" else [cp.norm(y - x, 2) <= r]
    res = solve_bounded(cp.Problem(cp.Minimize(r), cons), solver=solver, time_limit=time_limit)
    if res.status == solvers.INFEASIBLE:
        return float(cap)
    if not res.has_solution:
        return math.nan
    # the point found lies `depth` inside its cell, whose nearest point is at most depth (l-inf; l2: times
    # sqrt(d)) closer: less that, the radius is a certificate again
    slack = depth * (1.0 if norm == "linf" else math.sqrt(len(x)))
    return float(min(cap, max(0.0, res.objective - slack)))
