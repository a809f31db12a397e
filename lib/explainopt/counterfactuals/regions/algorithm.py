"""Algorithm 1 of Maragno et al. (2024): the loop between the master problem (:mod:`.master`) and the
adversarial problem (:mod:`.adversarial`), on a domain box (:mod:`.domain`), for any model family of
:data:`~.families.FAMILY`; and the single-leaf heuristic for decision trees (eqs. 36-39)."""

from __future__ import annotations

import math
import time

import numpy as np

from ... import solvers
from ...validation import check_positive, counterfactual_inputs
from ..base import contract
from .families import FAMILIES, FAMILY, Family, radius_of
from .master import MasterProblem, PersistentMaster
from .result import Iteration, RobustRegion
from .sets import check_norm, vector_norm

OBJECTIVES = ("l1", "l2", "linf")
#: How far inside the certified radius an early stop's rho-bar is reported (see :func:`robust_region`).
RHO_BAR_SLACK = 1e-5
#: Whether a ReLU network's loop bounds the optimum by robust points (:func:`~.domain.network_distance_bound`).
#: Measured (benchmarks/regions.py, 3 rows, HiGHS, unbounded domain, one run): banknote NN50 l-inf rho
#: 0.01 4.26 -> 0.32 s per region, diabetes NN50 l2 rho 0.05 11.1 -> 1.87 s; the same distances.
NETWORK_BOUND = True
#: Scenarios Algorithm 1 adds to Z per iteration by default where each is a copy of the model: the AP's
#: worst only, the paper's choice. Measured (benchmarks/regions.py --cuts 4, banknote DT5 and RF5, rho
#: 0.05, HiGHS, cvxpy master): more scenarios per iteration saved master solves (DT5 4 -> 3, RF5 5 -> 4 on
#: average) but each master problem grows by a copy of the model per scenario; the total time doubled.
CUTS = 1
#: Adverse cells excluded per iteration by default where a cell is one row (l-inf trees,
#: ``TreeCopies.exclude_cell`` of ``regions.master``). Measured on 3 rows, HiGHS, l-inf: 1 -> 8 cells per
#: iteration took diabetes RF5 (rho 0.01) from 10.2 to 4.3 s per region and banknote RF10 (rho 0.05) from
#: 15.8 to 11.5 s.
CELL_CUTS = 8
#: Whether, where a cut is one row (l-inf trees), the AP's worst scenario of each iteration also joins the
#: master as a whole copy of the model beside its cell row (the chapter-2 master lever; see
#: ``benchmarks/regions.py --cell-copies``).
CELL_COPIES = False
#: How many times an unbounded network domain is widened before giving up (see
#: :func:`~explainopt.counterfactuals.robust_region`).
MAX_WIDENINGS = 4


def _setup(model, x0, *, rho, norm, objective, target, lower, upper, X=None, solver=None, time_limit=None):
    """Validated inputs shared by :func:`robust_region` and :func:`single_leaf_region` (the domain
    sides may be infinite: None or +-inf mean unbounded; `X`, when given, gives the box instead):
    (the family's record, x0, lower, upper, the target's class index)."""
    check_norm(norm)
    if objective not in OBJECTIVES:
        raise ValueError(f"objective={objective!r}: expected one of {OBJECTIVES}")
    check_positive(rho, "rho")
    checked = counterfactual_inputs(model, x0, target=target, lower=None if X is not None else lower,
                                    upper=None if X is not None else upper, X=X, box="optional", solver=solver,
                                    time_limit=time_limit, families=FAMILIES)
    return FAMILY[checked.family], checked.x0, checked.lower, checked.upper, checked.target


