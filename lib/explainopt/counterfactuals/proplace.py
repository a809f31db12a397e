"""PROPLACE (Jiang et al. 2023): provably robust and plausible counterfactuals for ReLU networks.

A counterfactual ``x'`` of a factual ``x0`` (predicted class 0) is sought that is

* **Delta-robust** (Definition 7): the interval abstraction of the network under the model shifts
  ``Delta`` (every weight and bias moved by at most ``delta``) gives ``x'`` a lower logit bound >= 0.
  At a fixed point this is one forward pass of :class:`~explainopt.encoders.IntervalNetwork`
  (:func:`~explainopt.encoders.delta_robust`); with ``x'`` a variable it is the exact MILP
  ``encode(IntervalNetwork(...))``.
* **plausible** (Definitions 9-10): inside the convex hull of ``x0`` and its ``k`` nearest Delta-robust
  training points predicted as the target class (:class:`RobustNeighbours`).
* **close**: minimal normalised l1 distance ``||x' - x0||_1 / d``.

Algorithm 1 (:func:`proplace`) alternates an *outer* MILP (eq. 5: nearest point of the hull valid, by a
logit margin, for every model collected in ``Delta'``, one encoded copy per model) and an *inner*
problem (eq. 6: the worst-case shifted model at the current ``x'``) until the worst case is still valid.
Every outer problem adds constraints to the previous one, yet most of its networks are slack at the
optimum: each outer MILP holds only the networks binding at the previous iterate and the new worst
case, and its solution is checked against the others by forward passes; a violated one is added and
the MILP solved again (:func:`_outer`). An optimum of this relaxation that satisfies every network is
an optimum of eq. 5, so the outer problems keep their optima while holding one or two networks.

Inner problem as a MILP (:func:`worst_case_model`). The paper states eq. 6 with the weights as
variables, a bilinear program. With the input ``x' >= 0`` fixed every layer's input ``h >= 0``, so
over the weight row ``w_j + d``, ``|d| <= delta``, the pre-activation ``(w_j + d) . h + b_j + e`` ranges
exactly over ``[(w_j - delta) . h + b_j - delta, (w_j + delta) . h + b_j + delta]``, and different rows
move independently. The worst case is therefore

    min z_out  s.t.  lo_k(h_k) <= z_k <= hi_k(h_k),  h_{k+1} = ReLU(z_k) (big-M),  h_0 = x',

linear in ``(h, z)`` apart from the ReLUs: a MILP over activation patterns, whose ReLUs are the
network encoder's big-M layer (:func:`~explainopt.encoders.networks.relu_layer`) with the interval
network's neuron bounds at ``x'`` (:meth:`~explainopt.encoders.IntervalNetwork.layer_bounds`). The
weights are recovered row by row from the optimal ``(h, z)``: the residual ``r_j = z_j - w_j . h - b_j``
with ``|r_j| <= delta (sum h + 1)`` is spread uniformly, ``d_j = e_j = r_j / (sum h + 1)``. The
recovered network is evaluated by an ordinary forward pass, so the worst case that Algorithm 1 uses is
a real member of Delta, never a bound. Interval bound propagation (IBP) only gives a lower bound of
the worst case: IBP lets each neuron of a later layer see its own worst-case version of the shared
activations below it.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import cvxpy as cp
import numpy as np
from sklearn.neighbors import KDTree

from .. import solvers
from ..encoders import IntervalNetwork, delta_robust, interval_lower, model_predict, network_layers
from ..encoders.networks import encode_layers, forward, lp_bounds, network_bounds, relu_layer, segment_points
from ..validation import check_matrix, class_one_factual
from .base import Counterfactual, contract
from .costs import LofScorer, l1, l1_distance


def _rows(X) -> np.ndarray:
    return np.atleast_2d(np.asarray(X, dtype=float))


def _solvers_of(results) -> tuple[str, str | None]:
    """The solvers that produced `results` (SolveResults), joined by "+", and those that refused a model."""
    used = sorted({r.solver for r in results})
    refused = sorted({r.fallback_from for r in results if r.fallback_from})
    return "+".join(used), "+".join(refused) or None


# ------------------------------------------------------------------------- inner problem (eq. 6)


@dataclass
class WorstCase:
    """The worst-case shifted network at x: its layers, its logit there (forward pass), the MILP
    objective, the interval lower bound (IBP) for comparison, and the solve's status, time and solver."""

    layers: list
    output: float
    milp_objective: float
    interval_lower: float
    status: str
    solve_time: float
    solver: str = ""
    fallback_from: str | None = None


