"""The master problem of Algorithm 1 (MP, Maragno et al. 2024, eq. 6): the closest x to x0 whose shifted
copies ``x + s``, s in the scenario set Z, are all of the target class.

* :class:`MasterProblem`: the cvxpy model, one encoded copy of the model per scenario
  (``encode(model, x + s)``), for any solver and the l2 objective;
* :class:`PersistentMaster`: the same feasible set as one MILP kept alive in HiGHS or Gurobi across the
  iterations (:class:`explainopt.solvers.MatrixMILP`: a scenario adds columns and rows, nothing is rebuilt
  or recompiled); its copies of the model are written by :class:`TreeCopies` (Mišić's split rows of
  :func:`explainopt.encoders.trees.split_rows`, in the space of x) or :class:`NetworkCopies` (the ReLU
  big-M rows of :func:`explainopt.encoders.networks.relu_rows`, the encoder's own);
* :func:`linear_region`: a linear model needs no loop: one convex problem with the robust constraint
  of eq. (69).
"""

from __future__ import annotations

import math

import cvxpy as cp
import numpy as np

from ... import solvers
from ...encoders import encode, linear_weights, network_layers, tree_ensemble
from ...encoders.networks import propagate_bounds, relu_rows
from ...encoders.trees import split_keys, split_rows, walk
from ..nearest import distance
from .adversarial import compile_time, solve_bounded
from .boxes import TreeBoxes, tree_boxes
from .domain import TREE_DOMAIN_PAD
from .result import RobustRegion
from .sets import DUAL_ORD


