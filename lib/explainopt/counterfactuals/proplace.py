"""PROPLACE (Jiang et al. 2023): provably robust and plausible counterfactuals for ReLU networks.

A counterfactual ``x'`` of a factual ``x`` (predicted class 0) is sought that is

* **Delta-robust** (Definition 7): the interval abstraction of the network under the model shifts
  ``Delta`` (every weight and bias moved by at most ``delta``) gives ``x'`` a lower logit bound >= 0.
  At a fixed point this is one forward pass of :class:`~explainopt.encoders.IntervalNetwork`
  (:func:`delta_robust`); with ``x'`` a variable it is the exact MILP ``encode(IntervalNetwork(...))``.
* **plausible** (Definitions 9-10): inside the convex hull of ``x`` and its ``k`` nearest Delta-robust
  training points predicted as the target class (:class:`RobustNeighbours`).
* **close**: minimal normalised l1 distance ``||x' - x||_1 / d``.

Algorithm 1 (:func:`proplace`) alternates an *outer* MILP (eq. 5: nearest point of the hull valid, by a
logit margin, for every model collected in ``Delta'``, one encoded copy per model) and an *inner*
problem (eq. 6: the worst-case shifted model at the current ``x'``) until the worst case is still valid.

Inner problem as a MILP (:func:`worst_case_model`). The paper states eq. 6 with the weights as
variables, a bilinear program. With the input ``x' >= 0`` fixed every layer's input ``h >= 0``, so
over the weight row ``w_j + d``, ``|d| <= delta``, the pre-activation ``(w_j + d) . h + b_j + e`` ranges
exactly over ``[(w_j - delta) . h + b_j - delta, (w_j + delta) . h + b_j + delta]``, and different rows
move independently. The worst case is therefore

    min z_out  s.t.  lo_k(h_k) <= z_k <= hi_k(h_k),  h_{k+1} = ReLU(z_k) (big-M),  h_0 = x',

linear in ``(h, z)`` apart from the ReLUs: a MILP over activation patterns. Its big-M bounds are the
interval network's neuron bounds. The weights are recovered row by row from the optimal ``(h, z)``: the
residual ``r_j = z_j - w_j . h - b_j`` with ``|r_j| <= delta (sum h + 1)`` is spread uniformly,
``d_j = e_j = r_j / (sum h + 1)``. The recovered network is evaluated by an ordinary forward pass, so the
worst case that Algorithm 1 uses is a real member of Delta, never a bound. Interval bound propagation
(IBP) only gives a lower bound of the worst case: IBP lets each neuron of a later layer see its own
worst-case version of the shared activations below it.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import cvxpy as cp
import numpy as np
import pandas as pd
from sklearn.neighbors import KDTree, LocalOutlierFactor

from .. import solvers
from ..encoders import IntervalNetwork, encode, model_output, model_predict, network_layers
from ..encoders.networks import encode_layers, forward, propagate_bounds

# Per-dataset delta and k of the authors' code (PROTOCOLS.md, chapter 4).
DELTAS = {"carla/adult": 0.035, "carla/compas": 0.025, "carla/give_me_some_credit": 0.045, "carla/heloc": 0.025}
K_NEIGHBOURS = {"carla/heloc": 23}  # 20 elsewhere


def as_layers(model_or_layers) -> list[tuple[np.ndarray, np.ndarray]]:
    """Layers ``[(W, b), ...]`` of a network, or the list itself."""
    if isinstance(model_or_layers, list):
        return model_or_layers
    return network_layers(model_or_layers)


def _rows(X) -> np.ndarray:
    return np.atleast_2d(np.asarray(X, dtype=float))


# ----------------------------------------------------------------------- Delta-robustness test


def interval_lower(model, X, delta: float) -> np.ndarray:
    """Lower bound of the logit over all shifted networks (interval abstraction, Definition 5)."""
    return IntervalNetwork(model, delta).bounds(_rows(X))[0]


def delta_robust(model, X, delta: float) -> np.ndarray:
    """Definition 7: Delta-robust for class 1 iff the interval lower bound is >= 0 (sound test)."""
    return interval_lower(model, X, delta) >= 0


def interval_layer_bounds(layers, x, delta: float) -> list[tuple[np.ndarray, np.ndarray]]:
    """Bounds ``(l, u)`` of every layer's pre-activation over all shifted networks at the point x >= 0."""
    lo = hi = np.asarray(x, float)
    bounds = []
    for k, (W, b) in enumerate(layers):
        Wl, Wu = W - delta, W + delta  # inputs lo, hi >= 0
        l = np.maximum(Wl, 0) @ lo + np.minimum(Wl, 0) @ hi + b - delta
        u = np.maximum(Wu, 0) @ hi + np.minimum(Wu, 0) @ lo + b + delta
        bounds.append((l, u))
        lo, hi = np.maximum(l, 0), np.maximum(u, 0)
    return bounds