def worst_case_model(model, x, *, delta: float, solver=None, time_limit=None) -> WorstCase:
    """Exact inner maximisation (eq. 6): the network in Delta with the lowest logit at ``x >= 0``.

    `model` is a network or its list of layers ``[(W, b), ...]``; ValueError for negative inputs.
    """
    interval = IntervalNetwork(model, delta=delta)
    layers = interval.base_layers
    x = np.asarray(x, float).ravel()
    bounds = interval.layer_bounds(x)
    h, cons, zs = x, [], []
    for k, (W, b) in enumerate(layers):
        z = cp.Variable(W.shape[0], name=f"z{k}")
        zs.append(z)
        cons.append(z >= (W - delta) @ h + b - delta)
        if k == len(layers) - 1:
            break
        lower, upper = bounds[k]
        cons += [z <= (W + delta) @ h + b + delta, z >= lower, z <= upper]
        h, layer_cons, _ = relu_layer(z, lower, upper, name=str(k))
        cons += layer_cons
    problem = cp.Problem(cp.Minimize(zs[-1][0]), cons)
    res = solvers.solve(problem, solver=solver, time_limit=time_limit)
    if not res.has_solution:
        raise RuntimeError(f"worst-case MILP failed: {res.status}")
    # Recover the shifted weights layer by layer from the activations of a consistent forward pass.
    shifted, hv = [], x
    for k, (W, b) in enumerate(layers):
        scale = hv.sum() + 1.0
        if k == len(layers) - 1:
            D = np.full_like(W, -delta)
            e = np.full_like(b, -delta)
        else:
            zk = np.clip(np.asarray(zs[k].value, float), W @ hv + b - delta * scale, W @ hv + b + delta * scale)
            t = np.clip((zk - W @ hv - b) / scale, -delta, delta)
            D, e = np.repeat(t[:, None], W.shape[1], axis=1), t
        shifted.append((W + D, b + e))
        hv = np.maximum((W + D) @ hv + b + e, 0)
    out = float(forward(shifted, x[None])[0])
    return WorstCase(shifted, out, float(res.objective), float(bounds[-1][0][0]), res.status, res.solve_time,
                     res.solver, res.fallback_from)


def brute_force_worst_case(model, x, *, delta: float, n_samples: int = 2000, random_state=0) -> float:
    """Lowest logit at x over random shifted networks (vertices of the weight box and uniform draws,
    alternately): an upper bound of the true worst case, for checking :func:`worst_case_model`."""
    interval = IntervalNetwork(model, delta=delta)
    rng = np.random.default_rng(random_state)
    x = np.asarray(x, float)[None]
    return min(float(forward(interval.sample(rng, vertex=bool(i % 2)), x)[0]) for i in range(n_samples))


def local_worst_case(model, x, *, delta: float, restarts: int = 10, steps: int = 200, lr: float = 0.01,
                     random_state: int = 0) -> float:
    """Lowest logit at x found by projected gradient descent on the weight shifts (the paper's
    non-convex bilinear inner problem attacked locally, from the box centre and random vertices): an
    upper bound of the true worst case, for checking :func:`worst_case_model` (needs torch)."""
    import torch  # an extra: only this check needs it

    layers = network_layers(model)
    gen = torch.Generator().manual_seed(random_state)
    xt = torch.as_tensor(np.asarray(x, float))
    best = np.inf
    for r in range(restarts):
        shifts = []
        for W, b in layers:
            for shape in (W.shape, b.shape):
                t = torch.zeros(shape, dtype=torch.float64) if r == 0 else \
                    delta * (2 * torch.randint(0, 2, shape, generator=gen).double() - 1)
                shifts.append(t.requires_grad_(True))
        opt = torch.optim.Adam(shifts, lr=lr * delta * 10)
        for _ in range(steps):
            h = xt
            for k, (W, b) in enumerate(layers):
                h = (torch.as_tensor(W) + shifts[2 * k]) @ h + torch.as_tensor(b) + shifts[2 * k + 1]
                if k < len(layers) - 1:
                    h = torch.relu(h)
            opt.zero_grad()
            h[0].backward()
            opt.step()
            with torch.no_grad():
                for t in shifts:
                    t.clamp_(-delta, delta)
        shifted = [(W + shifts[2 * k].detach().numpy(), b + shifts[2 * k + 1].detach().numpy())
                   for k, (W, b) in enumerate(layers)]
        best = min(best, float(forward(shifted, np.asarray(x, float)[None])[0]))
    return best