class MasterProblem:
    """(MP), eq. (6): the closest x to x0 whose shifted copies x + s, s in Z, are all `target`.

    The encoders bound each copy's big-M constants by the domain box shifted by s (``lower + s``,
    ``upper + s``), so a tighter domain gives a tighter master problem (see
    :func:`~explainopt.counterfactuals.regions.robust_region`).
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
        res = solve_bounded(problem, solver=solver, time_limit=time_limit)
        return res, self.x.value, compile_time(problem)


class PersistentMaster:
    """(MP), eq. (6), as one MILP kept alive across the iterations: each scenario adds its copy of the
    model as new columns and rows, nothing is rebuilt or recompiled (:class:`MasterProblem` is the
    cvxpy model, for other solvers and the l2 objective). The same feasible set as
    :class:`MasterProblem`; `copies` (:class:`TreeCopies` or :class:`NetworkCopies`, by the model's
    family) writes each copy. objective_bound: each solve starts from the last solve's dual bound as a
    row (valid: Z only grows, so the optimum only grows).
    """

    def __init__(self, model, copies, x0, *, lower, upper, target, objective, margin, rho, norm, bound=math.inf,
                 objective_bound=False):
        self.model, self.x0, self.target, self.margin = model, x0, target, margin
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
        self.objective_bound = objective_bound
        self.tighten(bound)
        self.copies = copies(self, model, norm)
        self.cells = self.copies.cells  # the adverse cells one row excludes (l-inf trees), else None
        self.scenarios: list[np.ndarray] = []

    def add(self, s: np.ndarray, x_star=None) -> None:
        """Add scenario s to Z: one more copy of the model at ``x + s``; for a tree model and the l-inf
        box, given the master solution `x_star` the scenario was found for, the adverse cell of
        ``x_star + s`` is excluded instead (:meth:`TreeCopies.exclude_cell`)."""
        s = np.asarray(s, dtype=float)
        self.copies.add(s, x_star)
        self.scenarios.append(s)

    def tighten(self, bound: float) -> None:
        """Bound the distance by `bound`, an upper bound on the optimum for every Z (the distance of a
        robust point): one row, and the copies added from now on take their neuron bounds from the
        domain within ``x0 -+ bound`` and the l1 ball of that radius (the row implies both)."""
        if not bound < self.radius:
            return
        self.radius = bound
        self.m.add_row(self.distance, 1.0, upper=bound * (1 + 1e-9) + 1e-12)
        self.lower, self.upper = np.maximum(self.lower, self.x0 - bound), np.minimum(self.upper, self.x0 + bound)

    def predicts(self, cols, coefs, constant, threshold, inclusive) -> None:
        """``constant + coefs @ v[cols]`` is past the decision threshold towards the target
        (:meth:`explainopt.encoders.Encoding.predicts`)."""
        if self.target == 1:
            self.m.add_row(cols, coefs, lower=threshold - constant + (0.0 if inclusive else self.margin))
        else:
            self.m.add_row(cols, coefs, upper=threshold - constant - self.margin)

    def solve(self, *, solver=None, time_limit=None):
        """(result, x, compile time = 0: there is no modelling layer). A licence too small for the
        model moves it to HiGHS (:meth:`explainopt.solvers.MatrixMILP.solve`, ``fallback_from``)."""
        if self.objective_bound and self.bound is not None:  # Z only grows, so the optimum only grows
            self.m.add_row(self.distance, 1.0, lower=self.bound)
        res = self.m.solve(solver=solver, time_limit=time_limit)
        if res.status == solvers.OPTIMAL:
            self.bound = res.objective if res.dual_bound is None else min(res.objective, res.dual_bound)
        return res, None if res.values is None else res.values[self.x], 0.0


class TreeCopies:
    """The copies of a tree model in a :class:`PersistentMaster`: Mišić's split formulation (the rows of
    :func:`explainopt.encoders.trees.split_rows`) written in the space of x. Copy ``s``'s split
    ``x_f + s_f <= t`` is ``x_f <= t - s_f``, so every copy whose shifted threshold coincides shares one
    split binary, and the ordering chain of eq. (2f) runs through the shifted thresholds of all copies
    (valid: the split margins make the two sides of each binary disjoint, so the chain only states what
    the margins imply). The margins and the reachable leaves of each copy are the encoder's own (its box
    shifted by s); big-M from the box. With the l-inf box, an adverse cell is excluded by one row instead
    (:meth:`exclude_cell`)."""

    def __init__(self, master: PersistentMaster, model, norm: str):
        self.master = master
        self.ensemble = tree_ensemble(model)
        self.splits: dict = {}  # (feature, shifted threshold) -> (column, margin)
        self.chain: dict = {}  # feature -> sorted [(shifted threshold, column)]
        self.cells = tree_boxes(model) if norm == "linf" else None
        n = len(master.x0)
        keys, _, _, eps = split_keys(walk(self.ensemble.trees, {}, np.full(n, -np.inf), np.full(n, np.inf)))
        self.margins = dict(zip(keys, eps))  # the encoder's margin of every split of the model

    def add(self, s, x_star=None) -> None:
        if self.cells is not None and x_star is not None:
            self.exclude_cell(np.asarray(x_star, dtype=float) + s)
        else:
            self.add_copy(s)

    def exclude_cell(self, point) -> None:
        """The cut "the box ``x + S`` misses the adverse cell C of `point`" (l-inf sets only):
        ``C = {y : lo < y <= hi}`` is adverse everywhere, so every robust x has some feature f with
        ``x_f + rho <= lo_f`` or ``x_f - rho > hi_f``. One row over the split binaries of the copies
        ``s_f = +rho`` at ``lo_f`` and ``s_f = -rho`` at ``hi_f`` (with the encoder's margins, as those
        copies' splits would have them): ``sum_f v(lo_f - rho) + (1 - v(hi_f + rho)) >= 1``. It
        removes every x whose box meets C, where the copy of one scenario removes only those x whose
        point ``x + s`` lies in C. C is first widened by dropping every tree whose leaf is not needed
        to keep it adverse (:func:`adverse_core`)."""
        master = self.master
        lo, hi = adverse_core(self.cells, point, master.target)
        cols, coefs, rhs = [], [], 1.0
        for f in range(len(point)):
            for t, left in ((lo[f], True), (hi[f], False)):
                if not np.isfinite(t):
                    continue
                theta = t - master.rho if left else t + master.rho
                eps = self.margins.get((f, t), TREE_DOMAIN_PAD)
                if theta - eps < master.lower[f] if left else theta + eps > master.upper[f]:
                    continue  # the box of x cannot pass C on this side within the domain
                if (theta - eps >= master.upper[f]) if left else (theta + eps <= master.lower[f]):
                    return  # every x of the domain passes C on this side: C is out of reach
                cols.append(self.split(f, theta, eps))
                coefs.append(1.0 if left else -1.0)
                rhs -= 0.0 if left else 1.0
        master.m.add_row(cols, coefs, lower=rhs)

    def split(self, f: int, theta: float, eps: float) -> int:
        """The binary of ``x_f <= theta - eps`` (1) or ``x_f >= theta + eps`` (0), shared by all copies.
        (Linking x_f to its whole chain by the convex hull of the intervals, one row per feature, instead
        of big-M rows per binary was measured slower: banknote RF10 l-inf 4.9 vs 2.9 s, l2 18 vs 7.8 s.)"""
        m = self.master.m
        col, known = self.splits.get((f, theta), (None, -1.0))
        if col is None:
            col = int(m.add_columns(1, upper=1.0, integer=True)[0])
            chain = self.chain.setdefault(f, [])
            k = int(np.searchsorted([c[0] for c in chain], theta))
            if k > 0:  # (2f): x_f below a lower shifted threshold is below this one
                m.add_row([chain[k - 1][1], col], [1, -1], upper=0.0)
            if k < len(chain):
                m.add_row([col, chain[k][1]], [1, -1], upper=0.0)
            chain.insert(k, (theta, col))
        if eps > known:  # margins of copies that share the binary: the largest holds for all
            self.splits[(f, theta)] = (col, eps)
            lo, hi = self.master.lower[f], self.master.upper[f]  # big-M from the domain box
            m.add_row([self.master.x[f], col], [1, hi - theta + eps], upper=hi)
            m.add_row([self.master.x[f], col], [1, theta + eps - lo], lower=theta + eps)
        return col

    def add_copy(self, s) -> None:
        """Copy s: leaf weights and the rows (2b)-(2d) of its reachable part, over the shared binaries."""
        master, ens = self.master, self.ensemble
        st = walk(ens.trees, {}, master.lower + s, master.upper + s)  # the encoder's reachable part of copy s
        rows = split_rows(st, len(ens.trees))
        y = master.m.add_columns(len(st.leaves), upper=1.0)
        one_leaf = rows.one_leaf
        for t in range(one_leaf.shape[0]):  # (2b) one leaf per tree
            master.m.add_row(y[one_leaf.indices[one_leaf.indptr[t]:one_leaf.indptr[t + 1]]], 1.0, lower=1.0, upper=1.0)
        for k in range(len(st.splits)):  # (2c), (2d)
            left, right, key = rows.node(k)
            f = int(rows.feat[key])
            v = self.split(f, rows.thr[key] - s[f], rows.eps[key])
            master.m.add_row(np.r_[y[left], v], np.r_[np.ones(len(left)), -1.0], upper=0.0)
            master.m.add_row(np.r_[y[right], v], np.r_[np.ones(len(right)), 1.0], upper=1.0)
        values = ens.scale * np.array([leaf[2] for leaf in st.leaves])
        master.predicts(y, values, ens.constant, ens.threshold, ens.inclusive)


class NetworkCopies:
    """The copies of a ReLU network in a :class:`PersistentMaster`: the big-M rows of
    :func:`explainopt.encoders.networks.relu_rows` layer by layer, each copy's neuron bounds from interval
    propagation over the domain shifted by s (:meth:`bounds`)."""

    cells = None

    def __init__(self, master: PersistentMaster, model, norm: str):
        self.master = master
        self.layers = network_layers(model)

    def add(self, s, x_star=None) -> None:
        master = self.master
        bounds = self.bounds(s)
        prev, shift = master.x, s  # the layer's input columns and its constant part (x + s)
        for k, (W, b) in enumerate(self.layers[:-1]):
            l, u = bounds[k]
            b = b + W @ shift
            prev, shift = relu_rows(l, u).to_matrix(master.m, prev, W, b), np.zeros(len(b))
        W, b = self.layers[-1]
        master.predicts(prev, W[0], float(b[0] + W[0] @ shift), 0.0, False)

    def bounds(self, s) -> list:
        """Pre-activation bounds of copy s: interval propagation over the domain shifted by s and, with
        the l1 objective and an upper bound r on the optimum, over the l1 ball ``||x - x0||_1 <= r``
        (``W_j (x0 + s) + b_j -+ r max_k |W_jk|`` in the first layer), propagated on."""
        master = self.master
        bounds = propagate_bounds(self.layers, master.lower + s, master.upper + s)
        if master.objective != "l1" or not np.isfinite(master.radius):
            return bounds
        W, b = self.layers[0]
        centre, half = W @ (master.x0 + s) + b, master.radius * np.abs(W).max(axis=1)
        l, u = np.maximum(bounds[0][0], centre - half), np.minimum(bounds[0][1], centre + half)
        tighter = [(l, u)] + propagate_bounds(self.layers[1:], np.maximum(l, 0), np.maximum(u, 0))
        return [(np.maximum(a, c), np.minimum(b_, d)) for (a, b_), (c, d) in zip(bounds, tighter)]


def adverse_core(boxes: TreeBoxes, point, target: int) -> tuple[np.ndarray, np.ndarray]:
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
        bound = boxes.ensemble.from_leaf_sum(np.where(keep, chosen, worst).sum())
        if not boxes.adverse(bound, target):
            keep[t] = True
    cell_lo, cell_hi = np.full(len(point), -np.inf), np.full(len(point), np.inf)
    for t in np.flatnonzero(keep):
        cell_lo = np.maximum(cell_lo, boxes.lo[t][leaves[t]])
        cell_hi = np.minimum(cell_hi, boxes.hi[t][leaves[t]])
    return cell_lo, cell_hi


def linear_region(model, x0, *, rho, norm, target, lower, upper, objective, margin, solver) -> RobustRegion:
    """Linear models: one convex problem with the robust constraint of eq. (69), no loop (an
    unbounded side of the domain is simply left out)."""
    beta, beta0 = linear_weights(model)
    sign = 1.0 if target == 1 else -1.0
    x = cp.Variable(len(x0))
    robust_score = sign * (beta @ x + beta0) - rho * np.linalg.norm(beta, ord=DUAL_ORD[norm])
    box = [x[j] >= lower[j] for j in np.flatnonzero(np.isfinite(lower))]
    box += [x[j] <= upper[j] for j in np.flatnonzero(np.isfinite(upper))]
    problem = cp.Problem(cp.Minimize(distance(x - x0, objective)), box + [robust_score >= margin])
    res = solve_bounded(problem, solver=solver, time_limit=None)
    ok = res.status == solvers.OPTIMAL
    return RobustRegion(
        np.asarray(x.value) if ok else None,
        "converged" if ok else ("infeasible" if res.status == solvers.INFEASIBLE else "no_solution"),
        res.solve_time, res.solver, fallback_from=res.fallback_from, rho=rho, norm=norm, objective=objective,
        iterations=0, distance=res.objective if ok else math.nan, master_time=res.solve_time,
        compile_time=compile_time(problem), domain=(lower, upper),
    )