# ------------------------------------------------------------------------- inner problem (eq. 6)


@dataclass
class WorstCase:
    """The worst-case shifted network at x: its layers, its logit there (forward pass), the MILP
    objective, the interval lower bound (IBP) for comparison, and the solve's status and time."""

    layers: list
    output: float
    milp_objective: float
    interval_lower: float
    status: str
    solve_time: float


def worst_case_model(model, x, delta: float, *, solver=None, time_limit=None) -> WorstCase:
    """Exact inner maximisation (eq. 6): the network in Delta with the lowest logit at ``x >= 0``."""
    layers = as_layers(model)
    x = np.asarray(x, float).ravel()
    if (x < 0).any():
        raise ValueError("the worst-case MILP needs a non-negative input (min-max scale the data)")
    bounds = interval_layer_bounds(layers, x, delta)
    ibp = float(bounds[-1][0][0])
    h, cons, hs, zs = x, [], [], []
    for k, (W, b) in enumerate(layers):
        l, u = bounds[k]
        z = cp.Variable(W.shape[0], name=f"z{k}")
        if k == len(layers) - 1:
            cons.append(z >= (W - delta) @ h + b - delta)
            objective = z[0]
            zs.append(z)
            break
        cons += [z >= (W - delta) @ h + b - delta, z <= (W + delta) @ h + b + delta, z >= l, z <= u]
        hn = cp.Variable(W.shape[0], nonneg=True, name=f"h{k}")
        off, on = np.flatnonzero(u <= 0), np.flatnonzero(l >= 0)
        unstable = np.flatnonzero((l < 0) & (u > 0))
        if off.size:
            cons.append(hn[off] == 0)
        if on.size:
            cons.append(hn[on] == z[on])
        if unstable.size:
            s = cp.Variable(unstable.size, boolean=True, name=f"s{k}")
            zu = z[unstable]
            cons += [hn[unstable] >= zu, hn[unstable] <= zu - cp.multiply(l[unstable], 1 - s),
                     hn[unstable] <= cp.multiply(u[unstable], s)]
        hs.append(hn)
        zs.append(z)
        h = hn
    problem = cp.Problem(cp.Minimize(objective), cons)
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
    return WorstCase(shifted, out, float(res.objective), ibp, res.status, res.solve_time)


def brute_force_worst_case(model, x, delta: float, *, n_samples: int = 2000, seed: int = 0) -> float:
    """Lowest logit at x over random shifted networks (vertices of the weight box and uniform draws):
    an upper bound of the true worst case, for checking :func:`worst_case_model`."""
    layers = as_layers(model)
    rng = np.random.default_rng(seed)
    x = np.asarray(x, float)[None]
    best = np.inf
    for i in range(n_samples):
        pick = (lambda s: rng.choice([-delta, delta], s)) if i % 2 else (lambda s: rng.uniform(-delta, delta, s))
        shifted = [(W + pick(W.shape), b + pick(b.shape)) for W, b in layers]
        best = min(best, float(forward(shifted, x)[0]))
    return best


def local_worst_case(model, x, delta: float, *, restarts: int = 10, steps: int = 200, lr: float = 0.01,
                     seed: int = 0) -> float:
    """Lowest logit at x found by projected gradient descent on the weight shifts (the paper's
    non-convex bilinear inner problem attacked locally, from the box centre and random vertices): an
    upper bound of the true worst case, for checking :func:`worst_case_model`."""
    import torch

    layers = as_layers(model)
    gen = torch.Generator().manual_seed(seed)
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

    def __init__(self, model, X, delta: float, target: int = 1):
        X = _rows(X)
        pred = model_predict(model, X) == target
        robust = delta_robust(model, X, delta) if target == 1 else np.ones(len(X), bool)
        self.points = X[pred & robust]
        self.n_predicted = int(pred.sum())
        if len(self.points) == 0:
            raise ValueError("no Delta-robust point of the target class in X")
        self.tree = KDTree(self.points)

    def query(self, x, k: int) -> np.ndarray:
        k = min(k, len(self.points))
        _, idx = self.tree.query(_rows(x), k=k)
        return self.points[idx[0]]