# ------------------------------------------------------------------- plausible region (Defs. 9-10)


class RobustNeighbours:
    """k Delta-robust nearest neighbours (Definition 9): a KD-tree (Euclidean) over the points of `X`
    that the model predicts as `target` and that pass the Delta-robustness test."""

    def __init__(self, model, X, *, delta: float, target: int = 1):
        X = _rows(X)
        pred = model_predict(model, X) == target
        robust = delta_robust(model, X, delta=delta) if target == 1 else np.ones(len(X), bool)
        self.points = X[pred & robust]
        self.n_predicted = int(pred.sum())
        if len(self.points) == 0:
            raise ValueError("no Delta-robust point of the target class in X")
        self.tree = KDTree(self.points)

    def query(self, x, k: int) -> np.ndarray:
        k = min(k, len(self.points))
        _, idx = self.tree.query(_rows(x), k=k)
        return self.points[idx[0]]


def plausible_vertices(x0, neighbours) -> np.ndarray:
    """Definition 10: vertices of the plausible region (the factual first, then its neighbours)."""
    return np.vstack([np.asarray(x0, float)[None], _rows(neighbours)])


# --------------------------------------------------------------------------- Algorithm 1


#: Interval lower bound of the logit required of a certified counterfactual (:func:`outer_problem`).
INTERVAL_MARGIN = 1e-4


@dataclass
class ProplaceResult(Counterfactual):
    """A PROPLACE counterfactual (fields of :class:`~.base.Counterfactual` first; ``solver`` names every
    solver of the outer and inner problems). detail: 'optimal' (Algorithm 1 converged), 'certified'
    (converged, then re-solved with the interval constraint to pass Definition 7), 'neighbour' (that
    re-solve failed numerically: the nearest Delta-robust vertex is returned), 'max_iter', or the
    failing solver status. distance: l1 (the paper reports it divided by the number of features:
    :func:`~.costs.l1_distance`); valid / delta_valid: re-checked with model_predict and IntervalNetwork;
    worst_case: the exact worst-case logit at x over Delta; interval_lower: the IBP bound; history: (x', worst-case logit, IBP lower bound) per iteration; outer_solves: MILPs solved for
    the outer problems (more than the iterations where a lazy outer problem took a network back)."""

    delta_valid: bool = False
    worst_case: float | None = None
    interval_lower: float | None = None
    iterations: int = 0
    outer_solves: int = 0
    outer_time: float = 0.0
    inner_time: float = 0.0
    lambdas: np.ndarray | None = None
    history: list = field(default_factory=list)


def _hull_bounds(layers, V, lo, hi, *, cached: bool, ball=None):
    """Big-M bounds of `layers` over the convex hull of the vertices `V` (:func:`lp_bounds`; layer 0 exact),
    intersected with the l1 `ball` ``(x0, radius)`` where given (:func:`_robust_ball`) and, for a network
    reused by every factual (`cached`), with its memoised bounds over the unit box
    (:func:`network_bounds`), which contains the hull for min-max scaled data."""
    unit = None
    if cached and lo.min() >= 0 and hi.max() <= 1:
        unit = network_bounds(layers, np.zeros(V.shape[1]), np.ones(V.shape[1]))
    return lp_bounds(layers, lo, hi, vertices=V, ball=ball, bounds=unit)