def robust_region(model, x0, *, rho: float, norm: str = "linf", target=None,
                  lower=0.0, upper=1.0, X=None, objective: str = "l1", epsilon: float = 1e-6,
                  max_iterations: int = 200, time_limit: float = 1000.0, solver=None, margin: float = 1e-4,
                  track_radius: bool = False, tree_method: str = "auto", cuts: int | None = None,
                  cell_copies: bool | None = None, reach: float = 1.0, random_state=0) -> RobustRegion:
    """Algorithm 1: the closest x to `x0` whose whole `rho`-ball (`norm`) is predicted `target`.

    Parameters
    ----------
    model : a fitted binary classifier of a family robust regions support
        (linear, decision tree, forest, gradient boosting, ReLU network).
    x0 : the factual instance: an array, a Series or a one-row DataFrame.
    rho, norm : the uncertainty set ``{s : ||s|| <= rho}`` with ``norm`` ``linf`` (box) or ``l2`` (ball).
    target : a label of ``model.classes_``
        The class the region must have; default (None): the class other than the model's prediction at
        `x0`.
    lower, upper : the feature domain X, a box
        Scalars, arrays or Series; None or +-inf: unbounded on that side, the paper's setting; the data's box, e.g.
        [0, 1] (the default) for min-max scaled data, otherwise. `x0` must lie in it. An unbounded domain is solved
        exactly: linear models need no box; for trees and ensembles it is closed just beyond every split threshold
        (:func:`~.regions.tree_domain`, exact); for networks at ``x0 -+ reach`` per feature, and the answer is kept
        only when its distance is at most ``reach``: every closer point is then inside the box (``||x - x0||_inf <=
        d(x, x0)`` for the l1, l2 and l-inf objectives), so the box's optimum is the unbounded one; otherwise the
        loop goes on with the scenarios found so far in a wider box (at most
        :data:`~.regions.algorithm.MAX_WIDENINGS` times): one of half-width the distance found (the region found is
        robust, so the optimum is at most that far, hence in that box) or, when the box held no robust point, four
        times wider; past that the region is still certified, and optimal within the box it reports (``domain``).
        For a network the loop first looks for a robust point (:func:`~.regions.network_distance_bound`); where one
        is found, every side of the domain is closed at its distance from x0 instead (exact at once, no widening),
        and the master problem is bounded by that distance (its l1 ball tightens the neuron bounds). The big-M
        constants of the encoders come from this box (the authors' code uses the constant 100 for networks and 1000
        for trees instead).
    X : data whose column minima and maxima give the box
        Instead of `lower`/`upper`.
    objective : the master problem's distance ``l1`` (the authors' code, always), ``l2`` or ``linf``.
    epsilon : Algorithm 1 stops when the AP value is at most epsilon.
    max_iterations, time_limit : early-stop limits (the paper: 1000 s per instance).
    margin : how far past the decision threshold each encoded copy must be
        In the master problem (MP, eq. 6).
    track_radius : compute every master solution's certified radius (Figure 7; not counted in `time`).
    tree_method : for a single decision tree, the AP by per-leaf problems (``auto``/``leaves``) or ``milp``.
    cuts : at most this many violated scenarios join Z per iteration: the AP's worst and further ones
        (decision trees: the deepest point of every other adverse leaf the set meets; ensembles: of
        every other adverse cell met by 256 points sampled from the set with `random_state`); 1 is
        the paper's Algorithm 1. Default: :data:`~.regions.algorithm.CELL_CUTS` where each is one row
        (l-inf trees), else :data:`~.regions.algorithm.CUTS`. Any violated scenario is a valid cut, so the
        result is the same optimum; only the number of master solves changes.
    cell_copies : where cuts are rows (l-inf trees), also add the AP's worst scenario of each iteration as a
        copy of the model (a tighter master, a larger one); default
        ``regions.algorithm.CELL_COPIES``. The same optimum either way.

    Returns
    -------
    RobustRegion
        The centre ``x``, ``status`` (``optimal`` when the loop converged; ``detail`` says how it
        stopped), ``distance`` (in `objective`), ``valid`` (the model's own ``predict`` at ``x``) and
        ``radius`` (rho, or rho-bar on an early stop).

    Examples
    --------
    A depth-2 tree that splits at ``x2 = 0.45``: the l-inf box of radius 0.1 around the answer lies above
    the split (by the encoders' margin).

    >>> from sklearn.tree import DecisionTreeClassifier
    >>> X = np.array([[0.1, 0.2], [0.3, 0.1], [0.8, 0.9], [0.9, 0.7]])
    >>> tree = DecisionTreeClassifier(max_depth=2, random_state=0).fit(X, [0, 0, 1, 1])
    >>> region = robust_region(tree, [0.2, 0.2], rho=0.1)
    >>> region.status, region.detail, region.target, region.valid, round(region.distance, 3)
    ('optimal', 'converged', 1, True, 0.35)
    >>> region.x.round(3).tolist(), region.radius
    ([0.2, 0.55], 0.1)
    """
    family, x0, lower, upper, target = _setup(model, x0, rho=rho, norm=norm, objective=objective, target=target,
                                              lower=lower, upper=upper, X=X, solver=solver, time_limit=time_limit)
    if not (cuts is None or isinstance(cuts, (int, np.integer)) and cuts >= 1):
        raise ValueError(f"cuts must be a positive integer, got {cuts!r}")
    if family.closed_form is not None:
        return contract(family.closed_form(model, x0, rho=rho, norm=norm, target=target, lower=lower, upper=upper,
                                           objective=objective, margin=margin, solver=solver), model, x0, target)
    if not reach > 0:
        raise ValueError(f"reach must be positive, got {reach!r}")
    loop = _Loop(model, family, x0, rho=rho, norm=norm, target=target, objective=objective, epsilon=epsilon,
                 solver=solver, margin=margin, cuts=cuts, random_state=random_state,
                 method="milp" if tree_method == "milp" else "auto",
                 cell_copies=CELL_COPIES if cell_copies is None else bool(cell_copies))
    start = time.perf_counter()
    bounded = bool(np.isfinite(lower).all() and np.isfinite(upper).all())
    if loop.bounds_distance:
        loop.bound, _ = family.distance_bound(model, x0, lower, upper, rho=rho, norm=norm, target=target,
                                              objective=objective, margin=margin)
        reach = loop.bound if np.isfinite(loop.bound) else reach  # that box is exact: no widening
    for widening in range(MAX_WIDENINGS + 1):
        lo, hi = family.domain(loop.boxes, x0, lower, upper, rho=rho, reach=reach, bound=loop.bound)
        status = loop.run(lo, hi, start=start, time_limit=time_limit, max_iterations=max_iterations)
        if bounded or family.exact_domain or widening == MAX_WIDENINGS or np.isfinite(loop.bound):
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

    def __init__(self, model, family: Family, x0, *, rho, norm, target, objective, epsilon, solver, margin, cuts,
                 random_state, method, cell_copies=False):
        self.model, self.family, self.boxes, self.x0 = model, family, family.boxes(model), x0
        self.rho, self.norm, self.target, self.objective, self.epsilon = rho, norm, target, objective, epsilon
        self.solver, self.margin, self.cuts, self.method = solver, margin, cuts, method
        self.cell_copies = cell_copies
        self.rng = np.random.default_rng(random_state)
        self.scenarios = [np.zeros(len(x0))]  # Z = {0}
        self.history: list[Iteration] = []
        self.used: set[str] = set()
        self.refused: set[str] = set()
        self.bound = math.inf  # an upper bound on the optimum (networks: network_distance_bound)
        self.bounds_distance = family.distance_bound is not None and NETWORK_BOUND

    def run(self, lower, upper, *, start, time_limit, max_iterations) -> str:
        """Algorithm 1 on the domain box [lower, upper] from the current Z; returns the status."""
        master = self._master(lower, upper)
        rows = getattr(master, "cells", None) is not None  # a cut is one row
        cuts = self.cuts or (CELL_CUTS if rows else CUTS)
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
            if self.bounds_distance and hasattr(master, "tighten"):
                self._tighten(master, x_star, lower, upper)
            remaining = time_limit - (time.perf_counter() - start)
            ap = self.family.adversarial(self.model, self.boxes, x_star, rho=self.rho, norm=self.norm,
                                         target=self.target, solver=self.solver, time_limit=max(remaining, 1.0),
                                         method=self.method, more=cuts - 1, rng=self.rng)
            self.used.add(ap.solver)
            self.refused.add(ap.fallback_from)
            step = Iteration(len(self.history) + 1, x_star, vector_norm(x_star - self.x0, self.objective), ap.value,
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
            if rows and self.cell_copies:
                master.add(ap.scenario)  # without x_star: a copy of the model at x + s
        return "iteration_limit"

    def _tighten(self, master, x_star, lower, upper) -> None:
        """A robust point past the master solution on the ray from x0 bounds the optimum more tightly."""
        bound, _ = self.family.distance_bound(self.model, self.x0, lower, upper, rho=self.rho, norm=self.norm,
                                              target=self.target, objective=self.objective, margin=self.margin,
                                              through=x_star)
        if bound < self.bound:
            self.bound = bound
            master.tighten(bound)

    def _master(self, lower, upper):
        """The persistent master problem for HiGHS and Gurobi with a linear objective, else cvxpy's."""
        if self.objective == "l2" or solvers.matrix_solver(self.solver) is None:
            return MasterProblem(self.model, self.x0, lower=lower, upper=upper, target=self.target,
                                 objective=self.objective, margin=self.margin)
        return PersistentMaster(self.model, self.family.copies, self.x0, lower=lower, upper=upper,
                                target=self.target, objective=self.objective, margin=self.margin, rho=self.rho,
                                norm=self.norm, bound=self.bound, objective_bound=self.family.objective_bound)

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
                h.radius = radius_of(self.model, self.family, self.boxes, h.x, norm=self.norm,
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


# =========================================================================== heuristic (eqs. 36-39)

def single_leaf_region(model, x0, *, rho: float, norm: str = "linf", target=None,
                       lower=0.0, upper=1.0, X=None, objective: str = "l1", margin: float = 1e-5) -> RobustRegion:
    """The single-leaf heuristic for decision trees (eqs. 36-39): the whole set inside one target leaf.

    For axis-aligned splits ``rho * ||a_j||_* = rho`` in both norms, so each leaf's problem is the
    projection of x0 onto the leaf box shrunk by rho (and clipped to the domain); the best leaf wins.
    The solution is robust but may be farther than Algorithm 1's (Figure 5). Arguments as in
    :func:`~explainopt.counterfactuals.robust_region`.

    Examples
    --------
    On a depth-2 tree the heuristic finds Algorithm 1's region (the target leaf is one box):

    >>> from sklearn.tree import DecisionTreeClassifier
    >>> X = np.array([[0.1, 0.2], [0.3, 0.1], [0.8, 0.9], [0.9, 0.7]])
    >>> tree = DecisionTreeClassifier(max_depth=2, random_state=0).fit(X, [0, 0, 1, 1])
    >>> region = single_leaf_region(tree, [0.2, 0.2], rho=0.1)
    >>> region.status, region.valid, round(region.distance, 3), region.x.round(3).tolist()
    ('optimal', True, 0.35, [0.2, 0.55])
    """
    start = time.perf_counter()
    family, x0, lower, upper, target = _setup(model, x0, rho=rho, norm=norm, objective=objective, target=target,
                                              lower=lower, upper=upper, X=X)
    if not family.single_tree:
        raise TypeError(f"the single-leaf heuristic is for a DecisionTreeClassifier, got {type(model).__name__}")
    boxes = family.boxes(model)
    good = ~boxes.adverse_leaves(target)
    lo = np.maximum(boxes.lo[0][good] + rho + margin, lower)  # strict right branches: x - rho > t
    hi = np.minimum(boxes.hi[0][good] - rho - margin, upper)  # float32 casting: margins on both sides
    feasible = np.all(lo <= hi, axis=1)
    result = RobustRegion(None, "infeasible", 0.0, "closed form", rho=rho, norm=norm, objective=objective,
                          iterations=1)
    if feasible.any():
        proj = np.clip(x0, lo[feasible], hi[feasible])
        dist = np.array([vector_norm(p - x0, objective) for p in proj])
        i = int(np.argmin(dist))
        result.x, result.distance, result.detail = proj[i], float(dist[i]), "converged"
    result.time = result.master_time = time.perf_counter() - start
    return contract(result, model, x0, target)