def plausible_vertices(x, neighbours) -> np.ndarray:
    """Definition 10: vertices of the plausible region (the factual first, then its neighbours)."""
    return np.vstack([np.asarray(x, float)[None], _rows(neighbours)])


# --------------------------------------------------------------------------- Algorithm 1


@dataclass
class ProplaceResult:
    """x: the counterfactual; distance: normalised l1; status: 'optimal' (Algorithm 1 converged),
    'certified' (converged, then re-solved with the interval constraint to pass Definition 7),
    'neighbour' (that re-solve failed numerically: the nearest Delta-robust vertex is returned),
    'max_iter', or the failing solver status. valid / delta_valid: re-checked with model_predict and
    IntervalNetwork. worst_case: the exact worst-case logit at x over Delta; interval_lower: IBP bound."""

    x: np.ndarray | None
    distance: float | None
    status: str
    valid: bool = False
    delta_valid: bool = False
    worst_case: float | None = None
    interval_lower: float | None = None
    iterations: int = 0
    outer_time: float = 0.0
    inner_time: float = 0.0
    wall_time: float = 0.0
    lambdas: np.ndarray | None = None
    history: list = field(default_factory=list)  # (x', worst-case logit, IBP lower) per iteration


def outer_problem(models: list, x, vertices, *, margin: float = 0.01, interval: IntervalNetwork | None = None,
                  interval_margin: float = 1e-4, solver=None, time_limit=None):
    """Eq. 5: nearest point of the convex hull of `vertices` valid (logit >= margin) for every network
    in `models` (layers lists); optionally also Delta-robust by the exact interval MILP (lower bound
    >= `interval_margin`, a small margin against the solver's feasibility tolerance). Returns
    (x', lambda, SolveResult) with x' None when no solution was found."""
    x = np.asarray(x, float)
    V = _rows(vertices)
    lam = cp.Variable(len(V), nonneg=True, name="lambda")
    xp = V.T @ lam
    lo, hi = V.min(axis=0), V.max(axis=0)
    cons = [cp.sum(lam) == 1]
    for layers in models:
        out, c, _, _ = encode_layers(layers, xp, lo, hi)
        cons += c + [out >= margin]
    if interval is not None:
        enc = encode(interval, xp, lower=lo, upper=hi)
        cons += enc.constraints + [enc.output >= interval_margin]
    problem = cp.Problem(cp.Minimize(cp.norm1(xp - x) / x.size), cons)
    res = solvers.solve(problem, solver=solver, time_limit=time_limit)
    if not res.has_solution or lam.value is None:
        return None, None, res
    lv = np.clip(np.asarray(lam.value, float), 0, None)
    lv /= lv.sum()
    return V.T @ lv, lv, res