def _robust_ball(model, x0, V, *, delta: float, margin: float):
    """``(x0, r)``: the l1 ball around `x0` whose radius r is the distance of the nearest point of the hull
    of `V` known with an interval lower bound >= `margin` (Definition 5): on the segments from `x0` to the
    vertices (:func:`~explainopt.encoders.networks.segment_points`), or None without one. Such a point
    gives every network of Delta a logit >= `margin`, so it is feasible in every outer problem (eq. 5)
    of Algorithm 1: each of their optima lies in the ball, and big-M bounds over the hull and the ball
    keep them."""
    points = segment_points(x0, V, lambda X: interval_lower(model, X, delta=delta) >= margin)
    if not len(points):
        return None
    radius = float(np.abs(points - x0).sum(axis=1).min())
    return x0, radius + 1e-6 * max(1.0, radius)  # widened against the LP solver's tolerances


def outer_problem(models: list, x0, vertices, *, margin: float = 0.01, interval: IntervalNetwork | None = None,
                  interval_margin: float = INTERVAL_MARGIN, tighten: bool = True, hull_bounds: list | None = None,
                  ball=None, cutoff: float | None = None, sub_mips: bool = False, solver=None, time_limit=None):
    """Eq. 5: nearest point of the convex hull of `vertices` valid (logit >= margin) for every network
    in `models` (layers lists); optionally also Delta-robust by the exact interval MILP (lower bound
    >= `interval_margin`, a small margin against the solver's feasibility tolerance).

    Big-M bounds: LP bound tightening over the hull (:func:`_hull_bounds`; interval bounds over the
    vertices' box alone with ``tighten=False``), or `hull_bounds` where given (one entry per network of
    `models`, then one for `interval`; None entries are computed): they leave the feasible set, hence
    the optimum, unchanged. `ball` ``(x0, r)``: bounds computed over the hull and this l1 ball (which
    must contain the optimum, :func:`_robust_ball`) hold there alone, so x' is constrained to it.
    `cutoff`: the distance of a known feasible point (:func:`_incumbent`), an
    upper bound of the optimum given to the solver as an objective cutoff (:func:`_solver_options`); a
    solve that finds nothing below it is repeated without. `sub_mips`: the MILP solver's sub-MIP
    heuristics (:func:`_solver_options`). Neither changes the feasible set, hence the optimum.
    Returns (x', lambda, SolveResult) with x' None when no solution was found.
    """
    x0 = np.asarray(x0, float)
    V = _rows(vertices)
    lam = cp.Variable(len(V), nonneg=True, name="lambda")
    xp = V.T @ lam
    lo, hi = V.min(axis=0), V.max(axis=0)
    cons = [cp.sum(lam) == 1]
    networks, margins = list(models), [margin] * len(models)
    if interval is not None:
        if (lo < 0).any():
            raise ValueError("interval networks need non-negative inputs: the vertices must be >= 0")
        networks.append(interval_output_layers(interval))
        margins.append(interval_margin)
    given = list(hull_bounds or [])
    given += [None] * (len(networks) - len(given))
    for k, layers in enumerate(networks):
        bounds = given[k]
        if tighten and bounds is None:  # the first network and the interval network recur: memoised bounds
            bounds = _hull_bounds(layers, V, lo, hi, cached=k in (0, len(models)))
        bounds = bounds if tighten else None
        out, c, _, _ = encode_layers(layers, xp, lo, hi, bounds=bounds)
        cons += c + [out >= margins[k]]
    if ball is not None:  # big-M bounds computed over the hull and this ball hold there alone
        cons.append(cp.norm1(xp - ball[0]) <= ball[1])
    problem = cp.Problem(cp.Minimize(cp.norm1(xp - x0) / x0.size), cons)
    res = solvers.solve(problem, solver=solver, time_limit=time_limit,
                        options=_solver_options(solver, cutoff=cutoff, sub_mips=sub_mips))
    if cutoff is not None and not res.has_solution:  # nothing below the cutoff within the tolerances
        first = res
        res = solvers.solve(problem, solver=solver, time_limit=time_limit,
                            options=_solver_options(solver, sub_mips=sub_mips))
        res.solve_time += first.solve_time
    if not res.has_solution or lam.value is None:
        return None, None, res
    lv = np.clip(np.asarray(lam.value, float), 0, None)
    lv /= lv.sum()
    return V.T @ lv, lv, res