def proplace(model, x, vertices, delta: float, *, margin: float = 0.01, max_iter: int = 30, certify: bool = True,
             solver=None, time_limit=None) -> ProplaceResult:
    """Algorithm 1 of PROPLACE over the plausible region with the given `vertices` (factual first).

    Repeats outer (eq. 5) / inner (eq. 6, exact MILP) until the worst-case shifted model still gives
    class 1. The paper's Definition 7 test (interval lower bound >= 0) is looser than the true worst
    case; with ``certify`` a converged x' that fails it is re-solved once with the exact interval MILP
    as an extra constraint, so every returned counterfactual passes Definition 7.
    """
    start = time.perf_counter()
    x = np.asarray(x, float).ravel()
    models = [as_layers(model)]
    result = ProplaceResult(None, None, "max_iter")
    for it in range(1, max_iter + 1):
        xp, lam, res = outer_problem(models, x, vertices, margin=margin, solver=solver, time_limit=time_limit)
        result.outer_time += res.solve_time
        result.iterations = it
        if xp is None:
            result.status = res.status
            break
        wc = worst_case_model(model, xp, delta, solver=solver, time_limit=time_limit)
        result.inner_time += wc.solve_time
        result.history.append((xp, wc.output, wc.interval_lower))
        result.x, result.lambdas = xp, lam
        if wc.output >= 0:
            result.status = "optimal"
            break
        models.append(wc.layers)
    if result.status == "optimal" and certify and not delta_robust(model, result.x, delta)[0]:
        xp, lam, res = outer_problem(models, x, vertices, margin=margin, interval=IntervalNetwork(model, delta),
                                     solver=solver, time_limit=time_limit)
        result.outer_time += res.solve_time
        if xp is not None and delta_robust(model, xp, delta)[0]:
            result.x, result.lambdas, result.status = xp, lam, "certified"
        else:  # numerically borderline: fall back to the nearest Delta-robust vertex (a robust neighbour)
            V = _rows(vertices)
            ok = np.flatnonzero(delta_robust(model, V, delta) & (model_predict(model, V) == 1))
            if ok.size:
                j = ok[np.argmin(np.abs(V[ok] - x).sum(axis=1))]
                result.x, result.lambdas, result.status = V[j], np.eye(len(V))[j], "neighbour"
    if result.x is not None:
        result.distance = l1_distance(result.x, x)
        result.valid = bool(model_predict(model, result.x[None])[0] == 1)
        result.delta_valid = bool(delta_robust(model, result.x, delta)[0])
        result.interval_lower = float(interval_lower(model, result.x, delta)[0])
        result.worst_case = worst_case_model(model, result.x, delta, solver=solver).output
    result.wall_time = time.perf_counter() - start
    return result


# ------------------------------------------------------------------------------------ metrics


def l1_distance(xp, x) -> float:
    """Normalised l1: sum |x' - x| / d."""
    xp, x = np.asarray(xp, float).ravel(), np.asarray(x, float).ravel()
    return float(np.abs(xp - x).sum() / x.size)


class LofScorer:
    """10-LOF of counterfactuals with respect to the target-class training points (novelty=True):
    about 1 for inliers, larger (above ~1.5) for outliers."""

    def __init__(self, X_target, n_neighbors: int = 10):
        self.lof = LocalOutlierFactor(n_neighbors=n_neighbors, novelty=True).fit(_rows(X_target))

    def __call__(self, X) -> np.ndarray:
        return -self.lof.score_samples(_rows(X))


def evaluate(model, factuals, counterfactuals, delta: float, retrained=(), lof: LofScorer | None = None) -> dict:
    """Table 1 metrics over the found counterfactuals (rows of NaN = not found): validity, vDelta,
    retrained validity vr (mean over models and counterfactuals), normalised l1 and lof; percentages."""
    F, C = _rows(factuals), _rows(counterfactuals)
    found = ~np.isnan(C).any(axis=1)
    out = {"found": 100.0 * found.mean(), "n": int(len(F))}
    Cf = C[found]
    if not found.any():
        return out | {"validity": np.nan, "vΔ": np.nan, "vr": np.nan, "l1": np.nan, "lof": np.nan}
    out["validity"] = 100.0 * (model_predict(model, Cf) == 1).mean()
    out["vΔ"] = 100.0 * delta_robust(model, Cf, delta).mean()
    out["vr"] = 100.0 * np.mean([(model_predict(m, Cf) == 1).mean() for m in retrained]) if len(retrained) else np.nan
    out["l1"] = float(np.mean(np.abs(Cf - F[found]).sum(axis=1) / F.shape[1]))
    out["lof"] = float(np.mean(lof(Cf))) if lof is not None else np.nan
    return out


# -------------------------------------------------------------------- protocol: data and networks


def protocol_split(X, y, seed: int = 1):
    """The authors' split: shuffle with numpy `seed`, D1 = the first n/2 - 1 rows, D2 = the rest; each
    half 80/20 stratified (random_state 0). Returns dict with X1, y1, X1_test, y1_test, X2, y2."""
    from sklearn.model_selection import train_test_split

    X, y = np.asarray(X, float), np.asarray(y, int)
    idx = np.random.default_rng(seed).permutation(len(X)) if seed is not None else np.arange(len(X))
    half = len(X) // 2 - 1
    out = {}
    for name, part in (("1", idx[:half]), ("2", idx[half:])):
        Xa, Xb, ya, yb = train_test_split(X[part], y[part], test_size=0.2, stratify=y[part], random_state=0)
        out |= {f"X{name}": Xa, f"y{name}": ya, f"X{name}_test": Xb, f"y{name}_test": yb}
    return out