#: The MILP solvers' own names of the sub-MIP heuristics that ``sub_mips=False`` turns off.
SUB_MIPS = {"highs": {"mip_heuristic_run_rins": False, "mip_heuristic_run_rens": False}, "gurobi": {"RINS": 0}}
CUTOFF = {"highs": "objective_bound", "gurobi": "Cutoff"}


def _solver_options(solver, *, cutoff: float | None = None, sub_mips: bool = True) -> dict:
    """The MILP solver's own options for an objective `cutoff` (HiGHS ``objective_bound``, Gurobi ``Cutoff``:
    nodes whose bound exceeds it are pruned; widened by a relative 1e-6 so that an optimum equal to it is
    kept) and, with ``sub_mips=False``, without the sub-MIP heuristics RINS and RENS (:data:`SUB_MIPS`;
    on eq. 5 they took most of HiGHS's time, in sub-MIPs searching for incumbents). Other solvers get none."""
    name = solvers.choose_solver("milp", solver)
    options = {} if sub_mips else dict(SUB_MIPS.get(name, {}))
    if cutoff is not None and name in CUTOFF:
        options[CUTOFF[name]] = float(cutoff) + 1e-6 * max(1.0, abs(float(cutoff)))
    return options


def _incumbent(networks: list, margins: list, x0, V) -> float | None:
    """The least distance from `x0` of a point of the hull of `V` valid for every network of `networks`
    (layers lists, each with its margin) on the segments from `x0` to the vertices
    (:func:`~explainopt.encoders.networks.segment_points`): a feasible point of eq. 5, hence an upper
    bound of its optimum (None without one)."""
    points = segment_points(x0, V, lambda X: np.all([forward(layers, X) >= m for layers, m in zip(networks, margins)],
                                                    axis=0))
    return float(np.abs(points - x0).sum(axis=1).min() / V.shape[1]) if len(points) else None


def interval_output_layers(interval: IntervalNetwork) -> list:
    """The layers of `interval`'s doubled network with the lower bound of the logit as the only output."""
    last = len(interval.layers) - 1
    return [(W[:1], b[:1]) if k == last else (W, b) for k, (W, b) in enumerate(interval.layers)]


#: Logit shortfall below the margin that a solution of eq. 5 may show on a network left out of the MILP
#: (:func:`_outer`): the MILP solver's own feasibility tolerance allows as much on the networks it holds.
FEASIBILITY_TOL = 1e-7


#: Logit slack above the margin within which a network of eq. 5 counts as binding at a solution.
BINDING = 1e-3


def _outer(models, active, x0, V, *, margin, interval=None, tighten, lazy, hull_bounds, solver, time_limit,
           cutoff: bool = False, sub_mips: bool = False, ball=None):
    """Eq. 5 over every network of `models`, solved over the networks of `active` (indices, grown in place)
    alone as long as its solution violates none of the others (checked by forward passes): a relaxation
    whose optimum satisfies every constraint is the optimum. ``lazy=False``: every network at once.
    `hull_bounds` (a dict: index -> big-M bounds, -1 for `interval`) memoises :func:`_hull_bounds`.
    `cutoff`: each MILP gets the distance of the nearest feasible point known (:func:`_incumbent`) as an
    objective cutoff; `sub_mips`: see :func:`outer_problem`; `ball`: the big-M bounds are computed over
    the hull and this ball (:func:`_robust_ball`). Returns (x', lambda, [SolveResult, ...])."""
    solves = []
    lo, hi = V.min(axis=0), V.max(axis=0)
    for i in range(-1 if interval is not None else 0, len(models)):
        if tighten and i not in hull_bounds:
            layers = interval_output_layers(interval) if i < 0 else models[i]
            hull_bounds[i] = _hull_bounds(layers, V, lo, hi, cached=i <= 0, ball=ball)
    if not lazy:
        active[:] = range(len(models))
    while True:
        bounds = [hull_bounds.get(i) for i in active] + [hull_bounds.get(-1)]
        networks = [models[i] for i in active]
        best = None
        if cutoff:
            extra = [] if interval is None else [interval_output_layers(interval)]
            best = _incumbent(networks + extra, [margin] * len(networks) + [INTERVAL_MARGIN] * len(extra), x0, V)
        xp, lam, res = outer_problem(networks, x0, V, margin=margin, interval=interval, tighten=tighten,
                                     hull_bounds=bounds, ball=ball, cutoff=best, sub_mips=sub_mips, solver=solver,
                                     time_limit=time_limit)
        solves.append(res)
        if xp is None:
            return xp, lam, solves
        left = [i for i in range(len(models)) if i not in active]
        logits = np.array([forward(models[i], xp[None])[0] for i in left])
        if not left or logits.min() >= margin - FEASIBILITY_TOL:
            return xp, lam, solves
        active.append(left[int(np.argmin(logits))])


def proplace(model, x0, vertices, *, delta: float, target=None, margin: float = 0.01, max_iter: int = 30,
             certify: bool = True, tighten: bool = True, lazy: bool = True, ball: bool = True, cutoff: bool = True,
             sub_mips: bool = False, solver=None, time_limit=None) -> ProplaceResult:
    """Algorithm 1 of PROPLACE over the plausible region with the given `vertices` (factual first).

    Repeats outer (eq. 5) / inner (eq. 6, exact MILP) until the worst-case shifted model still gives
    class 1. The paper's Definition 7 test (interval lower bound >= 0) is looser than the true worst
    case; with ``certify`` a converged x' that fails it is re-solved once with the exact interval MILP
    as an extra constraint, so every returned counterfactual passes Definition 7.

    Options that change how the outer problems are solved, never their optimum: `tighten`, big-M
    bounds from LP bound tightening over the hull (once per network), with `ball` over the hull and the
    l1 ball around x0 that contains every outer optimum (:func:`_robust_ball`); `lazy`, each outer problem
    holds only the networks binding at the previous iterate and the new worst case, and takes back
    any other network its solution violates (:func:`_outer`); `cutoff`, the nearest point of the hull
    known valid for every network of an outer MILP (:func:`_incumbent`) bounds its optimum and is handed
    to the solver as an objective cutoff; ``sub_mips=False``, the outer MILPs are solved without the solver's sub-MIP heuristics
    (:data:`SUB_MIPS`). Among optima tied within the solver's gap these may lead the solver to another
    one, which Algorithm 1 then follows.

    The method searches class 1 (the paper's favourable class) in the plausible region (inputs in
    [0, 1]): `target` None or the class-1 label; a factual the network already predicts as class 1 is
    refused with a ValueError.

    Examples
    --------
    >>> from sklearn.neural_network import MLPClassifier
    >>> X = np.array([[0.1, 0.2], [0.2, 0.1], [0.8, 0.9], [0.9, 0.8]] * 10)
    >>> net = MLPClassifier((4,), max_iter=2000, random_state=0).fit(X, [0, 0, 1, 1] * 10)
    >>> ce = proplace(net, X[0], [X[0], X[2], X[3]], delta=0.01)
    >>> ce.status, ce.valid, ce.delta_valid
    ('optimal', True, True)
    """
    start = time.perf_counter()
    x0 = class_one_factual(model, x0, method="proplace", target=target, default=(0.0, 1.0), solver=solver,
                           time_limit=time_limit, families=("network",))
    V = check_matrix(vertices, "vertices", x0.size)
    models, active = [network_layers(model)], [0]
    result = ProplaceResult(None, "max_iter", 0.0, "")
    solves, hull_bounds = [], {}
    region = _robust_ball(model, x0, V, delta=delta, margin=margin) if ball and tighten else None
    options = dict(margin=margin, tighten=tighten, lazy=lazy, hull_bounds=hull_bounds, cutoff=cutoff,
                   sub_mips=sub_mips, ball=region, solver=solver, time_limit=time_limit)
    for it in range(1, max_iter + 1):
        xp, lam, outer = _outer(models, active, x0, V, **options)
        solves += outer
        result.outer_time += sum(r.solve_time for r in outer)
        result.outer_solves += len(outer)
        result.iterations = it
        if xp is None:
            result.detail = outer[-1].status
            break
        wc = worst_case_model(model, xp, delta=delta, solver=solver, time_limit=time_limit)
        solves.append(wc)
        result.inner_time += wc.solve_time
        result.history.append((xp, wc.output, wc.interval_lower))
        result.x, result.lambdas = xp, lam
        if wc.output >= 0:
            result.detail = "optimal"
            break
        models.append(wc.layers)
        if lazy:  # keep the networks binding at x' (the others are checked, and come back if violated)
            active[:] = [i for i in active if forward(models[i], xp[None])[0] <= margin + BINDING]
        active.append(len(models) - 1)
    if result.detail == "optimal" and certify and not delta_robust(model, result.x, delta=delta)[0]:
        xp, lam, outer = _outer(models, active, x0, V, interval=IntervalNetwork(model, delta=delta), **options)
        solves += outer
        result.outer_time += sum(r.solve_time for r in outer)
        result.outer_solves += len(outer)
        if xp is not None and delta_robust(model, xp, delta=delta)[0]:
            result.x, result.lambdas, result.detail = xp, lam, "certified"
        else:  # numerically borderline: fall back to the nearest Delta-robust vertex (a robust neighbour)
            ok = np.flatnonzero(delta_robust(model, V, delta=delta) & (model_predict(model, V) == 1))
            if ok.size:
                j = ok[np.argmin(np.abs(V[ok] - x0).sum(axis=1))]
                result.x, result.lambdas, result.detail = V[j], np.eye(len(V))[j], "neighbour"
    if result.x is not None:
        result.distance = l1(result.x, x0)
        result.delta_valid = bool(delta_robust(model, result.x, delta=delta)[0])
        result.interval_lower = float(interval_lower(model, result.x, delta=delta)[0])
        wc = worst_case_model(model, result.x, delta=delta, solver=solver)
        solves.append(wc)
        result.worst_case = wc.output
    result.solver, result.fallback_from = _solvers_of(solves)
    result.time = time.perf_counter() - start
    return contract(result, model, x0, 1)