def train_network(X, y, *, width: int, epochs: int, seed: int, lr: float = 0.01, batch_size: int = 32,
                  weight_decay: float = 1e-4):
    """Two hidden ReLU layers of equal width, logit output (sigmoid in the loss), BCE + 1e-4 ||theta||^2,
    Adam; as in the authors' code. Returns a torch nn.Sequential in float64 (eval mode)."""
    import torch
    from torch import nn

    torch.manual_seed(seed)
    X = torch.as_tensor(np.asarray(X, np.float32))
    y = torch.as_tensor(np.asarray(y, np.float32))
    d = X.shape[1]
    net = nn.Sequential(nn.Linear(d, width), nn.ReLU(), nn.Linear(width, width), nn.ReLU(), nn.Linear(width, 1))
    opt = torch.optim.Adam(net.parameters(), lr=lr)
    loss_fn = nn.BCEWithLogitsLoss()
    gen = torch.Generator().manual_seed(seed)
    for _ in range(epochs):
        perm = torch.randperm(len(X), generator=gen)
        for i in range(0, len(X), batch_size):
            b = perm[i:i + batch_size]
            loss = loss_fn(net(X[b])[:, 0], y[b]) + weight_decay * sum((p ** 2).sum() for p in net.parameters())
            opt.zero_grad()
            loss.backward()
            opt.step()
    return net.double().eval()


# ----------------------------------------------------------------------- the chapter's experiment

# Network hyperparameters of the authors' code (width, epochs, torch seed) and MILP-R's own delta_target,
# RobX's tau (PROTOCOLS.md, chapter 4).
NETWORKS = {"carla/adult": (10, 20, 5), "carla/compas": (20, 50, 101), "carla/give_me_some_credit": (20, 3, 0),
            "carla/heloc": (20, 50, 101)}
MILP_R_DELTA = {"carla/adult": 0.05, "carla/compas": 0.03, "carla/give_me_some_credit": 0.08, "carla/heloc": 0.04}
ROBX_TAU = {"carla/give_me_some_credit": 0.6}
_MODELS: dict = {}


def prepare(dataset: str, epochs: int | None = None, n_both: int = 10, n_loo: int = 10, cache_dir=None) -> dict:
    """Split, model and retrained models of one dataset (protocol notes; `epochs` overrides the
    authors' epochs for every network). Memoised in the process and cached on disk."""
    from ..experiments import cached_call

    key = (dataset, epochs, n_both, n_loo)
    if key not in _MODELS:
        _MODELS[key] = cached_call(_prepare, dict(dataset=dataset, epochs=epochs, n_both=n_both, n_loo=n_loo), cache_dir)
    return _MODELS[key]


def _prepare(dataset: str, epochs: int | None, n_both: int, n_loo: int) -> dict:
    import torch

    from ..datasets import load_dataset

    torch.set_num_threads(1)
    ds = load_dataset(dataset).scaled()
    X, y = ds.X.to_numpy(float), np.asarray(ds.y, int)
    split = protocol_split(X, y)
    width, ep, seed = NETWORKS[dataset]
    ep = ep if epochs is None else epochs
    rwidth = 50 if dataset == "carla/compas" else width  # the authors' quirk: compas retrained with width 50
    t0 = time.perf_counter()
    model = train_network(split["X1"], split["y1"], width=width, epochs=ep, seed=seed)
    both_X, both_y = np.vstack([split["X1"], split["X2"]]), np.r_[split["y1"], split["y2"]]
    retrained = [train_network(both_X, both_y, width=rwidth, epochs=ep, seed=s) for s in range(101, 101 + n_both)]
    for s in range(3, 3 + n_loo):
        keep = np.random.default_rng(s).permutation(len(split["X1"]))[: int(round(0.99 * len(split["X1"])))]
        retrained.append(train_network(split["X1"][keep], split["y1"][keep], width=rwidth, epochs=ep, seed=s))
    return dict(split=split, model=model, retrained=retrained, width=width, epochs=ep, train_time=time.perf_counter() - t0,
                accuracy=float((model_predict(model, split["X1_test"]) == split["y1_test"]).mean()),
                columns=list(ds.feature_names))