# ------------------------------------------------------------------------------------ metrics


def evaluate(model, factuals, counterfactuals, *, delta: float, retrained=(), lof: LofScorer | None = None) -> dict:
    """Table 1 metrics over the found counterfactuals (rows of NaN = not found): validity, vDelta,
    retrained validity vr (mean over models and counterfactuals), normalised l1 and lof; percentages.
    vDelta is over the counterfactuals inside the [0, 1] domain, where the interval check is defined
    (RBR's reference code leaves it); ``outside``: the share of found counterfactuals outside it."""
    F, C = _rows(factuals), _rows(counterfactuals)
    found = ~np.isnan(C).any(axis=1)
    out = {"found": 100.0 * found.mean(), "n": int(len(F))}
    Cf = C[found]
    if not found.any():
        return out | {"validity": np.nan, "outside": np.nan, "vΔ": np.nan, "vr": np.nan, "l1": np.nan, "lof": np.nan}
    out["validity"] = 100.0 * (model_predict(model, Cf) == 1).mean()
    inside = np.all((Cf >= 0) & (Cf <= 1), axis=1)
    out["outside"] = 100.0 * (~inside).mean()
    out["vΔ"] = 100.0 * delta_robust(model, Cf[inside], delta=delta).mean() if inside.any() else np.nan
    out["vr"] = 100.0 * np.mean([(model_predict(m, Cf) == 1).mean() for m in retrained]) if len(retrained) else np.nan
    out["l1"] = float(np.mean([l1_distance(c, f) for c, f in zip(Cf, F[found])]))
    out["lof"] = float(np.mean(lof(Cf))) if lof is not None else np.nan
    return out


__all__ = [
    "ProplaceResult", "RobustNeighbours", "WorstCase", "brute_force_worst_case", "evaluate",
    "interval_output_layers", "local_worst_case", "outer_problem", "plausible_vertices", "proplace", "worst_case_model",
]