def factual_indices(prep: dict, n: int, seed: int = 10) -> np.ndarray:
    """Rows of D1_train predicted 0 by the model and every retrained model, n drawn without replacement."""
    X = prep["split"]["X1"]
    neg = model_predict(prep["model"], X) == 0
    for m in prep["retrained"]:
        neg &= model_predict(m, X) == 0
    idx = np.flatnonzero(neg)
    return np.sort(np.random.default_rng(seed).choice(idx, size=min(n, idx.size), replace=False))


def run_factual(dataset: str, index: int, epochs: int | None, n_both: int, n_loo: int, methods: tuple,
                solver: str | None = None, model_cache: str | None = None) -> dict:
    """Every method on one factual of `dataset`: the counterfactuals (None = not found), run times, and
    PROPLACE's iteration log. Module-level for :func:`explainopt.experiments.run_grid`."""
    from . import baselines as B

    prep = prepare(dataset, epochs, n_both, n_loo, model_cache)
    model, X1 = prep["model"], prep["split"]["X1"]
    x = X1[index]
    delta, k = DELTAS[dataset], K_NEIGHBOURS.get(dataset, 20)
    out: dict = {"ce": {}, "time": {}}
    for method in methods:
        t0 = time.perf_counter()
        if method == "PROPLACE":
            key = ("nb", dataset, epochs, n_both, n_loo)
            if key not in _MODELS:
                _MODELS[key] = RobustNeighbours(model, X1, delta)
            res = proplace(model, x, plausible_vertices(x, _MODELS[key].query(x, k)), delta, solver=solver)
            out["ce"][method] = res.x
            out["proplace"] = dict(status=res.status, iterations=res.iterations, outer_time=res.outer_time,
                                   inner_time=res.inner_time, wall_time=res.wall_time, worst_case=res.worst_case,
                                   interval_lower=res.interval_lower,
                                   gaps=[(float(w), float(l)) for _, w, l in res.history])
        elif method == "MILP-R":
            out["ce"][method] = B.milp_r(model, x, MILP_R_DELTA[dataset], solver=solver)[0]
        elif method == "RobX":
            out["ce"][method] = B.robx(model, x, X1, tau=ROBX_TAU.get(dataset, 0.5), solver=solver)
        elif method == "WCE":
            out["ce"][method] = B.wachter(model, x)
        elif method == "ROAR-style":
            out["ce"][method] = B.roar_style(model, x, delta)
        else:
            raise ValueError(f"unknown method {method!r}")
        out["time"][method] = time.perf_counter() - t0
    return out


# Table 1 of the paper: (vr, vDelta, l1, lof) per method and dataset.
PAPER_TABLE1 = {
    "WCE": {"carla/adult": (89, 78, .175, 1.59), "carla/compas": (57, 0, .170, 1.81),
            "carla/give_me_some_credit": (84, 18, .148, 2.80), "carla/heloc": (49, 0, .045, 1.16)},
    "RBR": {"carla/adult": (100, 0, .031, 1.28), "carla/compas": (100, 62, .043, 1.34),
            "carla/give_me_some_credit": (90, 0, .050, 1.31), "carla/heloc": (80, 0, .038, 1.10)},
    "RobX": {"carla/adult": (100, 82, .064, 1.28), "carla/compas": (100, 82, .050, 1.11),
             "carla/give_me_some_credit": (100, 96, .073, 1.35), "carla/heloc": (100, 30, .073, 1.04)},
    "ROAR-style": {"carla/adult": (99, 98, .279, 1.96), "carla/compas": (98, 100, .219, 2.84),
                   "carla/give_me_some_credit": (96, 88, .188, 4.22), "carla/heloc": (98, 98, .109, 1.57)},
    "Proto-R": {"carla/adult": (98, 55, .068, 1.60), "carla/compas": (100, 100, .084, 1.36),
                "carla/give_me_some_credit": (100, 100, .066, 1.49), "carla/heloc": (100, 100, .057, 1.21)},
    "MILP-R": {"carla/adult": (100, 100, .024, 1.69), "carla/compas": (100, 100, .040, 1.71),
               "carla/give_me_some_credit": (100, 100, .059, 2.08), "carla/heloc": (100, 100, .044, 2.48)},
    "PROPLACE": {"carla/adult": (100, 100, .046, 1.22), "carla/compas": (100, 100, .039, 1.24),
                 "carla/give_me_some_credit": (100, 100, .058, 1.24), "carla/heloc": (100, 100, .057, 1.04)},
}


def table1_rows(dataset: str, prep: dict, indices, results: list, methods) -> list[dict]:
    """Our Table 1 metrics per method on one dataset, with the paper's numbers beside them."""
    X1, y1 = prep["split"]["X1"], prep["split"]["y1"]
    lof = LofScorer(X1[y1 == 1])
    F = X1[np.asarray(indices)]
    rows = []
    for method in methods:
        C = np.array([r["ce"][method] if r["ce"].get(method) is not None else np.full(F.shape[1], np.nan)
                      for r in results])
        m = evaluate(prep["model"], F, C, DELTAS[dataset], prep["retrained"], lof)
        paper = PAPER_TABLE1.get(method, {}).get(dataset, (np.nan,) * 4)
        rows.append({"dataset": dataset.split("/")[-1], "method": method, **m,
                     "time_s": float(np.mean([r["time"][method] for r in results])),
                     "paper vr": paper[0], "paper vΔ": paper[1], "paper l1": paper[2], "paper lof": paper[3]})
    return rows


def paper_only_rows(methods, datasets) -> list[dict]:
    """Table 1 rows that show only the paper's numbers, for methods this book does not run."""
    return [{"dataset": ds.split("/")[-1], "method": f"{method} (not run)",
             **dict(zip(("paper vr", "paper vΔ", "paper l1", "paper lof"), PAPER_TABLE1[method][ds]))}
            for method in methods for ds in datasets]


def compare_worst_cases(model, X, delta: float, *, restarts: int = 5, steps: int = 150, n_samples: int = 500) -> list[dict]:
    """At each row of X: the exact MILP worst case (eq. 6), the IBP lower bound, the best of projected
    gradient on the weight shifts (the non-convex program attacked locally) and of random shifts."""
    rows = []
    for x in _rows(X):
        wc = worst_case_model(model, x, delta)
        rows.append({"exact MILP": wc.output, "MILP objective": wc.milp_objective, "IBP lower bound": wc.interval_lower,
                     "local search (PGD)": local_worst_case(model, x, delta, restarts=restarts, steps=steps),
                     "random shifts": brute_force_worst_case(model, x, delta, n_samples=n_samples),
                     "MILP time s": wc.solve_time})
    return rows


def probe_points(model, X, delta: float, n: int) -> np.ndarray:
    """`n` points where the inner problem matters: rows of X predicted 0, each moved a fraction 0.2 … 0.9
    of the way towards its nearest Delta-robust neighbour (they cross the network's boundary)."""
    neighbours = RobustNeighbours(model, X, delta)
    F = X[model_predict(model, X) == 0][:n]
    a = np.linspace(0.2, 0.9, n)[: len(F), None]
    return (1 - a) * F + a * np.array([neighbours.query(x, 1)[0] for x in F])


def inner_problem_check(networks: dict) -> tuple[pd.DataFrame, pd.DataFrame, bool]:
    """:func:`compare_worst_cases` on ``{name: (model, points, delta)}``.

    Returns the rows, a per-network summary and whether the MILP was exact everywhere: its objective
    equals the recovered network's forward pass, no local search or random shift beats it, and the
    interval bound never exceeds it.
    """
    rows = pd.DataFrame([dict(net=name, **r) for name, (model, X, delta) in networks.items()
                         for r in compare_worst_cases(model, X, delta)])
    rows["exact − IBP"] = rows["exact MILP"] - rows["IBP lower bound"]
    rows["local − exact"] = rows["local search (PGD)"] - rows["exact MILP"]
    rows["random − exact"] = rows["random shifts"] - rows["exact MILP"]
    rows["objective gap"] = (rows["MILP objective"] - rows["exact MILP"]).abs()
    summary = rows.groupby("net", sort=False).agg(
        points=("exact MILP", "size"), max_objective_gap=("objective gap", "max"),
        min_local_minus_exact=("local − exact", "min"), min_random_minus_exact=("random − exact", "min"),
        ibp_strictly_looser=("exact − IBP", lambda s: int((s > 1e-6).sum())), mean_exact_minus_ibp=("exact − IBP", "mean"),
        mean_milp_time_s=("MILP time s", "mean"))
    exact = bool((summary["max_objective_gap"] < 1e-5).all() and (summary["min_local_minus_exact"] > -1e-6).all()
                 and (summary["min_random_minus_exact"] > -1e-6).all() and (rows["exact − IBP"] > -1e-6).all())
    return rows, summary, exact


def proplace_log(results: dict) -> pd.DataFrame:
    """One row per PROPLACE run of :func:`run_factual` (``{dataset: [result, ...]}``): status, iterations,
    times, and how often the exact inner worst case was above the interval bound (or robust where IBP is not)."""
    return pd.DataFrame([dict(dataset=ds.split("/")[-1], **{k: v for k, v in r["proplace"].items() if k != "gaps"},
                              inner_solves=len(r["proplace"]["gaps"]),
                              exact_above_ibp=sum(w > lo + 1e-6 for w, lo in r["proplace"]["gaps"]),
                              exact_robust_ibp_not=sum(w >= 0 > lo for w, lo in r["proplace"]["gaps"]))
                         for ds, runs in results.items() for r in runs])


def timing_table(log: pd.DataFrame) -> pd.DataFrame:
    """Per dataset: how Algorithm 1 ended, iterations, mean outer/inner/total seconds, inner-solve counts."""
    def count(status):
        return "status", lambda s: int((s == status).sum())
    return log.groupby("dataset", sort=False).agg(
        factuals=("status", "size"), optimal=count("optimal"), certified=count("certified"), neighbour=count("neighbour"),
        mean_iterations=("iterations", "mean"), max_iterations=("iterations", "max"), outer_s=("outer_time", "mean"),
        inner_s=("inner_time", "mean"), total_s=("wall_time", "mean"), inner_solves=("inner_solves", "sum"),
        exact_above_ibp=("exact_above_ibp", "sum"), exact_robust_ibp_not=("exact_robust_ibp_not", "sum"))


def solver_comparison(preps: dict, indices: dict, *, solver_names=("highs", "gurobi"), n_factuals: int = 2) -> pd.DataFrame:
    """PROPLACE on the first `n_factuals` of each dataset with each solver in turn (same instances, one run);
    a solver that is missing, unlicensed or refuses the size (size-limited licence) gives a `failed` row."""
    rows = []
    for ds, prep in preps.items():
        model, X1 = prep["model"], prep["split"]["X1"]
        neighbours = RobustNeighbours(model, X1, DELTAS[ds])
        for i in indices[ds][:n_factuals]:
            x = X1[i]
            vertices = plausible_vertices(x, neighbours.query(x, K_NEIGHBOURS.get(ds, 20)))
            for name in solver_names:
                try:
                    r = proplace(model, x, vertices, DELTAS[ds], solver=name)
                    rows.append(dict(dataset=ds, index=int(i), solver=name, status=r.status, iterations=r.iterations,
                                     outer_s=r.outer_time, inner_s=r.inner_time, l1=r.distance))
                except Exception as err:  # noqa: BLE001 - a licence refusal must not stop the chapter
                    rows.append(dict(dataset=ds, index=int(i), solver=name, status=f"failed: {type(err).__name__}"))
    return pd.DataFrame(rows)


__all__ = [
    "DELTAS", "K_NEIGHBOURS", "LofScorer", "MILP_R_DELTA", "NETWORKS", "PAPER_TABLE1", "ProplaceResult",
    "ROBX_TAU", "RobustNeighbours", "WorstCase", "brute_force_worst_case", "compare_worst_cases",
    "delta_robust", "evaluate", "factual_indices", "inner_problem_check", "interval_layer_bounds",
    "interval_lower", "l1_distance", "local_worst_case", "outer_problem", "paper_only_rows",
    "plausible_vertices", "prepare", "probe_points", "proplace", "proplace_log", "protocol_split",
    "run_factual", "solver_comparison", "table1_rows", "timing_table", "train_network", "worst_case_model",
]
